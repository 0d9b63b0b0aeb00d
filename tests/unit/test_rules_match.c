/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rules_match.c - applying rules end to end on statement strings:
 * each kind, filters, ordering, continue, log_only, multi-statement text,
 * prepared statements, hostile literals and hit counters.
 */
#include <pthread.h>

#include "myrewrite/core/rule_kinds.h"
#include "myrewrite/sql/lexer.h"
#include "test_rules.h"

#define PASS MR_ACT_PASS
#define REWRITE MR_ACT_REWRITE
#define BLOCK MR_ACT_BLOCK

/* ---- rewrite ---- */

static const char *orders_rule = "[rewrite orders_cols]\n"
                                 "pattern = SELECT * FROM orders WHERE id = ?\n"
                                 "replacement = SELECT id, total FROM orders WHERE id = ?\n";

static void rewrite_reuses_the_literal(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(orders_rule);
    expect_sent(rs, NULL, "SELECT * FROM orders WHERE id = 42", REWRITE,
                "SELECT id, total FROM orders WHERE id = 42");
    /* case, spacing and comments do not matter to the digest */
    expect_sent(rs, NULL, "select  *\n from /* hi */ orders where id=-7", REWRITE,
                "SELECT id, total FROM orders WHERE id = -7");
    expect_sent(rs, NULL, "SELECT * FROM orders WHERE id = 'x''y'", REWRITE,
                "SELECT id, total FROM orders WHERE id = 'x''y'");
    expect_sent(rs, NULL, "SELECT * FROM orders WHERE id = 0x1F", REWRITE,
                "SELECT id, total FROM orders WHERE id = 0x1F");
    expect_sent(rs, NULL, "SELECT * FROM orders WHERE id = 'a' 'b'", REWRITE,
                "SELECT id, total FROM orders WHERE id = 'a' 'b'");
    expect_sent(rs, NULL, "SELECT * FROM orders WHERE id = TRUE", REWRITE,
                "SELECT id, total FROM orders WHERE id = TRUE");
    /* a different shape is left alone */
    expect_sent(rs, NULL, "SELECT * FROM orders WHERE id = 1 AND x = 2", PASS,
                "SELECT * FROM orders WHERE id = 1 AND x = 2");
    expect_sent(rs, NULL, "SELECT * FROM orders WHERE id = col", PASS,
                "SELECT * FROM orders WHERE id = col");
    mr_ruleset_free(rs);
}

static void rewrite_slots_by_position(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[rewrite swap]\n"
                             "pattern = SELECT a FROM t WHERE b = ? AND c = ?\n"
                             "replacement = SELECT a FROM t WHERE c = ?2 AND b = ?1 OR d = ?1\n");
    expect_sent(rs, NULL, "SELECT a FROM t WHERE b = 1 AND c = 'two'", REWRITE,
                "SELECT a FROM t WHERE c = 'two' AND b = 1 OR d = 1");
    mr_ruleset_free(rs);
}

static void rewrite_collapsed_lists(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[rewrite in_list]\n"
                             "pattern = SELECT a FROM t WHERE b IN (?) AND c = ?\n"
                             "replacement = SELECT a FROM t FORCE INDEX (c) WHERE c = ?2 AND "
                             "b IN (?1)\n"
                             "[rewrite rows]\n"
                             "pattern = INSERT INTO log VALUES (?, ?)\n"
                             "replacement = INSERT INTO log_2024 VALUES (?)\n");
    expect_sent(rs, NULL, "SELECT a FROM t WHERE b IN (1, -2, 'x', NULL) AND c = 5", REWRITE,
                "SELECT a FROM t FORCE INDEX (c) WHERE c = 5 AND b IN (1, -2, 'x', NULL)");
    expect_sent(rs, NULL, "SELECT a FROM t WHERE b IN (7) AND c = 5", REWRITE,
                "SELECT a FROM t FORCE INDEX (c) WHERE c = 5 AND b IN (7)");
    expect_sent(rs, NULL, "insert into log values (1,'a'),(2,'b'), (3, 'c')", REWRITE,
                "INSERT INTO log_2024 VALUES (1,'a'),(2,'b'), (3, 'c')");
    mr_ruleset_free(rs);
}

/* Every literal of the statement must come out as the same token, byte
 * for byte, whatever it holds. */
static void expect_same_literals(const char *in, size_t in_len, const char *out, size_t out_len,
                                 unsigned flags)
{
    sql_token a[64], b[64];
    size_t na = 0, nb = 0, la = 0, lb = 0;
    assert_int_equal(sql_lex(in, in_len, flags, a, 64, &na), SQL_OK);
    assert_int_equal(sql_lex(out, out_len, flags, b, 64, &nb), SQL_OK);
    for (size_t i = 0, j = 0;; i++, j++) {
        while (i < na && a[i].kind != SQL_TOK_STRING && a[i].kind != SQL_TOK_NUMBER)
            i++;
        while (j < nb && b[j].kind != SQL_TOK_STRING && b[j].kind != SQL_TOK_NUMBER)
            j++;
        if (i == na || j == nb) {
            assert_true(i == na && j == nb);
            break;
        }
        la++;
        lb++;
        assert_int_equal(a[i].kind, b[j].kind);
        assert_int_equal(a[i].len, b[j].len);
        assert_memory_equal(in + a[i].off, out + b[j].off, a[i].len);
    }
    assert_int_equal(la, lb);
}

