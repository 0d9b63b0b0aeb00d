/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/rule.h - a queue rule's settings ([queue NAME] in a rules file).
 *
 * Pure data, any thread: filled in by the rule loader, immutable once the
 * rule set is published.
 */
#ifndef MYREWRITE_QUEUE_RULE_H
#define MYREWRITE_QUEUE_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/rules/kind.h"

/* A queue rule's settings (rules/README.md, "queue"); immutable. Every
 * name is as written in the file, unquoted. */
typedef struct mr_queue_def {
    char *schema; /* schema of the table: from `table = s.t` or the `schema` key */
    char *table;
    char *owner_column; /* NULL when `release` is given */
    char *status_column;
    char *claimed_value;
    char *unclaimed_value;
    char *unclaimed_owner;     /* SQL literal as written: 0, -1, NULL or a string */
    char *claimed_at_column;   /* NULL: no claim time, so no reaper */
    uint64_t timeout_ms;       /* a claim older than this with a dead owner is a zombie */
    char *release;             /* statement template with {owner}; NULL: built from the columns */
    char *reap;                /* with release: the reaper's template ({live}, {cutoff}); or NULL */
    bool skip_locked;          /* add SKIP LOCKED to SELECT ... FROM table ... FOR UPDATE */
    bool claim_read_committed; /* single-table UPDATEs of the table sent alone run READ COMMITTED */
} mr_queue_def;

/* ---- the kind (queue/rule_kind.c) ---- */

extern const mr_rule_kind mr_queue_kind;
/* [queue NAME]: checks the section and fills r->queue (queue/rule_load.c). */
bool mr_queue_rule_parse(mr_rule_loader *L, const mr_rule_draft *dr, mr_rule *r,
                         struct rule_impl *im);
void mr_queue_rule_free(mr_rule *r);
/* A queue rule on S: a claim noted (WHY_NOTED, counted) or SKIP LOCKED
 * added into `out` (queue/statement.c). */
rule_why mr_queue_apply(mr_rule_run *R, mr_rule_stmt *S, size_t i, mr_rule_text *out);

#endif
