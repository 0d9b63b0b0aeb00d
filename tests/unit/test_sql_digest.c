/* SPDX-License-Identifier: Apache-2.0 */
/* test_sql_digest.c - unit tests for statement normalization and hashing:
 * expected normalized text, hash equality across literal/whitespace/
 * comment/case variants, inequality otherwise, truncation, errors.
 * Thread: single-threaded test program; owns only its stack data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/sql/digest.h"

typedef struct digest_case {
    const char *sql;
    const char *want;
} digest_case;

static const digest_case cases[] = {
    {"SELECT * FROM t WHERE id = 42", "SELECT * FROM t WHERE id = ?"},
    {"select  *  from t where id=42 -- x", "SELECT * FROM t WHERE id = ?"},
    {"SELECT a, b FROM t WHERE name = 'bob' AND x > 3.14",
     "SELECT a, b FROM t WHERE name = ? AND x > ?"},
    {"SELECT * FROM t WHERE id IN (1, 2, 3)", "SELECT * FROM t WHERE id IN (...)"},
    {"SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE v = 1)",
     "SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE v = ?)"},
    {"SELECT * FROM t WHERE id IN (1, a, 2)", "SELECT * FROM t WHERE id IN (?, a, ?)"},
    {"SELECT * FROM t WHERE (a, b) IN ((1, 2), (3, 4))", "SELECT * FROM t WHERE (a, b) IN (...)"},
    {"SELECT * FROM t WHERE a IN (-1, +2, NULL, TRUE, 'x' 'y')",
     "SELECT * FROM t WHERE a IN (...)"},
    {"INSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y')", "INSERT INTO t(a, b) VALUES (...)"},
    {"INSERT INTO t VALUE (1)", "INSERT INTO t VALUE (...)"},
    {"INSERT INTO t VALUES (1, NOW())", "INSERT INTO t VALUES (?, NOW())"},
    {"INSERT INTO t VALUES (1),(2),(now()),(3),(4) ON DUPLICATE KEY UPDATE a=VALUES(a)",
     "INSERT INTO t VALUES (...), (now()), (...) ON DUPLICATE KEY UPDATE a = VALUES (a)"},
    {"REPLACE INTO t SET a = 1, b = 'x'", "REPLACE INTO t SET a = ?, b = ?"},
    {"UPDATE t SET a = a + 1, b = -5 WHERE c - 5 > -1",
     "UPDATE t SET a = a + ?, b = ? WHERE c - ? > ?"},
    {"DELETE FROM `db`.`t` WHERE `id` = 7 LIMIT 1", "DELETE FROM db.t WHERE id = ? LIMIT ?"},
    {"SELECT `order`, `my col`, `a``b`, `mode`, `1x`, `\xc3\xa9t\xc3\xa9` FROM t",
     "SELECT `order`, `my col`, `a``b`, MODE, `1x`, \xc3\xa9t\xc3\xa9 FROM t"},
    {"select count(*), sum(x), max(y) from t group by z having count(*) > 10",
     "SELECT COUNT(*), SUM(x), MAX(y) FROM t GROUP BY z HAVING COUNT(*) > ?"},
    {"SELECT TRUE, FALSE, NULL, x IS NOT NULL", "SELECT ?, ?, NULL, x IS NOT NULL"},
    {"SELECT 'a' 'b' 'c', 'd'", "SELECT ?, ?"},
    {"SELECT X'4A', 0x4a, b'101', 0b1, _utf8mb4'x', _latin1 'z', N'y', 1e10, .5",
     "SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?"},
    {"SELECT * FROM t WHERE a = ? AND b = -? LIMIT ?, ?",
     "SELECT * FROM t WHERE a = ? AND b = ? LIMIT ?, ?"},
    {"SELECT /*+ MAX_EXECUTION_TIME(1000) */ a FROM t",
     "SELECT /*+ MAX_EXECUTION_TIME(1000) */ a FROM t"},
    {"SELECT /*!40001 SQL_NO_CACHE */ a FROM t WHERE b = /*!50000 5 */ 6",
     "SELECT /*!40001 SQL_NO_CACHE */ a FROM t WHERE b = /*!50000 ? */ ?"},
    {"SELECT /*M!100100 a*/", "SELECT /*M!100100 a */"},
    {"SELECT a FROM t FOR UPDATE SKIP LOCKED", "SELECT a FROM t FOR UPDATE SKIP LOCKED"},
    {"SELECT @a, @@session.sql_mode", "SELECT @a, @@session.sql_mode"},
    {"SELECT a->>'$.b', a->'$.c' FROM t", "SELECT a ->> ?, a -> ? FROM t"},
    {"SET @x := -1", "SET @x := ?"},
    {"CALL db.p(1, 'a', @out)", "CALL db.p(?, ?, @out)"},
    {"SELECT 1; SELECT 2;;  -- end", "SELECT ?; SELECT ?"},
    {"SELECT 1;; /* x */ ;SELECT 2", "SELECT ?; SELECT ?"},
    {"SELECT CASE WHEN a > 0 THEN 'pos' ELSE 'neg' END FROM t",
     "SELECT CASE WHEN a > ? THEN ? ELSE ? END FROM t"},
    {"SELECT * FROM t1 JOIN t2 ON t1.id = t2.id WHERE t1.x BETWEEN 1 AND 10",
     "SELECT * FROM t1 JOIN t2 ON t1.id = t2.id WHERE t1.x BETWEEN ? AND ?"},
    {"SELECT -1, - 1, 1 - 1, (-1), a*-1, NULL - 1, x-1",
     "SELECT ?, ?, ? - ?, (?), a * ?, NULL - ?, x - ?"},
    {"SELECT a FROM t LIMIT 10 OFFSET 20", "SELECT a FROM t LIMIT ? OFFSET ?"},
    {"SELECT \"a\" FROM t", "SELECT ? FROM t"},
    {"", ""},
    {"/* only a comment */ ;", ""},
};

