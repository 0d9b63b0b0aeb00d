/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/rule_load.c - [queue NAME] sections to queue rules: checks every key
 * of the section (rules/README.md, "queue") and fills the rule's
 * mr_queue_def (queue/rule.h).
 *
 * Pure, any thread (in practice the main thread, while rules load).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/queue/release_sql.h"
#include "myrewrite/queue/rule.h"
#include "myrewrite/sql/digest.h"

typedef mr_rule_draft draft;
typedef mr_rule_loader loader;

void mr_queue_rule_free(mr_rule *r)
{
    mr_queue_def *q = (mr_queue_def *)r->queue;
    if (!q)
        return;
    free(q->schema);
    free(q->table);
    free(q->owner_column);
    free(q->status_column);
    free(q->claimed_value);
    free(q->unclaimed_value);
    free(q->unclaimed_owner);
    free(q->claimed_at_column);
    free(q->release);
    free(q->reap);
    free(q);
}

static bool queue_table(loader *L, const draft *dr, mr_queue_def *q)
{
    return mr_rule_table(L, dr, &q->schema, &q->table);
}

/* `release` replaces the column keys: refuses any of them given with it
 * (timeout stays, for the `reap` template). */
static bool release_alone(loader *L, const draft *dr)
{
    static const char *const cols[] = {"owner_column",    "status_column",   "claimed_value",
                                       "unclaimed_value", "unclaimed_owner", "claimed_at_column"};
    bool ok = true;
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        if (mr_rule_val(dr, cols[i])) {
            mr_rule_error(L, mr_rule_line(dr, cols[i]),
                          "%s in [queue %s] does not apply "
                          "with release, which replaces the column keys (a reaper then needs "
                          "reap)",
                          cols[i], dr->name);
            ok = false;
        }
    if (mr_rule_val(dr, "timeout") && !mr_rule_val(dr, "reap")) {
        mr_rule_error(L, mr_rule_line(dr, "timeout"),
                      "timeout in [queue %s] needs reap: "
                      "with release, only the reap template can tell a claim's age",
                      dr->name);
        ok = false;
    }
    return ok;
}

/* Is `tpl`, filled in, exactly one statement that lexes? */
static bool one_statement(char *filled)
{
    sql_span sp[2];
    size_t count = 0;
    sql_rc rc = filled ? sql_split(filled, strlen(filled), 0, sp, 2, &count) : SQL_ERR;
    free(filled);
    return rc == SQL_OK && count == 1;
}

/* The template: one statement once {owner} is filled in. */
static bool queue_release(loader *L, const draft *dr, mr_queue_def *q)
{
    const char *v = mr_rule_val(dr, "release");
    if (!strstr(v, "{owner}")) {
        mr_rule_bad_value(
            L, dr, "release",
            "one SQL statement using {owner} for the backend "
            "connection id, like UPDATE jobs SET worker = NULL WHERE worker = {owner}");
        return false;
    }
    if (!one_statement(mr_queue_fill_release(v, 1))) {
        mr_rule_bad_value(L, dr, "release",
                          "exactly one SQL statement that lexes (with {owner} "
                          "standing for a number)");
        return false;
    }
    q->release = mr_rule_strdup(L, v);
    return q->release != NULL;
}

/* The reaper's template: {live} and {cutoff}, one statement once filled in. */
static bool queue_reap(loader *L, const draft *dr, mr_queue_def *q)
{
    const char *v = mr_rule_val(dr, "reap");
    if (!v)
        return true;
    if (!strstr(v, "{live}") || !strstr(v, "{cutoff}")) {
        mr_rule_bad_value(
            L, dr, "reap",
            "one SQL statement using {live} for the list of live "
            "connection ids and {cutoff} for the claim time limit, like UPDATE jobs SET "
            "worker = NULL WHERE worker NOT IN ({live}) AND locked_at < {cutoff}");
        return false;
    }
    static const uint64_t sample[] = {1, 2};
    if (!one_statement(mr_queue_fill_reap(v, sample, 2, "2000-01-01 00:00:00.000000"))) {
        mr_rule_bad_value(L, dr, "reap",
                          "exactly one SQL statement that lexes (with {live} standing "
                          "for a list of numbers and {cutoff} for a time)");
        return false;
    }
    if (mr_rule_val(dr, "timeout") &&
        !mr_rule_duration(mr_rule_val(dr, "timeout"), &q->timeout_ms)) {
        mr_rule_bad_value(L, dr, "timeout", "a duration above zero, like 90s, 10m or 1h");
        return false;
    }
    q->reap = mr_rule_strdup(L, v);
    return q->reap != NULL;
}

