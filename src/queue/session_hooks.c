/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/session_hooks.c - the queue feature's hooks in a client session
 * (feature/feature.h): an UPDATE of a queue table with
 * claim_read_committed gets its prelude, SET TRANSACTION ISOLATION LEVEL
 * READ COMMITTED, sent ahead of it (a prepared one ahead of each
 * execute); when a session ends, the claims it owns go back to their
 * queues (queue/release.h; on the release thread, once mysqld has let go
 * of whatever it still ran). A pooled session counts as live for the
 * reaper from its first command to its end (queue/live.h): its login's
 * server connection, whose id owns its claims, may close meanwhile.
 *
 * The prelude, without SESSION, covers the next transaction only, which
 * in autocommit mode outside a transaction is the client's statement
 * alone; mysqld drops it after that statement whatever its outcome, even a
 * syntax error, so nothing leaks into the client's later transactions.
 *
 * Session's worker thread. The feature's state is only a mark: the session
 * is in the live set (no memory of its own). A prepared claim's note
 * (feature/feature.h) is the session's to free.
 */
#include <stdlib.h>

#include "myrewrite/queue/session_hooks.h"

#include "myrewrite/base/log.h"
#include "myrewrite/proto/codec.h"
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

#define READ_COMMITTED "SET TRANSACTION ISOLATION LEVEL READ COMMITTED"

/* A prepared claim: its executes get the prelude. */
typedef struct q_note {
    bool claim;
} q_note;

static void read_committed(mr_fsession *fs)
{
    if (!(fs->status & MR_STATUS_AUTOCOMMIT) || (fs->status & MR_STATUS_IN_TRANS))
        return; /* the next transaction would be the client's own: left alone */
    fs->ops->prelude(fs, READ_COMMITTED, sizeof READ_COMMITTED - 1,
                     READ_COMMITTED " (the statement runs at the session's level)");
}

/* A claim the rules let through: the prelude goes ahead of it, rewritten
 * or not. */
static void verdict(mr_fsession *fs, void **st, const mr_match_result *res, void **note)
{
    (void)st;
    if (!res->read_committed || res->action == MR_ACT_BLOCK)
        return;
    if (!note) {
        read_committed(fs);
        return;
    }
    if (!*note && !(*note = calloc(1, sizeof(q_note)))) {
        mr_warn(fs->id, "out of memory: a prepared claim runs at the session's isolation level");
        return;
    }
    ((q_note *)*note)->claim = true;
}

static void execute(mr_fsession *fs, void **st, void *note)
{
    (void)st;
    if (((const q_note *)note)->claim)
        read_committed(fs);
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
    .verdict = verdict,
    .execute = execute,
    .session_end = session_end,
};
