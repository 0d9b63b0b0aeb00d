/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/session_hooks.c - the queue feature's hooks in a client session
 * (feature/feature.h): when a session ends, the claims its backend
 * connection held go back to their queues (queue/release.h; on the
 * release thread, once mysqld has let go of the connection).
 *
 * Session's worker thread.
 */
#include "myrewrite/queue/session_hooks.h"

#include "myrewrite/queue/release.h"

static void session_end(mr_fsession *fs, void **st)
{
    (void)st;
    if (fs->authenticated) /* only a connection the server knows held claims */
        mr_queue_session_ended(fs->backend_thread_id);
}

/* The reaper follows the set's queue rules. */
static void configure(const mr_proxy *p, const mr_ruleset *rs) { mr_queue_configure(p, rs); }

/* The releases of ended sessions' claims, within shutdown_timeout. */
static void stop(const mr_proxy *p) { mr_queue_stop(p->cfg->shutdown_timeout_ms); }

const mr_feature mr_queue_feature = {
    .name = "queue",
    .stop = stop,
    .configure = configure,
    .session_end = session_end,
};
