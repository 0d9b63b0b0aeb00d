/*
 * backend.h - where the backend mysqld is.
 *
 * Main thread, at start-up: resolving a host name is a blocking call, so it
 * happens once here and never on a worker.
 */
#ifndef MYREWRITE_BACKEND_H
#define MYREWRITE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "myrewrite/proxy.h"

/* Fills p->backend_addr from `spec` (host:port or a unix socket path). */
bool mr_backend_resolve(mr_proxy *p, const char *spec, char *err, size_t errlen);

#endif
