/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/release.h - queue tables (rules/README.md, "queue"): claims of a session
 * that ends are released on the proxy's own connection, and a reaper
 * releases zombie claims of connections that are gone.
 *
 * A claim made with CONNECTION_ID() names the session: with pool = session
 * its own backend connection's id, with pool = transaction the id the
 * session's handshake gave (the proxy puts it in for CONNECTION_ID(); the
 * server connection of that id is pooled and serves other sessions). Once
 * the session ends nothing else uses that id (server ids are not reused).
 *
 * Order of a release (background thread, see queue/release.c): the worker
 * names the owner id and the server connection whose end must come first:
 * with pool = session the session's own, whose socket the worker closed;
 * pooled, the one it held when it ended mid-unit (or pinned), which the
 * pool closed, or none when it ended between units (all it ran has
 * committed or rolled back: the release runs at once, and no pooled
 * connection is ever waited for or killed). The thread waits until that
 * connection id is gone from information_schema.PROCESSLIST (mysqld
 * removes a connection only after rolling back whatever it left open, so
 * the claim it was running has then either committed or rolled back); only
 * then does it run the release, which touches only rows still owned by
 * the owner id in the claimed status. A connection still listed after 2 s
 * is sent KILL CONNECTION (error 1094, already gone, is fine) and waited
 * for again; after 30 s it is left to the reaper.
 *
 * Threads: mr_queue_configure at start on the main thread and on reloads
 * under the proxy's reload_lock (main thread or admin console, never two
 * at once); mr_queue_stop on the main thread after the console stopped;
 * mr_queue_session_ended from any worker (a mutex held for a few
 * instructions, never waits on I/O); everything else on the queue's
 * bgconn thread. The counters are written by that thread only.
 */
#ifndef MYREWRITE_QUEUE_H
#define MYREWRITE_QUEUE_H

#include <stdint.h>

#include "myrewrite/base/counters.h"
#include "myrewrite/base/proxy.h"
#include "myrewrite/rules/rules.h"

typedef struct mr_queue_stats {
    mr_counter release_runs;   /* ended sessions whose claims were released */
    mr_counter rows_released;  /* rows given back when their session ended */
    mr_counter kills;          /* ended sessions' connections killed after the wait */
    mr_counter reaper_runs;    /* reaper rounds that held the lock */
    mr_counter reaper_skipped; /* rounds skipped: another proxy held the lock */
    mr_counter reaper_rows;    /* zombie rows given back by the reaper */
    mr_counter errors;         /* failed statements on the own connection */
    mr_counter gave_up;        /* ended sessions' connections still listed after 30 s */
    mr_counter no_process;     /* own connections dropped: proxy_user lacks PROCESS */
} mr_queue_stats;

/* Takes the queue rules of `rs` (copied: rs may be freed afterwards) and,
 * the first time there are any, starts the background connection. Call at
 * start and after every successful reload. */
void mr_queue_configure(const mr_proxy *p, const mr_ruleset *rs);
/* A client session whose claims are owned by `owner` ended (any reason);
 * `wait`: the server connection to wait for (0: none, release at once).
 * Cheap and non-blocking; does nothing when no queue rule is active. Call
 * only for sessions that got past authentication. */
void mr_queue_session_ended(uint32_t owner, uint32_t wait);
/* Is any queue rule active (relaxed; any thread)? */
bool mr_queue_active(void);
/* Waits up to drain_ms for pending releases, then stops the thread. Call
 * after the workers are joined. */
void mr_queue_stop(uint64_t drain_ms);
/* Relaxed atomics, readable from any thread. */
const mr_queue_stats *mr_queue_stats_get(void);

#endif
