/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LOAD DATA LOCAL INFILE: the server asks the client for a file in the
 * middle of a COM_QUERY, the client streams it in packets and ends with an
 * empty packet, then the server sends the final OK.  The proxy has to relay
 * that reversed exchange.
 */
#include "client_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOAD_ROWS 40000

static char g_load_path[64];

/* Tab-separated rows with NULLs, escapes and multi-byte text. */
static int write_load_file(void)
{
    snprintf(g_load_path, sizeof g_load_path, "/tmp/mct_load_XXXXXX");
    int fd = mkstemp(g_load_path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        return -1;
    for (int i = 1; i <= LOAD_ROWS; i++) {
        if (i % 11 == 0)
            fprintf(f, "%d\t\\N\t%d.%02d\n", i, i, i % 100);
        else
            fprintf(f, "%d\tname\\t%d \\\\ caf\xc3\xa9 %.*s\t\\N\n", i, i, i % 90,
                    "padding-padding-padding-padding-padding-padding-padding-padding-"
                    "padding-padding-padding");
    }
    return fclose(f);
}

/* How the LOAD DATA statement is sent: COM_QUERY, or prepared and run by
 * COM_STMT_EXECUTE (the server asks for the file in the execute's answer),
 * with or without a read-only cursor asked for. */
enum load_how { LOAD_TEXT, LOAD_PS, LOAD_CURSOR };

static const char *const load_how_name[] = {"text", "ps", "cursor"};

static int load_prepared(struct ctx *c, MYSQL *m, const char *sql, enum load_how how,
                         const char *what)
{
    MYSQL_STMT *st = stmt_prepare(c, m, sql);
    if (!st)
        return -1;
    unsigned long cursor = how == LOAD_CURSOR ? CURSOR_TYPE_READ_ONLY : CURSOR_TYPE_NO_CURSOR;
    mysql_stmt_attr_set(st, STMT_ATTR_CURSOR_TYPE, &cursor);
    if (mysql_stmt_execute(st) != 0)
        sb_printf(&c->dg, "load %s %s: error %u;", load_how_name[how], what, mysql_stmt_errno(st));
    else
        sb_printf(&c->dg, "load %s: affected=%llu;", load_how_name[how],
                  (unsigned long long)mysql_stmt_affected_rows(st));
    mysql_stmt_close(st);
    return 0;
}

static int load_into(struct ctx *c, MYSQL *m, const char *path, enum load_how how)
{
    char sql[256];
    const char *what = path == g_load_path ? "file" : "missing";
    snprintf(sql, sizeof sql,
             "LOAD DATA LOCAL INFILE '%s' INTO TABLE mct_load"
             " CHARACTER SET utf8mb4 (id, name, @val) SET val = @val",
             path);
    if (how != LOAD_TEXT)
        return load_prepared(c, m, sql, how, what);
    if (mysql_query(m, sql) != 0) {
        sb_printf(&c->dg, "load %s: error %u;", what, mysql_errno(m));
        return 0;
    }
    sb_printf(&c->dg, "load: affected=%llu info=%s;", (unsigned long long)mysql_affected_rows(m),
              mysql_info(m) ? mysql_info(m) : "");
    return 0;
}

static int dg_table(struct ctx *c, MYSQL *m)
{
    char v[256];
    int rc = q_scalar(c, m,
                      "SELECT CONCAT_WS(',', COUNT(*), SUM(id), SUM(name IS NULL),"
                      " SUM(val IS NULL), SUM(CRC32(CONCAT_WS('|', id, name, val))))"
                      " FROM mct_load",
                      v, sizeof v);
    if (rc)
        return -1;
    sb_printf(&c->dg, "table=%s;", v);
    if (mysql_query(m, "CHECKSUM TABLE mct_load") != 0)
        return fail_my(c, m, "CHECKSUM TABLE");
    MYSQL_RES *res = mysql_store_result(m);
    rc = res ? dg_result(c, m, res) : fail_my(c, m, "CHECKSUM TABLE result");
    if (res)
        mysql_free_result(res);
    return rc;
}

static int load_local(struct ctx *c, enum load_how how)
{
    struct conn_opts o = {.local_infile = 1};
    MYSQL *m = db_open(c, &o);
    if (!m)
        return -1;
    long long n = 0;
    int rc = q_exec(c, m,
                    "CREATE TEMPORARY TABLE mct_load (id INT PRIMARY KEY,"
                    " name VARCHAR(200) CHARACTER SET utf8mb4, val DECIMAL(10,2))");
    rc = rc ? rc : load_into(c, m, g_load_path, how);
    rc = rc ? rc : q_int(c, m, "SELECT COUNT(*) FROM mct_load", &n);
    if (rc == 0 && n != LOAD_ROWS)
        rc = fail(c, "loaded %lld rows, expected %d (%s)", n, LOAD_ROWS, c->dg.p);
    rc = rc ? rc : dg_table(c, m);
    /* A file the client cannot open: it answers the request with nothing. */
    rc = rc ? rc : load_into(c, m, "/nonexistent/mct_missing.tsv", how);
    rc = rc ? rc : q_exec(c, m, "SELECT 'usable after failed load'");
    mysql_close(m);
    return rc;
}

static int chk_load_local(struct ctx *c) { return load_local(c, LOAD_TEXT); }
static int chk_load_local_ps(struct ctx *c) { return load_local(c, LOAD_PS); }
static int chk_load_local_cursor(struct ctx *c) { return load_local(c, LOAD_CURSOR); }

/* Without MYSQL_OPT_LOCAL_INFILE the request must be refused cleanly. */
static int load_refused(struct ctx *c, enum load_how how)
{
    struct conn_opts o = {.local_infile = -1};
    MYSQL *m = db_open(c, &o);
    if (!m)
        return -1;
    int rc = q_exec(c, m,
                    "CREATE TEMPORARY TABLE mct_load (id INT PRIMARY KEY,"
                    " name VARCHAR(200), val DECIMAL(10,2))");
    rc = rc ? rc : load_into(c, m, g_load_path, how);
    if (rc == 0 && !strstr(c->dg.p, "error"))
        rc = fail(c, "LOAD DATA LOCAL succeeded without local infile enabled");
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    mysql_close(m);
    return rc;
}

static int chk_load_refused(struct ctx *c) { return load_refused(c, LOAD_TEXT); }
static int chk_load_refused_ps(struct ctx *c) { return load_refused(c, LOAD_PS); }

void run_load_checks(void)
{
    if (write_load_file() != 0) {
        report(0, "load_data_local_infile", "cannot write %s", g_load_path);
        return;
    }
    check_compare("load_data_local_infile", chk_load_local);
    check_compare("load_data_local_refused", chk_load_refused);
    check_compare("load_data_local_infile_ps", chk_load_local_ps);
    check_compare("load_data_local_infile_cursor", chk_load_local_cursor);
    check_compare("load_data_local_refused_ps", chk_load_refused_ps);
    unlink(g_load_path);
}
