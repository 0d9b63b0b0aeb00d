/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush.h - the staging tables of delayed rules and the flusher that
 * applies them to their main tables (rules/README.md, "delayed").
 *
 * Staged mode: workers rewrite UPDATE/DELETE DELAYED to INSERTs into the
 * staging table (delayed/statement/statement.c); this module, on its own bgconn thread
 * and the proxy's own connection, creates each staging table if missing and
 * every flush_interval moves the staged rows into the main table, one
 * InnoDB transaction per chunk of flush_rows rows: read them FOR UPDATE in
 * seq order, sum the deltas per key in C, apply deletes then adds, delete
 * exactly the rows read, commit. Whatever dies when, every staged row is
 * applied once. Several proxies share the work through GET_LOCK.
 *
 * Default rules (`table = s.*`): the flusher also derives the rules of the
 * tables workers registered (delayed/derive.h), adopts staging tables such
 * a rule would own, and flushes derived tables like the others; they stay
 * across reloads.
 *
 * Threads: mr_delayed_configure at start on the main thread and on reloads
 * under the proxy's reload_lock (main thread or admin console, never two at
 * once); mr_delayed_stop on the main thread after the console stopped;
 * everything else on the flusher's bgconn thread. The counters are written
 * by that thread only.
 */
#ifndef MYREWRITE_DELAYED_FLUSH_H
#define MYREWRITE_DELAYED_FLUSH_H

#include <stdbool.h>
#include <stdint.h>

#include "myrewrite/base/counters.h"
#include "myrewrite/base/proxy.h"
#include "myrewrite/rules/rules.h"

typedef struct mr_delayed_stats {
    mr_counter rounds;  /* flush rounds that held the lock */
    mr_counter skipped; /* rounds skipped: another proxy held the lock */
    mr_counter chunks;  /* committed chunk transactions */
    mr_counter rows;    /* staged rows applied */
    mr_counter keys;    /* distinct keys written (updates, upserts, deletes) */
    mr_counter errors;  /* failed statements (chunk rolled back, retried later) */
} mr_delayed_stats;

/* Takes the delayed rules of `rs` (copied) and, the first time there are
 * any, starts the flusher's own connection. Call at start and after every
 * successful reload. */
void mr_delayed_configure(const mr_proxy *p, const mr_ruleset *rs);
/* Runs a final flush (waiting up to drain_ms for it), then stops the
 * thread. Call after the workers are joined. */
void mr_delayed_stop(uint64_t drain_ms);
/* FLUSH DELAYED: a job on the flusher's own connection runs a round over
 * the tables matching `table_filter` (`t`, `schema.t`, or "" for all) and
 * then calls done(arg, rc) on the flusher's thread: 0 done; 2 a chunk of a
 * table asked for failed (kept and retried); 1 the flusher stopped before
 * running it. False, and done is never called, when there is no flusher
 * (no delayed rule or no proxy_user) or no memory. Any thread
 * (delayed/flush_request.h gathers it with the memory flusher's job). */
typedef void (*mr_delayed_flush_done)(void *arg, int rc);
bool mr_delayed_flush_job(const char *table_filter, mr_delayed_flush_done done, void *arg);
/* Asks for a round of every staged table now, without waiting (a rule's
 * flush_early was passed). Any thread; a mutex for a few instructions. */
void mr_delayed_wake(void);
/* At start, before the listener: waits up to timeout_ms until the flusher
 * has set up its tables (created the missing staging tables), so that the
 * first staged statements do not meet a missing one. Returns at once when
 * there is no flusher and as soon as its connect fails; false when it
 * gave up waiting. Main thread. */
bool mr_delayed_wait_staging(uint64_t timeout_ms);
/* A staged statement met a missing staging table (1146), or failed
 * otherwise: the flusher sets up its tables not ready at once (at most
 * every 200 ms), not after the 10 s it waits between two failed checks,
 * and creates again a staging table dropped outside the proxy. Any thread,
 * never waits. */
void mr_delayed_setup_now(void);
/* The process's registry of tables derived by default rules
 * (delayed/derive.h), for the workers' mr_stmt_ctx; NULL when out of
 * memory. Any thread. */
struct mr_derive_reg *mr_delayed_derived(void);
/* The same registry as a port for the statement side (mr_stmt_ctx.derived);
 * NULL when it could not be made. */
const struct mr_derive_port *mr_delayed_derive_port(void);
/* Relaxed atomics, readable from any thread. */
const mr_delayed_stats *mr_delayed_stats_get(void);

#endif