static void test_normalized_text(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[1024];
        sql_digest_result r;
        sql_rc rc = sql_digest(cases[i].sql, strlen(cases[i].sql), 0, out, sizeof out, &r);
        if (rc != SQL_OK || strcmp(out, cases[i].want) != 0)
            print_error("digest of \"%s\":\n  got  \"%s\"\n  want \"%s\"\n", cases[i].sql, out,
                        cases[i].want);
        assert_int_equal(rc, SQL_OK);
        assert_string_equal(out, cases[i].want);
        assert_int_equal(r.len, strlen(out));
        assert_int_equal(r.full_len, r.len);
        assert_false(r.truncated);
        assert_true(r.hash == sql_hash64(out, r.len));
    }
}

static void test_ansi_quotes(void **state)
{
    (void)state;
    const char *s = "SELECT \"a\", \"b c\", 'd' FROM \"t\"";
    char out[128];
    sql_digest_result r;
    assert_int_equal(sql_digest(s, strlen(s), SQL_LEX_ANSI_QUOTES, out, sizeof out, &r), SQL_OK);
    assert_string_equal(out, "SELECT a, \"b c\", ? FROM t");
    const char *b = "SELECT 'a\\' FROM t";
    assert_int_equal(sql_digest(b, strlen(b), SQL_LEX_NO_BACKSLASH_ESCAPES, out, sizeof out, &r),
                     SQL_OK);
    assert_string_equal(out, "SELECT ? FROM t");
    assert_int_equal(sql_digest(b, strlen(b), 0, out, sizeof out, &r), SQL_ERR);
}

/* NUL bytes copied from names or hints are escaped: the digest stays a
 * C string. */
static void test_nul_bytes(void **state)
{
    (void)state;
    static const char s[] = "SELECT `a\0b`, 'c\0d' /*+ e\0f */ FROM t";
    char out[128];
    sql_digest_result r;
    assert_int_equal(sql_digest(s, sizeof s - 1, 0, out, sizeof out, &r), SQL_OK);
    assert_string_equal(out, "SELECT `a\\0b`, ? /*+ e\\0f */ FROM t");
    assert_int_equal(strlen(out), r.len);
}

static uint64_t hash_of(const char *s)
{
    char out[256];
    sql_digest_result r;
    assert_int_not_equal(sql_digest(s, strlen(s), 0, out, sizeof out, &r), SQL_ERR);
    return r.hash;
}

/* Each group: statements that differ only in literals, whitespace,
 * comments or keyword case, so they must share a hash. */
