/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Utility commands: COM_INIT_DB, COM_PING, COM_STATISTICS, COM_FIELD_LIST,
 * COM_RESET_CONNECTION, COM_SET_OPTION, COM_PROCESS_INFO, COM_REFRESH,
 * COM_DEBUG, KILL [QUERY], plus session-state tracking in OK packets.
 * libmariadb's mysql_kill() sends "KILL n" as a COM_QUERY, so the real
 * COM_PROCESS_KILL packet is exercised by the raw-socket checks instead.
 *
 * COM_SHUTDOWN and the replication commands (COM_BINLOG_DUMP,
 * COM_REGISTER_SLAVE) are left out: they would stop or reconfigure the
 * shared test server rather than exercise the proxy's forwarding.
 */
#include "client_common.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int dg_scalar(struct ctx *c, MYSQL *m, const char *sql)
{
    char v[256];
    if (q_scalar(c, m, sql, v, sizeof v))
        return -1;
    sb_printf(&c->dg, "%s=%s;", sql, v);
    return 0;
}

static int chk_init_db(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = 0;
    if (mysql_select_db(m, "mysql") != 0)
        rc = fail_my(c, m, "select_db mysql");
    rc = rc ? rc : dg_scalar(c, m, "SELECT DATABASE()");
    if (rc == 0 && mysql_select_db(m, "mct_no_such_db") == 0)
        rc = fail(c, "select_db of a missing database succeeded");
    if (rc == 0)
        sb_printf(&c->dg, "missing=%u;", mysql_errno(m));
    /* A failed COM_INIT_DB leaves the previous schema selected. */
    rc = rc ? rc : dg_scalar(c, m, "SELECT DATABASE()");
    if (rc == 0 && mysql_select_db(m, g_cfg.db) != 0)
        rc = fail_my(c, m, "select_db back");
    rc = rc ? rc : dg_scalar(c, m, "SELECT COUNT(*) FROM mct_rows");
    mysql_close(m);
    return rc;
}

static int chk_ping(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < 5; i++) {
        if (mysql_ping(m) != 0)
            rc = fail_my(c, m, "ping");
        rc = rc ? rc : q_exec(c, m, "SELECT 1");
    }
    mysql_close(m);
    return rc;
}

/* COM_STATISTICS answers with a bare string, not an OK packet. */
static int chk_statistics(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < 2; i++) {
        const char *s = mysql_stat(m);
        if (!s) {
            rc = fail_my(c, m, "mysql_stat");
            break;
        }
        if (strncmp(s, "Uptime: ", 8) != 0 || !strstr(s, "Questions: "))
            rc = fail(c, "unexpected statistics string '%.100s'", s);
        /* Keep only the labels; the numbers change from one call to the next. */
        for (; *s; s++)
            if (!isdigit((unsigned char)*s) && *s != '.')
                sb_add(&c->dg, s, 1);
        rc = rc ? rc : q_exec(c, m, "SELECT 1");
    }
    mysql_close(m);
    return rc;
}

static int dg_list_fields(struct ctx *c, MYSQL *m, const char *table, const char *wild)
{
    MYSQL_RES *res = mysql_list_fields(m, table, wild);
    if (!res) {
        sb_printf(&c->dg, "list_fields %s: error %u;", table, mysql_errno(m));
        return 0;
    }
    unsigned n = mysql_num_fields(res);
    MYSQL_FIELD *f = mysql_fetch_fields(res);
    dg_fields(&c->dg, f, n);
    for (unsigned i = 0; i < n; i++)
        sb_printf(&c->dg, "def=%s;", f[i].def ? f[i].def : "(none)");
    mysql_free_result(res);
    return 0;
}

static int chk_field_list(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = dg_list_fields(c, m, "mct_types", NULL);
    rc = rc ? rc : dg_list_fields(c, m, "mct_types", "d%");
    rc = rc ? rc : dg_list_fields(c, m, "mct_rows", NULL);
    rc = rc ? rc : dg_list_fields(c, m, "mct_no_such_table", NULL);
    if (rc == 0 && !strstr(c->dg.p, "F[dtm|"))
        rc = fail(c, "COM_FIELD_LIST did not return the columns of mct_types");
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    mysql_close(m);
    return rc;
}

