/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/derive.c - the registry of tables whose delayed rule a default
 * rule derives (delayed/derive.h). A chained hash of entries that are never
 * removed, under one mutex held only for lookups and state changes.
 */
#include "myrewrite/delayed/derive.h"
#include "myrewrite/stats/rule_stats.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 1024

struct mr_derive_reg {
    pthread_mutex_t lock;
    mr_derived *bucket[BUCKETS];
    mr_derived *all;
    size_t n;
};

mr_derive_reg *mr_derive_reg_new(void)
{
    mr_derive_reg *g = calloc(1, sizeof *g);
    if (g && pthread_mutex_init(&g->lock, NULL) != 0) {
        free(g);
        return NULL;
    }
    return g;
}

static void free_names(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void mr_derive_def_free(mr_delayed_def *d)
{
    if (!d)
        return;
    free(d->schema);
    free(d->table);
    free_names(d->keys, d->nkeys);
    free_names(d->columns, d->ncolumns);
    free(d->staging_table);
    free(d->staging_engine);
    mr_rule_stats_free(d->table_stats);
    free(d);
}

void mr_derive_reg_free(mr_derive_reg *g)
{
    if (!g)
        return;
    for (mr_derived *e = g->all, *nx; e; e = nx) {
        nx = e->all;
        mr_derive_def_free(e->def);
        free(e);
    }
    pthread_mutex_destroy(&g->lock);
    free(g);
}

/* FNV-1a over "schema\0table": names compare as bytes, as table names do
 * on a case-sensitive server (the statement's spelling is the key). */
static size_t slot(const char *schema, const char *table)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = schema; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h *= 1099511628211ull;
    for (const char *p = table; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return (size_t)(h % BUCKETS);
}

static mr_derived *find(mr_derive_reg *g, const char *schema, const char *table)
{
    for (mr_derived *e = g->bucket[slot(schema, table)]; e; e = e->next)
        if (strcmp(e->schema, schema) == 0 && strcmp(e->table, table) == 0)
            return e;
    return NULL;
}

/* Caller holds the lock. NULL when out of memory or room. */
static mr_derived *add(mr_derive_reg *g, const char *schema, const char *table,
                       const mr_derive_how *how)
{
    if (g->n >= MR_DERIVE_MAX || strlen(schema) >= MR_DERIVE_NAME ||
        strlen(table) >= MR_DERIVE_NAME)
        return NULL;
    mr_derived *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    snprintf(e->schema, sizeof e->schema, "%s", schema);
    snprintf(e->table, sizeof e->table, "%s", table);
    e->how = *how;
    e->state = MR_DERIVE_PENDING;
    size_t s = slot(schema, table);
    e->next = g->bucket[s];
    g->bucket[s] = e;
    e->all = g->all;
    g->all = e;
    g->n++;
    return e;
}

mr_derive_state mr_derive_lookup(mr_derive_reg *g, const char *schema, const char *table,
                                 const mr_derive_how *how, bool *added, const mr_delayed_def **def,
                                 char *why, size_t whylen)
{
    *added = false;
    *def = NULL;
    pthread_mutex_lock(&g->lock);
    mr_derived *e = find(g, schema, table);
    if (!e && how) {
        e = add(g, schema, table, how);
        *added = e != NULL;
        if (!e) {
            pthread_mutex_unlock(&g->lock);
            snprintf(why, whylen,
                     "myrewrite: no room to derive a delayed rule for %s.%s "
                     "(%d tables already); give it a [delayed ...] rule",
                     schema, table, MR_DERIVE_MAX);
            return MR_DERIVE_FAILED;
        }
    }
    mr_derive_state st = e ? e->state : MR_DERIVE_ABSENT;
    if (st == MR_DERIVE_READY)
        *def = e->def;
    else if (st == MR_DERIVE_FAILED)
        snprintf(why, whylen, "%s", e->why);
    pthread_mutex_unlock(&g->lock);
    return st;
}

mr_derived *mr_derive_take(mr_derive_reg *g)
{
    pthread_mutex_lock(&g->lock);
    mr_derived *e = g->all;
    while (e && (e->taken ||
                 !(e->state == MR_DERIVE_PENDING || (e->state == MR_DERIVE_FAILED && e->retry))))
        e = e->all;
    if (e) {
        e->taken = true;
        e->retry = false;
    }
    pthread_mutex_unlock(&g->lock);
    return e;
}

void mr_derive_retry_failed(mr_derive_reg *g)
{
    pthread_mutex_lock(&g->lock);
    for (mr_derived *e = g->all; e; e = e->all)
        e->retry = e->state == MR_DERIVE_FAILED;
    pthread_mutex_unlock(&g->lock);
}

void mr_derive_publish(mr_derive_reg *g, mr_derived *e, mr_delayed_def *def)
{
    pthread_mutex_lock(&g->lock);
    e->def = def;
    e->state = MR_DERIVE_READY;
    e->taken = false;
    pthread_mutex_unlock(&g->lock);
}

void mr_derive_fail(mr_derive_reg *g, mr_derived *e, const char *why)
{
    pthread_mutex_lock(&g->lock);
    snprintf(e->why, sizeof e->why, "%s", why);
    e->state = MR_DERIVE_FAILED;
    e->taken = false;
    pthread_mutex_unlock(&g->lock);
}

void mr_derive_untake(mr_derive_reg *g, mr_derived *e)
{
    pthread_mutex_lock(&g->lock);
    e->taken = false;
    pthread_mutex_unlock(&g->lock);
}

bool mr_derive_known(mr_derive_reg *g, const char *schema, const char *table)
{
    pthread_mutex_lock(&g->lock);
    bool known = find(g, schema, table) != NULL;
    pthread_mutex_unlock(&g->lock);
    return known;
}

void mr_derive_counts(mr_derive_reg *g, uint64_t counts[4])
{
    memset(counts, 0, 4 * sizeof *counts);
    pthread_mutex_lock(&g->lock);
    for (mr_derived *e = g->all; e; e = e->all)
        counts[e->state]++;
    pthread_mutex_unlock(&g->lock);
}

static int by_table(const void *a, const void *b)
{
    const mr_rule_stats *x = *(mr_rule_stats *const *)a, *y = *(mr_rule_stats *const *)b;
    return strcmp(x->table, y->table);
}

mr_rule_stats **mr_derive_stats_of(mr_derive_reg *g, const char *rule, size_t *n)
{
    *n = 0;
    pthread_mutex_lock(&g->lock);
    mr_rule_stats **v = malloc((g->n ? g->n : 1) * sizeof *v);
    for (mr_derived *e = g->all; v && e; e = e->all)
        if (e->state == MR_DERIVE_READY && strcmp(e->how.rule, rule) == 0)
            v[(*n)++] = e->def->table_stats;
    pthread_mutex_unlock(&g->lock);
    if (v)
        qsort(v, *n, sizeof *v, by_table);
    return v;
}

bool mr_derive_staging_name(const char *pattern, const char *table, char *out, size_t cap)
{
    const char *at = strstr(pattern, "{table}");
    if (!at)
        return false;
    int n = snprintf(out, cap, "%.*s%s%s", (int)(at - pattern), pattern, table, at + 7);
    return n > 0 && (size_t)n < cap && n <= 64;
}

static char **names_dup(char *const *v, size_t n, bool *ok)
{
    char **c = calloc(n ? n : 1, sizeof *c);
    if (!c)
        *ok = false;
    for (size_t i = 0; c && i < n; i++)
        if (!(c[i] = strdup(v[i])))
            *ok = false;
    return c;
}

mr_delayed_def *mr_derive_def_new(const mr_derived *e, const char *staging, char *const *keys,
                                  size_t nkeys, char *const *cols, size_t ncols)
{
    mr_delayed_def *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    bool ok = true;
    d->schema = strdup(e->schema);
    d->table = strdup(e->table);
    d->staging_table = strdup(staging);
    d->staging_engine = strdup(e->how.engine);
    d->keys = names_dup(keys, nkeys, &ok);
    d->nkeys = nkeys;
    d->columns = names_dup(cols, ncols, &ok);
    d->ncolumns = ncols;
    d->flush_interval_ms = e->how.flush_interval_ms;
    d->flush_rows = e->how.flush_rows;
    d->mode = MR_DELAYED_STAGED;
    d->missing = MR_DELAYED_MISSING_IGNORE;
    char table[2 * MR_DERIVE_NAME], staging_q[2 * MR_DERIVE_NAME];
    snprintf(table, sizeof table, "%s.%s", e->schema, e->table);
    snprintf(staging_q, sizeof staging_q, "%s.%s", e->schema, staging);
    d->table_stats = mr_rule_stats_new(MR_RULE_DELAYED, e->how.rule, table, staging_q);
    if (!ok || !d->schema || !d->table || !d->staging_table || !d->staging_engine ||
        !d->table_stats) {
        mr_derive_def_free(d);
        return NULL;
    }
    return d;
}
