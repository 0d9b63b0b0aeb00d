/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/bookmarks.c - the keyset bookmark store (see paginate/bookmarks.h).
 *
 * Any thread. Owns every bookmark (malloc'ed values) and the generation
 * slots. Each stripe is an unsorted array scanned under its mutex: a stripe
 * holds at most max_bookmarks / 16 entries, and a scan is a few hundred
 * compares, far below the cost of the page it replaces. The store lives in
 * the pure library (no I/O, only its own mutexes) so the rules and their
 * unit tests reach it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "myrewrite/base/clock.h"
#include "myrewrite/paginate/bookmarks.h"

#define GEN_SLOTS 4096

typedef struct bookmark {
    uint64_t listing;
    uint64_t table_hash;
    uint64_t gen; /* mr_bookmarks_gen(table_hash) when its page was sent */
    uint64_t pos; /* rows before the next page */
    uint64_t expires_ms;
    uint64_t used; /* stripe tick of the last put or find: LRU */
    bool refused;
    size_t len;
    char *values; /* owned; NUL-separated literals */
} bookmark;

typedef struct stripe {
    pthread_mutex_t mu;
    bookmark *v;
    size_t n, cap;
    uint64_t tick;
} stripe;

static stripe stripes[MR_BOOKMARK_STRIPES] = {
#define S_INIT                                                                                     \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0                                                   \
    }
    S_INIT, S_INIT, S_INIT, S_INIT, S_INIT, S_INIT, S_INIT, S_INIT,
    S_INIT, S_INIT, S_INIT, S_INIT, S_INIT, S_INIT, S_INIT, S_INIT,
#undef S_INIT
};
static _Atomic uint64_t gens[GEN_SLOTS];
static _Atomic uint64_t gen_all;
static _Atomic size_t held;
static atomic_bool armed;

void mr_bookmarks_arm(void) { atomic_store_explicit(&armed, true, memory_order_relaxed); }

bool mr_bookmarks_armed(void) { return atomic_load_explicit(&armed, memory_order_relaxed); }

size_t mr_keyset_bookmarks(void) { return atomic_load_explicit(&held, memory_order_relaxed); }

uint64_t mr_bookmarks_now_ms(void) { return mr_mono_ms(); }

/* ---- generations ------------------------------------------------------------- */

uint64_t mr_bookmarks_gen(uint64_t table_hash)
{
    /* the sum changes when either part does: both only grow */
    return atomic_load(&gens[table_hash % GEN_SLOTS]) + atomic_load(&gen_all);
}

void mr_bookmarks_note_write(uint64_t table_hash)
{
    atomic_fetch_add(&gens[table_hash % GEN_SLOTS], 1);
}

void mr_bookmarks_note_write_all(void) { atomic_fetch_add(&gen_all, 1); }

/* ---- one stripe (its mutex held) ---------------------------------------------- */

static stripe *stripe_of(uint64_t listing)
{
    return &stripes[(listing >> 7) % MR_BOOKMARK_STRIPES];
}

static void drop_at(stripe *S, size_t i)
{
    free(S->v[i].values);
    S->v[i] = S->v[--S->n];
    atomic_fetch_sub_explicit(&held, 1, memory_order_relaxed);
}

static bool usable(const bookmark *b, uint64_t now_ms)
{
    return now_ms < b->expires_ms && b->gen == mr_bookmarks_gen(b->table_hash);
}

/* The least recently used entry goes; expired and stale ones first. */
static void make_room(stripe *S, size_t limit, uint64_t now_ms)
{
    for (size_t i = 0; i < S->n;)
        if (!usable(&S->v[i], now_ms))
            drop_at(S, i);
        else
            i++;
    while (S->n >= limit && S->n > 0) {
        size_t old = 0;
        for (size_t i = 1; i < S->n; i++)
            if (S->v[i].used < S->v[old].used)
                old = i;
        drop_at(S, old);
    }
}

static bool add(stripe *S, const bookmark *b, const char *values, size_t len)
{
    if (S->n == S->cap) {
        size_t cap = S->cap ? S->cap * 2 : 16;
        bookmark *v = realloc(S->v, cap * sizeof *v);
        if (!v)
            return false;
        S->v = v;
        S->cap = cap;
    }
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return false;
    memcpy(copy, values, len);
    S->v[S->n] = *b;
    S->v[S->n].values = copy;
    S->v[S->n].len = len;
    S->v[S->n].used = ++S->tick;
    S->n++;
    atomic_fetch_add_explicit(&held, 1, memory_order_relaxed);
    return true;
}

