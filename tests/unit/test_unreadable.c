/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_unreadable.c - texts the lexer cannot read: what the server ignores
 * at the end of a statement (sql_server_len, checked against MariaDB 10.11
 * with raw COM_QUERY packets), and the unreadable policy of the rules
 * (auto, pass, block; DELAYED refused whatever the policy and the rules).
 */
#include "myrewrite/core/rule_kinds.h"
#include "myrewrite/sql/lexer.h"
#include "test_rules.h"

#define PASS MR_ACT_PASS
#define BLOCK MR_ACT_BLOCK

/* sql_server_len of a literal with its NULs: the length the server reads. */
#define SERVER_LEN(lit) sql_server_len(lit, sizeof(lit) - 1)

static void server_len_follows_mariadb(void **state)
{
    (void)state;
    /* runs on the server as `SELECT 1` */
    assert_int_equal(SERVER_LEN("SELECT 1\0"), 8);
    assert_int_equal(SERVER_LEN("SELECT 1\0 "), 8);
    assert_int_equal(SERVER_LEN("SELECT 1\0\n"), 8);
    assert_int_equal(SERVER_LEN("SELECT 1\0;"), 8);
    assert_int_equal(SERVER_LEN("SELECT 1\0; \t\r\n\v\f;"), 8);
    assert_int_equal(SERVER_LEN("SELECT 1 \0"), 9);
    assert_int_equal(SERVER_LEN("SELECT 1 -- c\0"), 13);
    assert_int_equal(SERVER_LEN("SELECT 1\0\xa0"), 8); /* 0xA0 is a blank in latin1 */
    /* `SELECT 1;\0`: the NUL is the (empty) second statement; dropped, the
     * first is the same */
    assert_int_equal(SERVER_LEN("SELECT 1;\0"), 9);
    /* syntax errors on the server: only the one NUL at the end goes, so the
     * lexer still sees what is wrong */
    assert_int_equal(SERVER_LEN("SELECT 1\0\0"), 9);
    assert_int_equal(SERVER_LEN("SELECT 1\0 garbage"), 17);
    assert_int_equal(SERVER_LEN("SELECT 1\0x"), 10);
    assert_int_equal(SERVER_LEN("\0SELECT 1"), 9);
    /* nothing to drop */
    assert_int_equal(SERVER_LEN("SELECT 1"), 8);
    assert_int_equal(SERVER_LEN("SELECT 1 ;"), 10);
    assert_int_equal(SERVER_LEN("SELECT 'a\0'"), 11);
    assert_int_equal(SERVER_LEN(""), 0);
    assert_int_equal(SERVER_LEN("\0"), 0);
    assert_int_equal(SERVER_LEN(" ;"), 2);
}

static void server_len_text_lexes(void **state)
{
    (void)state;
    static const char q[] = "UPDATE u SET n = n\0";
    sql_token tok[16];
    size_t n;
    assert_int_equal(sql_lex(q, sizeof q - 1, 0, tok, 16, &n), SQL_ERR);
    assert_int_equal(sql_lex(q, sql_server_len(q, sizeof q - 1), 0, tok, 16, &n), SQL_OK);
    assert_int_equal(n, 6);
}

/* Applies rs to `len` bytes of sql under ctx; checks action, code and a
 * piece of the message. */
static void expect(const mr_ruleset *rs, const mr_stmt_ctx *ctx, const char *sql, size_t len,
                   mr_action action, unsigned code, const char *msg_part, uint8_t outcome)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    mr_rules_apply(rs, sql, len, ctx, s, &res);
    if (res.action != action || (code && res.err_code != code) ||
        (msg_part && (!res.message || !strstr(res.message, msg_part))) || res.unreadable != outcome)
        fail_msg("statement: %.*s\nwanted action %d code %u outcome %u with '%s'\n"
                 "got action %d code %u outcome %u: %s",
                 (int)len, sql, action, code, outcome, msg_part ? msg_part : "", res.action,
                 res.err_code, res.unreadable, res.message ? res.message : "(none)");
    result_free(&res);
    mr_rules_scratch_free(s);
}

#define EXPECT(rs, ctx, lit, action, code, part, outcome)                                          \
    expect(rs, ctx, lit, sizeof(lit) - 1, action, code, part, outcome)

static const char *block_rule = "[block nowhere]\n"
                                "statement = update, delete\n"
                                "where = missing\n"
                                "message = add a WHERE\n";

