/*
 * net/conn_impl.h - the connection itself, shared by the plain socket code
 * (net/conn.c) and its TLS layer (net/conn_tls.c). Private to src/net/.
 */
#ifndef MYREWRITE_CONN_IMPL_H
#define MYREWRITE_CONN_IMPL_H

#include "myrewrite/net/conn.h"

#include <stdbool.h>
#include <stddef.h>

#define READ_CHUNK 65536

typedef struct mr_conn_tls mr_conn_tls;

struct mr_conn {
    int fd;
    struct event *rev;    /* persistent read event; added while reading */
    struct event *wev;    /* persistent write event; added while output waits */
    struct event *timer;  /* the deadline set by mr_conn_set_timeout() */
    struct evbuffer *in;  /* bytes read, not yet consumed (plaintext under TLS) */
    struct evbuffer *out; /* bytes to send (plaintext under TLS) */
    mr_conn_callbacks cb;
    void *arg;
    bool reading, write_pending, connecting, failed;
    int err;
    size_t low;
    mr_conn_tls *tls;     /* NULL: plain; else the TLS layer owns rev and wev */
    bool idle_on;         /* mr_conn_set_read_idle: the timer restarts at each read */
    struct timeval idle;
};

/* Bytes were read into c->in: the silence limit starts again, then the
 * owner reads them. */
void mr_conn_delivered(mr_conn *c);

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

#endif
