/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http/metrics_pool.c - the /metrics families of the pool (pool =
 * transaction): server connections by state, sessions waiting, waits and
 * their duration histogram, pins by reason (see pool/pool.h). With pool =
 * session the series are there and stay 0.
 *
 * HTTP thread; copies each worker pool's counters under its lock.
 */
#include <event2/buffer.h>
#include <inttypes.h>

#include "http/http_impl.h"
#include "myrewrite/pool/pool.h"
#include "myrewrite/session/worker.h"

static void labeled(struct evbuffer *out, const char *name, const char *label, const char *value,
                    uint64_t v)
{
    evbuffer_add_printf(out, "%s{%s=\"", name, label);
    mr_metrics_label_value(out, value);
    evbuffer_add_printf(out, "\"} %" PRIu64 "\n", v);
}

static void write_wait_histogram(struct evbuffer *out, const mr_pool_totals *t)
{
    static const char *name = "myrewrite_pool_wait_seconds";
    mr_metrics_family(out, name, "histogram",
                      "How long sessions waited for a server connection of the pool (or for "
                      "room to log in).");
    uint64_t cum = 0, lim_us = 1000;
    for (unsigned i = 0; i < MR_POOL_WAIT_BUCKETS - 1; i++, lim_us *= 4) {
        cum += t->wait_us_buckets[i];
        evbuffer_add_printf(out, "%s_bucket{le=\"%" PRIu64 ".%06" PRIu64 "\"} %" PRIu64 "\n", name,
                            lim_us / 1000000, lim_us % 1000000, cum);
    }
    cum += t->wait_us_buckets[MR_POOL_WAIT_BUCKETS - 1];
    evbuffer_add_printf(out, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cum);
    evbuffer_add_printf(out, "%s_sum %" PRIu64 ".%06" PRIu64 "\n", name, t->wait_us_sum / 1000000,
                        t->wait_us_sum % 1000000);
    evbuffer_add_printf(out, "%s_count %" PRIu64 "\n", name, cum);
}

static void counter(struct evbuffer *out, const char *name, const char *type, const char *help,
                    uint64_t v)
{
    mr_metrics_family(out, name, type, help);
    mr_metrics_sample(out, name, v);
}

void mr_metrics_write_pool(mr_proxy *p, struct evbuffer *out)
{
    mr_pool_totals t = {0};
    for (unsigned i = 0; i < p->nworkers; i++)
        if (p->workers[i].pool)
            mr_pool_counters(p->workers[i].pool, &t);
    static const char *conns = "myrewrite_pool_server_connections";
    mr_metrics_family(out, conns, "gauge", "Server connections of the pool, by state.");
    labeled(out, conns, "state", "active", t.connections - t.idle - t.logins);
    labeled(out, conns, "state", "idle", t.idle);
    labeled(out, conns, "state", "login", t.logins);
    counter(out, "myrewrite_pool_sessions_waiting", "gauge",
            "Sessions waiting for a server connection now.", t.waiting);
    counter(out, "myrewrite_pool_waits_total", "counter",
            "Times a session (or a login) waited for a server connection.", t.waits);
    counter(out, "myrewrite_pool_wait_timeouts_total", "counter",
            "Waits that ended in ERR 1040 after pool_max_wait.", t.wait_timeouts);
    counter(out, "myrewrite_pool_evictions_total", "counter",
            "Idle server connections closed to make room for a login.", t.evictions);
    counter(out, "myrewrite_pool_replays_total", "counter",
            "Session states replayed on a borrowed connection (one SET).", t.replays);
    counter(out, "myrewrite_pool_resets_total", "counter",
            "COM_RESET_CONNECTION sent to clear another session's state.", t.resets);
    counter(out, "myrewrite_pool_moves_total", "counter",
            "Idle server connections moved from one worker thread to another.", t.moves);
    write_wait_histogram(out, &t);
    static const char *pins = "myrewrite_pool_pins_total", *now = "myrewrite_pool_pinned_sessions";
    mr_metrics_family(out, pins, "counter",
                      "Times a session was pinned to its server connection, by reason.");
    for (unsigned r = 0; r < MR_PIN_REASONS; r++)
        labeled(out, pins, "reason", mr_pin_reason_name((mr_pin_reason)r), t.pins[r]);
    mr_metrics_family(out, now, "gauge", "Sessions pinned now, by reason.");
    for (unsigned r = 0; r < MR_PIN_REASONS; r++)
        labeled(out, now, "reason", mr_pin_reason_name((mr_pin_reason)r), t.pinned[r]);
}
