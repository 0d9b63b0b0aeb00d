/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/conn_uring.c - the io_uring path of mr_conn (`io = io_uring`): reads
 * and writes of plain conns, one ring per worker thread (see net/uring.h).
 *
 * Design, and why:
 * - The ring is made on the worker thread with IORING_SETUP_SINGLE_ISSUER |
 *   DEFER_TASKRUN | TASKRUN_FLAG. Without DEFER_TASKRUN (the first version)
 *   each socket wake-up queued task work with a signal-like kick: the
 *   worker's epoll_wait returned EINTR, or the work ran at the exit of
 *   whatever system call the worker was in, and its recv then spun on the
 *   socket lock the sender's softirq still held (perf: 7.6 % of the
 *   process in __pv_queued_spin_lock_slowpath under tcp_recvmsg). Deferred,
 *   the work runs only inside our own io_uring_enter, when we choose.
 * - libevent keeps the wait. Deferred work is announced by a registered
 *   eventfd, one more event of the worker's event_base (edge-triggered, so
 *   never read), so timers, the hand-off pipe and epoll conns are unchanged.
 *   A kernel without DEFER_TASKRUN (before 6.1) gets a plain ring whose fd
 *   is watched instead; the rest is the same.
 * - One harvest: the turn's queued sends become SQEs; one
 *   io_uring_submit_and_get_events submits them with the turn's arms and
 *   cancels and runs the task work (the eventfd is off meanwhile, so the
 *   completions it posts itself do not wake the loop again; work that came
 *   meanwhile sets IORING_SQ_TASKRUN, which is checked after); then the
 *   completions are handled in order. A response read in one round is sent
 *   in the next, so a harvest makes up to ROUNDS rounds while work is left,
 *   then leaves the rest for the loop's next turn (a zero timer, after the
 *   wait has seen the other fds): one epoll_wait and a few enters per batch
 *   instead of a read() and a write() per packet. Things queued outside a
 *   harvest (by a timer or an epoll callback) get one from a one-shot event.
 * - Reads: one multishot recv per plain conn into the worker's ring of
 *   provided buffers. Each completion's bytes are copied into the conn's
 *   input (wire_in) and the buffer goes back to the kernel at once, so no
 *   buffer is held past its completion (a slow session cannot empty the
 *   ring for the others) and ENOBUFS only ends the multishot within one
 *   batch; the recv is then armed again.
 * - Writes: mr_conn_flush queues the conn; at the end of the turn its
 *   output's chains move (no copy) to the conn's send buffer and go as one
 *   send (sendmsg for several extents). Nothing touches that buffer until
 *   the completion; output added meanwhile waits in wire_out and goes with
 *   the rest of a short send after it, so the order holds. mr_conn_pending
 *   counts the bytes in flight, and the owner's drained callback runs at a
 *   completion as at epoll's write event. Before TLS starts, queued output
 *   goes by write() at once (the plain bytes come first); a send still in
 *   flight makes the start fail rather than overtake it.
 * - read_enable(false) cancels the recv. Bytes of completions already on
 *   their way are added to the input but not announced ("held") until
 *   reading is on again, so a paused conn keeps at most what the kernel had
 *   received before the cancel; the rest stays in the socket, as on epoll.
 *   EOF and errors met while paused are kept and reported on resume.
 * - Every recv and send in flight has a slot; its user_data is the slot's
 *   index and generation. mr_conn_free sends what a flush queued (epoll's
 *   write() would have), then clears the slots' conn and cancels both: a
 *   send the socket did not take at once is dropped, as epoll drops unsent
 *   output at close, and its bytes stay with the slot until its
 *   completion. Late completions find no conn; a slot is reused only after
 *   its operation's last completion. A reused fd number is a new socket.
 * - TLS: when TLS starts the recv is cancelled and the handshake's first
 *   step waits for the recv's last completion; bytes it brought meanwhile go
 *   to the TLS layer's pre-read buffer (mr_conn_tls_pre_add), so no byte is
 *   read from the socket out of order. From then on the conn is on the
 *   epoll path (net/conn_tls.c). Compression needs nothing: its frames are
 *   read into wire_in and sent from wire_out like plain bytes.
 * - Connect: the conn watches the connect with its write event as on epoll;
 *   the recv is armed once the connect succeeded and reading is on.
 * - A kernel that refuses the ring leaves the worker on epoll (the worker
 *   logs why). epoll stays the default: with many clients a worker this
 *   path costs less CPU per query than epoll, with one it costs more
 *   (doc/benchmarks.md, "io_uring in the proxy").
 */
