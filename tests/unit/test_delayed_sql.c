/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_delayed_sql.c - UPDATE/DELETE DELAYED through a delayed rule: every
 * accepted form and its staging INSERT, every refusal and its message,
 * hostile literals, IN expansion, prepared `?`, multi-statement texts, and
 * loading of delayed rules.
 */
#include "myrewrite/core/rule_kinds.h"
#include "test_rules.h"

#include "myrewrite/schema/desc.h"

#include "myrewrite/delayed/bucket.h"
#include "myrewrite/delayed/staging_sql.h"

static const char RULES[] = "[delayed counters]\n"
                            "table = test.counters\n"
                            "key = id\n"
                            "columns = hits, misses\n"
                            "[delayed pairs]\n"
                            "table = test.pairs\n"
                            "key = a, b\n"
                            "columns = n\n"
                            "staging_table = pairs_stage\n"
                            "[delayed pages]\n"
                            "table = test.pages\n"
                            "key = id\n"
                            "columns = hits, views\n"
                            "set_columns = title, hits\n"
                            "[delayed daily]\n"
                            "table = test.daily\n"
                            "key = page_id\n"
                            "columns = views\n"
                            "bucket_column = day\n"
                            "missing = insert\n"
                            "[delayed hourly]\n"
                            "table = test.hourly\n"
                            "key = page_id, lang\n"
                            "columns = views\n"
                            "bucket_column = hr\n"
                            "bucket = HOUR\n";

static const mr_stmt_ctx CTX = {.schema = "test"};
static const mr_stmt_ctx PREP = {.schema = "test", .prepared = true};

static mr_ruleset *rs;

static int setup(void **state)
{
    (void)state;
    rs = load_ok(RULES);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mr_ruleset_free(rs);
    return 0;
}

#define INS "INSERT INTO `test`.`counters_delayed` "

/* Applies and checks a refusal whose message starts with `want`. */
static void expect_refused(const mr_stmt_ctx *ctx, const char *sql, const char *want)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, ctx, s, &res);
    if (res.action != MR_ACT_BLOCK || !res.message || strncmp(res.message, want, strlen(want)))
        fail_msg("statement: %s\nwanted refusal: %s\ngot action %d: %s", sql, want, res.action,
                 res.message ? res.message : "(none)");
    assert_int_equal(res.err_code, 1235);
    assert_string_equal(res.sqlstate, "42000");
    if (strncmp(want, "no delayed rule covers", 22) != 0)
        assert_non_null(strstr(res.message, "supported: UPDATE DELAYED"));
    result_free(&res);
    mr_rules_scratch_free(s);
}

static void update_forms(void **state)
{
    (void)state;
    expect_sent(rs, &CTX, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 5",
                MR_ACT_REWRITE, INS "(`hits`, `id`, `op`) VALUES (1, 5, 0)");
    expect_sent(rs, &CTX,
                "update delayed low_priority `counters` set `hits`=hits+2, misses = misses - 3 "
                "where ID = 7",
                MR_ACT_REWRITE, INS "(`hits`, `misses`, `id`, `op`) VALUES (2, -3, 7, 0)");
    expect_sent(rs, NULL, "UPDATE DELAYED test.counters SET hits = hits + 1 WHERE id = -4",
                MR_ACT_REWRITE, INS "(`hits`, `id`, `op`) VALUES (1, -4, 0)");
    expect_sent(rs, &CTX,
                "UPDATE /* c */ DELAYED counters SET hits = hits -- x\n + 1 WHERE id = 'k'",
                MR_ACT_REWRITE, INS "(`hits`, `id`, `op`) VALUES (1, 'k', 0)");
    expect_sent(
        rs, &CTX, "UPDATE DELAYED pairs SET n = n + 1 WHERE b = X'0A' AND a = b'1'", MR_ACT_REWRITE,
        "INSERT INTO `test`.`pairs_stage` (`n`, `b`, `a`, `op`) VALUES (1, X'0A', b'1', 0)");
}

/* A quoted name reads as mysqld reads it: a doubled backtick is one. */
static void quoted_names(void **state)
{
    (void)state;
    expect_sent(rs, &CTX, "UPDATE DELAYED `counters` SET `hits` = `hits` + 1 WHERE `id` = 5",
                MR_ACT_REWRITE, INS "(`hits`, `id`, `op`) VALUES (1, 5, 0)");
    expect_refused(&CTX, "UPDATE DELAYED counters SET `hi``ts` = `hi``ts` + 1 WHERE id = 1",
                   "UPDATE DELAYED on test.counters: hi`ts is not one of the rule's columns");
    expect_refused(&CTX, "UPDATE DELAYED counters SET `hi``ts` = `hits` + 1 WHERE id = 1",
                   "UPDATE DELAYED:");
}