static size_t stripe_limit(uint64_t max_bookmarks)
{
    uint64_t per = (max_bookmarks + MR_BOOKMARK_STRIPES - 1) / MR_BOOKMARK_STRIPES;
    return per ? (size_t)per : 1;
}

static void store(const bookmark *b, const char *values, size_t len, uint64_t max, uint64_t now_ms)
{
    if (b->gen != mr_bookmarks_gen(b->table_hash))
        return; /* a write passed while the page was read: its values may be gone */
    stripe *S = stripe_of(b->listing);
    pthread_mutex_lock(&S->mu);
    for (size_t i = 0; i < S->n; i++)
        if (S->v[i].listing == b->listing &&
            (S->v[i].pos == b->pos || S->v[i].refused || b->refused))
            drop_at(S, i--); /* replaced below; a refusal replaces the whole listing */
    make_room(S, stripe_limit(max), now_ms);
    add(S, b, values, len);
    pthread_mutex_unlock(&S->mu);
}

void mr_bookmarks_put(uint64_t listing, uint64_t table_hash, uint64_t gen, uint64_t pos,
                      const char *values, size_t len, uint64_t ttl_ms, uint64_t max_bookmarks,
                      uint64_t now_ms)
{
    bookmark b = {.listing = listing,
                  .table_hash = table_hash,
                  .gen = gen,
                  .pos = pos,
                  .expires_ms = now_ms + ttl_ms};
    store(&b, values, len, max_bookmarks, now_ms);
}

void mr_bookmarks_refuse(uint64_t listing, uint64_t table_hash, uint64_t gen, uint64_t ttl_ms,
                         uint64_t now_ms)
{
    bookmark b = {.listing = listing,
                  .table_hash = table_hash,
                  .gen = gen,
                  .expires_ms = now_ms + ttl_ms,
                  .refused = true};
    /* a refusal is one entry per listing: it never needs more room than a bookmark */
    store(&b, "", 0, UINT64_MAX, now_ms);
}

mr_bookmark_find mr_bookmarks_find(uint64_t listing, uint64_t table_hash, uint64_t offset,
                                   uint64_t now_ms, uint64_t *pos, char *values, size_t cap,
                                   size_t *len)
{
    stripe *S = stripe_of(listing);
    mr_bookmark_find found = MR_BOOKMARK_NONE;
    pthread_mutex_lock(&S->mu);
    for (size_t i = 0; i < S->n;) /* expired or stale entries of the listing go first */
        if (S->v[i].listing == listing && !usable(&S->v[i], now_ms))
            drop_at(S, i);
        else
            i++;
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < S->n; i++) {
        bookmark *b = &S->v[i];
        if (b->listing != listing || b->table_hash != table_hash)
            continue;
        if (b->refused) {
            found = MR_BOOKMARK_REFUSED;
            b->used = ++S->tick;
            break;
        }
        if (b->pos <= offset && b->len <= cap && (best == SIZE_MAX || b->pos > S->v[best].pos))
            best = i;
    }
    if (found != MR_BOOKMARK_REFUSED && best != SIZE_MAX) {
        bookmark *b = &S->v[best];
        b->used = ++S->tick;
        *pos = b->pos;
        memcpy(values, b->values, b->len);
        *len = b->len;
        found = MR_BOOKMARK_FOUND;
    }
    pthread_mutex_unlock(&S->mu);
    return found;
}

void mr_bookmarks_clear(void)
{
    for (size_t k = 0; k < MR_BOOKMARK_STRIPES; k++) {
        stripe *S = &stripes[k];
        pthread_mutex_lock(&S->mu);
        while (S->n)
            drop_at(S, S->n - 1);
        pthread_mutex_unlock(&S->mu);
    }
}

const mr_bookmark_port mr_bookmarks_store = {
    .gen = mr_bookmarks_gen,
    .put = mr_bookmarks_put,
    .refuse = mr_bookmarks_refuse,
    .find = mr_bookmarks_find,
    .now_ms = mr_bookmarks_now_ms,
};
