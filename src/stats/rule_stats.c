/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats/rule_stats.c - per-rule outcome counters of paginate and delayed rules
 * and the flush-duration histogram (see stats/rule_stats.h).
 *
 * Entries live in a fixed array for the life of the process; `count` is
 * published with release order after an entry is complete, so readers
 * that load it with acquire order see finished entries without a lock.
 * Only creation and the error texts take `lock`. Entries of derived tables
 * (mr_rule_stats_new) live with their derived rule instead.
 */
#include "myrewrite/stats/rule_stats.h"

#include "myrewrite/rules/kind.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    pthread_mutex_t lock; /* creation; error texts */
    _Atomic size_t count;
    mr_rule_stats e[MR_RULE_STATS_MAX];
    mr_counter bucket[MR_FLUSH_BUCKETS + 1]; /* the last one is +Inf */
    mr_counter sum_us;
} S = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const uint64_t bucket_us[MR_FLUSH_BUCKETS] = {
    1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000,
};
const char *const mr_flush_bucket_le[MR_FLUSH_BUCKETS] = {
    "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5",
};

static bool same(const mr_rule_stats *e, mr_rule_type kind, const char *name)
{
    return e->kind == kind && strcmp(e->name, name) == 0;
}

static mr_rule_stats *lookup(size_t n, mr_rule_type kind, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (same(&S.e[i], kind, name))
            return &S.e[i];
    return NULL;
}

static mr_rule_stats *create(mr_rule_type kind, const char *name, const char *table,
                             const char *staging)
{
    size_t n = atomic_load_explicit(&S.count, memory_order_relaxed); /* we hold the lock */
    mr_rule_stats *e = lookup(n, kind, name);
    if (e || n == MR_RULE_STATS_MAX)
        return e;
    e = &S.e[n];
    if (!mr_rule_stats_init(e, kind, name, table, staging))
        return NULL;
    atomic_store_explicit(&S.count, n + 1, memory_order_release);
    return e;
}

mr_rule_stats *mr_rule_stats_find(mr_rule_type kind, const char *name, const char *table,
                                  const char *staging, bool want)
{
    mr_rule_stats *e = lookup(mr_rule_stats_count(), kind, name);
    if (e || !want)
        return e;
    pthread_mutex_lock(&S.lock);
    e = create(kind, name, table, staging);
    pthread_mutex_unlock(&S.lock);
    return e;
}

/* "schema.table", or the table alone when the rule names no schema
 * (`*` for a paginate rule on any table). */
static void qualified(char *out, size_t cap, const char *schema, const char *table)
{
    if (!table)
        snprintf(out, cap, "*");
    else if (schema)
        snprintf(out, cap, "%s.%s", schema, table);
    else
        snprintf(out, cap, "%s", table);
}

mr_rule_stats *mr_rule_stats_of(const mr_rule *r)
{
    char table[256], staging[256];
    mr_rule_stats *e = lookup(mr_rule_stats_count(), r->kind, r->name);
    if (e)
        return e; /* the common case: no formatting, no lock */
    const char *schema, *name, *stage;
    if (!r->settings || !r->entry->tables || !r->entry->tables(r, &schema, &name, &stage))
        return NULL; /* a kind SHOW lists no table for */
    qualified(table, sizeof table, schema, name);
    if (stage)
        qualified(staging, sizeof staging, schema, stage);
    return mr_rule_stats_find(r->kind, r->name, table, stage ? staging : NULL, true);
}

size_t mr_rule_stats_count(void) { return atomic_load_explicit(&S.count, memory_order_acquire); }

mr_rule_stats *mr_rule_stats_at(size_t i) { return i < mr_rule_stats_count() ? &S.e[i] : NULL; }

void mr_rule_stats_set_error(mr_rule_stats *e, const char *what, unsigned code, const char *msg)
{
    pthread_mutex_lock(&S.lock);
    snprintf(e->last_error, sizeof e->last_error, "%s: %u %s", what, code, msg ? msg : "");
    pthread_mutex_unlock(&S.lock);
}

void mr_rule_stats_last_error(mr_rule_stats *e, char *out, size_t cap)
{
    pthread_mutex_lock(&S.lock);
    snprintf(out, cap, "%s", e->last_error);
    pthread_mutex_unlock(&S.lock);
}

void mr_flush_observe(uint64_t us)
{
    size_t b = 0;
    while (b < MR_FLUSH_BUCKETS && us > bucket_us[b])
        b++;
    mr_stat_add(&S.bucket[b], 1);
    mr_stat_add(&S.sum_us, us);
}

void mr_flush_histogram_get(mr_flush_histogram *h)
{
    uint64_t run = 0;
    for (size_t b = 0; b < MR_FLUSH_BUCKETS; b++) {
        run += mr_stat_get(&S.bucket[b]);
        h->bucket[b] = run;
    }
    h->count = run + mr_stat_get(&S.bucket[MR_FLUSH_BUCKETS]);
    h->sum_us = mr_stat_get(&S.sum_us);
}
