/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Progress reports (MARIADB_CLIENT_PROGRESS) during LOAD DATA, relayed by
 * the proxy: mariadbd sends them inside the statement's response while it
 * reads the file, both for LOAD DATA LOCAL INFILE (the proxy relays the
 * client's file stream, then the reports and the OK that follow it) and for
 * a file the server reads itself. Each check runs direct and through the
 * proxy: a report must reach the client on each side, and the table must
 * hold exactly the file's rows (the digests compare them).
 */
#include "client_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mariadbd reports LOAD DATA in two stages: reading the file (reports every
 * progress_report_time while it lasts, for a file it reads itself: the
 * size of a client's file is unknown to it) and ending the bulk insert
 * (one report as the stage starts, however short the load). Rows enough
 * that reading them usually takes over a second, so a server-side load
 * also shows reports of the first stage; the checks ask for any. */
#define LOAD_PROGRESS_ROWS 100000LL

static char g_path[64];
static unsigned g_calls;
static unsigned g_reading; /* reports of stage 1 of 2, while the file is read */

static void on_progress(const MYSQL *m, unsigned stage, unsigned max_stage, double progress,
                        const char *info, unsigned info_len)
{
    (void)m, (void)progress, (void)info, (void)info_len;
    g_calls++;
    if (stage < max_stage)
        g_reading++;
}

/* id, then a 200-byte text that differs from row to row. The server reads
 * the file as well as the client, so it is world-readable. */
static int write_file(void)
{
    snprintf(g_path, sizeof g_path, "/tmp/mct_progress_XXXXXX");
    int fd = mkstemp(g_path);
    if (fd < 0 || fchmod(fd, 0644) != 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    if (!f)
        return -1;
    for (long long i = 1; i <= LOAD_PROGRESS_ROWS; i++)
        fprintf(f, "%lld\trow %012lld %.*s\n", i, i * 7919, 183,
                "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                "ppppppppppppppppppppppppppppppppppppppppppppp");
    return fclose(f);
}

/* What the table holds, exactly: the count and id sum checked here, a CRC
 * of every row compared with direct through the digest. */
static int check_rows(struct ctx *c, MYSQL *m)
{
    char got[128], want[64];
    int rc = q_scalar(c, m,
                      "SELECT CONCAT_WS(',', COUNT(*), SUM(id), SUM(CRC32(CONCAT(id, pad))))"
                      " FROM mct_progress_load",
                      got, sizeof got);
    if (rc)
        return rc;
    sb_printf(&c->dg, "table=%s;", got);
    snprintf(want, sizeof want, "%lld,%lld,", LOAD_PROGRESS_ROWS,
             LOAD_PROGRESS_ROWS * (LOAD_PROGRESS_ROWS + 1) / 2);
    if (strncmp(got, want, strlen(want)) != 0)
        return fail(c, "LOAD DATA stored %s, the file has count,sum(id) %s", got, want);
    return 0;
}

static int load(struct ctx *c, int local)
{
    struct conn_opts o = {.local_infile = local ? 1 : 0};
    MYSQL *m = db_init();
    if (!m)
        return fail(c, "mysql_init");
    mysql_optionsv(m, MYSQL_PROGRESS_CALLBACK, on_progress);
    if (db_connect(m, c->port, &o)) {
        fail_my(c, m, "connect");
        mysql_close(m);
        return -1;
    }
    int rc = q_exec(c, m, "SET SESSION progress_report_time = 1");
    rc = rc ? rc
            : q_exec(c, m,
                     "CREATE TEMPORARY TABLE mct_progress_load (id INT PRIMARY KEY,"
                     " pad CHAR(200) NOT NULL) ENGINE=InnoDB");
    char sql[160];
    snprintf(sql, sizeof sql, "LOAD DATA %sINFILE '%s' INTO TABLE mct_progress_load",
             local ? "LOCAL " : "", g_path);
    g_calls = g_reading = 0;
    rc = rc ? rc : q_exec(c, m, sql);
    unsigned calls = g_calls, reading = g_reading;
    if (rc == 0) {
        sb_printf(&c->dg, "affected=%llu progress seen=%d;",
                  (unsigned long long)mysql_affected_rows(m), calls > 0);
        if (calls == 0)
            rc = fail(c, "no progress report reached the client during LOAD DATA %sINFILE",
                      local ? "LOCAL " : "");
    }
    rc = rc ? rc : check_rows(c, m);
    printf("# %s: %u progress reports during LOAD DATA %sINFILE, %u of them while reading\n",
           c->side, calls, local ? "LOCAL " : "", reading);
    mysql_close(m);
    return rc;
}

static int chk_load_local(struct ctx *c) { return load(c, 1); }
static int chk_load_server(struct ctx *c) { return load(c, 0); }

void run_progress_load_checks(void)
{
    if (write_file() != 0) {
        report(0, "mariadb_progress_load_data", "cannot write %s", g_path);
        return;
    }
    check_compare("mariadb_progress_load_data_local", chk_load_local);
    check_compare("mariadb_progress_load_data_server", chk_load_server);
    unlink(g_path);
}
