/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/uring.h - the worker's io_uring (`io = io_uring`): once started on a
 * thread, the plain conns made there on that event_base read by multishot
 * recv on the ring and send their output once per loop turn as one send
 * SQE, harvested from the same event loop (net/conn_uring.c has the
 * design). Everything else about a conn is unchanged.
 */
#ifndef MYREWRITE_NET_URING_H
#define MYREWRITE_NET_URING_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;
typedef struct mr_uring mr_uring;

/* This build has io_uring (liburing was found). */
bool mr_uring_built(void);
/* Makes the calling thread's ring on `base`. NULL: the kernel (or the
 * build) refused it, with the reason in err; conns then use epoll. */
mr_uring *mr_uring_start(struct event_base *base, char *err, size_t errlen);
/* Conns made afterwards use epoll; the ring is freed with its last conn. */
void mr_uring_stop(mr_uring *u);

#endif