#include "myrewrite/net/uring.h"
#include "net/conn_impl.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MYREWRITE_HAVE_URING

#include <liburing.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define NBUFS 256        /* provided buffers per worker (a power of two) */
#define BUFSZ 16384      /* bytes each: 4 MiB a worker */
#define SQ_ENTRIES 256   /* arms and cancels of one turn */
#define CQ_ENTRIES 4096  /* completions between two harvests */
#define HARVEST_MAX 1024 /* completions one harvest takes; the rest on the next turn */
#define ROUNDS 4         /* enters one harvest makes before it lets the loop turn */
#define BGID 0
#define UD_IGNORE UINT64_MAX /* a cancel's own completion */

/* A send in flight: the bytes it took from the conn's output (they stay
 * still until its completion) and the message pointing into them. The
 * conn's, or its slot's once the conn is gone. */
typedef struct ur_send {
    struct evbuffer *buf;
    struct msghdr msg;
    struct iovec iov[WRITE_VECS];
} ur_send;

typedef struct slot {
    mr_conn *c;    /* NULL: the conn is gone, its operation not yet ended */
    ur_send *send; /* a send's slot; NULL: a recv's */
    uint32_t gen;
    uint32_t next_free;
} slot;

struct mr_uring {
    struct io_uring ring;
    struct io_uring_buf_ring *br;
    uint8_t *bufs;
    struct event_base *base;
    struct event *cq_ev;     /* completions or task work wait: the eventfd, or the ring fd */
    int evfd;                /* registered eventfd (deferred task work), or -1 */
    struct event *submit_ev; /* one submit after this turn's callbacks */
    struct event *again_ev;  /* a harvest stopped with work left: after the next wait */
    bool submit_queued, harvesting;
    mr_conn *flush_head; /* conns whose output goes at the end of the turn */
    slot *slots;
    uint32_t nslots, free_head; /* free_head == nslots: none free */
    unsigned conns;             /* conns attached; the ring outlives them */
    bool stopped;
};

static _Thread_local mr_uring *thread_ring;

bool mr_uring_built(void) { return true; }

/* --- slots --- */

static uint64_t slot_ud(const mr_uring *u, int32_t idx)
{
    return ((uint64_t)u->slots[idx].gen << 32) | (uint32_t)idx;
}

static int32_t slot_take(mr_uring *u, mr_conn *c)
{
    if (u->free_head == u->nslots) {
        uint32_t n = u->nslots ? u->nslots * 2 : 64;
        slot *s = realloc(u->slots, n * sizeof(*s));
        if (!s)
            return -1;
        for (uint32_t i = u->nslots; i < n; i++)
            s[i] = (slot){.c = NULL, .send = NULL, .gen = 0, .next_free = i + 1};
        u->free_head = u->nslots;
        u->slots = s;
        u->nslots = n;
        /* the last new slot's next_free is n: the end of the list */
    }
    uint32_t idx = u->free_head;
    u->free_head = u->slots[idx].next_free;
    u->slots[idx].c = c;
    u->slots[idx].gen++;
    return (int32_t)idx;
}

static void slot_give(mr_uring *u, uint32_t idx)
{
    u->slots[idx].c = NULL;
    u->slots[idx].send = NULL;
    u->slots[idx].next_free = u->free_head;
    u->free_head = idx;
}

/* --- submission --- */

static void harvest(evutil_socket_t fd, short what, void *arg);

/* Something was queued outside a harvest: one harvest after this turn's
 * callbacks sends it (and takes what is ready meanwhile). */
static void submit_cb(evutil_socket_t fd, short what, void *arg)
{
    mr_uring *u = arg;
    u->submit_queued = false;
    harvest(fd, what, arg);
}

static void submit_later(mr_uring *u)
{
    if (!u->submit_queued && !u->harvesting) {
        u->submit_queued = true;
        event_active(u->submit_ev, EV_READ, 1);
    }
}

