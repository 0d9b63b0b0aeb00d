/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/conn_tls.c - TLS inside mr_conn (see net/conn.h): a non-blocking
 * handshake, then SSL_read into the input and SSL_write from the output.
 *
 * Once TLS starts, the conn's read and write events are replaced by the
 * ones here, so the plain path (net/conn.c) keeps its handlers and pays one
 * test of c->tls in mr_conn_flush and mr_conn_read_enable only.
 *
 * Why a BIO of our own: a client writes its ClientHello right behind its
 * SSLRequest, so the proxy may already have read the first TLS bytes into
 * the plain input when it decides to start TLS. They are moved to `pre`,
 * which the BIO serves before it reads the socket again.
 *
 * OpenSSL may need to read to finish a write and to write to finish a read
 * (key updates, tickets): the two flags below remember which, and
 * tls_sync() watches the socket for what is needed now.
 * Runs on the thread that owns the conn's event_base.
 */
#include "net/conn_impl.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "myrewrite/net/tls_resume.h"

#define TLS_RECORD 16384 /* the most plaintext one TLS record carries */

struct mr_conn_tls {
    SSL *ssl;
    struct evbuffer *pre; /* peer's TLS bytes read before TLS started */
    bool handshaking;
    bool hs_wants_write;   /* the handshake waits for the socket to take bytes */
    bool read_wants_write; /* SSL_read must be retried once the socket is writable */
    bool write_wants_read; /* SSL_write must be retried once the socket is readable */
    bool eof_pending;      /* close_notify came behind data still to be delivered */
    bool rev_on, wev_on;   /* which events are added */
    char errtext[200];
    char cipher[96];
};

/* --- the BIO: `pre` first, then the socket --- */

static BIO_METHOD *bio_method;
static pthread_once_t bio_once = PTHREAD_ONCE_INIT;

static int bio_read(BIO *b, char *buf, int len)
{
    mr_conn *c = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (c->tls->pre && evbuffer_get_length(c->tls->pre) > 0)
        return evbuffer_remove(c->tls->pre, buf, (size_t)len);
    ssize_t n = read(c->fd, buf, (size_t)len);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        BIO_set_retry_read(b);
        return -1;
    }
    if (n < 0)
        c->err = errno;
    return (int)n;
}

static int bio_write(BIO *b, const char *buf, int len)
{
    mr_conn *c = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    ssize_t n = send(c->fd, buf, (size_t)len, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        BIO_set_retry_write(b);
        return -1;
    }
    if (n < 0)
        c->err = errno;
    return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0; /* writes are never buffered here */
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static void bio_method_init(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "mr_conn");
    if (m && BIO_meth_set_read(m, bio_read) && BIO_meth_set_write(m, bio_write) &&
        BIO_meth_set_ctrl(m, bio_ctrl) && BIO_meth_set_create(m, bio_create))
        bio_method = m;
}

/* --- events --- */

static void set_event(struct event *ev, bool *on, bool want)
{
    if (want && !*on)
        event_add(ev, NULL);
    else if (!want && *on)
        event_del(ev);
    *on = want;
}

/* Watches the socket for what the handshake, the reader and the writer
 * need now. */
static void tls_sync(mr_conn *c)
{
    mr_conn_tls *t = c->tls;
    bool want_r, want_w;
    if (t->handshaking) {
        want_w = t->hs_wants_write;
        want_r = !want_w;
    } else {
        want_r = c->reading || t->write_wants_read;
        want_w = t->read_wants_write || c->failed ||
                 (!t->write_wants_read && evbuffer_get_length(c->wire_out) > 0);
    }
    set_event(c->rev, &t->rev_on, want_r);
    set_event(c->wev, &t->wev_on, want_w);
}

