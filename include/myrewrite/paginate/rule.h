/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/rule.h - a paginate rule's settings ([paginate NAME] in a rules file).
 *
 * Pure data, any thread: filled in by the rule loader, immutable once the
 * rule set is published.
 */
#ifndef MYREWRITE_PAGINATE_RULE_H
#define MYREWRITE_PAGINATE_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/rules/kind.h"

/* How a paginate rule rewrites deep pages. */
typedef enum mr_paginate_strategy {
    MR_PAGINATE_DEFERRED_JOIN,
    MR_PAGINATE_KEYSET, /* seek from a bookmark; without one the page passes untouched */
    MR_PAGINATE_AUTO,   /* seek from a bookmark; without one the deferred join */
} mr_paginate_strategy;

/* A paginate rule's settings (rules/README.md, "paginate"); immutable.
 * Names are as written in the file, unquoted, without backticks. */
typedef struct mr_paginate_def {
    char *schema; /* from `table = s.t`; NULL: any schema */
    char *table;  /* NULL for `table = *`: any table */
    char **keys;  /* primary-key columns, from the `key` list */
    size_t nkeys;
    uint64_t threshold;  /* rewrite from this offset on; default 1000 */
    uint64_t max_offset; /* deeper offsets are refused; 0 = no limit */
    mr_paginate_strategy strategy;
    uint64_t max_bookmarks;   /* keyset: bound of the bookmark store; default 10000 */
    uint64_t bookmark_ttl_ms; /* keyset: a bookmark's life; default 60 s */
} mr_paginate_def;

/* The error a paginate rule's guardrail answers with (ER_NOT_SUPPORTED_YET). */
#define MR_PAGINATE_ERR_CODE 1235
#define MR_PAGINATE_SQLSTATE "42000"

/* ---- the kind (paginate/rule_kind.c) ---- */

extern const mr_rule_kind mr_paginate_kind;
/* [paginate NAME]: checks the section and fills r->paginate (paginate/rule_load.c). */
bool mr_paginate_rule_parse(mr_rule_loader *L, const mr_rule_draft *dr, mr_rule *r,
                            struct rule_impl *im);
void mr_paginate_rule_free(mr_rule *r);
/* A paginate rule on S: WHY_MATCHED with the deferred join (or seek) in
 * `out`, or with R->block_msg set for a page beyond max_offset
 * (paginate/statement.c). */
rule_why mr_paginate_apply(mr_rule_run *R, mr_rule_stmt *S, size_t i, mr_rule_text *out);
void mr_paginate_scratch_free(void *p);

#endif
