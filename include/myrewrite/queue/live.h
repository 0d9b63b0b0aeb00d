/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/live.h - the ids of this proxy's live pooled sessions, for the
 * reaper (queue/release.c).
 *
 * With `pool = transaction` a session's claims are owned by its own id (the
 * thread id its handshake gave, what CONNECTION_ID() gives it), and the
 * server connection of that id is pooled: it may close while the session
 * lives on, over other connections. The reaper, which takes an owner that
 * is not in PROCESSLIST for a zombie, counts these ids as live too. A
 * session is added before its first command goes to the server (so before
 * it can claim anything) and removed as it ends.
 *
 * Threads: add and remove from any worker, ids from the queue's bgconn
 * thread; a mutex held for a few instructions (a hash set), never on I/O.
 */
#ifndef MYREWRITE_QUEUE_LIVE_H
#define MYREWRITE_QUEUE_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* false: out of memory (the session's claims are then left as a zombie's
 * to the reaper should its login connection close). */
bool mr_queue_live_add(uint32_t id);
void mr_queue_live_remove(uint32_t id);
/* Appends the live ids to *v (n entries, room for cap; grown with
 * realloc); false: out of memory. */
bool mr_queue_live_ids(uint64_t **v, size_t *n, size_t *cap);
/* Frees the set (the queue's stop, after the workers are gone). */
void mr_queue_live_free(void);

#endif
