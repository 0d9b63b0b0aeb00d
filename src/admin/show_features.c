/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/show_features.c - the admin console's SHOW PAGINATION, SHOW DELAYED and
 * SHOW DELAYED REJECTED (the keys moved to dead-letter tables, delayed/reject.h):
 * one row per paginate or delayed rule in force, with what it did
 * (stats/rule_stats.h; those counters outlive reloads, by rule name), and under
 * a default delayed rule one row per table it derived.
 *
 * Admin console thread. Holds a reference to the rule set in force for one
 * command; reads counters other threads write with relaxed loads.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/admin_impl.h"
#include "myrewrite/admin/proto.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/delayed/derive.h"
#include "myrewrite/delayed/flush.h"
#include "myrewrite/delayed/reject.h"
#include "myrewrite/paginate/rule.h"
#include "myrewrite/paginate/stats.h"
#include "myrewrite/session/reload.h"
#include "myrewrite/session/worker.h"
#include "myrewrite/stats/rule_hits.h"
#include "myrewrite/stats/rule_stats.h"

static const char *u64(uint64_t v, char *buf, size_t n)
{
    snprintf(buf, n, "%" PRIu64, v);
    return buf;
}

static uint64_t load(_Atomic uint64_t *c) { return atomic_load_explicit(c, memory_order_relaxed); }

/* The entry of a rule in force, without creating one: NULL means it has
 * done nothing yet. */
static mr_rule_stats *entry(const mr_rule *r)
{
    return mr_rule_stats_find(r->kind, r->name, NULL, NULL, false);
}

/* ---- SHOW PAGINATION ---- */

enum { PAG_COLS = 10 };

static void paginate_row(mr_resultset *rs, const mr_ruleset *set, size_t i)
{
    const mr_rule *r = mr_ruleset_rule(set, i);
    const mr_paginate_def *d = r->paginate;
    mr_rule_stats *e = entry(r);
    char table[256], thr[24], max[24], hits[24], def[24], ref[24], kh[24], km[24];
    if (!d->table)
        snprintf(table, sizeof table, "*");
    else
        snprintf(table, sizeof table, "%s%s%s", d->schema ? d->schema : "", d->schema ? "." : "",
                 d->table);
    const char *row[PAG_COLS] = {
        r->name,
        table,
        u64(d->threshold, thr, sizeof thr),
        d->max_offset ? u64(d->max_offset, max, sizeof max) : NULL,
        u64(mr_rule_hits_total(set, i), hits, sizeof hits),
        u64(e ? load(&e->deferred) : 0, def, sizeof def),
        u64(e ? load(&e->refused) : 0, ref, sizeof ref),
        u64(e ? load(&e->keyset_hits) : 0, kh, sizeof kh),
        u64(e ? load(&e->keyset_misses) : 0, km, sizeof km),
        NULL, /* bookmarks are held per listing, not per rule: see the total row */
    };
    mr_rs_row(rs, row);
}

static uint64_t worker_sum(mr_proxy *p, mr_counter *(*field)(mr_stats *))
{
    uint64_t total = 0;
    for (unsigned i = 0; i < p->nworkers; i++)
        total += mr_stat_get(field(&p->workers[i].stats));
    return total;
}

static mr_counter *f_deferred(mr_stats *s) { return &s->paginate_deferred; }
static mr_counter *f_refused(mr_stats *s) { return &s->paginate_refused; }
static mr_counter *f_khits(mr_stats *s) { return &s->paginate_keyset_hits; }
static mr_counter *f_kmisses(mr_stats *s) { return &s->paginate_keyset_misses; }

/* Every paginate rule together, including rules since removed, from the
 * workers' counters; the only row with the keyset figures. */
static void paginate_total(mr_resultset *rs, mr_proxy *p)
{
    char def[24], ref[24], kh[24], km[24], bm[24];
    const char *row[PAG_COLS] = {
        "(all)",
        NULL,
        NULL,
        NULL,
        NULL,
        u64(worker_sum(p, f_deferred), def, sizeof def),
        u64(worker_sum(p, f_refused), ref, sizeof ref),
        u64(worker_sum(p, f_khits), kh, sizeof kh),
        u64(worker_sum(p, f_kmisses), km, sizeof km),
        u64(mr_keyset_bookmarks(), bm, sizeof bm),
    };
    mr_rs_row(rs, row);
}

