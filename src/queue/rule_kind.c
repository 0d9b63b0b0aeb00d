/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/rule_kind.c - the queue kind's entry in the rule-kind table
 * (rules/kind.h): [queue NAME] sections, checked by queue/rule_load.c and
 * applied by queue/statement.c.
 *
 * Pure, any thread: a const table entry.
 */
#include "myrewrite/queue/rule.h"

static const char *const keys[] = {
    "table",
    "owner_column",
    "status_column",
    "claimed_value",
    "unclaimed_value",
    "unclaimed_owner",
    "claimed_at_column",
    "timeout",
    "release",
    "reap",
    "skip_locked",
    "claim_read_committed",
    NULL,
};

/* A rule without skip_locked or claim_read_committed asks nothing of
 * statements: it only names the claims released when a session ends. */
static bool candidate(const mr_rule *r)
{
    return r->queue->skip_locked || r->queue->claim_read_committed;
}

const mr_rule_kind mr_queue_kind = {
    .name = "queue",
    .type = MR_RULE_QUEUE,
    .no_bulk = true,
    .keys = keys,
    .parse = mr_queue_rule_parse,
    .free = mr_queue_rule_free,
    .apply = mr_queue_apply,
    .candidate = candidate,
};
