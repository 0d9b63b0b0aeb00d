/* SPDX-License-Identifier: Apache-2.0 */
/* sql/lexer.c - MySQL/MariaDB SQL tokenizer and statement splitter.
 * Thread: pure, any thread. Owns nothing; only const tables. Tokens are
 * views into the caller's text; no allocation anywhere. */
#include "myrewrite/sql/lexer.h"

#include <string.h>
#include <strings.h>

/* ---- character classes ------------------------------------------------ */

enum { C_ID = 1, C_DIG = 2, C_SP = 4, C_HEX = 8, C_KW = 16 };

/* C_ID: identifier byte (bytes >= 0x80 count, so UTF-8 and latin1 names
 * work without validation); C_KW: may appear in a keyword. */
static const uint8_t cclass[256] = {
    0,  0,  0,  0,  0,  0,  0,  0,  0,  4,  4,  4,  4,  4,  0,  0,  /* 00 */
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 10 */
    4,  0,  0,  0,  1,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  /* 20 */
    11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 0,  0,  0,  0,  0,  0,  /* 30 */
    0,  25, 25, 25, 25, 25, 25, 17, 17, 17, 17, 17, 17, 17, 17, 17, /* 40 */
    17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 0,  0,  0,  0,  17, /* 50 */
    0,  25, 25, 25, 25, 25, 25, 17, 17, 17, 17, 17, 17, 17, 17, 17, /* 60 */
    17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 17, 0,  0,  0,  0,  0,  /* 70 */
    1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  /* 80 */
    1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  /* 90 */
    1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  /* a0 */
    1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  /* b0 */
    1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  /* c0 */
    1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  /* d0 */
    1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  /* e0 */
    1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  1,  /* f0 */
};

static inline bool is_id(unsigned char c) { return cclass[c] & C_ID; }
static inline bool is_digit(unsigned char c) { return cclass[c] & C_DIG; }
static inline bool is_space(unsigned char c) { return cclass[c] & C_SP; }
static inline bool is_hex(unsigned char c) { return cclass[c] & C_HEX; }

/* ---- keywords ---------------------------------------------------------- */

/* Names are NUL-padded to 24 bytes so a lookup compares three 8-byte
 * words instead of calling memcmp: the first word rejects almost every
 * candidate. */
typedef struct kw_def {
    char name[24];
    uint8_t flags;
} kw_def;

#define R SQL_KWF_RESERVED
#define F SQL_KWF_FUNC
#define O SQL_KWF_OPERAND
#define L SQL_KWF_LITERAL
#define KW_DEF_(name, fl) {#name, (fl)},
static const kw_def kw_defs[SQL_KW__COUNT] = {{"", 0}, SQL_KEYWORDS(KW_DEF_)};
#undef KW_DEF_
#undef R
#undef F
#undef O
#undef L

/* First keyword id for each initial letter; the keyword list is grouped by
 * initial, so letter c owns ids [kw_first[c], kw_first[c + 1]). A letter
 * with no keywords repeats the next letter's start. test_keyword_table
 * fails if a keyword is added out of its letter group. */
static const uint16_t kw_first[27] = {
    SQL_KW_ALL,       SQL_KW_BEGIN,   SQL_KW_CALL,      SQL_KW_DATABASE,  SQL_KW_ELSE,
    SQL_KW_FALSE,     SQL_KW_GLOBAL,  SQL_KW_HANDLER,   SQL_KW_IF,        SQL_KW_JOIN,
    SQL_KW_KEY,       SQL_KW_LATERAL, SQL_KW_MAX,       SQL_KW_NATURAL,   SQL_KW_OF,
    SQL_KW_PARTITION, SQL_KW_QUICK,   SQL_KW_RECURSIVE, SQL_KW_SAVEPOINT, SQL_KW_TABLE,
    SQL_KW_UNION,     SQL_KW_VALUE,   SQL_KW_WHEN,      SQL_KW_XA,        SQL_KW__COUNT,
    SQL_KW__COUNT,    SQL_KW__COUNT,
};

/* Eight name bytes as one word, first byte lowest: the layout
 * pack_upper builds. */
static inline uint64_t kw_word(const char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Up to 8 keyword bytes, upper-cased, packed little-endian into *w in a
 * register (byte stores then a word load would stall on forwarding).
 * False if a byte cannot occur in a keyword. */
static inline bool pack_upper(const unsigned char *s, size_t n, uint64_t *w)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned c = s[i];
        if (!(cclass[c] & C_KW))
            return false;
        c = c >= 'a' ? c - 32 : c; /* '_' (0x5f) is below 'a' */
        v |= (uint64_t)c << (i * 8);
    }
    *w = v;
    return true;
}