static void note_error(mr_conn *c, const char *what, int sslerr)
{
    mr_conn_tls *t = c->tls;
    unsigned long e = ERR_get_error();
    /* "certificate verify failed" alone does not say which check failed */
    long v = SSL_get_verify_result(t->ssl);
    const char *why = v != X509_V_OK ? X509_verify_cert_error_string(v) : NULL;
    if (e) {
        char reason[160];
        ERR_error_string_n(e, reason, sizeof(reason));
        snprintf(t->errtext, sizeof(t->errtext), "TLS %s failed: %s%s%s%s", what, reason,
                 why ? " (" : "", why ? why : "", why ? ")" : "");
    } else if (sslerr == SSL_ERROR_SYSCALL && c->err) {
        snprintf(t->errtext, sizeof(t->errtext), "TLS %s failed: %s", what, strerror(c->err));
    } else {
        snprintf(t->errtext, sizeof(t->errtext), "TLS %s failed: the peer closed the connection",
                 what);
    }
    ERR_clear_error();
    if (!c->err)
        c->err = EPROTO;
}

static void handshake_step(mr_conn *c)
{
    mr_conn_tls *t = c->tls;
    ERR_clear_error();
    int r = SSL_do_handshake(t->ssl);
    if (r == 1) {
        t->handshaking = false;
        if (t->pre && evbuffer_get_length(t->pre) == 0) {
            evbuffer_free(t->pre);
            t->pre = NULL;
        }
        snprintf(t->cipher, sizeof(t->cipher), "%s %s", SSL_get_version(t->ssl),
                 SSL_get_cipher_name(t->ssl));
        mr_tls_handshake_done(t->ssl);
        tls_sync(c);
        if (SSL_has_pending(t->ssl) || (t->pre && evbuffer_get_length(t->pre) > 0))
            event_active(c->rev, EV_READ, 1); /* plaintext came with the last flight */
        mr_conn_fire(c, MR_CONN_TLS_READY);
        return;
    }
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        t->hs_wants_write = (e == SSL_ERROR_WANT_WRITE);
        tls_sync(c);
        return;
    }
    note_error(c, "handshake", e);
    mr_conn_fire(c, MR_CONN_ERROR);
}

/* Writes as much of the output as the socket takes; false on a hard error.
 * One record holds up to TLS_RECORD bytes; a retried SSL_write gets at
 * least the bytes it had before, as OpenSSL requires (output only grows
 * at its end until a write succeeds). */
static bool tls_write_now(mr_conn *c)
{
    mr_conn_tls *t = c->tls;
    size_t len;
    while ((len = evbuffer_get_length(c->wire_out)) > 0) {
        int chunk = (int)(len < TLS_RECORD ? len : TLS_RECORD);
        unsigned char *p = evbuffer_pullup(c->wire_out, chunk);
        if (!p) {
            c->err = ENOMEM;
            return false;
        }
        ERR_clear_error();
        int n = SSL_write(t->ssl, p, chunk);
        if (n > 0) {
            evbuffer_drain(c->wire_out, (size_t)n);
            continue;
        }
        int e = SSL_get_error(t->ssl, n);
        if (e == SSL_ERROR_WANT_WRITE)
            return true;
        if (e == SSL_ERROR_WANT_READ) {
            t->write_wants_read = true;
            return true;
        }
        note_error(c, "write", e);
        return false;
    }
    return true;
}

static void tls_write_handler(evutil_socket_t fd, short what, void *arg)
{
    mr_conn *c = arg;
    mr_conn_tls *t = c->tls;
    (void)fd;
    (void)what;
    if (c->failed) {
        mr_conn_fire(c, MR_CONN_ERROR);
        return;
    }
    if (t->handshaking) {
        handshake_step(c);
        return;
    }
    if (t->read_wants_write) {
        t->read_wants_write = false;
        event_active(c->rev, EV_READ, 1); /* the reader goes on from the loop */
    }
    if (!tls_write_now(c)) {
        mr_conn_fire(c, MR_CONN_ERROR);
        return;
    }
    tls_sync(c);
    if (evbuffer_get_length(c->wire_out) <= c->low && c->cb.drained)
        c->cb.drained(c, c->arg);
}

/* Decrypts up to READ_CHUNK bytes into the input. Returns the MR_CONN_*
 * event to fire (0: none) and sets *got. The contexts read ahead, so one
 * read() takes what the socket holds and OpenSSL says whether records are
 * left: reading stops when none is, without a read() that would only say
 * EAGAIN (the socket's level-triggered event brings any later bytes). */
