/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MariaDB's protocol extensions, relayed by the proxy: progress reports
 * (MARIADB_CLIENT_PROGRESS) during a long ALTER TABLE (those of LOAD DATA
 * are in client_progress_load.c), and array binding
 * (MARIADB_CLIENT_STMT_BULK_OPERATIONS) with auto-increment ids and
 * RETURNING, the type and format names of extended metadata
 * (MARIADB_CLIENT_EXTENDED_METADATA) and executes answered without column
 * definitions (MARIADB_CLIENT_CACHE_METADATA). Each check runs direct and
 * through the proxy; the digests must be equal, and each side must have
 * used the extension.
 */
#include "client_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The upper 32 capability bits the server (or the proxy) offered. */
static unsigned long long ext_offered(MYSQL *m)
{
    unsigned long ext = 0;
    mariadb_get_infov(m, MARIADB_CONNECTION_EXTENDED_SERVER_CAPABILITIES, &ext);
    return (unsigned long long)ext << 32;
}

/* ---- progress reports ------------------------------------------------------ */

static unsigned g_progress_calls;
static unsigned g_progress_max_stage;

static void on_progress(const MYSQL *m, unsigned stage, unsigned max_stage, double progress,
                        const char *info, unsigned info_len)
{
    (void)m, (void)stage, (void)progress, (void)info, (void)info_len;
    g_progress_calls++;
    if (max_stage > g_progress_max_stage)
        g_progress_max_stage = max_stage;
}

/* Rows enough that copying them takes well over progress_report_time (1 s). */
#define PROGRESS_ROWS "400000"

static int progress_fixture(struct ctx *c, MYSQL *m)
{
    int rc = q_exec(c, m, "SET SESSION progress_report_time = 1");
    rc = rc ? rc
            : q_exec(c, m,
                     "CREATE TEMPORARY TABLE mct_progress (id INT PRIMARY KEY,"
                     " pad CHAR(200) NOT NULL) ENGINE=InnoDB");
    rc = rc ? rc
            : q_exec(c, m,
                     "INSERT INTO mct_progress SELECT seq, REPEAT('p', 200)"
                     " FROM seq_1_to_" PROGRESS_ROWS);
    return rc;
}

/* ALTER TABLE with a table copy reports its stages while it copies; the
 * statement's own OK must still end the response (the session goes on). */
static int chk_progress_alter(struct ctx *c)
{
    MYSQL *m = db_init();
    mysql_optionsv(m, MYSQL_PROGRESS_CALLBACK, on_progress);
    if (db_connect(m, c->port, NULL)) {
        fail_my(c, m, "connect");
        mysql_close(m);
        return -1;
    }
    int rc = 0;
    if (!(ext_offered(m) & MARIADB_CLIENT_PROGRESS))
        rc = fail(c, "MARIADB_CLIENT_PROGRESS not offered");
    rc = rc ? rc : progress_fixture(c, m);
    g_progress_calls = g_progress_max_stage = 0;
    rc = rc ? rc : q_exec(c, m, "ALTER TABLE mct_progress ADD COLUMN extra INT, ALGORITHM=COPY");
    unsigned alter_calls = g_progress_calls;
    if (rc == 0 && alter_calls == 0)
        rc = fail(c, "no progress report reached the client during ALTER TABLE");
    long long n = 0;
    rc = rc ? rc : q_int(c, m, "SELECT COUNT(*) FROM mct_progress WHERE extra IS NULL", &n);
    if (rc == 0)
        sb_printf(&c->dg, "alter progress seen=%d stages=%u rows=%lld;", alter_calls > 0,
                  g_progress_max_stage, n);
    printf("# %s: %u progress reports during ALTER TABLE\n", c->side, alter_calls);
    mysql_close(m);
    return rc;
}

/* ---- array binding (COM_STMT_BULK_EXECUTE) --------------------------------- */

#define BULK_N 50

/* One bulk execute of `sql` binding the column-wise array v (BULK_N strings). */
static MYSQL_STMT *bulk_exec(struct ctx *c, MYSQL *m, const char *sql, char **v, char *ind)
{
    MYSQL_STMT *s = stmt_prepare(c, m, sql);
    if (!s)
        return NULL;
    unsigned int size = BULK_N;
    MYSQL_BIND b;
    memset(&b, 0, sizeof b);
    b.buffer_type = MYSQL_TYPE_STRING;
    b.buffer = v;
    b.u.indicator = ind;
    if (mysql_stmt_attr_set(s, STMT_ATTR_ARRAY_SIZE, &size) || mysql_stmt_bind_param(s, &b) ||
        mysql_stmt_execute(s)) {
        fail_st(c, s, "bulk execute");
        mysql_stmt_close(s);
        return NULL;
    }
    return s;
}

/* Rows, auto-increment ids and RETURNING of bulk inserts: affected rows and
 * the first id of a plain one, every returned row of INSERT ... RETURNING,
 * then the table itself. */