/* Staged SET col = literal: the value goes to `<col>_set`, its bit (the
 * column's place in set_columns) to set_mask; adds stay in the counters. */
static void staged_sets(void **state)
{
    (void)state;
    expect_sent(rs, &CTX, "UPDATE DELAYED pages SET title = 'x''y' WHERE id = 5", MR_ACT_REWRITE,
                "INSERT INTO `test`.`pages_delayed` (`title_set`, `id`, `set_mask`, `op`) "
                "VALUES ('x''y', 5, 1, 0)");
    expect_sent(rs, &CTX, "UPDATE DELAYED pages SET hits = -7, views = views + 2 WHERE id = 5",
                MR_ACT_REWRITE,
                "INSERT INTO `test`.`pages_delayed` (`hits_set`, `views`, `id`, `set_mask`, "
                "`op`) VALUES (-7, 2, 5, 2, 0)");
    expect_sent(rs, &CTX, "UPDATE DELAYED pages SET hits = 0, title = X'41' WHERE id IN (1, 2)",
                MR_ACT_REWRITE,
                "INSERT INTO `test`.`pages_delayed` (`hits_set`, `title_set`, `id`, `set_mask`, "
                "`op`) VALUES (0, X'41', 1, 3, 0), (0, X'41', 2, 3, 0)");
    expect_sent(rs, &CTX, "UPDATE DELAYED pages SET hits = hits + 1 WHERE id = 5", MR_ACT_REWRITE,
                "INSERT INTO `test`.`pages_delayed` (`hits`, `id`, `op`) VALUES (1, 5, 0)");
    expect_sent(rs, &PREP, "UPDATE DELAYED pages SET title = ?, views = views + ? WHERE id = ?",
                MR_ACT_REWRITE,
                "INSERT INTO `test`.`pages_delayed` (`title_set`, `views`, `id`, `set_mask`, "
                "`op`) VALUES (?, ?, ?, 1, 0)");
    expect_sent(rs, &PREP, "UPDATE DELAYED pages SET hits = ?, title = ? WHERE id = ?",
                MR_ACT_REWRITE,
                "INSERT INTO `test`.`pages_delayed` (`hits_set`, `title_set`, `id`, `set_mask`, "
                "`op`) VALUES (?, ?, ?, 3, 0)");
}

/* The bucket column follows the keys, filled with the server's UTC clock at
 * the staging INSERT; the statement never names it. */
static void staged_buckets(void **state)
{
    (void)state;
    expect_sent(rs, &CTX, "UPDATE DELAYED daily SET views = views + 1 WHERE page_id = 5",
                MR_ACT_REWRITE,
                "INSERT INTO `test`.`daily_delayed` (`views`, `page_id`, `day`, `op`) VALUES "
                "(1, 5, UTC_DATE(), 0)");
    expect_sent(rs, &CTX,
                "UPDATE DELAYED hourly SET views = views + 2 WHERE lang = 'en' AND "
                "page_id IN (1, 2)",
                MR_ACT_REWRITE,
                "INSERT INTO `test`.`hourly_delayed` (`views`, `lang`, `page_id`, `hr`, `op`) "
                "VALUES (2, 'en', 1, DATE_FORMAT(UTC_TIMESTAMP(), '%Y-%m-%d %H:00:00'), 0), "
                "(2, 'en', 2, DATE_FORMAT(UTC_TIMESTAMP(), '%Y-%m-%d %H:00:00'), 0)");
    expect_sent(rs, &PREP,
                "UPDATE DELAYED hourly SET views = views + ? WHERE page_id = ? AND "
                "lang = ?",
                MR_ACT_REWRITE,
                "INSERT INTO `test`.`hourly_delayed` (`views`, `page_id`, `lang`, `hr`, `op`) "
                "VALUES (?, ?, ?, DATE_FORMAT(UTC_TIMESTAMP(), '%Y-%m-%d %H:00:00'), 0)");
    expect_sent(rs, &CTX, "DELETE DELAYED FROM daily WHERE page_id = 5", MR_ACT_REWRITE,
                "INSERT INTO `test`.`daily_delayed` (`page_id`, `day`, `op`) VALUES "
                "(5, UTC_DATE(), 1)");
    expect_refused(&CTX,
                   "UPDATE DELAYED daily SET views = views + 1 WHERE page_id = 5 AND "
                   "day = '2026-01-01'",
                   "UPDATE DELAYED on test.daily: day is not a key column of the rule");
    const mr_delayed_def *d = mr_ruleset_rule(rs, 4)->delayed;
    assert_string_equal(d->bucket_column, "hr");
    assert_int_equal(d->bucket, MR_BUCKET_HOUR);
    assert_int_equal(mr_ruleset_rule(rs, 0)->delayed->bucket, MR_BUCKET_NONE);
}

