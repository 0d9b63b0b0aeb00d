/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http/server.c - the HTTP endpoint (http_listen): /metrics, /health, /ready
 * (see http/http.h; the metrics page itself is in http/metrics.c).
 *
 * mr_http_start (main thread) binds the socket, so a bad address fails
 * start-up, then hands the event_base, the evhttp server and the readiness
 * probe to the HTTP thread, which alone uses them until mr_http_stop (main
 * thread) wakes it through a pipe, joins it and frees them. One endpoint
 * per process: the state is a file-level singleton.
 *
 * /ready checks the backend with a non-blocking TCP connect on the HTTP
 * thread's own event_base, only when asked and at most once a second; the
 * answer is cached in between and requests that arrive while a check runs
 * wait for its result.
 */
#include "http_impl.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/http/http.h"
#include "myrewrite/net/backend_addr.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "myrewrite/base/log.h"
#include "myrewrite/net/listen_guard.h"
#include "myrewrite/session/reload.h"
#include "myrewrite/session/worker.h"

#define PROBE_EVERY_NS 1000000000ULL
#define PROBE_TIMEOUT_MAX_MS 2000
#define READY_WAITERS_MAX 32

typedef struct probe {
    int fd;              /* connect in progress; -1 when none */
    struct event *ev;    /* its write/timeout event */
    uint64_t started_ns; /* of the latest check; 0 = never checked */
    bool ok;             /* result of the latest finished check */
    bool checked;        /* a check has finished at least once */
    char reason[512];    /* why the latest check failed */
    struct evhttp_request *waiters[READY_WAITERS_MAX];
    unsigned nwaiters;
} probe;

static struct {
    mr_proxy *p;
    struct event_base *base;
    struct evhttp *http;
    struct event *wake_ev;
    int wake[2]; /* mr_http_stop writes [1]; the thread reads [0] */
    pthread_t thread;
    bool running;
    probe probe;
    mr_listen_guard *guard;       /* the listener's: refusals, pauses, the cap */
    uint64_t open;                /* connections evhttp holds now */
    struct event *claim_ev;       /* runs claim() after an accept */
    struct bufferevent **pending; /* made, not claimed yet; each holds a reference */
    size_t npending, pending_cap;
} H = {.wake = {-1, -1}, .probe = {.fd = -1}};

/* ---- replies ------------------------------------------------------------------- */

static void reply(struct evhttp_request *req, int code, const char *reason, const char *type,
                  struct evbuffer *body)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", type);
    evhttp_add_header(h, "Cache-Control", "no-store");
    if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
        char len[24];
        snprintf(len, sizeof(len), "%zu", evbuffer_get_length(body));
        evhttp_add_header(h, "Content-Length", len);
        evbuffer_drain(body, evbuffer_get_length(body));
    }
    evhttp_send_reply(req, code, reason, body);
}

static void reply_text(struct evhttp_request *req, int code, const char *reason, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));

static void reply_text(struct evhttp_request *req, int code, const char *reason, const char *fmt,
                       ...)
{
    struct evbuffer *body = evbuffer_new();
    if (!body) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    evbuffer_add_vprintf(body, fmt, ap);
    va_end(ap);
    reply(req, code, reason, "text/plain; charset=utf-8", body);
    evbuffer_free(body);
}