static void hostile_literals_keep_their_meaning(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[rewrite h]\n"
                             "pattern = SELECT * FROM t WHERE a = ? AND b = ?\n"
                             "replacement = SELECT x FROM t WHERE b = ?2 AND a = ?1\n");
    static const char *const lits[] = {
        "'it''s'",
        "'back\\\\slash\\' still inside'",
        "'-- not a comment'",
        "'/* not a comment */'",
        "'x'' OR 1=1 -- '",
        "\"double \\\" quoted\"",
        "_utf8mb4'caf\xc3\xa9 \xf0\x9f\x98\x80'",
        "N'national'",
        "'bad utf8 \xff\xfe\xc3'",
        "'semi; colon'",
        "x'4A4b'",
        "-12.5e-3",
    };
    size_t n = sizeof lits / sizeof lits[0];
    mr_rules_scratch *s = mr_rules_scratch_new();
    for (size_t i = 0; i < n; i++) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT * FROM t WHERE a = %s AND b = %s", lits[i],
                 lits[n - 1 - i]);
        mr_match_result res = result_new();
        apply_ctx(rs, sql, NULL, s, &res);
        if (res.action != REWRITE)
            fail_msg("not rewritten: %s", sql);
        char want[256];
        snprintf(want, sizeof want, "SELECT x FROM t WHERE b = %s AND a = %s", lits[n - 1 - i],
                 lits[i]);
        assert_int_equal(res.text.len, strlen(want));
        assert_memory_equal(res.text.data, want, res.text.len);
        /* the literals, read back by the lexer, are the same tokens, swapped */
        char swapped[256];
        snprintf(swapped, sizeof swapped, "SELECT * FROM t WHERE a = %s AND b = %s",
                 lits[n - 1 - i], lits[i]);
        expect_same_literals(swapped, strlen(swapped), (const char *)res.text.data, res.text.len,
                             0);
        result_free(&res);
    }
    mr_rules_scratch_free(s);
    mr_ruleset_free(rs);
}

/* Text with a NUL byte inside a literal: lengths, not C strings, count. */
static void nul_bytes_in_literals(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(orders_rule);
    static const char sql[] = "SELECT * FROM orders WHERE id = 'a\0b'";
    static const char want[] = "SELECT id, total FROM orders WHERE id = 'a\0b'";
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    mr_stmt_ctx ctx = {0};
    mr_rules_apply(rs, sql, sizeof sql - 1, &ctx, s, &res);
    assert_int_equal(res.action, REWRITE);
    assert_int_equal(res.text.len, sizeof want - 1);
    assert_memory_equal(res.text.data, want, sizeof want - 1);
    result_free(&res);
    mr_rules_scratch_free(s);
    mr_ruleset_free(rs);
}

/* ---- readings the server may have (rules/readings.c) ---- */

static const char *no_full_update = "[block no_full_update]\n"
                                    "statement = update\n"
                                    "where = missing\n"
                                    "message = UPDATE needs a WHERE clause\n";

static const char *no_full_update_or_delete = "[block no_full_write]\n"
                                              "statement = update, delete\n"
                                              "where = missing\n"
                                              "message = needs a WHERE clause\n";

static void other_readings_meet_block_rules(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(no_full_update);
    mr_stmt_ctx known = {0}, ansi_unsure = {.lex_unsure = SQL_LEX_ANSI_QUOTES};
    const char *ansi = "SELECT 1 AS \"a\\\"; UPDATE u SET n = n + 1; -- \"";
    /* one SELECT in the default mode, a SELECT and an UPDATE under ANSI_QUOTES */
    expect_sent(rs, &known, ansi, PASS, ansi);
    expect_sent(rs, &ansi_unsure, ansi, BLOCK, ansi);
    /* a mode set earlier in the text: every reading after a statement */
    const char *set_ansi = "SET sql_mode = 'ANSI_QUOTES'; SELECT 1 AS \"a\\\"; UPDATE u SET n = 1";
    expect_sent(rs, &known, set_ansi, BLOCK, set_ansi);
    const char *nbe =
        "SET sql_mode = 'NO_BACKSLASH_ESCAPES'; SELECT 'a\\'; UPDATE u SET n = 1; -- '";
    expect_sent(rs, &known, nbe, BLOCK, nbe);
    const char *gbk = "SET NAMES gbk; SELECT '\xbf\\'; UPDATE u SET n = 1; -- '";
    expect_sent(rs, &known, gbk, BLOCK, gbk);
    mr_stmt_ctx gbk_session = {.lex_flags = SQL_LEX_MB_GBK};
    const char *in_gbk = "SELECT '\xbf\\'; UPDATE u SET n = 1; -- '";
    expect_sent(rs, &gbk_session, in_gbk, BLOCK, in_gbk);
    /* where every reading agrees, nothing changes */
    const char *json = "SELECT '{\"a\": \"b\\\\c\"}'; UPDATE u SET n = 1 WHERE id = 2";
    expect_sent(rs, &ansi_unsure, json, PASS, json);
    mr_ruleset_free(rs);
}

/* A multibyte reading opens token starts the session's reading does not
 * have: there a "name" may be read under ANSI_QUOTES although no token of
 * the session's reading is delimited by '"'. */
static void new_starts_meet_every_mode(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[block no_secret]\n"
                             "pattern = SELECT * FROM secret\n"
                             "message = no\n");
    mr_stmt_ctx known = {0};
    const char *t = "SET NAMES gbk; SELECT '\xbf\\'; SELECT * FROM \"secret\"; -- '";
    expect_sent(rs, &known, t, BLOCK, t);
    mr_ruleset_free(rs);
    /* a trail byte that is an operator in the byte reading: in gbk, a0 7e is
     * one character of the table's name, and the DELETE has no WHERE */
    rs = load_ok(no_full_update_or_delete);
    mr_stmt_ctx mb_unsure = {.lex_unsure = SQL_LEX_MB_MASK};
    const char *del = "DELETE FROM t\xa0~";
    expect_sent(rs, &known, del, PASS, del);
    expect_sent(rs, &mb_unsure, del, BLOCK, del);
    mr_ruleset_free(rs);
}

/* Dynamic SQL meets the other readings too: under ANSI_QUOTES, which the
 * proxy cannot rule out, EXECUTE IMMEDIATE "..." names no literal, so
 * dynamic = refuse refuses it; a single-quoted literal reads alike in
 * every mode and is examined. */
