/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/counts.c - a deep page a paginate rule acted on, counted: sent
 * as a deferred join (at the statement, or at each execute of a prepared
 * one: paginate/session_hooks.c), or refused beyond max_offset (a literal
 * offset by the rules, a `?` one by the session at the execute, through
 * mr_page_guard.refused).
 *
 * Pure. Called on the session's worker thread with its own counters
 * (single-writer); the rule's are atomic adds.
 */
#include "myrewrite/paginate/counts.h"

void mr_paginate_count_page(mr_stats *w, mr_rule_stats *e, bool refused)
{
    mr_stat_add(refused ? &w->paginate_refused : &w->paginate_deferred, 1);
    if (e)
        atomic_fetch_add_explicit(refused ? &e->refused : &e->deferred, 1, memory_order_relaxed);
}

void mr_paginate_count_refused(mr_stats *w, mr_rule_stats *e)
{
    mr_paginate_count_page(w, e, true);
}
