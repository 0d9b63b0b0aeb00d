/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/mem/map.c - the hash map of a memory-mode shard (delayed/mem/mem_impl.h):
 * (table, key) -> net change, its entries, and a worker's batch applied to
 * it whole or not at all.
 *
 * Works on the map it is given: the caller holds the lock of the map's
 * shard (or owns the map, the flusher's pending keys).
 */
#include <stdlib.h>
#include <string.h>

#include "delayed/mem/mem_impl.h"

#define FIRST_BUCKETS 64
#define SMALL_BATCH 16 /* key tuples a statement may have without an allocated array */

/* ---- maps ------------------------------------------------------------------- */

uint64_t dm_hash(const struct mr_dmem_table *t, const char *key, size_t klen)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)(uintptr_t)t;
    for (size_t i = 0; i < klen; i++)
        h = (h ^ (unsigned char)key[i]) * 0x100000001b3ULL;
    return h ^ (h >> 29);
}

dm_entry *dm_find(const dm_map *m, const struct mr_dmem_table *t, const char *key, size_t klen,
                  uint64_t hash)
{
    if (!m->b)
        return NULL;
    for (dm_entry *e = m->b[hash & m->mask]; e; e = e->next)
        if (e->hash == hash && e->t == t && e->klen == klen && memcmp(e->key, key, klen) == 0)
            return e;
    return NULL;
}

bool dm_map_grow(dm_map *m)
{
    size_t nb = m->b ? (m->mask + 1) * 2 : FIRST_BUCKETS;
    dm_entry **b = calloc(nb, sizeof *b);
    if (!b)
        return false;
    for (size_t i = 0; m->b && i <= m->mask; i++)
        for (dm_entry *e = m->b[i], *next; e; e = next) {
            next = e->next;
            e->next = b[e->hash & (nb - 1)];
            b[e->hash & (nb - 1)] = e;
        }
    free(m->b);
    m->b = b;
    m->mask = nb - 1;
    return true;
}

bool dm_insert(dm_map *m, dm_entry *e)
{
    if ((!m->b || m->n >= m->mask + 1) && !dm_map_grow(m) && !m->b)
        return false; /* a full map that cannot grow still takes the entry, chained */
    e->next = m->b[e->hash & m->mask];
    m->b[e->hash & m->mask] = e;
    m->n++;
    return true;
}

dm_entry *dm_entry_new(struct mr_dmem_table *t, const char *key, size_t klen, uint64_t hash)
{
    size_t vsize = t->ncols * sizeof(mr_dmem_val);
    dm_entry *e = calloc(1, sizeof *e + vsize + klen);
    if (!e)
        return NULL;
    e->t = t;
    e->hash = hash;
    e->klen = (uint32_t)klen;
    e->key = (char *)e->v + vsize;
    memcpy(e->key, key, klen);
    return e;
}

static void clear_value(mr_dmem_val *v)
{
    if (v->op == MR_DMEM_VAL_TEXT)
        free((char *)(uintptr_t)v->text);
    *v = (mr_dmem_val){0};
}

void dm_entry_free(dm_entry *e)
{
    for (size_t c = 0; e && c < e->t->ncols; c++)
        clear_value(&e->v[c]);
    free(e);
}

void dm_map_free(dm_map *m)
{
    for (size_t i = 0; m->b && i <= m->mask; i++)
        for (dm_entry *e = m->b[i], *next; e; e = next) {
            next = e->next;
            dm_entry_free(e);
        }
    free(m->b);
    *m = (dm_map){0};
}

/* newer's change to one column, on top of older's. */
static void compose_value(mr_dmem_val *o, mr_dmem_val *n)
{
    if (n->op == MR_DMEM_VAL_INT || n->op == MR_DMEM_VAL_TEXT) {
        clear_value(o);
        *o = *n; /* a set wins; its text moves over */
        *n = (mr_dmem_val){0};
    } else if (n->op == MR_DMEM_VAL_ADD) {
        o->n += n->n; /* onto an add or a set number alike */
        if (o->op == MR_DMEM_VAL_NONE)
            o->op = MR_DMEM_VAL_ADD;
    }
}

void dm_compose(dm_entry *older, dm_entry *newer)
{
    if (newer->del) { /* the delete drops whatever older had */
        for (size_t c = 0; c < older->t->ncols; c++)
            clear_value(&older->v[c]);
        older->del = true;
    }
    for (size_t c = 0; c < older->t->ncols; c++)
        compose_value(&older->v[c], &newer->v[c]);
}

/* ---- a worker's batch onto the map -------------------------------------------- */

/* The byte length of the key tuple starting at p. */
size_t dm_tuple_len(const char *p, size_t nkeys)
{
    size_t n = 0;
    for (size_t k = 0; k < nkeys; k++) {
        uint32_t len;
        memcpy(&len, p + n, 4);
        n += 4 + len;
    }
    return n;
}

/* Would adding the batch's deltas to e overflow a column? */
bool dm_overflows(const dm_entry *e, const mr_dmem_batch *b)
{
    for (unsigned i = 0; e && !b->del && i < b->nops; i++) {
        int64_t sum;
        if (b->ops[i].op == MR_DMEM_ADD &&
            __builtin_add_overflow(e->v[b->ops[i].col].n, b->ops[i].n, &sum))
            return true;
    }
    return false;
}

