/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/relay_floor.c - the cheapest TCP relay: the floor a proxy's relay
 * path is measured against (bench/proxy_overhead.sh).
 *
 * One thread, level-triggered epoll, non-blocking sockets; each read is
 * written straight through to the other side, nothing is parsed. When the
 * other side does not take everything, the rest waits in a per-direction
 * buffer and the reading side is muted until it drains, so the relay stays
 * correct under back-pressure without costing anything when there is none.
 *
 * Usage: relay_floor LISTEN_PORT BACKEND
 *   BACKEND is HOST:PORT (TCP, TCP_NODELAY) or an absolute unix socket path.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4; CMake defines it for the whole tree */
#endif
#include "relay_floor_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define BUF 65536

typedef struct side side;
struct side {
    int fd;
    side *peer;
    char *pend; /* bytes read from this side the peer has not taken yet */
    size_t pend_len, pend_off;
};

static int ep;

static void watch(side *s, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = s};
    epoll_ctl(ep, EPOLL_CTL_MOD, s->fd, &ev);
}

static void close_pair(side *s)
{
    side *p = s->peer;
    close(s->fd);
    close(p->fd);
    free(s->pend);
    free(p->pend);
    free(s < p ? s : p); /* both sides are one allocation */
}

/* Sends what waits for s->peer; true once nothing waits. */
static bool drain(side *s)
{
    while (s->pend_off < s->pend_len) {
        ssize_t n = write(s->peer->fd, s->pend + s->pend_off, s->pend_len - s->pend_off);
        if (n < 0)
            return false;
        s->pend_off += (size_t)n;
    }
    s->pend_len = s->pend_off = 0;
    return true;
}

/* Readable: read once, write it through; false when the pair must close. */
static bool on_read(side *s)
{
    static char buf[BUF];
    ssize_t n = read(s->fd, buf, sizeof(buf));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
        return false;
    if (n < 0)
        return true;
    ssize_t w = write(s->peer->fd, buf, (size_t)n);
    if (w == n)
        return true;
    if (w < 0 && errno != EAGAIN)
        return false;
    size_t done = w < 0 ? 0 : (size_t)w;
    s->pend = realloc(s->pend, (size_t)n - done);
    memcpy(s->pend, buf + done, (size_t)n - done);
    s->pend_len = (size_t)n - done;
    s->pend_off = 0;
    watch(s, 0);              /* read no more from s until the peer took it */
    watch(s->peer, EPOLLOUT); /* the peer cannot be muted too: its pend is empty */
    return true;
}

/* The peer of `s` became writable: what s read waits for it. */
static bool on_write(side *p)
{
    side *s = p->peer;
    if (!drain(s))
        return errno == EAGAIN;
    watch(s, EPOLLIN);
    watch(p, EPOLLIN);
    return true;
}

static void add(side *s)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};
    epoll_ctl(ep, EPOLL_CTL_ADD, s->fd, &ev);
}

static void on_accept(int lfd, const floor_backend *be)
{
    int cfd = floor_accept(lfd);
    if (cfd < 0)
        return;
    int bfd = floor_connect(be);
    if (bfd < 0) {
        close(cfd);
        return;
    }
    side *pair = calloc(2, sizeof(side));
    pair[0] = (side){.fd = cfd, .peer = &pair[1]};
    pair[1] = (side){.fd = bfd, .peer = &pair[0]};
    add(&pair[0]);
    add(&pair[1]);
}

int main(int argc, char **argv)
{
    floor_backend be;
    int lfd = floor_setup(argc, argv, &be);
    ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
    struct epoll_event evs[64];
    static side closed; /* marks a closed pair's later events in the batch */
    for (;;) {
        int n = epoll_wait(ep, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            side *s = evs[i].data.ptr;
            if (!s) {
                on_accept(lfd, &be);
                continue;
            }
            if (s == &closed)
                continue;
            bool ok = (evs[i].events & EPOLLOUT) ? on_write(s) : on_read(s);
            if (ok)
                continue;
            side *p = s->peer;
            for (int j = i + 1; j < n; j++)
                if (evs[j].data.ptr == p || evs[j].data.ptr == s)
                    evs[j].data.ptr = &closed;
            close_pair(s);
        }
    }
}
