/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http/metrics.c - the /metrics page in the Prometheus text exposition
 * format, version 0.0.4 (see http/http.h).
 *
 * HTTP thread. Sums the workers' counters (single-writer relaxed atomics),
 * reads the hit counters of the rule set in force (one reference taken and
 * released here) and the queue counters. Writes into the caller's evbuffer
 * and keeps nothing between calls.
 */
#include "myrewrite/http/http.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "http/http_impl.h"
#include "myrewrite/admin/admin.h"
#include "myrewrite/base/counters.h"
#include "myrewrite/delayed/flush.h"
#include "myrewrite/delayed/group.h"
#include "myrewrite/delayed/mem.h"
#include "myrewrite/net/listen_guard.h"
#include "myrewrite/queue/release.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/schema/cache.h"
#include "myrewrite/session/reload.h"
#include "myrewrite/session/worker.h"
#include "myrewrite/stats/rule_hits.h"

typedef struct counter_def {
    const char *name;
    const char *type; /* "counter" or "gauge" */
    const char *help;
    size_t offset; /* of the mr_counter in mr_stats or mr_queue_stats (uint64_t in
                      mr_dmem_stats) */
} counter_def;

#define W(field) offsetof(mr_stats, field)
#define Q(field) offsetof(mr_queue_stats, field)
#define D(field) offsetof(mr_delayed_stats, field)
#define SC(field) offsetof(mr_schema_cache_stats, field)
#define G(field) offsetof(mr_dgroup_stats, field)
#define A(field) offsetof(mr_admin_stats, field)
#define L(field) offsetof(mr_listen_stats, field)

static const counter_def worker_counters[] = {
    {"myrewrite_connections_accepted_total", "counter", "Client connections taken by a worker.",
     W(connections_accepted)},
    {"myrewrite_connections_active", "gauge", "Client connections open now.",
     W(connections_active)},
    {"myrewrite_commands_total", "counter",
     "Client commands relayed whose response reached its end.", W(commands)},
    {"myrewrite_commands_refused_total", "counter",
     "Client commands refused with ERR 1047 (replication and obsolete commands).",
     W(commands_refused)},
    {"myrewrite_statements_rewritten_total", "counter",
     "Statements sent to the backend in a form rewritten by a rule.", W(statements_rewritten)},
    {"myrewrite_statements_blocked_total", "counter",
     "Statements answered with an error instead of being sent (block rules, DELAYED and "
     "paginate refusals, unreadable = block).",
     W(statements_blocked)},
    {"myrewrite_statements_unexamined_total", "counter",
     "COM_QUERY and COM_STMT_PREPARE texts larger than relay_buffer, relayed without meeting "
     "the rules.",
     W(statements_unexamined)},
    {"myrewrite_session_state_errors_total", "counter",
     "Session state changes the proxy's transition table does not allow (a bug: each is "
     "logged).",
     W(state_errors)},
    {"myrewrite_delayed_parked_total", "counter",
     "DELAYED statements whose rule names no key, held in their session until the schema "
     "cache had the table's key (or delayed_park_timeout passed).",
     W(delayed_parked)},
    {"myrewrite_delayed_park_timeouts_total", "counter",
     "Parked DELAYED statements answered with an ERR after delayed_park_timeout.",
     W(delayed_park_timeouts)},
    {"myrewrite_delayed_read_pending_total", "counter",
     "Point reads of delayed counters rewritten by read_pending to add the deltas still "
     "pending (a prepared statement once, at its prepare).",
     W(delayed_read_pending)},
    {"myrewrite_bytes_from_clients_total", "counter",
     "Bytes of MySQL protocol packets read from clients, headers included.", W(bytes_from_clients)},
    {"myrewrite_bytes_from_backend_total", "counter",
     "Bytes of MySQL protocol packets read from the backend, headers included.",
     W(bytes_from_backend)},
};