sql_kw sql_kw_lookup(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    uint64_t w0 = 0, w1 = 0, w2 = 0;
    if (n == 0 || n > SQL_KW_MAXLEN || !pack_upper(u, n < 8 ? n : 8, &w0))
        return SQL_KW_NONE;
    if (n > 8 && !pack_upper(u + 8, n < 16 ? n - 8 : 8, &w1))
        return SQL_KW_NONE;
    if (n > 16 && !pack_upper(u + 16, n - 16, &w2))
        return SQL_KW_NONE;
    unsigned first = (unsigned)(w0 & 0xff);
    if (first == '_')
        return SQL_KW_NONE;
    unsigned letter = first - 'A';
    for (unsigned id = kw_first[letter]; id < kw_first[letter + 1]; id++) {
        const char *k = kw_defs[id].name;
        if (kw_word(k) == w0 && kw_word(k + 8) == w1 && kw_word(k + 16) == w2)
            return (sql_kw)id;
    }
    return SQL_KW_NONE;
}

const char *sql_kw_name(sql_kw kw) { return (unsigned)kw < SQL_KW__COUNT ? kw_defs[kw].name : ""; }

unsigned sql_kw_flags(sql_kw kw) { return (unsigned)kw < SQL_KW__COUNT ? kw_defs[kw].flags : 0; }

/* Charset names accepted as introducers when whitespace separates them from
 * the literal ("_latin1 'x'"); "_name'x'" with an unknown name stays a word
 * and a string, as a column alias would. */
static const char *const charsets[] = {
    "armscii8", "ascii",   "big5",     "binary", "cp1250",  "cp1251",  "cp1256",
    "cp1257",   "cp850",   "cp852",    "cp866",  "cp932",   "dec8",    "eucjpms",
    "euckr",    "gb18030", "gb2312",   "gbk",    "geostd8", "greek",   "hebrew",
    "hp8",      "keybcs2", "koi8r",    "koi8u",  "latin1",  "latin2",  "latin5",
    "latin7",   "macce",   "macroman", "sjis",   "swe7",    "tis620",  "ucs2",
    "ujis",     "utf16",   "utf16le",  "utf32",  "utf8",    "utf8mb3", "utf8mb4",
};

/* Case-insensitive match of s[0..n) against a lower-case literal. */
static bool ieq(const unsigned char *s, size_t n, const char *lit)
{
    size_t k = 0;
    while (k < n && lit[k] && (s[k] | 0x20) == (unsigned char)lit[k])
        k++;
    return k == n && lit[k] == '\0';
}

unsigned sql_lex_mb_of(const char *charset, size_t n)
{
    static const struct {
        const char *name;
        unsigned mb;
    } mb[] = {{"big5", SQL_LEX_MB_BIG5},
              {"cp932", SQL_LEX_MB_SJIS},
              {"gb18030", SQL_LEX_MB_GB18030},
              {"gbk", SQL_LEX_MB_GBK},
              {"sjis", SQL_LEX_MB_SJIS}};
    for (size_t i = 0; charset && i < sizeof mb / sizeof mb[0]; i++)
        if (ieq((const unsigned char *)charset, n, mb[i].name))
            return mb[i].mb;
    return 0;
}

static bool is_charset(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < sizeof charsets / sizeof charsets[0]; i++)
        if (ieq(s, n, charsets[i]))
            return true;
    return false;
}

/* ---- scanners: each takes the start position and returns the end ------ */

#define NPOS ((size_t)-1)

/* The lexer's multibyte rule (SQL_LEX_MB_*, 0: every byte is a character). */
#define MB(lx) ((lx)->flags & SQL_LEX_MB_MASK)

/* The length of the multibyte character at s[p] in the character set mb
 * (SQL_LEX_MB_*), 0 when s[p] does not start one: a lead byte needs a valid
 * trail byte after it, as the server's ismbchar checks, or it is read as a
 * byte of its own. Ranges are MariaDB's (strings/ctype-big5.c, -sjis.c,
 * -cp932.c, -gbk.c; gb18030 as MySQL 8 has it). */
static size_t mb_len(unsigned mb, const unsigned char *s, size_t n, size_t p)
{
    unsigned c = s[p], d = p + 1 < n ? s[p + 1] : 0;
    bool ascii_trail = d >= 0x40 && d <= 0x7e;
    switch (mb) {
    case SQL_LEX_MB_BIG5:
        return c >= 0xa1 && c <= 0xf9 && (ascii_trail || (d >= 0xa1 && d <= 0xfe)) ? 2 : 0;
    case SQL_LEX_MB_SJIS:
        return ((c >= 0x81 && c <= 0x9f) || (c >= 0xe0 && c <= 0xfc)) &&
                       (ascii_trail || (d >= 0x80 && d <= 0xfc))
                   ? 2
                   : 0;
    case SQL_LEX_MB_GB18030:
        if (c >= 0x81 && c <= 0xfe && d >= 0x30 && d <= 0x39 && p + 3 < n && s[p + 2] >= 0x81 &&
            s[p + 2] <= 0xfe && s[p + 3] >= 0x30 && s[p + 3] <= 0x39)
            return 4; /* its two-byte characters are gbk's */
        /* fall through */
    case SQL_LEX_MB_GBK:
        return c >= 0x81 && c <= 0xfe && (ascii_trail || (d >= 0x80 && d <= 0xfe)) ? 2 : 0;
    default: return 0;
    }
}

