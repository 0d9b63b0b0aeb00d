/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/conn.c - non-blocking socket with evbuffers (see net/conn.h).
 * Runs on the thread that owns its event_base; owns the socket and buffers.
 */
#include "net/conn_impl.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static void fire(mr_conn *c, int what) { mr_conn_fire(c, what); }

static void timer_handler(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fire(arg, MR_CONN_TIMEOUT);
}

/* One reserved extent (the usual case) is one read(): cheaper in the kernel
 * than a readv(), which copies and checks the iovec array first. */
static ssize_t read_into(int fd, const struct evbuffer_iovec *vec, int nvec)
{
    if (nvec == 1)
        return read(fd, vec[0].iov_base, vec[0].iov_len);
    struct iovec iov[2];
    for (int i = 0; i < nvec; i++) {
        iov[i].iov_base = vec[i].iov_base;
        iov[i].iov_len = vec[i].iov_len;
    }
    return readv(fd, iov, nvec);
}

/* A read straight into reserved input space: no copy, but the input's
 * 64 KiB extent is a large allocation each time the input was emptied. */
static ssize_t read_reserved(mr_conn *c)
{
    struct evbuffer_iovec vec[2];
    int nvec = evbuffer_reserve_space(c->wire_in, READ_CHUNK, vec, 2);
    if (nvec <= 0) {
        errno = ENOMEM;
        return -1;
    }
    ssize_t n = read_into(c->fd, vec, nvec);
    size_t left = n > 0 ? (size_t)n : 0;
    int used = 0;
    for (; used < nvec && left > 0; used++) {
        if (vec[used].iov_len > left)
            vec[used].iov_len = left;
        left -= vec[used].iov_len;
    }
    evbuffer_commit_space(c->wire_in, vec, used);
    return n;
}

void mr_conn_delivered(mr_conn *c)
{
    if (c->idle_on)
        evtimer_add(c->timer, &c->idle);
    if (c->z && !mr_conn_z_inflate(c)) {
        fire(c, MR_CONN_ERROR);
        return;
    }
    if (c->cb.read)
        c->cb.read(c, c->arg);
}

static void read_handler(evutil_socket_t fd, short what, void *arg)
{
    mr_conn *c = arg;
    (void)fd;
    (void)what;
    if (c->z && mr_conn_z_ready(c)) { /* frames left over from an earlier read */
        mr_conn_delivered(c);
        return;
    }
    /* The last read's size picks the way: bulk transfers stay zero-copy, a
     * small read goes to the thread's scratch (net/conn_fresh.c). */
    bool small = c->last_read < SMALL_READ;
    if (!small && !mr_conn_fold(c))
        return; /* c's fresh bytes go first; out of memory is reported from the loop */
    ssize_t n = small ? mr_conn_read_small(c) : read_reserved(c);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return;
        c->err = errno;
        fire(c, MR_CONN_ERROR);
        return;
    }
    if (n == 0) {
        fire(c, MR_CONN_EOF);
        return;
    }
    c->last_read = (size_t)n;
    mr_conn_delivered(c);
}

/* Sends the head of the output: one write() when it is one extent (a relayed
 * response usually is), else one writev() of up to WRITE_VECS extents. This
 * skips libevent's evbuffer_write, which always gathers for a writev(). */
static ssize_t write_head(mr_conn *c)
{
    struct evbuffer_iovec vec[WRITE_VECS];
    int nvec = evbuffer_peek(c->wire_out, -1, NULL, vec, WRITE_VECS);
    if (nvec > WRITE_VECS)
        nvec = WRITE_VECS;
    ssize_t n;
    if (nvec == 1) {
        n = write(c->fd, vec[0].iov_base, vec[0].iov_len);
    } else {
        struct iovec iov[WRITE_VECS];
        for (int i = 0; i < nvec; i++) {
            iov[i].iov_base = vec[i].iov_base;
            iov[i].iov_len = vec[i].iov_len;
        }
        n = writev(c->fd, iov, nvec);
    }
    if (n > 0)
        evbuffer_drain(c->wire_out, (size_t)n);
    return n;
}

/* Writes as much as the socket takes; false on a hard error. */
bool mr_conn_write_now(mr_conn *c)
{
    while (evbuffer_get_length(c->wire_out) > 0) {
        ssize_t n = write_head(c);
        if (n > 0)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return true;
        c->err = n < 0 ? errno : EPIPE;
        return false;
    }
    return true;
}