static const counter_def queue_counters[] = {
    {"myrewrite_queue_release_runs_total", "counter",
     "Ended sessions whose queue claims were released.", Q(release_runs)},
    {"myrewrite_queue_rows_released_total", "counter",
     "Queue rows given back when the session that claimed them ended.", Q(rows_released)},
    {"myrewrite_queue_kills_total", "counter",
     "Backend connections of ended sessions killed before their release.", Q(kills)},
    {"myrewrite_queue_reaper_runs_total", "counter", "Reaper rounds that held the lock.",
     Q(reaper_runs)},
    {"myrewrite_queue_reaper_skipped_total", "counter",
     "Reaper rounds skipped because another proxy held the lock.", Q(reaper_skipped)},
    {"myrewrite_queue_reaper_rows_total", "counter", "Zombie queue rows given back by the reaper.",
     Q(reaper_rows)},
    {"myrewrite_queue_errors_total", "counter",
     "Failed statements on the proxy's own backend connection.", Q(errors)},
    {"myrewrite_queue_gave_up_total", "counter",
     "Ended sessions whose backend connection was still listed 30 s later (left to the reaper).",
     Q(gave_up)},
    {"myrewrite_queue_no_process_total", "counter",
     "Own connections dropped because proxy_user lacks the PROCESS privilege.", Q(no_process)},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The counters are only ever read here; the cast drops const for mr_stat_get. */
static uint64_t read_counter(const void *base, size_t offset)
{
    return mr_stat_get((mr_counter *)((uintptr_t)base + offset));
}

void mr_metrics_family(struct evbuffer *out, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void mr_metrics_sample(struct evbuffer *out, const char *name, uint64_t v)
{
    evbuffer_add_printf(out, "%s %" PRIu64 "\n", name, v);
}

/* A label value with \, " and newline escaped as the format requires. */
void mr_metrics_label_value(struct evbuffer *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            evbuffer_add(out, "\\\\", 2);
        else if (*s == '"')
            evbuffer_add(out, "\\\"", 2);
        else if (*s == '\n')
            evbuffer_add(out, "\\n", 2);
        else
            evbuffer_add(out, s, 1);
    }
}

static void labeled(struct evbuffer *out, const char *name, const char *label, const char *value,
                    uint64_t v)
{
    evbuffer_add_printf(out, "%s{%s=\"", name, label);
    mr_metrics_label_value(out, value);
    evbuffer_add_printf(out, "\"} %" PRIu64 "\n", v);
}

uint64_t mr_metrics_worker_sum(mr_proxy *p, size_t offset)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < p->nworkers; i++)
        total += read_counter(&p->workers[i].stats, offset);
    return total;
}

static void write_worker_counters(mr_proxy *p, struct evbuffer *out)
{
    for (size_t i = 0; i < COUNT(worker_counters); i++) {
        const counter_def *c = &worker_counters[i];
        mr_metrics_family(out, c->name, c->type, c->help);
        mr_metrics_sample(out, c->name, mr_metrics_worker_sum(p, c->offset));
    }
}

/* Kept in microseconds, shown in seconds as the format's convention asks. */
static void write_park_wait(mr_proxy *p, struct evbuffer *out)
{
    static const char name[] = "myrewrite_delayed_park_wait_seconds_total";
    mr_metrics_family(out, name, "counter",
                      "Seconds parked DELAYED statements waited in all "
                      "(divided by myrewrite_delayed_parked_total: the mean wait).");
    uint64_t us = mr_metrics_worker_sum(p, W(delayed_park_wait_us));
    evbuffer_add_printf(out, "%s %" PRIu64 ".%06" PRIu64 "\n", name, us / 1000000, us % 1000000);
}

static void write_closes(mr_proxy *p, struct evbuffer *out)
{
    static const char name[] = "myrewrite_connection_closes_total";
    mr_metrics_family(out, name, "counter", "Client connections ended, by reason.");
    for (int r = 0; r < MR_CLOSE_MAX; r++)
        labeled(
            out, name, "reason", mr_close_reason_name((mr_close_reason)r),
            mr_metrics_worker_sum(p, offsetof(mr_stats, closes) + (size_t)r * sizeof(mr_counter)));
}

static void write_unreadable(mr_proxy *p, struct evbuffer *out)
{
    static const char name[] = "myrewrite_statements_unreadable_total";
    mr_metrics_family(out, name, "counter",
                      "COM_QUERY and COM_STMT_PREPARE texts the proxy could not read, by what "
                      "the unreadable setting did: relayed unexamined (pass) or refused (block).");
    labeled(out, name, "action", "pass", mr_metrics_worker_sum(p, W(unreadable_passed)));
    labeled(out, name, "action", "block", mr_metrics_worker_sum(p, W(unreadable_blocked)));
}

static void write_rules(mr_proxy *p, struct evbuffer *out)
{
    static const char hits[] = "myrewrite_rule_hits_total";
    mr_shared_rules *cur = mr_rules_current(p);
    const mr_ruleset *rs = cur ? cur->set : NULL;
    size_t n = mr_ruleset_count(rs);
    mr_metrics_family(out, "myrewrite_rules_loaded", "gauge", "Rules in the rule set in force.");
    mr_metrics_sample(out, "myrewrite_rules_loaded", n);
    mr_metrics_family(
        out, hits, "counter",
        "Statements each rule matched since the proxy started, across reloads, by rule "
        "name.");
    for (size_t i = 0; i < n; i++)
        labeled(out, hits, "rule", mr_ruleset_rule(rs, i)->name, mr_rule_hits_total(rs, i));
    if (cur)
        mr_shared_rules_release(cur);
}