static struct io_uring_sqe *sqe_get(mr_uring *u)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
    if (!sqe) { /* full: hand this batch over now */
        io_uring_submit(&u->ring);
        sqe = io_uring_get_sqe(&u->ring);
    }
    if (sqe)
        submit_later(u);
    return sqe;
}

static bool cancel_ud(mr_uring *u, uint64_t ud)
{
    struct io_uring_sqe *sqe = sqe_get(u);
    if (!sqe)
        return false; /* the operation goes on; what it brings is dropped or held */
    io_uring_prep_cancel64(sqe, ud, 0);
    io_uring_sqe_set_data64(sqe, UD_IGNORE);
    return true;
}

static void give_back(mr_uring *u, uint16_t bid)
{
    io_uring_buf_ring_add(u->br, u->bufs + (size_t)bid * BUFSZ, BUFSZ, bid,
                          io_uring_buf_ring_mask(NBUFS), 0);
    io_uring_buf_ring_advance(u->br, 1);
}

/* --- one conn's recv --- */

static void arm(mr_conn *c)
{
    mr_uring *u = c->ur;
    int32_t idx = slot_take(u, c);
    struct io_uring_sqe *sqe = idx >= 0 ? sqe_get(u) : NULL;
    if (!sqe) {
        if (idx >= 0)
            slot_give(u, (uint32_t)idx);
        c->ur_err = ENOMEM; /* reported from the loop */
        event_active(c->rev, EV_READ, 1);
        return;
    }
    io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BGID;
    io_uring_sqe_set_data64(sqe, slot_ud(u, idx));
    c->ur_slot = idx;
    c->ur_cancelling = false;
}

static void cancel(mr_conn *c)
{
    if (cancel_ud(c->ur, slot_ud(c->ur, c->ur_slot)))
        c->ur_cancelling = true; /* else the recv goes on; its bytes are held while paused */
}

/* Reports what the recv brought, if reading is on: new or held bytes
 * first, then EOF or an error. May free c. */
static void deliver(mr_conn *c, bool got)
{
    if (!c->reading) {
        c->ur_held |= got;
        return;
    }
    if (got || c->ur_held) {
        c->ur_held = false;
        if (c->ur_eof || c->ur_err)
            event_active(c->rev, EV_READ, 1); /* after the reader had the bytes */
        mr_conn_delivered(c);
        return;
    }
    if (c->ur_err) {
        c->err = c->ur_err;
        mr_conn_fire(c, MR_CONN_ERROR);
    } else if (c->ur_eof) {
        mr_conn_fire(c, MR_CONN_EOF);
    }
}

/* The conn's read event on this path: no fd, made active for what waits. */
static void rev_handler(evutil_socket_t fd, short what, void *arg)
{
    mr_conn *c = arg;
    (void)fd;
    (void)what;
    if (c->reading && c->z && mr_conn_z_ready(c)) { /* frames left over */
        mr_conn_delivered(c);
        return;
    }
    deliver(c, false);
}

static bool take_bytes(mr_conn *c, const void *data, size_t n)
{
    if (c->tls)
        return mr_conn_tls_pre_add(c, data, n);
    return evbuffer_add(c->wire_in, data, n) == 0;
}

static void on_recv(mr_uring *u, uint32_t idx, int res, unsigned flags)
{
    mr_conn *c = u->slots[idx].c;
    bool more = flags & IORING_CQE_F_MORE;
    bool ok = true;
    if (res > 0 && (flags & IORING_CQE_F_BUFFER)) {
        uint16_t bid = (uint16_t)(flags >> IORING_CQE_BUFFER_SHIFT);
        if (c)
            ok = take_bytes(c, u->bufs + (size_t)bid * BUFSZ, (size_t)res);
        give_back(u, bid);
    }
    if (!more) {
        slot_give(u, idx);
        if (c) {
            c->ur_slot = -1;
            c->ur_cancelling = false;
        }
    }
    if (!c)
        return;
    if (!ok)
        c->ur_err = ENOMEM;
    else if (res == 0)
        c->ur_eof = true;
    else if (res < 0 && res != -ENOBUFS && res != -ECANCELED)
        c->ur_err = -res;
    if (c->tls) { /* TLS started: its first step waited for this end */
        if (!more)
            event_active(c->rev, EV_READ, 1);
        return;
    }
    if (!more && c->reading && !c->ur_eof && !c->ur_err)
        arm(c); /* ENOBUFS, the kernel ended it, or resumed during a cancel */
    if (more && !ok && !c->ur_cancelling)
        cancel(c);
    deliver(c, res > 0 && ok);
}