static int tls_read_some(mr_conn *c, size_t *got)
{
    mr_conn_tls *t = c->tls;
    *got = 0;
    while (*got < READ_CHUNK) {
        struct evbuffer_iovec vec;
        if (evbuffer_reserve_space(c->wire_in, TLS_RECORD, &vec, 1) != 1) {
            c->err = ENOMEM;
            return MR_CONN_ERROR;
        }
        ERR_clear_error();
        int n = SSL_read(t->ssl, vec.iov_base, (int)vec.iov_len);
        if (n > 0) {
            vec.iov_len = (size_t)n;
            evbuffer_commit_space(c->wire_in, &vec, 1);
            *got += (size_t)n;
            if (!SSL_has_pending(t->ssl))
                return 0;
            continue;
        }
        evbuffer_commit_space(c->wire_in, &vec, 0);
        int e = SSL_get_error(t->ssl, n);
        if (e == SSL_ERROR_WANT_READ)
            return 0;
        if (e == SSL_ERROR_WANT_WRITE) {
            t->read_wants_write = true;
            return 0;
        }
        if (e == SSL_ERROR_ZERO_RETURN)
            return MR_CONN_EOF;
        note_error(c, "read", e);
        return MR_CONN_ERROR;
    }
    if (SSL_has_pending(t->ssl))
        event_active(c->rev, EV_READ, 1); /* records already read, on the next turn */
    return 0;
}

static void tls_read_handler(evutil_socket_t fd, short what, void *arg)
{
    mr_conn *c = arg;
    mr_conn_tls *t = c->tls;
    (void)fd;
    (void)what;
    if (c->ur_slot >= 0)
        return; /* an io_uring recv still ends (net/conn_uring.c): it kicks us then */
    if (t->handshaking) {
        handshake_step(c);
        return;
    }
    if (t->eof_pending) {
        mr_conn_fire(c, MR_CONN_EOF);
        return;
    }
    if (t->write_wants_read) {
        t->write_wants_read = false;
        event_active(c->wev, EV_WRITE, 1); /* the writer goes on from the loop */
    }
    if (!c->reading) {
        tls_sync(c);
        return;
    }
    if (c->z && mr_conn_z_ready(c)) { /* frames left over from an earlier read */
        mr_conn_delivered(c);
        return;
    }
    size_t got;
    int ev = tls_read_some(c, &got);
    tls_sync(c);
    if (ev && got > 0) { /* the data first; the end on the next turn */
        t->eof_pending = ev == MR_CONN_EOF;
        if (!t->eof_pending)
            c->failed = true;
        event_active(ev == MR_CONN_EOF ? c->rev : c->wev, ev == MR_CONN_EOF ? EV_READ : EV_WRITE,
                     1);
        ev = 0;
    }
    if (ev) {
        mr_conn_fire(c, ev);
        return;
    }
    if (got > 0)
        mr_conn_delivered(c);
}

/* --- the entry points --- */