/* Truncation of given times to the UTC day and hour. */
static void bucket_text(void **state)
{
    (void)state;
    char v[MR_BUCKET_TEXT_MAX];
    assert_int_equal(mr_bucket_text(MR_BUCKET_DAY, 1796083199, v), 10); /* 23:59:59 */
    assert_string_equal(v, "2026-11-30");
    assert_int_equal(mr_bucket_text(MR_BUCKET_HOUR, 1796083199, v), 19);
    assert_string_equal(v, "2026-11-30 23:00:00");
    assert_int_equal(mr_bucket_text(MR_BUCKET_DAY, 1796083200, v), 10); /* a second later */
    assert_string_equal(v, "2026-12-01");
    assert_int_equal(mr_bucket_text(MR_BUCKET_HOUR, 1709164800 + 3600 + 59, v), 19);
    assert_string_equal(v, "2024-02-29 01:00:00");
    assert_int_equal(mr_bucket_text(MR_BUCKET_HOUR, 0, v), 19);
    assert_string_equal(v, "1970-01-01 00:00:00");
    assert_int_equal(mr_bucket_text(MR_BUCKET_NONE, 1796083199, v), 0);
    assert_string_equal(v, "");
    assert_int_equal(mr_bucket_text(MR_BUCKET_DAY, INT64_MAX, v), 0);
    assert_string_equal(mr_bucket_sql(MR_BUCKET_DAY), "UTC_DATE()");
    assert_null(mr_bucket_sql(MR_BUCKET_NONE));
}

static void in_lists(void **state)
{
    (void)state;
    expect_sent(rs, &CTX, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id IN (1, 2,3)",
                MR_ACT_REWRITE, INS "(`hits`, `id`, `op`) VALUES (1, 1, 0), (1, 2, 0), (1, 3, 0)");
    expect_sent(rs, &CTX, "UPDATE DELAYED pairs SET n = n - 2 WHERE a = 9 AND b IN ('x', 'y')",
                MR_ACT_REWRITE,
                "INSERT INTO `test`.`pairs_stage` (`n`, `a`, `b`, `op`) VALUES "
                "(-2, 9, 'x', 0), (-2, 9, 'y', 0)");
    expect_sent(rs, &CTX, "DELETE DELAYED FROM counters WHERE id IN (4, -5)", MR_ACT_REWRITE,
                INS "(`id`, `op`) VALUES (4, 1), (-5, 1)");
}

static void deletes(void **state)
{
    (void)state;
    expect_sent(rs, &CTX, "DELETE DELAYED FROM counters WHERE id = 3", MR_ACT_REWRITE,
                INS "(`id`, `op`) VALUES (3, 1)");
    expect_sent(rs, &CTX, "DELETE DELAYED LOW_PRIORITY FROM test.pairs WHERE a = 1 AND b = 2",
                MR_ACT_REWRITE,
                "INSERT INTO `test`.`pairs_stage` (`a`, `b`, `op`) VALUES (1, 2, 1)");
}

/* Literals are copied byte for byte, whatever they hold. */
static void hostile_literals(void **state)
{
    (void)state;
    expect_sent(rs, &CTX,
                "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 'a\\'); DROP TABLE x; --'",
                MR_ACT_REWRITE,
                INS "(`hits`, `id`, `op`) VALUES (1, 'a\\'); DROP TABLE x; --', 0)");
    expect_sent(rs, &CTX,
                "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = _utf8mb4'\xc3\xa9''x'",
                MR_ACT_REWRITE, INS "(`hits`, `id`, `op`) VALUES (1, _utf8mb4'\xc3\xa9''x', 0)");
    mr_stmt_ctx nbe = CTX;
    nbe.lex_flags = SQL_LEX_NO_BACKSLASH_ESCAPES;
    expect_sent(rs, &nbe, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 'a\\'",
                MR_ACT_REWRITE, INS "(`hits`, `id`, `op`) VALUES (1, 'a\\', 0)");
    expect_refused(&CTX, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1 OR 1 = 1",
                   "UPDATE DELAYED: WHERE terms may only be joined by AND");
}

