/* SPDX-License-Identifier: Apache-2.0 */
/*
 * COM_QUERY: text result sets, OK/ERR packets, multi-statements and
 * procedures returning several result sets.
 */
#include "client_common.h"

#include <stdio.h>
#include <string.h>

static const char k_literals[] =
    "SELECT NULL AS n, 1 AS i, 18446744073709551615 AS u, -1.5e300 AS d, 1.25 AS dc,"
    " 'x' AS s, X'00ff00' AS b, DATE'2020-01-01' AS dt, TIME'-12:00:01.5' AS tm,"
    " CAST(NULL AS CHAR) AS nc, '' AS empty, _utf8mb4 0xe282ac AS euro";

/* Text result digest using either buffering mode. */
static int dg_query(struct ctx *c, MYSQL *m, const char *sql, int use)
{
    if (mysql_query(m, sql) != 0)
        return fail_my(c, m, sql);
    MYSQL_RES *res = use ? mysql_use_result(m) : mysql_store_result(m);
    if (!res)
        return fail_my(c, m, use ? "use_result" : "store_result");
    int rc = dg_result(c, m, res);
    mysql_free_result(res);
    return rc;
}

static int chk_types(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = dg_query(c, m, "SELECT * FROM mct_types ORDER BY id", 0);
    rc = rc ? rc : dg_query(c, m, k_literals, 0);
    rc = rc ? rc : dg_query(c, m, "SELECT * FROM mct_rows WHERE id < 0", 0);
    mysql_close(m);
    return rc;
}

/* mysql_use_result must see exactly what mysql_store_result sees. */
static int same_both_ways(struct ctx *c, MYSQL *m, const char *sql)
{
    size_t start = c->dg.len;
    int rc = dg_query(c, m, sql, 0);
    size_t mid = c->dg.len;
    rc = rc ? rc : dg_query(c, m, sql, 1);
    if (rc == 0 && (c->dg.len - mid != mid - start ||
                    memcmp(c->dg.p + start, c->dg.p + mid, mid - start) != 0))
        rc = fail(c, "use_result differs from store_result for '%.60s'", sql);
    /* Keep one copy for the comparison with the other port. */
    if (c->dg.p) {
        c->dg.len = mid;
        c->dg.p[mid] = '\0';
    }
    return rc;
}

static int chk_use_vs_store(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = same_both_ways(c, m, "SELECT * FROM mct_types ORDER BY id");
    rc = rc ? rc : same_both_ways(c, m, "SELECT * FROM mct_rows ORDER BY id");
    rc = rc ? rc : same_both_ways(c, m, k_literals);
    /* Abandon a use_result half way: the library drains the rest. */
    if (rc == 0 && mysql_query(m, "SELECT * FROM mct_rows") == 0) {
        MYSQL_RES *res = mysql_use_result(m);
        for (int i = 0; res && i < 10; i++)
            mysql_fetch_row(res);
        if (res)
            mysql_free_result(res);
        rc = q_exec(c, m, "SELECT 1");
    }
    mysql_close(m);
    return rc;
}

/* An error raised after some rows were already sent (ERR instead of EOF). */
static int error_mid_rows(struct ctx *c, MYSQL *m, int use)
{
    static const char sql[] =
        "SELECT r.id, (SELECT s.id FROM mct_rows s WHERE s.id <= IF(r.id > 5, 2, 1))"
        " AS sub FROM mct_rows r ORDER BY r.id";
    if (mysql_query(m, sql) != 0) {
        sb_printf(&c->dg, "mid(%d): query error %u;", use, mysql_errno(m));
        return 0;
    }
    MYSQL_RES *res = use ? mysql_use_result(m) : mysql_store_result(m);
    if (!res) {
        sb_printf(&c->dg, "mid(%d): result error %u;", use, mysql_errno(m));
        return 0;
    }
    int rows = 0;
    while (mysql_fetch_row(res))
        rows++;
    sb_printf(&c->dg, "mid(%d): rows %d then error %u;", use, rows, mysql_errno(m));
    mysql_free_result(res);
    return 0;
}

static int dg_error(struct ctx *c, MYSQL *m, const char *sql, unsigned want)
{
    if (mysql_query(m, sql) == 0) {
        MYSQL_RES *res = mysql_store_result(m);
        if (res)
            mysql_free_result(res);
        return fail(c, "'%s' should have failed", sql);
    }
    sb_printf(&c->dg, "err %u %s %s;", mysql_errno(m), mysql_sqlstate(m), mysql_error(m));
    if (mysql_errno(m) != want)
        return fail(c, "'%s': expected error %u, got %u", sql, want, mysql_errno(m));
    return 0;
}

