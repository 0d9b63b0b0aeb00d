/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pump/life.c - a session's backend connection made (or left to the
 * pool) and its end: everything the rooms below hold let go. It sits in
 * the top room because it names them all; the rooms below close a session
 * through ss_close (session/core/session.c), which reaches these through
 * ss_up. The session starts in session/pump/client_side.c.
 */
#include <event2/event.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "myrewrite/base/log.h"
#include "myrewrite/net/backend_addr.h"
#include "myrewrite/schema/cache.h"
#include "session/core/session_impl.h"

/* Tells the backend we are leaving, so it does not count an aborted client.
 * Only between commands, and only if nothing is unsent ahead of it (output
 * not yet written, frames, or an io_uring send in flight). */
static void backend_quit(mr_session *s)
{
    static const uint8_t quit[5] = {1, 0, 0, 0, MR_COM_QUIT};
    if (!s->backend || s->state != SS_IDLE)
        return;
    if (mr_conn_pending(s->backend) != 0)
        return;
    ssize_t n = send(mr_conn_fd(s->backend), quit, sizeof(quit), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n; /* best effort: the socket closes right after either way */
}

void ss_close_backend(mr_session *s)
{
    ss_pool_session_end(s); /* a borrowed connection goes back to the pool, or is dropped */
    if (!s->backend)
        return;
    backend_quit(s);
    mr_conn_free(s->backend);
    s->backend = NULL;
}

/* False with *why when no connect could be started. */
static bool connect_backend(mr_session *s, const char **why)
{
    struct sockaddr_storage addr;
    socklen_t addr_len;
    mr_backend_addr(s->w->proxy, &addr, &addr_len);
    *why = "does not resolve (yet): the proxy looks it up every second";
    if (addr_len == 0)
        return false;
    *why = "connect failed";
    struct timeval tv = {(time_t)(cfg(s)->connect_timeout_ms / 1000),
                         (suseconds_t)(cfg(s)->connect_timeout_ms % 1000) * 1000};
    s->backend = mr_conn_connect(s->w->base, (struct sockaddr *)&addr, addr_len, &tv,
                                 &ss_backend_callbacks, s);
    if (!s->backend)
        return false;
    mr_conn_set_low_mark(s->backend, cfg(s)->relay_buffer / 2);
    return true;
}

void ss_connect(mr_session *s)
{
    const char *why;
    if (!connect_backend(s, &why))
        ss_backend_failed(s, why, true);
}

static void free_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    free(arg);
}

void mr_worker_session_ended(mr_worker *w)
{
    if (w->draining && w->nsessions == 0)
        event_base_loopexit(w->base, NULL);
}

/* Unlinks the session and closes both sockets now; the memory goes on the
 * next loop turn, so callers up the stack can still test ALIVE(s). */
void ss_free(mr_session *s)
{
    mr_worker *w = s->w;
    if (s->state == SS_CLOSED)
        return;
    ss_hooks_end(s); /* the features let go: queue claims, a job in flight, notes */
    mr_schema_cache_ddl_end(s->ddl_hold);
    s->ddl_hold = 0;
    ss_set_state(s, SS_CLOSED);
    mr_client_unregister(&w->clients, &s->slot);
    ss_park_free(s);
    ss_prepared_forget_all(s);
    ss_pool_kill_done(s);
    ss_pool_session_end(s);
    ss_pstmt_free(s);
    if (s->prev)
        s->prev->next = s->next;
    else
        w->sessions = s->next;
    if (s->next)
        s->next->prev = s->prev;
    w->nsessions--;
    mr_stat_add(&w->stats.connections_active, (uint64_t)-1);
    atomic_fetch_sub(&w->proxy->connections, 1);
    if (s->backend)
        mr_conn_free(s->backend);
    if (s->client)
        mr_conn_free(s->client);
    s->backend = s->client = NULL;
    struct timeval now = {0, 0};
    if (event_base_once(w->base, -1, EV_TIMEOUT, free_later, s, &now) != 0)
        mr_error(s->id, "cannot schedule the session's release; leaking %zu bytes", sizeof(*s));
    mr_worker_session_ended(w);
}
