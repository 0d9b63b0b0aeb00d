/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/statement/rule_kind.c - the delayed kind's entry in the rule-kind table
 * (rules/kind.h): [delayed NAME] sections, checked by delayed/rule/rule_load.c;
 * UPDATE/DELETE DELAYED taken over before any rule by delayed/statement/statement.c;
 * what explain, the schema cache and SHOW ask of a delayed rule.
 *
 * Pure, any thread: a const table entry.
 */
#include <string.h>

#include "myrewrite/delayed/rule.h"

static const char *const keys[] = {
    "table",
    "key",
    "columns",
    "staging_table",
    "staging_engine",
    "flush_interval",
    "flush_rows",
    "missing",
    "mode",
    "set_columns",
    "memory_max_keys",
    "flush_early",
    "bucket_column",
    "bucket",
    "group_commit",
    "group_commit_wait",
    "group_commit_rows",
    "group_commit_bytes",
    "read_pending",
    "group_commit_timeout",
    NULL,
};

/* Delayed rules meet DELAYED statements only, through take: as candidates
 * they are listed by explain alone, with this reason. */
static rule_why apply(mr_rule_run *R, mr_rule_stmt *S, size_t i, mr_rule_text *out)
{
    (void)S, (void)i, (void)out;
    snprintf(R->detail, sizeof R->detail, "delayed rules only meet DELAYED statements");
    return WHY_NOT_KIND;
}

static bool candidate(const mr_rule *r)
{
    (void)r;
    return false;
}

/* A default rule's detail says which phase its table's derived rule is in;
 * a point read's, what read_pending made of it. */
static void explain_match(FILE *out, const mr_rule *r, const char *detail)
{
    bool read = detail && strncmp(detail, "read_pending", 12) == 0;
    if ((r->delayed->derive || read) && detail && detail[0])
        fprintf(out, "matched: rewrite (%s)", detail);
    else
        fputs("matched: rewrite", out);
}

/* A rule without `key` stages under the row key the schema cache has. */
static bool wants_row_key(const mr_rule *r) { return !r->delayed->derive && !r->delayed->nkeys; }

static bool tables(const mr_rule *r, const char **schema, const char **table, const char **staging)
{
    *schema = r->delayed->schema;
    *table = r->delayed->table;
    *staging = r->delayed->staging_table;
    return true;
}

const mr_rule_kind mr_delayed_kind = {
    .name = "delayed",
    .type = MR_RULE_DELAYED,
    .no_bulk = true,
    .keys = keys,
    .parse = mr_delayed_rule_parse,
    .free = mr_delayed_rule_free,
    .apply = apply,
    .candidate = candidate,
    .take = mr_delayed_take,
    .mentions = mr_delayed_mentioned,
    .unreadable = mr_delayed_unreadable,
    .scratch_free = mr_delayed_scratch_free,
    .explain_match = explain_match,
    .tables = tables,
    .wants_row_key = wants_row_key,
};