static const char *const same[][6] = {
    {"SELECT * FROM t WHERE id = 42", "select * from t where id=42",
     "SELECT  *\nFROM t /* c */ WHERE id = 'x' -- y", "SeLeCt * FrOm t WhErE id = -7;",
     "SELECT * FROM t WHERE id = ?", "# lead\nSELECT * FROM t WHERE id = 0x1F"},
    {"SELECT a FROM t WHERE b IN (1)", "SELECT a FROM t WHERE b IN (1,2,3)",
     "select a from t where b in ('a', 'b')", "SELECT a FROM t WHERE b IN (?, ?, ?)",
     "SELECT a FROM t WHERE b IN ( -1 , NULL )", NULL},
    {"INSERT INTO t (a,b) VALUES (1,2)", "INSERT INTO t(a, b) VALUES (1,2),(3,4),(5,6)",
     "insert into t (a , b) values ('x', NULL)", "INSERT INTO t (a,b) VALUES (?,?), (?,?)", NULL,
     NULL},
    {"SELECT `a` FROM `t`", "SELECT a FROM t", "select `a` from t", NULL, NULL, NULL},
    {"SELECT `mode` FROM t", "select mode from t", "SELECT MODE FROM t", NULL, NULL, NULL},
    {"select count(*) from t", "SELECT COUNT(*) FROM t", "SELECT COUNT( * ) FROM t",
     "SELECT /* x */ Count(*)FROM t", NULL, NULL},
    {"SELECT /*!40001 SQL_NO_CACHE */ a", "SELECT /*!40001 sql_no_cache*/ a",
     "SELECT /*!40001    SQL_NO_CACHE   */a", NULL, NULL, NULL},
    {"UPDATE t SET a = 'x' WHERE b = 1 LIMIT 1", "update t set a='y' where b=2 limit 100",
     "UPDATE t SET a = _utf8mb4'z' WHERE b = -3 LIMIT ?", NULL, NULL, NULL},
    {"SELECT a FROM t WHERE x = 'it''s'", "SELECT a FROM t WHERE x = \"q\\\"\"",
     "SELECT a FROM t WHERE x = 'a' 'b'", "SELECT a FROM t WHERE x = TRUE", NULL, NULL},
};

/* Pairs that must not collide. */
static const char *const differ[][2] = {
    {"SELECT * FROM t WHERE id = 1", "SELECT * FROM u WHERE id = 1"},
    {"SELECT * FROM t WHERE id = 1", "SELECT * FROM t WHERE id > 1"},
    {"SELECT * FROM t WHERE id = 1", "SELECT * FROM t WHERE ID = 1"},
    {"SELECT * FROM t WHERE id IN (1)", "SELECT * FROM t WHERE id IN (a)"},
    {"SELECT a - 1 FROM t", "SELECT a = -1 FROM t"},
    {"SELECT a FROM t WHERE b = NULL", "SELECT a FROM t WHERE b = 1"},
    {"SELECT a FROM t", "SELECT a FROM t LIMIT 1"},
    {"SELECT a FROM t", "SELECT a FROM t; SELECT b FROM t"},
    {"SELECT a FROM t FOR UPDATE", "SELECT a FROM t FOR SHARE"},
    {"SELECT /*!50000 a */ FROM t", "SELECT a FROM t"},
    {"SELECT `select` FROM t", "SELECT select FROM t"},
    {"SELECT a, b FROM t", "SELECT a.b FROM t"},
    {"SELECT f(a)", "SELECT f a"},
};

static void test_hash_equal(void **state)
{
    (void)state;
    for (size_t g = 0; g < sizeof same / sizeof same[0]; g++) {
        uint64_t h = hash_of(same[g][0]);
        for (size_t i = 1; i < 6 && same[g][i]; i++) {
            if (hash_of(same[g][i]) != h)
                print_error("group %zu: \"%s\" differs from \"%s\"\n", g, same[g][i], same[g][0]);
            assert_true(hash_of(same[g][i]) == h);
        }
        for (size_t o = 0; o < g; o++) /* and groups differ from each other */
            assert_true(hash_of(same[o][0]) != h);
    }
}

static void test_hash_differ(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof differ / sizeof differ[0]; i++) {
        if (hash_of(differ[i][0]) == hash_of(differ[i][1]))
            print_error("\"%s\" collides with \"%s\"\n", differ[i][0], differ[i][1]);
        assert_true(hash_of(differ[i][0]) != hash_of(differ[i][1]));
    }
}

static void test_fnv_vectors(void **state)
{
    (void)state;
    assert_true(sql_hash64("", 0) == 0xcbf29ce484222325ULL);
    assert_true(sql_hash64("a", 1) == 0xaf63dc4c8601ec8cULL);
    assert_true(sql_hash64("foobar", 6) == 0x85944171f73967e8ULL);
}