/* --- one conn's sends --- */

static void send_free(ur_send *snd)
{
    if (!snd)
        return;
    if (snd->buf)
        evbuffer_free(snd->buf);
    free(snd);
}

static void send_fail(mr_conn *c, int err)
{
    c->err = err;
    c->failed = true; /* reported from the loop by the write event, as on epoll */
    event_active(c->wev, EV_WRITE, 1);
}

static void send_prep(struct io_uring_sqe *sqe, mr_conn *c, ur_send *snd, int n,
                      const struct evbuffer_iovec *vec)
{
    if (n == 1) {
        io_uring_prep_send(sqe, c->fd, vec[0].iov_base, vec[0].iov_len, MSG_NOSIGNAL);
        return;
    }
    for (int i = 0; i < n; i++)
        snd->iov[i] = (struct iovec){.iov_base = vec[i].iov_base, .iov_len = vec[i].iov_len};
    snd->msg = (struct msghdr){.msg_iov = snd->iov, .msg_iovlen = (size_t)n};
    io_uring_prep_sendmsg(sqe, c->fd, &snd->msg, MSG_NOSIGNAL);
}

/* One send of the output (behind what a short send left): its chains move
 * to the send's buffer, where nothing touches them until the completion. */
static void send_start(mr_conn *c)
{
    mr_uring *u = c->ur;
    ur_send *snd = c->ur_send;
    if (!snd && (snd = calloc(1, sizeof(*snd))) && !(snd->buf = evbuffer_new())) {
        free(snd);
        snd = NULL;
    }
    if (!snd || (c->ur_send = snd, evbuffer_add_buffer(snd->buf, c->wire_out) != 0)) {
        send_fail(c, ENOMEM);
        return;
    }
    struct evbuffer_iovec vec[WRITE_VECS];
    int n = evbuffer_peek(snd->buf, -1, NULL, vec, WRITE_VECS);
    if (n <= 0)
        return;
    int32_t idx = slot_take(u, c);
    struct io_uring_sqe *sqe = idx >= 0 ? sqe_get(u) : NULL;
    if (!sqe) {
        if (idx >= 0)
            slot_give(u, (uint32_t)idx);
        send_fail(c, ENOMEM);
        return;
    }
    send_prep(sqe, c, snd, n < WRITE_VECS ? n : WRITE_VECS, vec);
    io_uring_sqe_set_data64(sqe, slot_ud(u, idx));
    u->slots[idx].send = snd;
    c->ur_send_slot = idx;
}

/* A send ended: the rest (a short send, or what was added meanwhile) goes
 * next; the owner hears of the room as from epoll's write event. */
static void on_send(mr_uring *u, uint32_t idx, int res)
{
    mr_conn *c = u->slots[idx].c;
    ur_send *snd = u->slots[idx].send;
    slot_give(u, idx);
    if (!c) { /* freed meanwhile: the bytes were kept for the kernel */
        send_free(snd);
        return;
    }
    c->ur_send_slot = -1;
    if (res <= 0) {
        send_fail(c, res < 0 ? -res : EPIPE);
        return;
    }
    evbuffer_drain(snd->buf, (size_t)res);
    if (!c->tls && (evbuffer_get_length(snd->buf) > 0 || evbuffer_get_length(c->wire_out) > 0))
        send_start(c);
    if (mr_conn_pending(c) <= c->low && c->cb.drained)
        c->cb.drained(c, c->arg); /* may free c */
}

static void flush_unlink(mr_conn *c)
{
    mr_conn **p = &c->ur->flush_head;
    while (*p && *p != c)
        p = &(*p)->ur_flush_next;
    if (*p)
        *p = c->ur_flush_next;
    c->ur_flush_queued = false;
}

/* The turn's flushed outputs become sends; a conn with one in flight sends
 * the rest when it completes. */