static const counter_def delayed_counters[] = {
    {"myrewrite_delayed_flush_rounds_total", "counter",
     "DELAYED flush rounds that held the flush lock.", D(rounds)},
    {"myrewrite_delayed_flush_skipped_total", "counter",
     "DELAYED flush rounds skipped because another proxy held the lock.", D(skipped)},
    {"myrewrite_delayed_chunks_total", "counter", "DELAYED flush transactions committed.",
     D(chunks)},
    {"myrewrite_delayed_rows_flushed_total", "counter", "Staged DELAYED rows applied.", D(rows)},
    {"myrewrite_delayed_keys_written_total", "counter", "Distinct keys written by DELAYED flushes.",
     D(keys)},
    {"myrewrite_delayed_errors_total", "counter",
     "Failed DELAYED flush statements (the chunk was rolled back and retried).", D(errors)},
};

/* A family and its one sample per counter of a background thread's stats
 * block `base` (NULL before the thread started: zeros). */
static void write_counters(struct evbuffer *out, const counter_def *defs, size_t n,
                           const void *base)
{
    for (size_t i = 0; i < n; i++) {
        mr_metrics_family(out, defs[i].name, defs[i].type, defs[i].help);
        mr_metrics_sample(out, defs[i].name, base ? read_counter(base, defs[i].offset) : 0);
    }
}

static const counter_def group_counters[] = {
    {"myrewrite_delayed_group_batches_total", "counter",
     "Group-commit batches of staged DELAYED statements run (committed or failed).", G(batches)},
    {"myrewrite_delayed_group_failed_total", "counter",
     "Group-commit batches whose INSERT failed: every statement of it got the ERR.", G(failed)},
    {"myrewrite_delayed_group_statements_total", "counter",
     "Statements answered by a group-commit batch.", G(statements)},
    {"myrewrite_delayed_group_rows_total", "counter",
     "Staging rows committed by group-commit batches (divided by batches_total: rows per "
     "batch).",
     G(rows)},
    {"myrewrite_delayed_group_merged_total", "counter",
     "Of those rows, the ones summed into another row of the same key and batch (rows_total "
     "minus this: the rows the server inserted).",
     G(merged)},
    {"myrewrite_delayed_group_parked_total", "counter",
     "Grouped statements whose batch waited for its staging table to be created.", G(parked)},
};

/* A counter kept in microseconds, shown in seconds. */
static void write_seconds(struct evbuffer *out, const char *name, const char *help, uint64_t us)
{
    mr_metrics_family(out, name, "counter", help);
    evbuffer_add_printf(out, "%s %" PRIu64 ".%06" PRIu64 "\n", name, us / 1000000, us % 1000000);
}

static void write_group_wait(struct evbuffer *out)
{
    const mr_dgroup_stats *g = mr_dgroup_stats_get();
    write_seconds(out, "myrewrite_delayed_group_wait_seconds_total",
                  "Seconds grouped DELAYED "
                  "statements waited for their batch in all, submit to answer (divided by "
                  "statements_total: the mean wait).",
                  read_counter(g, G(wait_us)));
    write_seconds(out, "myrewrite_delayed_group_park_wait_seconds_total",
                  "Seconds parked "
                  "grouped statements waited for their staging table in all (divided by "
                  "parked_total: the mean wait).",
                  read_counter(g, G(park_wait_us)));
}

static void write_delayed(struct evbuffer *out)
{
    write_counters(out, delayed_counters, COUNT(delayed_counters), mr_delayed_stats_get());
    write_counters(out, group_counters, COUNT(group_counters), mr_dgroup_stats_get());
    write_group_wait(out);
}

static const counter_def schema_counters[] = {
    {"myrewrite_schema_cache_hits_total", "counter",
     "Table key lookups answered from the schema cache.", SC(hits)},
    {"myrewrite_schema_cache_misses_total", "counter",
     "Table key lookups that found nothing loaded (the statement went on without the key).",
     SC(misses)},
    {"myrewrite_schema_cache_loads_total", "counter",
     "Tables read from information_schema by the schema cache.", SC(loads)},
    {"myrewrite_schema_cache_load_errors_total", "counter", "Schema cache loads that failed.",
     SC(load_errors)},
    {"myrewrite_schema_cache_invalidations_total", "counter",
     "Schema cache entries dropped by DDL sent through the proxy.", SC(invalidations)},
    {"myrewrite_schema_cache_evictions_total", "counter",
     "Schema cache entries dropped to stay within schema_cache_max_tables.", SC(evictions)},
};

