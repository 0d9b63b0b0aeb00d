/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rules_dynamic.c - statements that run SQL of their own: what
 * sql_dynamic_find sees in each form and the bytes sql_dynamic_text reads
 * from a literal (escapes as MariaDB 10.11 resolves them, checked with
 * SELECT of the same literals), then the rules over them: block rules meet
 * the SQL inside EXECUTE IMMEDIATE / PREPARE ... FROM a literal, rewrites
 * leave it alone, and `dynamic = refuse` refuses what the text does not show.
 */
#include "myrewrite/sql/dynamic.h"
#include "test_rules.h"

#define MAXTOK 256

typedef struct seen {
    sql_dynamic_kind kind;
    char what[128];
    char text[256];
} seen;

static seen find(const char *sql, unsigned flags)
{
    sql_token tok[MAXTOK];
    size_t n = 0;
    sql_lex(sql, strlen(sql), flags, tok, MAXTOK, &n);
    sql_dynamic d;
    sql_dynamic_find(sql, tok, n, flags, &d);
    seen s = {.kind = d.kind};
    snprintf(s.what, sizeof s.what, "%s", d.what ? d.what : "");
    if (d.kind == SQL_DYN_LITERAL) {
        assert_true(sql_dynamic_text_max(tok, &d) < sizeof s.text);
        size_t len = sql_dynamic_text(sql, tok, &d, flags, s.text);
        s.text[len] = '\0';
    }
    if (d.kind != SQL_DYN_NONE) /* the cheap look never misses one */
        assert_true(sql_dynamic_may(sql, strlen(sql), flags));
    return s;
}

static void literal(const char *sql, unsigned flags, const char *want)
{
    seen s = find(sql, flags);
    if (s.kind != SQL_DYN_LITERAL || strcmp(s.text, want) != 0)
        fail_msg("%s\nwanted literal [%s]\ngot kind %d [%s] %s", sql, want, s.kind, s.text, s.what);
}

static void hidden(const char *sql, unsigned flags, const char *what)
{
    seen s = find(sql, flags);
    if (s.kind != SQL_DYN_HIDDEN || !strstr(s.what, what))
        fail_msg("%s\nwanted hidden (%s)\ngot kind %d %s", sql, what, s.kind, s.what);
}

static void none(const char *sql)
{
    seen s = find(sql, 0);
    if (s.kind != SQL_DYN_NONE)
        fail_msg("%s\nwanted none, got kind %d %s", sql, s.kind, s.what);
}

static void literal_forms(void **state)
{
    (void)state;
    literal("EXECUTE IMMEDIATE 'UPDATE t SET n = 1'", 0, "UPDATE t SET n = 1");
    literal("execute immediate 'SELECT ?' USING 5", 0, "SELECT ?");
    literal("PREPARE s FROM 'DELETE FROM t'", 0, "DELETE FROM t");
    literal("PREPARE `my s` FROM /* c */ 'DELETE FROM t' ;", 0, "DELETE FROM t");
    literal("EXECUTE IMMEDIATE \"UPDATE t SET n = 1\"", 0, "UPDATE t SET n = 1");
    /* adjacent literals are one string to the server */
    literal("EXECUTE IMMEDIATE 'UPDATE t ' \"SET n \" /* x */ '= 1'", 0, "UPDATE t SET n = 1");
    literal("/*!*/ EXECUTE IMMEDIATE 'SELECT 1'", 0, "SELECT 1");
}

/* SELECT '<literal>' on MariaDB 10.11 returns these bytes. */
static void escapes_as_the_server(void **state)
{
    (void)state;
    literal("EXECUTE IMMEDIATE 'UPDATE\\nt\\tSET\\rn=\\Z\\0'", 0, "UPDATE\nt\tSET\rn=\032");
    seen s = find("EXECUTE IMMEDIATE 'a\\0b'", 0);
    assert_memory_equal(s.text, "a\0b", 3);
    literal("EXECUTE IMMEDIATE 'it''s \\'q\\' \\\"d\\\" \\\\ \\% \\_ \\x'", 0,
            "it's 'q' \"d\" \\ \\% \\_ x");
    literal("EXECUTE IMMEDIATE \"say \"\"hi\"\" it's\"", 0, "say \"hi\" it's");
    /* NO_BACKSLASH_ESCAPES: a backslash is a byte, only the doubled quote counts */
    literal("EXECUTE IMMEDIATE 'a\\nb\\'", SQL_LEX_NO_BACKSLASH_ESCAPES, "a\\nb\\");
    literal("EXECUTE IMMEDIATE 'x'' \\'", SQL_LEX_NO_BACKSLASH_ESCAPES, "x' \\");
}

