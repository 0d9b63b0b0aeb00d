/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/listen_guard.c - refusing and pausing instead of spinning when accept
 * fails (see net/listen_guard.h).
 *
 * The thread of the listener's event_base; owns the reserve descriptor, the
 * resume timer and the refusing listener.
 */
#include "myrewrite/net/listen_guard.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"

#define PAUSE_MIN_MS 50
#define PAUSE_MAX_MS 1000
#define LOG_EVERY_MS 10000
#define REFUSE_BATCH 64 /* backlog entries refused per failure */
#define REFUSAL_MAX 512

struct mr_listen_guard {
    struct evconnlistener *el;      /* the owner's */
    struct evconnlistener *refuser; /* owned; same socket, on while full; NULL until needed */
    struct event_base *base;
    struct event *timer; /* owned: the end of a pause */
    char name[64];
    unsigned char refusal[REFUSAL_MAX];
    size_t refusal_len;
    int spare; /* reserve descriptor; -1 while another took its number */
    bool paused, full;
    unsigned pause_ms; /* the next pause */
    uint64_t since_ms; /* start of the failure episode; 0: none */
    uint64_t logged_ms;
    uint64_t refused, failed; /* since the last line */
    uint64_t refused_all;     /* in this episode */
    int last_err;
};

static mr_listen_stats stats;

const mr_listen_stats *mr_listen_stats_get(void) { return &stats; }

