/* test_sql_lexer.c - unit tests for the SQL tokenizer and splitter:
 * a corpus of hostile statements with expected token kinds and texts,
 * keyword table checks, bulk-API outcomes, splitting, and a seeded
 * random-input sweep checking span invariants.
 * Thread: single-threaded test program; owns only its stack data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/sql/lexer.h"

#define W SQL_TOK_WORD
#define QI SQL_TOK_QIDENT
#define STR SQL_TOK_STRING
#define HEX SQL_TOK_HEX
#define BIT SQL_TOK_BIT
#define NUM SQL_TOK_NUMBER
#define PRM SQL_TOK_PARAM
#define VAR SQL_TOK_VAR
#define SYS SQL_TOK_SYSVAR
#define OP SQL_TOK_OP
#define LP SQL_TOK_LPAREN
#define RP SQL_TOK_RPAREN
#define CM SQL_TOK_COMMA
#define SC SQL_TOK_SEMI
#define DOT SQL_TOK_DOT
#define COM SQL_TOK_COMMENT
#define EXE SQL_TOK_EXEC_COMMENT
#define ERR SQL_TOK_ERROR

typedef struct exp_tok {
    int kind;
    const char *text;
} exp_tok;

typedef struct lex_case {
    const char *sql;
    size_t len; /* 0: strlen(sql) */
    unsigned flags;
    sql_rc rc;
    exp_tok toks[12]; /* terminated by kind 0 */
} lex_case;

/* Literal with its exact length, for inputs holding NUL bytes. */
#define BIN(s) s, sizeof(s) - 1