static void hidden_forms(void **state)
{
    (void)state;
    hidden("EXECUTE IMMEDIATE @q", 0, "EXECUTE IMMEDIATE of a user variable");
    hidden("PREPARE s FROM @`q`", 0, "PREPARE ... FROM a user variable");
    hidden("EXECUTE IMMEDIATE ?", 0, "of a parameter");
    hidden("EXECUTE IMMEDIATE CONCAT('UPDATE t', ' SET n = 1')", 0, "of an expression");
    hidden("EXECUTE IMMEDIATE 0x55504441544520", 0, "of an expression");
    hidden("EXECUTE IMMEDIATE X'5550'", 0, "of an expression");
    hidden("EXECUTE IMMEDIATE ('SELECT 1')", 0, "of an expression");
    hidden("EXECUTE IMMEDIATE 'SELECT 1' COLLATE utf8mb4_bin", 0, "of an expression");
    hidden("PREPARE s FROM 'SELECT 1' USING 1", 0, "PREPARE ... FROM an expression");
    hidden("EXECUTE IMMEDIATE _latin1'SELECT 1'", 0, "character set introducer");
    hidden("EXECUTE IMMEDIATE N'SELECT 1'", 0, "character set introducer");
    /* under ANSI_QUOTES "..." is a name, never the SQL to run */
    hidden("EXECUTE IMMEDIATE \"SELECT 1\"", SQL_LEX_ANSI_QUOTES, "of an expression");
    hidden("CALL p()", 0, "CALL of a stored procedure");
    hidden("call db.p", 0, "CALL");
    hidden("BEGIN NOT ATOMIC UPDATE t SET n = 1; END", 0, "compound statement");
    hidden("IF 1 THEN UPDATE t SET n = 1; END IF", 0, "compound statement");
    hidden("CASE WHEN 1 THEN SELECT 1; END CASE", 0, "compound statement");
    hidden("WHILE 0 DO SELECT 1; END WHILE", 0, "compound statement");
    hidden("lbl: LOOP LEAVE lbl; END LOOP", 0, "compound statement");
    hidden(" \t step1 : BEGIN NOT ATOMIC SELECT 1; END", 0, "compound statement");
    hidden("FOR i IN 1..2 DO SELECT i; END FOR", 0, "compound statement");
    hidden("/*!EXECUTE IMMEDIATE*/ @q", 0, "executable comment");
    hidden("/*M!100000 CALL p() */", 0, "executable comment");
}

static void other_statements(void **state)
{
    (void)state;
    none("EXECUTE s");
    none("EXECUTE s USING @a");
    none("DEALLOCATE PREPARE s");
    none("BEGIN");
    none("BEGIN WORK");
    none("SELECT 'EXECUTE IMMEDIATE @q'");
    none("UPDATE t SET n = 1");
    none("/*!40101 SET NAMES utf8mb4 */");
    none("EXECUTE IMMEDIATE");
    none("SELECT prepare FROM t");
}

/* ---- the rules ---- */

static const char *rules_text = "[rewrite r]\n"
                                "pattern = SELECT 1\n"
                                "replacement = SELECT 2\n"
                                "\n"
                                "[block nowhere]\n"
                                "statement = update, delete\n"
                                "where = missing\n"
                                "message = add a WHERE\n"
                                "code = 1227\n"
                                "sqlstate = HY000\n"
                                "\n"
                                "[block keep]\n"
                                "pattern = DROP TABLE keep\n"
                                "message = keep stays\n"
                                "\n"
                                "[block sleeps]\n"
                                "match = \\bsleep\\s*\\(\n"
                                "message = no sleeping\n";

static void expect_block(const mr_ruleset *rs, const mr_stmt_ctx *ctx, const char *sql,
                         unsigned code, const char *part)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, ctx, s, &res);
    if (res.action != MR_ACT_BLOCK || res.err_code != code || !res.message ||
        !strstr(res.message, part))
        fail_msg("statement: %s\nwanted block %u with '%s'\ngot action %d %u: %s", sql, code, part,
                 res.action, res.err_code, res.message ? res.message : "(none)");
    result_free(&res);
    mr_rules_scratch_free(s);
}

