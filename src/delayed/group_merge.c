/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/group_merge.c - merges the add rows of one key in a group-commit
 * batch (see delayed/group_merge.h): reads each statement's VALUES in the
 * plain form the staging INSERT builder writes, sums the rows of a key with
 * a hash table, writes the rows left in their first-seen order.
 */
#include "delayed/group_merge.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIGITS 18 /* any 18-digit number fits an int64_t */

/* ---- reading the rows ------------------------------------------------------------ */

static bool bare_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           c == '.' || c == '-' || c == '+';
}

/* The end of the value at s[i] (a bare word or number, or a '...' string
 * without ' or \ inside); 0 when it is anything else. */
static size_t value_end(const char *s, size_t len, size_t i)
{
    size_t j = i;
    if (j < len && s[j] == '\'') {
        for (j++; j < len && s[j] != '\'' && s[j] != '\\'; j++)
            ;
        if (j >= len || s[j] != '\'' || (j + 1 < len && s[j + 1] == '\''))
            return 0;
        return j + 1;
    }
    while (j < len && bare_char(s[j]))
        j++;
    return j > i ? j : 0;
}

/* s[i..end) as a whole number of at most MAX_DIGITS digits. */
static bool whole_number(const char *s, size_t i, size_t end, int64_t *out)
{
    bool minus = i < end && s[i] == '-';
    i += minus;
    if (i == end || end - i > MAX_DIGITS)
        return false;
    int64_t v = 0;
    for (; i < end; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = minus ? -v : v;
    return true;
}

/* One row at s[*pos] (its `(`) into row; *pos past its `)`. */
static bool read_row(const char *s, size_t len, size_t *pos, unsigned ndelta, dg_row *row)
{
    size_t i = *pos, last = 0;
    unsigned nval = 0;
    if (i >= len || s[i] != '(')
        return false;
    row->text = s + i;
    for (i++;; nval++) {
        if (nval == ndelta)
            row->key = s + i;
        size_t end = value_end(s, len, i);
        if (!end || (nval < ndelta && !whole_number(s, i, end, &row->d[nval])))
            return false;
        last = i;
        i = end;
        if (i + 1 < len && s[i] == ',' && s[i + 1] == ' ') {
            i += 2;
            continue;
        }
        if (i < len && s[i] == ')')
            break;
        return false;
    }
    nval++;
    /* at least one key value and the op, which is 0 (an add) */
    if (nval < ndelta + 2 || i - last != 1 || s[last] != '0')
        return false;
    row->len = (size_t)(s + i + 1 - row->text);
    row->key_len = (size_t)(s + i + 1 - row->key);
    *pos = i + 1;
    return true;
}

static bool grow(dg_rows *r)
{
    if (r->n < r->cap)
        return true;
    size_t cap = r->cap ? r->cap * 2 : 64;
    dg_row *v = realloc(r->v, cap * sizeof *v);
    if (!v)
        return false;
    r->v = v;
    r->cap = cap;
    return true;
}

/* The statement's rows, all or none (none: false, r as it was). */
static bool add_rows(dg_rows *r, size_t group, const char *s, size_t len, unsigned ndelta,
                     bool *oom)
{
    size_t first = r->n, pos = 0;
    for (;;) {
        if (!grow(r)) {
            *oom = true;
            break;
        }
        dg_row *row = &r->v[r->n];
        *row = (dg_row){.group = group, .ndelta = ndelta, .merged = 1};
        if (!read_row(s, len, &pos, ndelta, row))
            break;
        r->n++;
        if (pos == len)
            return true;
        if (pos + 2 >= len || s[pos] != ',' || s[pos + 1] != ' ')
            break;
        pos += 2;
    }
    r->n = first;
    return false;
}

bool dg_rows_add(dg_rows *r, size_t group, const char *values, size_t len, unsigned ndelta)
{
    bool oom = false;
    if (ndelta > 0 && ndelta <= DG_MAX_DELTAS && add_rows(r, group, values, len, ndelta, &oom))
        return true;
    if (oom || !grow(r))
        return false;
    r->v[r->n++] = (dg_row){.group = group, .text = values, .len = len, .merged = 1};
    return true;
}

/* ---- merging ---------------------------------------------------------------------- */

static uint64_t hash_of(const dg_row *row)
{
    uint64_t h = 1469598103934665603ull ^ row->group;
    for (size_t i = 0; i < row->key_len; i++)
        h = (h ^ (uint8_t)row->key[i]) * 1099511628211ull;
    return h;
}

static bool same_key(const dg_row *a, const dg_row *b)
{
    return a->group == b->group && a->ndelta == b->ndelta && a->key_len == b->key_len &&
           memcmp(a->key, b->key, a->key_len) == 0;
}

/* Adds b's deltas to a's; false (a unchanged) when one would overflow. */
static bool sum_into(dg_row *a, const dg_row *b)
{
    int64_t d[DG_MAX_DELTAS];
    for (unsigned i = 0; i < a->ndelta; i++)
        if (__builtin_add_overflow(a->d[i], b->d[i], &d[i]))
            return false;
    memcpy(a->d, d, a->ndelta * sizeof d[0]);
    a->merged++;
    return true;
}

bool dg_rows_merge(dg_rows *r)
{
    size_t size = 64;
    while (size < r->n * 2)
        size *= 2;
    size_t *slot = malloc(size * sizeof *slot); /* row index + 1; 0: empty */
    if (!slot)
        return false;
    memset(slot, 0, size * sizeof *slot);
    for (size_t i = 0; i < r->n; i++) {
        dg_row *row = &r->v[i];
        if (!row->ndelta)
            continue;
        size_t at = (size_t)hash_of(row) & (size - 1);
        while (slot[at] && !same_key(&r->v[slot[at] - 1], row))
            at = (at + 1) & (size - 1);
        if (!slot[at])
            slot[at] = i + 1; /* the key's first row: the others go into it */
        else if (sum_into(&r->v[slot[at] - 1], row))
            row->gone = true;
    }
    free(slot);
    return true;
}

/* ---- writing ---------------------------------------------------------------------- */

static void put_merged(mr_buf *b, const dg_row *row)
{
    char num[24];
    mr_buf_put(b, "(", 1);
    for (unsigned i = 0; i < row->ndelta; i++) {
        int n = snprintf(num, sizeof num, "%" PRId64 ", ", row->d[i]);
        mr_buf_put(b, num, (size_t)n);
    }
    mr_buf_put(b, row->key, row->key_len);
}

void dg_rows_write(const dg_rows *r, mr_buf *out, bool *has)
{
    for (size_t i = 0; i < r->n; i++) {
        const dg_row *row = &r->v[i];
        if (row->gone)
            continue;
        mr_buf *b = &out[row->group];
        if (has[row->group])
            mr_buf_put(b, ", ", 2);
        has[row->group] = true;
        if (row->merged > 1)
            put_merged(b, row);
        else
            mr_buf_put(b, row->text, row->len);
    }
}

size_t dg_rows_gone(const dg_rows *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->v[i].gone;
    return n;
}

void dg_rows_free(dg_rows *r)
{
    free(r->v);
    *r = (dg_rows){0};
}
