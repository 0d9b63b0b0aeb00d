/* SPDX-License-Identifier: Apache-2.0 */
/* test_sql_stmt.c - unit tests for the statement recognizer: UPDATE and
 * DELETE (with DELAYED and friends), SELECT LIMIT forms, joins, subqueries,
 * locking clauses, INSERT shapes, other kinds, multi-statement input and
 * malformed input.
 * Thread: single-threaded test program; owns only its static buffers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/sql/stmt.h"

#define MAXTOK 512

static const char *g_sql;
static sql_token g_tok[MAXTOK];
static size_t g_ntok;

static sql_rc parse(const char *sql, sql_stmt *st)
{
    g_sql = sql;
    sql_lex(sql, strlen(sql), 0, g_tok, MAXTOK, &g_ntok);
    return sql_stmt_parse(sql, g_tok, g_ntok, st);
}

/* Source text from the first to the last token of r ("" when empty,
 * "<none>" when absent). */
static const char *rtext(sql_range r)
{
    static char buf[8][256];
    static int slot;
    char *b = buf[slot++ & 7];
    if (r.first == SQL_NONE)
        return "<none>";
    if (r.first >= r.end)
        return "";
    size_t a = g_tok[r.first].off, e = (size_t)g_tok[r.end - 1].off + g_tok[r.end - 1].len;
    snprintf(b, 256, "%.*s", (int)(e - a), g_sql + a);
    return b;
}

static const char *ttext(uint32_t i)
{
    sql_range r = {i, i + 1};
    return i == SQL_NONE ? "<none>" : rtext(r);
}

/* ---- UPDATE ------------------------------------------------------------------ */

static void test_update_delayed(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("UPDATE LOW_PRIORITY DELAYED IGNORE `db`.t1 AS a "
                           "SET a.x = x + 1, `y` = 'v' WHERE id = 5 ORDER BY id DESC LIMIT 10",
                           &st),
                     SQL_OK);
    assert_int_equal(st.kind, SQL_STMT_UPDATE);
    assert_int_equal(st.mods, (1u << SQL_MOD_LOW_PRIORITY) | (1u << SQL_MOD_DELAYED) |
                                  (1u << SQL_MOD_IGNORE));
    assert_string_equal(ttext(st.mod_tok[SQL_MOD_DELAYED]), "DELAYED");
    assert_int_equal(st.mod_tok[SQL_MOD_DELAYED], 2);
    assert_string_equal(ttext(st.verb), "UPDATE");
    assert_int_equal(st.ntables, 1);
    assert_string_equal(ttext(st.tables[0].schema), "`db`");
    assert_string_equal(ttext(st.tables[0].name), "t1");
    assert_string_equal(ttext(st.tables[0].alias), "a");
    assert_string_equal(rtext(st.tables[0].span), "`db`.t1 AS a");
    assert_string_equal(ttext(st.set.kw), "SET");
    assert_string_equal(rtext(st.set.body), "a.x = x + 1, `y` = 'v'");
    assert_int_equal(st.nassign, 2);
    assert_string_equal(rtext(st.assign[0].column), "a.x");
    assert_string_equal(ttext(st.assign[0].eq), "=");
    assert_string_equal(rtext(st.assign[0].expr), "x + 1");
    assert_string_equal(rtext(st.assign[1].column), "`y`");
    assert_string_equal(rtext(st.assign[1].expr), "'v'");
    assert_string_equal(ttext(st.where.kw), "WHERE");
    assert_string_equal(rtext(st.where.body), "id = 5");
    assert_string_equal(rtext(st.order_by.body), "id DESC");
    assert_int_equal(st.norder, 1);
    assert_true(st.order[0].desc);
    assert_string_equal(rtext(st.limit.span), "LIMIT 10");
    assert_string_equal(ttext(st.limit.count), "10");
    assert_int_equal(st.limit.offset, SQL_NONE);
    assert_int_equal(st.flags, 0);
    assert_int_equal(st.end, g_ntok);
}

static void test_update_multi_table(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(
        parse("UPDATE t1 JOIN t2 ON t1.id = t2.id SET t1.a = t2.b WHERE t2.c = 1", &st), SQL_OK);
    assert_int_equal(st.ntables, 2);
    assert_true(st.flags & SQL_SF_JOIN);
    assert_true(st.flags & SQL_SF_MULTI_TABLE);
    assert_string_equal(rtext(st.from.body), "t1 JOIN t2 ON t1.id = t2.id");
    assert_string_equal(rtext(st.assign[0].column), "t1.a");
    assert_string_equal(rtext(st.where.body), "t2.c = 1");
}