static void dynamic_sql_in_other_readings(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[block nw]\n"
                             "statement = update, delete\n"
                             "where = missing\n"
                             "message = needs a WHERE clause\n"
                             "dynamic = refuse\n");
    mr_stmt_ctx session = {.lex_unsure = SQL_LEX_ANSI_QUOTES | SQL_LEX_MB_MASK}, known = {0};
    const char *dq = "EXECUTE IMMEDIATE \"UPDATE t SET a = 1 WHERE id = 1\"";
    const char *sq = "EXECUTE IMMEDIATE 'UPDATE t SET a = 1 WHERE id = 1'";
    const char *bad = "EXECUTE IMMEDIATE 'UPDATE t SET a = 1'";
    expect_sent(rs, &known, dq, PASS, dq);
    expect_sent(rs, &session, dq, BLOCK, dq);
    expect_sent(rs, &session, sq, PASS, sq);
    expect_sent(rs, &session, bad, BLOCK, bad);
    /* a literal only a gbk reading shows is examined in that reading */
    const char *gbk =
        "SET NAMES gbk; SELECT '\xbf\\'; EXECUTE IMMEDIATE 'UPDATE t SET a = 1'; -- '";
    expect_sent(rs, &known, gbk, BLOCK, gbk);
    mr_ruleset_free(rs);
}

static void rewrites_follow_the_sessions_reading(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(orders_rule);
    mr_stmt_ctx ansi_unsure = {.lex_unsure = SQL_LEX_ANSI_QUOTES};
    /* one statement: the session's reading decides */
    expect_sent(rs, &ansi_unsure, "SELECT * FROM orders WHERE id = \"x\"", REWRITE,
                "SELECT id, total FROM orders WHERE id = \"x\"");
    /* later statements that read otherwise after a mode change: refused */
    const char *later = "SELECT * FROM orders WHERE id = 1; SELECT 'a\\'; SELECT 2 -- '";
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, later, NULL, s, &res);
    assert_int_equal(res.action, BLOCK);
    assert_int_equal(res.err_code, MR_UNREADABLE_ERR_CODE);
    assert_non_null(strstr(res.message, "send the statements that change the mode separately"));
    result_free(&res);
    mr_rules_scratch_free(s);
    /* later statements every mode reads alike keep the rewrite */
    expect_sent(rs, NULL, "SELECT * FROM orders WHERE id = 1; SELECT '\"'", REWRITE,
                "SELECT id, total FROM orders WHERE id = 1; SELECT '\"'");
    mr_ruleset_free(rs);
}

/* A session in gbk (sql/charset_guard.h): rewrites and DELAYED stay off, blocks run. */
static void unsafe_charset_runs_only_blocks(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[rewrite orders_cols]\n"
                             "pattern = SELECT * FROM orders WHERE id = ?\n"
                             "replacement = SELECT id, total FROM orders WHERE id = ?\n"
                             "[block no_drop]\n"
                             "match = ^DROP\n"
                             "message = no DROP here\n"
                             "[delayed counters]\n"
                             "table = test.counters\n"
                             "key = id\n"
                             "columns = hits\n");
    mr_stmt_ctx gbk = {.schema = "test", .charset_unsafe = "gbk"};
    const char *sel = "SELECT * FROM orders WHERE id = 1";
    expect_sent(rs, &gbk, sel, PASS, sel);
    expect_sent(rs, &gbk, "DROP TABLE x", BLOCK, "DROP TABLE x");
    expect_refused_with(rs, &gbk, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1",
                        "client character set is gbk");
    char *text = explain_text(rs, &gbk, sel);
    assert_non_null(strstr(text, "not applied: the session's character set is gbk"));
    free(text);
    /* the same session in utf8mb4 */
    mr_stmt_ctx utf8 = {.schema = "test"};
    expect_sent(rs, &utf8, sel, REWRITE, "SELECT id, total FROM orders WHERE id = 1");
    mr_ruleset_free(rs);
}

static void no_backslash_escapes_mode(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(orders_rule);
    /* without backslash escapes, 'a\' is a whole string */
    mr_stmt_ctx ctx = {.lex_flags = SQL_LEX_NO_BACKSLASH_ESCAPES};
    expect_sent(rs, &ctx, "SELECT * FROM orders WHERE id = 'a\\'", REWRITE,
                "SELECT id, total FROM orders WHERE id = 'a\\'");
    /* with escapes the same text is unterminated: passed through */
    expect_sent(rs, NULL, "SELECT * FROM orders WHERE id = 'a\\'", PASS,
                "SELECT * FROM orders WHERE id = 'a\\'");
    mr_ruleset_free(rs);
}

/* ---- regex ---- */

static void regex_groups_caseless_global(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[regex limit]\n"
                             "match = ^select (.*) from big_table$\n"
                             "replace = SELECT $1 FROM big_table LIMIT 1000\n"
                             "[regex cs]\n"
                             "match = FROM Exact\\b\n"
                             "replace = FROM exact_v2\n"
                             "caseless = no\n"
                             "[regex all]\n"
                             "match = \\bold_name\\b\n"
                             "replace = new_name\n"
                             "global = yes\n");
    expect_sent(rs, NULL, "SELECT a, b FROM big_table", REWRITE,
                "SELECT a, b FROM big_table LIMIT 1000");
    expect_sent(rs, NULL, "SELECT a FROM Exact", REWRITE, "SELECT a FROM exact_v2");
    expect_sent(rs, NULL, "SELECT a FROM exact", PASS, "SELECT a FROM exact");
    expect_sent(rs, NULL, "SELECT old_name FROM t WHERE old_name > 1", REWRITE,
                "SELECT new_name FROM t WHERE new_name > 1");
    mr_ruleset_free(rs);
}