static void test_truncation(void **state)
{
    (void)state;
    const char *s = "SELECT a, b, c, d, e, f, g FROM some_table WHERE x = 1 AND y = 'long'";
    char full[256], small[16];
    sql_digest_result rf, rs;
    assert_int_equal(sql_digest(s, strlen(s), 0, full, sizeof full, &rf), SQL_OK);
    assert_int_equal(sql_digest(s, strlen(s), 0, small, sizeof small, &rs), SQL_PARTIAL);
    assert_true(rs.truncated);
    assert_int_equal(rs.len, sizeof small - 1);
    assert_int_equal(strlen(small), rs.len);
    assert_memory_equal(small, full, rs.len);
    assert_int_equal(rs.full_len, rf.len);
    assert_true(rs.hash == rf.hash); /* the hash covers the whole text */
    /* hash only, no buffer */
    assert_int_equal(sql_digest(s, strlen(s), 0, NULL, 0, &rs), SQL_PARTIAL);
    assert_int_equal(rs.len, 0);
    assert_true(rs.hash == rf.hash);
}

static bool utf8_complete(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        if (i + k > n)
            return false;
        i += k;
    }
    return true;
}

/* A cut never leaves half a UTF-8 character. */
static void test_truncation_utf8(void **state)
{
    (void)state;
    const char *s = "SELECT \xc3\xa9\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xc3\xa9 FROM t";
    char full[128];
    sql_digest_result rf;
    assert_int_equal(sql_digest(s, strlen(s), 0, full, sizeof full, &rf), SQL_OK);
    for (size_t cap = 1; cap < rf.len + 1; cap++) {
        char out[128];
        sql_digest_result r;
        assert_int_equal(sql_digest(s, strlen(s), 0, out, cap, &r), SQL_PARTIAL);
        assert_true(r.len <= cap - 1 && r.len + 3 >= cap - 1);
        assert_int_equal(strlen(out), r.len);
        assert_memory_equal(out, full, r.len);
        assert_true(utf8_complete(out, r.len));
        assert_true(r.hash == rf.hash);
    }
}

static void test_lex_error(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "SELECT 'abc",  "SELECT a FROM t /* x", "SELECT `a",
        "SELECT /*! 1", "SELECT \x01",          "SELECT X'4'",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char out[64];
        sql_digest_result r;
        assert_int_equal(sql_digest(bad[i], strlen(bad[i]), 0, out, sizeof out, &r), SQL_ERR);
        assert_int_equal(strncmp(out, "SELECT", 6), 0);
    }
}

/* Hostile bytes: never crash, never overrun, hash always matches text. */
static void test_random_inputs(void **state)
{
    (void)state;
    static const char *const parts[] = {
        "SELECT ", "IN (",  "VALUES (", ",",  ")",    "(",   "'x'", "\"y\"", "-",    "+", "1",
        "?",       "NULL ", "/*!5 ",    "*/", "/*",   "-- ", "\n",  "`q`",   ";",    "a", " ",
        "\\",      "'",     "@",        "e",  "TRUE", ".",   "0x",  "\xc3",  "\xff", "#",
    };
    uint32_t seed = 99;
    for (int iter = 0; iter < 20000; iter++) {
        char in[200];
        size_t n = 0;
        int k = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 24;
        for (int j = 0; j < k; j++) {
            seed = seed * 1103515245u + 12345u;
            const char *p = parts[(seed >> 16) % (sizeof parts / sizeof parts[0])];
            size_t l = strlen(p);
            memcpy(in + n, p, l);
            n += l;
        }
        char out[64];
        sql_digest_result r;
        sql_rc rc = sql_digest(in, n, 0, out, sizeof out, &r);
        assert_true(r.len < sizeof out && strlen(out) == r.len);
        if (rc == SQL_OK)
            assert_true(r.hash == sql_hash64(out, r.len));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalized_text), cmocka_unit_test(test_ansi_quotes),
        cmocka_unit_test(test_nul_bytes),       cmocka_unit_test(test_hash_equal),
        cmocka_unit_test(test_hash_differ),     cmocka_unit_test(test_fnv_vectors),
        cmocka_unit_test(test_truncation),      cmocka_unit_test(test_truncation_utf8),
        cmocka_unit_test(test_lex_error),       cmocka_unit_test(test_random_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
