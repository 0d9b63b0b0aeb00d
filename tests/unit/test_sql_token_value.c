/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sql_token_value.c - the one reader of a name token and of a string
 * literal (sql/token_value.c): bare and quoted names, doubled quotes,
 * ANSI_QUOTES, backslashes, lengths at the buffer's bound, tokens that are
 * no name; string values with escapes on and off, and charset introducers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/sql/token_value.h"

/* The first token of s, lexed with flags. */
static sql_token first_of(const char *s, unsigned flags)
{
    sql_lexer lx;
    sql_token tok;
    sql_lexer_init(&lx, s, strlen(s), flags);
    assert_true(sql_lexer_next(&lx, &tok));
    return tok;
}

static void expect_name(const char *s, unsigned flags, const char *want)
{
    char dst[MR_SQL_NAME_BUF];
    sql_token t = first_of(s, flags);
    assert_true(sql_tok_name(&t, s, dst, sizeof dst));
    assert_string_equal(dst, want);
}

static void expect_none(const char *s, unsigned flags)
{
    char dst[MR_SQL_NAME_BUF];
    sql_token t = first_of(s, flags);
    assert_false(sql_tok_name(&t, s, dst, sizeof dst));
}

static void bare_and_quoted(void **state)
{
    (void)state;
    expect_name("orders x", 0, "orders");
    expect_name("`orders` x", 0, "orders");
    expect_name("`two words`", 0, "two words");
    expect_name("`it's`", 0, "it's");
    expect_name("`select`", 0, "select"); /* quoted, a reserved word is a name */
    expect_name("status", 0, "status");   /* a keyword that is not reserved */
    expect_none("select", 0);             /* bare, a reserved word is not */
    expect_none("'orders'", 0);
    expect_none("\"orders\"", 0); /* a string without ANSI_QUOTES */
    expect_none("42", 0);
    expect_none("(", 0);
    expect_none("?", 0);
}

static void doubled_quotes(void **state)
{
    (void)state;
    expect_name("`a``b`", 0, "a`b");
    expect_name("````", 0, "`");
    expect_name("`a````b`", 0, "a``b");
    expect_name("\"a\"\"b\"", SQL_LEX_ANSI_QUOTES, "a\"b");
    expect_name("\"a`b\"", SQL_LEX_ANSI_QUOTES, "a`b");
    expect_name("`a\"b`", SQL_LEX_ANSI_QUOTES, "a\"b");
}

/* No escapes in a quoted name: a backslash is a character of it. */
static void backslashes(void **state)
{
    (void)state;
    expect_name("`a\\b`", 0, "a\\b");
    expect_name("`a\\`", 0, "a\\");
    expect_name("\"a\\\"", SQL_LEX_ANSI_QUOTES, "a\\");
}

static void lengths_at_the_bound(void **state)
{
    (void)state;
    char text[80], dst[66];
    memset(text, 'n', 65);
    text[65] = '\0';
    sql_token t = first_of(text, 0);
    assert_false(sql_tok_name(&t, text, dst, 65)); /* 65 bytes + NUL: no room */
    assert_true(sql_tok_name(&t, text, dst, 66));
    assert_int_equal(strlen(dst), 65);
    text[0] = '`';
    memset(text + 1, 'q', 64);
    text[65] = '`';
    text[66] = '\0';
    t = first_of(text, 0);
    assert_false(sql_tok_name(&t, text, dst, 64));
    assert_true(sql_tok_name(&t, text, dst, 65));
    assert_int_equal(strlen(dst), 64);
    /* a doubled quote counts once */
    strcpy(text, "`aa``b`");
    t = first_of(text, 0);
    assert_false(sql_tok_name(&t, text, dst, 4));
    assert_true(sql_tok_name(&t, text, dst, 5));
    assert_string_equal(dst, "aa`b");
    assert_false(sql_tok_name(&t, text, dst, 0));
}

/* Tokens that no lexer run gives, or names the server refuses. */
static void malformed(void **state)
{
    (void)state;
    char dst[MR_SQL_NAME_BUF];
    expect_none("``", 0); /* the empty name */
    const char *text = "`a`b`";
    sql_token t = {.kind = SQL_TOK_QIDENT, .off = 0, .len = 5};
    assert_false(sql_tok_name(&t, text, dst, sizeof dst)); /* a lone quote inside */
    t.len = 2;
    assert_false(sql_tok_name(&t, "`a", dst, sizeof dst)); /* no closing quote */
    t.len = 1;
    assert_false(sql_tok_name(&t, "`", dst, sizeof dst));
    t.len = 0;
    assert_false(sql_tok_name(&t, "", dst, sizeof dst));
    t = (sql_token){.kind = SQL_TOK_WORD, .off = 0, .len = 0};
    assert_false(sql_tok_name(&t, "", dst, sizeof dst));
}

static void expect_str(const char *s, unsigned flags, const char *want, size_t wantlen)
{
    char out[64];
    sql_token t = first_of(s, flags);
    assert_int_equal(t.kind, SQL_TOK_STRING);
    size_t n = sql_tok_string(&t, s, flags, out);
    assert_true(n <= t.len);
    assert_int_equal(n, wantlen);
    assert_memory_equal(out, want, n);
}

static void string_values(void **state)
{
    (void)state;
    expect_str("'abc'", 0, "abc", 3);
    expect_str("''", 0, "", 0);
    expect_str("'it''s'", 0, "it's", 4);
    expect_str("\"say \"\"hi\"\"\"", 0, "say \"hi\"", 8);
    expect_str("'a\\'b'", 0, "a'b", 3);
    expect_str("'\\0\\n\\r\\t\\Z\\b'", 0, "\0\n\r\t\032\b", 6);
    expect_str("'\\%\\_\\q\\\\'", 0, "\\%\\_q\\", 6);
    expect_str("'a\\'", SQL_LEX_NO_BACKSLASH_ESCAPES, "a\\", 2);
    expect_str("'\\n'", SQL_LEX_NO_BACKSLASH_ESCAPES, "\\n", 2);
    expect_str("_utf8mb4'x''y'", 0, "x'y", 3);
    expect_str("N'z'", 0, "z", 1);
    char out[8];
    sql_token t = first_of("`q`", 0);
    assert_int_equal(sql_tok_string(&t, "`q`", 0, out), 0); /* not a string */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bare_and_quoted), cmocka_unit_test(doubled_quotes),
        cmocka_unit_test(backslashes),     cmocka_unit_test(lengths_at_the_bound),
        cmocka_unit_test(malformed),       cmocka_unit_test(string_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