/* A WHERE/LIMIT inside a subquery is not the statement's own. */
static void test_update_subquery_depth(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("UPDATE t SET a = (SELECT max(b) FROM u WHERE u.id = t.id LIMIT 1) "
                           "WHERE c IN (SELECT c FROM v ORDER BY c LIMIT 3)",
                           &st),
                     SQL_OK);
    assert_true(st.flags & SQL_SF_SUBQUERY);
    assert_string_equal(rtext(st.assign[0].expr),
                        "(SELECT max(b) FROM u WHERE u.id = t.id LIMIT 1)");
    assert_string_equal(rtext(st.where.body), "c IN (SELECT c FROM v ORDER BY c LIMIT 3)");
    assert_int_equal(st.limit.kw, SQL_NONE);
    assert_int_equal(st.order_by.kw, SQL_NONE);
}

static void test_update_keyword_columns(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("UPDATE t SET mode = 1, value = 2, `order` = 3 WHERE offset = 4", &st),
                     SQL_OK);
    assert_int_equal(st.nassign, 3);
    assert_string_equal(rtext(st.assign[1].column), "value");
    assert_string_equal(rtext(st.where.body), "offset = 4");
}

static void test_update_malformed(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("UPDATE t WHERE a = 1", &st), SQL_PARTIAL);
    assert_int_equal(st.kind, SQL_STMT_UPDATE);
    assert_true(st.flags & SQL_SF_UNSUPPORTED);
    assert_int_equal(parse("UPDATE t SET a WHERE b = 1", &st), SQL_PARTIAL);
    assert_int_equal(parse("UPDATE t SET a = 1 GROUP BY b", &st), SQL_PARTIAL);
    assert_int_equal(parse("UPDATE t SET a = 1 WHERE b = 1 WHERE c = 2", &st), SQL_PARTIAL);
    assert_int_equal(parse("UPDATE t SET a = (1 WHERE", &st), SQL_PARTIAL);
    assert_int_equal(parse("UPDATE", &st), SQL_PARTIAL);
}

/* ---- DELETE ------------------------------------------------------------------- */

static void test_delete_delayed(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("DELETE DELAYED LOW_PRIORITY QUICK IGNORE FROM db.t "
                           "WHERE a = 1 /* c */ ORDER BY b, c DESC LIMIT ? /* tail */",
                           &st),
                     SQL_OK);
    assert_int_equal(st.kind, SQL_STMT_DELETE);
    assert_int_equal(st.mods, (1u << SQL_MOD_DELAYED) | (1u << SQL_MOD_LOW_PRIORITY) |
                                  (1u << SQL_MOD_QUICK) | (1u << SQL_MOD_IGNORE));
    assert_int_equal(st.mod_tok[SQL_MOD_DELAYED], 1);
    assert_string_equal(ttext(st.from.kw), "FROM");
    assert_string_equal(rtext(st.from.body), "db.t");
    assert_string_equal(ttext(st.tables[0].schema), "db");
    assert_string_equal(ttext(st.tables[0].name), "t");
    assert_string_equal(rtext(st.where.body), "a = 1"); /* comment not included */
    assert_int_equal(st.norder, 2);
    assert_string_equal(rtext(st.order[0].expr), "b");
    assert_int_equal(st.order[0].dir, SQL_NONE);
    assert_string_equal(rtext(st.order[1].expr), "c");
    assert_string_equal(ttext(st.order[1].dir), "DESC");
    assert_string_equal(ttext(st.limit.count), "?");
    assert_string_equal(rtext(st.limit.span), "LIMIT ?");
}

static void test_delete_multi(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(
        parse("DELETE t1, t2.* FROM t1 INNER JOIN t2 ON t1.id = t2.id WHERE t1.x = 1", &st),
        SQL_OK);
    assert_int_equal(st.ntables, 4);
    assert_true(st.flags & SQL_SF_MULTI_TABLE);
    assert_string_equal(ttext(st.tables[1].name), "t2");
    assert_string_equal(rtext(st.from.body), "t1 INNER JOIN t2 ON t1.id = t2.id");
    assert_string_equal(rtext(st.where.body), "t1.x = 1");

    assert_int_equal(
        parse("DELETE QUICK FROM t1, t2 USING t1 LEFT JOIN t2 USING (id) WHERE t2.id IS NULL", &st),
        SQL_OK);
    assert_int_equal(st.ntables, 4);
    assert_true(st.flags & SQL_SF_JOIN);
    assert_string_equal(rtext(st.from.body), "t1, t2");
    assert_string_equal(rtext(st.where.body), "t2.id IS NULL");

    assert_int_equal(parse("DELETE t1 WHERE a = 1", &st), SQL_PARTIAL);
}

