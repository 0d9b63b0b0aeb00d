/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/mem.h - mode = memory of delayed rules: the deltas of UPDATE /
 * DELETE DELAYED are kept in the proxy's memory, coalesced per key, and a
 * background flusher writes them out (rules/README.md, "delayed").
 *
 * Three parts:
 *   - the batch: what one statement asks for, read by the rules on the
 *     worker (mr_dmem_read_stmt, pure);
 *   - the store: one shard per worker, each a hash table keyed by (table,
 *     key values) behind its own mutex, which the flusher's swap contends
 *     once per round, and read_pending's point reads of a memory table,
 *     which take every shard's mutex in turn (delayed/mem/mem.c, read_sum);
 *     mr_dmem_apply runs on the worker and never blocks beyond that mutex;
 *   - the flusher (delayed/mem/mem_flush.c): its own bgconn thread swaps every
 *     shard's table out, merges it into what it still holds, and applies
 *     it in chunks, one transaction per chunk.
 *
 * Loss window, plainly: a delta is acknowledged when it is in memory. What
 * is acknowledged and not yet committed by a flush (up to flush_interval
 * worth, plus whatever a failing server holds back) is lost if the proxy
 * is killed -9 or crashes.
 */
#ifndef MYREWRITE_DELAYED_MEM_H
#define MYREWRITE_DELAYED_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/base/counters.h"
#include "myrewrite/base/proxy.h"
#include "myrewrite/delayed/mem_sql.h" /* mr_dmem_columns */
#include "myrewrite/delayed/rule.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/proto/stmt_execute.h"
#include "myrewrite/rules/rules.h"

/* What a statement does to one column. */
typedef enum mr_dmem_op {
    MR_DMEM_ADD,      /* col = col + n */
    MR_DMEM_SET_INT,  /* col = n, on a counter column (later adds add to n) */
    MR_DMEM_SET_TEXT, /* col = 'text', on a set-only column */
} mr_dmem_op;

typedef struct mr_dmem_colop {
    uint16_t col; /* index in the table's column list (mr_dmem_columns) */
    uint8_t op;   /* mr_dmem_op */
    int64_t n;
    uint32_t off; /* SET_TEXT: the value's bytes in batch->text */
    uint32_t len;
} mr_dmem_colop;

/* One memory-mode statement, read: the same column operations on every
 * key tuple. Key tuples are stored back to back in `keys`, each as its
 * key values in the rule's key order, every value a u32 length (little
 * endian) and its bytes: the literal's value (a string unquoted and
 * unescaped, a number as written without leading zeros), so `5` and '5'
 * are the same key. */
typedef struct mr_dmem_batch {
    const mr_delayed_def *def;
    bool del; /* DELETE DELAYED: a tombstone per key */
    mr_dmem_colop ops[MR_DELAYED_MAX_TERMS];
    unsigned nops;
    mr_buf keys;
    uint32_t nrows; /* key tuples */
    mr_buf text;    /* SET_TEXT values */
} mr_dmem_batch;

/* Reads a parsed DELAYED statement (d, from mr_delayed_parse) for a
 * memory-mode rule into b (reset first), a `?` taking its value from
 * params (NULL: a `?` is refused). False with a message in err when it
 * does not fit the rule or the mode. `no_backslash` follows the session's
 * sql_mode. Pure, any thread. */
bool mr_dmem_read_stmt(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                       const mr_delayed_def *def, bool no_backslash, const mr_exec_params *params,
                       mr_dmem_batch *b, char *err, size_t errlen);
void mr_dmem_batch_free(mr_dmem_batch *b);

/* A snapshot of the memory mode's counters. */
typedef struct mr_dmem_stats {
    uint64_t statements; /* statements added to memory */
    uint64_t refused;    /* statements refused at memory_max_keys */
    uint64_t keys_held;  /* distinct keys waiting for a flush, over all tables */
    uint64_t rounds;     /* flush rounds that flushed at least one table */
    uint64_t chunks;     /* committed chunk transactions */
    uint64_t keys;       /* keys written by committed chunks */
    uint64_t errors;     /* failed chunks (kept and retried) */
    uint64_t lost;       /* keys dropped after a COMMIT with an unknown outcome */
} mr_dmem_stats;

/* ---- store (delayed/mem/mem.c) ---------------------------------------------- */

/* Sets up one shard per worker; main thread, before the workers start. */
bool mr_dmem_init(unsigned shards);
/* Gives every memory-mode rule of rs its table (def->mem, and def->mem_keys
 * for a rule without key); tables of older sets stay until their deltas are
 * flushed. Main thread or under the
 * reload lock, before rs is handed to the workers. False: no flusher
 * (logged), so memory-mode statements are refused. */
void mr_dmem_configure(const mr_proxy *p, const mr_ruleset *rs);
/* Adds a batch on worker `shard`. 0 and *affected on success; else -1
 * with a message in err (the table is at memory_max_keys, or has no
 * flusher). Never blocks but on the shard's mutex. */
int mr_dmem_apply(unsigned shard, const mr_dmem_batch *b, uint64_t *affected, char *err,
                  size_t errlen);
/* Final flush (bounded by drain_ms), then stops the flusher and frees
 * everything. Main thread, after the workers are joined. */
void mr_dmem_stop(uint64_t drain_ms);
void mr_dmem_stats_read(mr_dmem_stats *out);

/* FLUSH DELAYED for memory tables: a job on the flusher's own connection
 * runs a round over the tables matching the filter (`t`, `schema.t`, "" =
 * all), then done(arg, rc) on its thread: 0 done; 2 a chunk of a table
 * asked for failed (its keys are kept and retried); 1 the flusher stopped
 * first. False, done never called: no flusher, or no memory. Any thread
 * (delayed/flush_request.h gathers it with the staged flusher's job). */
bool mr_dmem_flush_job(const char *table_filter, void (*done)(void *arg, int rc), void *arg);

#endif
