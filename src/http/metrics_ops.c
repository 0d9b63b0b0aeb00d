/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http/metrics_ops.c - the /metrics families of the operations side:
 * rule reloads, time in the SQL front end, paginate outcomes and the
 * bookmark gauge, DELAYED rows staged and flushed per rule and staging
 * table (each table a default rule derived has its own series), and the flush
 * duration histogram (see http/http_impl.h).
 *
 * HTTP thread. Reads relaxed atomics other threads write, and the
 * per-rule entries of stats/rule_stats.h (never freed, found without a lock).
 */
#include <event2/buffer.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "http/http_impl.h"
#include "myrewrite/base/counters.h"
#include "myrewrite/delayed/derive.h"
#include "myrewrite/delayed/flush.h"
#include "myrewrite/delayed/reject.h"
#include "myrewrite/net/tls_reload.h"
#include "myrewrite/net/tls_resume.h"
#include "myrewrite/paginate/stats.h"
#include "myrewrite/session/reload.h"
#include "myrewrite/session/worker.h"
#include "myrewrite/stats/rule_stats.h"

#define W(field) offsetof(mr_stats, field)

static void counter(struct evbuffer *out, const char *name, const char *help, uint64_t v)
{
    mr_metrics_family(out, name, "counter", help);
    mr_metrics_sample(out, name, v);
}

/* name{k1="v1",k2="v2"} v; the second label is left out when k2 is NULL. */
static void labeled2(struct evbuffer *out, const char *name, const char *k1, const char *v1,
                     const char *k2, const char *v2, uint64_t v)
{
    evbuffer_add_printf(out, "%s{%s=\"", name, k1);
    mr_metrics_label_value(out, v1);
    if (k2) {
        evbuffer_add_printf(out, "\",%s=\"", k2);
        mr_metrics_label_value(out, v2 ? v2 : "");
    }
    evbuffer_add_printf(out, "\"} %" PRIu64 "\n", v);
}

/* A labeled family is written only once it has a sample: the format has no
 * place for a TYPE line without one. */
static bool have_kind(mr_rule_type kind)
{
    for (size_t i = 0; i < mr_rule_stats_count(); i++)
        if (mr_rule_stats_at(i)->kind == kind)
            return true;
    return false;
}

static void write_reloads(struct evbuffer *out)
{
    static const char name[] = "myrewrite_rules_reloads_total";
    mr_reload_counts c = mr_rules_reload_counts();
    mr_metrics_family(out, name, "counter",
                      "Rule reloads (SIGHUP, RELOAD RULES) by result: ok swapped a new set in, "
                      "failed kept the old one.");
    labeled2(out, name, "result", "ok", NULL, NULL, c.ok);
    labeled2(out, name, "result", "failed", NULL, NULL, c.failed);
    static const char tls[] = "myrewrite_tls_reloads_total";
    mr_tls_reload_counts t = mr_tls_reload_counts_get();
    mr_metrics_family(out, tls, "counter",
                      "TLS certificate reloads (SIGHUP when a file changed, RELOAD TLS) by "
                      "result: ok swapped new contexts in, failed kept the old ones.");
    labeled2(out, tls, "result", "ok", NULL, NULL, t.ok);
    labeled2(out, tls, "result", "failed", NULL, NULL, t.failed);
}

static void write_tls_handshakes(struct evbuffer *out)
{
    static const char name[] = "myrewrite_tls_handshakes_total";
    mr_tls_handshake_counts h = mr_tls_handshake_counts_get();
    mr_metrics_family(out, name, "counter",
                      "Finished TLS handshakes by leg (client: clients to the proxy; backend: "
                      "the proxy to the server) and whether a session was resumed.");
    labeled2(out, name, "leg", "client", "resumed", "no", h.client_full);
    labeled2(out, name, "leg", "client", "resumed", "yes", h.client_resumed);
    labeled2(out, name, "leg", "backend", "resumed", "no", h.backend_full);
    labeled2(out, name, "leg", "backend", "resumed", "yes", h.backend_resumed);
}

/* Nanoseconds as seconds with all nine decimals: exact, not a float. */
static void write_frontend(mr_proxy *p, struct evbuffer *out)
{
    static const char secs[] = "myrewrite_frontend_seconds_total";
    uint64_t ns = mr_metrics_worker_sum(p, W(frontend_ns));
    counter(out, "myrewrite_frontend_statements_total",
            "COM_QUERY and COM_STMT_PREPARE texts run through the SQL front end.",
            mr_metrics_worker_sum(p, W(frontend_statements)));
    mr_metrics_family(out, secs, "counter",
                      "Time spent in the SQL front end (digest and rules), CLOCK_MONOTONIC.");
    evbuffer_add_printf(out, "%s %" PRIu64 ".%09" PRIu64 "\n", secs, ns / 1000000000u,
                        ns % 1000000000u);
}