/* ---- SELECT --------------------------------------------------------------------- */

typedef struct limit_case {
    const char *sql;
    const char *offset;
    const char *count;
    bool offset_kw;
    sql_rc rc;
} limit_case;

static void test_select_limit_forms(void **state)
{
    (void)state;
    static const limit_case cases[] = {
        {"SELECT a FROM t LIMIT 10", "<none>", "10", false, SQL_OK},
        {"SELECT a FROM t LIMIT 5, 10", "5", "10", false, SQL_OK},
        {"SELECT a FROM t LIMIT 10 OFFSET 5", "5", "10", true, SQL_OK},
        {"SELECT a FROM t LIMIT ?, ?", "?", "?", false, SQL_OK},
        {"select a from t limit ? offset ?", "?", "?", true, SQL_OK},
        {"SELECT a FROM t LIMIT @x", "<none>", "@x", false, SQL_PARTIAL},
        {"SELECT a FROM t LIMIT 1, a", "1", "a", false, SQL_PARTIAL},
        {"SELECT a FROM t LIMIT 1 OFFSET", "<none>", "1", true, SQL_PARTIAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sql_stmt st;
        assert_int_equal(parse(cases[i].sql, &st), cases[i].rc);
        assert_int_equal(st.kind, SQL_STMT_SELECT);
        assert_string_equal(ttext(st.limit.kw), cases[i].sql[0] == 's' ? "limit" : "LIMIT");
        assert_string_equal(ttext(st.limit.offset), cases[i].offset);
        assert_string_equal(ttext(st.limit.count), cases[i].count);
        assert_int_equal(st.limit.offset_kw, cases[i].offset_kw);
    }
}

static void test_select_clauses(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("SELECT SQL_CALC_FOUND_ROWS DISTINCT a, b AS c, COUNT(*) FROM t "
                           "WHERE x > 0 AND y = 'FROM' GROUP BY a, b WITH ROLLUP "
                           "HAVING COUNT(*) > 1 ORDER BY FIELD(a, 1, 2) DESC, b ASC, c LIMIT 5",
                           &st),
                     SQL_OK);
    assert_true(st.mods & (1u << SQL_MOD_SQL_CALC_FOUND_ROWS));
    assert_string_equal(ttext(st.mod_tok[SQL_MOD_SQL_CALC_FOUND_ROWS]), "SQL_CALC_FOUND_ROWS");
    assert_true(st.mods & (1u << SQL_MOD_DISTINCT));
    assert_string_equal(ttext(st.select_list.kw), "SELECT");
    assert_string_equal(rtext(st.select_list.body), "a, b AS c, COUNT(*)");
    assert_string_equal(rtext(st.where.body), "x > 0 AND y = 'FROM'");
    assert_true(st.flags & SQL_SF_GROUP_BY);
    assert_true(st.flags & SQL_SF_HAVING);
    assert_string_equal(rtext(st.group_by.body), "a, b WITH ROLLUP");
    assert_string_equal(rtext(st.having.body), "COUNT(*) > 1");
    assert_int_equal(st.norder, 3);
    assert_string_equal(rtext(st.order[0].expr), "FIELD(a, 1, 2)");
    assert_true(st.order[0].desc);
    assert_string_equal(rtext(st.order[1].expr), "b");
    assert_false(st.order[1].desc);
    assert_string_equal(ttext(st.order[1].dir), "ASC");
    assert_string_equal(rtext(st.order[2].expr), "c");
    assert_false(st.flags & (SQL_SF_JOIN | SQL_SF_SUBQUERY | SQL_SF_MULTI_TABLE));
}