static void regex_result_must_stay_one_statement(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[regex split]\nmatch = ^SELECT 1$\nreplace = SELECT 1; SELECT 2\n"
                             "[regex quote]\nmatch = ^SELECT 2$\nreplace = SELECT '2\n");
    expect_sent(rs, NULL, "SELECT 1", PASS, "SELECT 1");
    expect_sent(rs, NULL, "SELECT 2", PASS, "SELECT 2");
    expect_explain_line(rs, NULL, "SELECT 1",
                        "  rule split (t.rules:1): not matched: the rewritten text would not lex "
                        "as one statement");
    mr_ruleset_free(rs);
}

/* ---- block ---- */

static void block_by_pattern_match_and_statement(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[block drop]\n"
                             "pattern = DROP TABLE important\n"
                             "message = never\n"
                             "[block sleepy]\n"
                             "match = \\bsleep\\s*\\(\n"
                             "message = no sleeping\n"
                             "code = 1227\n"
                             "sqlstate = HY000\n"
                             "[block nowhere]\n"
                             "statement = delete, update\n"
                             "where = missing\n"
                             "message = add a WHERE\n");
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, "SELECT SLEEP(10)", NULL, s, &res);
    assert_int_equal(res.action, BLOCK);
    assert_int_equal(res.err_code, 1227);
    assert_string_equal(res.sqlstate, "HY000");
    assert_string_equal(res.message, "no sleeping");
    assert_int_equal(res.text.len, 0);
    apply_ctx(rs, "DELETE FROM orders", NULL, s, &res);
    assert_int_equal(res.action, BLOCK);
    assert_int_equal(res.err_code, 1148);
    assert_string_equal(res.sqlstate, "42000");
    assert_string_equal(res.message, "add a WHERE");
    assert_int_equal(res.nmatched, 1);
    assert_string_equal(res.matched[0]->name, "nowhere");
    result_free(&res);
    mr_rules_scratch_free(s);
    expect_sent(rs, NULL, "update t set a = 1", BLOCK, "update t set a = 1");
    expect_sent(rs, NULL, "update t set a = 1 where id = 2", PASS,
                "update t set a = 1 where id = 2");
    expect_sent(rs, NULL, "DELETE FROM t WHERE id IN (SELECT 1)", PASS,
                "DELETE FROM t WHERE id IN (SELECT 1)");
    /* a WHERE inside a subquery is not the statement's */
    expect_sent(rs, NULL, "DELETE FROM t LIMIT 5", BLOCK, "DELETE FROM t LIMIT 5");
    expect_sent(rs, NULL, "SELECT * FROM t", PASS, "SELECT * FROM t");
    /* a WHERE the recognizer cannot see: let it through */
    expect_sent(rs, NULL, "DELETE FROM t /*!50000 WHERE id = 1 */", PASS,
                "DELETE FROM t /*!50000 WHERE id = 1 */");
    /* names are not literals: a digest pattern names its table */
    expect_sent(rs, NULL, "drop table `important`", BLOCK, "drop table `important`");
    expect_sent(rs, NULL, "DROP TABLE other", PASS, "DROP TABLE other");
    mr_ruleset_free(rs);
}

/* ---- filters, order, continue, log_only, disabled ---- */

static void user_and_schema_filters(void **state)
{
    (void)state;
    mr_ruleset *rs =
        load_ok("[block for_app]\npattern = SELECT ?\nmessage = app\nuser = app\n"
                "[block in_shop]\npattern = SELECT ?\nmessage = shop\nschema = shop\n");
    mr_stmt_ctx app = {.user = "app", .schema = "crm"};
    mr_stmt_ctx shop = {.user = "bob", .schema = "shop"};
    mr_stmt_ctx other = {.user = "bob", .schema = "crm"};
    mr_stmt_ctx upper = {.user = "APP", .schema = "SHOP"};
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, "SELECT 1", &app, s, &res);
    assert_string_equal(res.message, "app");
    apply_ctx(rs, "SELECT 1", &shop, s, &res);
    assert_string_equal(res.message, "shop");
    apply_ctx(rs, "SELECT 1", &other, s, &res);
    assert_int_equal(res.action, PASS);
    apply_ctx(rs, "SELECT 1", &upper, s, &res);
    assert_int_equal(res.action, PASS); /* exact match */
    apply_ctx(rs, "SELECT 1", NULL, s, &res);
    assert_int_equal(res.action, PASS); /* unknown user and schema */
    result_free(&res);
    mr_rules_scratch_free(s);
    expect_explain_line(rs, &other, "SELECT 1",
                        "  rule for_app (t.rules:1): not matched: filter user: rule is for 'app', "
                        "session user is 'bob'");
    expect_explain_line(rs, NULL, "SELECT 1",
                        "  rule in_shop (t.rules:5): not matched: filter schema: rule is for "
                        "'shop', session schema is unknown");
    mr_ruleset_free(rs);
}

static void first_match_wins(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[rewrite one]\npattern = SELECT ? FROM t\n"
                             "replacement = SELECT ? FROM t1\n"
                             "[rewrite two]\npattern = SELECT ? FROM t\n"
                             "replacement = SELECT ? FROM t2\n"
                             "[regex three]\nmatch = FROM t$\nreplace = FROM t3\n");
    expect_sent(rs, NULL, "SELECT 5 FROM t", REWRITE, "SELECT 5 FROM t1");
    expect_explain_line(rs, NULL, "SELECT 5 FROM t",
                        "  2 later rules not tried: one matched without continue");
    mr_ruleset_free(rs);
}

