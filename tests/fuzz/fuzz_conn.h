/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/fuzz/fuzz_conn.h - what fuzz_tls.c and fuzz_conn_z.c share: an
 * mr_conn (net/conn.h) on one end of a socketpair, and a hostile peer on
 * the other that sends the fuzz input in pieces, one loop turn apart, and
 * then shuts its write side. The conn runs on one event_base made once
 * per process; each input gets its own socketpair and conn, freed at its
 * end, so a leak of either shows as one.
 *
 * Input layout, both targets: byte 0 the target's options, byte 1 `k`
 * (how many of the peer's bytes come before TLS or compression starts),
 * byte 2 the piece size (0: all at once), then the peer's bytes.
 */
#ifndef MYREWRITE_FUZZ_CONN_H
#define MYREWRITE_FUZZ_CONN_H

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "myrewrite/net/conn.h"

#define FUZZ_CONN_HEAD 3

typedef struct fuzz_peer {
    int fd;              /* the peer's end */
    const uint8_t *data; /* what it still has to send */
    size_t left;
    size_t piece; /* bytes per turn; 0: all it can */
    bool shut;    /* its write side is shut */
} fuzz_peer;

static struct event_base *fuzz_base(void)
{
    static struct event_base *base;
    if (!base)
        base = event_base_new();
    FUZZ_CHECK(base);
    return base;
}

/* One pass of the loop. EVLOOP_NONBLOCK alone goes on while each pass
 * finds an event active, and a socket at EOF is readable on every pass:
 * with EVLOOP_ONCE the call returns once it has run what was active. */
static void fuzz_loop_once(void) { event_base_loop(fuzz_base(), EVLOOP_ONCE | EVLOOP_NONBLOCK); }

/* A conn on sv[0]; the peer gets sv[1], non-blocking. */
static mr_conn *fuzz_conn_open(fuzz_peer *p, const mr_conn_callbacks *cb, void *arg)
{
    int sv[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    FUZZ_CHECK(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
    *p = (fuzz_peer){.fd = sv[1]};
    mr_conn *c = mr_conn_new(fuzz_base(), sv[0], cb, arg);
    FUZZ_CHECK(c);
    return c;
}

/* Sends up to n of the peer's bytes (one piece at most); false once all
 * are sent. */
static bool fuzz_peer_send(fuzz_peer *p, size_t n)
{
    if (p->piece && n > p->piece)
        n = p->piece;
    if (n > p->left)
        n = p->left;
    if (n > 0) {
        ssize_t w = write(p->fd, p->data, n);
        FUZZ_CHECK(w > 0 || errno == EAGAIN);
        if (w > 0) {
            p->data += w;
            p->left -= (size_t)w;
        }
    }
    return p->left > 0;
}

/* One turn: the peer sends its next piece (or, all sent, shuts its write
 * side once), throws away what the conn sent it, and the loop runs once. */
static void fuzz_turn(fuzz_peer *p)
{
    if (!fuzz_peer_send(p, p->left) && !p->shut) {
        FUZZ_CHECK(shutdown(p->fd, SHUT_WR) == 0);
        p->shut = true;
    }
    uint8_t sink[4096];
    while (read(p->fd, sink, sizeof(sink)) > 0)
        continue;
    fuzz_loop_once();
}

/* The peer's first k bytes reach the plain conn, which leaves them in its
 * input (*plain_in: what the conn's read callback last saw there); the rest
 * stays for later turns. */
static void fuzz_send_plain_first(fuzz_peer *p, mr_conn *c, const size_t *plain_in, size_t k)
{
    size_t rest = p->left - k;
    p->left = k;
    for (int i = 0; *plain_in < k && i < 1000; i++) {
        fuzz_peer_send(p, k);
        fuzz_loop_once();
    }
    FUZZ_CHECK(*plain_in == k && mr_conn_input_length(c) == k);
    p->left = rest;
}

static void fuzz_conn_close(fuzz_peer *p, mr_conn *c)
{
    mr_conn_free(c);
    close(p->fd);
    /* events the conn made active die with it; a turn shows any left */
    fuzz_loop_once();
}

#endif