static void flush_queued(mr_uring *u)
{
    mr_conn *c;
    while ((c = u->flush_head)) {
        u->flush_head = c->ur_flush_next;
        c->ur_flush_queued = false;
        if (c->ur_send_slot < 0 && !c->tls && !c->failed)
            send_start(c);
    }
}

/* --- the turn --- */

/* The eventfd on again. A read-modify-write with a full barrier, not
 * liburing's plain store and a fence (ThreadSanitizer builds refuse
 * fences): IORING_SQ_TASKRUN must be read only after the flag is back, so
 * that work arriving later signals the eventfd and work that came before
 * has set the flag work_left() reads. */
static void eventfd_on(mr_uring *u)
{
    if (u->ring.cq.kflags)
        __atomic_fetch_and(u->ring.cq.kflags, ~(unsigned)IORING_CQ_EVENTFD_DISABLED,
                           __ATOMIC_SEQ_CST);
}

/* Deferred task work: the recvs' and sends' work waits for this enter,
 * which also submits the turn's SQEs. The eventfd is off meanwhile, so the
 * completions this enter posts itself do not wake the loop once more; work
 * that came while it was off has set IORING_SQ_TASKRUN (work_left()). */
static void enter(mr_uring *u)
{
    if (u->evfd < 0) { /* task work runs by itself; only submit */
        if (io_uring_sq_ready(&u->ring) > 0)
            io_uring_submit(&u->ring);
        return;
    }
    io_uring_cq_eventfd_toggle(&u->ring, false);
    io_uring_submit_and_get_events(&u->ring);
    eventfd_on(u);
}

/* Whether anything waits for another enter: queued sends or SQEs,
 * completions past HARVEST_MAX, or task work that came meanwhile. */
static bool work_left(mr_uring *u)
{
    return u->flush_head || io_uring_sq_ready(&u->ring) > 0 || io_uring_cq_ready(&u->ring) > 0 ||
           (u->evfd >= 0 &&
            (__atomic_load_n(u->ring.sq.kflags, __ATOMIC_SEQ_CST) & IORING_SQ_TASKRUN));
}

/* Up to HARVEST_MAX completions, in order. */
static void reap(mr_uring *u)
{
    struct io_uring_cqe *cqe;
    for (int n = 0; n < HARVEST_MAX && io_uring_cq_ready(&u->ring) > 0 &&
                    io_uring_peek_cqe(&u->ring, &cqe) == 0;
         n++) {
        uint64_t ud = cqe->user_data;
        int res = cqe->res;
        unsigned flags = cqe->flags;
        io_uring_cqe_seen(&u->ring, cqe);
        uint32_t idx = (uint32_t)ud;
        if (ud == UD_IGNORE || idx >= u->nslots || u->slots[idx].gen != (uint32_t)(ud >> 32))
            continue;
        if (u->slots[idx].send) /* callbacks may free conns, never reap */
            on_send(u, idx, res);
        else
            on_recv(u, idx, res, flags);
    }
}

/* The ring's turn: send what the turn queued and take what completed, a
 * few rounds while the callbacks queue more (a response read becomes a
 * send at once). Work still left waits for the loop's next turn, after its
 * wait saw the other fds and timers (the eventfd is edge-triggered and
 * does not announce it again). */
static void harvest(evutil_socket_t fd, short what, void *arg)
{
    static const struct timeval now = {0, 0};
    mr_uring *u = arg;
    (void)fd;
    (void)what;
    u->harvesting = true;
    for (int r = 0;; r++) {
        flush_queued(u);
        enter(u);
        reap(u);
        if (!work_left(u))
            break;
        if (r + 1 == ROUNDS) {
            event_add(u->again_ev, &now);
            break;
        }
    }
    u->harvesting = false;
}

/* --- the conn side (net/conn_impl.h) --- */

struct event *mr_conn_uring_attach(mr_conn *c, struct event_base *base)
{
    mr_uring *u = thread_ring;
    if (!u || u->base != base || u->stopped)
        return NULL;
    struct event *rev = event_new(base, -1, 0, rev_handler, c);
    if (!rev)
        return NULL;
    c->ur = u;
    c->ur_slot = -1;
    u->conns++;
    return rev;
}