static void blocks_inside_literals(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(rules_text);
    expect_block(rs, NULL, "EXECUTE IMMEDIATE 'UPDATE u SET n = n + 1'", 1227, "add a WHERE");
    expect_block(rs, NULL, "PREPARE s FROM 'DELETE FROM u'", 1227, "add a WHERE");
    expect_block(rs, NULL, "EXECUTE IMMEDIATE 'UPDATE\\nu SET n = 0;'", 1227, "add a WHERE");
    expect_block(rs, NULL, "EXECUTE IMMEDIATE 'UPDATE u' ' SET n = 0'", 1227, "add a WHERE");
    expect_block(rs, NULL, "SELECT 1; PREPARE s FROM \"DELETE FROM u\"", 1227, "add a WHERE");
    expect_block(rs, NULL, "EXECUTE IMMEDIATE 'drop  table keep'", 1148, "keep stays");
    expect_block(rs, NULL, "EXECUTE IMMEDIATE 'SELECT SLEEP(1)'", 1148, "no sleeping");
    /* a WHERE the server reads: relayed untouched */
    expect_sent(rs, NULL, "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 WHERE id = ?' USING 1",
                MR_ACT_PASS, "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 WHERE id = ?' USING 1");
    expect_sent(rs, NULL, "PREPARE s FROM 'DELETE FROM u WHERE id = 1'", MR_ACT_PASS,
                "PREPARE s FROM 'DELETE FROM u WHERE id = 1'");
    /* a comment the server skips hides nothing: -- ends at the newline */
    expect_block(rs, NULL, "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 -- WHERE id = 1'", 1227,
                 "add a WHERE");
    expect_sent(rs, NULL, "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 -- x\\nWHERE id = 1'", MR_ACT_PASS,
                "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 -- x\\nWHERE id = 1'");
    /* the rewrite rule does not reach inside the literal */
    expect_sent(rs, NULL, "EXECUTE IMMEDIATE 'SELECT 1'", MR_ACT_PASS,
                "EXECUTE IMMEDIATE 'SELECT 1'");
    expect_sent(rs, NULL, "SELECT 1", MR_ACT_REWRITE, "SELECT 2");
    /* without dynamic = refuse, what the text does not show is relayed */
    expect_sent(rs, NULL, "EXECUTE IMMEDIATE @q", MR_ACT_PASS, "EXECUTE IMMEDIATE @q");
    expect_sent(rs, NULL, "CALL p()", MR_ACT_PASS, "CALL p()");
    mr_ruleset_free(rs);
}

/* A literal's tokens can read alike in every mode while its contents do
 * not: after a statement that may change the mode, or where the session is
 * unsure, each reading of a literal with a backslash must pass. */
static void literal_read_in_every_mode_it_may_have(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(rules_text);
    /* NO_BACKSLASH_ESCAPES set earlier in the text: \n is two bytes when the
     * server runs the literal, # hides the WHERE */
    expect_block(rs, NULL,
                 "SET sql_mode = 'NO_BACKSLASH_ESCAPES'; "
                 "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 # \\nWHERE id = 1'",
                 1227, "add a WHERE");
    /* gbk set earlier in the text: 0xbf 0x5c is one character, \n no newline */
    expect_block(rs, NULL,
                 "SET NAMES gbk; EXECUTE IMMEDIATE 'UPDATE u SET n = 0 # \xbf\\nWHERE id = 1'",
                 1227, "add a WHERE");
    /* a session unsure of its backslash mode reads both ways */
    mr_stmt_ctx unsure = {.lex_unsure = SQL_LEX_NO_BACKSLASH_ESCAPES};
    expect_block(rs, &unsure, "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 # \\nWHERE id = 1'", 1227,
                 "add a WHERE");
    /* the first statement's mode is known (the server's status flag): one reading */
    expect_sent(rs, NULL, "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 # \\nWHERE id = 1'", MR_ACT_PASS,
                "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 # \\nWHERE id = 1'");
    /* without a backslash the readings agree */
    expect_sent(rs, NULL, "SET NAMES gbk; EXECUTE IMMEDIATE 'UPDATE u SET n = 0 WHERE id = 1'",
                MR_ACT_PASS, "SET NAMES gbk; EXECUTE IMMEDIATE 'UPDATE u SET n = 0 WHERE id = 1'");
    mr_ruleset_free(rs);
}

/* The mode decides where the literal ends and what it holds. */
static void literal_read_in_the_session_mode(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(rules_text);
    mr_stmt_ctx nbe = {.lex_flags = SQL_LEX_NO_BACKSLASH_ESCAPES};
    /* NO_BACKSLASH_ESCAPES: 'a\' is a whole string inside, the WHERE is real */
    expect_sent(rs, &nbe, "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 WHERE ''a\\'' = ''a\\'''",
                MR_ACT_PASS, "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 WHERE ''a\\'' = ''a\\'''");
    /* \n is two bytes there: the -- comment runs to the end, there is no WHERE */
    expect_block(rs, &nbe, "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 -- x\\nWHERE id = 1'", 1227,
                 "add a WHERE");
    /* the same text with backslash escapes ends its literal at \'' and
     * leaves a stray backslash: not read, refused under unreadable = auto */
    expect_block(rs, NULL, "EXECUTE IMMEDIATE 'UPDATE u SET n = 0 WHERE ''a\\'' = ''a\\'''", 1148,
                 "could not read the statement");
    mr_ruleset_free(rs);
}

