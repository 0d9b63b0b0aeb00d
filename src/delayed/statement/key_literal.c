/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/statement/key_literal.c - the key literals of a DELAYED statement, each as
 * the server compares it with its key column (see delayed/key_literal.h).
 *
 * A direct `UPDATE t SET n = n + 1 WHERE id = 1.5` matches no row: the
 * server compares the INT column with the DECIMAL 1.5. Staged, the same
 * literal is stored into a column of the key's type (rounded to 2) and
 * the flush then changes row 2. So a literal is taken only in a form whose
 * stored value compares equal to it, and only where the column's type is
 * known (schema/range.h); every other form is refused with a message that
 * names the literal, the column's type and the forms taken:
 *
 *   integer   a whole number within the type's range, without a leading
 *             zero, or such a number quoted, of at most 15 digits (a
 *             string is compared with a number as a DOUBLE: exact to 15)
 *   DECIMAL   a number (no exponent) within the range with no more
 *             decimals than the column's scale and no trailing zero, or
 *             such a number quoted, of at most 15 significant digits
 *   CHAR...   a quoted string (a number compares with a string as a DOUBLE,
 *             a hex literal as binary bytes), in staged mode no longer
 *             than the column
 *   DATE      'YYYY-MM-DD' of a real day
 *   DATETIME, 'YYYY-MM-DD HH:MM:SS[.f]' of a real day and time, the fraction
 *   TIMESTAMP no longer than the column's and without a trailing zero
 *
 * Numbers and dates are taken in one spelling per value: memory mode keys
 * its store by the value's text, and two spellings of one row's key (3 and
 * 3.0) were two keys there, of which the flush applied one
 * (t_delayed_keys.py saw it).
 *
 * A `?` is checked when its executed value is at hand (memory mode); a
 * column of another type, or one not loaded yet, is not checked.
 *
 * Pure, any thread. Writes only the caller's message.
 */
#include "myrewrite/delayed/key_literal.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/delayed/width.h"
#include "myrewrite/sql/token_value.h"

#define DOUBLE_DIGITS 15 /* a DOUBLE holds every decimal of up to 15 significant digits */

/* One key value as written or executed: its text (a string's without its
 * quotes) and how it came. */
typedef struct keyval {
    enum { KV_NUMBER, KV_STRING, KV_OTHER } form;
    bool neg;
    const char *p;
    size_t n;
    char buf[24];
    const char *shown; /* for the message */
    size_t shown_n;
    int param; /* its place among the `?` (from 1); 0 for a literal */
} keyval;

/* ---- numbers ------------------------------------------------------------------- */

/* digits [. digits]: the lengths of both parts; false for any other form. */
static bool split_number(const char *p, size_t n, size_t *whole, size_t *frac)
{
    size_t i = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9')
        i++;
    *whole = i;
    *frac = 0;
    if (i < n && p[i] == '.') {
        size_t j = ++i;
        while (i < n && p[i] >= '0' && p[i] <= '9')
            i++;
        *frac = i - j;
    }
    return i == n && *whole > 0;
}

static bool zeros(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != '0')
            return false;
    return true;
}

static size_t significant(const char *p, size_t whole, size_t frac)
{
    size_t lead = 0;
    while (lead < whole && p[lead] == '0')
        lead++;
    return whole - lead + frac;
}