/* The batch's change onto entry e; texts holds a copy of each SET_TEXT
 * value, in op order, which e takes over. Allocates nothing: it cannot
 * fail, so a batch is applied whole once prepare_batch succeeded. */
static void apply_ops(dm_entry *e, const mr_dmem_batch *b, char **texts)
{
    mr_dmem_val nv[2 * MR_DELAYED_MAX_TERMS]; /* counters and set-only columns */
    if (b->del) {
        for (size_t c = 0; c < e->t->ncols; c++)
            clear_value(&e->v[c]);
        e->del = true;
        return;
    }
    for (size_t c = 0; c < e->t->ncols; c++)
        nv[c] = (mr_dmem_val){0};
    for (unsigned i = 0; i < b->nops; i++) {
        const mr_dmem_colop *o = &b->ops[i];
        mr_dmem_val *v = &nv[o->col];
        if (o->op == MR_DMEM_ADD) {
            v->op = MR_DMEM_VAL_ADD;
            v->n = o->n;
        } else if (o->op == MR_DMEM_SET_INT) {
            v->op = MR_DMEM_VAL_INT;
            v->n = o->n;
        } else {
            v->op = MR_DMEM_VAL_TEXT;
            v->text = *texts++;
            v->len = o->len;
        }
    }
    for (size_t c = 0; c < e->t->ncols; c++)
        compose_value(&e->v[c], &nv[c]);
}

/* What a batch needs allocated before it changes anything. */
typedef struct prepared {
    dm_entry **fresh; /* per row: a new entry when its key was not held */
    char **texts;     /* per row, its SET_TEXT values' copies (ntext each) */
    unsigned ntext;
    dm_entry *few[SMALL_BATCH]; /* fresh's storage for a small batch (no allocation) */
} prepared;

static void prepared_free(prepared *p, uint32_t nrows)
{
    for (uint32_t r = 0; p->fresh && r < nrows; r++)
        dm_entry_free(p->fresh[r]);
    for (size_t i = 0; p->texts && i < (size_t)nrows * p->ntext; i++)
        free(p->texts[i]);
    if (p->fresh != p->few)
        free(p->fresh);
    free(p->texts);
}

/* A copy of each SET_TEXT value for every row (the entries take them). */
static bool prepare_texts(prepared *p, const mr_dmem_batch *b)
{
    const mr_dmem_colop *ops[MR_DELAYED_MAX_TERMS];
    for (unsigned i = 0; !b->del && i < b->nops; i++)
        if (b->ops[i].op == MR_DMEM_SET_TEXT)
            ops[p->ntext++] = &b->ops[i];
    size_t n = (size_t)b->nrows * p->ntext;
    if (!n)
        return true;
    if (!(p->texts = calloc(n, sizeof *p->texts)))
        return false;
    for (size_t i = 0; i < n; i++) {
        const mr_dmem_colop *o = ops[i % p->ntext];
        if (!(p->texts[i] = malloc(o->len ? o->len : 1)))
            return false;
        memcpy(p->texts[i], b->text.data + o->off, o->len);
    }
    return true;
}

/* Every allocation the batch needs on map m; false (nothing allocated
 * left over) when one failed. */
static bool prepare_batch(dm_map *m, struct mr_dmem_table *t, const mr_dmem_batch *b, prepared *p)
{
    *p = (prepared){0};
    p->fresh = p->few;
    if (b->nrows > SMALL_BATCH && !(p->fresh = calloc(b->nrows, sizeof *p->fresh)))
        return false;
    bool ok = (m->b || dm_map_grow(m)) && prepare_texts(p, b);
    const char *k = (const char *)b->keys.data;
    for (uint32_t r = 0; ok && r < b->nrows; r++) {
        size_t n = dm_tuple_len(k, t->def.nkeys);
        uint64_t h = dm_hash(t, k, n);
        if (!dm_find(m, t, k, n, h))
            ok = (p->fresh[r] = dm_entry_new(t, k, n, h)) != NULL;
        k += n;
    }
    if (!ok)
        prepared_free(p, b->nrows);
    return ok;
}

bool dm_map_apply(dm_map *m, struct mr_dmem_table *t, const mr_dmem_batch *b, uint64_t *made)
{
    prepared p;
    *made = 0;
    if (!prepare_batch(m, t, b, &p))
        return false;
    const char *k = (const char *)b->keys.data;
    for (uint32_t r = 0; r < b->nrows; r++) {
        size_t n = dm_tuple_len(k, t->def.nkeys);
        dm_entry *e = dm_find(m, t, k, n, dm_hash(t, k, n));
        if (!e) { /* a map with buckets always takes it (chained when it cannot grow) */
            e = p.fresh[r];
            p.fresh[r] = NULL;
            (void)dm_insert(m, e);
            (*made)++;
        }
        apply_ops(e, b, p.texts ? p.texts + (size_t)r * p.ntext : NULL);
        for (unsigned i = 0; p.texts && i < p.ntext; i++)
            p.texts[(size_t)r * p.ntext + i] = NULL; /* now e's */
        k += n;
    }
    prepared_free(&p, b->nrows);
    return true;
}
