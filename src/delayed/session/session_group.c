/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/session/session_group.c - a staged UPDATE DELAYED that joins a
 * group-commit batch (delayed/group.h), as a feature of its own in the
 * session's table (feature/feature.h), run after every other feature's
 * statement hook: the decision once the rules are done, the wait in
 * SS_WAIT_BG, and the answer once the batch has committed or failed.
 *
 * The statement joins when its rule has group_commit, it came as a
 * COM_QUERY alone in its text (res->group) and the session is in
 * autocommit mode outside a transaction (the status flags of the server's
 * last OK). In a transaction it stays on the client's own connection, so
 * that a ROLLBACK still takes it back.
 *
 * The hook copies the staging INSERT into a member and asks the session
 * to wait (MR_HOOK_WAIT_BG); the client's next commands wait in its input.
 * The runner answers the member and calls the session's wake, and the
 * bg_answer hook sends the OK of its rows, or the batch's ERR. A session
 * that ends meanwhile lets go of its member: the batch still runs, the
 * answer wakes nobody. A member the runner could not send (it cannot
 * connect) comes back unsent and goes on the client's own connection
 * (MR_HOOK_SEND), as without group commit.
 *
 * Session's worker thread; owns the feature's slot (a dg_state).
 */
#include <stdlib.h>

#include "myrewrite/delayed/group.h"
#include "myrewrite/delayed/session_hooks.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/stats/rule_stats.h"

typedef struct dg_state {
    mr_dgroup_member *waiting; /* in a batch, the runner's until answered */
    mr_dgroup_member *sent;    /* came back unsent: its text is the session's to send */
} dg_state;

static bool wanted(const mr_fsession *fs, const mr_hook_stmt *stmt)
{
    const mr_match_result *res = stmt->res;
    /* query attributes cannot go with a batch on the runner's connection:
     * such a statement goes alone on the client's own */
    return res->group && res->group_stage && stmt->cmd == MR_COM_QUERY &&
           (fs->status & MR_STATUS_AUTOCOMMIT) && !(fs->status & MR_STATUS_IN_TRANS) &&
           stmt->attrs == 0;
}

/* The staging rows of the statement, as counted for SHOW DELAYED. */
static uint32_t rows_of(const mr_match_result *res)
{
    uint32_t rows = 0;
    unsigned n = res->nmatched < MR_MATCH_MAX_RULES ? res->nmatched : MR_MATCH_MAX_RULES;
    for (unsigned i = 0; i < n; i++)
        if (res->matched[i] == res->group)
            rows += res->staged_rows[i];
    return rows ? rows : 1;
}

/* The member whose unsent text the session has sent by now. */
static void drop_sent(dg_state *g)
{
    mr_dgroup_member_release(g->sent);
    g->sent = NULL;
}

static mr_hook_action statement(mr_fsession *fs, void **st, mr_hook_stmt *stmt)
{
    if (!wanted(fs, stmt))
        return MR_HOOK_PASS;
    dg_state *g = *st ? *st : (*st = calloc(1, sizeof(dg_state)));
    if (!g)
        return MR_HOOK_PASS; /* out of memory: the client's own connection stages it */
    drop_sent(g);
    const mr_match_result *res = stmt->res;
    mr_dgroup_member *m =
        mr_dgroup_member_new(res->group_stage, rows_of(res), res->group->delayed,
                             mr_rule_stats_of(res->group), fs->wake.fn, fs->wake.arg);
    if (!m)
        return MR_HOOK_PASS;
    if (!mr_dgroup_submit(m)) {
        mr_dgroup_member_release(m);
        return MR_HOOK_PASS; /* no runner: the client's own connection stages it */
    }
    g->waiting = m;
    return MR_HOOK_WAIT_BG;
}

/* OK with the rows staged as affected rows, or the batch's ERR. */
static mr_hook_action bg_answer(mr_fsession *fs, void **st, mr_hook_stmt *out)
{
    dg_state *g = *st;
    mr_dgroup_member *m = g ? g->waiting : NULL;
    if (!m || !mr_dgroup_member_answered(m))
        return MR_HOOK_PASS; /* another session's job woke the worker */
    g->waiting = NULL;
    if (m->unsent) {
        drop_sent(g);
        g->sent = m; /* read by the session before this hook's next call */
        out->cmd = MR_COM_QUERY;
        out->send = (const uint8_t *)m->sql;
        out->send_len = m->len;
        return MR_HOOK_SEND;
    }
    if (m->ok) {
        fs->ops->send_ok(fs, m->rows, m->warnings); /* the batch's: see delayed/group.h */
    } else {
        mr_stat_add(&fs->stats->statements_blocked, 1);
        fs->ops->send_err(fs, m->err_code, m->sqlstate, m->msg);
    }
    mr_dgroup_member_release(m);
    return MR_HOOK_ANSWERED;
}

static void session_end(mr_fsession *fs, void **st)
{
    (void)fs;
    dg_state *g = *st;
    if (!g)
        return;
    mr_dgroup_member_release(g->waiting); /* the runner never reads who waited */
    drop_sent(g);
    free(g);
    *st = NULL;
}

/* The runner starts with the first set that has a group_commit rule. */
static void configure(const mr_proxy *p, const mr_ruleset *rs) { mr_dgroup_configure(p, rs); }

/* Shutting down, the workers still run: what is queued is answered. */
static void drain(const mr_proxy *p)
{
    (void)p;
    mr_dgroup_stop();
}

const mr_feature mr_delayed_group_feature = {
    .name = "delayed group commit",
    .drain = drain,
    .configure = configure,
    .statement = statement,
    .bg_answer = bg_answer,
    .session_end = session_end,
};