static void continue_chains(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[rewrite a]\npattern = SELECT ? FROM t\n"
                             "replacement = SELECT ? FROM t WHERE 1 = 1\ncontinue = yes\n"
                             "[rewrite b]\npattern = SELECT ? FROM t WHERE ? = ?\n"
                             "replacement = SELECT ?1 FROM t WHERE ?2 = ?3 LIMIT 10\n"
                             "continue = yes\n"
                             "[regex c]\nmatch = LIMIT 10$\nreplace = LIMIT 20\n"
                             "[regex d]\nmatch = LIMIT 20$\nreplace = LIMIT 30\n");
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, "select 'x' from t", NULL, s, &res);
    assert_int_equal(res.action, REWRITE);
    assert_int_equal(res.text.len, strlen("SELECT 'x' FROM t WHERE 1 = 1 LIMIT 20"));
    assert_memory_equal(res.text.data, "SELECT 'x' FROM t WHERE 1 = 1 LIMIT 20", res.text.len);
    assert_int_equal(res.nmatched, 3);
    assert_string_equal(res.matched[0]->name, "a");
    assert_string_equal(res.matched[1]->name, "b");
    assert_string_equal(res.matched[2]->name, "c"); /* c has no continue: d never runs */
    result_free(&res);
    mr_rules_scratch_free(s);
    expect_explain_line(rs, NULL, "select 'x' from t",
                        "statement 1 as rewritten by a: SELECT 'x' FROM t WHERE 1 = 1");
    mr_ruleset_free(rs);
}

static void log_only_counts_but_sends_original(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[rewrite watch]\npattern = SELECT ? FROM t\n"
                             "replacement = SELECT ? FROM t2\nlog_only = yes\nlog = full\n"
                             "[block stop]\npattern = SELECT ? FROM u\nmessage = no\n"
                             "log_only = yes\ncontinue = yes\n"
                             "[regex later]\nmatch = FROM u\nreplace = FROM u2\n");
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, "SELECT 1 FROM t", NULL, s, &res);
    assert_int_equal(res.action, PASS);
    assert_int_equal(res.nmatched, 1);
    assert_string_equal(res.matched[0]->name, "watch");
    assert_int_equal(mr_ruleset_hits(rs, 0), 1);
    /* what it would have sent is kept for the log */
    assert_int_equal(res.would_be.len, strlen("SELECT 1 FROM t2"));
    assert_memory_equal(res.would_be.data, "SELECT 1 FROM t2", res.would_be.len);
    /* a log_only block with continue lets later rules act */
    apply_ctx(rs, "SELECT 1 FROM u", NULL, s, &res);
    assert_int_equal(res.action, REWRITE);
    assert_int_equal(res.nmatched, 2);
    assert_memory_equal(res.text.data, "SELECT 1 FROM u2", res.text.len);
    assert_int_equal(res.would_be.len, 0); /* a block has no text to show */
    assert_int_equal(mr_ruleset_hits(rs, 1), 1);
    result_free(&res);
    mr_rules_scratch_free(s);
    expect_explain_line(rs, NULL, "SELECT 1 FROM t",
                        "  rule watch (t.rules:1): matched: rewrite, log_only: the original is "
                        "sent");
    mr_ruleset_free(rs);
}

/* log_sample = N picks the 1st, (N+1)st, ... match of the rule in its shard;
 * without it every match is picked. Shards count apart. */
static void log_sample_picks_one_in_n(void **state)
{
    (void)state;
    loaded l = load_named(
        "[rewrite sampled]\npattern = SELECT a FROM t WHERE id = ?\n"
        "replacement = SELECT b FROM t WHERE id = ?\nlog = digest\nlog_sample = 3\n\n"
        "[rewrite every]\npattern = SELECT c FROM t\nreplacement = SELECT d FROM t\nlog = full\n",
        "t.rules", 2);
    const mr_ruleset *rs = l.rs;
    assert_non_null(rs);
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    mr_stmt_ctx shard0 = {0}, shard1 = {.shard = 1};
    bool picked[7];
    for (int i = 0; i < 7; i++) {
        apply_ctx(rs, "SELECT a FROM t WHERE id = 5", &shard0, s, &res);
        assert_int_equal(res.nmatched, 1);
        picked[i] = res.sampled[0];
    }
    bool want[7] = {true, false, false, true, false, false, true};
    assert_memory_equal(picked, want, sizeof want);
    apply_ctx(rs, "SELECT a FROM t WHERE id = 6", &shard1, s, &res);
    assert_true(res.sampled[0]); /* shard 1's first match */
    for (int i = 0; i < 3; i++) {
        apply_ctx(rs, "SELECT c FROM t", &shard0, s, &res);
        assert_true(res.nmatched == 1 && res.sampled[0]);
    }
    assert_int_equal(mr_ruleset_rule(rs, 0)->log_sample, 3);
    assert_int_equal(mr_ruleset_rule(rs, 1)->log_sample, 1);
    result_free(&res);
    mr_rules_scratch_free(s);
    loaded_free(&l);
}

static void disabled_rules_never_match(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[block off]\npattern = SELECT ?\nmessage = no\nenabled = no\n"
                             "[regex off2]\nmatch = SELECT\nreplace = x\nenabled = no\n"
                             "[block off3]\nstatement = delete\nwhere = missing\nmessage = m\n"
                             "enabled = no\n");
    expect_sent(rs, NULL, "SELECT 1", PASS, "SELECT 1");
    expect_sent(rs, NULL, "DELETE FROM t", PASS, "DELETE FROM t");
    expect_explain_line(rs, NULL, "SELECT 1", "  rule off (t.rules:1): not matched: disabled");
    assert_int_equal(mr_ruleset_hits(rs, 0), 0);
    mr_ruleset_free(rs);
}

/* ---- multi-statement text ---- */