static void serve_metrics(struct evhttp_request *req)
{
    struct evbuffer *body = evbuffer_new();
    if (!body) {
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    mr_metrics_write(H.p, body);
    reply(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", body);
    evbuffer_free(body);
}

/* ---- readiness ----------------------------------------------------------------- */

static bool rules_in_force(void)
{
    mr_shared_rules *r = mr_rules_current(H.p);
    bool ok = r && r->set;
    if (r)
        mr_shared_rules_release(r);
    return ok;
}

static void answer_ready(struct evhttp_request *req)
{
    const probe *pr = &H.probe;
    if (!rules_in_force())
        reply_text(req, 503, "Service Unavailable", "not ready: no rule set in force\n");
    else if (!pr->checked)
        reply_text(req, 503, "Service Unavailable", "not ready: backend %s not checked yet\n",
                   H.p->backend_name);
    else if (!pr->ok)
        reply_text(req, 503, "Service Unavailable", "not ready: %s\n", pr->reason);
    else
        reply_text(req, 200, "OK", "ready\n");
}

static void answer_waiters(void)
{
    probe *pr = &H.probe;
    for (unsigned i = 0; i < pr->nwaiters; i++)
        answer_ready(pr->waiters[i]);
    pr->nwaiters = 0;
}

static void probe_finish(bool ok, const char *why)
{
    probe *pr = &H.probe;
    if (pr->checked && ok != pr->ok) {
        if (ok)
            mr_info(0, "ready: backend %s accepts connections again", H.p->backend_name);
        else
            mr_warn(0, "not ready: backend %s unreachable: %s", H.p->backend_name, why);
    }
    pr->ok = ok;
    pr->checked = true;
    if (!ok)
        snprintf(pr->reason, sizeof(pr->reason), "backend %s unreachable: %s", H.p->backend_name,
                 why);
    if (pr->ev) {
        event_free(pr->ev);
        pr->ev = NULL;
    }
    if (pr->fd >= 0) {
        close(pr->fd);
        pr->fd = -1;
    }
    answer_waiters();
}

static unsigned probe_timeout_ms(void)
{
    uint64_t ms = H.p->cfg->connect_timeout_ms;
    return ms > PROBE_TIMEOUT_MAX_MS || ms == 0 ? PROBE_TIMEOUT_MAX_MS : (unsigned)ms;
}

static void on_probe(evutil_socket_t fd, short what, void *arg)
{
    (void)arg;
    if (what & EV_TIMEOUT) {
        char why[64];
        snprintf(why, sizeof(why), "no answer within %u ms", probe_timeout_ms());
        probe_finish(false, why);
        return;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    probe_finish(err == 0, err ? strerror(err) : NULL);
}

static void probe_start(void)
{
    probe *pr = &H.probe;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    mr_backend_addr(H.p, &addr, &addr_len);
    const struct sockaddr *sa = (const struct sockaddr *)&addr;
    pr->started_ns = mr_mono_ns();
    if (addr_len == 0) {
        probe_finish(false, "the backend's host name does not resolve (yet)");
        return;
    }
    pr->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (pr->fd < 0) {
        probe_finish(false, strerror(errno));
        return;
    }
    if (connect(pr->fd, sa, addr_len) == 0) {
        probe_finish(true, NULL);
        return;
    }
    if (errno != EINPROGRESS) { /* includes a unix socket's full backlog (EAGAIN) */
        probe_finish(false, strerror(errno));
        return;
    }
    unsigned ms = probe_timeout_ms();
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    pr->ev = event_new(H.base, pr->fd, EV_WRITE, on_probe, NULL);
    if (!pr->ev || event_add(pr->ev, &tv) != 0)
        probe_finish(false, "cannot watch the connect");
}

static void serve_ready(struct evhttp_request *req)
{
    probe *pr = &H.probe;
    bool running = pr->fd >= 0;
    bool fresh = pr->checked && mr_mono_ns() - pr->started_ns < PROBE_EVERY_NS;
    if ((fresh && !running) || (running && pr->nwaiters == READY_WAITERS_MAX)) {
        answer_ready(req); /* cached answer */
        return;
    }
    pr->waiters[pr->nwaiters++] = req;
    if (!running)
        probe_start();
}

/* ---- the connection cap --------------------------------------------------------- */

/* What a client gets when the endpoint has http_max_connections open or the
 * proxy is out of descriptors. */
#define BUSY_BODY                                                                                  \
    "busy: the HTTP endpoint has http_max_connections connections open, or the proxy is out "      \
    "of file descriptors; try again\n"
static const char busy_reply[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                 "Content-Type: text/plain; charset=utf-8\r\n"
                                 "Cache-Control: no-store\r\n"
                                 "Retry-After: 1\r\n"
                                 "Connection: close\r\n"
                                 "Content-Length: 118\r\n"
                                 "\r\n" BUSY_BODY;
_Static_assert(sizeof(BUSY_BODY) - 1 == 118, "Content-Length of the busy reply");

static void on_accept_error(struct evconnlistener *el, void *arg)
{
    (void)el;
    (void)arg;
    mr_listen_guard_failed(H.guard);
}

static uint64_t cap(void)
{
    return H.p->cfg->http_max_connections ? H.p->cfg->http_max_connections : 1;
}

static void connection_gone(void)
{
    if (H.open-- == cap() && H.guard)
        mr_listen_guard_set_full(H.guard, false);
}

static void on_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    (void)arg;
    connection_gone();
}

/* evhttp 2.1 says nothing when it drops a connection, but calls the close
 * callback of one that has it. The connection does not exist yet when
 * evhttp asks for its bufferevent; it does once the accept callback
 * returns, as the bufferevent's callback argument. So each bufferevent
 * made is held (a reference) until this runs, just after: a connection
 * evhttp dropped meanwhile has no callbacks left. */
static void claim(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    for (size_t i = 0; i < H.npending; i++) {
        void *evcon = NULL;
        bufferevent_getcb(H.pending[i], NULL, NULL, NULL, &evcon);
        if (evcon)
            evhttp_connection_set_closecb(evcon, on_close, NULL);
        else
            connection_gone();
        bufferevent_decref(H.pending[i]);
    }
    H.npending = 0;
}

static bool hold(struct bufferevent *bev)
{
    if (H.npending == H.pending_cap) {
        size_t cap = H.pending_cap ? H.pending_cap * 2 : 16;
        struct bufferevent **v = realloc(H.pending, cap * sizeof *v);
        if (!v)
            return false;
        H.pending = v;
        H.pending_cap = cap;
    }
    bufferevent_incref(bev);
    H.pending[H.npending++] = bev;
    event_active(H.claim_ev, 0, 0);
    return true;
}

/* evhttp asks for each accepted connection's bufferevent (HTTP thread). */
static struct bufferevent *new_connection(struct event_base *base, void *arg)
{
    (void)arg;
    mr_listen_guard_accepted(H.guard);
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!bev || !hold(bev))
        return bev; /* not counted (out of memory); NULL: evhttp makes its own */
    if (++H.open == cap() && !mr_listen_guard_set_full(H.guard, true))
        mr_warn(0, "HTTP endpoint: at http_max_connections, and new clients wait instead of "
                   "getting 503 (out of memory)");
    return bev;
}

/* The guard on the listener evhttp made; false when out of memory. */
static bool guard_listener(struct evhttp_bound_socket *bound)
{
    struct evconnlistener *el = bound ? evhttp_bound_socket_get_listener(bound) : NULL;
    if (!el)
        return false;
    H.guard = mr_listen_guard_new(H.base, el, "HTTP listener", busy_reply, sizeof busy_reply - 1);
    H.claim_ev = event_new(H.base, -1, 0, claim, NULL);
    if (!H.guard || !H.claim_ev)
        return false;
    evconnlistener_set_error_cb(el, on_accept_error);
    evhttp_set_bevcb(H.http, new_connection, NULL);
    return true;
}

/* ---- routing and the thread ---------------------------------------------------- */

/* /metrics with http_token set: the request must carry it. /health and
 * /ready stay open: orchestrators probe them without credentials, and they
 * tell only whether the proxy is up and its backend reachable. */
static bool token_ok(struct evhttp_request *req)
{
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    return mr_http_token_ok(H.p->cfg->http_token, auth);
}

static void refuse(struct evhttp_request *req)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
                      "Bearer realm=\"myrewrite\"");
    reply_text(req, 401, "Unauthorized",
               "/metrics needs the header 'Authorization: Bearer "
               "<token>' (http_token)\n");
}

