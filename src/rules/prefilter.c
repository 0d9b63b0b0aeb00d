/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/prefilter.c - finds the word a regex cannot match without, so the
 * matcher runs a regex only on statements that contain that word.
 *
 * Pure, any thread. Owns nothing beyond the returned string.
 *
 * The word must be provable from the pattern alone; a wrong word would
 * silently stop a rule from matching, so every doubt means "no word" (the
 * regex then runs on every statement). A word qualifies when:
 *  - it is a run of literal [A-Za-z0-9_] characters, none quantified;
 *  - it lies outside any alternation, character class, escape, lookaround,
 *    and outside any group that is optional or repeated;
 *  - both its ends are pinned to a non-word character: preceded by \b, ^,
 *    \A, \s, \W, a literal non-word character such as a space or `(`
 *    (or such an item repeated at least once), and followed likewise by
 *    \b, $, \z, \Z, \s, \W or a literal non-word character.
 * The last rule is what makes "whole word" sound: `FROM orders` can match
 * inside "FROM orders_2024", so "orders" is not taken there, while
 * `FROM orders WHERE` or `\borders\b` give "orders".
 * Patterns using \Q...\E, inline options (?i) (?x)..., backtracking verbs
 * (*...), conditionals or recursion yield no word. Among several words the
 * one that is not an SQL keyword, then the longest, is chosen, since
 * SELECT or FROM would let nearly every statement through.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rules_impl.h"

#define MAX_CANDS 64
#define MAX_DEPTH 64

typedef enum atom_kind {
    AT_WORDCH,  /* literal word character */
    AT_NONWORD, /* consumes one non-word character */
    AT_EDGE,    /* zero-width assertion implying a word edge: \b ^ $ \A \z \Z */
    AT_OTHER,   /* anything else: ., classes, \d, groups, ... */
} atom_kind;

typedef struct cand {
    const char *p;
    size_t len;
} cand;

typedef struct rx {
    const char *p;
    const char *end;
    bool bail;
    int depth;
    cand c[MAX_CANDS];
    size_t nc;
} rx;

/* pcre2's \w without UCP: ASCII letters, digits and underscore. */
static bool is_word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Skips a {...}, <...> or '...' argument if one starts at p. */
static void skip_arg(rx *x)
{
    char close = *x->p == '{' ? '}' : *x->p == '<' ? '>' : *x->p == '\'' ? '\'' : 0;
    if (!close)
        return;
    const char *e = memchr(x->p + 1, close, (size_t)(x->end - x->p - 1));
    if (!e)
        x->bail = true;
    else
        x->p = e + 1;
}

static void skip_while(rx *x, const char *set, int max)
{
    for (int i = 0; i < max && x->p < x->end && strchr(set, *x->p); i++)
        x->p++;
}

/* The escape after a backslash; x->p is just past the escaped char. */
static atom_kind escape(rx *x, char c)
{
    switch (c) {
    case 'b':
    case 'A':
    case 'z':
    case 'Z': return AT_EDGE;
    case 's':
    case 'W':
    case 'h':
    case 'v':
    case 'R':
    case 'n':
    case 'r':
    case 't':
    case 'f':
    case 'e':
    case 'a': return AT_NONWORD;
    case 'B':
    case 'G':
    case 'K':
    case 'd':
    case 'w':
    case 'S':
    case 'D':
    case 'H':
    case 'V':
    case 'X':
    case 'C':
    case 'E': return AT_OTHER;
    case 'N':
    case 'o':
    case 'k': skip_arg(x); return AT_OTHER;
    case 'x':
        if (x->p < x->end && *x->p == '{')
            skip_arg(x);
        else
            skip_while(x, "0123456789abcdefABCDEF", 2);
        return AT_OTHER;
    case 'p':
    case 'P':
        if (x->p < x->end && *x->p == '{')
            skip_arg(x);
        else if (x->p < x->end)
            x->p++;
        return AT_OTHER;
    case 'g':
        if (x->p < x->end && strchr("{<'", *x->p))
            skip_arg(x);
        else
            skip_while(x, "+-0123456789", 12);
        return AT_OTHER;
    case 'c':
        if (x->p < x->end)
            x->p++;
        return AT_OTHER;
    case '0': skip_while(x, "01234567", 2); return AT_OTHER;
    default: break;
    }
    unsigned char u = (unsigned char)c;
    if (u >= '1' && u <= '9') {
        skip_while(x, "0123456789", 12);
        return AT_OTHER;
    }
    if (u == 0 || c == 'Q' || (u < 0x80 && isalnum(u)))
        x->bail = true; /* \Q...\E or an escape this reader does not know */
    return u == '_' ? AT_OTHER : AT_NONWORD;
}

static void skip_class(rx *x)
{
    if (x->p < x->end && *x->p == '^')
        x->p++;
    if (x->p < x->end && *x->p == ']')
        x->p++;
    while (x->p < x->end && *x->p != ']') {
        if (*x->p == '\\') {
            if (x->p + 1 < x->end && x->p[1] == 'Q')
                x->bail = true;
            x->p += 2;
        } else if (*x->p == '[' && x->p + 1 < x->end && x->p[1] == ':') {
            const char *e = strstr(x->p + 2, ":]");
            x->p = e && e < x->end ? e + 2 : x->end;
        } else {
            x->p++;
        }
    }
    if (x->p >= x->end)
        x->bail = true;
    else
        x->p++;
}

typedef struct quant {
    bool present;
    unsigned min;
} quant;