bool mr_conn_start_tls(mr_conn *c, struct ssl_ctx_st *ctx, bool server, const char *host)
{
    pthread_once(&bio_once, bio_method_init);
    if (!mr_conn_fold(c)) /* fresh bytes are the peer's first TLS bytes */
        return false;
    if (c->ur && !mr_conn_uring_sync(c)) /* the plain bytes go first */
        return false;
    struct event_base *base = event_get_base(c->rev);
    mr_conn_tls *t = calloc(1, sizeof(*t));
    BIO *bio = bio_method ? BIO_new(bio_method) : NULL;
    struct event *rev = event_new(base, c->fd, EV_READ | EV_PERSIST, tls_read_handler, c);
    struct event *wev = event_new(base, c->fd, EV_WRITE | EV_PERSIST, tls_write_handler, c);
    if (t)
        t->ssl = SSL_new(ctx);
    if (t && evbuffer_get_length(c->in) > 0 && (t->pre = evbuffer_new()))
        evbuffer_add_buffer(t->pre, c->in);
    /* verify_identity: the name is sent (SNI) and checked against the certificate */
    bool named =
        server || !host ||
        (t && t->ssl && SSL_set_tlsext_host_name(t->ssl, host) && SSL_set1_host(t->ssl, host));
    if (!t || !t->ssl || !bio || !rev || !wev || evbuffer_get_length(c->in) > 0 ||
        evbuffer_get_length(c->out) > 0 || !named) {
        if (t) {
            SSL_free(t->ssl);
            if (t->pre)
                evbuffer_free(t->pre);
        }
        free(t);
        BIO_free(bio);
        if (rev)
            event_free(rev);
        if (wev)
            event_free(wev);
        return false;
    }
    BIO_set_data(bio, c);
    SSL_set_bio(t->ssl, bio, bio);
    if (server) {
        SSL_set_accept_state(t->ssl);
    } else {
        SSL_set_connect_state(t->ssl);
        mr_tls_resume_offer(t->ssl);
    }
    event_free(c->rev); /* deletes them too */
    event_free(c->wev);
    c->rev = rev;
    c->wev = wev;
    c->write_pending = false;
    t->handshaking = true;
    c->tls = t;
    /* The first step runs from the loop, once no io_uring recv can take the
     * socket's bytes any more. */
    if (!mr_conn_uring_tls_start(c))
        event_active(c->rev, EV_READ, 1);
    return true;
}

bool mr_conn_tls_pre_add(mr_conn *c, const void *data, size_t n)
{
    mr_conn_tls *t = c->tls;
    if (!t->pre && !(t->pre = evbuffer_new()))
        return false;
    return evbuffer_add(t->pre, data, n) == 0;
}

void mr_conn_tls_flush(mr_conn *c)
{
    if (c->connecting || c->failed || c->tls->handshaking)
        return; /* written from the loop once the handshake is done */
    if (!tls_write_now(c)) {
        c->failed = true; /* reported from the loop, not to our caller */
        event_active(c->wev, EV_WRITE, 1);
        return;
    }
    tls_sync(c);
}

void mr_conn_tls_read_enable(mr_conn *c)
{
    mr_conn_tls *t = c->tls;
    if (t->handshaking)
        return;
    tls_sync(c);
    if (c->reading && (SSL_has_pending(t->ssl) || t->eof_pending))
        event_active(c->rev, EV_READ, 1); /* decrypted bytes the socket will not announce */
}

void mr_conn_tls_free(mr_conn *c)
{
    mr_conn_tls *t = c->tls;
    if (!t->handshaking && !c->failed) {
        ERR_clear_error();
        SSL_shutdown(t->ssl); /* one close_notify, best effort: never waits */
    }
    SSL_free(t->ssl);
    if (t->pre)
        evbuffer_free(t->pre);
    free(t);
    c->tls = NULL;
    ERR_clear_error();
}

bool mr_conn_tls_unread(const mr_conn *c)
{
    const mr_conn_tls *t = c->tls;
    return SSL_has_pending(t->ssl) || t->eof_pending || (t->pre && evbuffer_get_length(t->pre));
}

bool mr_conn_tls_events(mr_conn *c, struct event_base *base)
{
    c->rev = event_new(base, c->fd, EV_READ | EV_PERSIST, tls_read_handler, c);
    c->wev = event_new(base, c->fd, EV_WRITE | EV_PERSIST, tls_write_handler, c);
    c->tls->rev_on = c->tls->wev_on = false;
    return c->rev && c->wev;
}

bool mr_conn_tls_active(const mr_conn *c) { return c->tls != NULL; }

bool mr_conn_tls_handshaking(const mr_conn *c) { return c->tls && c->tls->handshaking; }

const char *mr_conn_tls_cipher(const mr_conn *c)
{
    return c->tls && !c->tls->handshaking ? c->tls->cipher : NULL;
}

const char *mr_conn_error_text(const mr_conn *c)
{
    if (c->tls && c->tls->errtext[0])
        return c->tls->errtext;
    return strerror(c->err);
}
