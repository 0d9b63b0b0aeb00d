/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/sql/chunk_sql.c - a flush chunk summed per key, and the statements
 * and dead-letter texts written from it (see delayed/sql/chunk.h). Pure, any
 * thread.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "delayed/sql/chunk.h"
#include "myrewrite/sql/quote.h"

static void put_i64(mr_buf *b, int64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%" PRId64, v);
    mr_buf_put(b, tmp, (size_t)n);
}

void dchunk_put_table(mr_buf *b, const char *schema, const char *name)
{
    mr_sql_put_ident(b, schema);
    mr_buf_put(b, ".", 1);
    mr_sql_put_ident(b, name);
}

/* Index of set column s among the counters, or -1 (a set-only column). */
int dchunk_counter_of(const table *t, size_t s)
{
    for (size_t j = 0; j < t->def.ncolumns; j++)
        if (strcasecmp(t->def.columns[j], t->def.set_columns[s]) == 0)
            return (int)j;
    return -1;
}

/* By the key's weights (staged.woff): the server's equality, not the
 * literals' bytes, which would make 'abc' and 'ABC' two entries of one row's
 * UPDATE ... JOIN, of which the server applies one. */
static int by_key_then_seq(const void *a, const void *b, void *arena)
{
    const char *sort_arena = arena;
    const staged *x = a, *y = b;
    size_t n = x->wlen < y->wlen ? x->wlen : y->wlen;
    int c = memcmp(sort_arena + x->woff, sort_arena + y->woff, n);
    if (c || x->wlen != y->wlen)
        return c ? c : (x->wlen < y->wlen ? -1 : 1);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static bool same_key(const chunk *c, const staged *x, const staged *y)
{
    return x->wlen == y->wlen &&
           memcmp(c->arena.data + x->woff, c->arena.data + y->woff, x->wlen) == 0;
}

/* A staged row's sets: each value replaces the key's last one, and a set
 * of a counter drops the adds before it (last set + adds after it). */
static void apply_sets(const table *t, net *k, const staged *s)
{
    for (size_t j = 0; j < t->def.nset_columns; j++) {
        if (!(s->mask & (1ull << j)))
            continue;
        k->val[j] = s->val[j];
        int ci = dchunk_counter_of(t, j);
        if (ci >= 0)
            k->delta[ci] = 0;
    }
    k->mask |= s->mask;
}

/* Per key, in seq order: a delete drops what came before it. */
void dchunk_aggregate(const table *t, chunk *c)
{
    size_t nc = t->def.ncolumns, ns = t->def.nset_columns;
    qsort_r(c->rows, c->nrows, sizeof *c->rows, by_key_then_seq, c->arena.data);
    int64_t *sums = &c->deltas[c->nrows * nc];
    lit *vals = &c->vals[c->nrows * ns];
    for (size_t i = 0; i < c->nrows; i++) {
        const staged *s = &c->rows[i];
        net *k = c->nkeys ? &c->keys[c->nkeys - 1] : NULL;
        if (!k || !same_key(c, &c->rows[i - 1], s)) {
            k = &c->keys[c->nkeys];
            *k = (net){.koff = s->koff,
                       .klen = s->klen,
                       .delta = &sums[c->nkeys * nc],
                       .val = &vals[c->nkeys * ns]};
            c->nkeys++;
        }
        k->nrows++;
        if (s->del) {
            k->del = true;
            k->add = false;
            k->mask = 0;
            k->overflow = false;
            memset(k->delta, 0, nc * sizeof *k->delta);
            continue;
        }
        k->add = true;
        apply_sets(t, k, s);
        for (size_t j = 0; j < nc; j++)
            k->overflow |= __builtin_add_overflow(k->delta[j], s->delta[j], &k->delta[j]);
    }
}

void dchunk_put_key_tuple(mr_buf *b, const chunk *c, const net *k)
{
    mr_buf_put(b, "(", 1);
    mr_buf_put(b, c->arena.data + k->koff, k->klen);
    mr_buf_put(b, ")", 1);
}

void dchunk_put_key_names(mr_buf *b, const table *t)
{
    for (size_t i = 0; i < t->def.nkeys; i++) {
        if (i)
            mr_buf_put(b, ", ", 2);
        mr_sql_put_ident(b, t->def.keys[i]);
    }
}

/* Is key k's add applied, and by an upsert? */
bool dchunk_wants_add(const table *t, const net *k)
{
    return k->add && (!k->del || t->def.missing == MR_DELAYED_MISSING_INSERT);
}

/* Index of counter j among the set columns when the mask sets it, or -1. */
static int set_in_mask(const table *t, size_t j, uint64_t mask)
{
    for (size_t s = 0; s < t->def.nset_columns; s++)
        if ((mask & (1ull << s)) && strcasecmp(t->def.set_columns[s], t->def.columns[j]) == 0)
            return (int)s;
    return -1;
}

/* Is set column s one that no counter shares? */
static bool set_only(const table *t, size_t s) { return dchunk_counter_of(t, s) < 0; }

static void put_lit(mr_buf *b, const chunk *c, const lit *v)
{
    mr_buf_put(b, c->arena.data + v->off, v->len);
}

/* Counter j's value for key k: its delta, or (last set value) + the adds
 * after it when the mask sets it. */
static void put_counter_value(mr_buf *b, const table *t, const chunk *c, const net *k, size_t j,
                              uint64_t mask)
{
    int s = set_in_mask(t, j, mask);
    if (s < 0) {
        put_i64(b, k->delta[j]);
        return;
    }
    mr_buf_put(b, "(", 1);
    put_lit(b, c, &k->val[s]);
    mr_buf_put_str(b, ") + ");
    put_i64(b, k->delta[j]);
}

/* The derived table's first row names its columns: SELECT k AS `key`, ... */
static void put_first_select(mr_buf *b, const table *t, const chunk *c, const net *k)
{
    mr_buf_put_str(b, "SELECT ");
    const char *v = (const char *)c->arena.data + k->koff;
    size_t left = k->klen;
    for (size_t i = 0; i < t->def.nkeys; i++) {
        /* the literals are 'escaped' strings joined by ", " */
        size_t len = 1;
        while (len < left && v[len] != '\'')
            len += v[len] == '\\' ? 2 : 1;
        mr_buf_put(b, v, len + 1);
        mr_buf_put_str(b, " AS ");
        mr_sql_put_ident(b, t->def.keys[i]);
        mr_buf_put(b, ", ", 2);
        v += len + 1 + 2;
        left = left > len + 3 ? left - len - 3 : 0;
    }
    for (size_t j = 0; j < t->def.ncolumns; j++) {
        if (j)
            mr_buf_put(b, ", ", 2);
        put_counter_value(b, t, c, k, j, k->mask);
        mr_buf_put_str(b, " AS ");
        mr_sql_put_ident(b, t->def.columns[j]);
    }
    for (size_t s = 0; s < t->def.nset_columns; s++)
        if ((k->mask & (1ull << s)) && set_only(t, s)) {
            mr_buf_put(b, ", ", 2);
            put_lit(b, c, &k->val[s]);
            mr_buf_put_str(b, " AS ");
            mr_sql_put_ident_suffixed(b, t->def.set_columns[s], "_set");
        }
}

/* The values of a later row: counters, then the set-only columns of the mask. */
static void put_values(mr_buf *b, const table *t, const chunk *c, const net *k)
{
    for (size_t j = 0; j < t->def.ncolumns; j++) {
        mr_buf_put(b, ", ", 2);
        put_counter_value(b, t, c, k, j, k->mask);
    }
    for (size_t s = 0; s < t->def.nset_columns; s++)
        if ((k->mask & (1ull << s)) && set_only(t, s)) {
            mr_buf_put(b, ", ", 2);
            put_lit(b, c, &k->val[s]);
        }
}

/* WHERE (m.keys) IN (...): the keys of c[from, to) that the statement took.
 * The join alone leaves the plan to main's statistics; with stale ones
 * (InnoDB after a crash may take a big table for empty) the server scanned
 * main once per key. The filter keeps it to one pass whatever the estimate. */
static void put_keys_filter(mr_buf *b, const table *t, const chunk *c, uint64_t mask, size_t from,
                            size_t to)
{
    mr_buf_put_str(b, " WHERE (");
    for (size_t i = 0; i < t->def.nkeys; i++) {
        mr_buf_put_str(b, i ? ", `m`." : "`m`.");
        mr_sql_put_ident(b, t->def.keys[i]);
    }
    mr_buf_put_str(b, ") IN (");
    for (size_t at = from, n = 0; at < to; at++) {
        const net *k = &c->keys[at];
        if (!dchunk_wants_add(t, k) || k->mask != mask)
            continue;
        if (n++)
            mr_buf_put(b, ", ", 2);
        dchunk_put_key_tuple(b, c, k);
    }
    mr_buf_put(b, ")", 1);
}

/* UPDATE main AS m JOIN (SELECT ... UNION ALL ...) AS d USING (keys)
 * SET m.c = m.c + d.c WHERE (m.keys) IN (...): rows without a delta are
 * not touched. */
void dchunk_build_update(mr_buf *b, const table *t, const chunk *c, uint64_t mask, size_t *at,
                         size_t *n)
{
    size_t from = *at;
    mr_buf_put_str(b, t->locked ? "UPDATE LOW_PRIORITY " : "UPDATE ");
    dchunk_put_table(b, t->def.schema, t->def.table);
    mr_buf_put_str(b, " AS `m` JOIN (");
    for (; *at < c->nkeys && *n < KEYS_PER_STATEMENT; (*at)++) {
        const net *k = &c->keys[*at];
        if (!dchunk_wants_add(t, k) || k->mask != mask)
            continue;
        if ((*n)++) {
            mr_buf_put_str(b, " UNION ALL SELECT ");
            mr_buf_put(b, c->arena.data + k->koff, k->klen);
            put_values(b, t, c, k);
        } else {
            put_first_select(b, t, c, k);
        }
    }
    mr_buf_put_str(b, ") AS `d` USING (");
    dchunk_put_key_names(b, t);
    mr_buf_put_str(b, ") SET ");
    for (size_t j = 0; j < t->def.ncolumns; j++) {
        const char *col = t->def.columns[j];
        mr_buf_put_str(b, j ? ", `m`." : "`m`.");
        mr_sql_put_ident(b, col);
        if (set_in_mask(t, j, mask) < 0) {
            mr_buf_put_str(b, " = `m`.");
            mr_sql_put_ident(b, col);
            mr_buf_put_str(b, " + `d`.");
        } else {
            mr_buf_put_str(b, " = `d`.");
        }
        mr_sql_put_ident(b, col);
    }
    for (size_t s = 0; s < t->def.nset_columns; s++)
        if ((mask & (1ull << s)) && set_only(t, s)) {
            mr_buf_put_str(b, ", `m`.");
            mr_sql_put_ident(b, t->def.set_columns[s]);
            mr_buf_put_str(b, " = `d`.");
            mr_sql_put_ident_suffixed(b, t->def.set_columns[s], "_set");
        }
    put_keys_filter(b, t, c, mask, from, *at);
}

/* INSERT INTO main (keys, cols) VALUES ... ON DUPLICATE KEY UPDATE c = c + VALUES(c). */
void dchunk_build_upsert(mr_buf *b, const table *t, const chunk *c, uint64_t mask, size_t *at,
                         size_t *n)
{
    mr_buf_put_str(b, "INSERT INTO ");
    dchunk_put_table(b, t->def.schema, t->def.table);
    mr_buf_put_str(b, " (");
    dchunk_put_key_names(b, t);
    for (size_t j = 0; j < t->def.ncolumns; j++) {
        mr_buf_put(b, ", ", 2);
        mr_sql_put_ident(b, t->def.columns[j]);
    }
    for (size_t s = 0; s < t->def.nset_columns; s++)
        if ((mask & (1ull << s)) && set_only(t, s)) {
            mr_buf_put(b, ", ", 2);
            mr_sql_put_ident(b, t->def.set_columns[s]);
        }
    mr_buf_put_str(b, ") VALUES ");
    for (; *at < c->nkeys && *n < KEYS_PER_STATEMENT; (*at)++) {
        const net *k = &c->keys[*at];
        if (!dchunk_wants_add(t, k) || k->mask != mask)
            continue;
        mr_buf_put_str(b, (*n)++ ? ", (" : "(");
        mr_buf_put(b, c->arena.data + k->koff, k->klen);
        put_values(b, t, c, k);
        mr_buf_put(b, ")", 1);
    }
    mr_buf_put_str(b, " ON DUPLICATE KEY UPDATE ");
    for (size_t j = 0; j < t->def.ncolumns; j++) {
        const char *col = t->def.columns[j];
        if (j)
            mr_buf_put(b, ", ", 2);
        mr_sql_put_ident(b, col);
        mr_buf_put_str(b, " = ");
        if (set_in_mask(t, j, mask) < 0) {
            mr_sql_put_ident(b, col);
            mr_buf_put_str(b, " + ");
        }
        mr_buf_put_str(b, "VALUES(");
        mr_sql_put_ident(b, col);
        mr_buf_put(b, ")", 1);
    }
    for (size_t s = 0; s < t->def.nset_columns; s++)
        if ((mask & (1ull << s)) && set_only(t, s)) {
            mr_buf_put_str(b, ", ");
            mr_sql_put_ident(b, t->def.set_columns[s]);
            mr_buf_put_str(b, " = VALUES(");
            mr_sql_put_ident(b, t->def.set_columns[s]);
            mr_buf_put(b, ")", 1);
        }
}

/* `(k1, k2) = ('1', 'a')`: the key as the dead-letter table shows it. */
void dchunk_key_text(const table *t, const chunk *c, const net *k, mr_buf *b)
{
    mr_buf_put(b, "(", 1);
    dchunk_put_key_names(b, t);
    mr_buf_put_str(b, ") = ");
    dchunk_put_key_tuple(b, c, k);
    mr_buf_put_u8(b, 0);
}

/* `n + 5, m + 0`, `DELETE, then n + 5`, `n = (7) + 1`, `s = 'x'`: what the
 * flush would have done to the key. */
void dchunk_change_text(const table *t, const chunk *c, const net *k, mr_buf *b)
{
    if (k->del)
        mr_buf_put_str(b, dchunk_wants_add(t, k) ? "DELETE, then " : "DELETE");
    for (size_t j = 0; dchunk_wants_add(t, k) && j < t->def.ncolumns; j++) {
        if (j)
            mr_buf_put(b, ", ", 2);
        mr_sql_put_ident(b, t->def.columns[j]);
        mr_buf_put_str(b, set_in_mask(t, j, k->mask) < 0 ? " + " : " = ");
        put_counter_value(b, t, c, k, j, k->mask);
    }
    for (size_t s = 0; dchunk_wants_add(t, k) && s < t->def.nset_columns; s++)
        if ((k->mask & (1ull << s)) && set_only(t, s)) {
            mr_buf_put(b, ", ", 2);
            mr_sql_put_ident(b, t->def.set_columns[s]);
            mr_buf_put_str(b, " = ");
            put_lit(b, c, &k->val[s]);
        }
    mr_buf_put_u8(b, 0);
}

bool dchunk_any_overflow(const chunk *c)
{
    for (size_t i = 0; i < c->nkeys; i++)
        if (c->keys[i].overflow)
            return true;
    return false;
}
