/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/conn_impl.h - the connection itself, shared by the plain socket code
 * (net/conn.c) and its TLS layer (net/conn_tls.c). Private to src/net/.
 */
#ifndef MYREWRITE_CONN_IMPL_H
#define MYREWRITE_CONN_IMPL_H

#include "myrewrite/net/conn.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define READ_CHUNK 65536
#define SMALL_READ 4096 /* reads below this size are copied (net/conn.c) */
#define WRITE_VECS 16   /* extents one writev() sends; the rest goes on the next */

typedef struct mr_conn_tls mr_conn_tls;
typedef struct mr_conn_z mr_conn_z;
struct mr_uring;

struct mr_conn {
    int fd;
    struct event *rev;    /* persistent read event; added while reading */
    struct event *wev;    /* persistent write event; added while output waits */
    struct event *timer;  /* the deadline set by mr_conn_set_timeout() */
    struct evbuffer *in;  /* bytes read, not yet consumed (plaintext under TLS) */
    struct evbuffer *out; /* bytes to send (plaintext under TLS) */
    /* What the socket or TLS layer reads into and sends from: in and out,
     * or under compression the frames (net/conn_z.c). */
    struct evbuffer *wire_in, *wire_out;
    mr_conn_callbacks cb;
    void *arg;
    bool reading, write_pending, connecting, failed;
    int err;
    size_t low;
    size_t last_read; /* bytes the last plain read returned */
    /* Fresh bytes (net/conn.c): [fresh_off, fresh_len) of the thread's read
     * scratch, the whole input, not yet copied into `in`. */
    size_t fresh_off, fresh_len;
    mr_conn_tls *tls; /* NULL: plain; else the TLS layer owns rev and wev */
    mr_conn_z *z;     /* NULL: not compressed */
    bool idle_on;     /* mr_conn_set_read_idle: the timer restarts at each read */
    struct timeval idle;
    /* io = io_uring (net/conn_uring.c): the worker's ring, NULL on epoll. */
    struct mr_uring *ur;
    int32_t ur_slot;         /* the armed recv's slot; -1: none */
    bool ur_cancelling;      /* its cancel is submitted */
    bool ur_held;            /* bytes added while paused, not yet announced */
    bool ur_eof;             /* the recv saw EOF (reported once reading) */
    int ur_err;              /* ... or this error */
    struct ur_send *ur_send; /* what the send in flight took from wire_out */
    int32_t ur_send_slot;    /* the send in flight's slot; -1: none */
    bool ur_flush_queued;    /* on the ring's list: send at the end of the turn */
    struct mr_conn *ur_flush_next;
};

static inline void mr_conn_fire(mr_conn *c, int what)
{
    if (c->cb.event)
        c->cb.event(c, what, c->arg); /* may free c */
}

/* net/conn_tls.c: the TLS side of mr_conn_flush, mr_conn_read_enable and
 * mr_conn_free. */
void mr_conn_tls_flush(mr_conn *c);
void mr_conn_tls_read_enable(mr_conn *c);
void mr_conn_tls_free(mr_conn *c);
/* Moving c between threads (mr_conn_detach): are decrypted bytes or the
 * peer's early bytes left? events: c's TLS read and write events on base. */
bool mr_conn_tls_unread(const mr_conn *c);
bool mr_conn_tls_events(mr_conn *c, struct event_base *base);
/* Bytes the io_uring recv brought after TLS started: read before the socket. */
bool mr_conn_tls_pre_add(mr_conn *c, const void *data, size_t n);

/* net/conn_uring.c. attach: on a thread with a ring for `base`, c reads by
 * the ring; returns c's read event of this path (NULL: epoll). read_enable:
 * after c->reading changed or the connect ended. tls_start: true when the
 * handshake must wait for the recv's end (it then makes c->rev active).
 * detach: in mr_conn_free, before the socket is closed. */
struct event *mr_conn_uring_attach(mr_conn *c, struct event_base *base);
void mr_conn_uring_read_enable(mr_conn *c);
bool mr_conn_uring_tls_start(mr_conn *c);
void mr_conn_uring_detach(mr_conn *c);
/* Moving c (mr_conn_detach): does the ring still hold a recv or a send of
 * c (a cancel not yet come back)? */
bool mr_conn_uring_busy(const mr_conn *c);
/* Sends: flush queues c's output for one send at the end of the turn.
 * sending: bytes a send in flight holds (part of mr_conn_pending). sync:
 * before TLS starts, a queued output goes now by write(); false while a
 * send is in flight (TLS cannot start behind it). */
void mr_conn_uring_flush(mr_conn *c);
size_t mr_conn_uring_sending(const mr_conn *c);
bool mr_conn_uring_sync(mr_conn *c);

/* net/conn.c: writes wire_out as far as the socket takes it now; false on
 * a hard error (c->err set). */
bool mr_conn_write_now(mr_conn *c);

/* net/conn_z.c. After a read into wire_in: frames into c->in, as far as
 * in_limit allows; false on a corrupt frame (c->err set). Before a write:
 * c->out into frames in wire_out. ready: a whole frame waits and c->in has
 * room for it, so the reader should take it without reading the socket. */
bool mr_conn_z_inflate(mr_conn *c);
bool mr_conn_z_deflate(mr_conn *c);
bool mr_conn_z_ready(mr_conn *c);
void mr_conn_z_free(mr_conn *c);

/* Fresh bytes into the input (net/conn.c); false: out of memory, and c
 * fails from the loop. Before anything reads or rearranges c->in. */
bool mr_conn_fold(mr_conn *c);
/* A read into the thread's scratch: fresh bytes when the input was empty,
 * else copied into it. As read(2), with errno ENOMEM when the copy failed. */
ssize_t mr_conn_read_small(mr_conn *c);
/* In mr_conn_free: c's fresh bytes are no more. */
void mr_conn_fresh_drop(mr_conn *c);

/* After bytes reached wire_in (or frames wait): the silence limit starts
 * again, the frames are inflated, and the owner reads them. */
void mr_conn_delivered(mr_conn *c);

#endif
