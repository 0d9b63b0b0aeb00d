/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/core/park.c - a session waits for the background: something a
 * background thread makes (today: a table's description in the schema
 * cache) that its worker learns of by MR_WORKER_MSG_SCHEMA. Whoever parks
 * the session gives its callbacks and a cookie; the session sits in
 * SS_WAIT_BG, so the client's pipelined commands stay in its input.
 *
 * The parked session is retried when the background signals its worker
 * (mr_session_wake_parked, MR_WORKER_MSG_SCHEMA, sent only while a session
 * is parked) and at each tick; once timeout_ms have passed, a tick calls
 * timed_out instead. After either, a session the callbacks left idle reads
 * its next command through ss_up.resume. The worker never waits. A user:
 * a statement waiting for its table's key (session/stmt/park_stmt.c).
 *
 * Threads: the session's worker, but mr_session_wake_parked (the
 * background thread) and the parked count (any thread).
 */
#include <event2/event.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "session/core/session_impl.h"

#define PARK_TICK_MS 200

struct ss_park {
    const ss_park_ops *ops;
    void *cookie;
    uint64_t start_ns;
    uint64_t timeout_ms;
    struct event *tick;
};

/* Sessions parked now, over all workers: the background's hook signals the
 * workers only when there is one. */
static _Atomic unsigned parked_now;

void ss_park_end(mr_session *s)
{
    struct ss_park *pk = s->park;
    if (!pk)
        return;
    s->park = NULL;
    atomic_fetch_sub(&parked_now, 1);
    event_free(pk->tick);
    pk->ops->end(s, pk->cookie, mr_mono_ns() - pk->start_ns);
    free(pk);
}

void ss_park_free(mr_session *s) { ss_park_end(s); }

void *ss_parked(const mr_session *s, const ss_park_ops *ops)
{
    return s->park && s->park->ops == ops ? s->park->cookie : NULL;
}

/* After a retry or a timeout: an idle session reads its next command. */
static void go_on(mr_session *s)
{
    if (!ALIVE(s) || s->state != SS_IDLE)
        return;
    if (s->w->draining) {
        ss_close(s, MR_CLOSE_SHUTDOWN, "proxy shutting down");
        return;
    }
    ss_up.resume(s);
}

static void try_parked(mr_session *s, bool tick)
{
    struct ss_park *pk = s->park;
    if (!pk || !ALIVE(s))
        return;
    if (tick && mr_mono_ns() - pk->start_ns >= pk->timeout_ms * 1000000)
        pk->ops->timed_out(s, pk->cookie);
    else
        pk->ops->retry(s, pk->cookie);
    go_on(s);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    try_parked(arg, true);
}

bool ss_park(mr_session *s, const ss_park_ops *ops, void *cookie, uint64_t timeout_ms)
{
    struct ss_park *pk = calloc(1, sizeof *pk);
    if (!pk)
        return false;
    pk->tick = event_new(s->w->base, -1, EV_PERSIST, tick_cb, s);
    struct timeval tv = {0, (timeout_ms < PARK_TICK_MS ? timeout_ms : PARK_TICK_MS) * 1000};
    if (!pk->tick || event_add(pk->tick, &tv) != 0) {
        if (pk->tick)
            event_free(pk->tick);
        free(pk);
        return false;
    }
    pk->ops = ops;
    pk->cookie = cookie;
    pk->timeout_ms = timeout_ms;
    pk->start_ns = mr_mono_ns();
    s->park = pk;
    atomic_fetch_add(&parked_now, 1);
    ss_set_state(s, SS_WAIT_BG);
    return true;
}

void mr_session_schema_loaded(mr_session *s) { try_parked(s, false); }

void mr_session_wake_parked(void *proxy)
{
    mr_proxy *p = proxy;
    if (atomic_load(&parked_now) == 0)
        return;
    for (unsigned i = 0; i < p->nworkers; i++)
        if (!atomic_exchange(&p->workers[i].schema_signaled, true) &&
            !mr_worker_signal(&p->workers[i], MR_WORKER_MSG_SCHEMA))
            atomic_store(&p->workers[i].schema_signaled, false); /* the next load tries again */
}
