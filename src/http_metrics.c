/*
 * http_metrics.c - the /metrics page in the Prometheus text exposition
 * format, version 0.0.4 (see http.h).
 *
 * HTTP thread. Sums the workers' counters (single-writer relaxed atomics),
 * reads the hit counters of the rule set in force (one reference taken and
 * released here) and the queue counters. Writes into the caller's evbuffer
 * and keeps nothing between calls.
 */
#include "myrewrite/http.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "myrewrite/delayed_flush.h"
#include "myrewrite/delayed_mem.h"
#include "myrewrite/queue.h"
#include "myrewrite/reload.h"
#include "myrewrite/rules.h"
#include "myrewrite/stats.h"
#include "myrewrite/worker.h"

typedef struct counter_def {
    const char *name;
    const char *type; /* "counter" or "gauge" */
    const char *help;
    size_t offset;    /* of the mr_counter in mr_stats or mr_queue_stats (uint64_t in
                         mr_dmem_stats) */
} counter_def;

#define W(field) offsetof(mr_stats, field)
#define Q(field) offsetof(mr_queue_stats, field)
#define D(field) offsetof(mr_delayed_stats, field)

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
     "Statements answered with a block rule's error instead of being sent.",
     W(statements_blocked)},
    {"myrewrite_bytes_from_clients_total", "counter",
     "Bytes of MySQL protocol packets read from clients, headers included.",
     W(bytes_from_clients)},
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
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The counters are only ever read here; the cast drops const for mr_stat_get. */
static uint64_t read_counter(const void *base, size_t offset)
{
    return mr_stat_get((mr_counter *)((uintptr_t)base + offset));
}

static void family(struct evbuffer *out, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(struct evbuffer *out, const char *name, uint64_t v)
{
    evbuffer_add_printf(out, "%s %" PRIu64 "\n", name, v);
}

/* A label value with \, " and newline escaped as the format requires. */
static void label_value(struct evbuffer *out, const char *s)
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
    label_value(out, value);
    evbuffer_add_printf(out, "\"} %" PRIu64 "\n", v);
}

static uint64_t worker_sum(mr_proxy *p, size_t offset)
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
        family(out, c->name, c->type, c->help);
        sample(out, c->name, worker_sum(p, c->offset));
    }
}

static void write_closes(mr_proxy *p, struct evbuffer *out)
{
    static const char name[] = "myrewrite_connection_closes_total";
    family(out, name, "counter", "Client connections ended, by reason.");
    for (int r = 0; r < MR_CLOSE_MAX; r++)
        labeled(out, name, "reason", mr_close_reason_name((mr_close_reason)r),
                worker_sum(p, offsetof(mr_stats, closes) + (size_t)r * sizeof(mr_counter)));
}

static void write_rules(mr_proxy *p, struct evbuffer *out)
{
    static const char hits[] = "myrewrite_rule_hits_total";
    mr_shared_rules *cur = mr_rules_current(p);
    const mr_ruleset *rs = cur ? cur->set : NULL;
    size_t n = mr_ruleset_count(rs);
    family(out, "myrewrite_rules_loaded", "gauge", "Rules in the rule set in force.");
    sample(out, "myrewrite_rules_loaded", n);
    family(out, hits, "counter",
           "Statements each rule matched; starts again from 0 when the rules are reloaded.");
    for (size_t i = 0; i < n; i++)
        labeled(out, hits, "rule", mr_ruleset_rule(rs, i)->name, mr_ruleset_hits(rs, i));
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
    {"myrewrite_delayed_keys_written_total", "counter",
     "Distinct keys written by DELAYED flushes.", D(keys)},
    {"myrewrite_delayed_errors_total", "counter",
     "Failed DELAYED flush statements (the chunk was rolled back and retried).", D(errors)},
};

static void write_delayed(struct evbuffer *out)
{
    const mr_delayed_stats *d = mr_delayed_stats_get();
    for (size_t i = 0; i < COUNT(delayed_counters); i++) {
        const counter_def *c = &delayed_counters[i];
        family(out, c->name, c->type, c->help);
        sample(out, c->name, d ? read_counter(d, c->offset) : 0);
    }
}

/* Memory mode (delayed_mem.h): a snapshot, plain numbers. */
#define M(field) offsetof(mr_dmem_stats, field)
static const counter_def memory_counters[] = {
    {"myrewrite_delayed_memory_statements_total", "counter",
     "DELAYED statements taken into memory (mode = memory).", M(statements)},
    {"myrewrite_delayed_memory_refused_total", "counter",
     "Memory-mode DELAYED statements refused at memory_max_keys.", M(refused)},
    {"myrewrite_delayed_memory_keys_held", "gauge",
     "Keys held in memory, waiting for a flush.", M(keys_held)},
    {"myrewrite_delayed_memory_rounds_total", "counter",
     "Memory flush rounds that flushed at least one table.", M(rounds)},
    {"myrewrite_delayed_memory_chunks_total", "counter",
     "Memory flush transactions committed.", M(chunks)},
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
        family(out, c->name, c->type, c->help);
        sample(out, c->name, v);
    }
}

static void write_queue(struct evbuffer *out)
{
    const mr_queue_stats *q = mr_queue_stats_get();
    for (size_t i = 0; i < COUNT(queue_counters); i++) {
        const counter_def *c = &queue_counters[i];
        family(out, c->name, c->type, c->help);
        sample(out, c->name, q ? read_counter(q, c->offset) : 0);
    }
}

static void write_process(mr_proxy *p, struct evbuffer *out)
{
    family(out, "myrewrite_build_info", "gauge", "Always 1; the version is in the label.");
    labeled(out, "myrewrite_build_info", "version", MYREWRITE_VERSION, 1);
    family(out, "myrewrite_workers", "gauge", "Worker threads.");
    sample(out, "myrewrite_workers", p->nworkers);
}

void mr_metrics_write(mr_proxy *p, struct evbuffer *out)
{
    write_process(p, out);
    write_worker_counters(p, out);
    write_closes(p, out);
    write_rules(p, out);
    write_queue(out);
    write_delayed(out);
    write_memory(out);
}
