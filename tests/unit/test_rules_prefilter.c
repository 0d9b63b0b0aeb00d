/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rules_prefilter.c - the regex prefilter: which word is derived from
 * a pattern (and when none may be), and that a regex whose word is absent
 * from a statement is never run. Also the literal slots behind rewrites,
 * checked against the digest they must agree with.
 */
#include "myrewrite/sql/digest.h"
#include "rules/rules_impl.h"
#include "test_rules.h"

/* ---- derivation ---- */

static void expect_word(const char *pattern, const char *want)
{
    char *got = rules_derive_word(pattern, strlen(pattern));
    if (!want && got)
        fail_msg("pattern %s: wanted no word, got '%s'", pattern, got);
    if (want && (!got || strcmp(got, want) != 0))
        fail_msg("pattern %s: wanted '%s', got %s", pattern, want, got ? got : "none");
    free(got);
}

static void words_pinned_on_both_sides(void **state)
{
    (void)state;
    expect_word("FROM orders WHERE", "orders");
    expect_word("\\borders\\b", "orders");
    expect_word("^SELECT \\* FROM Orders$", "orders");
    expect_word("\\sorders\\s", "orders");
    expect_word("\\s+orders\\s+", "orders");
    expect_word("\\Worders\\W", "orders");
    expect_word("\\(orders\\)", "orders");
    expect_word("ORDER BY RAND\\(\\)", "rand");
    expect_word("(?=x) orders ", "orders");
    expect_word("\\p{Lu} orders,", "orders");
    expect_word("[a-z]+ customers ", "customers");
    expect_word("(?:x|y) customers ", "customers");
    expect_word("(?:, big_table )", "big_table");
    expect_word("(?<t> big_table )", "big_table");
    expect_word("\\bUNION\\b", "union");
    expect_word("SELECT (foo|bar) FROM t WHERE", "t");
    expect_word("x{2} orders ", "orders");
}

static void no_word_when_in_doubt(void **state)
{
    (void)state;
    expect_word("FROM orders", NULL); /* FROM orders_2024 would match */
    expect_word("orders", NULL);
    expect_word("a|b", NULL);
    expect_word(" orders |  customers ", NULL); /* top-level alternation */
    expect_word("x (orders)? y", NULL);
    expect_word(" (orders )* ", NULL);
    expect_word(" (orders )+ ", NULL);
    expect_word(" (?: orders |x) ", NULL);
    expect_word(" [orders] ", NULL);
    expect_word("\\Q orders \\E", NULL);
    expect_word("(?i) orders ", NULL);
    expect_word("(?x) orders ", NULL);
    expect_word("(*UCP) orders ", NULL);
    expect_word(" orders? ", NULL);
    expect_word(" ord\\w+ ", NULL);
    expect_word("\\s*orders\\s", NULL);
    expect_word(" orders\\s?", NULL);
    expect_word("\\x41BC ", NULL);
    expect_word(" (?! orders ) ", NULL);
    expect_word(" (?<= orders ) ", NULL);
    expect_word("UNION\\s+SELECT", NULL);
    expect_word(" \\1orders ", NULL);
    expect_word(".orders.", NULL);
    expect_word("", NULL);
}

/* ---- the prefilter at match time ---- */

static uint64_t runs_for(const mr_ruleset *rs, mr_rules_scratch *s, const char *sql)
{
    mr_match_result res = result_new();
    uint64_t before = mr_rules_scratch_regex_runs(s);
    apply_ctx(rs, sql, NULL, s, &res);
    result_free(&res);
    return mr_rules_scratch_regex_runs(s) - before;
}

static void absent_word_skips_the_regex(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[regex cust]\nmatch = FROM customers WHERE\n"
                             "replace = FROM customers_v2 WHERE\n");
    mr_rules_scratch *s = mr_rules_scratch_new();
    assert_int_equal(runs_for(rs, s, "SELECT * FROM orders WHERE id = 1"), 0);
    assert_int_equal(runs_for(rs, s, "SELECT * FROM customers_v2 WHERE id = 1"), 0);
    assert_int_equal(runs_for(rs, s, "SELECT * FROM CUSTOMERS WHERE id = 1"), 1);
    assert_int_equal(runs_for(rs, s, "SELECT * FROM x.customers"), 1);
    /* words inside literals and comments count: a regex sees them too */
    assert_int_equal(runs_for(rs, s, "SELECT 'customers'"), 1);
    assert_int_equal(runs_for(rs, s, "SELECT 1 /* customers */"), 1);
    mr_rules_scratch_free(s);
    expect_explain_line(rs, NULL, "SELECT 1",
                        "  rule cust (t.rules:1): not matched: prefilter "
                        "word 'customers' absent, regex not run");
    mr_ruleset_free(rs);
}

static void require_key(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[regex always]\nmatch = orders\nreplace = x\nrequire = none\n"
                             "[regex explicit]\nmatch = zz(q)?\nreplace = y\nrequire = Ledger\n"
                             "[regex underivable]\nmatch = (a|b)c\nreplace = z\n"
                             "[block b]\nmatch = \\bsleep\\(\nmessage = no\n");
    mr_rules_scratch *s = mr_rules_scratch_new();
    /* always + underivable run everywhere; explicit needs "ledger"; block needs "sleep" */
    assert_int_equal(runs_for(rs, s, "SELECT 1"), 2);
    assert_int_equal(runs_for(rs, s, "SELECT 1 FROM ledger"), 3);
    assert_int_equal(runs_for(rs, s, "SELECT sleep(1)"), 3);
    mr_rules_scratch_free(s);
    mr_ruleset_free(rs);
}

