/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/table.c - the flusher's copies of the delayed rules: one
 * table per staged rule of a set (dflush_tables_from), with its own copy of
 * the rule's names and its lock name, and the default rules whose tables it
 * derives.
 *
 * Made on the main thread (configure), used and freed on the flusher's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delayed/flush/flush_impl.h"
#include "myrewrite/delayed/derive.h"
#include "myrewrite/sql/digest.h"
#include "myrewrite/stats/rule_stats.h"

/* ---- rule copies ---------------------------------------------------------------- */

static char *dup_or_null(const char *s, bool *ok)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *ok = false;
    return d;
}

static char **names_copy(char *const *v, size_t n, bool *ok)
{
    char **c = calloc(n ? n : 1, sizeof *c);
    if (!c)
        *ok = false;
    for (size_t i = 0; c && i < n; i++)
        c[i] = dup_or_null(v[i], ok);
    return c;
}

/* The rule's keys and, last, its bucket column: to the flusher the bucket
 * is one more key column, staged with each row and grouped on. */
static char **names_copy_bucket(const mr_delayed_def *s, bool *ok)
{
    size_t n = s->nkeys + (s->bucket_column != NULL);
    char **c = calloc(n ? n : 1, sizeof *c);
    if (!c) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!(c[i] = strdup(i < s->nkeys ? s->keys[i] : s->bucket_column)))
            *ok = false;
    return c;
}

void dflush_names_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void dflush_table_free(table *t)
{
    free(t->def.schema);
    free(t->def.table);
    dflush_names_free(t->def.keys, t->def.nkeys);
    dflush_names_free(t->def.columns, t->def.ncolumns);
    dflush_names_free(t->def.set_columns, t->def.nset_columns);
    free(t->def.staging_table);
    free(t->def.staging_engine);
    free(t->rule);
    free(t->key_weights);
}

/* The lock name: myrewrite_flush_<schema>.<staging>, or a hash of it when
 * that passes the 64 characters GET_LOCK takes. */
static void set_lock_name(table *t)
{
    int n = snprintf(t->lock_name, sizeof t->lock_name, "myrewrite_flush_%s.%s", t->def.schema,
                     t->def.staging_table);
    if (n < 0 || (size_t)n >= sizeof t->lock_name) {
        char full[160];
        snprintf(full, sizeof full, "%s.%s", t->def.schema, t->def.staging_table);
        snprintf(t->lock_name, sizeof t->lock_name, "myrewrite_flush_%016" PRIx64,
                 sql_hash64(full, strlen(full)));
    }
}

/* The flusher's copy of the rule `s` named `rule`. */
bool dflush_table_from_def(table *t, const mr_delayed_def *s, const char *rule,
                           struct mr_rule_stats *stats)
{
    bool ok = true;
    memset(t, 0, sizeof *t);
    t->def = *s;
    t->def.set_columns = names_copy(s->set_columns, s->nset_columns, &ok);
    t->def.mem = NULL;
    t->def.staged_rows = NULL;
    t->def.schema = dup_or_null(s->schema, &ok);
    t->def.table = dup_or_null(s->table, &ok);
    t->def.keys = names_copy_bucket(s, &ok);
    t->def.nkeys = s->nkeys + (s->bucket_column != NULL);
    t->def.bucket_column = NULL; /* one of the keys here, the last */
    t->key_from_schema = s->nkeys == 0;
    t->def.columns = names_copy(s->columns, s->ncolumns, &ok);
    t->def.staging_table = dup_or_null(s->staging_table, &ok);
    t->def.staging_engine = dup_or_null(s->staging_engine, &ok);
    t->rule = dup_or_null(rule, &ok);
    t->stats = stats;
    if (ok)
        set_lock_name(t);
    return ok;
}

static bool table_copy(table *t, const mr_rule *r)
{
    return dflush_table_from_def(t, r->delayed, r->name, mr_rule_stats_of(r));
}

void dflush_tables_free(dflush_tables *ts)
{
    for (size_t i = 0; i < ts->n; i++)
        dflush_table_free(&ts->t[i]);
    free(ts->t);
    free(ts->d);
    memset(ts, 0, sizeof *ts);
}

/* mode = memory rules have their own flusher (delayed/mem/mem_flush.c); default
 * rules name no table (their tables are derived, below). */
static bool is_staged(const mr_rule *r)
{
    return r->kind == MR_RULE_DELAYED && r->enabled && r->delayed->mode == MR_DELAYED_STAGED &&
           !r->delayed->derive;
}

static bool is_default(const mr_rule *r)
{
    return r->kind == MR_RULE_DELAYED && r->enabled && r->delayed->derive;
}

/* The default rules, for adopting staging tables left by another proxy. */
static bool defaults_from(dflush_tables *ts, const mr_ruleset *rs)
{
    size_t total = mr_ruleset_count(rs);
    for (size_t i = 0; i < total; i++)
        ts->nd += is_default(mr_ruleset_rule(rs, i));
    if (!ts->nd)
        return true;
    if (!(ts->d = calloc(ts->nd, sizeof *ts->d)))
        return false;
    for (size_t i = 0, k = 0; i < total; i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        if (!is_default(r))
            continue;
        snprintf(ts->d[k].schema, sizeof ts->d[k].schema, "%s", r->delayed->schema);
        mr_derive_how_of(r->name, r->delayed, &ts->d[k].how);
        ts->d[k++].stats = mr_rule_stats_of(r);
    }
    return true;
}

bool dflush_tables_from(dflush_tables *ts, const mr_ruleset *rs)
{
    size_t n = 0, total = mr_ruleset_count(rs);
    memset(ts, 0, sizeof *ts);
    if (!defaults_from(ts, rs))
        return false;
    for (size_t i = 0; i < total; i++)
        n += is_staged(mr_ruleset_rule(rs, i));
    if (!n)
        return true;
    if (!(ts->t = calloc(n, sizeof *ts->t)))
        return false;
    for (size_t i = 0; i < total; i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        if (!is_staged(r))
            continue;
        bool ok = table_copy(&ts->t[ts->n], r);
        ts->n++;
        if (!ok) {
            dflush_tables_free(ts);
            return false;
        }
    }
    return true;
}
