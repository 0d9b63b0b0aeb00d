/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/mem/shards.c - the store of mode = memory (delayed/mem/mem_impl.h):
 * its shards, one per worker, and the list of its tables; and what the
 * flusher (delayed/mem/mem_flush.c) asks of them. Below both the flusher
 * and the store's own entry points (delayed/mem/mem.c), which use it.
 *
 * Threads: mr_dmem_init on the main thread; dm_swap_shard, dm_tables and
 * dm_table_live on the flusher (the table list under cfg_lock).
 */
#include <pthread.h>
#include <stdlib.h>

#include "delayed/mem/mem_impl.h"

dm_store dm_M = {.cfg_lock = PTHREAD_MUTEX_INITIALIZER};

bool mr_dmem_init(unsigned shards)
{
    dm_M.nshards = shards ? shards : 1;
    dm_M.shards = calloc(dm_M.nshards, sizeof *dm_M.shards);
    if (!dm_M.shards)
        return false;
    for (unsigned i = 0; i < dm_M.nshards; i++)
        pthread_mutex_init(&dm_M.shards[i].lock, NULL);
    return true;
}

void dm_swap_shard(unsigned i, dm_map *fresh)
{
    dm_shard *sh = &dm_M.shards[i];
    pthread_mutex_lock(&sh->lock);
    dm_map old = sh->map;
    sh->map = *fresh;
    pthread_mutex_unlock(&sh->lock);
    *fresh = old;
}

bool dm_table_keyed(const struct mr_dmem_table *t)
{
    return !t->from_schema || mr_dmem_keys_known(&t->learn);
}

unsigned dm_shards(void) { return dm_M.shards ? dm_M.nshards : 0; }

struct mr_dmem_table *dm_tables(void)
{
    pthread_mutex_lock(&dm_M.cfg_lock);
    struct mr_dmem_table *t = dm_M.tables;
    pthread_mutex_unlock(&dm_M.cfg_lock);
    return t;
}

bool dm_table_live(const struct mr_dmem_table *t)
{
    pthread_mutex_lock(&dm_M.cfg_lock);
    bool live = t->live;
    pthread_mutex_unlock(&dm_M.cfg_lock);
    return live;
}
