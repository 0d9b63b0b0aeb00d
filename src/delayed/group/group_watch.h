/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/group/group_watch.h - group commit's batch limit (group_commit_timeout):
 * a thread that watches the batches in flight and cuts the connection of one
 * that has not finished by its deadline. Private to delayed/group/: group.c
 * starts and stops it, batch.c watches each batch.
 *
 * A runner thread begins a watch for each batch, brackets each statement it
 * sends (saying whether that statement commits: an autocommit INSERT, a
 * COMMIT) and ends the watch. At the deadline the watch thread shuts the
 * connection's socket (shutdown(2)): the statement in flight ends with a
 * lost connection, and no statement is sent after it. The end tells the
 * runner whether the batch was cut, and whether a statement that commits
 * was in flight then (its outcome is unknown) or not (nothing committed).
 *
 * Threads: start and stop on the main thread (with the runner's configure
 * and stop); the rest on the runner's threads; the watch thread's own.
 */
#ifndef MYREWRITE_DELAYED_GROUP_WATCH_H
#define MYREWRITE_DELAYED_GROUP_WATCH_H

#include <mysql.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct dg_watch dg_watch;

/* Starts the watch thread; false when it cannot (batches then run without
 * a limit but the connections' own read timeout). */
bool dg_watch_start(void);
/* Stops it, after every batch has ended. */
void dg_watch_stop(void);

/* A batch on db starts now and must be done within limit_ms. NULL: not
 * watched (no thread); every call below takes NULL. */
dg_watch *dg_watch_begin(MYSQL *db, uint64_t limit_ms);
/* A statement is about to be sent (commits: it may commit rows); false
 * when the batch was cut already: do not send it. */
bool dg_watch_send(dg_watch *w, bool commits);
/* ... and it returned. */
void dg_watch_sent(dg_watch *w);
/* The batch is over: true when it was cut, *in_doubt then whether a
 * statement that commits was in flight at the cut. */
bool dg_watch_end(dg_watch *w, bool *in_doubt);

#endif