static const char *refuse_text = "[block nowhere]\n"
                                 "statement = update, delete\n"
                                 "where = missing\n"
                                 "message = add a WHERE\n"
                                 "dynamic = refuse\n"
                                 "code = 1227\n";

static void refuse_what_is_not_shown(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(refuse_text);
    const char *forms[] = {
        "EXECUTE IMMEDIATE @q",
        "PREPARE s FROM @q",
        "EXECUTE IMMEDIATE CONCAT('UPDATE u', ' SET n = 0')",
        "EXECUTE IMMEDIATE 0x5550",
        "CALL p()",
        "EXECUTE IMMEDIATE 'CALL p()'",
        "PREPARE s FROM 'CALL p(?)'",
        "BEGIN NOT ATOMIC UPDATE u SET n = 0; END",
        "/*!EXECUTE IMMEDIATE*/ @q",
        "SELECT 1; CALL p()",
        "EXECUTE IMMEDIATE 'EXECUTE IMMEDIATE ''EXECUTE IMMEDIATE ''''SELECT 1'''''''",
    };
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++)
        expect_block(rs, NULL, forms[i], 1227, "myrewrite rule nowhere (dynamic = refuse)");
    expect_block(rs, NULL, "CALL p()", 1227, "CALL of a stored procedure runs SQL");
    expect_block(rs, NULL, "EXECUTE IMMEDIATE @q", 1227, "quoted string literal only");
    /* what the rules can read is examined, not refused */
    expect_sent(rs, NULL, "EXECUTE IMMEDIATE 'SELECT 1'", MR_ACT_PASS,
                "EXECUTE IMMEDIATE 'SELECT 1'");
    expect_sent(rs, NULL, "EXECUTE s USING @a", MR_ACT_PASS, "EXECUTE s USING @a");
    /* a character set the proxy cannot read: literals are not read either */
    mr_stmt_ctx gbk = {.charset_unsafe = "gbk"};
    expect_block(rs, &gbk, "EXECUTE IMMEDIATE 'SELECT 1'", 1227, "character set");
    mr_ruleset_free(rs);
}

static void refuse_filters_and_log_only(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[block nowhere]\nstatement = update\nwhere = missing\n"
                             "message = m\ndynamic = refuse\nuser = app\n");
    mr_stmt_ctx app = {.user = "app"}, other = {.user = "other"};
    expect_block(rs, &app, "CALL p()", 1148, "rule nowhere");
    expect_sent(rs, &other, "CALL p()", MR_ACT_PASS, "CALL p()");
    mr_ruleset_free(rs);
    rs = load_ok("[block nowhere]\nstatement = update\nwhere = missing\nmessage = m\n"
                 "dynamic = refuse\nlog_only = yes\n");
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, "CALL p()", NULL, s, &res);
    assert_int_equal(res.action, MR_ACT_PASS);
    assert_int_equal(res.nmatched, 1); /* counted */
    assert_int_equal(mr_ruleset_hits(rs, 0), 1);
    result_free(&res);
    mr_rules_scratch_free(s);
    mr_ruleset_free(rs);
}

static void dynamic_key(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[block b]\nmatch = x\nmessage = m\ndynamic = PASS\n");
    mr_ruleset_free(rs);
    expect_error("[block b]\nmatch = x\nmessage = m\ndynamic = maybe\n",
                 "t.rules:4: dynamic = 'maybe' in [block b]: expected pass or refuse (refuse: "
                 "also refuse CALL, compound statements and EXECUTE IMMEDIATE / PREPARE ... "
                 "FROM anything but a string literal)\n");
    loaded l = load("[rewrite r]\npattern = SELECT 1\nreplacement = SELECT 2\ndynamic = refuse\n");
    assert_null(l.rs);
    assert_non_null(strstr(l.diag, "dynamic"));
    loaded_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(literal_forms),
        cmocka_unit_test(escapes_as_the_server),
        cmocka_unit_test(hidden_forms),
        cmocka_unit_test(other_statements),
        cmocka_unit_test(blocks_inside_literals),
        cmocka_unit_test(literal_read_in_the_session_mode),
        cmocka_unit_test(literal_read_in_every_mode_it_may_have),
        cmocka_unit_test(refuse_what_is_not_shown),
        cmocka_unit_test(refuse_filters_and_log_only),
        cmocka_unit_test(dynamic_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