static void on_request(struct evhttp_request *req, void *arg)
{
    (void)arg;
    enum evhttp_cmd_type m = evhttp_request_get_command(req);
    if (m != EVHTTP_REQ_GET && m != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
        reply_text(req, 405, "Method Not Allowed", "only GET and HEAD are served\n");
        return;
    }
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    if (path && strcmp(path, "/metrics") == 0 && !token_ok(req))
        refuse(req);
    else if (path && strcmp(path, "/metrics") == 0)
        serve_metrics(req);
    else if (path && strcmp(path, "/health") == 0)
        reply_text(req, 200, "OK", "ok\n");
    else if (path && strcmp(path, "/ready") == 0)
        serve_ready(req);
    else
        reply_text(req, 404, "Not Found", "not found: try /metrics, /health or /ready\n");
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    (void)arg;
    char b;
    while (read(fd, &b, 1) > 0) {
    }
    if (H.probe.fd >= 0)
        probe_finish(false, "the proxy is stopping");
    answer_waiters();
    event_base_loopbreak(H.base);
}

static void *http_thread(void *arg)
{
    (void)arg;
    event_base_dispatch(H.base);
    return NULL;
}

static void teardown(void)
{
    mr_listen_guard_free(H.guard); /* before evhttp frees the listener it watches */
    H.guard = NULL;
    if (H.claim_ev)
        claim(-1, 0, NULL);
    if (H.probe.ev)
        event_free(H.probe.ev);
    if (H.probe.fd >= 0)
        close(H.probe.fd);
    if (H.http)
        evhttp_free(H.http);
    if (H.wake_ev)
        event_free(H.wake_ev);
    if (H.claim_ev)
        event_free(H.claim_ev);
    free(H.pending);
    for (int i = 0; i < 2; i++)
        if (H.wake[i] >= 0)
            close(H.wake[i]);
    if (H.base)
        event_base_free(H.base);
    memset(&H, 0, sizeof(H));
    H.wake[0] = H.wake[1] = H.probe.fd = -1;
}

