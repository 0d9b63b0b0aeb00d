/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/admin.h - the admin console: a second listener (admin_listen, loopback
 * only) speaking the MySQL protocol, so `mariadb -h127.0.0.1 -P6034 -u admin
 * -p` is the console. Commands answer with result sets (doc/console.md).
 *
 * mr_admin_start and mr_admin_stop run on the main thread; the console
 * itself runs on a thread of its own with its own event_base (not a
 * worker), which owns its listener and connections. It reads the proxy's
 * counters and rule set, and may reload the rules (file I/O on its own
 * thread, never on a worker).
 */
#ifndef MYREWRITE_ADMIN_H
#define MYREWRITE_ADMIN_H

#include <stdbool.h>

#include "myrewrite/base/counters.h"
#include "myrewrite/base/proxy.h"

/* The console's logins (admin/login_guard.c); relaxed atomics that /metrics
 * reads from its thread. */
typedef struct mr_admin_stats {
    mr_counter login_failures; /* wrong user or password */
    mr_counter login_backoff;  /* connections refused at once: their address was waiting out
                                  the back-off of its failed logins */
    mr_counter login_evicted;  /* connections not logged in, closed to make room for a new one */
    mr_counter login_timeouts; /* connections that did not log in within admin_login_timeout */
} mr_admin_stats;
const mr_admin_stats *mr_admin_stats_get(void);

/* Starts the console after the workers. With an empty admin_password (or
 * admin_listen) the console is not started, the reason is logged, and this
 * returns true;
 * false (reason logged) when admin_listen is not a loopback TCP address or
 * cannot be bound. */
bool mr_admin_start(mr_proxy *p);
/* Closes the console's connections and joins its thread; call before the
 * workers are stopped. Does nothing when the console is not running. */
void mr_admin_stop(void);

#endif