void mr_conn_uring_read_enable(mr_conn *c)
{
    if (c->reading) {
        if (c->ur_slot < 0 && !c->connecting && !c->ur_eof && !c->ur_err)
            arm(c);
        if (c->ur_held || c->ur_eof || c->ur_err)
            event_active(c->rev, EV_READ, 1);
    } else if (c->ur_slot >= 0 && !c->ur_cancelling) {
        cancel(c);
    }
}

bool mr_conn_uring_tls_start(mr_conn *c)
{
    if (!c->ur || c->ur_slot < 0)
        return false;
    if (!c->ur_cancelling)
        cancel(c);
    return true;
}

void mr_conn_uring_flush(mr_conn *c)
{
    mr_uring *u = c->ur;
    if (c->ur_flush_queued)
        return;
    c->ur_flush_queued = true;
    c->ur_flush_next = u->flush_head;
    u->flush_head = c;
    submit_later(u);
}

size_t mr_conn_uring_sending(const mr_conn *c)
{
    return c->ur_send ? evbuffer_get_length(c->ur_send->buf) : 0;
}

bool mr_conn_uring_sync(mr_conn *c)
{
    if (c->ur_send_slot >= 0)
        return false;
    if (c->ur_flush_queued)
        flush_unlink(c);
    if (!c->failed && !mr_conn_write_now(c)) {
        send_fail(c, c->err);
        return false;
    }
    return true;
}

/* In detach: output a flush queued goes now, as epoll's write() would have
 * sent it; a send the socket does not take at once is cancelled (the bytes
 * stay with its slot until the kernel lets go of them). */
static void send_detach(mr_conn *c)
{
    mr_uring *u = c->ur;
    if (c->ur_flush_queued)
        flush_unlink(c);
    if (c->ur_send_slot < 0 && !c->failed && !c->tls && evbuffer_get_length(c->wire_out) > 0)
        send_start(c);
    if (c->ur_send_slot >= 0) {
        u->slots[c->ur_send_slot].c = NULL;
        cancel_ud(u, slot_ud(u, c->ur_send_slot)); /* after the send's own try */
        c->ur_send_slot = -1;
    } else {
        send_free(c->ur_send);
    }
    c->ur_send = NULL;
}

static void ring_free(mr_uring *u)
{
    if (u->cq_ev)
        event_free(u->cq_ev);
    if (u->submit_ev)
        event_free(u->submit_ev);
    if (u->again_ev)
        event_free(u->again_ev);
    io_uring_queue_exit(&u->ring); /* cancels what is left */
    if (u->evfd >= 0)
        close(u->evfd);
    for (uint32_t i = 0; i < u->nslots; i++)
        send_free(u->slots[i].send); /* sends of conns gone */
    free(u->br);
    free(u->bufs);
    free(u->slots);
    free(u);
}

void mr_conn_uring_detach(mr_conn *c)
{
    mr_uring *u = c->ur;
    send_detach(c);
    if (c->ur_slot >= 0) {
        u->slots[c->ur_slot].c = NULL; /* its last completions find no conn */
        if (!c->ur_cancelling)
            cancel(c);
    }
    if (io_uring_sq_ready(&u->ring) > 0)
        io_uring_submit(&u->ring); /* now: the recv and the send hold the socket open */
    c->ur = NULL;
    if (--u->conns == 0 && u->stopped)
        ring_free(u);
}

bool mr_conn_uring_busy(const mr_conn *c)
{
    return c->ur_slot >= 0 || c->ur_send_slot >= 0 || c->ur_flush_queued;
}

/* --- the worker's ring --- */

static bool ring_buffers(mr_uring *u, char *err, size_t errlen)
{
    if (posix_memalign((void **)&u->br, 4096, NBUFS * sizeof(struct io_uring_buf)) ||
        posix_memalign((void **)&u->bufs, 4096, (size_t)NBUFS * BUFSZ)) {
        snprintf(err, errlen, "out of memory");
        return false;
    }
    io_uring_buf_ring_init(u->br);
    struct io_uring_buf_reg reg = {
        .ring_addr = (uintptr_t)u->br, .ring_entries = NBUFS, .bgid = BGID};
    int rc = io_uring_register_buf_ring(&u->ring, &reg, 0);
    if (rc < 0) {
        snprintf(err, errlen, "io_uring_register_buf_ring: %s", strerror(-rc));
        return false;
    }
    for (int i = 0; i < NBUFS; i++)
        io_uring_buf_ring_add(u->br, u->bufs + (size_t)i * BUFSZ, BUFSZ, (uint16_t)i,
                              io_uring_buf_ring_mask(NBUFS), i);
    io_uring_buf_ring_advance(u->br, NBUFS);
    return true;
}

