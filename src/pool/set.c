/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/set.c - the hash set of the pool's statement maps (pool/set.h):
 * linear probing over twice as many slots as entries, removal by shifting
 * the slots after the hole back (no tombstones, so a long-lived map does
 * not slow down).
 */
#include "myrewrite/pool/set.h"

#include <stdlib.h>
#include <string.h>

void mr_pool_set_init(mr_pool_set *s) { memset(s, 0, sizeof *s); }

void mr_pool_set_free(mr_pool_set *s)
{
    free(s->v);
    free(s->h);
    free(s->slot);
    mr_pool_set_init(s);
}

static uint32_t home(const mr_pool_set *s, uint64_t h) { return (uint32_t)(h ^ h >> 32) & s->mask; }

void *mr_pool_set_find(const mr_pool_set *s, uint64_t h, mr_pool_set_eq eq, const void *key)
{
    if (!s->n)
        return NULL;
    for (uint32_t i = home(s, h); s->slot[i]; i = (i + 1) & s->mask) {
        uint32_t e = s->slot[i] - 1;
        if (s->h[e] == h && eq(s->v[e], key))
            return s->v[e];
    }
    return NULL;
}

static void place(mr_pool_set *s, uint32_t e)
{
    uint32_t i = home(s, s->h[e]);
    while (s->slot[i])
        i = (i + 1) & s->mask;
    s->slot[i] = e + 1;
}

/* Room for one more entry: v and h doubled, the slots made again. */
static bool grow(mr_pool_set *s)
{
    uint32_t cap = s->cap ? s->cap * 2 : 8;
    if (cap > UINT32_MAX / 4)
        return false;
    void **v = realloc(s->v, cap * sizeof *v);
    if (v)
        s->v = v;
    uint64_t *h = v ? realloc(s->h, cap * sizeof *h) : NULL;
    if (h)
        s->h = h;
    uint32_t *slot = h ? calloc(2 * (size_t)cap, sizeof *slot) : NULL;
    if (!slot)
        return false; /* v and h may be larger: harmless, cap is unchanged */
    free(s->slot);
    s->slot = slot;
    s->cap = cap;
    s->mask = 2 * cap - 1;
    for (uint32_t e = 0; e < s->n; e++)
        place(s, e);
    return true;
}

bool mr_pool_set_add(mr_pool_set *s, uint64_t h, void *entry)
{
    if (s->n == s->cap && !grow(s))
        return false;
    s->v[s->n] = entry;
    s->h[s->n] = h;
    place(s, s->n++);
    return true;
}

/* The slot holding entry number e, which is in the set. */
static uint32_t slot_of(const mr_pool_set *s, uint32_t e)
{
    uint32_t i = home(s, s->h[e]);
    while (s->slot[i] != e + 1)
        i = (i + 1) & s->mask;
    return i;
}

/* Empties slot i and moves back the slots after it that probed past it. */
static void unslot(mr_pool_set *s, uint32_t i)
{
    for (uint32_t j = (i + 1) & s->mask; s->slot[j]; j = (j + 1) & s->mask) {
        uint32_t k = home(s, s->h[s->slot[j] - 1]);
        /* j may move to i when its home is not in the cyclic range (i, j] */
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            s->slot[i] = s->slot[j];
            i = j;
        }
    }
    s->slot[i] = 0;
}

void mr_pool_set_remove(mr_pool_set *s, uint64_t h, const void *entry)
{
    if (!s->n)
        return;
    uint32_t i = home(s, h);
    while (s->slot[i] && s->v[s->slot[i] - 1] != entry)
        i = (i + 1) & s->mask;
    if (!s->slot[i])
        return;
    uint32_t e = s->slot[i] - 1, last = s->n - 1;
    unslot(s, i);
    if (e != last) { /* the last entry takes the number of the one removed */
        s->slot[slot_of(s, last)] = e + 1;
        s->v[e] = s->v[last];
        s->h[e] = s->h[last];
    }
    s->n--;
}
