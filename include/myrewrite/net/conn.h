/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/conn.h - a non-blocking socket with an input and an output evbuffer.
 *
 * Runs on the thread whose event_base it was created on. A slimmer
 * bufferevent: writes go out at once when the socket takes them (no
 * epoll_ctl round trip per write; on io = io_uring at the end of the loop
 * turn, net/uring.h), reads use a reserved buffer (no
 * FIONREAD ioctl per read), or after a small read the thread's scratch.
 * Bytes of a small read into an empty input stay in that scratch until
 * something asks for the input (mr_conn_fresh, mr_conn_relay:
 * net/conn_fresh.c), so a relayed response can go out without ever
 * entering an evbuffer. Measured on point selects: one read() and one
 * write() a direction per relayed query.
 *
 * Callbacks are only invoked from the event loop, never from inside
 * mr_conn_flush(), so a caller relaying bytes is never re-entered.
 */
#ifndef MYREWRITE_CONN_H
#define MYREWRITE_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "myrewrite/net/zframe.h"

struct event_base;
struct event;
struct evbuffer;
struct ssl_ctx_st;

typedef struct mr_conn mr_conn;

/* Events passed to the event callback. */
#define MR_CONN_CONNECTED 0x01
#define MR_CONN_EOF 0x02
#define MR_CONN_ERROR 0x04
#define MR_CONN_TIMEOUT 0x08
#define MR_CONN_TLS_READY 0x10 /* the TLS handshake finished */

typedef struct mr_conn_callbacks {
    void (*read)(mr_conn *c, void *arg);            /* new bytes in input */
    void (*drained)(mr_conn *c, void *arg);         /* output fell to the low mark */
    void (*event)(mr_conn *c, int what, void *arg); /* connected, EOF, error, timeout */
} mr_conn_callbacks;

/* Wraps a connected socket (takes ownership of fd). */
mr_conn *mr_conn_new(struct event_base *base, int fd, const mr_conn_callbacks *cb, void *arg);
/* Starts a non-blocking connect; MR_CONN_CONNECTED or an error follows. */
mr_conn *mr_conn_connect(struct event_base *base, const struct sockaddr *sa, socklen_t len,
                         const struct timeval *timeout, const mr_conn_callbacks *cb, void *arg);
/* Closes the socket and frees the buffers. */
void mr_conn_free(mr_conn *c);

/* The input, with every byte read (fresh bytes are copied in first). */
struct evbuffer *mr_conn_input(mr_conn *c);
/* The fresh bytes: those of the last read, when they are the whole input and
 * still in the thread's read scratch; NULL (and *len 0) otherwise. Valid
 * until the next socket read on this thread, mr_conn_input(c) or
 * mr_conn_relay(c, ...), whichever comes first. */
const uint8_t *mr_conn_fresh(const mr_conn *c, size_t *len);
/* Bytes in the input, fresh ones included, without copying them in. */
size_t mr_conn_input_length(const mr_conn *c);
/* Moves the first n bytes of from's input to to's output and sends what
 * to's socket takes now, as mr_conn_flush does. When to is a plain socket
 * with nothing waiting to go out, they are written straight from where
 * they lie (fresh bytes, or the input's first extent): no evbuffer move. */
void mr_conn_relay(mr_conn *from, mr_conn *to, size_t n);
/* Drops the first n bytes of the input. */
void mr_conn_drain(mr_conn *c, size_t n);
struct evbuffer *mr_conn_output(mr_conn *c);
int mr_conn_fd(const mr_conn *c);
/* errno of the last failure, for messages. */
int mr_conn_errno(const mr_conn *c);

/* Bytes written and not yet sent: the output, and under compression the
 * frames made of it. What flow control and "close once sent" look at. */
size_t mr_conn_pending(const mr_conn *c);

/* Sends what the output holds, as far as the socket takes it now. */
void mr_conn_flush(mr_conn *c);
void mr_conn_write(mr_conn *c, const void *data, size_t len);

void mr_conn_read_enable(mr_conn *c, bool on);
/* A deadline: MR_CONN_TIMEOUT fires once `tv` from now unless it is set
 * again or cleared with NULL. */