static void count(mr_counter *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

void mr_listen_refuse_fd(int fd, const void *refusal, size_t len)
{
    /* A client that already sent its request (HTTP) would get a reset on
     * close, which may drop the answer: read what came first. */
    char sink[4096];
    if (recv(fd, sink, sizeof sink, MSG_DONTWAIT) < 0 && errno != EAGAIN)
        mr_debug(0, "refused client: %s", strerror(errno));
    if (send(fd, refusal, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        mr_debug(0, "could not send the refusal: %s", strerror(errno));
    close(fd);
}

void mr_listen_refuse_buf(int fd, mr_buf *b)
{
    if (b->failed)
        close(fd);
    else
        mr_listen_refuse_fd(fd, b->data, b->len);
    mr_buf_free(b);
}

static void take_spare(mr_listen_guard *g)
{
    if (g->spare < 0)
        g->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* The active listener: the owner's, or the refuser while full. */
static struct evconnlistener *active(const mr_listen_guard *g)
{
    return g->full && g->refuser ? g->refuser : g->el;
}

/* Out of descriptors: each waiting client is accepted on the reserve's
 * number and refused. Stops when the backlog is empty or the reserve is
 * lost (another thread took the number); it is taken again at the next
 * round or when accepts succeed again. */
static void refuse_waiting(mr_listen_guard *g)
{
    int lfd = evconnlistener_get_fd(g->el);
    take_spare(g); /* lost in an earlier round: a freed number may bring it back */
    for (int i = 0; i < REFUSE_BATCH && g->spare >= 0; i++) {
        close(g->spare);
        g->spare = -1;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            mr_listen_refuse_fd(fd, g->refusal, g->refusal_len);
            count(&stats.refused);
            g->refused++;
            g->refused_all++;
        }
        take_spare(g);
        if (fd < 0)
            return;
    }
}

/* The first failure of an episode, then one line every LOG_EVERY_MS. */
static void log_failure(mr_listen_guard *g, uint64_t now, bool first)
{
    if (first)
        mr_warn(0,
                "%s: accept failed: %s; new connections are refused (%llu so far) and accept "
                "is paused (up to %u ms at a time) until it succeeds; open connections are "
                "served",
                g->name, strerror(g->last_err), (unsigned long long)g->refused, PAUSE_MAX_MS);
    else if (now - g->logged_ms >= LOG_EVERY_MS)
        mr_warn(0,
                "%s: accept still failing (%s): %llu connection(s) refused, %llu failed "
                "accept(s) in the last %llu s",
                g->name, strerror(g->last_err), (unsigned long long)g->refused,
                (unsigned long long)g->failed, (unsigned long long)((now - g->logged_ms) / 1000));
    else
        return;
    g->logged_ms = now;
    g->refused = g->failed = 0;
}

static void pause_listener(mr_listen_guard *g)
{
    struct timeval tv = {g->pause_ms / 1000, (suseconds_t)(g->pause_ms % 1000) * 1000};
    if (g->paused)
        return;
    evconnlistener_disable(active(g));
    count(&stats.pauses);
    g->paused = evtimer_add(g->timer, &tv) == 0;
    if (!g->paused)
        evconnlistener_enable(active(g)); /* no timer: spinning beats never accepting */
    g->pause_ms = g->pause_ms * 2 > PAUSE_MAX_MS ? PAUSE_MAX_MS : g->pause_ms * 2;
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    mr_listen_guard *g = arg;
    (void)fd;
    (void)what;
    g->paused = false;
    if (!g->full || g->refuser) /* full without a refuser: accept nothing */
        evconnlistener_enable(active(g));
}

void mr_listen_guard_failed(mr_listen_guard *g)
{
    int err = errno;
    uint64_t now = mr_mono_ms();
    bool first = !g->since_ms;
    if (first) {
        g->since_ms = now;
        g->refused_all = 0;
    }
    g->last_err = err;
    g->failed++;
    count(&stats.accept_failures);
    if (err == EMFILE || err == ENFILE)
        refuse_waiting(g);
    log_failure(g, now, first);
    pause_listener(g);
}

void mr_listen_guard_accepted(mr_listen_guard *g)
{
    g->pause_ms = PAUSE_MIN_MS;
    if (!g->since_ms)
        return;
    uint64_t ms = mr_mono_ms() - g->since_ms;
    mr_info(0,
            "%s: accepting again after %llu.%llu s of failed accepts; %llu connection(s) "
            "refused meanwhile",
            g->name, (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000 / 100),
            (unsigned long long)g->refused_all);
    g->since_ms = 0;
    g->refused = g->failed = 0;
    take_spare(g); /* descriptors are free again: hold the reserve for the next episode */
}

static void on_refuser_accept(struct evconnlistener *el, evutil_socket_t fd, struct sockaddr *sa,
                              int salen, void *arg)
{
    mr_listen_guard *g = arg;
    (void)el;
    (void)sa;
    (void)salen;
    mr_listen_refuse_fd(fd, g->refusal, g->refusal_len);
    count(&stats.refused);
}

static void on_refuser_error(struct evconnlistener *el, void *arg)
{
    (void)el;
    mr_listen_guard_failed(arg);
}

bool mr_listen_guard_set_full(mr_listen_guard *g, bool full)
{
    if (full == g->full)
        return true;
    if (full && !g->refuser) {
        /* backlog 0: the socket listens already */
        g->refuser = evconnlistener_new(g->base, on_refuser_accept, g,
                                        LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_DISABLED, 0,
                                        evconnlistener_get_fd(g->el));
        if (g->refuser)
            evconnlistener_set_error_cb(g->refuser, on_refuser_error);
    }
    if (!g->paused)
        evconnlistener_disable(active(g));
    g->full = full;
    if (!g->paused && (!full || g->refuser))
        evconnlistener_enable(active(g));
    return !full || g->refuser;
}

mr_listen_guard *mr_listen_guard_new(struct event_base *base, struct evconnlistener *el,
                                     const char *name, const void *refusal, size_t refusal_len)
{
    mr_listen_guard *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->el = el;
    g->base = base;
    g->spare = -1;
    g->pause_ms = PAUSE_MIN_MS;
    snprintf(g->name, sizeof g->name, "%s", name);
    g->refusal_len = refusal_len < REFUSAL_MAX ? refusal_len : REFUSAL_MAX;
    memcpy(g->refusal, refusal, g->refusal_len);
    g->timer = evtimer_new(base, on_resume, g);
    if (!g->timer) {
        free(g);
        return NULL;
    }
    take_spare(g);
    return g;
}

void mr_listen_guard_free(mr_listen_guard *g)
{
    if (!g)
        return;
    if (g->refuser)
        evconnlistener_free(g->refuser);
    event_free(g->timer);
    if (g->spare >= 0)
        close(g->spare);
    free(g);
}