static int chk_reset_connection(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = q_exec(c, m, "SET @mct_u = 5");
    rc = rc ? rc : q_exec(c, m, "CREATE TEMPORARY TABLE mct_tmp (a INT)");
    rc = rc ? rc : q_exec(c, m, "SET SESSION sql_mode = 'ANSI_QUOTES'");
    rc = rc ? rc : dg_scalar(c, m, "SELECT @mct_u");
    if (rc == 0 && mysql_reset_connection(m) != 0)
        rc = fail_my(c, m, "reset_connection");
    rc = rc ? rc : dg_scalar(c, m, "SELECT @mct_u IS NULL");
    rc = rc ? rc : dg_scalar(c, m, "SELECT @@session.sql_mode = @@global.sql_mode");
    if (rc == 0 && !strstr(c->dg.p, "SELECT @mct_u IS NULL=1;"))
        rc = fail(c, "user variable survived COM_RESET_CONNECTION");
    if (rc == 0 && mysql_query(m, "SELECT * FROM mct_tmp") == 0)
        rc = fail(c, "temporary table survived COM_RESET_CONNECTION");
    if (rc == 0)
        sb_printf(&c->dg, "tmp=%u;", mysql_errno(m));
    rc = rc ? rc : dg_scalar(c, m, "SELECT DATABASE()");
    mysql_close(m);
    return rc;
}

/* Records whether a two-statement query is accepted right now. */
static int dg_two_statements(struct ctx *c, MYSQL *m)
{
    if (mysql_query(m, "SELECT 1; SELECT 2") != 0) {
        sb_printf(&c->dg, "multi=error %u;", mysql_errno(m));
        return 0;
    }
    sb_printf(&c->dg, "multi=ok;");
    return dg_all_results(c, m);
}

static int set_option(struct ctx *c, MYSQL *m, enum enum_mysql_set_option opt)
{
    if (mysql_set_server_option(m, opt) != 0)
        return fail_my(c, m, "set_server_option");
    return dg_two_statements(c, m);
}

static int chk_set_option(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = dg_two_statements(c, m);
    rc = rc ? rc : set_option(c, m, MYSQL_OPTION_MULTI_STATEMENTS_ON);
    rc = rc ? rc : set_option(c, m, MYSQL_OPTION_MULTI_STATEMENTS_OFF);
    rc = rc ? rc : set_option(c, m, MYSQL_OPTION_MULTI_STATEMENTS_ON);
    if (rc == 0 && !strstr(c->dg.p, "multi=error 1064;multi=ok;"))
        rc = fail(c, "COM_SET_OPTION did not toggle multi statements: %s", c->dg.p);
    mysql_close(m);
    return rc;
}

/* Waits until conn_id shows up in the process list running SLEEP. */
static int wait_sleeping(struct ctx *c, MYSQL *m, long long conn_id)
{
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT COUNT(*) FROM information_schema.PROCESSLIST"
             " WHERE ID = %lld AND INFO LIKE 'SELECT SLEEP%%'",
             conn_id);
    for (int i = 0; i < 100; i++) {
        long long n = 0;
        if (q_int(c, m, sql, &n))
            return -1;
        if (n > 0)
            return 0;
        usleep(20000);
    }
    return fail(c, "victim query never showed up in the process list");
}

static int kill_query(struct ctx *c, MYSQL *killer, MYSQL *victim, long long id)
{
    static const char sleep_sql[] = "SELECT SLEEP(20)";
    char sql[64];
    if (mysql_send_query(victim, sleep_sql, sizeof sleep_sql - 1) != 0)
        return fail_my(c, victim, "send SLEEP");
    if (wait_sleeping(c, killer, id))
        return -1;
    snprintf(sql, sizeof sql, "KILL QUERY %lld", id);
    double t0 = now_sec();
    if (q_exec(c, killer, sql))
        return -1;
    if (mysql_read_query_result(victim) != 0) {
        sb_printf(&c->dg, "sleep=error %u;", mysql_errno(victim));
    } else {
        /* The interruption may surface after the metadata, as a row error. */
        MYSQL_RES *res = mysql_store_result(victim);
        MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
        if (row)
            sb_printf(&c->dg, "sleep=%s;", row[0] ? row[0] : "NULL");
        else
            sb_printf(&c->dg, "sleep=no row, error %u;", mysql_errno(victim));
        if (res)
            mysql_free_result(res);
    }
    if (now_sec() - t0 > 10)
        return fail(c, "KILL QUERY did not interrupt the running query");
    /* KILL QUERY ends the statement, not the connection. */
    return q_exec(c, victim, "SELECT 'victim alive'");
}