size_t sql_lex_mb_len(unsigned lex_flags, const char *s, size_t n, size_t p)
{
    unsigned mb = lex_flags & SQL_LEX_MB_MASK;
    return mb && (unsigned char)s[p] >= 0x80 ? mb_len(mb, (const unsigned char *)s, n, p) : 0;
}

/* Quoted run starting at s[p] == q. Doubled quotes always escape; '\'
 * escapes only when bs is set; a multibyte character (mb) is skipped whole,
 * so its trail byte never ends or escapes anything. Returns the end or NPOS
 * if unterminated. */
static size_t scan_quoted(const unsigned char *s, size_t n, size_t p, unsigned char q, bool bs,
                          unsigned mb, bool *escaped)
{
    p++;
    for (;;) {
        size_t l;
        if (!mb) /* the byte reading: its own loop, the common case */
            while (p < n && s[p] != q && !(bs && s[p] == '\\'))
                p++;
        else
            while (p < n && s[p] != q && !(bs && s[p] == '\\'))
                p += s[p] >= 0x80 && (l = mb_len(mb, s, n, p)) > 0 ? l : 1;
        if (p >= n)
            return NPOS;
        if (s[p] == '\\') {
            *escaped = true;
            p += 2;
            if (p > n)
                return NPOS;
            continue;
        }
        if (p + 1 < n && s[p + 1] == q) {
            *escaped = true;
            p += 2;
            continue;
        }
        return p + 1;
    }
}

/* A name's bytes from p in a multibyte character set: a character counts
 * whole, whatever its trail byte is. */
static size_t skip_ident_mb(const unsigned char *s, size_t n, size_t p, unsigned mb)
{
    size_t l;
    while (p < n && is_id(s[p]))
        p += s[p] >= 0x80 && (l = mb_len(mb, s, n, p)) > 0 ? l : 1;
    return p;
}

/* A name's bytes from p (kept small: it is inlined in the hot path). */
static inline size_t skip_ident(const unsigned char *s, size_t n, size_t p, unsigned mb)
{
    if (mb)
        return skip_ident_mb(s, n, p, mb);
    while (p < n && is_id(s[p]))
        p++;
    return p;
}

static void set_tok(sql_token *t, size_t off, size_t end, sql_tok_kind k, unsigned id)
{
    t->off = (uint32_t)off;
    t->len = (uint32_t)(end - off);
    t->kind = (uint8_t)k;
    t->flags = 0;
    t->id = (uint16_t)id;
}

static void set_err(sql_token *t, size_t off, size_t end, sql_lex_err e)
{
    set_tok(t, off, end, SQL_TOK_ERROR, e);
}

/* X'..' / B'..' with the quote at s[p]: contents must be hex digits (even
 * count) or binary digits. */
static void scan_xb_quoted(const sql_lexer *lx, size_t start, size_t p, bool hex, sql_token *t)
{
    const unsigned char *s = lx->s;
    size_t q = p + 1;
    while (q < lx->n && s[q] != '\'')
        q++;
    if (q >= lx->n) {
        set_err(t, start, lx->n, SQL_LEXERR_UNTERMINATED_STRING);
        return;
    }
    bool ok = hex ? ((q - p - 1) % 2 == 0) : true;
    for (size_t i = p + 1; i < q && ok; i++)
        ok = hex ? is_hex(s[i]) : (s[i] == '0' || s[i] == '1');
    if (!ok)
        set_err(t, start, q + 1, SQL_LEXERR_BAD_LITERAL);
    else
        set_tok(t, start, q + 1, hex ? SQL_TOK_HEX : SQL_TOK_BIT, 0);
}

/* '...' or "..." (double quotes only when they delimit strings). */
static void scan_string(const sql_lexer *lx, size_t start, size_t p, sql_token *t)
{
    bool esc = false;
    bool bs = !(lx->flags & SQL_LEX_NO_BACKSLASH_ESCAPES);
    size_t e = scan_quoted(lx->s, lx->n, p, lx->s[p], bs, MB(lx), &esc);
    if (e == NPOS) {
        set_err(t, start, lx->n, SQL_LEXERR_UNTERMINATED_STRING);
        return;
    }
    set_tok(t, start, e, SQL_TOK_STRING, 0);
    if (lx->s[p] == '"')
        t->flags |= SQL_TF_DQUOTE;
    if (esc)
        t->flags |= SQL_TF_ESCAPED;
}

/* `ident` or "ident" (ANSI_QUOTES): no backslash escapes. */
static void scan_qident(const sql_lexer *lx, size_t p, sql_token *t)
{
    bool esc = false;
    size_t e = scan_quoted(lx->s, lx->n, p, lx->s[p], false, MB(lx), &esc);
    if (e == NPOS) {
        set_err(t, p, lx->n, SQL_LEXERR_UNTERMINATED_IDENT);
        return;
    }
    set_tok(t, p, e, SQL_TOK_QIDENT, 0);
    if (lx->s[p] == '"')
        t->flags |= SQL_TF_DQUOTE;
    if (esc)
        t->flags |= SQL_TF_ESCAPED;
}