static const lex_case corpus[] = {
    {"SELECT a FROM t", 0, 0, SQL_OK, {{W, "SELECT"}, {W, "a"}, {W, "FROM"}, {W, "t"}}},
    /* embedded quotes, both styles, both escapes */
    {"'it''s' 'it\\'s' \"say \"\"hi\"\"\" \"a\\\"b\"",
     0,
     0,
     SQL_OK,
     {{STR, "'it''s'"}, {STR, "'it\\'s'"}, {STR, "\"say \"\"hi\"\"\""}, {STR, "\"a\\\"b\""}}},
    /* escaped backslash right before the closing quote */
    {"'abc\\\\' x", 0, 0, SQL_OK, {{STR, "'abc\\\\'"}, {W, "x"}}},
    /* backslash at the end escapes the quote: unterminated */
    {"'abc\\'", 0, 0, SQL_ERR, {{ERR, "'abc\\'"}}},
    /* ... unless backslashes are ordinary bytes */
    {"'abc\\' x", 0, SQL_LEX_NO_BACKSLASH_ESCAPES, SQL_OK, {{STR, "'abc\\'"}, {W, "x"}}},
    {"'a\\", 0, 0, SQL_ERR, {{ERR, "'a\\"}}},
    /* comment openers inside literals are literal text */
    {"'--' '/*' \"*/\" '#' x",
     0,
     0,
     SQL_OK,
     {{STR, "'--'"}, {STR, "'/*'"}, {STR, "\"*/\""}, {STR, "'#'"}, {W, "x"}}},
    {"`a``b` `--` `x'y`", 0, 0, SQL_OK, {{QI, "`a``b`"}, {QI, "`--`"}, {QI, "`x'y`"}}},
    /* multibyte UTF-8 in strings, names and quoted names */
    {"SELECT '\xc3\xbcn\xc3\xaf\xf0\x9f\x98\x80', \xc3\xbcn\xc3\xaf, `\xf0\x9f\x98\x80`",
     0,
     0,
     SQL_OK,
     {{W, "SELECT"},
      {STR, "'\xc3\xbcn\xc3\xaf\xf0\x9f\x98\x80'"},
      {CM, ","},
      {W, "\xc3\xbcn\xc3\xaf"},
      {CM, ","},
      {QI, "`\xf0\x9f\x98\x80`"}}},
    /* invalid UTF-8 inside and outside strings: bytes pass through */
    {"'\xff\xc3' \xff\xc3 x\xc3",
     0,
     0,
     SQL_OK,
     {{STR, "'\xff\xc3'"}, {W, "\xff\xc3"}, {W, "x\xc3"}}},
    /* NUL outside a string is a stray byte (inside: test_nul_in_string) */
    {BIN("a \0 b"), 0, SQL_ERR, {{W, "a"}, {ERR, ""}}},
    {"a \\ b", 0, 0, SQL_ERR, {{W, "a"}, {ERR, "\\"}}},
    /* unterminated constructs run to the end */
    {"SELECT 'abc", 0, 0, SQL_ERR, {{W, "SELECT"}, {ERR, "'abc"}}},
    {"SELECT \"abc", 0, 0, SQL_ERR, {{W, "SELECT"}, {ERR, "\"abc"}}},
    {"SELECT `abc", 0, 0, SQL_ERR, {{W, "SELECT"}, {ERR, "`abc"}}},
    {"SELECT 1 /* abc *", 0, 0, SQL_ERR, {{W, "SELECT"}, {NUM, "1"}, {ERR, "/* abc *"}}},
    {"SELECT /*!50100 abc", 0, 0, SQL_ERR, {{W, "SELECT"}, {ERR, "/*!50100 abc"}}},
    {"SELECT /*! 'x */", 0, 0, SQL_ERR, {{W, "SELECT"}, {ERR, "/*! 'x */"}}},
    {"X'4a", 0, 0, SQL_ERR, {{ERR, "X'4a"}}},
    /* comments */
    {"-- x\nSELECT", 0, 0, SQL_OK, {{COM, "-- x"}, {W, "SELECT"}}},
    {"a--1", 0, 0, SQL_OK, {{W, "a"}, {OP, "-"}, {OP, "-"}, {NUM, "1"}}},
    {"a --\tx\nb --", 0, 0, SQL_OK, {{W, "a"}, {COM, "--\tx"}, {W, "b"}, {COM, "--"}}},
    {"1 #x\r\n2 /* c */ 3 /*+ HINT(t) */",
     0,
     0,
     SQL_OK,
     {{NUM, "1"},
      {COM, "#x\r"},
      {NUM, "2"},
      {COM, "/* c */"},
      {NUM, "3"},
      {COM, "/*+ HINT(t) */"}}},
    {"/**/ /*/ x */ y", 0, 0, SQL_OK, {{COM, "/**/"}, {COM, "/*/ x */"}, {W, "y"}}},
    /* executable comments stay whole */
    {"SELECT /*!50100 STRAIGHT_JOIN */ a /*M!100100 x */ /*!*/",
     0,
     0,
     SQL_OK,
     {{W, "SELECT"},
      {EXE, "/*!50100 STRAIGHT_JOIN */"},
      {W, "a"},
      {EXE, "/*M!100100 x */"},
      {EXE, "/*!*/"}}},
    {"/*! '*/' */ x", 0, 0, SQL_OK, {{EXE, "/*! '*/' */"}, {W, "x"}}},
    {"/*!40101 a /* b */ c */ d", 0, 0, SQL_OK, {{EXE, "/*!40101 a /* b */ c */"}, {W, "d"}}},
    /* introducers and prefixed literals */
    {"_utf8mb4'x' _utf8mb4 'y' _latin1 X'41' _binary 0x41 N'n' n'm' _foo'z'",
     0,
     0,
     SQL_OK,
     {{STR, "_utf8mb4'x'"},
      {STR, "_utf8mb4 'y'"},
      {HEX, "_latin1 X'41'"},
      {HEX, "_binary 0x41"},
      {STR, "N'n'"},
      {STR, "n'm'"},
      {W, "_foo"},
      {STR, "'z'"}}},
    {"X'4A' x'4a' 0x4A 0X4A b'01' 0b01 0b2 0x 0x1g",
     0,
     0,
     SQL_OK,
     {{HEX, "X'4A'"},
      {HEX, "x'4a'"},
      {HEX, "0x4A"},
      {W, "0X4A"},
      {BIT, "b'01'"},
      {BIT, "0b01"},
      {W, "0b2"},
      {W, "0x"},
      {W, "0x1g"}}},
    {"X'4'", 0, 0, SQL_ERR, {{ERR, "X'4'"}}},
    {"b'012'", 0, 0, SQL_ERR, {{ERR, "b'012'"}}},
    /* numbers, and names that start with digits */
    {"1 1.5 .5 1e10 1.5E-3 1.e5 1e 1ea 123abc 2e+3",
     0,
     0,
     SQL_OK,
     {{NUM, "1"},
      {NUM, "1.5"},
      {NUM, ".5"},
      {NUM, "1e10"},
      {NUM, "1.5E-3"},
      {NUM, "1.e5"},
      {W, "1e"},
      {W, "1ea"},
      {W, "123abc"},
      {NUM, "2e+3"}}},
    {"db.1t t.5 a.b",
     0,
     0,
     SQL_OK,
     {{W, "db"},
      {DOT, "."},
      {W, "1t"},
      {W, "t"},
      {DOT, "."},
      {W, "5"},
      {W, "a"},
      {DOT, "."},
      {W, "b"}}},
    /* placeholders and variables */
    {"? @a @'b c' @`d` @@global.x @@y 'u'@'h' @",
     0,
     0,
     SQL_OK,
     {{PRM, "?"},
      {VAR, "@a"},
      {VAR, "@'b c'"},
      {VAR, "@`d`"},
      {SYS, "@@global.x"},
      {SYS, "@@y"},
      {STR, "'u'"},
      {VAR, "@'h'"},
      {OP, "@"}}},
    /* operators: longest match */
    {"<=> <= >= <> != := || && << >> ->> ->",
     0,
     0,
     SQL_OK,
     {{OP, "<=>"},
      {OP, "<="},
      {OP, ">="},
      {OP, "<>"},
      {OP, "!="},
      {OP, ":="},
      {OP, "||"},
      {OP, "&&"},
      {OP, "<<"},
      {OP, ">>"},
      {OP, "->>"},
      {OP, "->"}}},
    {"a=b<c>d!e~f^",
     0,
     0,
     SQL_OK,
     {{W, "a"},
      {OP, "="},
      {W, "b"},
      {OP, "<"},
      {W, "c"},
      {OP, ">"},
      {W, "d"},
      {OP, "!"},
      {W, "e"},
      {OP, "~"},
      {W, "f"},
      {OP, "^"}}},
    {"g%h{i}*/+-",
     0,
     0,
     SQL_OK,
     {{W, "g"},
      {OP, "%"},
      {W, "h"},
      {OP, "{"},
      {W, "i"},
      {OP, "}"},
      {OP, "*"},
      {OP, "/"},
      {OP, "+"},
      {OP, "-"}}},
    {"f(a,b);.",
     0,
     0,
     SQL_OK,
     {{W, "f"}, {LP, "("}, {W, "a"}, {CM, ","}, {W, "b"}, {RP, ")"}, {SC, ";"}, {DOT, "."}}},
    /* sql_mode ANSI_QUOTES */
    {"\"a\"\"b\" 'c'", 0, SQL_LEX_ANSI_QUOTES, SQL_OK, {{QI, "\"a\"\"b\""}, {STR, "'c'"}}},
    {"\"a\\\"", 0, SQL_LEX_ANSI_QUOTES, SQL_OK, {{QI, "\"a\\\""}}},
    {"", 0, 0, SQL_OK, {{0, NULL}}},
    {" \t\r\n\v\f", 0, 0, SQL_OK, {{0, NULL}}},
};

