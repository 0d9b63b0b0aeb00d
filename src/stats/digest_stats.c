/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats/digest_stats.c - per-digest counters of one worker (see stats/digest_stats.h).
 * Worker thread writes; readers lock the table.
 */
#include "myrewrite/stats/digest_stats.h"

#include <stdlib.h>
#include <string.h>

bool mr_digest_stats_init(mr_digest_stats *t, size_t cap)
{
    memset(t, 0, sizeof(*t));
    size_t pow2 = 16;
    while (pow2 < cap * 2) /* keep the load under one half */
        pow2 *= 2;
    t->slots = calloc(pow2, sizeof(*t->slots));
    if (!t->slots)
        return false;
    t->cap = pow2;
    pthread_mutex_init(&t->lock, NULL);
    strcpy(t->overflow.text, "(other digests: table full)");
    return true;
}

void mr_digest_stats_free(mr_digest_stats *t)
{
    if (!t->slots)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t->slots);
    t->slots = NULL;
}

mr_digest_entry *mr_digest_stats_get(mr_digest_stats *t, uint64_t hash, const char *text)
{
    if (hash == 0)
        hash = 1; /* 0 marks an empty slot */
    size_t mask = t->cap - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        mr_digest_entry *e = &t->slots[i];
        if (e->hash == hash)
            return e;
        if (e->hash != 0)
            continue;
        if (t->used * 2 >= t->cap)
            return &t->overflow;
        pthread_mutex_lock(&t->lock);
        strncpy(e->text, text, sizeof(e->text) - 1);
        e->hash = hash; /* published last: readers under the lock see whole entries */
        t->used++;
        pthread_mutex_unlock(&t->lock);
        return e;
    }
}

void mr_digest_stats_record(mr_digest_entry *e, uint64_t elapsed_us)
{
    mr_stat_add(&e->count, 1);
    mr_stat_add(&e->total_us, elapsed_us);
    if (elapsed_us > mr_stat_get(&e->max_us))
        atomic_store_explicit(&e->max_us, elapsed_us, memory_order_relaxed);
}