static void test_select_joins(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("SELECT * FROM db1.t1 a LEFT OUTER JOIN t2 AS b ON a.id = b.id "
                           "NATURAL JOIN t3 STRAIGHT_JOIN t4 ON LEFT(t4.x, 2) = a.y "
                           "CROSS JOIN t5 USE INDEX (i1) IGNORE KEY FOR ORDER BY (i2), t6 "
                           "JOIN t7 USING (k) WHERE a.z = 1",
                           &st),
                     SQL_OK);
    assert_int_equal(st.ntables, 7);
    assert_true(st.flags & SQL_SF_JOIN);
    assert_true(st.flags & SQL_SF_MULTI_TABLE);
    assert_string_equal(ttext(st.tables[0].schema), "db1");
    assert_string_equal(ttext(st.tables[0].alias), "a");
    assert_string_equal(ttext(st.tables[1].alias), "b");
    assert_string_equal(ttext(st.tables[3].name), "t4");
    assert_string_equal(rtext(st.tables[4].span), "t5 USE INDEX (i1) IGNORE KEY FOR ORDER BY (i2)");
    assert_string_equal(ttext(st.tables[6].name), "t7");
    assert_string_equal(rtext(st.where.body), "a.z = 1");

    assert_int_equal(parse("SELECT 1 FROM DUAL WHERE 1 = 1", &st), SQL_OK);
    assert_int_equal(st.ntables, 0);
    assert_int_equal(parse("SELECT 1", &st), SQL_OK);
    assert_int_equal(st.from.kw, SQL_NONE);
    assert_int_equal(parse("SELECT * FROM (t1, t2) JOIN t3", &st), SQL_PARTIAL);
    assert_int_equal(parse("SELECT * FROM JSON_TABLE('[]', '$' COLUMNS (a INT PATH '$')) j", &st),
                     SQL_PARTIAL);
}

static void test_select_subqueries(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("SELECT (SELECT 1 LIMIT 1), a FROM t "
                           "WHERE b = (SELECT c FROM u WHERE d = 1 ORDER BY e LIMIT 1) "
                           "AND EXISTS (SELECT 1 FROM v FOR UPDATE) ORDER BY f LIMIT 2",
                           &st),
                     SQL_OK);
    assert_true(st.flags & SQL_SF_SUBQUERY);
    assert_false(st.flags & SQL_SF_DERIVED);
    assert_string_equal(rtext(st.select_list.body), "(SELECT 1 LIMIT 1), a");
    assert_string_equal(rtext(st.where.body),
                        "b = (SELECT c FROM u WHERE d = 1 ORDER BY e LIMIT 1) "
                        "AND EXISTS (SELECT 1 FROM v FOR UPDATE)");
    assert_int_equal(st.norder, 1);
    assert_string_equal(rtext(st.order[0].expr), "f");
    assert_string_equal(ttext(st.limit.count), "2");
    assert_int_equal(st.lock.kind, SQL_LOCK_NONE);
    assert_int_equal(st.ntables, 1);
}

static void test_select_derived(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("SELECT d.a FROM (SELECT * FROM t WHERE x = 1 ORDER BY y LIMIT 5) AS d "
                           "JOIN LATERAL (SELECT 1 AS z) AS l "
                           "WHERE d.a = 1 ORDER BY d.b LIMIT 9",
                           &st),
                     SQL_OK);
    assert_true(st.flags & SQL_SF_DERIVED);
    assert_false(st.flags & SQL_SF_SUBQUERY);
    assert_int_equal(st.ntables, 2);
    assert_true(st.tables[0].derived);
    assert_int_equal(st.tables[0].name, SQL_NONE);
    assert_string_equal(ttext(st.tables[0].alias), "d");
    assert_string_equal(rtext(st.tables[1].span), "LATERAL (SELECT 1 AS z) AS l");
    assert_string_equal(rtext(st.where.body), "d.a = 1");
    assert_string_equal(ttext(st.limit.count), "9");
}

static void test_select_union(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("SELECT a FROM t WHERE x = 1 UNION ALL SELECT a FROM u LIMIT 5", &st),
                     SQL_OK);
    assert_true(st.flags & SQL_SF_UNION);
    assert_string_equal(rtext(st.where.body), "x = 1");
    assert_int_equal(st.limit.kw, SQL_NONE); /* belongs to the union, not the first block */
    assert_int_equal(parse("SELECT a FROM t WHERE a IN (SELECT 1 UNION SELECT 2)", &st), SQL_OK);
    assert_false(st.flags & SQL_SF_UNION);
    assert_int_equal(parse("(SELECT a FROM t) UNION (SELECT b FROM u)", &st), SQL_PARTIAL);
    assert_int_equal(st.kind, SQL_STMT_SELECT);
    assert_true(st.flags & SQL_SF_PAREN);
}

typedef struct lock_case {
    const char *sql;
    sql_lock_kind kind;
    sql_lock_wait wait;
    const char *span;
} lock_case;

