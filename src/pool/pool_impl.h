/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/pool_impl.h - the pool's insides, shared by one worker's pool
 * (pool/pool.c) and what the workers share (pool/move.c). Private to
 * src/pool/.
 *
 * Locks, in the order they nest: the shared lock (sh->lock), then a pool's
 * snapshot lock (p->lock), then a pool's mailbox (p->mail_lock). A worker
 * never takes the shared lock while holding its own p->lock.
 */
#ifndef MYREWRITE_POOL_IMPL_H
#define MYREWRITE_POOL_IMPL_H

#include <event2/util.h>
#include <pthread.h>
#include <stdatomic.h>

#include "myrewrite/pool/pool.h"
#include "myrewrite/pool/shared.h"

/* One key across every worker. */
typedef struct mr_pool_skey {
    mr_pool_key key;
    _Atomic unsigned count;    /* its server connections (logged in), all workers */
    _Atomic unsigned sessions; /* its client sessions, all workers */
    _Atomic unsigned waiting;  /* workers with a session waiting for it */
    uint64_t *oldest;          /* per worker: when its first waiter of the key began
                                  waiting (0: none); under sh->lock */
    struct mr_pool_skey *next;
} mr_pool_skey;

struct mr_pool_shared {
    pthread_mutex_t lock;
    const mr_config *cfg;
    unsigned nworkers;
    mr_pool **pools;                /* by worker (NULL: not made yet, or gone) */
    unsigned cap;                   /* pool_max_connections (0: pool_size) */
    unsigned key_cap;               /* pool_size: one key's */
    unsigned total;                 /* every server connection, logins and closing ones included */
    unsigned logins;                /* of which logging in */
    unsigned nclosing;              /* of which closing for a login */
    _Atomic unsigned login_waiters; /* logins waiting for room, all workers */
    uint32_t *travelling;           /* thread ids of connections moving between workers */
    unsigned ntravelling, travelling_cap;
    mr_pool_skey *keys;
    mr_pool_wake wake;
    void *ctx;
};

struct mr_pool_user {
    mr_pool_key key;
    mr_pool *pool;
    mr_pool_skey *sk;    /* the key across workers */
    mr_srv *idle, *busy; /* idle: most recently given back first */
    unsigned nidle, nbusy;
    unsigned sessions, waiting, pinned;
    uint64_t waits, wait_timeouts;
    mr_pool_user *next;
};

struct mr_pool_wait {
    mr_pool *pool;
    mr_pool_user *user; /* NULL: room for a login */
    const char *schema; /* the session's (no schema takes no connection with one) */
    mr_pool_ready ready;
    void *arg;
    uint64_t since_ns;
    struct event *timer;
    mr_pool_wait *prev, *next;
};

/* A letter between workers (pool/move.c). */
typedef struct mr_pool_letter mr_pool_letter;

/* pool/pool.c, for pool/move.c. */
void mr_pool_unlink_srv(mr_srv *s, mr_srv **head);
void mr_pool_push_srv(mr_srv *s, mr_srv **head);
bool mr_pool_key_equal(const mr_pool_key *a, const mr_pool_key *b);
mr_pool_wait *mr_pool_first_waiter(mr_pool *p, const mr_pool_user *u);
/* srv, idle on its pool: to a session waiting for it here or on another
 * worker (the longest waiting), else closed when a login waits for room,
 * else left idle. */
void mr_pool_settle(mr_srv *srv);
/* Frees srv and closes its connection (counted out by the caller). */
void mr_pool_srv_free(mr_srv *srv);
/* Idle connections' callbacks: a server that speaks or closes is seen. */
extern const mr_conn_callbacks mr_pool_idle_callbacks;
/* Serves the logins waiting on p while the proxy has room. */
void mr_pool_serve_logins(mr_pool *p);
/* Closes one idle connection of p for a login (false: none idle). */
bool mr_pool_evict_one(mr_pool *p);
/* The proxy is full and fewer connections are closing than logins wait
 * (arriving: one more, not queued yet): one more must be closed. */
bool mr_pool_needs_eviction(mr_pool *p, bool arriving);

/* pool/move.c, for pool/pool.c. */
mr_pool_skey *mr_pool_skey_get(mr_pool_shared *sh, const mr_pool_key *k);
/* p joins the workers' pools (its worker's place), or leaves them. */
void mr_pool_shared_join(mr_pool_shared *sh, mr_pool *p);
void mr_pool_shared_leave(mr_pool_shared *sh, mr_pool *p);
/* The shared counts: total, logins and closing change by the deltas. */
void mr_pool_shared_count(mr_pool_shared *sh, int total, int logins, int closing);
/* Takes room for one login when there is and no login waits before it. */
bool mr_pool_shared_room(mr_pool_shared *sh, bool first);
/* Room was given back on p: p's logins first, then other workers'. */
void mr_pool_room_freed(mr_pool *p);
/* Is thread_id a connection moving between workers? Under sh->lock. */
bool mr_pool_travelling(const mr_pool_shared *sh, uint32_t thread_id);
/* p's first waiter of u changed (since: its start, 0: none). */
void mr_pool_oldest(mr_pool *p, mr_pool_user *u, uint64_t since);
/* A session of u (with a schema or not) waits on p: a worker with an idle
 * connection of its key that the session can take is asked for it. */
void mr_pool_ask_idle(mr_pool *p, mr_pool_user *u, bool schema);
/* A login waits on p and p has no idle connection: a worker with one is
 * asked to close it. */
void mr_pool_ask_evict(mr_pool *p);
/* Sends srv (idle on p) to the worker whose session of its key has waited
 * longest, if that session waited longer than `than` (0: any); false: none,
 * srv stays. */
bool mr_pool_move_out(mr_srv *srv, uint64_t than);
/* The move timer: connections leaving p try to detach again. */
void mr_pool_move_retry(evutil_socket_t fd, short what, void *arg);
/* p is going: its letters and the connections on their way are closed. */
void mr_pool_mail_close(mr_pool *p);

#endif