static bool setup(const mr_addr *a)
{
    H.base = event_base_new();
    H.http = H.base ? evhttp_new(H.base) : NULL;
    if (!H.http || pipe2(H.wake, O_NONBLOCK | O_CLOEXEC) != 0)
        return false;
    H.wake_ev = event_new(H.base, H.wake[0], EV_READ | EV_PERSIST, on_wake, NULL);
    if (!H.wake_ev || event_add(H.wake_ev, NULL) != 0)
        return false;
    evhttp_set_allowed_methods(H.http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
                                           EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                                           EVHTTP_REQ_PATCH);
    uint64_t ms = H.p->cfg->http_timeout_ms;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    evhttp_set_timeout_tv(H.http, &tv); /* reading a request, and idle between two */
    evhttp_set_max_headers_size(H.http, 16384);
    evhttp_set_max_body_size(H.http, 4096);
    evhttp_set_gencb(H.http, on_request, NULL);
    return guard_listener(
        evhttp_bind_socket_with_handle(H.http, a->host, (ev_uint16_t)atoi(a->port)));
}

bool mr_http_start(mr_proxy *p)
{
    const char *spec = p->cfg->http_listen;
    mr_addr a;
    if (!spec || !spec[0])
        return true;
    if (!mr_addr_parse(spec, &a) || a.is_unix) {
        mr_error(0, "http_listen = '%s': expected a TCP host:port", spec);
        return false;
    }
    if (!mr_http_exposure_ok(p->cfg, &a))
        return false;
    H.p = p;
    if (!setup(&a)) {
        int err = errno;
        mr_error(0, "cannot serve HTTP on %s: %s", spec, err ? strerror(err) : "failed");
        teardown();
        return false;
    }
    if (pthread_create(&H.thread, NULL, http_thread, NULL) != 0) {
        mr_error(0, "cannot start the HTTP thread");
        teardown();
        return false;
    }
    H.running = true;
    mr_info(0, "HTTP endpoint on %s: /metrics, /health, /ready (at most %llu connections)", spec,
            (unsigned long long)cap());
    return true;
}

void mr_http_stop(void)
{
    if (!H.running)
        return;
    ssize_t n;
    do
        n = write(H.wake[1], "x", 1);
    while (n < 0 && errno == EINTR);
    pthread_join(H.thread, NULL);
    teardown();
}
