/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sql/name.c - the one reader of a name token (see sql/name.h).
 */
#include "myrewrite/sql/token_value.h"

#include <string.h>

/* The body of a quoted identifier p[0..n) (p[0] the quote), undoubled. */
static bool unquote(const char *p, size_t n, char *dst, size_t cap)
{
    size_t w = 0;
    if (n < 3 || p[n - 1] != p[0])
        return false; /* empty, or no closing quote */
    for (size_t i = 1; i + 1 < n; i++) {
        if (p[i] == p[0] && (i + 2 >= n || p[++i] != p[0]))
            return false; /* a lone quote: not one name */
        if (w + 1 >= cap)
            return false;
        dst[w++] = p[i];
    }
    dst[w] = '\0';
    return true;
}

bool sql_tok_name(const sql_token *t, const char *text, char *dst, size_t cap)
{
    const char *p = text + t->off;
    if (cap == 0)
        return false;
    if (t->kind == SQL_TOK_QIDENT)
        return unquote(p, t->len, dst, cap);
    if (t->kind != SQL_TOK_WORD || (sql_kw_flags((sql_kw)t->id) & SQL_KWF_RESERVED) ||
        t->len == 0 || t->len >= cap)
        return false;
    memcpy(dst, p, t->len);
    dst[t->len] = '\0';
    return true;
}

/* What the server makes of `\c` in a string (sql_lex.cc's unescape). */
static size_t unescape(char c, char *out)
{
    switch (c) {
    case '0': out[0] = '\0'; return 1;
    case 'b': out[0] = '\b'; return 1;
    case 'n': out[0] = '\n'; return 1;
    case 'r': out[0] = '\r'; return 1;
    case 't': out[0] = '\t'; return 1;
    case 'Z': out[0] = '\032'; return 1;
    case '%':
    case '_':
        out[0] = '\\'; /* kept for LIKE */
        out[1] = c;
        return 2;
    default: out[0] = c; return 1;
    }
}

size_t sql_tok_string(const sql_token *t, const char *text, unsigned lex_flags, char *out)
{
    const char *p = text + t->off;
    size_t len = t->len, n = 0, i = 0, mb;
    bool backslash = !(lex_flags & SQL_LEX_NO_BACKSLASH_ESCAPES);
    while (i < len && p[i] != '\'' && p[i] != '"') /* past a charset introducer */
        i++;
    if (t->kind != SQL_TOK_STRING || len - i < 2)
        return 0;
    char q = p[i];
    for (i++; i + 1 < len; i++) {
        if ((mb = sql_lex_mb_len(lex_flags, p, len - 1, i)) > 1) {
            memcpy(out + n, p + i, mb);
            n += mb;
            i += mb - 1;
        } else if (p[i] == '\\' && backslash && i + 2 < len)
            n += unescape(p[++i], out + n);
        else if (p[i] == q) /* doubled: the lexer ended the token otherwise */
            out[n++] = p[i++];
        else
            out[n++] = p[i];
    }
    return n;
}
