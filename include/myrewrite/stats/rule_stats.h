/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats/rule_stats.h - what paginate and delayed rules did, by rule name, for
 * SHOW PAGINATION, SHOW DELAYED and /metrics: counters that outlive a
 * rules reload (the rule set's own hit counters start again at 0), and
 * the DELAYED flush-duration histogram.
 *
 * Threads: entries are created by any thread (first outcome on a worker,
 * or the flusher adopting its tables) and never freed, so a pointer to one
 * stays valid for the life of the process. Finding an entry takes no lock
 * (the entry count is published with release/acquire after the entry is
 * filled in). Counters that workers write are multi-writer atomic adds
 * (taken once per paginated or DELAYED statement, never per ordinary
 * one); the flusher's counters are single-writer relaxed atomics; the
 * last error text changes under a mutex.
 */
#ifndef MYREWRITE_RULE_STATS_H
#define MYREWRITE_RULE_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/counters.h"
#include "myrewrite/rules/rules.h"

#define MR_RULE_STATS_MAX 256 /* rules tracked; later ones are not counted */
#define MR_RULE_STATS_ERR_MAX 256

typedef struct mr_rule_stats {
    /* constant once published */
    mr_rule_type kind;
    char *name;    /* the rule's name */
    char *table;   /* schema.table it acts on (delayed: the main table) */
    char *staging; /* delayed: schema.staging_table; NULL otherwise */
    /* paginate, written by workers */
    _Atomic uint64_t deferred;      /* deep pages sent as a deferred join */
    _Atomic uint64_t refused;       /* pages refused beyond max_offset */
    _Atomic uint64_t keyset_hits;   /* deep pages sent as a keyset seek */
    _Atomic uint64_t keyset_misses; /* keyset wanted, no usable bookmark */
    /* delayed, written by workers */
    _Atomic uint64_t staged;       /* staging rows in DELAYED statements the proxy sent */
    _Atomic uint64_t read_pending; /* point reads read_pending rewrote */
    /* delayed with group_commit, written by the group runner's threads (delayed/group.h) */
    _Atomic uint64_t group_batches;    /* batches that held a statement of the rule */
    _Atomic uint64_t group_rows;       /* staging rows of its statements those batches committed */
    _Atomic uint64_t group_statements; /* its statements answered by a batch */
    _Atomic uint64_t group_wait_us;    /* ... their waits (submit to answer), summed */
    _Atomic uint64_t group_parked;     /* its statements whose batch waited for the staging table */
    _Atomic uint64_t group_park_wait_us; /* ... how long their batches waited for it, summed */
    /* delayed, written by the flusher thread */
    mr_counter flushed;       /* staged rows applied */
    mr_counter rounds;        /* flush rounds that held the lock */
    mr_counter errors;        /* failed flush statements */
    mr_counter last_flush_at; /* unix ms of the end of the latest successful round, 0 = never */
    mr_counter last_flush_us; /* its duration */
    mr_counter last_error_at; /* unix ms of the latest error, 0 = never */
    char last_error[MR_RULE_STATS_ERR_MAX]; /* under the module's mutex */
} mr_rule_stats;

/* The entry of rule `name` of this kind; created (with `table` and
 * `staging` copied) when `create` and absent. NULL when absent and not
 * created, or when out of room or memory. */
mr_rule_stats *mr_rule_stats_find(mr_rule_type kind, const char *name, const char *table,
                                  const char *staging, bool create);
/* The entry of a loaded paginate or delayed rule, created on first use. */
mr_rule_stats *mr_rule_stats_of(const mr_rule *r);

/* Fills a zeroed entry (names copied); false, e zeroed again, when out of
 * memory. */
bool mr_rule_stats_init(mr_rule_stats *e, mr_rule_type kind, const char *name, const char *table,
                        const char *staging);
/* An entry of its own, outside the table above (a table a default delayed
 * rule derives: one SHOW DELAYED row per table, as many as there are
 * tables); NULL when out of memory. mr_rule_stats_free frees it, once no
 * thread can reach it. */
mr_rule_stats *mr_rule_stats_new(mr_rule_type kind, const char *name, const char *table,
                                 const char *staging);
void mr_rule_stats_free(mr_rule_stats *e);

/* Entries published so far, and the i-th of them (i < count). */
size_t mr_rule_stats_count(void);
mr_rule_stats *mr_rule_stats_at(size_t i);

/* Flusher: the latest error of this entry (text cut at MR_RULE_STATS_ERR_MAX). */
void mr_rule_stats_set_error(mr_rule_stats *e, const char *what, unsigned code, const char *msg);
/* Any thread: copies the latest error text ("" when none). */
void mr_rule_stats_last_error(mr_rule_stats *e, char *out, size_t cap);

/* ---- DELAYED flush durations: one Prometheus histogram over all tables ---- */

#define MR_FLUSH_BUCKETS 12
/* Upper bounds of the buckets in seconds, as printed in le="..." labels. */
extern const char *const mr_flush_bucket_le[MR_FLUSH_BUCKETS];

typedef struct mr_flush_histogram {
    uint64_t count;
    uint64_t sum_us;
    uint64_t bucket[MR_FLUSH_BUCKETS]; /* cumulative: rounds at or under each bound */
} mr_flush_histogram;

/* Flusher: one flush round of `us` microseconds. */
void mr_flush_observe(uint64_t us);
/* Any thread: a copy of the histogram. */
void mr_flush_histogram_get(mr_flush_histogram *h);

#endif