static void many_regexes_run_only_where_needed(void **state)
{
    (void)state;
    size_t cap = 1000 * 120, len = 0;
    char *text = malloc(cap);
    for (int i = 0; i < 1000; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "[regex r%d]\nmatch = ^SELECT (.*) FROM tbl_%d WHERE\n"
                                "replace = SELECT $1 FROM tbl_%d_v2 WHERE\n",
                                i, i, i);
    mr_ruleset *rs = load_ok(text);
    free(text);
    mr_rules_scratch *s = mr_rules_scratch_new();
    assert_int_equal(runs_for(rs, s, "SELECT a FROM tbl_517 WHERE b = 1"), 1);
    assert_int_equal(runs_for(rs, s, "SELECT a FROM tbl_5170 WHERE b = 1"), 0);
    assert_int_equal(runs_for(rs, s, "SELECT a FROM tbl_1 JOIN tbl_2 WHERE b = 1"), 2);
    expect_sent(rs, NULL, "SELECT a FROM tbl_517 WHERE b = 1", MR_ACT_REWRITE,
                "SELECT a FROM tbl_517_v2 WHERE b = 1");
    mr_rules_scratch_free(s);
    mr_ruleset_free(rs);
}

/* ---- literal slots ---- */

/* `?` and `(...)` pieces of a digest (for statements whose names and
 * hints hold neither). */
static size_t digest_slots(const char *sql)
{
    char dig[1024];
    sql_digest_result dr;
    assert_int_not_equal(sql_digest(sql, strlen(sql), 0, dig, sizeof dig, &dr), SQL_ERR);
    size_t n = 0;
    for (const char *p = dig; *p; p++) {
        if (*p == '?')
            n++;
        else if (strncmp(p, "(...)", 5) == 0)
            n++, p += 4;
    }
    return n;
}

static void slots_agree_with_the_digest(void **state)
{
    (void)state;
    static const char *const stmts[] = {
        "SELECT 1",
        "SELECT a FROM t WHERE b = -5 AND c = - 3 AND d - 4 > e",
        "SELECT 'a' 'b' 'c', 'd' /* x */ 'e', 'f' /*+ hint */ 'g'",
        "SELECT * FROM t WHERE a IN (1, 2, -3, 'x', NULL, TRUE) AND b IN (c, 1)",
        "SELECT * FROM t WHERE (a, b) IN ((1, 2), (3, 4))",
        "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (x, 3), (4, 5)",
        "INSERT INTO t (a) VALUE (?) ON DUPLICATE KEY UPDATE a = VALUES(a) + 1",
        "SELECT /*!40001 SQL_NO_CACHE */ a FROM t /*!50000 LIMIT 5 */",
        "SELECT x'41', b'01', 0x41, 1.5e3, .5, TRUE, FALSE, NULL",
        "UPDATE t SET a = a + 1, b = 'x' WHERE id = ? LIMIT 10",
        "SELECT ?, -?, + ? FROM t WHERE a IN (?, ?)",
        "SELECT 1; SELECT 2;; SELECT 'x';",
        "SELECT CAST(1 AS CHAR), f(-1), -(1), 2 - -1",
    };
    rules_slot slots[64];
    for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
        size_t k = rules_slots(stmts[i], strlen(stmts[i]), 0, slots, 64);
        if (k != digest_slots(stmts[i]))
            fail_msg("%s: %zu slots, digest has %zu", stmts[i], k, digest_slots(stmts[i]));
    }
}

static void expect_slots(const char *sql, const char *const *want, size_t n)
{
    rules_slot slots[16];
    size_t k = rules_slots(sql, strlen(sql), 0, slots, 16);
    assert_int_equal(k, n);
    for (size_t i = 0; i < n; i++) {
        size_t len = slots[i].end - slots[i].off;
        if (len != strlen(want[i]) || memcmp(sql + slots[i].off, want[i], len) != 0)
            fail_msg("%s: slot %zu is '%.*s', wanted '%s'", sql, i, (int)len, sql + slots[i].off,
                     want[i]);
    }
}

static void slot_spans(void **state)
{
    (void)state;
    static const char *const a[] = {"-5", "'x' /* c */ 'y'", "1, 2,3", "TRUE"};
    expect_slots("SELECT -5, 'x' /* c */ 'y' FROM t WHERE a IN (1, 2,3) OR b = TRUE", a, 4);
    static const char *const b[] = {"1,'a'), (2,'b'"};
    expect_slots("INSERT INTO t VALUES (1,'a'), (2,'b')", b, 1);
    static const char *const c[] = {"5"};
    expect_slots("SELECT a FROM t /*!50000 LIMIT 5 */", c, 1);
    assert_int_equal(rules_slots("SELECT 'x", 9, 0, NULL, 0), SIZE_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(words_pinned_on_both_sides),
        cmocka_unit_test(no_word_when_in_doubt),
        cmocka_unit_test(absent_word_skips_the_regex),
        cmocka_unit_test(require_key),
        cmocka_unit_test(many_regexes_run_only_where_needed),
        cmocka_unit_test(slots_agree_with_the_digest),
        cmocka_unit_test(slot_spans),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