void mr_conn_set_timeout(mr_conn *c, const struct timeval *tv);
/* A silence limit: MR_CONN_TIMEOUT fires once `tv` passes without bytes
 * read while reading is on (a paused read, say for a slow peer on the other
 * side, does not count); NULL clears it. It shares the deadline's timer. */
void mr_conn_set_read_idle(mr_conn *c, const struct timeval *tv);
/* TCP keepalive on c's socket: probes after `ms` without traffic, 3 of them
 * ms/3 apart, and TCP_USER_TIMEOUT of as long for unacknowledged data. 0:
 * nothing is set. Fails harmlessly on a unix socket. */
void mr_conn_keepalive(mr_conn *c, uint64_t ms);
/* `drained` is called when pending output falls to `low` bytes or fewer. */
void mr_conn_set_low_mark(mr_conn *c, size_t low);
/* Who hears of the conn from now on (a server connection lent by the pool
 * to one session after another); a NULL callback is not called. */
void mr_conn_set_callbacks(mr_conn *c, const mr_conn_callbacks *cb, void *arg);

/* Moving a conn to another thread's event_base (a pooled server connection
 * lent across worker threads). mr_conn_detach, on the owning thread: an
 * idle conn (nothing to send, nothing read and not consumed, no connect or
 * TLS handshake under way) lets go of its loop: reading stops, its events
 * are freed, and no callback runs until it is attached again.
 * MR_CONN_DETACH_LATER: io = io_uring, its armed recv is being cancelled;
 * call again on a later loop turn, once the ring gave the recv back (a
 * recv still armed could take bytes meant for the new thread).
 * MR_CONN_DETACH_BUSY: bytes wait, or it failed: it cannot move (it is
 * then as it was, with reading off). mr_conn_attach, on the new thread:
 * events on `base` (its io_uring ring when the thread has one), reading
 * off; false: out of memory (the conn can only be freed). */
#define MR_CONN_DETACHED 0
#define MR_CONN_DETACH_LATER 1
#define MR_CONN_DETACH_BUSY 2
int mr_conn_detach(mr_conn *c);
bool mr_conn_attach(mr_conn *c, struct event_base *base);

/* The compressed protocol (net/conn_z.c, zlib or zstd at `level`): from
 * now on the input holds what the peer's frames carry and the output is
 * sent in frames. Bytes already in the output go out as they are (they
 * were written before); bytes already in the input are taken as frames.
 * At most about in_limit bytes are inflated ahead of the reader. False:
 * out of memory. */
bool mr_conn_start_compress(mr_conn *c, mr_zalgo algo, int level, size_t in_limit);
bool mr_conn_compressed(const mr_conn *c);
/* On a conn where the proxy is the client (the backend leg): a command
 * begins. What the output holds goes into frames now, and the command's
 * first frame is numbered 0, as the server expects of each command; its
 * later frames, and the client's answers inside it (LOCAL INFILE data),
 * go on from the server's last frame. No-op when not compressed. */
void mr_conn_z_command(mr_conn *c);

/* TLS (net/conn_tls.c). Starts TLS on a connected conn, as the server or as
 * the client (then `host`, when not NULL, is sent (SNI) and must be the
 * certificate's name). Bytes already in the input are the peer's first TLS
 * bytes; plaintext output must all have been sent. The handshake runs from
 * the loop: MR_CONN_TLS_READY or MR_CONN_ERROR follows; output written
 * meanwhile waits for its end. From then on the input and output hold
 * plaintext. False: out of memory, or unsent output. */
bool mr_conn_start_tls(mr_conn *c, struct ssl_ctx_st *ctx, bool server, const char *host);
/* TLS was started on c (its handshake may still run). */
bool mr_conn_tls_active(const mr_conn *c);
bool mr_conn_tls_handshaking(const mr_conn *c);
/* "TLSv1.3 TLS_AES_256_GCM_SHA384"; NULL on a plain conn or mid-handshake. */
const char *mr_conn_tls_cipher(const mr_conn *c);
/* The last failure for messages: the TLS library's reason, else strerror. */
const char *mr_conn_error_text(const mr_conn *c);

#endif
