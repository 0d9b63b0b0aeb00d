/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/backend_addr.h - where the backend mysqld is.
 *
 * Resolving a host name is a blocking call: it happens on the main thread
 * at start, then, for a host name (not an IP literal or a socket path), on
 * a resolver thread of its own every 10 s and within a second of a failed
 * connect, so new connections follow a backend whose address changes.
 * Connections already open stay where they are. A host name that does not
 * resolve at start does not stop the proxy (a database container may
 * not be up yet): it is looked up every second until it does, and clients
 * that connect meanwhile get an ERR saying so.
 */
#ifndef MYREWRITE_BACKEND_H
#define MYREWRITE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "myrewrite/base/proxy.h"

/* Main thread, at start: fills p->backend_addr from `spec` (host:port or a
 * unix socket path); false only when spec is neither. A host name that does
 * not resolve leaves backend_addr_len 0 (logged). p->backend_lock must be
 * initialised. */
bool mr_backend_resolve(mr_proxy *p, const char *spec, char *err, size_t errlen);
/* Any thread: a copy of the address to connect to (a mutex for a memcpy);
 * *len is 0 while the host name has never resolved. */
void mr_backend_addr(mr_proxy *p, struct sockaddr_storage *addr, socklen_t *len);
/* Main thread: starts resolving `spec` again in the background (nothing
 * for an IP literal or a socket path); stops and joins that thread. */
void mr_backend_watch_start(mr_proxy *p, const char *spec);
void mr_backend_watch_stop(void);
/* Any thread, never waits: a connect to the backend failed; look the name
 * up again soon. */
void mr_backend_suspect(void);

#endif