static bool dq_is_string(const sql_lexer *lx) { return !(lx->flags & SQL_LEX_ANSI_QUOTES); }

/* 0x4a / 0b01 at p (lower-case prefix only, as in MySQL); false when the
 * run is empty or continues into a name, as in 0x1g. */
static bool scan_0xb(const sql_lexer *lx, size_t start, size_t p, sql_token *t)
{
    const unsigned char *s = lx->s;
    size_t n = lx->n;
    if (p + 2 >= n || s[p] != '0' || (s[p + 1] != 'x' && s[p + 1] != 'b'))
        return false;
    bool hex = s[p + 1] == 'x';
    size_t q = p + 2;
    while (q < n && (hex ? is_hex(s[q]) : (s[q] == '0' || s[q] == '1')))
        q++;
    if (q == p + 2 || (q < n && is_id(s[q])))
        return false;
    set_tok(t, start, q, hex ? SQL_TOK_HEX : SQL_TOK_BIT, 0);
    return true;
}

/* Literal that may follow an introducer at s[p]; true if one was scanned. */
static bool scan_introduced(const sql_lexer *lx, size_t start, size_t p, sql_token *t)
{
    const unsigned char *s = lx->s;
    size_t n = lx->n;
    if (p >= n)
        return false;
    unsigned char c = s[p];
    if (c == '\'' || (c == '"' && dq_is_string(lx)))
        scan_string(lx, start, p, t);
    else if ((c | 0x20) == 'x' && p + 1 < n && s[p + 1] == '\'')
        scan_xb_quoted(lx, start, p + 1, true, t);
    else if ((c | 0x20) == 'b' && p + 1 < n && s[p + 1] == '\'')
        scan_xb_quoted(lx, start, p + 1, false, t);
    else if (!scan_0xb(lx, start, p, t))
        return false;
    if (t->kind != SQL_TOK_ERROR)
        t->flags |= SQL_TF_INTRODUCER;
    return true;
}

/* Bare word starting at p: keyword, identifier, or one of the prefixed
 * literals N'..', X'..', B'..', _charset'..'. */
static void scan_word(const sql_lexer *lx, size_t p, sql_token *t)
{
    const unsigned char *s = lx->s;
    size_t n = lx->n;
    size_t e = skip_ident(s, n, p, MB(lx));
    if (e - p == 1 && e < n && s[e] == '\'') {
        unsigned char c = s[p] | 0x20;
        if (c == 'x' || c == 'b') {
            scan_xb_quoted(lx, p, e, c == 'x', t);
            return;
        }
        if (c == 'n') {
            scan_string(lx, p, e, t);
            if (t->kind == SQL_TOK_STRING)
                t->flags |= SQL_TF_INTRODUCER;
            return;
        }
    }
    if (s[p] == '_' && e - p > 1 && is_charset(s + p + 1, e - p - 1)) {
        size_t q = e;
        while (q < n && is_space(s[q]))
            q++;
        if (scan_introduced(lx, p, q, t))
            return;
    }
    set_tok(t, p, e, SQL_TOK_WORD, sql_kw_lookup((const char *)s + p, e - p));
}

static size_t skip_digits(const unsigned char *s, size_t n, size_t p)
{
    while (p < n && is_digit(s[p]))
        p++;
    return p;
}

/* Optional exponent at p: e[+-]digits. Returns p unchanged if absent. */
static size_t skip_exponent(const unsigned char *s, size_t n, size_t p)
{
    if (p >= n || (s[p] | 0x20) != 'e')
        return p;
    size_t q = p + 1;
    if (q < n && (s[q] == '+' || s[q] == '-'))
        q++;
    if (q >= n || !is_digit(s[q]))
        return p;
    return skip_digits(s, n, q);
}

/* Token starting with a digit: number, 0x/0b literal, or an identifier
 * such as 1abc (MySQL allows names that start with digits). */
static void scan_number(const sql_lexer *lx, size_t p, sql_token *t)
{
    const unsigned char *s = lx->s;
    size_t n = lx->n;
    if (scan_0xb(lx, p, p, t))
        return;
    size_t e = skip_digits(s, n, p);
    bool frac = false;
    if (e < n && s[e] == '.') {
        frac = true;
        e = skip_digits(s, n, e + 1);
    }
    e = skip_exponent(s, n, e);
    if (!frac && e < n && is_id(s[e])) {
        set_tok(t, p, skip_ident(s, n, e, MB(lx)), SQL_TOK_WORD, 0);
        return;
    }
    set_tok(t, p, e, SQL_TOK_NUMBER, 0);
}