static void watch_writes(mr_conn *c, bool on)
{
    if (on && !c->write_pending)
        event_add(c->wev, NULL);
    else if (!on && c->write_pending)
        event_del(c->wev);
    c->write_pending = on;
}

static void finish_connect(mr_conn *c)
{
    int err = 0;
    socklen_t len = sizeof(err);
    c->connecting = false;
    watch_writes(c, false);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err) {
        c->err = err;
        fire(c, MR_CONN_ERROR);
        return;
    }
    if (c->ur)
        mr_conn_uring_read_enable(c); /* the recv waited for the connect */
    fire(c, MR_CONN_CONNECTED);
}

static void write_handler(evutil_socket_t fd, short what, void *arg)
{
    mr_conn *c = arg;
    (void)fd;
    (void)what;
    if (c->failed) { /* a failure found outside the loop (connect, flush) */
        fire(c, MR_CONN_ERROR);
        return;
    }
    if (c->connecting) {
        finish_connect(c);
        return;
    }
    if (!mr_conn_write_now(c)) {
        fire(c, MR_CONN_ERROR);
        return;
    }
    size_t left = evbuffer_get_length(c->wire_out);
    if (left == 0)
        watch_writes(c, false);
    if (left <= c->low && c->cb.drained)
        c->cb.drained(c, c->arg);
}

static mr_conn *conn_alloc(struct event_base *base, int fd, const mr_conn_callbacks *cb, void *arg)
{
    mr_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->fd = fd;
    c->cb = *cb;
    c->arg = arg;
    c->in = evbuffer_new();
    c->out = evbuffer_new();
    c->ur_slot = -1;
    c->ur_send_slot = -1;
    c->rev = mr_conn_uring_attach(c, base);
    if (!c->rev)
        c->rev = event_new(base, fd, EV_READ | EV_PERSIST, read_handler, c);
    c->wev = event_new(base, fd, EV_WRITE | EV_PERSIST, write_handler, c);
    c->timer = evtimer_new(base, timer_handler, c);
    c->wire_in = c->in;
    c->wire_out = c->out;
    if (!c->in || !c->out || !c->rev || !c->wev || !c->timer) {
        c->fd = -1; /* the caller still owns fd */
        mr_conn_free(c);
        return NULL;
    }
    return c;
}

mr_conn *mr_conn_new(struct event_base *base, int fd, const mr_conn_callbacks *cb, void *arg)
{
    evutil_make_socket_nonblocking(fd);
    return conn_alloc(base, fd, cb, arg);
}

mr_conn *mr_conn_connect(struct event_base *base, const struct sockaddr *sa, socklen_t len,
                         const struct timeval *timeout, const mr_conn_callbacks *cb, void *arg)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    mr_conn *c = conn_alloc(base, fd, cb, arg);
    if (!c) {
        close(fd);
        return NULL;
    }
    c->connecting = true;
    mr_conn_set_timeout(c, timeout);
    if (connect(fd, sa, len) != 0 && errno != EINPROGRESS) {
        c->err = errno;
        c->failed = true;
    }
    /* Immediate success or failure is reported from the loop, like any other. */
    watch_writes(c, true);
    if (c->failed)
        event_active(c->wev, EV_WRITE, 1);
    return c;
}

void mr_conn_free(mr_conn *c)
{
    if (!c)
        return;
    mr_conn_fresh_drop(c);
    if (c->ur)
        mr_conn_uring_detach(c);
    if (c->tls)
        mr_conn_tls_free(c);
    if (c->z)
        mr_conn_z_free(c);
    if (c->rev)
        event_free(c->rev);
    if (c->wev)
        event_free(c->wev);
    if (c->timer)
        event_free(c->timer);
    if (c->in)
        evbuffer_free(c->in);
    if (c->out)
        evbuffer_free(c->out);
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}

/* ---- moving between threads ---- */

static void free_events(mr_conn *c)
{
    event_free(c->rev);
    event_free(c->wev);
    event_free(c->timer);
    c->rev = c->wev = c->timer = NULL;
    c->write_pending = false;
}

int mr_conn_detach(mr_conn *c)
{
    mr_conn_read_enable(c, false); /* io_uring: cancels the armed recv */
    mr_conn_set_read_idle(c, NULL);
    if (c->connecting || c->failed || mr_conn_tls_handshaking(c))
        return MR_CONN_DETACH_BUSY;
    if (c->ur && mr_conn_uring_busy(c))
        return MR_CONN_DETACH_LATER;
    bool unread = mr_conn_input_length(c) > 0 || evbuffer_get_length(c->wire_in) > 0 ||
                  (c->tls && mr_conn_tls_unread(c)) || (c->z && mr_conn_z_ready(c)) || c->ur_eof ||
                  c->ur_err;
    if (unread || mr_conn_pending(c) > 0)
        return MR_CONN_DETACH_BUSY;
    if (c->ur)
        mr_conn_uring_detach(c); /* nothing of c left on the ring */
    free_events(c);
    return MR_CONN_DETACHED;
}

