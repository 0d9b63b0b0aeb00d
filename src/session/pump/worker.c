/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pump/worker.c - worker threads (see session/worker.h).
 * Each worker thread runs its own event_base and owns every session on it;
 * other threads talk to it only through its hand-off pipe.
 */
#include "myrewrite/session/worker.h"
#include "myrewrite/pool/pool.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "myrewrite/base/log.h"
#include "myrewrite/net/uring.h"
#include "myrewrite/session/session.h"
#include "myrewrite/stats/rule_hits.h"
#include "session/core/session_impl.h"

static void drain_sessions(mr_worker *w, int force)
{
    mr_session *s = w->sessions;
    while (s) {
        mr_session *next = mr_session_next(s); /* s may be unlinked below */
        mr_session_drain(s, force);
        s = next;
    }
}

mr_shared_rules *mr_shared_rules_new(mr_ruleset *set, unsigned refs)
{
    mr_shared_rules *r = malloc(sizeof(*r));
    if (!r)
        return NULL;
    atomic_init(&r->refs, refs);
    r->set = set;
    return r;
}

void mr_shared_rules_release(mr_shared_rules *r)
{
    if (r && atomic_fetch_sub(&r->refs, 1) == 1) {
        mr_rule_hits_fold(r->set); /* its hits outlive it, by rule name */
        mr_ruleset_free(r->set);
        free(r);
    }
}

/* Statements are matched inside one callback, so between two callbacks no
 * statement of this worker is using the old set. */
static void take_pending_rules(mr_worker *w)
{
    pthread_mutex_lock(&w->pending_lock);
    mr_shared_rules *next = w->pending_rules;
    w->pending_rules = NULL;
    pthread_mutex_unlock(&w->pending_lock);
    if (!next)
        return;
    mr_shared_rules_release(w->rules);
    w->rules = next;
    mr_debug(0, "worker %u switched to a new rule set (%zu rules)", w->id,
             mr_ruleset_count(next->set));
}

void mr_worker_set_rules(mr_worker *w, mr_shared_rules *rules)
{
    pthread_mutex_lock(&w->pending_lock);
    mr_shared_rules *stale = w->pending_rules; /* two reloads before the worker woke */
    w->pending_rules = rules;
    pthread_mutex_unlock(&w->pending_lock);
    mr_shared_rules_release(stale);
    mr_worker_signal(w, MR_WORKER_MSG_RULES);
}

static void on_message(mr_worker *w, int msg)
{
    if (msg >= 0) {
        if (w->draining) {
            close(msg);
            atomic_fetch_sub(&w->proxy->connections, 1);
            return;
        }
        mr_session_start(w, msg);
        return;
    }
    if (msg == MR_WORKER_MSG_RULES) {
        take_pending_rules(w);
        return;
    }
    if (msg == MR_WORKER_MSG_SCHEMA) {
        atomic_store(&w->schema_signaled, false); /* a load from now on signals again */
        for (mr_session *s = w->sessions, *next; s; s = next) {
            next = mr_session_next(s); /* s may end below */
            mr_session_schema_loaded(s);
        }
        return;
    }
    if (msg == MR_WORKER_MSG_BG) {
        atomic_store(&w->bg_signaled, false); /* an answer from now on signals again */
        for (mr_session *s = w->sessions, *next; s; s = next) {
            next = mr_session_next(s); /* s may end below */
            mr_session_bg_answered(s);
        }
        return;
    }
    if (msg == MR_WORKER_MSG_KILL) {
        for (mr_session *s = w->sessions, *next; s; s = next) {
            next = mr_session_next(s); /* s may end below */
            mr_session_kill_check(s);
        }
        return;
    }
    w->draining = true;
    drain_sessions(w, msg == MR_WORKER_MSG_STOP);
    if (w->nsessions == 0)
        event_base_loopexit(w->base, NULL);
}

static void pipe_cb(evutil_socket_t fd, short what, void *arg)
{
    mr_worker *w = arg;
    int msgs[64];
    (void)what;
    for (;;) {
        ssize_t n = read(fd, msgs, sizeof(msgs));
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            return; /* EAGAIN: all read */
        }
        for (ssize_t i = 0; i < n / (ssize_t)sizeof(int); i++)
            on_message(w, msgs[i]);
    }
}