static int chk_bulk_autoinc_returning(struct ctx *c)
{
    static char text[BULK_N][16], ind[BULK_N];
    static char *v[BULK_N];
    for (int i = 0; i < BULK_N; i++) {
        snprintf(text[i], sizeof text[i], "b%d", i);
        v[i] = text[i];
        ind[i] = (char)(i % 9 == 4 ? STMT_INDICATOR_NULL : STMT_INDICATOR_NTS);
    }
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = (ext_offered(m) & MARIADB_CLIENT_STMT_BULK_OPERATIONS)
                 ? 0
                 : fail(c, "MARIADB_CLIENT_STMT_BULK_OPERATIONS not offered");
    rc = rc ? rc
            : q_exec(c, m,
                     "CREATE TEMPORARY TABLE mct_bulk_ai (id INT AUTO_INCREMENT"
                     " PRIMARY KEY, v VARCHAR(16)) AUTO_INCREMENT = 1000");
    MYSQL_STMT *s = rc ? NULL : bulk_exec(c, m, "INSERT INTO mct_bulk_ai (v) VALUES (?)", v, ind);
    if (s) {
        sb_printf(&c->dg, "plain affected=%llu id=%llu;", mysql_stmt_affected_rows(s),
                  mysql_stmt_insert_id(s));
        mysql_stmt_close(s);
    } else if (!rc) {
        rc = -1;
    }
    s = rc ? NULL
           : bulk_exec(c, m, "INSERT INTO mct_bulk_ai (v) VALUES (?) RETURNING id, v", v, ind);
    if (s) {
        rc = dg_stmt_rows(c, s, 0);
        mysql_stmt_close(s);
    } else if (!rc) {
        rc = -1;
    }
    char got[128];
    /* ids may leave gaps between the two statements (InnoDB reserves them
     * ahead for a multi-row insert): the digests compare them */
    rc = rc ? rc
            : q_scalar(c, m,
                       "SELECT CONCAT_WS(',', COUNT(*), MIN(id), SUM(v IS NULL),"
                       " MAX(id), MD5(GROUP_CONCAT(v ORDER BY id)))"
                       " FROM mct_bulk_ai",
                       got, sizeof got);
    if (rc == 0)
        sb_printf(&c->dg, "table=%s;", got);
    if (rc == 0 && strncmp(got, "100,1000,12,", 12) != 0)
        rc = fail(c, "bulk inserts stored %s", got);
    rc = rc ? rc : q_exec(c, m, "SELECT 1"); /* the session is in step after them */
    mysql_close(m);
    return rc;
}

/* ---- extended and cached metadata ------------------------------------------ */

/* The extended type info of each column: data type and format names. */
static void dg_field_attrs(struct ctx *c, MYSQL_RES *meta)
{
    unsigned n = mysql_num_fields(meta);
    MYSQL_FIELD *f = mysql_fetch_fields(meta);
    for (unsigned i = 0; i < n; i++) {
        MARIADB_CONST_STRING type = {0}, format = {0};
        mariadb_field_attr(&type, &f[i], MARIADB_FIELD_ATTR_DATA_TYPE_NAME);
        mariadb_field_attr(&format, &f[i], MARIADB_FIELD_ATTR_FORMAT_NAME);
        sb_printf(&c->dg, "%s:%.*s/%.*s;", f[i].name, (int)type.length, type.str ? type.str : "",
                  (int)format.length, format.str ? format.str : "");
    }
}

/* A JSON and an INET6 column, read by a text query and by a prepared
 * statement executed three times: the first execute's answer already
 * leaves the definitions out (the prepare sent them), the client uses
 * those; the format names come with the definitions. */
static int chk_metadata(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    unsigned long long need = MARIADB_CLIENT_EXTENDED_METADATA | MARIADB_CLIENT_CACHE_METADATA;
    int rc =
        (ext_offered(m) & need) == need ? 0 : fail(c, "extended or cached metadata not offered");
    rc = rc ? rc
            : q_exec(c, m,
                     "CREATE TEMPORARY TABLE mct_meta (id INT PRIMARY KEY,"
                     " j JSON, a INET6)");
    rc = rc ? rc
            : q_exec(c, m,
                     "INSERT INTO mct_meta VALUES (1, '{\"k\": 1}', '::1'),"
                     " (2, '[2]', '::ffff:10.0.0.2')");
    if (rc == 0 && mysql_query(m, "SELECT id, j, a FROM mct_meta ORDER BY id") == 0) {
        MYSQL_RES *res = mysql_store_result(m);
        if (res) {
            dg_field_attrs(c, res);
            rc = dg_result(c, m, res);
            mysql_free_result(res);
        } else {
            rc = fail_my(c, m, "store_result");
        }
    } else if (rc == 0) {
        rc = fail_my(c, m, "query");
    }
    MYSQL_STMT *s = rc ? NULL : stmt_prepare(c, m, "SELECT id, j, a FROM mct_meta ORDER BY id");
    for (int i = 0; s && rc == 0 && i < 3; i++) {
        if (mysql_stmt_execute(s)) {
            rc = fail_st(c, s, "execute");
            break;
        }
        MYSQL_RES *meta = mysql_stmt_result_metadata(s);
        if (meta) {
            dg_field_attrs(c, meta);
            mysql_free_result(meta);
        }
        rc = dg_stmt_rows(c, s, 0);
    }
    if (s)
        mysql_stmt_close(s);
    if (rc == 0 && !strstr(c->dg.p, "j:/json;"))
        rc = fail(c, "no JSON format name in the column definitions: %s", c->dg.p);
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    mysql_close(m);
    return rc;
}

void run_mariadb_ext_checks(void)
{
    check_compare("mariadb_extended_and_cached_metadata", chk_metadata);
    check_compare("mariadb_progress_alter_table", chk_progress_alter);
    check_compare("mariadb_bulk_autoinc_returning", chk_bulk_autoinc_returning);
}
