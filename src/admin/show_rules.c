/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/show_rules.c - the admin console's SHOW RULES, SHOW DIGESTS, RELOAD
 * RULES and EXPLAIN REWRITE (see admin/admin_impl.h).
 *
 * Admin console thread. Holds a reference to the rule set in force for the
 * length of one command; takes each worker's digest table lock while
 * copying it. Reloading reads the rule files here, never on a worker.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/admin_impl.h"
#include "myrewrite/admin/cmd.h"
#include "myrewrite/admin/proto.h"
#include "myrewrite/paginate/bookmarks.h"
#include "myrewrite/rules/kind.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/schema/cache.h"
#include "myrewrite/session/reload.h"
#include "myrewrite/session/worker.h"
#include "myrewrite/stats/rule_hits.h"

#define DIGESTS_SHOWN 100

/* A unix time as UTC "YYYY-MM-DD HH:MM:SS"; NULL for 0 (never). */
static const char *utc_time(uint64_t t, char *buf, size_t n)
{
    struct tm tm;
    time_t tt = (time_t)t;
    if (t == 0 || !gmtime_r(&tt, &tm))
        return NULL;
    strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

static void rule_row(mr_resultset *rs, const mr_ruleset *set, size_t i)
{
    const mr_rule *r = mr_ruleset_rule(set, i);
    char line[16], hits[24], last[32];
    snprintf(line, sizeof(line), "%d", r->line);
    snprintf(hits, sizeof(hits), "%" PRIu64, mr_rule_hits_total(set, i));
    const char *row[7] = {r->name,
                          r->entry->name,
                          r->file,
                          line,
                          r->enabled ? "yes" : "no",
                          hits,
                          utc_time(mr_rule_hits_last(set, i), last, sizeof(last))};
    mr_rs_row(rs, row);
}

void mr_admin_show_rules(mr_proxy *p, mr_buf *out)
{
    static const mr_col cols[] = {{"name", MR_COL_TEXT},    {"kind", MR_COL_TEXT},
                                  {"file", MR_COL_TEXT},    {"line", MR_COL_INT},
                                  {"enabled", MR_COL_TEXT}, {"hits", MR_COL_INT},
                                  {"last_hit", MR_COL_TEXT}};
    mr_shared_rules *cur = mr_rules_current(p);
    mr_resultset rs;
    mr_rs_begin(&rs, out, 1, cols, 7);
    for (size_t i = 0; cur && i < mr_ruleset_count(cur->set); i++)
        rule_row(&rs, cur->set, i);
    mr_rs_end(&rs);
    mr_shared_rules_release(cur);
}

static void copy_entry(mr_admin_digest *d, mr_digest_entry *e, uint64_t hash)
{
    d->hash = hash;
    memcpy(d->text, e->text, sizeof(d->text));
    d->text[sizeof(d->text) - 1] = '\0';
    d->count = mr_stat_get(&e->count);
    d->total_us = mr_stat_get(&e->total_us);
    d->max_us = mr_stat_get(&e->max_us);
    d->rewritten = mr_stat_get(&e->rewritten);
    d->blocked = mr_stat_get(&e->blocked);
}

/* Appends one worker's entries to rows[*n..]; false when out of memory. */
static bool copy_table(mr_digest_stats *t, mr_admin_digest **rows, size_t *n)
{
    bool ok = true;
    pthread_mutex_lock(&t->lock);
    mr_admin_digest *grown = realloc(*rows, (*n + t->used + 1) * sizeof(**rows));
    if (!grown) {
        ok = false;
    } else {
        *rows = grown;
        for (size_t i = 0; i < t->cap; i++)
            if (t->slots[i].hash != 0)
                copy_entry(&grown[(*n)++], &t->slots[i], t->slots[i].hash);
        if (mr_stat_get(&t->overflow.count) > 0)
            copy_entry(&grown[(*n)++], &t->overflow, 0);
    }
    pthread_mutex_unlock(&t->lock);
    return ok;
}

static void digest_row(mr_resultset *rs, const mr_admin_digest *d)
{
    char count[24], total[32], avg[24], max[24], rw[24], bl[24];
    snprintf(count, sizeof(count), "%" PRIu64, d->count);
    snprintf(total, sizeof(total), "%" PRIu64 ".%03" PRIu64, d->total_us / 1000,
             d->total_us % 1000);
    snprintf(avg, sizeof(avg), "%" PRIu64, d->count ? d->total_us / d->count : 0);
    snprintf(max, sizeof(max), "%" PRIu64, d->max_us);
    snprintf(rw, sizeof(rw), "%" PRIu64, d->rewritten);
    snprintf(bl, sizeof(bl), "%" PRIu64, d->blocked);
    const char *row[7] = {d->text, count, total, avg, max, rw, bl};
    mr_rs_row(rs, row);
}

void mr_admin_show_digests(mr_proxy *p, mr_buf *out)
{
    static const mr_col cols[] = {{"digest", MR_COL_TEXT},      {"count", MR_COL_INT},
                                  {"total_ms", MR_COL_DECIMAL}, {"avg_us", MR_COL_INT},
                                  {"max_us", MR_COL_INT},       {"rewritten", MR_COL_INT},
                                  {"blocked", MR_COL_INT}};
    mr_admin_digest *rows = NULL;
    size_t n = 0;
    for (unsigned i = 0; i < p->nworkers; i++) {
        if (!copy_table(&p->workers[i].digests, &rows, &n)) {
            free(rows);
            mr_admin_error(out, 1037, "HY000", "out of memory");
            return;
        }
    }
    n = mr_admin_digests_merge(rows, n, DIGESTS_SHOWN);
    mr_resultset rs;
    mr_rs_begin(&rs, out, 1, cols, 7);
    for (size_t i = 0; i < n; i++)
        digest_row(&rs, &rows[i]);
    mr_rs_end(&rs);
    free(rows);
}

static size_t rules_in_force(mr_proxy *p)
{
    mr_shared_rules *cur = mr_rules_current(p);
    size_t n = cur ? mr_ruleset_count(cur->set) : 0;
    mr_shared_rules_release(cur);
    return n;
}

void mr_admin_reload_rules(mr_proxy *p, mr_buf *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    int errors = mr_rules_reload(p, mem);
    if (mem)
        fclose(mem);
    if (errors == 0) {
        char msg[64];
        snprintf(msg, sizeof(msg), "ok, %zu rules", rules_in_force(p));
        mr_admin_lines_result(out, "result", msg);
    } else {
        char fallback[] = "reload failed (see the log)";
        mr_admin_lines_result(out, "error", text && text[0] ? text : fallback);
    }
    free(text);
}

void mr_admin_explain(mr_proxy *p, const char *sql, size_t len, mr_buf *out)
{
    mr_shared_rules *cur = mr_rules_current(p);
    char *text = NULL;
    size_t tlen = 0;
    FILE *mem = open_memstream(&text, &tlen);
    if (!cur || !mem) {
        if (mem)
            fclose(mem);
        free(text);
        mr_shared_rules_release(cur);
        mr_admin_error(out, 1037, "HY000", "no rule set in force or out of memory");
        return;
    }
    /* no user, no schema: rules with such filters show why; keys of qualified
     * tables come from the schema cache, as for clients */
    mr_stmt_ctx ctx = {.schema_src = mr_schema_cache_source(), .bookmarks = &mr_bookmarks_store};
    mr_rules_explain(cur->set, sql, len, &ctx, mem);
    fclose(mem);
    mr_shared_rules_release(cur);
    mr_admin_lines_result(out, "explain", text);
    free(text);
}
