/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/flush_impl.h - what the files of the staged flusher share,
 * lowest first: the rule copies (table.c), the statements and counters
 * (exec.c), one chunk (apply.c), a table's setup (setup.c), derived tables
 * (flush_derive.c), the path for non-transactional tables
 * (flush_locked.c); the thread (flush.c) is above them all.
 *
 * Flusher thread only: every function here runs on its bgconn connection.
 */
#ifndef MYREWRITE_DELAYED_FLUSH_IMPL_H
#define MYREWRITE_DELAYED_FLUSH_IMPL_H

#include <mysql.h>
#include <stdbool.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/delayed/derive.h"
#include "myrewrite/delayed/flush.h"
#include "myrewrite/rules/rules.h"

#include "delayed/sql/chunk.h" /* table, chunk */

/* ---- the rule copies (delayed/flush/table.c) ---- */

struct dflush_default;

/* The flusher's copies of one rule set: its staged rules and its default
 * rules. */
typedef struct dflush_tables {
    table *t;
    size_t n;
    struct dflush_default *d; /* default rules (derive = yes) */
    size_t nd;
} dflush_tables;

/* The flusher's copy of rule def (named rule); false when out of memory. */
bool dflush_table_from_def(table *t, const mr_delayed_def *def, const char *rule,
                           struct mr_rule_stats *stats);
void dflush_table_free(table *t);
/* Frees the n names of v and v. */
void dflush_names_free(char **v, size_t n);
/* The copies of rs's staged and default rules; false when out of memory. */
bool dflush_tables_from(dflush_tables *ts, const mr_ruleset *rs);
void dflush_tables_free(dflush_tables *ts);

/* ---- statements and counters (delayed/flush/exec.c) ---- */

/* The counters SHOW DELAYED and /metrics read (mr_delayed_stats_get). */
mr_delayed_stats *dflush_stats(void);
/* Runs the text built in b (or sql); logs and counts a failure. */
bool dflush_exec(MYSQL *db, const mr_buf *b, const table *t, const char *what);
bool dflush_exec_str(MYSQL *db, const char *sql, const table *t, const char *what);
/* `schema`.`name` */
void dflush_put_table(mr_buf *b, const char *schema, const char *name);
/* `<name>_set`: where a staged row keeps the value of SET name = literal. */
void dflush_put_set_ident(mr_buf *b, const char *name);
/* Appends the formatted text (up to 63 bytes). */
void dflush_put_fmt(mr_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The result of `sql_head WHERE TABLE_SCHEMA = <t's schema> AND TABLE_NAME =
 * name`; NULL when the query failed (logged). */
MYSQL_RES *dflush_schema_query(MYSQL *db, const table *t, const char *sql_head, const char *name);
/* 1: table `name` of t's schema exists, 0: it does not, -1: unknown. */
int dflush_table_exists(MYSQL *db, const table *t, const char *name);
/* GET_LOCK / RELEASE_LOCK (fn) on t's lock name; true when it returned 1. */
bool dflush_named_lock(MYSQL *db, const table *t, const char *fn);
/* Counts one applied chunk of n rows, globally and on the rule's SHOW
 * DELAYED row. */
void dflush_count_chunk(const table *t, long n);
/* Counts a failure (`what` failed with `code`, 0 when not a server error,
 * and `msg`) globally and on the rule's SHOW DELAYED row. */
void dflush_count_error(const table *t, const char *what, unsigned code, const char *msg);

/* ---- one chunk (delayed/flush/apply.c) ---- */

/* One chunk of t in one transaction; the rows read (applied, or moved to
 * the dead-letter table), or -1 on a failure. */
long dflush_chunk(MYSQL *db, table *t);
/* The chunk again, key by key, the keys the server refuses moved to the
 * dead-letter table; the rows read or -1. */
long dflush_chunk_isolating(MYSQL *db, table *t);
/* Reads up to flush_rows rows of t->read_from in seq order, sums them per key
 * and applies deletes then adds to the main table; no transaction of its
 * own. When the server refuses the data, the keys are applied one by one
 * and those it refuses go to the dead-letter table (*rejected: their rows).
 * The rows read, or -1 on a failure. *written counts the keys written
 * by the statements that succeeded (0: the main table is untouched). */
long dflush_apply(MYSQL *db, table *t, uint64_t *written, long *rejected);

/* ---- a table's setup (delayed/flush/setup.c) ---- */

/* Checks the table and creates its staging table if missing; sets ready. */
bool dflush_setup_table(MYSQL *db, table *t);

/* ---- default rules (delayed/flush/flush_derive.c) ---- */

struct mr_derive_reg;
struct mr_derived;

/* A default rule as the flusher keeps it. */
typedef struct dflush_default {
    char schema[65]; /* "*": any */
    mr_derive_how how;
    struct mr_rule_stats *stats; /* its SHOW DELAYED row: derived tables count there */
} dflush_default;

typedef enum dflush_derived {
    DERIVE_OK,     /* *out set up (staging table ready), *def the rule to publish */
    DERIVE_FAILED, /* why says why; permanent */
    DERIVE_RETRY,  /* the connection broke; try again later */
} dflush_derived;

/* Derives the rule of e's table from information_schema: key = its primary
 * key, counters = its other integer and DECIMAL columns; creates the
 * staging table. */
dflush_derived dflush_derive(MYSQL *db, const struct mr_derived *e, struct mr_rule_stats *stats,
                             table *out, mr_delayed_def **def, char *why, size_t whylen);
/* Registers as pending the tables of d's schemas whose staging table
 * exists, skipping names `owned` says are another rule's. */
void dflush_adopt(MYSQL *db, struct mr_derive_reg *g, const dflush_default *d,
                  bool (*owned)(const dflush_default *d, const char *schema, const char *name));

/* The locked path's chunk (delayed/flush/flush_locked.c): snapshot, delete,
 * unlock, apply. The rows applied, or -1. */
long dflush_locked_chunk(MYSQL *db, table *t);
/* A locked-path table about to be replaced by a reload: sends an UNLOCK
 * TABLES it owes, empties a stale snapshot and applies what its snapshot
 * still holds, with its own settings. False when something is left. */
bool dflush_locked_settle(MYSQL *db, table *t);

#endif