static void multi_statement_rewrites_keep_separators(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(orders_rule);
    expect_sent(rs, NULL, "SELECT 1 ;\n  select * from orders where id=7 ;-- c\n SELECT 2;",
                REWRITE,
                "SELECT 1 ;\n  SELECT id, total FROM orders WHERE id = 7 ;-- c\n SELECT 2;");
    expect_sent(rs, NULL, "select * from orders where id=1;select * from orders where id=2",
                REWRITE,
                "SELECT id, total FROM orders WHERE id = 1;SELECT id, total FROM orders WHERE "
                "id = 2");
    expect_sent(rs, NULL, "select * from orders where id=3;", REWRITE,
                "SELECT id, total FROM orders WHERE id = 3;");
    expect_sent(rs, NULL, "SELECT 1; SELECT 2", PASS, "SELECT 1; SELECT 2");
    mr_ruleset_free(rs);
}

static void multi_statement_block_blocks_all(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[block nowhere]\nstatement = delete\nwhere = missing\n"
                             "message = no\n");
    expect_sent(rs, NULL, "SELECT 1; DELETE FROM t; SELECT 2", BLOCK,
                "SELECT 1; DELETE FROM t; SELECT 2");
    /* statements before a lexing error still meet the rules */
    expect_sent(rs, NULL, "DELETE FROM t; SELECT 'unterminated", BLOCK,
                "DELETE FROM t; SELECT 'unterminated");
    /* the statement running into it cannot be examined: with a block rule
     * loaded, unreadable = auto refuses the text; pass relays it */
    expect_sent(rs, NULL, "SELECT 1; DELETE FROM t WHERE 'unterminated", BLOCK,
                "SELECT 1; DELETE FROM t WHERE 'unterminated");
    mr_stmt_ctx pass = {.unreadable = MR_UNREADABLE_PASS};
    expect_sent(rs, &pass, "SELECT 1; DELETE FROM t WHERE 'unterminated", PASS,
                "SELECT 1; DELETE FROM t WHERE 'unterminated");
    mr_ruleset_free(rs);
}

static void digest_covers_whole_text(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(orders_rule);
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, "select 1; select * from orders where id = 5", NULL, s, &res);
    assert_string_equal(res.digest, "SELECT ?; SELECT * FROM orders WHERE id = ?");
    const char *q = "SELECT * FROM orders WHERE id = 5";
    apply_ctx(rs, q, NULL, s, &res);
    assert_string_equal(res.digest, "SELECT * FROM orders WHERE id = ?");
    assert_true(res.digest_hash != 0);
    /* an empty rule set still fills the digest */
    mr_ruleset *empty = mr_rules_empty(mr_rule_kinds_all, 1);
    uint64_t h = res.digest_hash;
    apply_ctx(empty, q, NULL, s, &res);
    assert_int_equal(res.action, PASS);
    assert_true(res.digest_hash == h);
    assert_string_equal(res.digest, "SELECT * FROM orders WHERE id = ?");
    mr_ruleset_free(empty);
    result_free(&res);
    mr_rules_scratch_free(s);
    mr_ruleset_free(rs);
}

/* ---- prepared statements ---- */

static void prepared_digest_rewrites(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[rewrite keep]\n"
                             "pattern = SELECT * FROM t WHERE a = ? AND b = ?\n"
                             "replacement = SELECT a, b FROM t WHERE a = ? AND b = ?\n"
                             "[rewrite swap]\n"
                             "pattern = SELECT * FROM u WHERE a = ? AND b = ?\n"
                             "replacement = SELECT a, b FROM u WHERE b = ?2 AND a = ?1\n"
                             "[rewrite drop]\n"
                             "pattern = SELECT * FROM v WHERE a = ? AND b = ?\n"
                             "replacement = SELECT a, b FROM v WHERE a = ?1\n"
                             "[rewrite dup]\n"
                             "pattern = SELECT * FROM w WHERE a = ?\n"
                             "replacement = SELECT a FROM w WHERE a = ?1 OR a = ?1\n");
    mr_stmt_ctx prep = {.prepared = true};
    expect_sent(rs, &prep, "SELECT * FROM t WHERE a = ? AND b = ?", REWRITE,
                "SELECT a, b FROM t WHERE a = ? AND b = ?");
    expect_sent(rs, &prep, "SELECT * FROM u WHERE a = ? AND b = ?", PASS,
                "SELECT * FROM u WHERE a = ? AND b = ?");
    /* one parameter and one constant may swap: the parameter stays first */
    expect_sent(rs, &prep, "SELECT * FROM u WHERE a = ? AND b = 5", REWRITE,
                "SELECT a, b FROM u WHERE b = 5 AND a = ?");
    expect_sent(rs, &prep, "SELECT * FROM v WHERE a = 1 AND b = ?", PASS,
                "SELECT * FROM v WHERE a = 1 AND b = ?");
    expect_sent(rs, &prep, "SELECT * FROM v WHERE a = ? AND b = 1", REWRITE,
                "SELECT a, b FROM v WHERE a = ?");
    expect_sent(rs, &prep, "SELECT * FROM w WHERE a = ?", PASS, "SELECT * FROM w WHERE a = ?");
    /* the same texts as plain queries are rewritten */
    expect_sent(rs, NULL, "SELECT * FROM w WHERE a = 3", REWRITE,
                "SELECT a FROM w WHERE a = 3 OR a = 3");
    expect_explain_line(rs, &prep, "SELECT * FROM u WHERE a = ? AND b = ?",
                        "  rule swap (t.rules:4): not matched: skipped for prepared: would "
                        "change parameters (parameters would be reordered or dropped)");
    mr_ruleset_free(rs);
}

static void prepared_in_lists(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[rewrite in]\n"
                             "pattern = SELECT a FROM t WHERE b IN (?) AND c = ?\n"
                             "replacement = SELECT a FROM t2 WHERE b IN (?) AND c = ?\n");
    mr_stmt_ctx prep = {.prepared = true};
    expect_sent(rs, &prep, "SELECT a FROM t WHERE b IN (?, 2, ?) AND c = ?", REWRITE,
                "SELECT a FROM t2 WHERE b IN (?, 2, ?) AND c = ?");
    mr_ruleset_free(rs);
}

