/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/sql/group_merge.c - merges the add rows of one key in a group-commit
 * batch (see delayed/sql/group_merge.h): takes each statement's rows as data,
 * sums the rows of a key with a hash table, writes the rows left in their
 * first-seen order.
 */
#include "delayed/sql/group_merge.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- taking the rows ------------------------------------------------------------- */

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

bool dg_rows_add(dg_rows *r, size_t group, const mr_dstage *st)
{
    unsigned nd = st->ndelta <= DG_MAX_DELTAS ? st->ndelta : 0;
    if (!nd) {
        if (!grow(r))
            return false;
        r->v[r->n++] = (dg_row){.group = group,
                                .text = st->text + st->prefix_len,
                                .len = st->len - st->prefix_len,
                                .merged = 1};
        return true;
    }
    for (uint32_t i = 0; i < st->nrows; i++) {
        if (!grow(r))
            return false;
        const mr_dstage_row *x = &st->rows[i];
        dg_row *row = &r->v[r->n++];
        *row = (dg_row){.group = group,
                        .text = st->text + x->off,
                        .len = x->len,
                        .key = st->text + x->tail,
                        .key_len = x->off + x->len - x->tail,
                        .ndelta = nd,
                        .merged = 1};
        memcpy(row->d, &st->d[(size_t)i * nd], nd * sizeof row->d[0]);
    }
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
