/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/core/counts.c - what the front end did with one statement, counted
 * for SHOW CLIENTS, SHOW PAGINATION, SHOW DELAYED and /metrics: front-end
 * time, paginate rewrites and refusals, rows staged by DELAYED statements,
 * texts the lexer could not read.
 * A prepared statement is rewritten once, at COM_STMT_PREPARE: what its
 * executions will send is noted for session/stmt/prepared.c, which counts it
 * at each COM_STMT_EXECUTE.
 *
 * Worker thread of the session. Per-worker counters are single-writer;
 * the per-rule ones (stats/rule_stats.h) are atomic adds, reached only by
 * statements a paginate or delayed rule acted on.
 */
#include "myrewrite/base/log.h"
#include "myrewrite/stats/rule_stats.h"
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

/* True when a keyset rule sent something other than a deferred join: a
 * seek, or a page it only ordered by the key (shallow, or a keyset miss). */
static bool keyset_not_deferred(const mr_keyset_note *k)
{
    if (k->outcome == MR_KEYSET_HIT)
        return true; /* counted as paginate_keyset_hits by paginate/session_hooks.c */
    if (!k->watch)
        return false;
    return k->listing.offset < k->threshold || (k->outcome == MR_KEYSET_MISS && k->keyset_only);
}

void ss_count_page(mr_worker *w, mr_rule_stats *e, bool refused)
{
    mr_stat_add(refused ? &w->stats.paginate_refused : &w->stats.paginate_deferred, 1);
    if (e)
        atomic_fetch_add_explicit(refused ? &e->refused : &e->deferred, 1, memory_order_relaxed);
}

void ss_count_staged(mr_worker *w, mr_rule_stats *rule, mr_rule_stats *table, uint32_t rows)
{
    mr_stat_add(&w->stats.delayed_rows_staged, rows);
    if (rule)
        atomic_fetch_add_explicit(&rule->staged, rows, memory_order_relaxed);
    if (table)
        atomic_fetch_add_explicit(&table->staged, rows, memory_order_relaxed);
}

/* A paginate rule's outcome: the guardrail blocks (it is then the last
 * rule matched), otherwise the deferred join went out; for a prepare, at
 * each execute. */
static void count_paginate(mr_session *s, const mr_match_result *res, unsigned i, bool prepared)
{
    bool refused = res->action == MR_ACT_BLOCK && i + 1 == res->nmatched;
    if (!refused && res->action != MR_ACT_REWRITE)
        return; /* a later rule blocked the statement: nothing was sent */
    if (!refused && keyset_not_deferred(&res->keyset))
        return;
    if (prepared && !refused) { /* counted at each execute */
        s->pnote_next.page = true;
        s->pnote_next.page_rule = mr_rule_stats_of(res->matched[i]);
    } else
        ss_count_page(s->w, mr_rule_stats_of(res->matched[i]), refused);
}

/* Staging rows go out only when the statement is sent (not blocked). */
static void count_delayed(mr_session *s, const mr_match_result *res, unsigned i, bool prepared)
{
    uint32_t rows = res->staged_rows[i];
    if (res->action != MR_ACT_REWRITE || rows == 0)
        return;
    if (prepared) {
        s->pnote_next.staged_rule = mr_rule_stats_of(res->matched[i]);
        s->pnote_next.staged_table = res->staged_table[i];
        s->pnote_next.rows = rows;
    } else {
        ss_count_staged(s->w, mr_rule_stats_of(res->matched[i]), res->staged_table[i], rows);
    }
}

void ss_count_statement(mr_session *s, const mr_match_result *res, bool prepared,
                        uint64_t frontend_ns)
{
    mr_worker *w = s->w;
    mr_stat_add(&w->stats.frontend_statements, 1);
    mr_stat_add(&w->stats.frontend_ns, frontend_ns);
    mr_stat_add(&s->slot.statements, 1);
    mr_client_set_text(&w->clients, &s->slot, res->digest);
    if (res->unreadable != MR_UNREADABLE_NONE)
        count_unreadable(s, res);
    unsigned n = res->nmatched < MR_MATCH_MAX_RULES ? res->nmatched : MR_MATCH_MAX_RULES;
    for (unsigned i = 0; i < n; i++) {
        const mr_rule *r = res->matched[i];
        if (r->log_only)
            continue; /* the original was sent */
        if (r->kind == MR_RULE_PAGINATE)
            count_paginate(s, res, i, prepared);
        else if (r->kind == MR_RULE_DELAYED)
            count_delayed(s, res, i, prepared);
    }
}
