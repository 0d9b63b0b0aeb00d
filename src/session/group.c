/*
 * session/group.c - a staged UPDATE DELAYED that joins a group-commit
 * batch (delayed/group.h): the decision at statement start, the wait in
 * SS_WAIT_BG, and the answer once the batch has committed or failed.
 *
 * The statement joins when its rule has group_commit, it came as a
 * COM_QUERY alone in its text (res->group) and the session is in
 * autocommit mode outside a transaction (the status flags of the server's
 * last OK). In a transaction it stays on the client's own connection, so
 * that a ROLLBACK still takes it back.
 *
 * The session copies its staging INSERT into a member and parks in
 * SS_WAIT_BG; the client's next commands wait in its input. The runner
 * puts answered members into the worker's inbox and signals the worker
 * (MR_WORKER_MSG_GROUP); the worker answers each session with the OK of
 * its rows, or the batch's ERR. A session that ends meanwhile leaves its
 * member behind (owner NULL): the batch still runs, the answer is dropped.
 * A member the runner could not send (it cannot connect) comes back unsent
 * and goes on the client's own connection, as without group commit.
 *
 * Threads: the session's worker, but notify (the runner's thread).
 */
#include <stdlib.h>

#include "myrewrite/base/log.h"
#include "myrewrite/delayed/flush.h"
#include "myrewrite/delayed/group.h"
#include "myrewrite/stats/rule_stats.h"
#include "session/session_impl.h"

static bool notify(void *arg)
{
    mr_worker *w = arg;
    if (mr_worker_signal(w, MR_WORKER_MSG_GROUP))
        return true;
    mr_error(0,
             "group commit: cannot wake worker %u; its answered statements wait for the "
             "next batch's answer to wake it",
             w->id);
    return false;
}

bool ss_group_wanted(const mr_session *s, uint8_t cmd, const mr_match_result *res)
{
    uint16_t st = s->tracker.status;
    /* query attributes cannot go with a batch on the runner's connection:
     * such a statement goes alone on the client's own */
    return res->group && res->group_sql && cmd == MR_COM_QUERY && (st & MR_STATUS_AUTOCOMMIT) &&
           !(st & MR_STATUS_IN_TRANS) && s->qattrs_count == 0;
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

bool ss_group_join(mr_session *s, const mr_match_result *res)
{
    mr_worker *w = s->w;
    if (!w->group_inbox && !(w->group_inbox = mr_dgroup_inbox_new(notify, w)))
        return false;
    mr_dgroup_member *m =
        mr_dgroup_member_new(res->group_sql, res->group_len, rows_of(res), res->group->delayed,
                             mr_rule_stats_of(res->group), w->group_inbox);
    if (!m)
        return false;
    m->owner = s;
    if (!mr_dgroup_submit(m)) {
        mr_dgroup_member_free(m);
        return false; /* no runner: the client's own connection stages it */
    }
    s->group = m;
    if (s->digest)
        mr_stat_add(&s->digest->rewritten, 1);
    mr_stat_add(&w->stats.statements_rewritten, 1); /* as a staging INSERT sent */
    s->from_client.discard = true;                  /* the statement is in the member */
    ss_set_state(s, SS_WAIT_BG);
    return true;
}

/* OK with the rows staged as affected rows and the session's own status
 * (autocommit, no transaction), or the batch's ERR. */
static void answer(mr_session *s, const mr_dgroup_member *m)
{
    if (!m->ok) {
        mr_stat_add(&s->w->stats.statements_blocked, 1);
        ss_send_err(s, 1, m->err_code, m->sqlstate, m->msg);
        return;
    }
    mr_buf ok;
    mr_buf_init(&ok);
    mr_ok_build(&ok, 1, m->rows, 0, (uint16_t)(s->tracker.status & ~MR_STATUS_MORE_RESULTS), 0);
    if (!ok.failed)
        mr_conn_write(s->client, ok.data, ok.len);
    mr_buf_free(&ok);
}

/* What the end of a server's response does for a relayed statement. */
static void finish(mr_session *s)
{
    mr_stat_add(&s->w->stats.commands, 1);
    ss_hooks_response_end(s, true); /* as for a relayed one: flush_early's wake, say */
    if (s->digest) {
        mr_digest_stats_record(s->digest, (mr_mono_ns() - s->command_start_ns) / 1000);
        s->digest = NULL;
    }
}

/* The runner could not connect, so the statement was never sent: it goes on
 * the client's own connection as it would without group commit, and the
 * server's answer is relayed (its end counts it, as for any statement). */
static void send_own(mr_session *s, const mr_dgroup_member *m)
{
    mr_buf out;
    mr_buf_init(&out);
    ss_command_build(s, &out, MR_COM_QUERY, m->sql, m->len, true); /* joined: no attributes */
    if (out.failed) {
        mr_buf_free(&out);
        ss_send_err(s, 1, MR_ER_OUT_OF_MEMORY, "HY001", "myrewrite is out of memory");
        ss_set_state(s, SS_IDLE);
        return;
    }
    mr_conn_write(s->backend, out.data, out.len);
    mr_buf_free(&out);
    mr_tracker_begin(&s->tracker, mr_expect_for_command(MR_COM_QUERY));
    ss_set_state(s, SS_IDLE); /* the command goes on as a relayed one */
    ss_set_state(s, SS_RESPONSE);
}

void mr_session_group_answered(mr_worker *w)
{
    mr_dgroup_member *m = w->group_inbox ? mr_dgroup_inbox_take(w->group_inbox) : NULL;
    for (mr_dgroup_member *next; m; m = next) {
        next = m->next;
        mr_session *s = m->owner;
        if (s && ALIVE(s) && s->group == m && m->unsent) {
            s->group = NULL;
            send_own(s, m);
        } else if (s && ALIVE(s) && s->group == m) {
            s->group = NULL;
            answer(s, m);
            finish(s);
            ss_set_state(s, SS_IDLE);
            if (w->draining)
                ss_close(s, MR_CLOSE_SHUTDOWN, "proxy shutting down");
            else
                ss_pump_client(s); /* a command may already be waiting */
        }
        mr_dgroup_member_free(m);
    }
}

void ss_group_orphan(mr_session *s)
{
    if (s->group)
        s->group->owner = NULL; /* the runner never reads it; the answer is dropped */
    s->group = NULL;
}