void mr_admin_show_pagination(mr_proxy *p, mr_buf *out)
{
    static const mr_col cols[PAG_COLS] = {
        {"rule", MR_COL_TEXT},      {"table", MR_COL_TEXT},      {"threshold", MR_COL_INT},
        {"max_offset", MR_COL_INT}, {"hits", MR_COL_INT},        {"deferred", MR_COL_INT},
        {"refused", MR_COL_INT},    {"keyset_hits", MR_COL_INT}, {"keyset_misses", MR_COL_INT},
        {"bookmarks", MR_COL_INT}};
    mr_shared_rules *cur = mr_rules_current(p);
    mr_resultset rs;
    mr_rs_begin(&rs, out, 1, cols, PAG_COLS);
    for (size_t i = 0; cur && i < mr_ruleset_count(cur->set); i++)
        if (mr_ruleset_rule(cur->set, i)->kind == MR_RULE_PAGINATE)
            paginate_row(&rs, cur->set, i);
    paginate_total(&rs, p);
    mr_rs_end(&rs);
    mr_shared_rules_release(cur);
}

/* ---- SHOW DELAYED ---- */

enum { DEL_COLS = 19 };

/* Unix milliseconds as UTC "YYYY-MM-DD HH:MM:SS.mmm"; NULL for 0 (never). */
static const char *utc_ms(uint64_t ms, char *buf, size_t n)
{
    struct tm tm;
    time_t tt = (time_t)(ms / 1000);
    if (ms == 0 || !gmtime_r(&tt, &tm))
        return NULL;
    size_t w = strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf + w, n - w, ".%03u", (unsigned)(ms % 1000));
    return buf;
}

static const char *ms_as_seconds(uint64_t ms, char *buf, size_t n)
{
    snprintf(buf, n, "%" PRIu64 ".%03" PRIu64, ms / 1000, ms % 1000);
    return buf;
}

/* num / (den * unit) with three decimals: rows per batch, a mean wait in ms. */
static const char *ratio(uint64_t num, uint64_t den, uint64_t unit, char *buf, size_t n)
{
    uint64_t milli = num * 1000 / (den * unit);
    snprintf(buf, n, "%" PRIu64 ".%03" PRIu64, milli / 1000, milli % 1000);
    return buf;
}

/* One row: the counters e (NULL: nothing done yet) of rule `name` on
 * table, staged in staging. */
static void delayed_row(mr_resultset *rs, const char *name, const char *table, const char *staging,
                        mr_rule_stats *e)
{
    char staged[24], flushed[24], rounds[24], last[40], dur[32], lag[32], errs[24],
        err[MR_RULE_STATS_ERR_MAX], rejected[24];
    char gb[24], rpb[32], gs[24], gw[32], gp[24], pw[32], rp[24];
    uint64_t at = e ? mr_stat_get(&e->last_flush_at) : 0, now = mr_unix_ms();
    uint64_t batches = e ? load(&e->group_batches) : 0,
             grouped = e ? load(&e->group_statements) : 0;
    uint64_t parked = e ? load(&e->group_parked) : 0;
    err[0] = '\0';
    if (e)
        mr_rule_stats_last_error(e, err, sizeof err);
    const char *row[DEL_COLS] = {
        name,
        table,
        staging,
        u64(e ? load(&e->staged) : 0, staged, sizeof staged),
        u64(e ? mr_stat_get(&e->flushed) : 0, flushed, sizeof flushed),
        u64(e ? mr_stat_get(&e->rounds) : 0, rounds, sizeof rounds),
        utc_ms(at, last, sizeof last),
        at ? ms_as_seconds(mr_stat_get(&e->last_flush_us), dur, sizeof dur) : NULL, /* us as ms */
        at ? ms_as_seconds(now > at ? now - at : 0, lag, sizeof lag) : NULL,
        u64(e ? mr_stat_get(&e->errors) : 0, errs, sizeof errs),
        err[0] ? err : NULL,
        u64(mr_dreject_total(table), rejected, sizeof rejected),
        u64(batches, gb, sizeof gb),
        batches ? ratio(e ? load(&e->group_rows) : 0, batches, 1, rpb, sizeof rpb) : NULL,
        u64(grouped, gs, sizeof gs),
        grouped ? ratio(e ? load(&e->group_wait_us) : 0, grouped, 1000, gw, sizeof gw) : NULL,
        u64(parked, gp, sizeof gp),
        parked ? ratio(e ? load(&e->group_park_wait_us) : 0, parked, 1000, pw, sizeof pw) : NULL,
        u64(e ? load(&e->read_pending) : 0, rp, sizeof rp),
    };
    mr_rs_row(rs, row);
}

