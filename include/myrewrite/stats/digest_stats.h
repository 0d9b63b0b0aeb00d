/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats/digest_stats.h - per-digest statement counters of one worker.
 *
 * Written only by its worker thread (the hot path takes no lock: counters
 * are single-writer relaxed atomics); a new digest is inserted under the
 * table's mutex, which readers (admin, metrics) also take to walk it.
 * Bounded: once full, new digests are counted in one overflow entry.
 */
#ifndef MYREWRITE_DIGEST_STATS_H
#define MYREWRITE_DIGEST_STATS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/counters.h"

#define MR_DIGEST_TEXT_MAX 256

typedef struct mr_digest_entry {
    uint64_t hash;                 /* 0 = empty slot */
    char text[MR_DIGEST_TEXT_MAX]; /* normalized text, truncated */
    mr_counter count;
    mr_counter total_us; /* from command to the end of its response */
    mr_counter max_us;
    mr_counter rewritten;
    mr_counter blocked;
} mr_digest_entry;

typedef struct mr_digest_stats {
    pthread_mutex_t lock;   /* taken to insert and to read the table */
    mr_digest_entry *slots; /* open addressing, `cap` entries */
    size_t cap, used;
    mr_digest_entry overflow; /* digests that found no room */
} mr_digest_stats;

bool mr_digest_stats_init(mr_digest_stats *t, size_t cap);
void mr_digest_stats_free(mr_digest_stats *t);
/* Finds or inserts the entry for a digest; never NULL. Worker thread only. */
mr_digest_entry *mr_digest_stats_get(mr_digest_stats *t, uint64_t hash, const char *text);
/* Adds one finished statement. Worker thread only. */
void mr_digest_stats_record(mr_digest_entry *e, uint64_t elapsed_us);

#endif