/* Why a number `v` cannot be a key of the INT or DECIMAL column r (NULL: it can). */
static const char *numeric_problem(const mr_col_range *r, const keyval *v)
{
    size_t whole, frac;
    bool neg = v->neg;
    const char *p = v->p;
    size_t n = v->n;
    if (v->form == KV_STRING && n && p[0] == '-') {
        neg = true;
        p++;
        n--;
    }
    if (v->form == KV_OTHER || !split_number(p, n, &whole, &frac))
        return "it is not a plain number";
    if (whole > 1 && p[0] == '0')
        return "it has a leading zero";
    if (whole < n && (frac == 0 || p[n - 1] == '0'))
        return "its fraction ends in a zero (another spelling of the same value)";
    if (neg && zeros(p, whole) && frac == 0)
        return "-0 is another spelling of 0";
    if (r->kind == MR_RANGE_INT && whole < n)
        return "a fraction never equals an integer";
    if (r->kind == MR_RANGE_DECIMAL && frac > r->scale)
        return "it has more decimals than the column's scale";
    if (v->form == KV_STRING && significant(p, whole, frac) > DOUBLE_DIGITS)
        return "a quoted number is compared as a DOUBLE, exact only to 15 digits";
    if (mr_range_value_fits(r, neg, p, whole) == MR_FIT_NO)
        return "it is outside the column's range";
    return NULL;
}

/* ---- dates --------------------------------------------------------------------- */

static bool read_digits(const char **p, const char *end, size_t n, unsigned *v)
{
    if ((size_t)(end - *p) < n)
        return false;
    *v = 0;
    for (size_t i = 0; i < n; i++, (*p)++) {
        if (**p < '0' || **p > '9')
            return false;
        *v = *v * 10 + (unsigned)(**p - '0');
    }
    return true;
}

static bool expect(const char **p, const char *end, char c)
{
    if (*p >= end || **p != c)
        return false;
    (*p)++;
    return true;
}

static bool real_day(unsigned y, unsigned m, unsigned d)
{
    static const unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1 || m < 1 || m > 12 || d < 1)
        return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return d <= days[m - 1] + (m == 2 && leap);
}

/* Why `v` cannot be a key of the DATE or DATETIME column r (NULL: it can). */
static const char *temporal_problem(const mr_col_range *r, const keyval *v)
{
    const char *p = v->p, *end = v->p + v->n;
    unsigned y, mo, d, h = 0, mi = 0, s = 0;
    if (v->form != KV_STRING || !read_digits(&p, end, 4, &y) || !expect(&p, end, '-') ||
        !read_digits(&p, end, 2, &mo) || !expect(&p, end, '-') || !read_digits(&p, end, 2, &d))
        return "it is not a quoted 'YYYY-MM-DD...'";
    if (!real_day(y, mo, d))
        return "it is no real day";
    if (r->kind == MR_RANGE_DATE)
        return p == end ? NULL : "a DATE key is written 'YYYY-MM-DD' only";
    if (p == end)
        return "a DATETIME key is written with its time, 'YYYY-MM-DD HH:MM:SS'";
    if ((!expect(&p, end, ' ') || !read_digits(&p, end, 2, &h) || !expect(&p, end, ':') ||
         !read_digits(&p, end, 2, &mi) || !expect(&p, end, ':') || !read_digits(&p, end, 2, &s)))
        return "its time is not HH:MM:SS";
    if (h > 23 || mi > 59 || s > 59)
        return "its time is no real time";
    size_t frac = 0;
    const char *f = p;
    if (p < end && *p == '.') {
        for (f = ++p; p < end && *p >= '0' && *p <= '9'; p++)
            frac++;
        if (!frac)
            return "its fraction has no digits";
    }
    if (p != end)
        return "it is not in the column's form";
    if (frac > r->scale)
        return "it has more fractional seconds than the column";
    if (frac && f[frac - 1] == '0')
        return "its fraction ends in a zero (another spelling of the same time)";
    return NULL;
}

/* ---- strings ------------------------------------------------------------------- */

/* A string longer than the column: staged, the INSERT runs in the
 * client's sql_mode, which may cut it to another row's key; memory mode's
 * flush runs in strict mode, where the server refuses it (dead-letter). */
static const char *char_problem(const mr_col_range *r, const keyval *v, bool staged)
{
    if (v->form != KV_STRING)
        return "a number or hex literal is not compared with a string as a string";
    if (staged && v->n > r->length) /* its bytes: at least its characters */
        return "it is longer than the column";
    return NULL;
}

/* ---- one value ----------------------------------------------------------------- */