static void write_paginate(mr_proxy *p, struct evbuffer *out)
{
    static const char per_rule[] = "myrewrite_paginate_rule_pages_total";
    counter(out, "myrewrite_paginate_deferred_total",
            "Deep pages sent as a deferred join by paginate rules.",
            mr_metrics_worker_sum(p, W(paginate_deferred)));
    counter(out, "myrewrite_paginate_refused_total",
            "Pages refused because their offset was beyond a paginate rule's max_offset.",
            mr_metrics_worker_sum(p, W(paginate_refused)));
    counter(out, "myrewrite_paginate_keyset_hits_total",
            "Keyset page reads that found their bookmark.",
            mr_metrics_worker_sum(p, W(paginate_keyset_hits)));
    counter(out, "myrewrite_paginate_keyset_misses_total",
            "Keyset page reads that found no bookmark.",
            mr_metrics_worker_sum(p, W(paginate_keyset_misses)));
    mr_metrics_family(out, "myrewrite_paginate_bookmarks", "gauge",
                      "Keyset bookmarks the proxy holds now.");
    mr_metrics_sample(out, "myrewrite_paginate_bookmarks", mr_keyset_bookmarks());
    if (!have_kind(MR_RULE_PAGINATE))
        return;
    mr_metrics_family(out, per_rule, "counter",
                      "Pages each paginate rule rewrote (deferred), refused, or read by "
                      "keyset (keyset_hit: a seek; keyset_miss: no bookmark), by rule name; "
                      "kept across reloads.");
    for (size_t i = 0; i < mr_rule_stats_count(); i++) {
        mr_rule_stats *e = mr_rule_stats_at(i);
        if (e->kind != MR_RULE_PAGINATE)
            continue;
        labeled2(out, per_rule, "rule", e->name, "outcome", "deferred",
                 atomic_load_explicit(&e->deferred, memory_order_relaxed));
        labeled2(out, per_rule, "rule", e->name, "outcome", "refused",
                 atomic_load_explicit(&e->refused, memory_order_relaxed));
        labeled2(out, per_rule, "rule", e->name, "outcome", "keyset_hit",
                 atomic_load_explicit(&e->keyset_hits, memory_order_relaxed));
        labeled2(out, per_rule, "rule", e->name, "outcome", "keyset_miss",
                 atomic_load_explicit(&e->keyset_misses, memory_order_relaxed));
    }
}

/* The staging-table series of entry e: its own, or for a default rule
 * (whose staging table is a {table} pattern) those of each table it
 * derived, so that a sum over the family counts every row once. */
static void delayed_series(struct evbuffer *out, const char *family, mr_rule_stats *e, bool flushed)
{
    if (!strstr(e->staging ? e->staging : "", "{table}")) {
        labeled2(out, family, "rule", e->name, "table", e->staging,
                 flushed ? mr_stat_get(&e->flushed)
                         : atomic_load_explicit(&e->staged, memory_order_relaxed));
        return;
    }
    struct mr_derive_reg *g = mr_delayed_derived();
    size_t n = 0;
    mr_rule_stats **v = g ? mr_derive_stats_of(g, e->name, &n) : NULL;
    for (size_t k = 0; k < n; k++)
        labeled2(out, family, "rule", v[k]->name, "table", v[k]->staging,
                 flushed ? mr_stat_get(&v[k]->flushed)
                         : atomic_load_explicit(&v[k]->staged, memory_order_relaxed));
    free(v);
}

static void write_delayed_tables(mr_proxy *p, struct evbuffer *out)
{
    static const char staged[] = "myrewrite_delayed_table_rows_staged_total";
    static const char flushed[] = "myrewrite_delayed_table_rows_flushed_total";
    counter(out, "myrewrite_delayed_rows_staged_total",
            "Staging rows in UPDATE/DELETE DELAYED statements the proxy sent.",
            mr_metrics_worker_sum(p, W(delayed_rows_staged)));
    if (!have_kind(MR_RULE_DELAYED))
        return;
    mr_metrics_family(out, staged, "counter",
                      "Staging rows sent, by delayed rule and staging table.");
    for (size_t i = 0; i < mr_rule_stats_count(); i++)
        if (mr_rule_stats_at(i)->kind == MR_RULE_DELAYED)
            delayed_series(out, staged, mr_rule_stats_at(i), false);
    mr_metrics_family(out, flushed, "counter",
                      "Staged rows applied by the flusher, by delayed rule and staging table.");
    for (size_t i = 0; i < mr_rule_stats_count(); i++)
        if (mr_rule_stats_at(i)->kind == MR_RULE_DELAYED)
            delayed_series(out, flushed, mr_rule_stats_at(i), true);
}

/* Rows moved to dead-letter tables (delayed/reject.h), by table; written
 * once a table has had one. */
static void write_delayed_rejected(struct evbuffer *out)
{
    static const char name[] = "myrewrite_delayed_rejected_total";
    char table[140];
    uint64_t rows;
    for (size_t i = 0; mr_dreject_table_at(i, table, sizeof table, &rows); i++) {
        if (i == 0)
            mr_metrics_family(out, name, "counter",
                              "DELAYED rows the server refused at flush, moved to the table's "
                              "<table>_delayed_rejected dead-letter table, by table.");
        labeled2(out, name, "table", table, NULL, NULL, rows);
    }
}

static void us_as_seconds(struct evbuffer *out, uint64_t us)
{
    evbuffer_add_printf(out, "%" PRIu64 ".%06" PRIu64, us / 1000000u, us % 1000000u);
}

static void write_flush_histogram(struct evbuffer *out)
{
    static const char name[] = "myrewrite_delayed_flush_duration_seconds";
    mr_flush_histogram h;
    mr_flush_histogram_get(&h);
    mr_metrics_family(out, name, "histogram",
                      "Duration of DELAYED flush rounds that held the flush lock, one per table "
                      "and round.");
    for (size_t b = 0; b < MR_FLUSH_BUCKETS; b++)
        evbuffer_add_printf(out, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", name, mr_flush_bucket_le[b],
                            h.bucket[b]);
    evbuffer_add_printf(out, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, h.count);
    evbuffer_add_printf(out, "%s_sum ", name);
    us_as_seconds(out, h.sum_us);
    evbuffer_add_printf(out, "\n%s_count %" PRIu64 "\n", name, h.count);
}

void mr_metrics_write_ops(mr_proxy *p, struct evbuffer *out)
{
    write_reloads(out);
    write_tls_handshakes(out);
    write_frontend(p, out);
    write_paginate(p, out);
    write_delayed_tables(p, out);
    write_delayed_rejected(out);
    write_flush_histogram(out);
}