/* io = io_uring: this thread's ring, made here (one submitter). A kernel
 * that refuses it (seccomp, io_uring_disabled, too old) leaves the worker on
 * epoll: the proxy still serves, and the warning says why. */
static mr_uring *start_ring(mr_worker *w)
{
    if (!w->io_uring)
        return NULL;
    char err[160];
    mr_uring *u = mr_uring_start(w->base, err, sizeof(err));
    if (!u)
        mr_warn(0, "worker %u: io = io_uring refused (%s); this worker uses epoll", w->id, err);
    return u;
}

static void *worker_main(void *arg)
{
    mr_worker *w = arg;
    mr_uring *ring = start_ring(w);
    mr_debug(0, "worker %u running (%s)", w->id, ring ? "io_uring" : "epoll");
    event_base_dispatch(w->base);
    /* Anything left (a forced stop) is closed by freeing the base's users. */
    drain_sessions(w, 1);
    event_base_loop(w->base, EVLOOP_NONBLOCK); /* run the deferred frees */
    mr_pool_free(w->pool);                     /* the server connections no session holds */
    w->pool = NULL;
    mr_uring_stop(ring);
    mr_debug(0, "worker %u stopped", w->id);
    return NULL;
}

/* The worker's loop reads no cached time: libevent would read the clock
 * once per loop turn to refresh its cache, and a relayed query takes two
 * turns, while a worker arms timers only when it sets a deadline
 * (connect, backend_read_timeout), and then reads the clock itself. */
static struct event_base *worker_base(void)
{
    struct event_config *cfg = event_config_new();
    if (!cfg)
        return NULL;
    event_config_set_flag(cfg, EVENT_BASE_FLAG_NO_CACHE_TIME);
    struct event_base *base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    return base;
}

static void fill_upcalls(void)
{
    ss_up.resume = ss_pump_client;
    ss_up.close_backend = ss_close_backend;
    ss_up.free = ss_free;
    ss_up.connect = ss_connect;
    ss_up.backend_callbacks = &ss_backend_callbacks;
}

bool mr_worker_start(mr_worker *w, mr_proxy *p, unsigned id, mr_shared_rules *rules)
{
    static pthread_once_t upcalls_once = PTHREAD_ONCE_INIT;
    pthread_once(&upcalls_once, fill_upcalls); /* before the first worker thread */
    int fds[2];
    memset(w, 0, sizeof(*w));
    w->id = id;
    w->proxy = p;
    w->rules = rules;
    w->io_uring = strcmp(p->cfg->io, "io_uring") == 0;
    pthread_mutex_init(&w->pending_lock, NULL);
    mr_client_registry_init(&w->clients);
    mr_buf_init(&w->match.text);
    mr_buf_init(&w->match.would_be);
    w->scratch = mr_rules_scratch_new();
    if (!w->scratch || !mr_digest_stats_init(&w->digests, 4096))
        return false;
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
        return false;
    w->pipe_rd = fds[0];
    w->pipe_wr = fds[1];
    w->base = worker_base();
    if (!w->base)
        return false;
    if (strcmp(p->cfg->pool, "session") != 0 && /* transaction, statement */
        !(w->pool = mr_pool_new(w->base, p->cfg, id, p->nworkers)))
        return false;
    w->pipe_ev = event_new(w->base, w->pipe_rd, EV_READ | EV_PERSIST, pipe_cb, w);
    if (!w->pipe_ev || event_add(w->pipe_ev, NULL) != 0)
        return false;
    return pthread_create(&w->thread, NULL, worker_main, w) == 0;
}

void mr_worker_join(mr_worker *w)
{
    if (!w->joined)
        pthread_join(w->thread, NULL);
    w->joined = true;
    mr_shared_rules_release(w->rules);
    mr_shared_rules_release(w->pending_rules);
    mr_rules_scratch_free(w->scratch);
    mr_buf_free(&w->match.text);
    mr_buf_free(&w->match.would_be);
    mr_digest_stats_free(&w->digests);
    pthread_mutex_destroy(&w->pending_lock);
    mr_client_registry_destroy(&w->clients);
    event_free(w->pipe_ev);
    event_base_free(w->base);
    close(w->pipe_rd);
    close(w->pipe_wr);
}
