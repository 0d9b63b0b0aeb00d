/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/group.h - group commit for staged UPDATE DELAYED: autocommit
 * statements of many sessions are staged together, one multi-row INSERT
 * per batch (delayed/group_sql.h) on a connection of the proxy's own, and
 * each session is answered once that INSERT has committed.
 *
 * A session (on its worker) makes a member holding its staging INSERT and
 * submits it; the runner writes the answer in it (ok, or the ERR to send),
 * marks it answered and calls its wake (on the runner's thread, under the
 * member's lock); the session then reads the answer on its worker
 * (delayed/session/session_group.c). The member is shared: the submitter's
 * reference and, once submitted, the runner's; the last to let go frees
 * it. A submitter that stops waiting (its session ended) clears the wake
 * as it lets go, so the runner's answer wakes nobody.
 *
 * Connections: MR_DGROUP_CONNS bgconn threads (lazy: none opens before the
 * first batch) take batches from one queue, so at most that many batches
 * are in flight; while one commits, the next fills. A batch takes members
 * in arrival order up to the head's rule's group_commit_rows and
 * group_commit_bytes (always at least one). It waits up to the rule's
 * group_commit_wait for more only when sessions write concurrently (the
 * last batch held more than one statement, or more were queued behind it):
 * a session writing alone is never kept waiting. One prefix (staging table
 * and column list) makes one autocommit INSERT; several are run in one
 * transaction. A failed batch stages nothing and answers every member with
 * the server's error. A batch not committed within the head's
 * group_commit_timeout is cut: a watch thread shuts the connection's
 * socket, which ends the statement in flight with an error and closes the
 * connection. Its members then get an ERR that says what happened to their
 * rows, as far as it is known: "nothing staged" when no statement that
 * commits was in flight (the server rolls an open transaction back when
 * its connection closes, and a COMMIT not sent never lands), "may or may
 * not have been staged" when the autocommit INSERT or the COMMIT was.
 * A committed batch's warnings (on the proxy's connection, so the client's
 * SHOW WARNINGS cannot list them) are logged and counted in every member's
 * OK. When a runner thread cannot connect, the queued
 * members (never sent) come back `unsent`, for their sessions to send. While the staging table does
 * not exist yet (1146, a very first start: the flusher creates it), the batch is retried, the
 * flusher woken, for up to delayed_park_timeout.
 *
 * Threads: mr_dgroup_configure and mr_dgroup_stop on the main thread (or a
 * reload under the proxy's reload_lock); submit and the
 * member calls on any thread; the batches on the runner's bgconn threads.
 */
#ifndef MYREWRITE_DELAYED_GROUP_H
#define MYREWRITE_DELAYED_GROUP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "myrewrite/base/counters.h"
#include "myrewrite/base/proxy.h"
#include "myrewrite/delayed/rule.h"
#include "myrewrite/delayed/stage.h"
#include "myrewrite/rules/rules.h"

#define MR_DGROUP_CONNS 2

struct mr_rule_stats;

typedef struct mr_dgroup_member {
    struct mr_dgroup_member *next; /* the runner's queue */
    const char *sql;               /* the staging INSERT */
    size_t len;
    mr_dstage stage;                       /* ... as data */
    void *copy;                            /* owned: the deltas, the rows and the text stage and sql
                                              point into */
    uint32_t rows;                         /* staging rows in it */
    uint64_t wait_us, max_rows, max_bytes; /* its rule's bounds */
    uint64_t timeout_ms;                   /* its rule's group_commit_timeout */
    struct mr_rule_stats *stats;           /* its rule's counters (NULL: none) */
    uint64_t joined_ns;                    /* when it was submitted */
    pthread_mutex_t lock;                  /* guards refs, answered and wake */
    unsigned refs;                         /* the submitter's, and the runner's once queued */
    bool answered;                         /* the answer below is written */
    void (*wake)(void *arg);               /* called once answered; NULL: nobody waits */
    void *wake_arg;
    /* the answer, written by the runner before answered is set */
    bool ok;
    bool unsent;       /* not ok, and never sent: the runner could not connect;
                          the submitter sends it on its own connection */
    uint16_t warnings; /* ok: the warnings of the batch's INSERTs (all members') */
    uint16_t err_code;
    char sqlstate[6];
    char msg[640];
} mr_dgroup_member;

/* Process-wide, relaxed atomics: any thread reads them. */
typedef struct mr_dgroup_stats {
    mr_counter batches;      /* batches run (committed or failed) */
    mr_counter failed;       /* ... of them failed */
    mr_counter statements;   /* statements answered by a batch */
    mr_counter rows;         /* staging rows in committed batches (the statements') */
    mr_counter merged;       /* ... of them summed into another row of their key */
    mr_counter waited;       /* statements answered (each waited for its batch) */
    mr_counter wait_us;      /* ... their waits, submit to answer, summed */
    mr_counter parked;       /* statements whose batch waited for the staging table */
    mr_counter park_wait_us; /* ... that wait (the batch's, for each of them), summed */
} mr_dgroup_stats;

/* A member for a copy of the staging INSERT st, of `rows` rows, under rule
 * def, whose answer calls wake(wake_arg); NULL when out of memory. The
 * caller holds its one reference. */
mr_dgroup_member *mr_dgroup_member_new(const mr_dstage *st, uint32_t rows,
                                       const mr_delayed_def *def, struct mr_rule_stats *stats,
                                       void (*wake)(void *arg), void *wake_arg);
/* Is the answer written? Then the caller may read it. */
bool mr_dgroup_member_answered(mr_dgroup_member *m);
/* The caller lets go of m (NULL: nothing): its answer wakes nobody now;
 * the last reference frees it. */
void mr_dgroup_member_release(mr_dgroup_member *m);

/* Queues m for a batch (the runner takes a reference); false when no
 * runner runs (no rule with group_commit, no proxy_user, stopping). */
bool mr_dgroup_submit(mr_dgroup_member *m);

/* Starts the runner the first time a rule of rs has group_commit. */
void mr_dgroup_configure(const mr_proxy *p, const mr_ruleset *rs);
/* Answers what is still queued with an ERR (shutting down), lets the
 * batches in flight finish, stops the threads. Before the workers stop. */
void mr_dgroup_stop(void);
const mr_dgroup_stats *mr_dgroup_stats_get(void);

#endif