static void test_select_locking(void **state)
{
    (void)state;
    static const lock_case cases[] = {
        {"SELECT a FROM t WHERE id = 1 FOR UPDATE", SQL_LOCK_FOR_UPDATE, SQL_WAIT_DEFAULT,
         "FOR UPDATE"},
        {"SELECT a FROM t FOR UPDATE SKIP LOCKED", SQL_LOCK_FOR_UPDATE, SQL_WAIT_SKIP_LOCKED,
         "FOR UPDATE SKIP LOCKED"},
        {"SELECT a FROM t LIMIT 1 FOR UPDATE NOWAIT", SQL_LOCK_FOR_UPDATE, SQL_WAIT_NOWAIT,
         "FOR UPDATE NOWAIT"},
        {"SELECT a FROM t FOR SHARE SKIP LOCKED", SQL_LOCK_FOR_SHARE, SQL_WAIT_SKIP_LOCKED,
         "FOR SHARE SKIP LOCKED"},
        {"SELECT a FROM t1, t2 FOR UPDATE OF t1, t2 SKIP LOCKED", SQL_LOCK_FOR_UPDATE,
         SQL_WAIT_SKIP_LOCKED, "FOR UPDATE OF t1, t2 SKIP LOCKED"},
        {"SELECT a FROM t1, t2 FOR UPDATE OF t1 FOR SHARE OF t2 NOWAIT", SQL_LOCK_FOR_UPDATE,
         SQL_WAIT_DEFAULT, "FOR UPDATE OF t1 FOR SHARE OF t2 NOWAIT"},
        {"SELECT a FROM t lock in share mode", SQL_LOCK_IN_SHARE_MODE, SQL_WAIT_DEFAULT,
         "lock in share mode"},
        {"SELECT a FROM t FOR UPDATE WAIT 5", SQL_LOCK_FOR_UPDATE, SQL_WAIT_SECONDS,
         "FOR UPDATE WAIT 5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sql_stmt st;
        assert_int_equal(parse(cases[i].sql, &st), SQL_OK);
        assert_int_equal(st.lock.kind, cases[i].kind);
        assert_int_equal(st.lock.wait, cases[i].wait);
        assert_string_equal(rtext(st.lock.span), cases[i].span);
    }
    sql_stmt st;
    assert_int_equal(parse("SELECT a FROM t FOR EACH", &st), SQL_PARTIAL);
    assert_int_equal(parse("SELECT a FROM t LOCK IN MODE", &st), SQL_PARTIAL);
}

static void test_select_hint_exec_into(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("SELECT /*+ BKA(t) */ a INTO @x FROM t", &st), SQL_OK);
    assert_true(st.flags & SQL_SF_HINT);
    assert_true(st.flags & SQL_SF_INTO);
    assert_string_equal(ttext(st.hint), "/*+ BKA(t) */");
    assert_string_equal(rtext(st.select_list.body), "a");
    assert_int_equal(parse("SELECT /*!40001 SQL_NO_CACHE */ a FROM t", &st), SQL_OK);
    assert_true(st.flags & SQL_SF_EXEC_COMMENT);
    assert_false(st.flags & SQL_SF_HINT);
    assert_string_equal(rtext(st.select_list.body), "a");
    assert_int_equal(parse("SELECT a FROM t WINDOW w AS (ORDER BY a) ORDER BY a", &st), SQL_OK);
    assert_true(st.flags & SQL_SF_WINDOW);
    assert_int_equal(st.norder, 1);
}

static void test_with(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c "
                           "WHERE n < 5), d AS (SELECT 2) SELECT * FROM c WHERE n > 1 LIMIT 3",
                           &st),
                     SQL_OK);
    assert_int_equal(st.kind, SQL_STMT_SELECT);
    assert_true(st.flags & SQL_SF_WITH);
    assert_false(st.flags & SQL_SF_UNION);
    assert_string_equal(ttext(st.verb), "SELECT");
    assert_string_equal(rtext(st.with), "WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 "
                                        "FROM c WHERE n < 5), d AS (SELECT 2)");
    assert_string_equal(rtext(st.where.body), "n > 1");
    assert_int_equal(parse("WITH x AS (SELECT 1) DELETE FROM t WHERE a IN (SELECT * FROM x)", &st),
                     SQL_OK);
    assert_int_equal(st.kind, SQL_STMT_DELETE);
    assert_int_equal(parse("WITH x AS (SELECT 1) SHOW TABLES", &st), SQL_PARTIAL);
    assert_int_equal(parse("WITH x AS SELECT 1", &st), SQL_PARTIAL);
}

/* ---- INSERT / REPLACE ------------------------------------------------------------- */