static const char *problem(const mr_col_range *r, const keyval *v, bool staged)
{
    switch (r->kind) {
    case MR_RANGE_INT:
    case MR_RANGE_DECIMAL: return numeric_problem(r, v);
    case MR_RANGE_DATE:
    case MR_RANGE_DATETIME: return temporal_problem(r, v);
    case MR_RANGE_CHAR: return char_problem(r, v, staged);
    default: return NULL;
    }
}

/* The literal at token i (after a `-`), or the executed value of a `?`;
 * false when the value is not known (a `?` not executed here). */
static bool value_at(const char *text, const sql_token *tok, uint32_t i, uint32_t end,
                     const mr_exec_params *params, keyval *v)
{
    memset(v, 0, sizeof *v);
    while (i < end && tok[i].kind == SQL_TOK_COMMENT)
        i++;
    uint32_t first = i;
    if (tok[i].kind == SQL_TOK_OP) { /* the `-` mr_delayed_parse let through */
        v->neg = true;
        for (i++; i < end && tok[i].kind == SQL_TOK_COMMENT; i++)
            ;
    }
    const sql_token *t = &tok[i];
    v->shown = text + tok[first].off;
    v->shown_n = (size_t)t->off + t->len - tok[first].off;
    if (t->kind == SQL_TOK_NUMBER) {
        v->form = KV_NUMBER;
        v->p = text + t->off;
        v->n = t->len;
        return true;
    }
    if (t->kind == SQL_TOK_STRING) {
        const char *q = text + t->off, *e = q + t->len;
        while (q < e && *q != '\'' && *q != '"') /* past N or an introducer */
            q++;
        /* _binary'ABC' compares byte for byte where the column's collation
         * would not: not the string the staged row's key becomes */
        v->form =
            (size_t)(q - (text + t->off)) >= 7 && strncasecmp(text + t->off, "_binary", 7) == 0
                ? KV_OTHER
                : KV_STRING;
        v->p = q + 1;
        v->n = e - q >= 2 ? (size_t)(e - q) - 2 : 0;
        return true;
    }
    if (t->kind != SQL_TOK_PARAM) {
        v->form = KV_OTHER;
        return true;
    }
    unsigned no = mr_delayed_param_no(tok, i);
    if (!params || no >= params->n)
        return false;
    const mr_exec_param *p = &params->v[no];
    v->param = (int)no + 1;
    if (p->kind == MR_EXEC_PARAM_INT) {
        v->form = KV_NUMBER;
        v->neg = p->n < 0;
        uint64_t mag = v->neg ? (uint64_t)(-(p->n + 1)) + 1 : (uint64_t)p->n;
        v->n = (size_t)snprintf(v->buf, sizeof v->buf, "%" PRIu64, mag);
        v->p = v->buf;
    } else if (p->kind == MR_EXEC_PARAM_TEXT) {
        v->form = KV_STRING; /* a string, or a number or date the decoder wrote out */
        v->p = p->p;
        v->n = p->len;
    } else {
        return false; /* NULL matches no row either way */
    }
    return true;
}

static bool refuse(const mr_delayed_def *def, const char *col, const mr_col_range *r,
                   const keyval *v, const char *why, char *err, size_t errlen)
{
    char shown[96];
    if (v->param)
        snprintf(shown, sizeof shown, "parameter %d (%s%.*s)", v->param, v->neg ? "-" : "",
                 (int)(v->n < 48 ? v->n : 48), v->p);
    else
        snprintf(shown, sizeof shown, "%.*s", (int)(v->shown_n < 64 ? v->shown_n : 64), v->shown);
    snprintf(err, errlen,
             "myrewrite: DELAYED on %s.%s: the key value %s for %s (%s) is refused: %s; "
             "staged, it would be converted to the column's type and could change a row the "
             "statement does not name. Nothing was staged%s. Keys are taken as: an integer, a "
             "whole number in range without a leading zero (quoted: up to 15 digits); DECIMAL, "
             "a number with no more decimals than its scale and no trailing zero; a string, a "
             "quoted string (staged: no longer than the column); DATE, 'YYYY-MM-DD'; DATETIME or "
             "TIMESTAMP, 'YYYY-MM-DD HH:MM:SS[.fraction without a trailing zero]'",
             def->schema, def->table, shown, col, r->type, why,
             def->mode == MR_DELAYED_MEMORY ? " (mode = memory)" : "");
    return false;
}