static void write_schema_cache(struct evbuffer *out)
{
    write_counters(out, schema_counters, COUNT(schema_counters), mr_schema_cache_stats_get());
}

/* Memory mode (delayed/mem.h): a snapshot, plain numbers. */
#define M(field) offsetof(mr_dmem_stats, field)
static const counter_def memory_counters[] = {
    {"myrewrite_delayed_memory_statements_total", "counter",
     "DELAYED statements taken into memory (mode = memory).", M(statements)},
    {"myrewrite_delayed_memory_refused_total", "counter",
     "Memory-mode DELAYED statements refused at memory_max_keys.", M(refused)},
    {"myrewrite_delayed_memory_keys_held", "gauge", "Keys held in memory, waiting for a flush.",
     M(keys_held)},
    {"myrewrite_delayed_memory_rounds_total", "counter",
     "Memory flush rounds that flushed at least one table.", M(rounds)},
    {"myrewrite_delayed_memory_chunks_total", "counter", "Memory flush transactions committed.",
     M(chunks)},
    {"myrewrite_delayed_memory_keys_written_total", "counter",
     "Keys written by committed memory flushes.", M(keys)},
    {"myrewrite_delayed_memory_errors_total", "counter",
     "Failed memory flush chunks (kept and retried).", M(errors)},
    {"myrewrite_delayed_memory_keys_lost_total", "counter",
     "Keys dropped after a COMMIT whose outcome is unknown (connection lost).", M(lost)},
};

static void write_memory(struct evbuffer *out)
{
    mr_dmem_stats m;
    mr_dmem_stats_read(&m);
    for (size_t i = 0; i < COUNT(memory_counters); i++) {
        const counter_def *c = &memory_counters[i];
        uint64_t v;
        memcpy(&v, (const char *)&m + c->offset, sizeof v);
        mr_metrics_family(out, c->name, c->type, c->help);
        mr_metrics_sample(out, c->name, v);
    }
}

static const counter_def admin_counters[] = {
    {"myrewrite_admin_login_failures_total", "counter",
     "Admin console logins refused: wrong user or password.", A(login_failures)},
    {"myrewrite_admin_login_backoff_total", "counter",
     "Admin console connections refused at once: their address was waiting out the back-off "
     "of its failed logins.",
     A(login_backoff)},
    {"myrewrite_admin_login_evicted_total", "counter",
     "Admin console connections that had not logged in, closed to make room for a newer one.",
     A(login_evicted)},
    {"myrewrite_admin_login_timeouts_total", "counter",
     "Admin console connections that did not log in within admin_login_timeout.",
     A(login_timeouts)},
};

static const counter_def listen_counters[] = {
    {"myrewrite_accept_failures_total", "counter",
     "Failed accepts on any listener (clients, console, HTTP), such as out of file descriptors.",
     L(accept_failures)},
    {"myrewrite_accept_refused_total", "counter",
     "Connections accepted only to be refused: out of file descriptors, or the HTTP endpoint "
     "at http_max_connections.",
     L(refused)},
    {"myrewrite_accept_pauses_total", "counter",
     "Pauses of a listener after a failed accept (50 ms doubling to 1 s).", L(pauses)},
};

static void write_admin(struct evbuffer *out)
{
    write_counters(out, admin_counters, COUNT(admin_counters), mr_admin_stats_get());
}

static void write_listeners(struct evbuffer *out)
{
    write_counters(out, listen_counters, COUNT(listen_counters), mr_listen_stats_get());
}

static void write_queue(struct evbuffer *out)
{
    write_counters(out, queue_counters, COUNT(queue_counters), mr_queue_stats_get());
}

static void write_process(mr_proxy *p, struct evbuffer *out)
{
    mr_metrics_family(out, "myrewrite_build_info", "gauge",
                      "Always 1; the version is in the label.");
    labeled(out, "myrewrite_build_info", "version", MYREWRITE_VERSION, 1);
    mr_metrics_family(out, "myrewrite_workers", "gauge", "Worker threads.");
    mr_metrics_sample(out, "myrewrite_workers", p->nworkers);
}

void mr_metrics_write(mr_proxy *p, struct evbuffer *out)
{
    write_process(p, out);
    write_worker_counters(p, out);
    write_park_wait(p, out);
    write_closes(p, out);
    write_unreadable(p, out);
    write_rules(p, out);
    write_queue(out);
    write_admin(out);
    write_listeners(out);
    write_delayed(out);
    mr_metrics_write_ops(p, out);
    mr_metrics_write_pool(p, out);
    write_schema_cache(out);
    write_memory(out);
}
