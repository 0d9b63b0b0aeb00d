/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/session/state.c - the delayed feature's state in one session
 * (ds_session, delayed/session/session_impl.h), and the answer to a
 * memory-mode statement. Below the hooks that use them: the statement hooks
 * (session_hooks.c), the prepared statements (session_prepared.c) and
 * FLUSH DELAYED (session_flush.c).
 *
 * Session's worker thread; owns the session's ds_session (its slot).
 */
#include <stdlib.h>

#include "delayed/session/session_impl.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/stats/rule_stats.h"

ds_session *ds_state(void **st)
{
    ds_session *d = *st;
    if (!d && (d = calloc(1, sizeof *d)))
        d->dlast = LAST_NOT_MEMORY;
    *st = d;
    return d;
}

/* A memory-mode DELAYED statement: its deltas go into this worker's shard
 * and the proxy answers itself, OK with the keys touched as affected rows
 * (or the ERR of a full table). Nothing reaches the backend. */
mr_hook_action ds_memory(mr_fsession *fs, const mr_dmem_batch *b)
{
    char err[512];
    uint64_t affected = 0;
    if (mr_dmem_apply(fs->shard, b, &affected, err, sizeof err) != 0) {
        mr_stat_add(&fs->stats->statements_blocked, 1);
        fs->ops->send_err(fs, MR_DELAYED_ERR_CODE, MR_DELAYED_SQLSTATE, err);
        return MR_HOOK_ANSWERED;
    }
    mr_stat_add(&fs->stats->statements_rewritten, 1);
    fs->ops->send_ok(fs, affected, 0);
    return MR_HOOK_ANSWERED;
}
