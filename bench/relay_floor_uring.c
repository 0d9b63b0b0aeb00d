/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench/relay_floor_uring.c - the floor relay of bench/relay_floor.c on
 * io_uring, to see what io_uring would buy the proxy's relay path.
 *
 * One thread, one ring (single issuer, task work deferred to the wait).
 * Each socket has one multishot receive into a ring of provided buffers
 * (registered once, returned to the kernel after the send that used them),
 * and each completed receive becomes a send of that very buffer to the
 * peer: no copy, and all the sends found in one batch of completions go to
 * the kernel in the one io_uring_enter that also waits for the next batch.
 * Sends in one direction are kept in order: one at a time, the rest queued.
 *
 * Usage: relay_floor_uring LISTEN_PORT BACKEND   (as relay_floor)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4; CMake defines it for the whole tree */
#endif
#include "relay_floor_common.h"

#include <errno.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define NBUFS 1024 /* a power of two */
#define BUFSZ 16384
#define QDEPTH 8 /* receives a direction may have waiting behind its send */
#define RING 4096

enum { OP_ACCEPT, OP_RECV, OP_SEND };

typedef struct pair pair;
typedef struct side {
    int fd;
    int idx; /* 0: client, 1: backend */
    pair *p;
    /* received on this side, waiting to be sent to the peer, in order */
    uint16_t q_bid[QDEPTH];
    uint32_t q_len[QDEPTH], q_off; /* q_off: bytes of the head already sent */
    int q_head, q_n;
    bool recv_armed;
} side;

struct pair {
    side s[2];
    int ops; /* submitted operations not yet completed for the last time */
    bool closing;
};

static struct io_uring ring;
static struct io_uring_buf_ring *br;
static char *bufs;
static int lfd;

static uint64_t tag(side *s, int op) { return (uint64_t)(uintptr_t)s | (uint64_t)op; }

static struct io_uring_sqe *sqe_get(void)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    if (!sqe) { /* full: hand this batch over now */
        io_uring_submit(&ring);
        sqe = io_uring_get_sqe(&ring);
    }
    return sqe;
}

static void give_back(uint16_t bid)
{
    io_uring_buf_ring_add(br, bufs + (size_t)bid * BUFSZ, BUFSZ, bid, io_uring_buf_ring_mask(NBUFS),
                          0);
    io_uring_buf_ring_advance(br, 1);
}