/* Could a and b name the same row? Numbers by their one spelling (quoted
 * or not); strings as a case-insensitive PAD SPACE collation would compare
 * their ASCII letters and trailing spaces (a cautious stand-in for every
 * collation: a binary one only loses a list it could have taken). */
static bool may_be_same(const keyval *a, const keyval *b, bool text)
{
    size_t an = a->n, bn = b->n;
    if (!text)
        return a->neg == b->neg && an == bn && memcmp(a->p, b->p, an) == 0;
    while (an && a->p[an - 1] == ' ')
        an--;
    while (bn && b->p[bn - 1] == ' ')
        bn--;
    if (an != bn)
        return false;
    for (size_t i = 0; i < an; i++) {
        unsigned char x = (unsigned char)a->p[i], y = (unsigned char)b->p[i];
        if (x != y && !(x < 0x80 && y < 0x80 && tolower(x) == tolower(y)))
            return false;
    }
    return true;
}

/* An IN list that names one row twice: directly the row changes once, while
 * every staged or held value adds its delta. The first such pair, or false. */
static bool repeated_value(const char *text, const sql_token *tok, const mr_delayed_key *key,
                           const mr_exec_params *params, bool text_col, keyval *dup)
{
    for (uint32_t i = key->first, ni; i < key->end; i = ni + 1) {
        keyval a;
        if (!mr_delayed_literal_at(tok, i, key->end, &ni))
            return false;
        bool have_a = value_at(text, tok, i, ni, params, &a);
        for (uint32_t j = ni + 1, nj; have_a && j < key->end; j = nj + 1) {
            while (j < key->end && tok[j].kind == SQL_TOK_COMMA)
                j++;
            if (j >= key->end || !mr_delayed_literal_at(tok, j, key->end, &nj))
                break;
            if (value_at(text, tok, j, nj, params, dup) && may_be_same(&a, dup, text_col))
                return true;
            while (nj < key->end && tok[nj].kind != SQL_TOK_COMMA)
                nj++;
        }
        while (ni < key->end && tok[ni].kind != SQL_TOK_COMMA)
            ni++;
    }
    return false;
}

bool mr_delayed_keys_comparable(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                                const mr_delayed_def *def, const mr_schema_source *src,
                                const mr_exec_params *params, char *err, size_t errlen)
{
    if (!src || !src->column_range)
        return true;
    for (unsigned k = 0; k < d->nkey; k++) {
        const mr_delayed_key *key = &d->key[k];
        char col[MR_SD_NAME];
        mr_col_range r;
        if (!sql_tok_name(&tok[key->col], text, col, sizeof col) ||
            src->column_range(src->arg, def->schema, def->table, col, &r) != MR_RANGE_KNOWN)
            continue;
        for (uint32_t i = key->first, next; i < key->end; i = next + 1) {
            if (!mr_delayed_literal_at(tok, i, key->end, &next))
                break;
            keyval v;
            const char *why = value_at(text, tok, i, next, params, &v)
                                  ? problem(&r, &v, def->mode != MR_DELAYED_MEMORY)
                                  : NULL;
            if (why)
                return refuse(def, col, &r, &v, why, err, errlen);
            while (next < key->end && tok[next].kind != SQL_TOK_COMMA)
                next++;
        }
        keyval dup;
        if (key->count > 1 && repeated_value(text, tok, key, params, r.kind == MR_RANGE_CHAR, &dup))
            return refuse(def, col, &r, &dup,
                          "the IN list names it twice (directly the row changes once; each "
                          "value in the list would add its delta)",
                          err, errlen);
    }
    return true;
}
