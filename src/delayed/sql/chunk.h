/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/sql/chunk.h - one flush chunk of a staged delayed rule as data, and
 * the statements that apply it (delayed/sql/chunk_sql.c): the staged rows read
 * from the staging table, summed per key in staging order, then written as
 * DELETEs, UPDATE ... JOIN (SELECT ... UNION ALL ...) or upserts of the
 * main table, and as the text a dead-letter row shows.
 *
 * Pure, any thread: reading the rows and running the statements is the
 * flusher's (delayed/flush/apply.c), on its own connection.
 */
#ifndef MYREWRITE_DELAYED_CHUNK_H
#define MYREWRITE_DELAYED_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/delayed/rule.h"
#include "myrewrite/rules/rules.h"

#define KEYS_PER_STATEMENT 500 /* keys per UPDATE ... JOIN, upsert or DELETE */

struct st_mysql_res;
struct mr_rule_stats;

/* One delayed rule as the flusher sees it. */
typedef struct table {
    mr_delayed_def def;   /* keys filled from the primary key when the rule has none */
    bool key_from_schema; /* def.keys were read from information_schema (again per connect) */
    char *key_weights;    /* per key column, what the chunk's SELECT adds after `op`: its
                             weight in the main column's collation, or NULL for a column
                             without one (dflush_setup_table; see staged.woff) */
    char *rule;
    char lock_name[65];          /* GET_LOCK name shared by every proxy */
    bool ready;                  /* staging table checked on the current connection */
    uint64_t next_ms;            /* monotonic time of the next flush */
    uint64_t setup_after_ms;     /* a failed check is retried from this time on */
    bool locked;                 /* the table is not transactional: the LOCK TABLES path */
    const char *read_from;       /* table the chunk reads: NULL for staging (FOR UPDATE), or
                                    the locked path's snapshot (a TEMPORARY table) */
    char tmp_name[65];           /* locked path: the snapshot's name, `<staging>_mrsnap` */
    struct mr_rule_stats *stats; /* the rule's SHOW DELAYED row (NULL when out of room); a
                           derived table counts there and on def.table_stats, its own */
    bool tmp_ready;              /* locked path: the snapshot exists on this connection */
    bool snap_stale;   /* locked path: the snapshot's rows are still staged or applied already:
                          emptied before anything else, never applied */
    bool unlock_owed;  /* locked path: an UNLOCK TABLES failed; sent again before anything */
    bool reject_ready; /* the dead-letter table exists (checked on this connection) */
    bool main_gone;    /* the main table does not exist: staged rows go to the dead-letter
                          table (delayed/flush/setup.c, drain_gone) */
} table;

/* A set column's value as an SQL literal in the arena ("NULL", '...', or
 * the bare digits of a counter column's value). */
typedef struct lit {
    size_t off, len;
} lit;

/* One staged row: its key as SQL literals ("'1', 'a'") in the arena, and
 * as the server compares it: per key column a 4-byte length, then the
 * column's weight (WEIGHT_STRING in its collation: 'abc', 'ABC' and 'abc '
 * are one key in utf8mb4_general_ci) or, for a column without a collation,
 * its value as the server printed it. */
typedef struct staged {
    uint64_t seq;
    size_t koff, klen;
    size_t woff, wlen;
    int64_t *delta; /* ncolumns values */
    lit *val;       /* nset_columns values (those in mask) */
    uint64_t mask;  /* set_mask: bit s sets set_columns[s] */
    bool del;
} staged;

/* A key's net effect within the chunk: its literals are those of its first
 * staged row, which name the same row of the main table as the others'. */
typedef struct net {
    size_t koff, klen;
    int64_t *delta; /* sums of the adds after the last delete (and after the last set
                       of a counter that is also a set column) */
    lit *val;       /* the last value set per set column (those in mask) */
    uint64_t mask;  /* set columns set after the last delete */
    bool del;       /* delete the row (before the adds) */
    bool add;       /* an add follows the last delete (or there is no delete) */
    size_t nrows;   /* staged rows of the key in the chunk */
    bool overflow;  /* its deltas sum past BIGINT: refused without asking the server */
} net;

typedef struct chunk {
    struct st_mysql_res *res; /* the staged rows read (apply.c owns and frees it) */
    mr_buf arena;             /* key literals, set values */
    staged *rows;
    size_t nrows;
    int64_t *deltas; /* nrows * ncolumns, then nkeys * ncolumns sums */
    lit *vals;       /* nrows * nset_columns, then nkeys * nset_columns */
    net *keys;
    size_t nkeys;
} chunk;

/* Index of set column s among the counters, or -1 (a set-only column). */
int dchunk_counter_of(const table *t, size_t s);
/* Sorts the rows by key (as the server compares it) then seq and sums them
 * per key into c->keys: a delete drops what came before it, a set replaces
 * the last value (and the adds before it, for a counter). */
void dchunk_aggregate(const table *t, chunk *c);
/* True when a key's deltas summed past BIGINT (refused without asking). */
bool dchunk_any_overflow(const chunk *c);
/* Is key k's add applied (by an upsert when the row was deleted first)? */
bool dchunk_wants_add(const table *t, const net *k);

/* `schema`.`name` */
void dchunk_put_table(mr_buf *b, const char *schema, const char *name);
/* (`k1`, `k2`) and ('1', 'a') of key k. */
void dchunk_put_key_names(mr_buf *b, const table *t);
void dchunk_put_key_tuple(mr_buf *b, const chunk *c, const net *k);
/* The keys from *at on whose sets are `mask`, up to KEYS_PER_STATEMENT
 * (*n counts them, *at moves past them): UPDATE main AS m JOIN (...) AS d
 * USING (keys) SET ... WHERE (m.keys) IN (those keys), or INSERT ... ON
 * DUPLICATE KEY UPDATE for rules with missing = insert. */
void dchunk_build_update(mr_buf *b, const table *t, const chunk *c, uint64_t mask, size_t *at,
                         size_t *n);
void dchunk_build_upsert(mr_buf *b, const table *t, const chunk *c, uint64_t mask, size_t *at,
                         size_t *n);
/* NUL-terminated texts of the dead-letter table: the key as `(k) = ('1')`,
 * and what the flush would have done to it. */
void dchunk_key_text(const table *t, const chunk *c, const net *k, mr_buf *b);
void dchunk_change_text(const table *t, const chunk *c, const net *k, mr_buf *b);

#endif
