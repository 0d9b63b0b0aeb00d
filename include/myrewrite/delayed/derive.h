/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/derive.h - the tables whose delayed rule a default rule derives
 * from the schema (rules/README.md, "Default rule: derived from the schema").
 *
 * A registry keyed by schema.table. A worker that meets a DELAYED statement
 * on a table with no rule of its own but a matching default rule looks the
 * table up: absent, it is added as pending (the flusher is woken); pending,
 * the statement goes to the server without DELAYED; ready, it is staged
 * under the derived rule; failed, it is refused with the reason. The
 * flusher's thread takes pending entries, reads the table's primary key and
 * columns on its own connection, creates the staging table and publishes
 * the derived rule. Entries are never removed, so a derived rule, once
 * published, stays valid (and is read without the lock) until the registry
 * is freed after the workers and the flusher have stopped.
 *
 * Threads: any; every call holds the registry's mutex for a few
 * instructions (a hash lookup, a copy of a short reason) and never waits
 * for anything else, but for the walks of every entry that the flusher's
 * retries and the console's and /metrics' listings make (a pointer per
 * entry).
 */
#ifndef MYREWRITE_DELAYED_DERIVE_H
#define MYREWRITE_DELAYED_DERIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/delayed/rule.h"
#include "myrewrite/rules/rules.h"

#define MR_DERIVE_NAME 65    /* 64 characters of a MySQL name + NUL */
#define MR_DERIVE_MAX 100000 /* derived tables per process; more are refused */

typedef enum mr_derive_state {
    MR_DERIVE_ABSENT,
    MR_DERIVE_PENDING, /* the flusher has yet to derive it: statements go to the server */
    MR_DERIVE_READY,   /* staged under the derived rule */
    MR_DERIVE_FAILED,  /* refused with the reason */
} mr_derive_state;

/* What a default rule says for each table it derives, copied into the
 * entry so that it outlives a reload that drops the rule. */
typedef struct mr_derive_how {
    char rule[MR_DERIVE_NAME];            /* the default rule's name */
    char staging_pattern[MR_DERIVE_NAME]; /* holds {table} */
    char engine[MR_DERIVE_NAME];
    uint64_t flush_interval_ms;
    uint64_t flush_rows;
} mr_derive_how;

/* One derived table. Names and `how` are immutable once added; the rest is
 * guarded by the registry's mutex (the flusher's calls below). */
typedef struct mr_derived {
    char schema[MR_DERIVE_NAME];
    char table[MR_DERIVE_NAME];
    mr_derive_how how;
    mr_derive_state state;
    bool taken;              /* the flusher is deriving it */
    bool retry;              /* failed: derive it again (the schema may have changed) */
    char why[300];           /* failed: the reason */
    mr_delayed_def *def;     /* ready: owned by the registry, immutable */
    struct mr_derived *next; /* hash chain */
    struct mr_derived *all;  /* every entry, newest first */
} mr_derived;

typedef struct mr_derive_reg mr_derive_reg;

/* How the statement side, which is pure, reaches the registry: the lookup
 * below and the registry it runs on, handed in through mr_stmt_ctx.derived. */
typedef struct mr_derive_port {
    mr_derive_state (*lookup)(mr_derive_reg *g, const char *schema, const char *table,
                              const mr_derive_how *how, bool *added, const mr_delayed_def **def,
                              char *why, size_t whylen);
    mr_derive_reg *reg;
} mr_derive_port;

mr_derive_reg *mr_derive_reg_new(void);
/* Frees every entry and derived rule: only once no thread uses them. */
void mr_derive_reg_free(mr_derive_reg *g);

/* `how` of a default rule. */
void mr_derive_how_of(const char *rule, const mr_delayed_def *dflt, mr_derive_how *how);

/* A worker's lookup. Absent and `add`: added as pending with `how`, *added
 * set. Ready: *def is the derived rule (valid until mr_derive_reg_free).
 * Failed: the reason into why. Returns the state (PENDING after an add; an
 * add beyond MR_DERIVE_MAX gives FAILED). */
mr_derive_state mr_derive_lookup(mr_derive_reg *g, const char *schema, const char *table,
                                 const mr_derive_how *how, bool *added, const mr_delayed_def **def,
                                 char *why, size_t whylen);

/* The flusher: a pending entry nobody is deriving, or a failed one marked
 * for a retry, now marked taken (its names and how may be read without the
 * lock; a failed one stays failed, and refused, until it is published);
 * NULL when none. */
mr_derived *mr_derive_take(mr_derive_reg *g);
/* The flusher publishes what it derived: the entry becomes ready and the
 * registry owns def (made by mr_derive_def_new). */
void mr_derive_publish(mr_derive_reg *g, mr_derived *e, mr_delayed_def *def);
/* ... or the reason it cannot be derived; the entry stays failed. */
void mr_derive_fail(mr_derive_reg *g, mr_derived *e, const char *why);
/* ... or gives it back, still pending (the connection broke meanwhile). */
void mr_derive_untake(mr_derive_reg *g, mr_derived *e);

/* Marks every failed entry for another try: the flusher calls it now and
 * then, so a table created, or given a primary key, after its first
 * DELAYED statement is derived without a restart. */
void mr_derive_retry_failed(mr_derive_reg *g);
/* Is schema.table in the registry (any state)? */
bool mr_derive_known(mr_derive_reg *g, const char *schema, const char *table);
/* Counts of entries per state (index mr_derive_state). */
void mr_derive_counts(mr_derive_reg *g, uint64_t counts[4]);
/* The SHOW DELAYED rows (def->table_stats) of the ready tables default rule
 * `rule` derived, ordered by table name: an array the caller frees, NULL
 * when out of memory. The entries stay valid until mr_derive_reg_free. */
struct mr_rule_stats **mr_derive_stats_of(mr_derive_reg *g, const char *rule, size_t *n);

/* The staging table's name: pattern with {table} replaced. False when it
 * passes 64 characters. */
bool mr_derive_staging_name(const char *pattern, const char *table, char *out, size_t cap);

/* A derived rule: staged, missing = ignore, the given key and counter
 * columns (copied), and counters of its own for SHOW DELAYED and /metrics
 * (table_stats). NULL when out of memory. */
mr_delayed_def *mr_derive_def_new(const mr_derived *e, const char *staging, char *const *keys,
                                  size_t nkeys, char *const *cols, size_t ncols);
void mr_derive_def_free(mr_delayed_def *d);

#endif