/* .5 and .5e3 are numbers unless the dot qualifies a name (t.5col). */
static void scan_dot(const sql_lexer *lx, size_t p, sql_token *t)
{
    const unsigned char *s = lx->s;
    bool after_name = lx->prev == SQL_TOK_WORD || lx->prev == SQL_TOK_QIDENT;
    if (!after_name && p + 1 < lx->n && is_digit(s[p + 1])) {
        size_t e = skip_digits(s, lx->n, p + 1);
        set_tok(t, p, skip_exponent(s, lx->n, e), SQL_TOK_NUMBER, 0);
        return;
    }
    set_tok(t, p, p + 1, SQL_TOK_DOT, 0);
}

/* @name, @'name', @"name", @`name`, @@name, @@global.name; a lone '@' (as
 * in 'user'@'host' after the string) is an operator. */
static void scan_var(const sql_lexer *lx, size_t p, sql_token *t)
{
    const unsigned char *s = lx->s;
    size_t n = lx->n;
    bool sys = p + 1 < n && s[p + 1] == '@';
    size_t q = p + 1 + sys;
    if (q < n && !sys && (s[q] == '\'' || s[q] == '"' || s[q] == '`')) {
        bool esc = false;
        size_t e =
            scan_quoted(s, n, q, s[q], s[q] != '`' && !(lx->flags & SQL_LEX_NO_BACKSLASH_ESCAPES),
                        MB(lx), &esc);
        if (e == NPOS)
            set_err(t, p, n, SQL_LEXERR_UNTERMINATED_STRING);
        else
            set_tok(t, p, e, SQL_TOK_VAR, 0);
        return;
    }
    size_t e = q;
    while (e < n && (is_id(s[e]) || s[e] == '.'))
        e = s[e] == '.' ? e + 1 : skip_ident(s, n, e, MB(lx));
    if (e == q && sys && q < n && s[q] == '`') {
        bool esc = false;
        e = scan_quoted(s, n, q, '`', false, MB(lx), &esc);
        if (e == NPOS) {
            set_err(t, p, n, SQL_LEXERR_UNTERMINATED_IDENT);
            return;
        }
    }
    if (e == q)
        set_tok(t, p, p + 1, SQL_TOK_OP, SQL_OP_AT);
    else
        set_tok(t, p, e, sys ? SQL_TOK_SYSVAR : SQL_TOK_VAR, 0);
}

/* ---- comments ----------------------------------------------------------- */

static size_t line_end(const unsigned char *s, size_t n, size_t p)
{
    const void *nl = memchr(s + p, '\n', n - p);
    return nl ? (size_t)((const unsigned char *)nl - s) : n;
}

/* Position just past the first "*" "/" at or after p, or NPOS. */
static size_t block_end(const unsigned char *s, size_t n, size_t p)
{
    while (p + 1 < n) {
        const unsigned char *st = memchr(s + p, '*', n - p - 1);
        if (!st)
            return NPOS;
        p = (size_t)(st - s);
        if (s[p + 1] == '/')
            return p + 2;
        p++;
    }
    return NPOS;
}

/* Length of the "/ *!12345" or "/ *M!123456" opener at p, 0 if none. */
static size_t exec_prefix(const unsigned char *s, size_t n, size_t p)
{
    size_t q = p + 2;
    if (q < n && s[q] == 'M' && q + 1 < n && s[q + 1] == '!')
        q++;
    if (q >= n || s[q] != '!')
        return 0;
    q++;
    for (int i = 0; i < 6 && q < n && is_digit(s[q]); i++)
        q++;
    return q - p;
}

static bool scan_one(sql_lexer *lx, size_t p, sql_token *t);

/* Executable comment: its body is lexed as SQL (so a string holding the
 * closing sequence does not end it) up to the first top-level close.
 * Inside the body, a nested opener is read as a plain comment, which
 * keeps this non-recursive. */
static void scan_exec(const sql_lexer *lx, size_t p, size_t pre, sql_token *t)
{
    sql_lexer in = *lx;
    in.in_exec = 1;
    in.prev = 0;
    size_t q = p + pre;
    const unsigned char *s = lx->s;
    for (;;) {
        while (q < lx->n && is_space(s[q]))
            q++;
        if (q + 1 < lx->n && s[q] == '*' && s[q + 1] == '/') {
            set_tok(t, p, q + 2, SQL_TOK_EXEC_COMMENT, 0);
            return;
        }
        sql_token it;
        if (q >= lx->n || !scan_one(&in, q, &it)) {
            set_err(t, p, lx->n, SQL_LEXERR_UNTERMINATED_COMMENT);
            return;
        }
        if (it.kind == SQL_TOK_ERROR) {
            set_err(t, p, (size_t)it.off + it.len, (sql_lex_err)it.id);
            return;
        }
        in.prev = it.kind;
        q = it.off + it.len;
    }
}

static void scan_block_comment(const sql_lexer *lx, size_t p, sql_token *t)
{
    size_t pre = lx->in_exec ? 0 : exec_prefix(lx->s, lx->n, p);
    if (pre) {
        scan_exec(lx, p, pre, t);
        return;
    }
    size_t e = block_end(lx->s, lx->n, p + 2);
    if (e == NPOS) {
        set_err(t, p, lx->n, SQL_LEXERR_UNTERMINATED_COMMENT);
        return;
    }
    set_tok(t, p, e, SQL_TOK_COMMENT, 0);
    if (p + 2 < lx->n && lx->s[p + 2] == '+')
        t->flags |= SQL_TF_HINT;
}