static void check_case(const lex_case *c)
{
    sql_token t[32];
    size_t n = c->len ? c->len : strlen(c->sql), count = 0;
    sql_rc rc = sql_lex(c->sql, n, c->flags, t, 32, &count);
    size_t want = 0;
    while (want < 12 && c->toks[want].kind)
        want++;
    if (rc != c->rc || count != want)
        print_error("case \"%s\": rc %d count %zu\n", c->sql, rc, count);
    assert_int_equal(rc, c->rc);
    assert_int_equal(count, want);
    for (size_t i = 0; i < want; i++) {
        const char *text = c->sql + t[i].off;
        size_t elen = strlen(c->toks[i].text);
        if (t[i].kind != c->toks[i].kind || (t[i].len != elen && c->toks[i].kind != ERR) ||
            memcmp(text, c->toks[i].text, elen) != 0)
            print_error("case \"%s\" token %zu: kind %d \"%.*s\"\n", c->sql, i, t[i].kind,
                        (int)t[i].len, text);
        assert_int_equal(t[i].kind, c->toks[i].kind);
        assert_memory_equal(text, c->toks[i].text, elen);
        if (c->toks[i].kind != ERR)
            assert_int_equal(t[i].len, elen);
    }
}

static void test_corpus(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++)
        check_case(&corpus[i]);
}