static int chk_errors(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = dg_error(c, m, "SELECT * FROM mct_no_such_table", 1146);
    rc = rc ? rc : dg_error(c, m, "SELEKT 1", 1064);
    rc = rc ? rc : error_mid_rows(c, m, 0);
    rc = rc ? rc : error_mid_rows(c, m, 1);
    rc = rc ? rc : q_exec(c, m, "SELECT 1/0");
    if (rc == 0)
        sb_printf(&c->dg, "warnings=%u;", mysql_warning_count(m));
    rc = rc ? rc : dg_query(c, m, "SHOW WARNINGS", 0);
    rc = rc ? rc : dg_query(c, m, "SELECT 'still usable'", 0);
    mysql_close(m);
    return rc;
}

/* Sends one statement that answers with OK, without touching the result. */
static int q_ok(struct ctx *c, MYSQL *m, const char *sql)
{
    if (mysql_real_query(m, sql, strlen(sql)) != 0)
        return fail_my(c, m, sql);
    if (mysql_field_count(m) != 0)
        return fail(c, "'%s' returned a result set", sql);
    return 0;
}

/* Affected rows, insert id and the info string all travel in OK packets. */
static int chk_ok_packet(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = q_exec(c, m,
                    "CREATE TEMPORARY TABLE mct_ok (id INT AUTO_INCREMENT PRIMARY KEY,"
                    " v INT UNIQUE)");
    rc = rc ? rc : q_ok(c, m, "INSERT INTO mct_ok (v) VALUES (10), (20), (30)");
    if (rc == 0) {
        const char *info = mysql_info(m);
        sb_printf(&c->dg, "ins affected=%llu id=%llu info=%s;",
                  (unsigned long long)mysql_affected_rows(m),
                  (unsigned long long)mysql_insert_id(m), info ? info : "(null)");
    }
    rc = rc ? rc : q_ok(c, m, "UPDATE mct_ok SET v = v + 1 WHERE v >= 20");
    if (rc == 0)
        sb_printf(&c->dg, "upd affected=%llu info=%s;", (unsigned long long)mysql_affected_rows(m),
                  mysql_info(m) ? mysql_info(m) : "(null)");
    rc = rc ? rc : q_ok(c, m, "INSERT IGNORE INTO mct_ok (v) VALUES (10), (99)");
    if (rc == 0)
        sb_printf(&c->dg, "ign affected=%llu id=%llu warn=%u;",
                  (unsigned long long)mysql_affected_rows(m),
                  (unsigned long long)mysql_insert_id(m), mysql_warning_count(m));
    mysql_close(m);
    return rc;
}

static int chk_multi_statements(struct ctx *c)
{
    struct conn_opts o = {.flags = CLIENT_MULTI_STATEMENTS};
    MYSQL *m = db_open(c, &o);
    if (!m)
        return -1;
    static const char with_error[] =
        "CREATE TEMPORARY TABLE mct_ms (a INT); INSERT INTO mct_ms VALUES (1), (2);"
        " SELECT a FROM mct_ms ORDER BY a; SELECT * FROM mct_no_such_table;"
        " INSERT INTO mct_ms VALUES (3)";
    static const char all_ok[] =
        "SELECT COUNT(*) FROM mct_ms; DO 1; SELECT 'a' AS x UNION ALL SELECT 'b';"
        " SET @mct_x = 5; SELECT @mct_x";
    int rc = 0;
    if (mysql_real_query(m, with_error, sizeof with_error - 1) != 0)
        rc = fail_my(c, m, "multi-statement send");
    rc = rc ? rc : dg_all_results(c, m);
    /* The statement after the failing one must not have run. */
    long long n = 0;
    rc = rc ? rc : q_int(c, m, "SELECT COUNT(*) FROM mct_ms", &n);
    if (rc == 0 && n != 2)
        rc = fail(c, "statement after the error ran (count %lld)", n);
    if (rc == 0 && mysql_real_query(m, all_ok, sizeof all_ok - 1) != 0)
        rc = fail_my(c, m, "multi-statement send");
    rc = rc ? rc : dg_all_results(c, m);
    mysql_close(m);
    return rc;
}

static int chk_proc_two_results(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < 2; i++) {
        if (mysql_query(m, "CALL mct_two()") != 0)
            rc = fail_my(c, m, "CALL mct_two");
        rc = rc ? rc : dg_all_results(c, m);
    }
    /* Two result sets plus the final OK of the CALL. */
    if (rc == 0 && !strstr(c->dg.p, "#2 fc=0"))
        rc = fail(c, "CALL did not produce two result sets and a final OK: %s", c->dg.p);
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    mysql_close(m);
    return rc;
}

void run_query_checks(void)
{
    check_compare("query_column_types_and_nulls", chk_types);
    check_compare("query_use_result_vs_store_result", chk_use_vs_store);
    check_compare("query_errors_keep_connection", chk_errors);
    check_compare("query_ok_packet_fields", chk_ok_packet);
    check_compare("multi_statements_with_error", chk_multi_statements);
    check_compare("procedure_two_result_sets", chk_proc_two_results);
}