static void prepared(void **state)
{
    (void)state;
    expect_sent(rs, &PREP, "UPDATE DELAYED counters SET hits = hits + ? WHERE id = ?",
                MR_ACT_REWRITE, INS "(`hits`, `id`, `op`) VALUES (?, ?, 0)");
    expect_sent(rs, &PREP, "UPDATE DELAYED counters SET hits = hits - ? WHERE id = ?",
                MR_ACT_REWRITE, INS "(`hits`, `id`, `op`) VALUES (-?, ?, 0)");
    expect_sent(rs, &PREP, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id IN (?, ?)",
                MR_ACT_REWRITE, INS "(`hits`, `id`, `op`) VALUES (1, ?, 0), (1, ?, 0)");
    expect_sent(rs, &PREP, "DELETE DELAYED FROM counters WHERE id = ?", MR_ACT_REWRITE,
                INS "(`id`, `op`) VALUES (?, 1)");
    expect_refused(&PREP, "UPDATE DELAYED counters SET hits = hits + ? WHERE id IN (1, 2)",
                   "UPDATE DELAYED in a prepared statement: a ? would be repeated");
    expect_refused(&PREP, "UPDATE DELAYED pairs SET n = n + 1 WHERE a = ? AND b IN (1, 2)",
                   "UPDATE DELAYED in a prepared statement: a ? would be repeated");
}

static void multi_statement(void **state)
{
    (void)state;
    expect_sent(rs, &CTX,
                "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1; SELECT 1; "
                "DELETE DELAYED FROM counters WHERE id = 2",
                MR_ACT_REWRITE,
                INS "(`hits`, `id`, `op`) VALUES (1, 1, 0); SELECT 1; " INS
                    "(`id`, `op`) VALUES (2, 1)");
    expect_refused(&CTX, "SELECT 1; UPDATE DELAYED counters SET hits = hits * 3 WHERE id = 1",
                   "UPDATE DELAYED: SET hits = ... must read hits = hits + N");
}