/* The ring, with its task work deferred to our own enters if the kernel
 * has that (6.1), else run when the kernel likes (ring fd watched). */
static int ring_init(mr_uring *u)
{
    static const unsigned tries[] = {
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
        IORING_SETUP_SINGLE_ISSUER, /* 6.0 */
        0,
    };
    int rc = -EINVAL;
    for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]) && rc == -EINVAL; i++) {
        struct io_uring_params p = {.flags = tries[i] | IORING_SETUP_CQSIZE,
                                    .cq_entries = CQ_ENTRIES};
        rc = io_uring_queue_init_params(SQ_ENTRIES, &u->ring, &p);
    }
    return rc;
}

/* Deferred task work is announced by a registered eventfd, edge-triggered
 * so that it is never read; otherwise the ring fd is readable while
 * completions wait. */
static bool ring_event(mr_uring *u)
{
    int fd = u->ring.ring_fd;
    short ev = EV_READ | EV_PERSIST;
    if (u->ring.flags & IORING_SETUP_DEFER_TASKRUN) {
        u->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (u->evfd < 0 || io_uring_register_eventfd(&u->ring, u->evfd) < 0)
            return false;
        fd = u->evfd;
        ev |= EV_ET;
    }
    u->cq_ev = event_new(u->base, fd, ev, harvest, u);
    return u->cq_ev && event_add(u->cq_ev, NULL) == 0;
}

mr_uring *mr_uring_start(struct event_base *base, char *err, size_t errlen)
{
    mr_uring *u = calloc(1, sizeof(*u));
    if (!u) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    u->evfd = -1;
    int rc = ring_init(u);
    if (rc < 0) {
        snprintf(err, errlen, "io_uring_queue_init: %s", strerror(-rc));
        free(u);
        return NULL;
    }
    u->base = base;
    u->submit_ev = event_new(base, -1, 0, submit_cb, u);
    u->again_ev = evtimer_new(base, harvest, u);
    if (!u->submit_ev || !u->again_ev || !ring_event(u)) {
        snprintf(err, errlen, "completion event: %s", strerror(errno));
        ring_free(u);
        return NULL;
    }
    if (!ring_buffers(u, err, errlen)) {
        ring_free(u);
        return NULL;
    }
    thread_ring = u;
    return u;
}

void mr_uring_stop(mr_uring *u)
{
    if (!u)
        return;
    if (thread_ring == u)
        thread_ring = NULL;
    u->stopped = true;
    if (u->conns == 0)
        ring_free(u);
}

#else /* built without liburing: every conn is on the epoll path */

bool mr_uring_built(void) { return false; }

mr_uring *mr_uring_start(struct event_base *base, char *err, size_t errlen)
{
    (void)base;
    snprintf(err, errlen, "built without liburing");
    return NULL;
}

void mr_uring_stop(mr_uring *u) { (void)u; }

struct event *mr_conn_uring_attach(mr_conn *c, struct event_base *base)
{
    (void)c;
    (void)base;
    return NULL;
}

void mr_conn_uring_read_enable(mr_conn *c) { (void)c; }
bool mr_conn_uring_tls_start(mr_conn *c)
{
    (void)c;
    return false;
}
void mr_conn_uring_detach(mr_conn *c) { (void)c; }
bool mr_conn_uring_busy(const mr_conn *c)
{
    (void)c;
    return false;
}
void mr_conn_uring_flush(mr_conn *c) { (void)c; }
size_t mr_conn_uring_sending(const mr_conn *c)
{
    (void)c;
    return 0;
}
bool mr_conn_uring_sync(mr_conn *c)
{
    (void)c;
    return true;
}

#endif