/* ---- operators and dispatch --------------------------------------------- */

/* Two-byte operator code for s[p], s[p+1]; SQL_OP_NONE if not one. */
static sql_op op2(unsigned char a, unsigned char b)
{
    switch (a) {
    case '<':
        return b == '=' ? SQL_OP_LE : b == '>' ? SQL_OP_NE : b == '<' ? SQL_OP_SHL : SQL_OP_NONE;
    case '>': return b == '=' ? SQL_OP_GE : b == '>' ? SQL_OP_SHR : SQL_OP_NONE;
    case '!': return b == '=' ? SQL_OP_NE2 : SQL_OP_NONE;
    case ':': return b == '=' ? SQL_OP_ASSIGN : SQL_OP_NONE;
    case '|': return b == '|' ? SQL_OP_OROR : SQL_OP_NONE;
    case '&': return b == '&' ? SQL_OP_ANDAND : SQL_OP_NONE;
    case '-': return b == '>' ? SQL_OP_ARROW : SQL_OP_NONE;
    default: return SQL_OP_NONE;
    }
}

static sql_op op1(unsigned char c)
{
    switch (c) {
    case '=': return SQL_OP_EQ;
    case '<': return SQL_OP_LT;
    case '>': return SQL_OP_GT;
    case '+': return SQL_OP_PLUS;
    case '-': return SQL_OP_MINUS;
    case '*': return SQL_OP_STAR;
    case '/': return SQL_OP_SLASH;
    case '%': return SQL_OP_PERCENT;
    case '^': return SQL_OP_CARET;
    case '&': return SQL_OP_AMP;
    case '|': return SQL_OP_PIPE;
    case '~': return SQL_OP_TILDE;
    case '!': return SQL_OP_BANG;
    case ':': return SQL_OP_COLON;
    case '{': return SQL_OP_LBRACE;
    case '}': return SQL_OP_RBRACE;
    default: return SQL_OP_NONE;
    }
}

static void scan_op(const sql_lexer *lx, size_t p, sql_token *t)
{
    const unsigned char *s = lx->s;
    size_t n = lx->n;
    unsigned char b = p + 1 < n ? s[p + 1] : 0;
    unsigned char c = p + 2 < n ? s[p + 2] : 0;
    sql_op op = op2(s[p], b);
    if (op == SQL_OP_LE && c == '>')
        set_tok(t, p, p + 3, SQL_TOK_OP, SQL_OP_NSEQ);
    else if (op == SQL_OP_ARROW && c == '>')
        set_tok(t, p, p + 3, SQL_TOK_OP, SQL_OP_ARROW2);
    else if (op != SQL_OP_NONE)
        set_tok(t, p, p + 2, SQL_TOK_OP, op);
    else if ((op = op1(s[p])) != SQL_OP_NONE)
        set_tok(t, p, p + 1, SQL_TOK_OP, op);
    else
        set_err(t, p, p + 1, SQL_LEXERR_STRAY_BYTE);
}

/* "--" starts a comment only before whitespace, a control byte or the end
 * (so "a--1" is a minus minus one). */
static bool dash_comment(const unsigned char *s, size_t n, size_t p)
{
    return p + 1 < n && s[p + 1] == '-' && (p + 2 >= n || s[p + 2] <= ' ');
}

static void scan_punct(const sql_lexer *lx, size_t p, sql_token *t)
{
    const unsigned char *s = lx->s;
    size_t n = lx->n;
    switch (s[p]) {
    case '(': set_tok(t, p, p + 1, SQL_TOK_LPAREN, 0); return;
    case ')': set_tok(t, p, p + 1, SQL_TOK_RPAREN, 0); return;
    case ',': set_tok(t, p, p + 1, SQL_TOK_COMMA, 0); return;
    case ';': set_tok(t, p, p + 1, SQL_TOK_SEMI, 0); return;
    case '?': set_tok(t, p, p + 1, SQL_TOK_PARAM, 0); return;
    case '.': scan_dot(lx, p, t); return;
    case '@': scan_var(lx, p, t); return;
    case '`': scan_qident(lx, p, t); return;
    case '\'': scan_string(lx, p, p, t); return;
    case '"':
        if (dq_is_string(lx))
            scan_string(lx, p, p, t);
        else
            scan_qident(lx, p, t);
        return;
    case '#': set_tok(t, p, line_end(s, n, p), SQL_TOK_COMMENT, 0); return;
    case '-':
        if (dash_comment(s, n, p)) {
            set_tok(t, p, line_end(s, n, p), SQL_TOK_COMMENT, 0);
            return;
        }
        break;
    case '/':
        if (p + 1 < n && s[p + 1] == '*') {
            scan_block_comment(lx, p, t);
            return;
        }
        break;
    default: break;
    }
    scan_op(lx, p, t);
}

