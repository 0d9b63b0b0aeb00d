/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sql/charset_guard.c - the client character sets the byte lexer cannot read,
 * and the SET statements that change a session's (sql/charset_guard.h).
 */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/sql/charset_guard.h"
#include "myrewrite/sql/lexer.h"

/* Collations of big5, cp932, gbk, gb18030 and sjis as MariaDB 10.11 and
 * MySQL 8 number them (information_schema.COLLATIONS); the handshake
 * carries the low byte only, COM_CHANGE_USER all 16 bits. */
static const struct {
    unsigned id;
    const char *charset;
} unsafe_collations[] = {
    {1, "big5"},      {13, "sjis"},   {28, "gbk"},     {84, "big5"},     {87, "gbk"},
    {88, "sjis"},     {95, "cp932"},  {96, "cp932"},   {248, "gb18030"}, {249, "gb18030"},
    {250, "gb18030"}, {1025, "big5"}, {1037, "sjis"},  {1052, "gbk"},    {1108, "big5"},
    {1111, "gbk"},    {1112, "sjis"}, {1119, "cp932"}, {1120, "cp932"},
};

static const char *const unsafe_charsets[] = {"big5", "cp932", "gb18030", "gbk", "sjis"};

const char *mr_charset_unsafe_collation(unsigned id)
{
    for (size_t i = 0; i < sizeof unsafe_collations / sizeof unsafe_collations[0]; i++)
        if (unsafe_collations[i].id == id)
            return unsafe_collations[i].charset;
    return NULL;
}

const char *mr_charset_unsafe_name(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof unsafe_charsets / sizeof unsafe_charsets[0]; i++)
        if (strlen(unsafe_charsets[i]) == len && strncasecmp(unsafe_charsets[i], name, len) == 0)
            return unsafe_charsets[i];
    return NULL;
}

/* ---- SET statements ------------------------------------------------------------------ */

typedef enum want {
    WANT_NOTHING,
    WANT_SET,   /* after CHARACTER: SET makes it CHARACTER SET */
    WANT_EQ,    /* after character_set_client: = or := */
    WANT_VALUE, /* the character set's name (or number) */
    WANT_CALL,  /* after a name taken as the value: `(` makes it a function call */
} want;

typedef struct scan {
    const char *sql;
    mr_charset_change result;
    const char *name;
    bool in_set; /* inside a SET statement */
    bool global; /* the last scope keyword was GLOBAL: not this session's */
    want want;
} scan;

static bool word_is(const scan *sc, const sql_token *t, const char *w)
{
    return sql_tok_is_word(t, sc->sql, w);
}

/* character_set_client, @@character_set_client, @@session.… (scope noted). */
static bool names_client_charset(scan *sc, const sql_token *t)
{
    const char *p = sc->sql + t->off;
    size_t n = t->len;
    if (t->kind == SQL_TOK_SYSVAR) {
        p += 2, n -= 2;
        bool global = n > 7 && strncasecmp(p, "global.", 7) == 0;
        size_t dot = global                                        ? 7
                     : n > 8 && strncasecmp(p, "session.", 8) == 0 ? 8
                     : n > 6 && strncasecmp(p, "local.", 6) == 0   ? 6
                                                                   : 0;
        p += dot, n -= dot;
        if (dot)
            sc->global = global;
    } else if (t->kind != SQL_TOK_WORD) {
        return false;
    }
    return n == 20 && strncasecmp(p, "character_set_client", 20) == 0;
}

/* The value of a charset assignment: a name, a quoted name or a number. */
static void take_value(scan *sc, const sql_token *t)
{
    const char *p = sc->sql + t->off;
    size_t n = t->len;
    const char *unsafe;
    if (t->kind == SQL_TOK_NUMBER) {
        unsigned id = 0;
        for (size_t i = 0; i < n && id < 100000; i++)
            id = p[i] >= '0' && p[i] <= '9' ? id * 10 + (unsigned)(p[i] - '0') : 100000;
        unsafe = mr_charset_unsafe_collation(id);
    } else if ((t->kind == SQL_TOK_STRING || t->kind == SQL_TOK_QIDENT) &&
               !(t->flags & SQL_TF_INTRODUCER) && n >= 2) {
        unsafe = mr_charset_unsafe_name(p + 1, n - 2);
    } else if (t->kind == SQL_TOK_WORD && t->id != SQL_KW_DEFAULT) {
        unsafe = mr_charset_unsafe_name(p, n);
    } else {
        /* DEFAULT, a variable, an expression: the value is not known here,
         * and a wrong guess could rewrite a multibyte statement's bytes */
        unsafe = MR_CHARSET_UNKNOWN;
    }
    if (sc->global)
        return; /* the server-wide default, not this session's */
    sc->result = unsafe ? MR_CHARSET_UNSAFE : MR_CHARSET_SAFE;
    sc->name = unsafe;
    if (t->kind == SQL_TOK_WORD)
        sc->want = WANT_CALL;
}