static void test_insert(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("INSERT DELAYED IGNORE INTO db.t (a, b) VALUES (1, 2), (3, 4) "
                           "ON DUPLICATE KEY UPDATE a = VALUES(a)",
                           &st),
                     SQL_OK);
    assert_int_equal(st.kind, SQL_STMT_INSERT);
    assert_int_equal(st.mods, (1u << SQL_MOD_DELAYED) | (1u << SQL_MOD_IGNORE));
    assert_int_equal(st.mod_tok[SQL_MOD_DELAYED], 1);
    assert_string_equal(ttext(st.tables[0].name), "t");
    assert_string_equal(rtext(st.columns), "a, b");
    assert_string_equal(ttext(st.values.kw), "VALUES");
    assert_string_equal(rtext(st.values.body), "(1, 2), (3, 4)");
    assert_true(st.flags & SQL_SF_ON_DUPLICATE);
    assert_string_equal(rtext(st.on_dup.body), "a = VALUES(a)");

    assert_int_equal(parse("REPLACE LOW_PRIORITY t SET a = 1, b = DEFAULT", &st), SQL_OK);
    assert_int_equal(st.kind, SQL_STMT_REPLACE);
    assert_int_equal(st.nassign, 2);
    assert_string_equal(rtext(st.assign[1].expr), "DEFAULT");

    assert_int_equal(parse("INSERT INTO t VALUE (1) AS n ON DUPLICATE KEY UPDATE a = n.a", &st),
                     SQL_OK);
    assert_string_equal(rtext(st.values.body), "(1)");
    assert_string_equal(rtext(st.on_dup.body), "a = n.a");

    assert_int_equal(parse("INSERT INTO t (a) SELECT x AS a FROM u JOIN v ON u.i = v.i "
                           "ON DUPLICATE KEY UPDATE a = 1",
                           &st),
                     SQL_OK);
    assert_true(st.flags & SQL_SF_INSERT_SELECT);
    assert_string_equal(rtext(st.on_dup.body), "a = 1");
    assert_int_equal(parse("INSERT INTO t (SELECT 1)", &st), SQL_OK);
    assert_true(st.flags & SQL_SF_INSERT_SELECT);
    assert_int_equal(parse("INSERT INTO t", &st), SQL_PARTIAL);
    assert_int_equal(parse("INSERT INTO t VALUES (1) garbage", &st), SQL_PARTIAL);
}

/* ---- other statements ------------------------------------------------------------- */

typedef struct kind_case {
    const char *sql;
    sql_stmt_kind kind;
    const char *table; /* tables[0].name, or NULL */
} kind_case;

static void test_other_kinds(void **state)
{
    (void)state;
    static const kind_case cases[] = {
        {"CALL db.proc(1, @x)", SQL_STMT_CALL, "proc"},
        {"SET NAMES utf8mb4", SQL_STMT_SET, NULL},
        {"SET autocommit = 0", SQL_STMT_SET, NULL},
        {"BEGIN", SQL_STMT_BEGIN, NULL},
        {"begin work", SQL_STMT_BEGIN, NULL},
        {"START TRANSACTION READ ONLY", SQL_STMT_BEGIN, NULL},
        {"START SLAVE", SQL_STMT_OTHER, NULL},
        {"COMMIT", SQL_STMT_COMMIT, NULL},
        {"COMMIT AND CHAIN", SQL_STMT_COMMIT, NULL},
        {"ROLLBACK", SQL_STMT_ROLLBACK, NULL},
        {"ROLLBACK WORK TO SAVEPOINT s", SQL_STMT_OTHER, NULL},
        {"ROLLBACK TO s", SQL_STMT_OTHER, NULL},
        {"CREATE TABLE IF NOT EXISTS db.t (a INT)", SQL_STMT_DDL, "t"},
        {"CREATE TEMPORARY TABLE t2 LIKE t1", SQL_STMT_DDL, "t2"},
        {"ALTER TABLE t ADD COLUMN b INT", SQL_STMT_DDL, "t"},
        {"DROP TABLE IF EXISTS a, b", SQL_STMT_DDL, "a"},
        {"TRUNCATE t", SQL_STMT_DDL, "t"},
        {"TRUNCATE TABLE `x`", SQL_STMT_DDL, "`x`"},
        {"RENAME TABLE a TO b, c TO d", SQL_STMT_DDL, "a"},
        {"CREATE INDEX i ON t (a)", SQL_STMT_DDL, NULL},
        {"SHOW TABLES", SQL_STMT_SHOW, NULL},
        {"USE mydb", SQL_STMT_USE, "mydb"},
        {"EXPLAIN SELECT 1", SQL_STMT_OTHER, NULL},
        {"DO SLEEP(1)", SQL_STMT_OTHER, NULL},
        {"BEGIN NOT ATOMIC SELECT 1; END", SQL_STMT_OTHER, NULL},
        {"/*!40101 SET NAMES utf8 */", SQL_STMT_OTHER, NULL},
        {"foo bar", SQL_STMT_OTHER, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sql_stmt st;
        parse(cases[i].sql, &st);
        if (st.kind != cases[i].kind)
            print_error("\"%s\": kind %d\n", cases[i].sql, st.kind);
        assert_int_equal(st.kind, cases[i].kind);
        if (cases[i].table)
            assert_string_equal(ttext(st.tables[0].name), cases[i].table);
    }
    sql_stmt st;
    parse("DROP TABLE a, db.b", &st);
    assert_int_equal(st.ntables, 2);
    parse("RENAME TABLE a TO b, c TO d", &st);
    assert_int_equal(st.ntables, 4);
}

static void test_unknown(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("", &st), SQL_ERR);
    assert_int_equal(st.kind, SQL_STMT_UNKNOWN);
    assert_int_equal(parse("/* only */ -- comments", &st), SQL_ERR);
    assert_int_equal(parse(";", &st), SQL_ERR);
    assert_int_equal(parse("UPDATE t SET a = 'oops WHERE id = 1", &st), SQL_ERR);
    assert_int_equal(st.kind, SQL_STMT_UNKNOWN);
    assert_true(st.flags & SQL_SF_LEX_ERROR);
    assert_int_equal(parse("SELECT 1 /* open", &st), SQL_ERR);
}