static void arm_recv(side *s)
{
    struct io_uring_sqe *sqe = sqe_get();
    io_uring_prep_recv_multishot(sqe, s->fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = 0;
    io_uring_sqe_set_data64(sqe, tag(s, OP_RECV));
    s->recv_armed = true;
    s->p->ops++;
}

/* Sends the head of s's queue to its peer. */
static void send_head(side *s)
{
    side *peer = &s->p->s[!s->idx];
    uint16_t bid = s->q_bid[s->q_head];
    struct io_uring_sqe *sqe = sqe_get();
    io_uring_prep_send(sqe, peer->fd, bufs + (size_t)bid * BUFSZ + s->q_off,
                       s->q_len[s->q_head] - s->q_off, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, tag(s, OP_SEND));
    s->p->ops++;
}

static void start_close(pair *p)
{
    if (p->closing)
        return;
    p->closing = true;
    for (int i = 0; i < 2; i++)
        shutdown(p->s[i].fd, SHUT_RDWR); /* ends the receives still armed */
}

static void op_done(pair *p)
{
    if (--p->ops > 0 || !p->closing)
        return;
    for (int i = 0; i < 2; i++) {
        side *s = &p->s[i];
        for (int k = 0; k < s->q_n; k++)
            give_back(s->q_bid[(s->q_head + k) % QDEPTH]);
        close(s->fd);
    }
    free(p);
}

static void on_recv(side *s, struct io_uring_cqe *cqe)
{
    pair *p = s->p;
    bool more = cqe->flags & IORING_CQE_F_MORE;
    if (cqe->res > 0) {
        uint16_t bid = (uint16_t)(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
        if (p->closing || s->q_n == QDEPTH) { /* QDEPTH: a peer far behind; not the bench's case */
            give_back(bid);
            start_close(p);
        } else {
            int at = (s->q_head + s->q_n++) % QDEPTH;
            s->q_bid[at] = bid;
            s->q_len[at] = (uint32_t)cqe->res;
            if (s->q_n == 1)
                send_head(s);
        }
    } else if (cqe->res != -ENOBUFS) {
        start_close(p); /* EOF or an error */
    }
    if (!more) {
        s->recv_armed = false;
        if (!p->closing)
            arm_recv(s); /* ENOBUFS or the kernel ended the multishot: again */
        op_done(p);
    }
}

static void on_send(side *s, struct io_uring_cqe *cqe)
{
    pair *p = s->p;
    if (cqe->res < 0) {
        start_close(p);
    } else if (!p->closing) {
        s->q_off += (uint32_t)cqe->res;
        if (s->q_off == s->q_len[s->q_head]) {
            give_back(s->q_bid[s->q_head]);
            s->q_head = (s->q_head + 1) % QDEPTH;
            s->q_n--;
            s->q_off = 0;
        }
        if (s->q_n > 0)
            send_head(s);
    }
    op_done(p);
}

static void on_accept(struct io_uring_cqe *cqe, const floor_backend *be)
{
    if (!(cqe->flags & IORING_CQE_F_MORE)) {
        struct io_uring_sqe *sqe = sqe_get();
        io_uring_prep_multishot_accept(sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
        io_uring_sqe_set_data64(sqe, OP_ACCEPT);
    }
    if (cqe->res < 0)
        return;
    int cfd = cqe->res, bfd = floor_connect(be);
    if (bfd < 0) {
        close(cfd);
        return;
    }
    floor_nodelay(cfd);
    pair *p = aligned_alloc(16, sizeof(pair)); /* low bits of its address carry the op */
    memset(p, 0, sizeof(*p));
    p->s[0] = (side){.fd = cfd, .idx = 0, .p = p};
    p->s[1] = (side){.fd = bfd, .idx = 1, .p = p};
    arm_recv(&p->s[0]);
    arm_recv(&p->s[1]);
}

static void setup_ring(void)
{
    struct io_uring_params params = {
        .flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, .cq_entries = RING * 2};
    params.flags |= IORING_SETUP_CQSIZE;
    int rc = io_uring_queue_init_params(RING, &ring, &params);
    if (rc < 0) {
        fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-rc));
        exit(1);
    }
    if (posix_memalign((void **)&br, 4096, NBUFS * sizeof(struct io_uring_buf)) ||
        posix_memalign((void **)&bufs, 4096, (size_t)NBUFS * BUFSZ))
        floor_die("posix_memalign");
    io_uring_buf_ring_init(br);
    struct io_uring_buf_reg reg = {.ring_addr = (uintptr_t)br, .ring_entries = NBUFS, .bgid = 0};
    rc = io_uring_register_buf_ring(&ring, &reg, 0);
    if (rc < 0) {
        fprintf(stderr, "io_uring_register_buf_ring: %s\n", strerror(-rc));
        exit(1);
    }
    for (int i = 0; i < NBUFS; i++)
        io_uring_buf_ring_add(br, bufs + (size_t)i * BUFSZ, BUFSZ, (uint16_t)i,
                              io_uring_buf_ring_mask(NBUFS), i);
    io_uring_buf_ring_advance(br, NBUFS);
    io_uring_register_ring_fd(&ring); /* no fd lookup per io_uring_enter */
}

int main(int argc, char **argv)
{
    floor_backend be;
    lfd = floor_setup(argc, argv, &be);
    setup_ring();
    struct io_uring_sqe *sqe = sqe_get();
    io_uring_prep_multishot_accept(sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, OP_ACCEPT);
    for (;;) {
        io_uring_submit_and_wait(&ring, 1); /* this batch's sends, and wait for more */
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe)
        {
            uint64_t ud = cqe->user_data;
            int op = (int)(ud & 3);
            side *s = (side *)(uintptr_t)(ud & ~(uint64_t)3);
            if (op == OP_ACCEPT)
                on_accept(cqe, &be);
            else if (op == OP_RECV)
                on_recv(s, cqe);
            else
                on_send(s, cqe);
            seen++;
        }
        io_uring_cq_advance(&ring, seen);
    }
}
