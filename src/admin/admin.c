/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/admin.c - the admin console's thread, event_base and listener (see
 * admin/admin.h).
 *
 * mr_admin_start and mr_admin_stop run on the main thread; the accept
 * callback and everything after it on the console thread, which owns the
 * listener once started. The main thread talks to it only through the
 * stop pipe; a flusher thread whose job for a console command is done
 * writes to the wake pipe (mr_admin_wake).
 */
#include "myrewrite/admin/admin.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin/admin_impl.h"
#include "myrewrite/base/buf.h"
#include "myrewrite/base/log.h"
#include "myrewrite/net/listen_guard.h"
#include "myrewrite/proto/codec.h"

#define MAX_CLIENTS 32 /* console connections logged in at once */
/* Connections not logged in yet: a newer one closes the oldest, so sockets
 * that never log in cannot keep the administrator out. */
#define MAX_LOGINS 8

static struct {
    mr_proxy *p;
    struct event_base *base;         /* owned; run by the console thread */
    struct evconnlistener *listener; /* owned; freed by the console thread */
    mr_listen_guard *guard;          /* owned; the listener's */
    struct event *stop_ev;
    int stop_rd, stop_wr;
    struct event *wake_ev; /* a job is done (mr_admin_wake) */
    int wake_rd, wake_wr;
    pthread_t thread;
    bool running;
    uint32_t next_id;
    time_t started;
} A = {.stop_rd = -1, .stop_wr = -1, .wake_rd = -1, .wake_wr = -1};

time_t mr_admin_started(void) { return A.started; }

/* Tells a client just accepted why it cannot be served (an ERR with code
 * and sqlstate) and closes it. */
static void refuse(int fd, uint16_t code, const char *sqlstate, const char *msg)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_err_build(&b, 0, code, sqlstate, msg);
    mr_listen_refuse_buf(fd, &b);
}

/* An address waiting out the back-off of its failed logins is refused at
 * once, without a greeting. */
static bool backing_off(int fd, const mr_admin_addr *from)
{
    uint64_t wait = mr_admin_login_wait_ms(from);
    if (!wait)
        return false;
    char who[64], msg[200];
    mr_admin_addr_text(from, who, sizeof who);
    snprintf(msg, sizeof msg, "admin console: too many failed logins from %s; try again in %llu ms",
             who, (unsigned long long)wait);
    refuse(fd, MR_ER_HOST_BLOCKED, "HY000", msg);
    mr_admin_count(&mr_admin_stats_mut()->login_backoff);
    return true;
}

static void on_accept(struct evconnlistener *el, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    (void)el;
    (void)salen;
    (void)arg;
    mr_listen_guard_accepted(A.guard);
    mr_admin_addr from;
    mr_admin_addr_of(sa, &from);
    if (backing_off(fd, &from))
        return;
    if (mr_admin_conn_ready() >= MAX_CLIENTS) {
        mr_warn(0, "admin console: %d connections logged in; refusing another", MAX_CLIENTS);
        refuse(fd, MR_ER_CON_COUNT, "08004", "Too many admin console connections");
        return;
    }
    if (mr_admin_conn_logins() >= MAX_LOGINS)
        mr_admin_conn_evict_login();
    mr_admin_conn_open(A.p, A.base, fd, ++A.next_id, &from);
}

static void on_accept_error(struct evconnlistener *el, void *arg)
{
    (void)el;
    (void)arg;
    mr_listen_guard_failed(A.guard);
}

/* The listener's guard (net/listen_guard.h); false when out of memory. */
static bool guard_listener(void)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_err_build(&b, 0, MR_ER_CON_COUNT, "08004",
                 "Too many connections (myrewrite is out of file descriptors; try again)");
    A.guard =
        b.failed ? NULL
                 : mr_listen_guard_new(A.base, A.listener, "admin console listener", b.data, b.len);
    mr_buf_free(&b);
    if (!A.guard)
        return false;
    evconnlistener_set_error_cb(A.listener, on_accept_error);
    return true;
}

void mr_admin_wake(void *arg)
{
    (void)arg;
    char byte = 0;
    /* a full pipe has a wake-up pending already */
    if (write(A.wake_wr, &byte, 1) < 0 && errno != EAGAIN)
        mr_error(0, "admin console: cannot wake its thread: %s", strerror(errno));
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    (void)arg;
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    mr_admin_conn_jobs_done();
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    mr_listen_guard_free(A.guard);
    A.guard = NULL;
    evconnlistener_free(A.listener);
    A.listener = NULL;
    mr_admin_conn_close_all();
    event_base_loopexit(A.base, NULL);
}

