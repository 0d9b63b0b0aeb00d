/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/worker.h - worker threads, one libevent event_base each.
 *
 * The listener (main thread) hands accepted sockets to workers round-robin
 * through each worker's pipe; from then on the worker owns the connection
 * and everything about it. Workers never block: no DNS, no file I/O, no
 * libmysqlclient calls.
 */
#ifndef MYREWRITE_WORKER_H
#define MYREWRITE_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "myrewrite/base/counters.h"
#include "myrewrite/base/proxy.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/stats/client_info.h"
#include "myrewrite/stats/digest_stats.h"

struct event_base;
struct event;
struct mr_session;

typedef struct mr_worker {
    unsigned id;
    bool io_uring;   /* io = io_uring, read at start on the main thread: the config may be
                        freed under a worker that is still starting (a refused start) */
    mr_proxy *proxy; /* shared runtime */
    pthread_t thread;
    bool joined;             /* the thread has been joined (main thread only) */
    struct event_base *base; /* owned; only this worker's thread runs it */
    int pipe_rd, pipe_wr;    /* hand-off pipe: listener writes, worker reads */
    struct event *pipe_ev;
    struct mr_session *sessions; /* intrusive list of live sessions; worker thread only */
    unsigned nsessions;
    bool draining;                /* shutdown: close sessions as they go idle */
    _Atomic bool schema_signaled; /* an MR_WORKER_MSG_SCHEMA is on its way: another one
                                   would only repeat it (set by the loader, cleared here) */
    _Atomic bool bg_signaled;     /* the same for MR_WORKER_MSG_BG (set by a job, cleared here) */
    mr_stats stats;               /* written by this worker only */
    mr_digest_stats digests;      /* written by this worker only */
    struct mr_pool *pool;         /* pool = transaction: the server connections (else NULL) */
    mr_client_registry clients;   /* SHOW CLIENTS snapshots of the sessions (stats/client_info.h) */
    struct mr_shared_rules *rules; /* current rule set; one reference held */
    mr_rules_scratch *scratch;     /* front-end working memory */
    mr_match_result match;         /* reused for every statement */
    pthread_mutex_t pending_lock;
    struct mr_shared_rules *pending_rules; /* from the main thread; guarded by pending_lock */
} mr_worker;

/* A rule set shared by all workers; the last one to let go frees it. */
typedef struct mr_shared_rules {
    _Atomic unsigned refs;
    mr_ruleset *set; /* owned */
} mr_shared_rules;

/* Wraps `set` with `refs` references (one per worker that will hold it). */
mr_shared_rules *mr_shared_rules_new(mr_ruleset *set, unsigned refs);
void mr_shared_rules_release(mr_shared_rules *r);

/* Control messages on the hand-off pipe besides socket descriptors. */
#define MR_WORKER_MSG_DRAIN (-1)
#define MR_WORKER_MSG_STOP (-2)
#define MR_WORKER_MSG_RULES (-3)  /* pick up pending_rules */
#define MR_WORKER_MSG_SCHEMA (-4) /* the schema cache loaded a table: run parked statements */
#define MR_WORKER_MSG_BG (-6)     /* a feature's background job answered a waiting session */
#define MR_WORKER_MSG_KILL (-7)   /* another session's KILL concerns a session of this worker */
#define MR_WORKER_MSG_POOL (-8)   /* letters for the worker's pool (pool/shared.h) */

/* One reference to `rules` moves to the worker. */
bool mr_worker_start(mr_worker *w, mr_proxy *p, unsigned id, mr_shared_rules *rules);
/* Hands a new rule set to the worker (one reference moves with it); the
 * worker switches between two statements and releases the old one. */
void mr_worker_set_rules(mr_worker *w, mr_shared_rules *rules);
/* Hands a connected client socket to the worker (called by the listener). */
bool mr_worker_hand_off(mr_worker *w, int fd);
/* Sends a control message; the worker acts on it in its own thread. */
bool mr_worker_signal(mr_worker *w, int msg); /* false: not sent (logged) */
void mr_worker_join(mr_worker *w);
/* A feature's background job answered (mr_fwake of feature/feature.h, arg:
 * the mr_worker): sends MR_WORKER_MSG_BG unless one is on its way. Any
 * thread. */
void mr_worker_wake_bg(void *worker);
/* Called by a session as it ends; stops the loop once drained. */
void mr_worker_session_ended(mr_worker *w);

#endif