/* Scan the token at or after p (skipping whitespace); false at the end. */
static bool scan_one(sql_lexer *lx, size_t p, sql_token *t)
{
    const unsigned char *s = lx->s;
    while (p < lx->n && is_space(s[p]))
        p++;
    if (p >= lx->n)
        return false;
    unsigned char c = s[p];
    if (is_digit(c)) {
        /* after "db." a leading digit still names something (db.1t) */
        if (lx->prev == SQL_TOK_DOT)
            set_tok(t, p, skip_ident(s, lx->n, p, MB(lx)), SQL_TOK_WORD, 0);
        else
            scan_number(lx, p, t);
    } else if (is_id(c)) {
        scan_word(lx, p, t);
    } else {
        scan_punct(lx, p, t);
    }
    return true;
}

/* ---- public iterator ------------------------------------------------------ */

void sql_lexer_init(sql_lexer *lx, const char *s, size_t n, unsigned flags)
{
    lx->s = (const unsigned char *)s;
    /* offsets are 32-bit; a COM_QUERY is bounded by max_allowed_packet (1 GiB) */
    lx->n = n > UINT32_MAX ? UINT32_MAX : n;
    lx->pos = 0;
    lx->flags = flags;
    lx->prev = 0;
    lx->in_exec = 0;
}

bool sql_lexer_next(sql_lexer *lx, sql_token *t)
{
    for (;;) {
        if (!scan_one(lx, lx->pos, t)) {
            lx->pos = lx->n;
            return false;
        }
        lx->pos = (size_t)t->off + t->len;
        if (t->kind != SQL_TOK_COMMENT) {
            lx->prev = t->kind;
            return true;
        }
        if (!(lx->flags & SQL_LEX_SKIP_COMMENTS) || (t->flags & SQL_TF_HINT))
            return true;
    }
}

sql_rc sql_lex(const char *s, size_t n, unsigned flags, sql_token *out, size_t max, size_t *count)
{
    sql_lexer lx;
    sql_lexer_init(&lx, s, n, flags);
    size_t k = 0;
    sql_rc rc = SQL_OK;
    while (k < max && sql_lexer_next(&lx, &out[k])) {
        if (out[k++].kind == SQL_TOK_ERROR) {
            rc = SQL_ERR;
            break;
        }
    }
    if (rc == SQL_OK && k == max) {
        sql_token probe;
        sql_lexer peek = lx;
        if (sql_lexer_next(&peek, &probe))
            rc = SQL_PARTIAL;
    }
    *count = k;
    return rc;
}

bool sql_exec_body(const sql_token *t, const char *s, size_t *off, size_t *len)
{
    if (t->kind != SQL_TOK_EXEC_COMMENT)
        return false;
    size_t pre = exec_prefix((const unsigned char *)s, (size_t)t->off + t->len, t->off);
    *off = t->off + pre;
    *len = t->len - pre - 2;
    return true;
}

/* ---- statement splitting -------------------------------------------------- */

/* BEGIN...END nesting inside a compound-statement body. */
typedef struct split_state {
    bool started;  /* a non-comment token has been seen */
    bool compound; /* statement may hold BEGIN...END blocks */
    unsigned depth;
    size_t first; /* offset of the statement's first token */
    size_t last;  /* end of its last token */
} split_state;

static bool peek_kw(const sql_lexer *lx, sql_kw kw)
{
    sql_lexer p = *lx;
    sql_token t;
    while (sql_lexer_next(&p, &t))
        if (t.kind != SQL_TOK_COMMENT)
            return t.kind == SQL_TOK_WORD && t.id == kw;
    return false;
}

/* END closes a block unless it is END IF/LOOP/WHILE/REPEAT, whose openers
 * are not counted (IF also appears as a function and in IF EXISTS). */
static bool end_closes_block(const sql_lexer *lx)
{
    sql_lexer p = *lx;
    sql_token t;
    while (sql_lexer_next(&p, &t)) {
        if (t.kind == SQL_TOK_COMMENT)
            continue;
        if (t.kind != SQL_TOK_WORD)
            return true;
        const unsigned char *w = lx->s + t.off;
        return !(t.id == SQL_KW_IF || ieq(w, t.len, "loop") || ieq(w, t.len, "while") ||
                 ieq(w, t.len, "repeat"));
    }
    return true;
}

static void split_track(split_state *st, const sql_lexer *lx, const sql_token *t)
{
    if (!st->started) {
        st->started = true;
        st->compound =
            t->kind == SQL_TOK_WORD &&
            (t->id == SQL_KW_CREATE || (t->id == SQL_KW_BEGIN && peek_kw(lx, SQL_KW_NOT)));
    }
    if (!st->compound || t->kind != SQL_TOK_WORD)
        return;
    if (t->id == SQL_KW_BEGIN || t->id == SQL_KW_CASE)
        st->depth++;
    else if (t->id == SQL_KW_END && st->depth > 0 && end_closes_block(lx))
        st->depth--;
}

