/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/mem_store.c - where mode = memory keeps its keys (see
 * delayed/mem_impl.h): one shard per worker, each a map behind its own
 * mutex, and the list of tables behind the configuration lock. The store's
 * entry points (delayed/mem.c) and the flusher (delayed/mem_flush.c) both
 * reach them here, so neither calls the other for them.
 *
 * Threads: dm_store_init / dm_store_free_shards on the main thread; a
 * worker uses its own shard; the flusher swaps shards' maps.
 */
#include <stdlib.h>

#include "delayed/mem_impl.h"

static struct {
    dm_shard *shards;
    unsigned nshards;
    pthread_mutex_t cfg_lock; /* the table list */
    struct mr_dmem_table *tables;
} M = {.cfg_lock = PTHREAD_MUTEX_INITIALIZER};

bool dm_store_init(unsigned shards)
{
    M.nshards = shards ? shards : 1;
    M.shards = calloc(M.nshards, sizeof *M.shards);
    if (!M.shards)
        return false;
    for (unsigned i = 0; i < M.nshards; i++)
        pthread_mutex_init(&M.shards[i].lock, NULL);
    return true;
}

void dm_store_free_shards(void)
{
    for (unsigned i = 0; M.shards && i < M.nshards; i++) {
        dm_map_free(&M.shards[i].map);
        pthread_mutex_destroy(&M.shards[i].lock);
    }
    free(M.shards);
    M.shards = NULL;
}

unsigned dm_shards(void) { return M.shards ? M.nshards : 0; }

dm_shard *dm_shard_at(unsigned i) { return &M.shards[i]; }

void dm_swap_shard(unsigned i, dm_map *fresh)
{
    dm_shard *sh = &M.shards[i];
    pthread_mutex_lock(&sh->lock);
    dm_map old = sh->map;
    sh->map = *fresh;
    pthread_mutex_unlock(&sh->lock);
    *fresh = old;
}

void dm_tables_lock(void) { pthread_mutex_lock(&M.cfg_lock); }

void dm_tables_unlock(void) { pthread_mutex_unlock(&M.cfg_lock); }

struct mr_dmem_table **dm_tables_head(void) { return &M.tables; }

struct mr_dmem_table *dm_tables(void)
{
    pthread_mutex_lock(&M.cfg_lock);
    struct mr_dmem_table *t = M.tables;
    pthread_mutex_unlock(&M.cfg_lock);
    return t;
}

bool dm_table_keyed(const struct mr_dmem_table *t)
{
    return !t->from_schema || mr_dmem_keys_known(&t->learn);
}

bool dm_table_live(const struct mr_dmem_table *t)
{
    pthread_mutex_lock(&M.cfg_lock);
    bool live = t->live;
    pthread_mutex_unlock(&M.cfg_lock);
    return live;
}