/* Moves the little state machine over one token of a SET statement. */
static void set_token(scan *sc, const sql_token *t)
{
    want w = sc->want;
    sc->want = WANT_NOTHING;
    if (w == WANT_VALUE) {
        take_value(sc, t);
        return;
    }
    if (w == WANT_CALL && t->kind == SQL_TOK_LPAREN) { /* CONCAT(...): not a name after all */
        sc->result = MR_CHARSET_UNSAFE;
        sc->name = MR_CHARSET_UNKNOWN;
        return;
    }
    if (w == WANT_SET && t->kind == SQL_TOK_WORD && t->id == SQL_KW_SET) {
        sc->want = WANT_VALUE;
        return;
    }
    if (w == WANT_EQ && t->kind == SQL_TOK_OP && (t->id == SQL_OP_EQ || t->id == SQL_OP_ASSIGN)) {
        sc->want = WANT_VALUE;
        return;
    }
    if (word_is(sc, t, "GLOBAL") || word_is(sc, t, "PERSIST"))
        sc->global = true;
    else if (word_is(sc, t, "SESSION") || word_is(sc, t, "LOCAL"))
        sc->global = false;
    else if (word_is(sc, t, "NAMES") || word_is(sc, t, "CHARSET"))
        sc->want = sc->global ? WANT_NOTHING : WANT_VALUE; /* NAMES has no GLOBAL form */
    else if (word_is(sc, t, "CHARACTER"))
        sc->want = WANT_SET;
    else if (names_client_charset(sc, t))
        sc->want = WANT_EQ;
}

static void scan_text(scan *sc, size_t off, size_t len, unsigned lex_flags, bool nested)
{
    sql_lexer lx;
    sql_token t;
    bool start = true;
    sql_lexer_init(&lx, sc->sql + off, len, lex_flags | SQL_LEX_SKIP_COMMENTS);
    while (sql_lexer_next(&lx, &t)) {
        t.off += (uint32_t)off;
        size_t boff, blen;
        if (!nested && sql_exec_body(&t, sc->sql, &boff, &blen)) {
            scan outer = *sc; /* the comment's text is read as statements of its own */
            scan_text(sc, boff, blen, lex_flags, true);
            sc->in_set = outer.in_set && !start, sc->global = outer.global, sc->want = outer.want;
            start = false;
            continue;
        }
        if (t.kind == SQL_TOK_SEMI) {
            start = true;
            continue;
        }
        if (start) {
            start = false;
            sc->in_set = t.kind == SQL_TOK_WORD && t.id == SQL_KW_SET;
            sc->global = false;
            sc->want = WANT_NOTHING;
            continue;
        }
        if (sc->in_set)
            set_token(sc, &t);
    }
}

/* Every form names NAMES, CHARSET, CHARACTER SET or character_set_client:
 * without "name" or "char" in any case the text needs no lexing. */
static bool may_change(const char *sql, size_t len)
{
    for (size_t i = 0; i + 4 <= len; i++) {
        unsigned char c = (unsigned char)sql[i] | 0x20;
        if ((c == 'n' && strncasecmp(sql + i, "name", 4) == 0) ||
            (c == 'c' && strncasecmp(sql + i, "char", 4) == 0))
            return true;
    }
    return false;
}

mr_charset_change mr_charset_statement(const char *sql, size_t len, unsigned lex_flags,
                                       const char **name)
{
    scan sc = {.sql = sql, .result = MR_CHARSET_SAME};
    *name = NULL;
    if (!may_change(sql, len))
        return MR_CHARSET_SAME;
    scan_text(&sc, 0, len, lex_flags, false);
    *name = sc.name;
    return sc.result;
}