static sql_rc split_emit(const split_state *st, sql_span *out, size_t max, size_t *k)
{
    if (!st->started)
        return SQL_OK;
    if (*k == max)
        return SQL_PARTIAL;
    out[*k].off = (uint32_t)st->first;
    out[*k].len = (uint32_t)(st->last - st->first);
    (*k)++;
    return SQL_OK;
}

sql_rc sql_split(const char *s, size_t n, unsigned flags, sql_span *out, size_t max, size_t *count)
{
    sql_lexer lx;
    sql_lexer_init(&lx, s, n, flags & ~(unsigned)SQL_LEX_SKIP_COMMENTS);
    split_state st = {0};
    bool have_first = false;
    size_t k = 0;
    sql_token t;
    sql_rc rc = SQL_OK;
    while (rc == SQL_OK && sql_lexer_next(&lx, &t)) {
        if (t.kind == SQL_TOK_SEMI && st.depth == 0) {
            rc = split_emit(&st, out, max, &k);
            memset(&st, 0, sizeof st);
            have_first = false;
            continue;
        }
        if (!have_first) {
            st.first = t.off;
            have_first = true;
        }
        st.last = (size_t)t.off + t.len;
        if (t.kind != SQL_TOK_COMMENT)
            split_track(&st, &lx, &t);
        if (t.kind == SQL_TOK_ERROR) {
            rc = split_emit(&st, out, max, &k);
            *count = k;
            return rc == SQL_OK ? SQL_ERR : rc;
        }
    }
    if (rc == SQL_OK)
        rc = split_emit(&st, out, max, &k);
    *count = k;
    return rc;
}

sql_rc sql_split_first(const char *s, size_t n, unsigned flags, sql_span *span, size_t *next)
{
    sql_lexer lx;
    sql_lexer_init(&lx, s, n, flags & ~(unsigned)SQL_LEX_SKIP_COMMENTS);
    split_state st = {0};
    bool have_first = false;
    sql_token t;
    sql_rc rc = SQL_OK;
    *next = lx.n;
    while (sql_lexer_next(&lx, &t)) {
        if (t.kind == SQL_TOK_SEMI && st.depth == 0) {
            if (st.started) {
                *next = (size_t)t.off + 1;
                break;
            }
            memset(&st, 0, sizeof st); /* `;` after nothing but comments */
            have_first = false;
            continue;
        }
        if (!have_first) {
            st.first = t.off;
            have_first = true;
        }
        st.last = (size_t)t.off + t.len;
        if (t.kind != SQL_TOK_COMMENT)
            split_track(&st, &lx, &t);
        if (t.kind == SQL_TOK_ERROR) {
            rc = SQL_ERR;
            break;
        }
    }
    span->off = (uint32_t)(st.started ? st.first : 0);
    span->len = (uint32_t)(st.started ? st.last - st.first : 0);
    return rc;
}

bool sql_lexer_next_sig(sql_lexer *lx, sql_token *t)
{
    while (sql_lexer_next(lx, t))
        if (t->kind != SQL_TOK_COMMENT)
            return true;
    return false;
}

bool sql_tok_is_literal(unsigned kind)
{
    return kind == SQL_TOK_STRING || kind == SQL_TOK_NUMBER || kind == SQL_TOK_HEX ||
           kind == SQL_TOK_BIT || kind == SQL_TOK_PARAM;
}

bool sql_operand_expected(unsigned prev_kind, unsigned prev_id)
{
    switch (prev_kind) {
    case 0:
    case SQL_TOK_OP:
    case SQL_TOK_LPAREN:
    case SQL_TOK_COMMA:
    case SQL_TOK_SEMI: return true;
    case SQL_TOK_WORD: {
        unsigned f = sql_kw_flags((sql_kw)prev_id);
        return (f & SQL_KWF_RESERVED) && !(f & SQL_KWF_OPERAND);
    }
    default: return false;
    }
}

/* ---- the text as the server reads it ---------------------------------------- */

static bool server_trailing(unsigned char c) { return is_space(c) || c == ';' || c == 0xA0; }

size_t sql_server_len(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t e = n;
    while (e > 0 && server_trailing(u[e - 1]))
        e--;
    return e > 0 && u[e - 1] == '\0' ? e - 1 : n;
}

const char *sql_lex_err_name(unsigned id)
{
    switch (id) {
    case SQL_LEXERR_UNTERMINATED_STRING: return "unterminated string";
    case SQL_LEXERR_UNTERMINATED_IDENT: return "unterminated quoted name";
    case SQL_LEXERR_UNTERMINATED_COMMENT: return "unterminated comment";
    case SQL_LEXERR_BAD_LITERAL: return "malformed hex or bit literal";
    case SQL_LEXERR_STRAY_BYTE: return "stray byte outside quotes";
    default: return "lexing error";
    }
}

bool sql_tok_is_word(const sql_token *t, const char *text, const char *w)
{
    return t->kind == SQL_TOK_WORD && t->len == strlen(w) &&
           strncasecmp(text + t->off, w, t->len) == 0;
}
