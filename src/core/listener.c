/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core/listener.c - accept loop and hand-off (see core/listener.h).
 * Main thread; owns the listening sockets.
 */
#include "myrewrite/core/listener.h"

#include <errno.h>
#include <event2/listener.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"
#include "myrewrite/net/listen_guard.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/session/worker.h"

struct mr_listener {
    mr_proxy *proxy;
    struct evconnlistener *tcp;              /* owned */
    struct evconnlistener *unix_;            /* owned; NULL when no socket is configured */
    mr_listen_guard *tcp_guard, *unix_guard; /* owned */
    char unix_path[108];
    unsigned next_worker;
};

/* Tells a client it cannot be served. The socket is new and its send
 * buffer empty, so this small write does not block. */
static void refuse(int fd, const char *msg)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_err_build(&b, 0, MR_ER_CON_COUNT, "08004", msg);
    mr_listen_refuse_buf(fd, &b);
}

/* A flood of clients past max_connections must not flood the log too: the
 * first refusal is logged, then one line every REFUSED_LOG_EVERY_MS with the
 * count since the last one. Main thread only. */
#define REFUSED_LOG_EVERY_MS 10000
static void log_refused(const mr_proxy *p)
{
    static uint64_t logged_ms, unlogged;
    uint64_t now = mr_mono_ms();
    unlogged++;
    if (logged_ms && now - logged_ms < REFUSED_LOG_EVERY_MS)
        return;
    mr_warn(0, "refused %llu client%s: max_connections (%llu) reached",
            (unsigned long long)unlogged, unlogged == 1 ? "" : "s",
            (unsigned long long)p->cfg->max_connections);
    logged_ms = now;
    unlogged = 0;
}

static void on_accept(struct evconnlistener *el, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    mr_listener *l = arg;
    mr_proxy *p = l->proxy;
    (void)sa;
    (void)salen;
    mr_listen_guard_accepted(el == l->tcp ? l->tcp_guard : l->unix_guard);
    uint64_t n = atomic_fetch_add(&p->connections, 1) + 1;
    if (n > p->cfg->max_connections) {
        atomic_fetch_sub(&p->connections, 1);
        log_refused(p);
        refuse(fd, "Too many connections (myrewrite max_connections reached)");
        return;
    }
    mr_worker *w = &p->workers[l->next_worker++ % p->nworkers];
    if (!mr_worker_hand_off(w, fd)) {
        atomic_fetch_sub(&p->connections, 1);
        mr_error(0, "worker %u hand-off pipe is full; refusing a client", w->id);
        refuse(fd, "myrewrite is overloaded: try again");
    }
}

/* EMFILE and friends: the guard refuses, pauses and logs (net/listen_guard.h). */
static void on_accept_error(struct evconnlistener *el, void *arg)
{
    mr_listener *l = arg;
    mr_listen_guard_failed(el == l->tcp ? l->tcp_guard : l->unix_guard);
}

/* The guard of one listening socket, with the answer a client gets while
 * the proxy is out of descriptors. */
static mr_listen_guard *guard(struct event_base *base, struct evconnlistener *el, const char *name)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_err_build(&b, 0, MR_ER_CON_COUNT, "08004",
                 "Too many connections (myrewrite is out of file descriptors; try again)");
    mr_listen_guard *g = b.failed ? NULL : mr_listen_guard_new(base, el, name, b.data, b.len);
    mr_buf_free(&b);
    if (!g)
        mr_error(0, "%s: out of memory", name);
    else
        evconnlistener_set_error_cb(el, on_accept_error);
    return g;
}

static struct evconnlistener *bind_tcp(struct event_base *base, mr_listener *l, const mr_addr *a)
{
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *res;
    int rc = getaddrinfo(a->host, a->port, &hints, &res);
    if (rc != 0) {
        mr_error(0, "listen %s:%s: %s", a->host, a->port, gai_strerror(rc));
        return NULL;
    }
    struct evconnlistener *el = evconnlistener_new_bind(
        base, on_accept, l, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 1024,
        res->ai_addr, (int)res->ai_addrlen);
    if (!el)
        mr_error(0, "listen %s:%s: %s", a->host, a->port, strerror(errno));
    freeaddrinfo(res);
    return el;
}

static struct evconnlistener *bind_unix(struct event_base *base, mr_listener *l, const char *path)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sun.sun_path)) {
        mr_error(0, "socket path too long: %s", path);
        return NULL;
    }
    strcpy(sun.sun_path, path);
    unlink(path); /* a stale socket from a previous run */
    struct evconnlistener *el =
        evconnlistener_new_bind(base, on_accept, l, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                                1024, (struct sockaddr *)&sun, (int)sizeof(sun));
    if (!el) {
        mr_error(0, "listen on %s: %s", path, strerror(errno));
        return NULL;
    }
    chmod(path, 0777); /* like mysqld's socket: access is checked by the server */
    strcpy(l->unix_path, path);
    return el;
}

mr_listener *mr_listener_start(struct event_base *base, mr_proxy *p)
{
    mr_listener *l = calloc(1, sizeof(*l));
    mr_addr a;
    if (!l)
        return NULL;
    l->proxy = p;
    if (!mr_addr_parse(p->cfg->listen, &a) || a.is_unix || !(l->tcp = bind_tcp(base, l, &a)) ||
        !(l->tcp_guard = guard(base, l->tcp, "client listener")) ||
        (p->cfg->socket[0] && (!(l->unix_ = bind_unix(base, l, p->cfg->socket)) ||
                               !(l->unix_guard = guard(base, l->unix_, "unix socket listener"))))) {
        mr_listener_stop(l);
        return NULL;
    }
    return l;
}

void mr_listener_stop(mr_listener *l)
{
    if (!l)
        return;
    mr_listen_guard_free(l->tcp_guard); /* before the sockets it watches */
    mr_listen_guard_free(l->unix_guard);
    if (l->tcp)
        evconnlistener_free(l->tcp);
    if (l->unix_) {
        evconnlistener_free(l->unix_);
        unlink(l->unix_path);
    }
    free(l);
}