static void *admin_main(void *arg)
{
    (void)arg;
    event_base_dispatch(A.base);
    return NULL;
}

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a6) || (IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
    }
    return false;
}

/* Binds admin_listen, which must be a loopback TCP address. */
static bool bind_listener(const char *spec)
{
    mr_addr a;
    if (!mr_addr_parse(spec, &a) || a.is_unix) {
        mr_error(0, "admin console not started: admin_listen '%s' must be a TCP host:port", spec);
        return false;
    }
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *res;
    int rc = getaddrinfo(a.host, a.port, &hints, &res);
    if (rc != 0) {
        mr_error(0, "admin console not started: admin_listen %s: %s", spec, gai_strerror(rc));
        return false;
    }
    if (!is_loopback(res->ai_addr)) {
        mr_error(0,
                 "admin console not started: admin_listen %s is not a loopback address "
                 "(the console has no TLS; reach it through an SSH tunnel or the host)",
                 spec);
    } else {
        A.listener = evconnlistener_new_bind(A.base, on_accept, NULL,
                                             LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                                 LEV_OPT_CLOSE_ON_EXEC,
                                             64, res->ai_addr, (int)res->ai_addrlen);
        if (!A.listener)
            mr_error(0, "admin console not started: listen %s: %s", spec, strerror(errno));
    }
    freeaddrinfo(res);
    return A.listener && guard_listener();
}

static void release_all(void)
{
    mr_listen_guard_free(A.guard);
    A.guard = NULL;
    if (A.listener)
        evconnlistener_free(A.listener);
    if (A.stop_ev)
        event_free(A.stop_ev);
    if (A.wake_ev)
        event_free(A.wake_ev);
    if (A.base)
        event_base_free(A.base);
    if (A.stop_rd >= 0)
        close(A.stop_rd);
    if (A.stop_wr >= 0)
        close(A.stop_wr);
    if (A.wake_rd >= 0)
        close(A.wake_rd);
    if (A.wake_wr >= 0)
        close(A.wake_wr);
    A.listener = NULL;
    A.stop_ev = A.wake_ev = NULL;
    A.base = NULL;
    A.stop_rd = A.stop_wr = A.wake_rd = A.wake_wr = -1;
}

static bool setup(mr_proxy *p)
{
    int fds[2];
    A.p = p;
    A.started = time(NULL);
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
        return false;
    A.stop_rd = fds[0];
    A.stop_wr = fds[1];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0)
        return false;
    A.wake_rd = fds[0];
    A.wake_wr = fds[1];
    A.base = event_base_new();
    if (!A.base)
        return false;
    A.stop_ev = event_new(A.base, A.stop_rd, EV_READ, on_stop, NULL);
    A.wake_ev = event_new(A.base, A.wake_rd, EV_READ | EV_PERSIST, on_wake, NULL);
    return A.stop_ev && A.wake_ev && event_add(A.stop_ev, NULL) == 0 &&
           event_add(A.wake_ev, NULL) == 0;
}

bool mr_admin_start(mr_proxy *p)
{
    const mr_config *cfg = p->cfg;
    if (!cfg->admin_listen[0]) {
        mr_info(0, "admin console off: admin_listen is empty");
        return true;
    }
    if (!cfg->admin_password[0]) {
        mr_warn(0,
                "admin console not started: admin_password is empty "
                "(set admin_password to enable the console on %s)",
                cfg->admin_listen);
        return true;
    }
    if (!setup(p)) {
        mr_error(0, "admin console not started: %s", strerror(errno));
        release_all();
        return false;
    }
    if (!bind_listener(cfg->admin_listen) ||
        pthread_create(&A.thread, NULL, admin_main, NULL) != 0) {
        release_all();
        return false;
    }
    A.running = true;
    mr_info(0, "admin console listening on %s (user %s)", cfg->admin_listen, cfg->admin_user);
    return true;
}

void mr_admin_stop(void)
{
    if (!A.running)
        return;
    char byte = 0;
    ssize_t n;
    do {
        n = write(A.stop_wr, &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1)
        mr_error(0, "admin console: cannot signal its thread: %s", strerror(errno));
    pthread_join(A.thread, NULL);
    A.running = false;
    release_all();
}
