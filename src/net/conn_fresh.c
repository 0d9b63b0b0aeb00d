/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/conn_fresh.c - relaying without copies: small reads left where they
 * were read, and bytes moved from one conn's input to another's socket.
 *
 * A small read (net/conn.c picks it) goes into the thread's scratch. When
 * the input was empty those bytes are the whole input, and they stay in
 * the scratch as the conn's "fresh" bytes: the owner can read them in place
 * (mr_conn_fresh) and relay them (mr_conn_relay), which writes them to the
 * peer's socket straight from the scratch. A relayed query's response then
 * costs no evbuffer allocation, copy or drain on either side.
 *
 * The scratch holds one conn's fresh bytes at a time, the thread's
 * `fresh_owner`. They are copied into the input ("folded") before anything
 * else can see or overwrite them: the next read on this thread, any call of
 * mr_conn_input(), TLS or compression starting, and they are dropped when
 * the conn is freed. So code that only knows the input evbuffer sees every
 * byte, in order.
 */
#include "net/conn_impl.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdint.h>
#include <unistd.h>

static _Thread_local uint8_t scratch[READ_CHUNK];
static _Thread_local mr_conn *fresh_owner;

static size_t fresh_left(const mr_conn *c) { return c->fresh_len - c->fresh_off; }

static void fresh_clear(mr_conn *c)
{
    c->fresh_off = c->fresh_len = 0;
    if (fresh_owner == c)
        fresh_owner = NULL;
}

bool mr_conn_fold(mr_conn *c)
{
    size_t n = fresh_left(c);
    if (n == 0)
        return true;
    bool ok = evbuffer_add(c->wire_in, scratch + c->fresh_off, n) == 0;
    fresh_clear(c);
    if (!ok) {
        c->err = ENOMEM;
        c->failed = true; /* reported from the loop, as a failed flush is */
        event_active(c->wev, EV_WRITE, 1);
    }
    return ok;
}

void mr_conn_fresh_drop(mr_conn *c) { fresh_clear(c); }

ssize_t mr_conn_read_small(mr_conn *c)
{
    if (fresh_owner)
        mr_conn_fold(fresh_owner); /* the scratch is about to be overwritten */
    ssize_t n = read(c->fd, scratch, sizeof(scratch));
    if (n <= 0)
        return n;
    if (!c->z && evbuffer_get_length(c->wire_in) == 0) {
        c->fresh_off = 0; /* the whole input: it stays here */
        c->fresh_len = (size_t)n;
        fresh_owner = c;
        return n;
    }
    if (evbuffer_add(c->wire_in, scratch, (size_t)n) != 0) {
        errno = ENOMEM;
        return -1;
    }
    return n;
}

const uint8_t *mr_conn_fresh(const mr_conn *c, size_t *len)
{
    *len = fresh_left(c);
    return *len ? scratch + c->fresh_off : NULL;
}

size_t mr_conn_input_length(const mr_conn *c) { return fresh_left(c) + evbuffer_get_length(c->in); }

struct evbuffer *mr_conn_input(mr_conn *c)
{
    mr_conn_fold(c);
    return c->in;
}

/* Nothing waits to go out on a plain socket: a write now keeps the order.
 * Not on io_uring, whose sends go as one SQE at the end of the turn. */
static bool writes_through(const mr_conn *to)
{
    return !to->tls && !to->z && !to->ur && !to->connecting && !to->failed && !to->write_pending &&
           evbuffer_get_length(to->out) == 0;
}

/* Writes what the socket takes of p now; the rest is queued and flushed
 * (which also reports a failed write from the loop). */
static void write_through(mr_conn *to, const uint8_t *p, size_t n)
{
    ssize_t w = write(to->fd, p, n);
    size_t done = w > 0 ? (size_t)w : 0;
    if (done == n)
        return;
    evbuffer_add(to->out, p + done, n - done);
    mr_conn_flush(to);
}

/* The first n input bytes when they are fresh ones (fresh bytes are the
 * whole input, so they are the first), taken off the input; else NULL. */
static const uint8_t *take_fresh(mr_conn *c, size_t n)
{
    if (fresh_left(c) < n)
        return NULL;
    const uint8_t *p = scratch + c->fresh_off;
    c->fresh_off += n;
    if (c->fresh_off == c->fresh_len)
        fresh_clear(c);
    return p;
}

void mr_conn_drain(mr_conn *c, size_t n)
{
    if (!take_fresh(c, n))
        evbuffer_drain(mr_conn_input(c), n);
}

void mr_conn_relay(mr_conn *from, mr_conn *to, size_t n)
{
    if (n == 0)
        return;
    const uint8_t *p = take_fresh(from, n);
    if (p) {
        if (writes_through(to)) {
            write_through(to, p, n);
        } else {
            evbuffer_add(to->out, p, n);
            mr_conn_flush(to);
        }
        return;
    }
    struct evbuffer *in = mr_conn_input(from);
    struct evbuffer_iovec v;
    if (writes_through(to) && evbuffer_peek(in, (ev_ssize_t)n, NULL, &v, 1) == 1 &&
        v.iov_len >= n) {
        write_through(to, v.iov_base, n); /* from the input's first extent */
        evbuffer_drain(in, n);
        return;
    }
    evbuffer_remove_buffer(in, to->out, n);
    mr_conn_flush(to);
}