static void test_multi_statement(void **state)
{
    (void)state;
    const char *sql = "SELECT 1 FROM t; DELETE DELAYED FROM u WHERE a = 1 LIMIT 2;";
    sql_stmt st;
    assert_int_equal(parse(sql, &st), SQL_OK);
    assert_int_equal(st.kind, SQL_STMT_SELECT);
    assert_true(st.flags & SQL_SF_MULTI_STMT);
    assert_int_equal(g_tok[st.end].kind, SQL_TOK_SEMI);
    /* the next statement: the tokens after the ';', indexes relative to them */
    const sql_token *rest = g_tok + st.end + 1;
    size_t nrest = g_ntok - st.end - 1;
    sql_stmt st2;
    assert_int_equal(sql_stmt_parse(sql, rest, nrest, &st2), SQL_OK);
    assert_int_equal(st2.kind, SQL_STMT_DELETE);
    assert_true(st2.mods & (1u << SQL_MOD_DELAYED));
    assert_false(st2.flags & SQL_SF_MULTI_STMT);
    assert_int_equal(rest[st2.limit.count].kind, SQL_TOK_NUMBER);
    assert_int_equal(parse("SELECT 1;  -- done", &st), SQL_OK);
    assert_false(st.flags & SQL_SF_MULTI_STMT);
    /* split + parse each span */
    sql_span sp[4];
    size_t nsp;
    assert_int_equal(sql_split(sql, strlen(sql), 0, sp, 4, &nsp), SQL_OK);
    assert_int_equal(nsp, 2);
    sql_token toks[32];
    size_t nt;
    assert_int_equal(sql_lex(sql + sp[1].off, sp[1].len, 0, toks, 32, &nt), SQL_OK);
    assert_int_equal(sql_stmt_parse(sql + sp[1].off, toks, nt, &st2), SQL_OK);
    assert_int_equal(st2.kind, SQL_STMT_DELETE);
}