static void prepared_regex_rewrites(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[regex keep]\n"
                             "match = ^SELECT \\* FROM t WHERE (.*)$\n"
                             "replace = SELECT a FROM t WHERE $1\n"
                             "[regex swap]\n"
                             "match = ^SELECT \\* FROM u WHERE a = (\\?) AND b = (\\?)$\n"
                             "replace = SELECT a FROM u WHERE b = $2 AND a = $1\n"
                             "[regex add]\n"
                             "match = ^SELECT \\* FROM v\\b\n"
                             "replace = SELECT * FROM v WHERE x = ? AND\n"
                             "[regex drop]\n"
                             "match = AND b = \\?$\n"
                             "replace = AND b = 1\n"
                             "[regex twice]\n"
                             "match = ^SELECT \\* FROM x WHERE a = (\\?)$\n"
                             "replace = SELECT * FROM x WHERE a = $1 OR a = $1\n"
                             "[regex global]\n"
                             "match = \\bz(\\d)\\b\n"
                             "replace = zz$1\n"
                             "global = yes\n");
    mr_stmt_ctx prep = {.prepared = true};
    expect_sent(rs, &prep, "SELECT * FROM t WHERE a = ? AND b IN (?, ?)", REWRITE,
                "SELECT a FROM t WHERE a = ? AND b IN (?, ?)");
    expect_sent(rs, &prep, "SELECT * FROM u WHERE a = ? AND b = ?", PASS,
                "SELECT * FROM u WHERE a = ? AND b = ?");
    expect_sent(rs, &prep, "SELECT * FROM v WHERE y = ?", PASS, "SELECT * FROM v WHERE y = ?");
    expect_sent(rs, &prep, "SELECT * FROM y WHERE a = ? AND b = ?", PASS,
                "SELECT * FROM y WHERE a = ? AND b = ?");
    expect_sent(rs, &prep, "SELECT * FROM x WHERE a = ?", PASS, "SELECT * FROM x WHERE a = ?");
    expect_sent(rs, &prep, "SELECT z1, ? FROM q WHERE z2 = ? AND z3 = ?", REWRITE,
                "SELECT zz1, ? FROM q WHERE zz2 = ? AND zz3 = ?");
    /* as plain queries the same rules apply */
    expect_sent(rs, NULL, "SELECT * FROM u WHERE a = ? AND b = ?", REWRITE,
                "SELECT a FROM u WHERE b = ? AND a = ?");
    mr_ruleset_free(rs);
}

/* ---- counters ---- */

static void hits_per_shard(void **state)
{
    (void)state;
    loaded l = load_named("[block a]\npattern = SELECT ?\nmessage = no\n"
                          "[rewrite b]\npattern = SELECT ? FROM t\nreplacement = SELECT 1\n",
                          "t.rules", 4);
    assert_non_null(l.rs);
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    for (unsigned shard = 0; shard < 4; shard++) {
        mr_stmt_ctx ctx = {.shard = shard};
        for (unsigned k = 0; k <= shard; k++)
            apply_ctx(l.rs, "SELECT 1", &ctx, s, &res);
    }
    mr_stmt_ctx wild = {.shard = 9}; /* out of range: folded in, never overruns */
    apply_ctx(l.rs, "SELECT 2 FROM t", &wild, s, &res);
    assert_int_equal(mr_ruleset_hits(l.rs, 0), 1 + 2 + 3 + 4);
    assert_int_equal(mr_ruleset_hits(l.rs, 1), 1);
    assert_int_equal(mr_ruleset_hits(l.rs, 2), 0);
    assert_true(mr_ruleset_last_hit(l.rs, 0) > 1600000000);
    assert_true(mr_ruleset_last_hit(l.rs, 1) > 1600000000);
    /* explain is a dry run */
    free(explain_text(l.rs, NULL, "SELECT 1"));
    assert_int_equal(mr_ruleset_hits(l.rs, 0), 10);
    result_free(&res);
    mr_rules_scratch_free(s);
    loaded_free(&l);
}

static void matched_list_is_capped(void **state)
{
    (void)state;
    char text[20 * 80];
    size_t len = 0;
    for (int i = 0; i < 20; i++)
        len += (size_t)snprintf(text + len, sizeof text - len,
                                "[block b%d]\npattern = SELECT ?\nmessage = m\nlog_only = yes\n"
                                "continue = yes\n",
                                i);
    mr_ruleset *rs = load_ok(text);
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, "SELECT 1", NULL, s, &res);
    assert_int_equal(res.action, PASS);
    assert_int_equal(res.nmatched, MR_MATCH_MAX_RULES);
    assert_string_equal(res.matched[15]->name, "b15");
    assert_int_equal(mr_ruleset_hits(rs, 19), 1); /* counted even when not listed */
    result_free(&res);
    mr_rules_scratch_free(s);
    mr_ruleset_free(rs);
}

/* Workers share one rule set, each with its own scratch and shard. */
typedef struct worker_arg {
    const mr_ruleset *rs;
    unsigned shard;
    int rewrites;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *a = p;
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    mr_stmt_ctx ctx = {.shard = a->shard};
    for (int i = 0; i < 2000; i++) {
        apply_ctx(a->rs,
                  i % 2 ? "SELECT * FROM orders WHERE id = 1" : "SELECT a FROM t WHERE b = 2", &ctx,
                  s, &res);
        a->rewrites += res.action == REWRITE;
    }
    result_free(&res);
    mr_rules_scratch_free(s);
    return NULL;
}