static int chk_kill(struct ctx *c)
{
    MYSQL *killer = db_open(c, NULL);
    MYSQL *victim = killer ? db_open(c, NULL) : NULL;
    long long id = 0;
    int rc = (killer && victim) ? 0 : -1;
    /* The server's id, not mysql_thread_id(): a proxy may present its own. */
    rc = rc ? rc : q_int(c, victim, "SELECT CONNECTION_ID()", &id);
    rc = rc ? rc : kill_query(c, killer, victim, id);
    if (rc == 0 && mysql_kill(killer, (unsigned long)id) != 0)
        rc = fail_my(c, killer, "mysql_kill");
    if (rc == 0) {
        usleep(100000);
        int dead = mysql_query(victim, "SELECT 1") != 0;
        sb_printf(&c->dg, "victim after kill: %s;", dead ? "failed" : "usable");
        if (!dead)
            rc = fail(c, "killed connection still answers queries");
    }
    rc = rc ? rc : q_exec(c, killer, "SELECT 'killer alive'");
    if (victim)
        mysql_close(victim);
    if (killer)
        mysql_close(killer);
    return rc;
}

static int chk_process_info(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = 0;
    MYSQL_RES *res = mysql_list_processes(m);
    if (!res) {
        rc = fail_my(c, m, "list_processes (COM_PROCESS_INFO)");
    } else {
        /*
         * Rows describe live sessions and vary, and the library leaves most
         * column attributes of this result unset: compare column names only.
         */
        MYSQL_FIELD *f = mysql_fetch_fields(res);
        for (unsigned i = 0; i < mysql_num_fields(res); i++)
            sb_printf(&c->dg, "%s;", f[i].name);
        if (mysql_num_rows(res) < 1)
            rc = fail(c, "process list is empty");
        mysql_free_result(res);
    }
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    mysql_close(m);
    return rc;
}

static int chk_refresh_debug(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = 0;
    if (mysql_refresh(m, REFRESH_HOSTS | REFRESH_STATUS) != 0)
        rc = fail_my(c, m, "refresh (COM_REFRESH)");
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    /* COM_DEBUG is answered with an EOF packet rather than OK. */
    if (rc == 0 && mysql_dump_debug_info(m) != 0)
        rc = fail_my(c, m, "dump_debug_info (COM_DEBUG)");
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    mysql_close(m);
    return rc;
}

static void dg_tracked(struct ctx *c, MYSQL *m)
{
    for (int t = SESSION_TRACK_BEGIN; t <= SESSION_TRACK_END; t++) {
        const char *data;
        size_t len;
        if (mysql_session_track_get_first(m, (enum enum_session_state_type)t, &data, &len))
            continue;
        do {
            sb_printf(&c->dg, "track%d=", t);
            sb_add(&c->dg, data, len);
            sb_add(&c->dg, ";", 1);
        } while (mysql_session_track_get_next(m, (enum enum_session_state_type)t, &data, &len) ==
                 0);
    }
    sb_add(&c->dg, "\n", 1);
}

static int chk_session_track(struct ctx *c)
{
    static const char *const steps[] = {
        "SET SESSION session_track_state_change = 1",
        "SET SESSION session_track_system_variables = 'time_zone,autocommit,sql_mode'",
        "SET SESSION time_zone = '+03:00'",
        "USE mysql",
        "SET @mct_state = 1",
        "SET SESSION autocommit = 0",
        "SET SESSION autocommit = 1",
        "USE mysql",
    };
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof steps / sizeof steps[0]; i++) {
        rc = q_exec(c, m, steps[i]);
        if (rc == 0)
            dg_tracked(c, m);
    }
    if (rc == 0 && !strstr(c->dg.p, "track1=mysql;"))
        rc = fail(c, "schema change was not tracked: %s", c->dg.p);
    mysql_close(m);
    return rc;
}

void run_command_checks(void)
{
    check_compare("com_init_db", chk_init_db);
    check_compare("com_ping", chk_ping);
    check_compare("com_statistics", chk_statistics);
    check_compare("com_field_list", chk_field_list);
    check_compare("com_reset_connection", chk_reset_connection);
    check_compare("com_set_option_multi_statements", chk_set_option);
    check_compare("kill_query_and_mysql_kill", chk_kill);
    check_compare("com_process_info", chk_process_info);
    check_compare("com_refresh_and_com_debug", chk_refresh_debug);
    check_compare("session_state_tracking", chk_session_track);
}