/* owner_column, status_column and both values: the release the proxy builds. */
static bool queue_columns(loader *L, const draft *dr, mr_queue_def *q)
{
    const char *what = "queue rules need owner_column, status_column, claimed_value and "
                       "unclaimed_value, or a release statement";
    if (mr_rule_val(dr, "reap")) {
        mr_rule_error(L, mr_rule_line(dr, "reap"),
                      "reap in [queue %s] applies only with "
                      "release; the column form has its own reaper (claimed_at_column)",
                      dr->name);
        return false;
    }
    bool ok = mr_rule_need(L, dr, "owner_column", what);
    ok &= mr_rule_need(L, dr, "status_column", what);
    ok &= mr_rule_need(L, dr, "claimed_value", what);
    ok &= mr_rule_need(L, dr, "unclaimed_value", what);
    ok &= mr_rule_name(L, dr, "owner_column", &q->owner_column);
    ok &= mr_rule_name(L, dr, "status_column", &q->status_column);
    ok &= mr_rule_name(L, dr, "claimed_at_column", &q->claimed_at_column);
    if (mr_rule_val(dr, "timeout") &&
        !mr_rule_duration(mr_rule_val(dr, "timeout"), &q->timeout_ms)) {
        mr_rule_bad_value(L, dr, "timeout", "a duration above zero, like 90s, 10m or 1h");
        ok = false;
    }
    if (mr_rule_val(dr, "timeout") && !mr_rule_val(dr, "claimed_at_column")) {
        mr_rule_error(L, mr_rule_line(dr, "timeout"),
                      "timeout in [queue %s] needs "
                      "claimed_at_column: a claim's age is read from it",
                      dr->name);
        ok = false;
    }
    if (!ok)
        return false;
    q->claimed_value = mr_rule_strdup(L, mr_rule_val(dr, "claimed_value"));
    q->unclaimed_value = mr_rule_strdup(L, mr_rule_val(dr, "unclaimed_value"));
    q->unclaimed_owner = mr_rule_strdup(
        L, mr_rule_val(dr, "unclaimed_owner") ? mr_rule_val(dr, "unclaimed_owner") : "0");
    return q->claimed_value && q->unclaimed_value && q->unclaimed_owner;
}

bool mr_queue_rule_parse(loader *L, const draft *dr, mr_rule *r, struct rule_impl *im)
{
    (void)im;
    mr_queue_def *q = calloc(1, sizeof *q);
    if (!q) {
        mr_rule_oom(L);
        return false;
    }
    r->queue = q;
    q->timeout_ms = 600000;
    bool ok = mr_rule_need(L, dr, "table", "queue rules need the table used as a queue");
    ok &= mr_rule_bool(L, dr, "skip_locked", false, &q->skip_locked);
    ok &= mr_rule_bool(L, dr, "claim_read_committed", false, &q->claim_read_committed);
    ok = ok && queue_table(L, dr, q);
    if (!ok)
        return false;
    if (mr_rule_val(dr, "release"))
        ok = release_alone(L, dr) && queue_release(L, dr, q) && queue_reap(L, dr, q);
    else
        ok = queue_columns(L, dr, q);
    if (!ok)
        return false;
    char text[160];
    snprintf(text, sizeof text, "queue %s.%s", q->schema, q->table);
    r->pattern = mr_rule_strdup(L, text);
    return r->pattern != NULL;
}