/* NUL inside a string: the string token spans it, by length. */
static void test_nul_in_string(void **state)
{
    (void)state;
    static const char s[] = "'a\0b' c";
    sql_token t[4];
    size_t n;
    assert_int_equal(sql_lex(s, sizeof s - 1, 0, t, 4, &n), SQL_OK);
    assert_int_equal(n, 2);
    assert_int_equal(t[0].len, 5);
    assert_int_equal(t[1].off, 6);
}

static void test_token_ids(void **state)
{
    (void)state;
    const char *s = "select Update dElEtE mode `select` x <=> :=";
    sql_token t[16];
    size_t n;
    assert_int_equal(sql_lex(s, strlen(s), 0, t, 16, &n), SQL_OK);
    assert_int_equal(n, 8);
    assert_int_equal(t[0].id, SQL_KW_SELECT);
    assert_int_equal(t[1].id, SQL_KW_UPDATE);
    assert_int_equal(t[2].id, SQL_KW_DELETE);
    assert_int_equal(t[3].id, SQL_KW_MODE);
    assert_int_equal(t[4].id, SQL_KW_NONE); /* quoted: never a keyword */
    assert_int_equal(t[5].id, SQL_KW_NONE);
    assert_int_equal(t[6].id, SQL_OP_NSEQ);
    assert_int_equal(t[7].id, SQL_OP_ASSIGN);
}

static void test_token_flags(void **state)
{
    (void)state;
    const char *s = "'a''b' \"c\" _utf8mb4'd' N'e' 'f' /*+ h */ /* i */";
    sql_token t[16];
    size_t n;
    assert_int_equal(sql_lex(s, strlen(s), 0, t, 16, &n), SQL_OK);
    assert_int_equal(n, 7);
    assert_true(t[0].flags & SQL_TF_ESCAPED);
    assert_true(t[1].flags & SQL_TF_DQUOTE);
    assert_true(t[2].flags & SQL_TF_INTRODUCER);
    assert_true(t[3].flags & SQL_TF_INTRODUCER);
    assert_int_equal(t[4].flags, 0);
    assert_true(t[5].flags & SQL_TF_HINT);
    assert_false(t[6].flags & SQL_TF_HINT);
}

static void test_error_ids(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        sql_lex_err e;
    } cases[] = {
        {"'x", SQL_LEXERR_UNTERMINATED_STRING},    {"`x", SQL_LEXERR_UNTERMINATED_IDENT},
        {"/* x", SQL_LEXERR_UNTERMINATED_COMMENT}, {"/*!x", SQL_LEXERR_UNTERMINATED_COMMENT},
        {"X'zz'", SQL_LEXERR_BAD_LITERAL},         {"\x01", SQL_LEXERR_STRAY_BYTE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sql_token t[4];
        size_t n;
        assert_int_equal(sql_lex(cases[i].s, strlen(cases[i].s), 0, t, 4, &n), SQL_ERR);
        assert_int_equal(t[n - 1].kind, SQL_TOK_ERROR);
        assert_int_equal(t[n - 1].id, cases[i].e);
    }
}

