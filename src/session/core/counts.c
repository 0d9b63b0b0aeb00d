/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/core/counts.c - what the front end did with one statement,
 * counted for SHOW CLIENTS and /metrics: front-end time, texts the lexer
 * could not read. What a feature's rules did (its rewrites, refusals,
 * rows) the feature counts in its verdict hook (feature/feature.h), run by
 * session/stmt/statement.c right after this.
 *
 * Worker thread of the session. Per-worker counters are single-writer.
 */
#include "myrewrite/base/log.h"
#include "session/core/session_impl.h"

/* A text the lexer cannot read: counted by what the unreadable policy did;
 * one relayed unexamined is said once per session, so a DBA can see it. */
static void count_unreadable(mr_session *s, const mr_match_result *res)
{
    if (res->unreadable == MR_UNREADABLE_BLOCKED) {
        mr_stat_add(&s->w->stats.unreadable_blocked, 1);
        return;
    }
    mr_stat_add(&s->w->stats.unreadable_passed, 1);
    if (s->unreadable_logged)
        return;
    s->unreadable_logged = true;
    mr_warn(s->id,
            "a statement the proxy cannot read was relayed without meeting the rules "
            "(unreadable = %s; said once per session; counted in "
            "myrewrite_statements_unreadable_total)",
            cfg(s)->unreadable);
}

void ss_count_statement(mr_session *s, const mr_match_result *res, uint64_t frontend_ns)
{
    mr_worker *w = s->w;
    mr_stat_add(&w->stats.frontend_statements, 1);
    mr_stat_add(&w->stats.frontend_ns, frontend_ns);
    mr_stat_add(&s->slot.statements, 1);
    mr_client_set_text(&w->clients, &s->slot, res->digest);
    if (res->unreadable != MR_UNREADABLE_NONE)
        count_unreadable(s, res);
}