/* {n}, {n,}, {n,m}, {,m} (newer pcre2) after an atom. */
static bool brace_quant(rx *x, quant *q)
{
    const char *e = x->p + 1;
    while (e < x->end && (isdigit((unsigned char)*e) || *e == ',' || *e == ' '))
        e++;
    if (e >= x->end || *e != '}' || e == x->p + 1)
        return false;
    q->min = 0;
    for (const char *d = x->p + 1; d < e && isdigit((unsigned char)*d); d++)
        q->min = q->min * 10 + (unsigned)(*d - '0');
    x->p = e + 1;
    return true;
}

static quant quantifier(rx *x)
{
    quant q = {false, 1};
    if (x->p >= x->end)
        return q;
    char c = *x->p;
    if (c == '?' || c == '*') {
        q.min = 0;
        x->p++;
    } else if (c == '+') {
        x->p++;
    } else if (!(c == '{' && brace_quant(x, &q))) {
        return q;
    }
    q.present = true;
    if (x->p < x->end && (*x->p == '?' || *x->p == '+'))
        x->p++; /* lazy or possessive */
    return q;
}

static void sequence(rx *x);

/* After "(?": decides whether the group's contents are required (capture,
 * non-capturing, atomic); bails on anything that changes how the rest of
 * the pattern reads. Returns false for groups whose contents never count. */
static bool group_opening(rx *x)
{
    if (*x->p == '*') {
        x->bail = true; /* (*VERB) */
        return false;
    }
    if (*x->p != '?')
        return true;
    const char *p = x->p + 1;
    char c = p < x->end ? *p : 0;
    if (c == ':' || c == '>') {
        x->p = p + 1;
        return true;
    }
    if (c == '=' || c == '!' || c == '|') {
        x->p = p + 1;
        return false;
    }
    if (c == '<' && p + 1 < x->end && (p[1] == '=' || p[1] == '!')) {
        x->p = p + 2;
        return false;
    }
    if (c == '<' || c == '\'' || (c == 'P' && p + 1 < x->end && p[1] == '<')) {
        x->p = p + (c == 'P');
        skip_arg(x); /* named capture */
        return true;
    }
    x->bail = true; /* options, comments, recursion, conditionals */
    return false;
}

static atom_kind group(rx *x)
{
    size_t mark = x->nc;
    if (++x->depth > MAX_DEPTH) {
        x->bail = true;
        return AT_OTHER;
    }
    bool counts = group_opening(x);
    if (!x->bail)
        sequence(x);
    x->depth--;
    if (x->bail || x->p >= x->end || *x->p != ')') {
        x->bail = true;
        return AT_OTHER;
    }
    x->p++;
    quant q = quantifier(x);
    if (!counts || q.present)
        x->nc = mark; /* optional, repeated or zero-width: nothing in it is required */
    return AT_OTHER;
}

static atom_kind atom(rx *x, const char **wp)
{
    char c = *x->p++;
    switch (c) {
    case '\\':
        if (x->p >= x->end) {
            x->bail = true;
            return AT_OTHER;
        }
        c = *x->p++;
        return escape(x, c);
    case '[': skip_class(x); return AT_OTHER;
    case '(': return group(x);
    case '.': return AT_OTHER;
    case '^':
    case '$': return AT_EDGE;
    default:
        if (is_word((unsigned char)c)) {
            *wp = x->p - 1;
            return AT_WORDCH;
        }
        return AT_NONWORD;
    }
}

typedef struct run {
    const char *p;
    size_t len;
    bool pinned_before;
} run;

static void end_run(rx *x, run *r, bool pinned_after)
{
    if (r->len && r->pinned_before && pinned_after && x->nc < MAX_CANDS)
        x->c[x->nc++] = (cand){r->p, r->len};
    r->len = 0;
}

/* A concatenation up to ')' or the end; alternation anywhere in it
 * discards every word it found. */
static void sequence(rx *x)
{
    size_t mark = x->nc;
    bool alt = false, pinned = false;
    run r = {NULL, 0, false};
    while (x->p < x->end && !x->bail && *x->p != ')') {
        if (*x->p == '|') {
            end_run(x, &r, false);
            x->p++;
            alt = true;
            pinned = false;
            continue;
        }
        const char *wp = NULL;
        atom_kind k = atom(x, &wp);
        quant q = quantifier(x);
        if (k == AT_WORDCH && !q.present) {
            if (r.len == 0) {
                r.p = wp;
                r.pinned_before = pinned;
            }
            r.len++;
            pinned = false;
            continue;
        }
        /* a non-word item matched at least once pins both its sides */
        pinned = (k == AT_NONWORD || k == AT_EDGE) && q.min >= 1;
        end_run(x, &r, pinned);
    }
    end_run(x, &r, false);
    if (alt)
        x->nc = mark;
}

static bool better(const cand *a, const cand *b)
{
    bool akw = sql_kw_lookup(a->p, a->len) != SQL_KW_NONE;
    bool bkw = sql_kw_lookup(b->p, b->len) != SQL_KW_NONE;
    if (akw != bkw)
        return !akw;
    return a->len > b->len;
}

char *rules_derive_word(const char *pattern, size_t len)
{
    rx x;
    memset(&x, 0, sizeof x);
    x.p = pattern;
    x.end = pattern + len;
    sequence(&x);
    if (x.bail || x.p != x.end || x.nc == 0)
        return NULL;
    const cand *best = &x.c[0];
    for (size_t i = 1; i < x.nc; i++)
        if (better(&x.c[i], best))
            best = &x.c[i];
    char *w = malloc(best->len + 1);
    if (!w)
        return NULL;
    for (size_t i = 0; i < best->len; i++)
        w[i] = (char)tolower((unsigned char)best->p[i]);
    w[best->len] = '\0';
    return w;
}
