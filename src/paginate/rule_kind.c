/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/rule_kind.c - the paginate kind's entry in the rule-kind table
 * (rules/kind.h): [paginate NAME] sections, checked by paginate/rule_load.c
 * and applied by paginate/statement.c; what explain, the schema cache and
 * SHOW ask of a paginate rule.
 *
 * Pure, any thread: a const table entry.
 */
#include "myrewrite/paginate/rule.h"

static const char *const keys[] = {
    "table",   "key",           "threshold",    "strategy", "max_offset",
    "message", "max_bookmarks", "bookmark_ttl", NULL,
};

/* It refuses, sends a deferred join, a keyset seek or the page with its key
 * appended: the detail says which. */
static void explain_match(FILE *out, const mr_rule *r, const char *detail)
{
    (void)r;
    if (detail && detail[0])
        fprintf(out, "matched: paginate (%s)", detail);
    else
        fputs("matched: rewrite", out);
}

/* A rule without `key` joins on the row key the schema cache has. */
static bool wants_row_key(const mr_rule *r) { return !r->paginate->nkeys; }

static bool tables(const mr_rule *r, const char **schema, const char **table, const char **staging)
{
    *schema = r->paginate->schema;
    *table = r->paginate->table;
    *staging = NULL;
    return true;
}

const mr_rule_kind mr_paginate_kind = {
    .name = "paginate",
    .type = MR_RULE_PAGINATE,
    .no_bulk = true,
    .keys = keys,
    .parse = mr_paginate_rule_parse,
    .free = mr_paginate_rule_free,
    .apply = mr_paginate_apply,
    .scratch_free = mr_paginate_scratch_free,
    .explain_match = explain_match,
    .tables = tables,
    .wants_row_key = wants_row_key,
};