static void auto_follows_block_rules(void **state)
{
    (void)state;
    mr_stmt_ctx autop = {0};
    mr_ruleset *blocks = load_ok(block_rule);
    mr_ruleset *rewrites = load_ok("[rewrite r]\npattern = SELECT 1\nreplacement = SELECT 2\n");
    mr_ruleset *disabled = load_ok("[block nowhere]\nstatement = update\nwhere = missing\n"
                                   "message = m\nenabled = no\n");
    mr_ruleset *log_only = load_ok("[block nowhere]\nstatement = update\nwhere = missing\n"
                                   "message = m\nlog_only = yes\n");
    EXPECT(blocks, &autop, "SELECT 'abc", BLOCK, 1148, "unterminated string at byte 8",
           MR_UNREADABLE_BLOCKED);
    EXPECT(blocks, &autop, "UPDATE u SET n = n\0\0", BLOCK, 1148, "stray byte 0x00 at byte 19",
           MR_UNREADABLE_BLOCKED);
    EXPECT(blocks, &autop, "SELECT 1 /* x", BLOCK, 1148, "unterminated comment at byte 10",
           MR_UNREADABLE_BLOCKED);
    EXPECT(blocks, &autop, "SELECT 1", PASS, 0, NULL, MR_UNREADABLE_NONE);
    /* no block rule in force: relayed, as before the setting */
    EXPECT(rewrites, &autop, "SELECT 'abc", PASS, 0, NULL, MR_UNREADABLE_PASSED);
    EXPECT(disabled, &autop, "SELECT 'abc", PASS, 0, NULL, MR_UNREADABLE_PASSED);
    EXPECT(log_only, &autop, "SELECT 'abc", PASS, 0, NULL, MR_UNREADABLE_PASSED);
    mr_ruleset *empty = mr_rules_empty(mr_rule_kinds_all, 1);
    EXPECT(empty, &autop, "SELECT 'abc", PASS, 0, NULL, MR_UNREADABLE_PASSED);
    mr_ruleset_free(empty);
    mr_ruleset_free(blocks);
    mr_ruleset_free(rewrites);
    mr_ruleset_free(disabled);
    mr_ruleset_free(log_only);
}

static void explicit_policy(void **state)
{
    (void)state;
    mr_stmt_ctx pass = {.unreadable = MR_UNREADABLE_PASS};
    mr_stmt_ctx block = {.unreadable = MR_UNREADABLE_BLOCK};
    mr_ruleset *blocks = load_ok(block_rule);
    EXPECT(blocks, &pass, "SELECT 'abc", PASS, 0, NULL, MR_UNREADABLE_PASSED);
    EXPECT(blocks, &block, "SELECT 'abc", BLOCK, 1148, "(unreadable = block)",
           MR_UNREADABLE_BLOCKED);
    /* block needs no rule at all */
    mr_ruleset *empty = mr_rules_empty(mr_rule_kinds_all, 1);
    EXPECT(empty, &block, "SELECT `abc", BLOCK, 1148, "unterminated quoted name at byte 8",
           MR_UNREADABLE_BLOCKED);
    EXPECT(empty, &block, "SELECT X'zz'", BLOCK, 1148, "set unreadable = pass",
           MR_UNREADABLE_BLOCKED);
    mr_ruleset_free(empty);
    /* a statement before the error is still examined under pass */
    EXPECT(blocks, &pass, "DELETE FROM t; SELECT 'abc", BLOCK, 1148, "add a WHERE",
           MR_UNREADABLE_PASSED);
    /* and under block the whole text is refused */
    EXPECT(blocks, &block, "SELECT 1; SELECT 'abc", BLOCK, 1148, "at byte 18",
           MR_UNREADABLE_BLOCKED);
    mr_ruleset_free(blocks);
}

static void delayed_never_relayed(void **state)
{
    (void)state;
    mr_stmt_ctx pass = {.schema = "test", .unreadable = MR_UNREADABLE_PASS};
    mr_ruleset *rs = load_ok("[delayed counters]\n"
                             "table = test.counters\n"
                             "key = id\n"
                             "columns = hits\n");
    const char *why = "could not read this DELAYED statement (unterminated string at byte";
    EXPECT(rs, &pass, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 'x", BLOCK, 1235, why,
           MR_UNREADABLE_BLOCKED);
    EXPECT(rs, &pass, "DELETE DELAYED FROM counters WHERE id = 'x", BLOCK, 1235, why,
           MR_UNREADABLE_BLOCKED);
    EXPECT(rs, &pass, "UPDATE LOW_PRIORITY DELAYED counters SET hits = hits + 1 WHERE id = 1\0\0",
           BLOCK, 1235, "DELAYED statement (stray byte 0x00", MR_UNREADABLE_BLOCKED);
    EXPECT(rs, &pass, "SELECT 1; UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 'x", BLOCK,
           1235, why, MR_UNREADABLE_BLOCKED);
    /* a readable DELAYED statement before the error is taken as ever */
    EXPECT(rs, &pass, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1; SELECT 'x",
           MR_ACT_REWRITE, 0, NULL, MR_UNREADABLE_PASSED);
    /* not DELAYED: the policy decides */
    EXPECT(rs, &pass, "UPDATE counters SET hits = hits + 1 WHERE id = 'x", PASS, 0, NULL,
           MR_UNREADABLE_PASSED);
    mr_ruleset_free(rs);
    /* without a delayed rule, or any rule, they are refused all the same */
    mr_ruleset *none = load_ok(block_rule);
    EXPECT(none, &pass, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 'x", BLOCK, 1235,
           why, MR_UNREADABLE_BLOCKED);
    mr_ruleset *empty = mr_rules_empty(mr_rule_kinds_all, 1);
    EXPECT(empty, &pass, "DELETE DELAYED FROM counters WHERE id = 'x", BLOCK, 1235, why,
           MR_UNREADABLE_BLOCKED);
    EXPECT(empty, &pass, "UPDATE counters SET hits = hits + 1 WHERE id = 'x", PASS, 0, NULL,
           MR_UNREADABLE_PASSED);
    mr_ruleset_free(empty);
    mr_ruleset_free(none);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(server_len_follows_mariadb), cmocka_unit_test(server_len_text_lexes),
        cmocka_unit_test(auto_follows_block_rules),   cmocka_unit_test(explicit_policy),
        cmocka_unit_test(delayed_never_relayed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