static void threads_share_a_rule_set(void **state)
{
    (void)state;
    char text[512];
    snprintf(text, sizeof text,
             "%s[regex r]\nmatch = ^SELECT a FROM t WHERE (.*)$\n"
             "replace = SELECT a FROM t2 WHERE $1\n",
             orders_rule);
    loaded l = load_named(text, "t.rules", 4);
    assert_non_null(l.rs);
    pthread_t th[4];
    worker_arg args[4];
    for (unsigned i = 0; i < 4; i++) {
        args[i] = (worker_arg){l.rs, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, worker, &args[i]), 0);
    }
    for (unsigned i = 0; i < 4; i++) {
        (void)mr_ruleset_hits(l.rs, 0); /* reading while workers count is fine */
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(args[i].rewrites, 2000);
    }
    assert_int_equal(mr_ruleset_hits(l.rs, 0), 4000);
    assert_int_equal(mr_ruleset_hits(l.rs, 1), 4000);
    loaded_free(&l);
}

/* ---- explain ---- */

static void explain_lists_everything(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[rewrite cols]\n"
                             "pattern = SELECT * FROM orders WHERE id = ?\n"
                             "replacement = SELECT id FROM orders WHERE id = ?\n"
                             "[regex cust]\n"
                             "match = FROM customers WHERE\n"
                             "replace = FROM customers_v2 WHERE\n"
                             "[block nowhere]\nstatement = delete\nwhere = missing\n"
                             "message = add a WHERE\n");
    char *text = explain_text(rs, NULL, "SELECT * FROM orders WHERE id = 5; DELETE FROM x");
    const char *want = "text: SELECT * FROM orders WHERE id = 5; DELETE FROM x\n"
                       "digest: SELECT * FROM orders WHERE id = ?; DELETE FROM x\n";
    assert_memory_equal(text, want, strlen(want));
    static const char *const lines[] = {
        "statements: 2",
        "rules: 3",
        "statement 1: SELECT * FROM orders WHERE id = 5",
        "  digest: SELECT * FROM orders WHERE id = ?",
        "  rule cols (t.rules:1): matched: rewrite",
        "  2 later rules not tried: cols matched without continue",
        "statement 2: DELETE FROM x",
        ("  rule cols (t.rules:1): not matched: digest differs (rule's: SELECT * FROM orders "
         "WHERE id = ?)"),
        "  rule cust (t.rules:4): not matched: prefilter word 'customers' absent, regex not run",
        "  rule nowhere (t.rules:7): matched: block",
        "action: block",
        "error: 1148 (42000) add a WHERE",
        "matched: cols, nowhere",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        expect_explain_line(rs, NULL, "SELECT * FROM orders WHERE id = 5; DELETE FROM x", lines[i]);
    free(text);
    expect_explain_line(rs, NULL, "SELECT * FROM orders WHERE id = 5", "action: rewrite");
    expect_explain_line(rs, NULL, "SELECT * FROM orders WHERE id = 5",
                        "text: SELECT id FROM orders WHERE id = 5");
    expect_explain_line(rs, NULL, "SELECT a FROM customers WHERE b = 1",
                        "  rule cust (t.rules:4): matched: rewrite");
    expect_explain_line(rs, NULL, "SELECT a FROM customers",
                        "  rule cust (t.rules:4): not "
                        "matched: regex no match");
    expect_explain_line(rs, NULL, "DELETE FROM x WHERE a = 1",
                        "  rule nowhere (t.rules:7): not matched: has a WHERE clause");
    expect_explain_line(rs, NULL, "SELECT 1",
                        "  rule nowhere (t.rules:7): not matched: not an "
                        "UPDATE or DELETE");
    mr_stmt_ctx pass = {.unreadable = MR_UNREADABLE_PASS};
    expect_explain_line(rs, &pass, "SELECT 'oops", "  does not lex: passed through untouched");
    expect_explain_line(rs, NULL, "SELECT 'oops",
                        "error: 1148 (42000) myrewrite could not read "
                        "the statement (unterminated string at byte 8), so its rules cannot "
                        "examine it and it was not sent (unreadable = auto, which blocks while a "
                        "block rule is loaded); correct the statement, or set unreadable = pass "
                        "in the proxy's configuration to relay such statements unexamined");
    expect_explain_line(rs, NULL, "SELECT 1", "action: pass");
    expect_explain_line(rs, NULL, "SELECT 1", "matched: none");
    mr_ruleset_free(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rewrite_reuses_the_literal),
        cmocka_unit_test(rewrite_slots_by_position),
        cmocka_unit_test(rewrite_collapsed_lists),
        cmocka_unit_test(hostile_literals_keep_their_meaning),
        cmocka_unit_test(nul_bytes_in_literals),
        cmocka_unit_test(no_backslash_escapes_mode),
        cmocka_unit_test(unsafe_charset_runs_only_blocks),
        cmocka_unit_test(other_readings_meet_block_rules),
        cmocka_unit_test(new_starts_meet_every_mode),
        cmocka_unit_test(rewrites_follow_the_sessions_reading),
        cmocka_unit_test(dynamic_sql_in_other_readings),
        cmocka_unit_test(regex_groups_caseless_global),
        cmocka_unit_test(regex_result_must_stay_one_statement),
        cmocka_unit_test(block_by_pattern_match_and_statement),
        cmocka_unit_test(user_and_schema_filters),
        cmocka_unit_test(first_match_wins),
        cmocka_unit_test(continue_chains),
        cmocka_unit_test(log_only_counts_but_sends_original),
        cmocka_unit_test(log_sample_picks_one_in_n),
        cmocka_unit_test(disabled_rules_never_match),
        cmocka_unit_test(multi_statement_rewrites_keep_separators),
        cmocka_unit_test(multi_statement_block_blocks_all),
        cmocka_unit_test(digest_covers_whole_text),
        cmocka_unit_test(prepared_digest_rewrites),
        cmocka_unit_test(prepared_in_lists),
        cmocka_unit_test(prepared_regex_rewrites),
        cmocka_unit_test(hits_per_shard),
        cmocka_unit_test(matched_list_is_capped),
        cmocka_unit_test(threads_share_a_rule_set),
        cmocka_unit_test(explain_lists_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
