/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/mem/mem_impl.h - what the store (delayed/mem/mem.c, its shards
 * delayed/mem/shards.c, its maps delayed/mem/map.c) and the flusher
 * (delayed/mem/mem_flush.c) share: tables, entries, hash maps, shards.
 *
 * A map belongs to one shard (guarded by the shard's mutex) or to the
 * flusher thread (its pending keys). Entries move from a shard to the
 * flusher only by swapping a whole map.
 */
#ifndef MYREWRITE_DELAYED_MEM_IMPL_H
#define MYREWRITE_DELAYED_MEM_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/delayed/mem.h"
#include "myrewrite/delayed/mem_keys.h"
#include "myrewrite/delayed/mem_sql.h"

/* One memory-mode rule's table, with its own copy of the rule. Tables of
 * older rule sets live on (not `live`) until their keys are flushed and
 * are freed at stop. */
struct mr_dmem_table {
    mr_delayed_def def; /* own copy; def.mem is NULL. From the schema: no keys
                           until `learn` knows them, then learn's names */
    char *rule;
    bool from_schema;         /* the rule names no key (and so has no bucket) */
    mr_dmem_keys learn;       /* from_schema: the primary key, learned by workers */
    size_t ncols;             /* mr_dmem_columns(&def) */
    _Atomic uint64_t nkeys;   /* keys held in shards and by the flusher */
    bool live;                /* in the rule set in force (configure lock) */
    _Atomic bool wanted;      /* flush it now: past flush_early or at memory_max_keys */
    uint64_t next_ms;         /* flusher thread: monotonic time of its next flush */
    bool reject_ready;        /* flusher thread: its dead-letter table exists */
    mr_read_port read;        /* read_pending: read_sum on this table */
    _Atomic bool marks_ready; /* read_pending: the flusher made its marks table */
    bool marks_tried;         /* flusher thread: tried on this connection */
    struct mr_dmem_table *next;
};

/* One key of one table and its net change. */
typedef struct dm_entry {
    struct dm_entry *next; /* hash chain */
    uint64_t hash;
    struct mr_dmem_table *t;
    bool del;       /* tombstone: delete the row, then apply v */
    uint64_t chunk; /* the latest chunk it was sent in (read_pending's marks) */
    bool done;      /* flusher: committed, to be freed */
    uint32_t klen;
    char *key;       /* encoded key values, in the same allocation */
    mr_dmem_val v[]; /* t->ncols; TEXT values malloc'ed */
} dm_entry;

typedef struct dm_map {
    dm_entry **b;
    size_t mask; /* buckets - 1; b NULL when empty and unallocated */
    size_t n;
} dm_map;

/* ---- delayed/mem/map.c ---- */

uint64_t dm_hash(const struct mr_dmem_table *t, const char *key, size_t klen);
dm_entry *dm_find(const dm_map *m, const struct mr_dmem_table *t, const char *key, size_t klen,
                  uint64_t hash);
/* False when out of memory (the entry is then not in the map). */
bool dm_insert(dm_map *m, dm_entry *e);
/* Doubles m's buckets (makes the first ones); false when out of memory. */
bool dm_map_grow(dm_map *m);
/* Applies batch b of table t to map m whole, or, when an allocation fails,
 * not at all (false, m unchanged). *made: the keys it added to m. Under
 * the lock of m's shard. */
struct mr_dmem_batch;
bool dm_map_apply(dm_map *m, struct mr_dmem_table *t, const struct mr_dmem_batch *b,
                  uint64_t *made);
/* The byte length of the key tuple starting at p (a batch's keys). */
size_t dm_tuple_len(const char *p, size_t nkeys);
/* Would adding batch b's deltas to e overflow a column? */
bool dm_overflows(const dm_entry *e, const struct mr_dmem_batch *b);
dm_entry *dm_entry_new(struct mr_dmem_table *t, const char *key, size_t klen, uint64_t hash);
void dm_entry_free(dm_entry *e);
/* older takes newer's effect on top of its own (newer's texts move over). */
void dm_compose(dm_entry *older, dm_entry *newer);
void dm_map_free(dm_map *m);

/* ---- delayed/mem/shards.c ---- */

typedef struct dm_shard {
    pthread_mutex_t lock;
    dm_map map;            /* guarded by lock */
    mr_counter statements; /* written by the shard's worker only */
    mr_counter refused;
    char pad[64]; /* keeps two workers' shards off one cache line */
} dm_shard;

/* The store: one shard per worker (set up by mr_dmem_init) and the tables
 * configured so far. */
typedef struct dm_store {
    dm_shard *shards;
    unsigned nshards;
    pthread_mutex_t cfg_lock; /* the table list */
    struct mr_dmem_table *tables;
} dm_store;
extern dm_store dm_M;

/* Swaps shard i's map with *fresh (an empty map); the caller owns the old one. */
void dm_swap_shard(unsigned i, dm_map *fresh);
unsigned dm_shards(void);
/* The tables configured so far (the list only grows until stop). */
struct mr_dmem_table *dm_tables(void);
/* Are t's key columns known? Not for a table from the schema before its
 * first statement, which then holds no keys either: flushers skip it. */
bool dm_table_keyed(const struct mr_dmem_table *t);
/* Is t in the rule set in force? (A reload's change is seen whole.) */
bool dm_table_live(const struct mr_dmem_table *t);

/* delayed/mem/mem_flush.c */
/* The lock that guards the flusher's pending keys (taken before any shard's
 * lock), and t's pending entry for a key under it (NULL: none, or its chunk
 * committed). */
void dm_pending_lock(void);
void dm_pending_unlock(void);
const dm_entry *dm_pending_find(const struct mr_dmem_table *t, const char *key, size_t klen,
                                uint64_t hash);
/* Under the pending lock: the number of the chunk in flight that wrote its
 * mark (0: none); and this proxy's row in the marks tables. */
uint64_t dm_pending_inflight(void);
uint64_t dm_marks_proxy(void);
bool dm_flusher_start(const mr_proxy *p);
bool dm_flusher_running(void);
/* Asks for a flush of t (NULL: only wakes the thread) now. */
void dm_flusher_wake(struct mr_dmem_table *t);
/* Final round bounded by drain_ms, then the thread stops; frees pending keys. */
void dm_flusher_stop(uint64_t drain_ms);
void dm_flusher_stats(mr_dmem_stats *out);

#endif