static void refusals(void **state)
{
    (void)state;
    static const struct {
        const char *sql, *want;
    } cases[] = {
        {"UPDATE DELAYED counters SET hits = 3 WHERE id = 1",
         "UPDATE DELAYED on test.counters: SET hits = literal needs hits in the rule's "
         "set_columns"},
        {"UPDATE DELAYED pages SET views = 3 WHERE id = 1",
         "UPDATE DELAYED on test.pages: SET views = literal needs views in the rule's "
         "set_columns"},
        {"UPDATE DELAYED pages SET title = 'a', title = 'b' WHERE id = 1",
         "UPDATE DELAYED: title is set twice"},
        {"UPDATE DELAYED pages SET hits = 1, hits = hits + 1 WHERE id = 1",
         "UPDATE DELAYED: hits is set twice"},
        {"UPDATE DELAYED counters SET hits = misses WHERE id = 1",
         "UPDATE DELAYED: SET hits = ... must read hits = hits + N, hits = hits - N with N a "
         "whole number or ?, or hits = literal"},
        {"UPDATE DELAYED counters SET hits = misses + 1 WHERE id = 1", "UPDATE DELAYED: SET hits"},
        {"UPDATE DELAYED counters SET hits = hits + 1.5 WHERE id = 1", "UPDATE DELAYED: SET hits"},
        {"UPDATE DELAYED counters SET hits = hits * 2 WHERE id = 1", "UPDATE DELAYED: SET hits"},
        {"UPDATE DELAYED counters SET hits = hits + 1 + 1 WHERE id = 1",
         "UPDATE DELAYED: SET hits"},
        {"UPDATE DELAYED counters SET hits = hits + 1",
         "UPDATE DELAYED needs a WHERE on the key columns"},
        {"UPDATE DELAYED counters SET hits = hits + 1 WHERE id > 1",
         "UPDATE DELAYED: WHERE takes key = literal or key IN (...) terms joined by AND"},
        {"UPDATE DELAYED counters SET hits = hits + 1 WHERE id = NULL",
         "UPDATE DELAYED: id = must be followed by one literal"},
        {"UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1 LIMIT 1",
         "UPDATE DELAYED takes no ORDER BY or LIMIT"},
        {"UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1 ORDER BY id",
         "UPDATE DELAYED takes no ORDER BY or LIMIT"},
        {"UPDATE DELAYED IGNORE counters SET hits = hits + 1 WHERE id = 1",
         "UPDATE DELAYED takes no modifier other than LOW_PRIORITY"},
        /* a doubled DELAYED would stay in the plain statement a pending default rule sends */
        {"UPDATE DELAYED DELAYED counters SET hits = hits + 1 WHERE id = 1",
         "UPDATE DELAYED takes DELAYED and LOW_PRIORITY once each"},
        {"DELETE DELAYED LOW_PRIORITY LOW_PRIORITY FROM counters WHERE id = 1",
         "DELETE DELAYED takes DELAYED and LOW_PRIORITY once each"},
        {"UPDATE DELAYED counters c SET hits = hits + 1 WHERE id = 1",
         "UPDATE DELAYED takes no alias, partition or index hint"},
        {"UPDATE DELAYED counters, pairs SET hits = hits + 1 WHERE id = 1",
         "UPDATE DELAYED takes one table"},
        {"UPDATE DELAYED counters SET hits = hits + 1 WHERE id = (SELECT 1)",
         "UPDATE DELAYED takes no subquery"},
        {"UPDATE DELAYED counters SET hits = hits + 1 WHERE id IN (1, id)",
         "UPDATE DELAYED: id IN takes a list of literals"},
        {"UPDATE DELAYED pairs SET n = n + 1 WHERE a IN (1) AND b IN (2)",
         "UPDATE DELAYED: only one key may use IN (...)"},
        {"UPDATE DELAYED counters SET total = total + 1 WHERE id = 1",
         "UPDATE DELAYED on test.counters: total is not one of the rule's columns"},
        {"UPDATE DELAYED counters SET hits = hits + 1, hits = hits + 1 WHERE id = 1",
         "UPDATE DELAYED: hits is set twice"},
        {"UPDATE DELAYED counters SET hits = hits + 1 WHERE name = 1",
         "UPDATE DELAYED on test.counters: name is not a key column of the rule"},
        {"UPDATE DELAYED pairs SET n = n + 1 WHERE a = 1",
         "UPDATE DELAYED on test.pairs: the WHERE must give every key column (2 of them)"},
        {"UPDATE DELAYED pairs SET n = n + 1 WHERE a = 1 AND a = 2",
         "UPDATE DELAYED: key a appears twice in the WHERE"},
        {"DELETE DELAYED FROM counters", "DELETE DELAYED needs a WHERE on the key columns"},
        {"DELETE DELAYED FROM counters WHERE id = 1 LIMIT 1",
         "DELETE DELAYED takes no ORDER BY or LIMIT"},
        {"DELETE DELAYED QUICK FROM counters WHERE id = 1",
         "DELETE DELAYED takes no modifier other than LOW_PRIORITY"},
        {"DELETE DELAYED counters FROM counters JOIN pairs WHERE id = 1",
         "DELETE DELAYED takes one table"},
        {"UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1 /*!AND 1*/",
         "UPDATE DELAYED: the statement could not be read"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_refused(&CTX, cases[i].sql, cases[i].want);
}

static void no_rule(void **state)
{
    (void)state;
    expect_refused(&CTX, "UPDATE DELAYED other SET hits = hits + 1 WHERE id = 1",
                   "no delayed rule covers table test.other, so this DELAYED statement was "
                   "neither staged nor sent (it is never sent as written); to delay the "
                   "counters of every table of test, add these two lines to a rules file and "
                   "reload: [delayed test_default] table = test.* (or a [delayed ...] rule for "
                   "this table alone; see rules/README.md)");
    expect_refused(NULL, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1",
                   "no delayed rule covers table counters,");
    expect_refused(NULL, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1",
                   "no delayed rule covers table counters, so this DELAYED statement was "
                   "neither staged nor sent (it is never sent as written); to delay the "
                   "counters of every table of <schema>, add these two lines to a rules file "
                   "and reload: [delayed my_default] table = <schema>.*");
    expect_refused(&CTX, "DELETE DELAYED FROM shop.counters WHERE id = 1",
                   "no delayed rule covers table shop.counters,");
}

/* With no delayed rule in the set, or no rule at all, a DELAYED statement
 * is refused the same way: the server would only answer a syntax error. */
static void no_delayed_rule_in_set(void **state)
{
    (void)state;
    mr_ruleset *none = load_ok("[block b]\npattern = SELECT 2\nmessage = no\n");
    mr_ruleset *empty = load_ok("");
    mr_ruleset *made_empty = mr_rules_empty(mr_rule_kinds_all, 1);
    const mr_ruleset *sets[] = {none, empty, made_empty};
    for (size_t i = 0; i < 3; i++) {
        mr_rules_scratch *s = mr_rules_scratch_new();
        mr_match_result res = result_new();
        const char *sqls[] = {"UPDATE DELAYED c SET n = n + 1 WHERE id = 1",
                              "delete delayed from app.c where id = 1",
                              "SET @a = 1; UPDATE DELAYED c SET n = n + 1 WHERE id = 1"};
        const char *want[] = {"no delayed rule covers table test.c,",
                              "no delayed rule covers table app.c,",
                              "no delayed rule covers table test.c,"};
        for (size_t k = 0; k < 3; k++) {
            apply_ctx(sets[i], sqls[k], &CTX, s, &res);
            assert_int_equal(res.action, MR_ACT_BLOCK);
            assert_int_equal(res.err_code, 1235);
            assert_string_equal(res.sqlstate, "42000");
            assert_non_null(res.message);
            assert_memory_equal(res.message, want[k], strlen(want[k]));
        }
        /* the word elsewhere, or an INSERT DELAYED, is not a DELAYED update */
        const char *plain[] = {"UPDATE c SET delayed = 1 WHERE id = 1",
                               "INSERT DELAYED INTO c VALUES (1)", "SELECT 'delayed' FROM c"};
        for (size_t k = 0; k < 3; k++) {
            apply_ctx(sets[i], plain[k], &CTX, s, &res);
            assert_int_equal(res.action, MR_ACT_PASS);
        }
        result_free(&res);
        mr_rules_scratch_free(s);
    }
    mr_ruleset_free(none);
    mr_ruleset_free(empty);
    mr_ruleset_free(made_empty);
}

/* FLUSH DELAYED's table argument against a rule's table. */
static void flush_filter(void **state)
{
    (void)state;
    char schema[] = "shop", table[] = "counters";
    mr_delayed_def def = {.schema = schema, .table = table};
    assert_true(mr_delayed_filter_matches("", &def));
    assert_true(mr_delayed_filter_matches("counters", &def));
    assert_true(mr_delayed_filter_matches("shop.counters", &def));
    assert_false(mr_delayed_filter_matches("other.counters", &def));
    assert_false(mr_delayed_filter_matches("sho.counters", &def));
    assert_false(mr_delayed_filter_matches("shop.count", &def));
    assert_false(mr_delayed_filter_matches("counter", &def));
    def.schema = NULL;
    assert_false(mr_delayed_filter_matches("shop.counters", &def));
    assert_true(mr_delayed_filter_matches("counters", &def));
}

/* Plain statements pass; has_delayed tells a set with a delayed rule. */
static void untouched(void **state)
{
    (void)state;
    mr_ruleset *none = load_ok("[block b]\npattern = SELECT 2\nmessage = no\n");
    assert_false(mr_ruleset_has_delayed(none));
    assert_true(mr_ruleset_has_delayed(rs));
    mr_ruleset_free(none);
    expect_sent(rs, &CTX, "UPDATE counters SET hits = hits + 1 WHERE id = 1", MR_ACT_PASS,
                "UPDATE counters SET hits = hits + 1 WHERE id = 1");
    expect_sent(rs, &CTX, "INSERT DELAYED INTO counters VALUES (1)", MR_ACT_PASS,
                "INSERT DELAYED INTO counters VALUES (1)");
}

static void load_defaults(void **state)
{
    (void)state;
    const mr_rule *r = mr_ruleset_rule(rs, 0);
    assert_int_equal(r->kind, MR_RULE_DELAYED);
    const mr_delayed_def *d = r->delayed;
    assert_string_equal(d->schema, "test");
    assert_string_equal(d->table, "counters");
    assert_int_equal(d->nkeys, 1);
    assert_string_equal(d->keys[0], "id");
    assert_int_equal(d->ncolumns, 2);
    assert_string_equal(d->columns[1], "misses");
    assert_string_equal(d->staging_table, "counters_delayed");
    assert_string_equal(d->staging_engine, "InnoDB");
    assert_int_equal(d->flush_interval_ms, 1000);
    assert_int_equal(d->flush_rows, 10000);
    assert_int_equal(d->missing, MR_DELAYED_MISSING_IGNORE);
    mr_ruleset *o = load_ok("[delayed x]\ntable = t\nschema = s\nkey = k\ncolumns = c\n"
                            "flush_interval = 250ms\nflush_rows = 500\nmissing = insert\n"
                            "mode = staged\nstaging_engine = MyISAM\n");
    d = mr_ruleset_rule(o, 0)->delayed;
    assert_string_equal(d->schema, "s");
    assert_int_equal(d->flush_interval_ms, 250);
    assert_int_equal(d->flush_rows, 500);
    assert_int_equal(d->missing, MR_DELAYED_MISSING_INSERT);
    assert_string_equal(d->staging_engine, "MyISAM");
    assert_false(d->group_commit);
    assert_int_equal(d->group_wait_us, 200);
    assert_int_equal(d->group_rows, 1000);
    assert_int_equal(d->group_bytes, 1048576);
    assert_int_equal(d->group_timeout_ms, 10000);
    mr_ruleset_free(o);
    o = load_ok("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\ngroup_commit = yes\n"
                "group_commit_wait = 1.5ms\ngroup_commit_rows = 50\ngroup_commit_bytes = 4096\n"
                "group_commit_timeout = 2.5s\n");
    d = mr_ruleset_rule(o, 0)->delayed;
    assert_true(d->group_commit);
    assert_int_equal(d->group_wait_us, 1500);
    assert_int_equal(d->group_rows, 50);
    assert_int_equal(d->group_bytes, 4096);
    assert_int_equal(d->group_timeout_ms, 2500);
    mr_ruleset_free(o);
}

/* A fake schema source: test.auto has the primary key (site, day), test.uniq
 * only a unique key, test.clash the primary key hits (also a counter); others
 * are not loaded yet. */
static mr_key_status fake_row_key(void *arg, const char *schema, const char *table, mr_row_key *out)
{
    (void)arg;
    memset(out, 0, sizeof *out);
    out->status = MR_KEY_UNKNOWN;
    snprintf(out->why, sizeof out->why, "%s.%s loading", schema, table);
    if (strcmp(table, "auto") == 0 || strcmp(table, "uniq") == 0) {
        out->status = MR_KEY_FOUND;
        out->primary = strcmp(table, "auto") == 0;
        out->ncols = 2;
        strcpy(out->cols[0], "site");
        strcpy(out->cols[1], "day");
    } else if (strcmp(table, "clash") == 0) {
        out->status = MR_KEY_FOUND;
        out->primary = true;
        out->ncols = 1;
        strcpy(out->cols[0], "hits");
    }
    return out->status;
}

static void key_from_schema(void **state)
{
    (void)state;
    mr_ruleset *set = load_ok("[delayed a]\ntable = test.auto\ncolumns = hits\n"
                              "[delayed l]\ntable = test.later\ncolumns = hits\n"
                              "[delayed u]\ntable = test.uniq\ncolumns = hits\n"
                              "[delayed c]\ntable = test.clash\ncolumns = hits\n");
    mr_schema_source src = {.row_key = fake_row_key};
    mr_stmt_ctx ctx = {.schema = "test", .schema_src = &src};
    expect_sent(set, &ctx, "UPDATE DELAYED auto SET hits = hits + 2 WHERE day = 7 AND site = 'x'",
                MR_ACT_REWRITE,
                "INSERT INTO `test`.`auto_delayed` (`hits`, `day`, `site`, `op`) "
                "VALUES (2, 7, 'x', 0)");
    /* the WHERE must name the whole primary key */
    expect_refused_with(set, &ctx, "UPDATE DELAYED auto SET hits = hits + 2 WHERE site = 'x'",
                        "the WHERE must give every key column (2 of them)");
    expect_refused_with(set, &ctx, "UPDATE DELAYED later SET hits = hits + 1 WHERE id = 1",
                        "schema not loaded yet, retry: the key of test.later is being read");
    expect_refused_with(set, &ctx,
                        "UPDATE DELAYED uniq SET hits = hits + 1 WHERE site = 1 AND day = 2",
                        "names no key and the table has no primary key (only a unique key)");
    expect_refused_with(
        set, &ctx, "UPDATE DELAYED clash SET hits = hits + 1 WHERE hits = 1",
        "hits, a column of the primary key of test.clash, is also a counter column");
    expect_refused_with(set, &CTX,
                        "UPDATE DELAYED auto SET hits = hits + 1 WHERE site = 1 AND day = 2",
                        "names no key and this proxy has no schema cache");
    mr_ruleset_free(set);
}

static void load_errors(void **state)
{
    (void)state;
    expect_error("[delayed x]\ntable = s.t\nkey = k\n",
                 "t.rules:1: [delayed x] has no columns; delayed rules need columns, the counter "
                 "columns UPDATE DELAYED may add to\n");
    expect_error("[delayed x]\ntable = t\nkey = k\ncolumns = c\n",
                 "t.rules:2: [delayed x] needs the table's schema, which the proxy's own "
                 "connection has no default for: write table = shop.t, or schema = shop\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nmode = fast\n",
                 "t.rules:5: mode = 'fast' in [delayed x]: expected staged or memory\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nset_columns = "
                 "a234567890123456789012345678901234567890123456789012345678901\n",
                 "t.rules:5: [delayed x]: a234567890123456789012345678901234567890123456789012"
                 "345678901: a set_columns name may have at most 60 characters in mode = staged "
                 "(the staging table adds _set)\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nbucket = day\n",
                 "t.rules:5: [delayed x]: bucket needs bucket_column\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nbucket_column = d\n"
                 "bucket = week\n",
                 "t.rules:6: bucket = 'week' in [delayed x]: expected day or hour\n");
    expect_error("[delayed x]\ntable = s.t\ncolumns = c\nbucket_column = d\n",
                 "t.rules:4: [delayed x]: bucket_column needs key (the key columns the "
                 "statements give)\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k, d\ncolumns = c\nbucket_column = d\n",
                 "t.rules:5: [delayed x]: d is the bucket column, so it may not be in key, "
                 "columns or set_columns\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nmemory_max_keys = 5\n",
                 "t.rules:5: [delayed x]: memory_max_keys needs mode = memory\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nmode = memory\n"
                 "set_columns = k\n",
                 "t.rules:6: [delayed x]: k is both a key column and in set_columns\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nmode = memory\n"
                 "memory_max_keys = 0\n",
                 "t.rules:6: memory_max_keys = '0' in [delayed x]: expected a whole number from "
                 "1 to 100000000\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nmode = memory\n"
                 "group_commit = yes\n",
                 "t.rules:6: [delayed x]: group_commit is for mode = staged (memory mode answers "
                 "at once, without a commit)\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\ngroup_commit_wait = 2s\n",
                 "t.rules:5: group_commit_wait = '2s' in [delayed x]: expected a duration from "
                 "0 to 1s, like 200us or 1ms\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\ngroup_commit_timeout = 5ms\n",
                 "t.rules:5: group_commit_timeout = '5ms' in [delayed x]: expected a duration "
                 "from 10ms to 1h, like 10s or 500ms\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\ngroup_commit_bytes = 100\n",
                 "t.rules:5: group_commit_bytes = '100' in [delayed x]: expected a whole number "
                 "from 1024 to 67108864\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\ngroup_commit = maybe\n",
                 "t.rules:5: group_commit = 'maybe' in [delayed x]: expected yes or no\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nmissing = upsert\n",
                 "t.rules:5: missing = 'upsert' in [delayed x]: expected ignore or insert\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nflush_rows = 0\n",
                 "t.rules:5: flush_rows = '0' in [delayed x]: expected a whole number from 1 to "
                 "1000000\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nflush_interval = soon\n",
                 "t.rules:5: flush_interval = 'soon' in [delayed x]: expected a duration above "
                 "zero, like 500ms, 1s or 1m\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c, C\n",
                 "t.rules:4: columns = 'c, C' in [delayed x]: expected a comma list of up to 16 "
                 "different column names, unquoted\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c, k\n",
                 "t.rules:4: [delayed x]: k is both a key column and a counter column\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nstaging_engine = a;b\n",
                 "t.rules:5: staging_engine = 'a;b' in [delayed x]: expected an engine name, "
                 "like InnoDB\n");
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nstaging_table = t\n",
                 "t.rules:5: [delayed x]: staging_table must not be the table itself\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(update_forms),
        cmocka_unit_test(in_lists),
        cmocka_unit_test(quoted_names),
        cmocka_unit_test(staged_sets),
        cmocka_unit_test(staged_buckets),
        cmocka_unit_test(bucket_text),
        cmocka_unit_test(deletes),
        cmocka_unit_test(hostile_literals),
        cmocka_unit_test(prepared),
        cmocka_unit_test(multi_statement),
        cmocka_unit_test(refusals),
        cmocka_unit_test(no_rule),
        cmocka_unit_test(no_delayed_rule_in_set),
        cmocka_unit_test(flush_filter),
        cmocka_unit_test(untouched),
        cmocka_unit_test(load_defaults),
        cmocka_unit_test(load_errors),
        cmocka_unit_test(key_from_schema),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