static void test_overflow(void **state)
{
    (void)state;
    sql_stmt st;
    assert_int_equal(parse("SELECT * FROM a, b, c, d, e, f, g, h, i, j WHERE 1", &st), SQL_PARTIAL);
    assert_true(st.flags & SQL_SF_OVERFLOW);
    assert_int_equal(st.ntables, SQL_STMT_MAX_TABLES);
    assert_string_equal(rtext(st.where.body), "1");
    char buf[1024] = "UPDATE t SET ";
    for (int i = 0; i < SQL_STMT_MAX_ASSIGN + 2; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%sc%d = %d", i ? ", " : "", i, i);
    assert_int_equal(parse(buf, &st), SQL_PARTIAL);
    assert_int_equal(st.nassign, SQL_STMT_MAX_ASSIGN);
    assert_true(st.flags & SQL_SF_OVERFLOW);
}

/* ---- robustness: ranges stay inside the statement on any input --------------------- */

static void check_range(sql_range r, const sql_stmt *st)
{
    if (r.first == SQL_NONE)
        return;
    assert_true(r.first <= r.end);
    assert_true(r.end <= st->end);
}

static void check_tok(uint32_t i, const sql_stmt *st) { assert_true(i == SQL_NONE || i < st->end); }

static void check_stmt(const sql_stmt *st)
{
    assert_true(st->end <= g_ntok);
    check_range(st->with, st);
    check_range(st->select_list.body, st);
    check_range(st->from.body, st);
    check_range(st->set.body, st);
    check_range(st->where.body, st);
    check_range(st->group_by.body, st);
    check_range(st->having.body, st);
    check_range(st->order_by.body, st);
    check_range(st->values.body, st);
    check_range(st->on_dup.body, st);
    check_range(st->columns, st);
    check_range(st->limit.span, st);
    check_range(st->lock.span, st);
    check_tok(st->limit.count, st);
    check_tok(st->limit.offset, st);
    for (unsigned i = 0; i < st->ntables; i++) {
        check_range(st->tables[i].span, st);
        check_tok(st->tables[i].name, st);
        check_tok(st->tables[i].alias, st);
    }
    for (unsigned i = 0; i < st->nassign; i++) {
        check_range(st->assign[i].column, st);
        check_range(st->assign[i].expr, st);
    }
    for (unsigned i = 0; i < st->norder; i++)
        check_range(st->order[i].expr, st);
    for (unsigned m = 0; m < SQL_MOD__COUNT; m++)
        check_tok(st->mod_tok[m], st);
}

static void test_random_statements(void **state)
{
    (void)state;
    static const char *const words[] = {
        "SELECT", "UPDATE",  "DELETE", "INSERT",  "FROM",      "WHERE", "SET",    "ORDER",
        "BY",     "LIMIT",   "OFFSET", "FOR",     "UPDATE",    "SHARE", "LOCK",   "IN",
        "MODE",   "SKIP",    "LOCKED", "JOIN",    "LEFT",      "ON",    "USING",  "AS",
        "(",      ")",       ",",      "=",       "1",         "?",     "a",      "t.b",
        "`c`",    "UNION",   "WITH",   "VALUES",  "DELAYED",   "GROUP", "HAVING", "INTO",
        ";",      "/* c */", "DUAL",   "LATERAL", "DUPLICATE", "KEY",   "USE",    "INDEX",
        "*",      ".",       "OF",     "NOWAIT",
    };
    char buf[600];
    uint32_t seed = 7;
    for (int iter = 0; iter < 30000; iter++) {
        size_t n = 0;
        int k = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 30;
        for (int j = 0; j < k; j++) {
            seed = seed * 1103515245u + 12345u;
            const char *w = words[(seed >> 16) % (sizeof words / sizeof words[0])];
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s ", w);
        }
        sql_stmt st;
        sql_rc rc = parse(buf, &st);
        assert_true(rc == SQL_OK || rc == SQL_PARTIAL || rc == SQL_ERR);
        check_stmt(&st);
    }
}

/* Deep nesting must not recurse. */
static void test_deep_nesting(void **state)
{
    (void)state;
    static char buf[40000];
    size_t n = (size_t)snprintf(buf, sizeof buf, "SELECT a FROM t WHERE ");
    for (int i = 0; i < 10000; i++)
        buf[n++] = '(';
    buf[n] = '\0';
    static sql_token toks[20000];
    size_t nt;
    sql_lex(buf, n, 0, toks, 20000, &nt);
    sql_stmt st;
    assert_int_equal(sql_stmt_parse(buf, toks, nt, &st), SQL_PARTIAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_update_delayed),
        cmocka_unit_test(test_update_multi_table),
        cmocka_unit_test(test_update_subquery_depth),
        cmocka_unit_test(test_update_keyword_columns),
        cmocka_unit_test(test_update_malformed),
        cmocka_unit_test(test_delete_delayed),
        cmocka_unit_test(test_delete_multi),
        cmocka_unit_test(test_select_limit_forms),
        cmocka_unit_test(test_select_clauses),
        cmocka_unit_test(test_select_joins),
        cmocka_unit_test(test_select_subqueries),
        cmocka_unit_test(test_select_derived),
        cmocka_unit_test(test_select_union),
        cmocka_unit_test(test_select_locking),
        cmocka_unit_test(test_select_hint_exec_into),
        cmocka_unit_test(test_with),
        cmocka_unit_test(test_insert),
        cmocka_unit_test(test_other_kinds),
        cmocka_unit_test(test_unknown),
        cmocka_unit_test(test_multi_statement),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_random_statements),
        cmocka_unit_test(test_deep_nesting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