/* A rule's row; a default rule's (the sum of its tables) is followed by
 * one row per table it derived, in table name order. */
static void delayed_rows(mr_resultset *rs, const mr_rule *r)
{
    const mr_delayed_def *d = r->delayed;
    char table[256], staging[256];
    snprintf(table, sizeof table, "%s.%s", d->schema ? d->schema : "", d->table);
    snprintf(staging, sizeof staging, "%s.%s", d->schema ? d->schema : "", d->staging_table);
    delayed_row(rs, r->name, table, staging, entry(r));
    struct mr_derive_reg *g = d->derive ? mr_delayed_derived() : NULL;
    size_t n = 0;
    mr_rule_stats **v = g ? mr_derive_stats_of(g, r->name, &n) : NULL;
    for (size_t k = 0; k < n; k++)
        delayed_row(rs, v[k]->name, v[k]->table, v[k]->staging, v[k]);
    free(v);
}

void mr_admin_show_delayed(mr_proxy *p, mr_buf *out)
{
    static const mr_col cols[DEL_COLS] = {
        {"rule", MR_COL_TEXT},           {"table", MR_COL_TEXT},
        {"staging_table", MR_COL_TEXT},  {"rows_staged", MR_COL_INT},
        {"rows_flushed", MR_COL_INT},    {"flush_rounds", MR_COL_INT},
        {"last_flush", MR_COL_TEXT},     {"last_flush_ms", MR_COL_DECIMAL},
        {"lag_seconds", MR_COL_DECIMAL}, {"errors", MR_COL_INT},
        {"last_error", MR_COL_TEXT},     {"rows_rejected", MR_COL_INT},
        {"batches", MR_COL_INT},         {"rows_per_batch", MR_COL_DECIMAL},
        {"grouped", MR_COL_INT},         {"group_wait_ms", MR_COL_DECIMAL},
        {"parked", MR_COL_INT},          {"park_wait_ms", MR_COL_DECIMAL},
        {"read_pending", MR_COL_INT}};
    mr_shared_rules *cur = mr_rules_current(p);
    mr_resultset rs;
    mr_rs_begin(&rs, out, 1, cols, DEL_COLS);
    for (size_t i = 0; cur && i < mr_ruleset_count(cur->set); i++) {
        const mr_rule *r = mr_ruleset_rule(cur->set, i);
        if (r->kind == MR_RULE_DELAYED && r->enabled)
            delayed_rows(&rs, r);
    }
    mr_rs_end(&rs);
    mr_shared_rules_release(cur);
}

/* ---- SHOW DELAYED REJECTED ---- */

enum { REJ_COLS = 8 };

void mr_admin_show_delayed_rejected(const char *table, mr_buf *out)
{
    static const mr_col cols[REJ_COLS] = {
        {"table", MR_COL_TEXT},       {"key_values", MR_COL_TEXT},
        {"change", MR_COL_TEXT},      {"staged_rows", MR_COL_INT},
        {"error_code", MR_COL_INT},   {"error_message", MR_COL_TEXT},
        {"rejected_at", MR_COL_TEXT}, {"dead_letter_table", MR_COL_TEXT}};
    mr_dreject_key *v = calloc(MR_DREJECT_RECENT, sizeof *v);
    size_t n = v ? mr_dreject_recent(table, v, MR_DREJECT_RECENT) : 0;
    mr_resultset rs;
    mr_rs_begin(&rs, out, 1, cols, REJ_COLS);
    for (size_t i = 0; i < n; i++) {
        char rows[24], code[16], at[40], dl[140];
        const char *dot = strchr(v[i].table, '.');
        snprintf(code, sizeof code, "%u", v[i].code);
        snprintf(dl, sizeof dl, "%.*s.%.47s_delayed_rejected", dot ? (int)(dot - v[i].table) : 0,
                 v[i].table, dot ? dot + 1 : v[i].table);
        const char *row[REJ_COLS] = {v[i].table,
                                     v[i].key,
                                     v[i].change,
                                     u64(v[i].rows, rows, sizeof rows),
                                     code,
                                     v[i].msg,
                                     utc_ms(v[i].at_ms, at, sizeof at),
                                     dl};
        mr_rs_row(&rs, row);
    }
    mr_rs_end(&rs);
    free(v);
}