bool mr_conn_attach(mr_conn *c, struct event_base *base)
{
    if (c->tls) {
        if (!mr_conn_tls_events(c, base))
            return false;
    } else {
        c->rev = mr_conn_uring_attach(c, base);
        if (!c->rev)
            c->rev = event_new(base, c->fd, EV_READ | EV_PERSIST, read_handler, c);
        c->wev = event_new(base, c->fd, EV_WRITE | EV_PERSIST, write_handler, c);
    }
    c->timer = evtimer_new(base, timer_handler, c);
    return c->rev && c->wev && c->timer;
}

struct evbuffer *mr_conn_output(mr_conn *c) { return c->out; }
int mr_conn_fd(const mr_conn *c) { return c->fd; }
int mr_conn_errno(const mr_conn *c) { return c->err; }

size_t mr_conn_pending(const mr_conn *c)
{
    size_t n = evbuffer_get_length(c->out) + mr_conn_uring_sending(c);
    return c->wire_out == c->out ? n : n + evbuffer_get_length(c->wire_out);
}

void mr_conn_flush(mr_conn *c)
{
    if (c->z && !c->failed && !mr_conn_z_deflate(c)) {
        c->failed = true; /* reported from the loop, as a write error is */
        event_active(c->wev, EV_WRITE, 1);
        return;
    }
    if (c->tls) {
        mr_conn_tls_flush(c);
        return;
    }
    if (c->connecting || c->failed || c->write_pending)
        return; /* the write event is already watching */
    if (c->ur) {
        mr_conn_uring_flush(c); /* one send SQE at the end of the turn */
        return;
    }
    if (!mr_conn_write_now(c)) {
        c->failed = true; /* reported from the loop, not to our caller */
        event_active(c->wev, EV_WRITE, 1);
        return;
    }
    if (evbuffer_get_length(c->wire_out) > 0)
        watch_writes(c, true);
}

void mr_conn_write(mr_conn *c, const void *data, size_t len)
{
    evbuffer_add(c->out, data, len);
    mr_conn_flush(c);
}

void mr_conn_read_enable(mr_conn *c, bool on)
{
    if (c->idle_on && on != c->reading) { /* a paused read is not the peer's silence */
        if (on)
            evtimer_add(c->timer, &c->idle);
        else
            evtimer_del(c->timer);
    }
    if (c->tls) {
        c->reading = on;
        mr_conn_tls_read_enable(c);
    } else if (c->ur) {
        c->reading = on;
        mr_conn_uring_read_enable(c);
    } else {
        if (on && !c->reading)
            event_add(c->rev, NULL);
        else if (!on && c->reading)
            event_del(c->rev);
        c->reading = on;
    }
    if (on && c->z && mr_conn_z_ready(c))
        event_active(c->rev, EV_READ, 1); /* frames left over, and the socket may stay quiet */
}

void mr_conn_set_timeout(mr_conn *c, const struct timeval *tv)
{
    if (tv)
        evtimer_add(c->timer, tv);
    else
        evtimer_del(c->timer);
}

void mr_conn_set_read_idle(mr_conn *c, const struct timeval *tv)
{
    c->idle_on = tv != NULL;
    if (tv)
        c->idle = *tv;
    if (tv && c->reading)
        evtimer_add(c->timer, tv);
    else
        evtimer_del(c->timer);
}

void mr_conn_keepalive(mr_conn *c, uint64_t ms)
{
    if (!ms)
        return;
    int on = 1, cnt = 3;
    int idle = ms < 1000 ? 1 : (int)(ms / 1000);
    int intvl = idle / 3 ? idle / 3 : 1;
    unsigned user_ms = (unsigned)((uint64_t)(idle + cnt * intvl) * 1000);
    /* each fails harmlessly on a unix socket */
    (void)setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    (void)setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    (void)setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    (void)setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    (void)setsockopt(c->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_ms, sizeof user_ms);
}

void mr_conn_set_low_mark(mr_conn *c, size_t low) { c->low = low; }

void mr_conn_set_callbacks(mr_conn *c, const mr_conn_callbacks *cb, void *arg)
{
    c->cb = *cb;
    c->arg = arg;
}
