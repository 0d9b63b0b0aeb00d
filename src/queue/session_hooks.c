/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/session_hooks.c - the queue feature's hooks in a client session
 * (feature/feature.h): when a session ends, the claims it owns go back to
 * their queues (queue/release.h; on the release thread, once mysqld has let
 * go of whatever it still ran). A pooled session counts as live for the
 * reaper from its first command to its end (queue/live.h): its login's
 * server connection, whose id owns its claims, may close meanwhile.
 *
 * Session's worker thread. The feature's state is only a mark: the session
 * is in the live set (no memory of its own).
 */
#include "myrewrite/queue/session_hooks.h"

#include "myrewrite/base/log.h"
#include "myrewrite/queue/live.h"
#include "myrewrite/queue/release.h"

#define LIVE ((void *)1)

/* Before the command goes to the server, so before it can claim anything. */
static mr_hook_action command(mr_fsession *fs, void **st, uint8_t cmd, const uint8_t *p, size_t n,
                              uint32_t len)
{
    (void)cmd, (void)p, (void)n, (void)len;
    if (*st || !fs->pooled || !fs->authenticated || !fs->own_id || !mr_queue_active())
        return MR_HOOK_PASS;
    if (mr_queue_live_add(fs->own_id))
        *st = LIVE;
    else
        mr_error(fs->id, "queue: out of memory; should its login connection close, the reaper "
                         "takes this session's claims for a zombie's");
    return MR_HOOK_PASS;
}

static void session_end(mr_fsession *fs, void **st)
{
    if (*st)
        mr_queue_live_remove(fs->own_id);
    *st = NULL;
    if (fs->authenticated) /* only a connection the server knows held claims */
        mr_queue_session_ended(fs->own_id, fs->end_wait_id);
}

/* The reaper follows the set's queue rules. */
static void configure(const mr_proxy *p, const mr_ruleset *rs) { mr_queue_configure(p, rs); }

/* The releases of ended sessions' claims, within shutdown_timeout. */
static void stop(const mr_proxy *p) { mr_queue_stop(p->cfg->shutdown_timeout_ms); }

const mr_feature mr_queue_feature = {
    .name = "queue",
    .stop = stop,
    .configure = configure,
    .command = command,
    .session_end = session_end,
};