static void test_keyword_table(void **state)
{
    (void)state;
    for (unsigned id = 1; id < SQL_KW__COUNT; id++) {
        const char *name = sql_kw_name((sql_kw)id);
        char lower[SQL_KW_MAXLEN + 1];
        size_t len = strlen(name);
        assert_true(len > 0 && len <= SQL_KW_MAXLEN);
        for (size_t i = 0; i <= len; i++)
            lower[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
        if (sql_kw_lookup(name, len) != (sql_kw)id)
            print_error("keyword %s not found: list out of initial-letter order?\n", name);
        assert_int_equal(sql_kw_lookup(name, len), id);
        assert_int_equal(sql_kw_lookup(lower, len), id);
        if (id > 1) /* grouped by initial, as the lookup requires */
            assert_true(sql_kw_name((sql_kw)(id - 1))[0] <= name[0]);
    }
    assert_int_equal(sql_kw_lookup("selec", 5), SQL_KW_NONE);
    assert_int_equal(sql_kw_lookup("selectx", 7), SQL_KW_NONE);
    assert_int_equal(sql_kw_lookup("_select", 7), SQL_KW_NONE);
    assert_int_equal(sql_kw_lookup("s\xc3\xa9lect", 7), SQL_KW_NONE);
    assert_int_equal(sql_kw_lookup("zzz", 3), SQL_KW_NONE);
    assert_int_equal(sql_kw_lookup("", 0), SQL_KW_NONE);
    assert_string_equal(sql_kw_name(SQL_KW_NONE), "");
    assert_true(sql_kw_flags(SQL_KW_SELECT) & SQL_KWF_RESERVED);
    assert_false(sql_kw_flags(SQL_KW_MODE) & SQL_KWF_RESERVED);
    assert_true(sql_kw_flags(SQL_KW_TRUE) & SQL_KWF_LITERAL);
}

static void test_bulk_partial(void **state)
{
    (void)state;
    const char *s = "SELECT a, b FROM t";
    sql_token t[8];
    size_t n;
    assert_int_equal(sql_lex(s, strlen(s), 0, t, 3, &n), SQL_PARTIAL);
    assert_int_equal(n, 3);
    assert_int_equal(sql_lex(s, strlen(s), 0, t, 6, &n), SQL_OK);
    assert_int_equal(n, 6);
    assert_int_equal(sql_lex(s, strlen(s), 0, t, 0, &n), SQL_PARTIAL);
    assert_int_equal(n, 0);
}

static void test_skip_comments(void **state)
{
    (void)state;
    const char *s = "/* a */ SELECT /*+ BKA(t) */ -- b\n 1 # c\n /*!50000 d */";
    sql_token t[8];
    size_t n;
    assert_int_equal(sql_lex(s, strlen(s), SQL_LEX_SKIP_COMMENTS, t, 8, &n), SQL_OK);
    assert_int_equal(n, 4);
    assert_int_equal(t[0].kind, SQL_TOK_WORD);
    assert_int_equal(t[1].kind, SQL_TOK_COMMENT);
    assert_true(t[1].flags & SQL_TF_HINT);
    assert_int_equal(t[2].kind, SQL_TOK_NUMBER);
    assert_int_equal(t[3].kind, SQL_TOK_EXEC_COMMENT);
}

static void test_exec_body(void **state)
{
    (void)state;
    const char *s = "/*!50100 STRAIGHT_JOIN */ /*M!100100 x*/ /*!*/";
    sql_token t[4];
    size_t n, off, len;
    assert_int_equal(sql_lex(s, strlen(s), 0, t, 4, &n), SQL_OK);
    assert_int_equal(n, 3);
    assert_true(sql_exec_body(&t[0], s, &off, &len));
    assert_int_equal(len, strlen(" STRAIGHT_JOIN "));
    assert_memory_equal(s + off, " STRAIGHT_JOIN ", len);
    assert_true(sql_exec_body(&t[1], s, &off, &len));
    assert_memory_equal(s + off, " x", len);
    assert_true(sql_exec_body(&t[2], s, &off, &len));
    assert_int_equal(len, 0);
    sql_token w = {0, 1, SQL_TOK_WORD, 0, 0};
    assert_false(sql_exec_body(&w, s, &off, &len));
}

/* The iterator and the bulk call agree, and lookahead by copy works. */
static void test_iterator(void **state)
{
    (void)state;
    const char *s = "SELECT 1, 'a' -- c\n";
    sql_lexer lx;
    sql_token a, b;
    sql_lexer_init(&lx, s, strlen(s), 0);
    assert_true(sql_lexer_next(&lx, &a));
    sql_lexer peek = lx;
    assert_true(sql_lexer_next(&peek, &b));
    assert_int_equal(b.kind, SQL_TOK_NUMBER);
    assert_true(sql_lexer_next(&lx, &a));
    assert_int_equal(a.off, b.off);
    int left = 0;
    while (sql_lexer_next(&lx, &a))
        left++;
    assert_int_equal(left, 3);
    assert_false(sql_lexer_next(&lx, &a));
}

/* ---- splitting ------------------------------------------------------------ */

static void check_split(const char *s, unsigned flags, sql_rc rc, const char *const *want,
                        size_t nwant)
{
    sql_span sp[16];
    size_t n;
    sql_rc got = sql_split(s, strlen(s), flags, sp, 16, &n);
    if (got != rc || n != nwant)
        print_error("split \"%s\": rc %d n %zu\n", s, got, n);
    assert_int_equal(got, rc);
    assert_int_equal(n, nwant);
    for (size_t i = 0; i < n; i++) {
        if (sp[i].len != strlen(want[i]) || memcmp(s + sp[i].off, want[i], sp[i].len))
            print_error("span %zu: \"%.*s\"\n", i, (int)sp[i].len, s + sp[i].off);
        assert_int_equal(sp[i].len, strlen(want[i]));
        assert_memory_equal(s + sp[i].off, want[i], sp[i].len);
    }
}

static void test_split(void **state)
{
    (void)state;
    const char *a[] = {"SELECT 1", "SELECT ';'", "-- c\n SELECT \"x;\" /* ; */"};
    check_split("SELECT 1; SELECT ';'; -- c\n SELECT \"x;\" /* ; */ ;; ", 0, SQL_OK, a, 3);
    const char *b[] = {"/* lead */ SELECT `a;b`"};
    check_split(" /* lead */ SELECT `a;b`;\n-- trailing only\n", 0, SQL_OK, b, 1);
    const char *c[] = {"BEGIN", "UPDATE t SET a = 1", "COMMIT"};
    check_split("BEGIN; UPDATE t SET a = 1; COMMIT;", 0, SQL_OK, c, 3);
    const char *d[] = {"SELECT 1", "SELECT 'x;"};
    check_split("SELECT 1; SELECT 'x;", 0, SQL_ERR, d, 2);
    check_split("", 0, SQL_OK, NULL, 0);
    check_split(" ; ; -- x", 0, SQL_OK, NULL, 0);
    const char *e[] = {"/*!40101 SET NAMES utf8 */", "/*!40101 SET x = 1; */"};
    check_split("/*!40101 SET NAMES utf8 */;/*!40101 SET x = 1; */;", 0, SQL_OK, e, 2);
    const char *f[] = {"SELECT \"a\"", "\"b\""};
    check_split("SELECT \"a\";\"b\"", SQL_LEX_ANSI_QUOTES, SQL_OK, f, 2);
}

static void test_split_compound(void **state)
{
    (void)state;
    const char *p = "CREATE PROCEDURE p() BEGIN DECLARE x INT; IF x THEN SELECT 1; END IF; "
                    "lbl: LOOP LEAVE lbl; END LOOP lbl; SELECT CASE WHEN x THEN 1 END; "
                    "BEGIN SELECT 2; END; END";
    const char *a[] = {p, "SELECT 3"};
    char buf[512];
    snprintf(buf, sizeof buf, "%s; SELECT 3;", p);
    check_split(buf, 0, SQL_OK, a, 2);
    const char *b[] = {"BEGIN NOT ATOMIC SELECT 1; SELECT 2; END", "SELECT 4"};
    check_split("BEGIN NOT ATOMIC SELECT 1; SELECT 2; END; SELECT 4", 0, SQL_OK, b, 2);
    const char *c[] = {"CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW BEGIN SET NEW.a = 1; END",
                       "BEGIN", "COMMIT"};
    check_split("CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW BEGIN SET NEW.a = 1; END;"
                "BEGIN;COMMIT",
                0, SQL_OK, c, 3);
    const char *d[] = {"CREATE TABLE t (a INT)", "SELECT 1"};
    check_split("CREATE TABLE t (a INT); SELECT 1", 0, SQL_OK, d, 2);
}

static void test_split_partial(void **state)
{
    (void)state;
    const char *s = "SELECT 1; SELECT 2; SELECT 3";
    sql_span sp[2];
    size_t n;
    assert_int_equal(sql_split(s, strlen(s), 0, sp, 2, &n), SQL_PARTIAL);
    assert_int_equal(n, 2);
    assert_int_equal(sql_split(s, 18, 0, sp, 2, &n), SQL_OK);
    assert_int_equal(n, 2);
}

/* ---- random input: spans stay ordered, in bounds and cover all text ----- */

static uint32_t rnd(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

static void check_invariants(const char *s, size_t n, unsigned flags)
{
    sql_lexer lx;
    sql_token t;
    size_t pos = 0, tokens = 0;
    sql_lexer_init(&lx, s, n, flags);
    while (sql_lexer_next(&lx, &t)) {
        assert_true(t.off >= pos);
        assert_true(t.len > 0 || t.kind == SQL_TOK_ERROR);
        assert_true((size_t)t.off + t.len <= n);
        for (size_t i = pos; i < t.off; i++) /* only whitespace between tokens */
            assert_true(strchr(" \t\n\r\v\f", s[i]) && s[i]);
        pos = (size_t)t.off + t.len;
        assert_true(++tokens <= n);
    }
    for (size_t i = pos; i < n; i++)
        assert_true(strchr(" \t\n\r\v\f", s[i]) && s[i]);
    sql_span sp[64];
    size_t ns;
    sql_split(s, n, flags, sp, 64, &ns);
    for (size_t i = 0; i < ns; i++)
        assert_true((size_t)sp[i].off + sp[i].len <= n);
}

static void test_random_bytes(void **state)
{
    (void)state;
    static const char alphabet[] = "'\"`\\/*!-#;()?@.,=<>|&M50xXbBnN_e \n\t\xff\xc3";
    uint32_t seed = 12345;
    char buf[96];
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = rnd(&seed) % sizeof buf;
        for (size_t i = 0; i < n; i++) {
            uint32_t r = rnd(&seed);
            buf[i] = (r & 3) ? alphabet[r % (sizeof alphabet - 1)] : (char)(r >> 4);
        }
        check_invariants(buf, n, (unsigned)iter & 3);
    }
}

/* The first token of s. */
static sql_token first_of(const char *s)
{
    sql_lexer lx;
    sql_token tok;
    sql_lexer_init(&lx, s, strlen(s), 0);
    assert_true(sql_lexer_next(&lx, &tok));
    return tok;
}

static void test_token_names_and_words(void **state)
{
    (void)state;
    sql_token w = first_of("InDeX idx");
    assert_true(sql_tok_is_word(&w, "InDeX idx", "INDEX"));
    assert_false(sql_tok_is_word(&w, "InDeX idx", "INDE"));
    sql_token q = first_of("`INDEX`");
    assert_false(sql_tok_is_word(&q, "`INDEX`", "INDEX")); /* a quoted name is no keyword */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_nul_in_string),
        cmocka_unit_test(test_token_ids),
        cmocka_unit_test(test_token_flags),
        cmocka_unit_test(test_error_ids),
        cmocka_unit_test(test_keyword_table),
        cmocka_unit_test(test_bulk_partial),
        cmocka_unit_test(test_skip_comments),
        cmocka_unit_test(test_exec_body),
        cmocka_unit_test(test_iterator),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_split_compound),
        cmocka_unit_test(test_split_partial),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_token_names_and_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
