/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core/listener.h - accepting client connections.
 *
 * Main thread. Accepts on the TCP address (and the optional unix socket),
 * enforces max_connections, and hands each socket to a worker round-robin.
 */
#ifndef MYREWRITE_LISTENER_H
#define MYREWRITE_LISTENER_H

#include <stdbool.h>

#include "myrewrite/base/proxy.h"

struct event_base;
typedef struct mr_listener mr_listener;

/* Binds every configured address; NULL (and a logged reason) on failure. */
mr_listener *mr_listener_start(struct event_base *base, mr_proxy *p);
/* Stops accepting and closes the listening sockets. */
void mr_listener_stop(mr_listener *l);

#endif
