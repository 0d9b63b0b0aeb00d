/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/show.c - the admin console's SHOW VERSION, CONFIG, STATS, BACKENDS
 * and QUEUES (see admin/admin_impl.h).
 *
 * Admin console thread. Reads counters other threads write (relaxed
 * atomics, see base/counters.h) and the read-only configuration; owns nothing
 * beyond one call.
 */
#include <event2/event.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin_impl.h"
#include "myrewrite/admin/proto.h"
#include "myrewrite/base/config.h"
#include "myrewrite/base/counters.h"
#include "myrewrite/delayed/mem.h"
#include "myrewrite/queue/release.h"
#include "myrewrite/session/worker.h"

static const mr_col name_value[] = {{"name", MR_COL_TEXT}, {"value", MR_COL_TEXT}};
static const mr_col counter_value[] = {{"counter", MR_COL_TEXT}, {"value", MR_COL_INT}};

static void row2(mr_resultset *rs, const char *a, const char *b)
{
    const char *v[2] = {a, b};
    mr_rs_row(rs, v);
}

static void counter_row(mr_resultset *rs, const char *name, uint64_t value)
{
    char num[24];
    snprintf(num, sizeof(num), "%" PRIu64, value);
    row2(rs, name, num);
}

void mr_admin_show_version(mr_proxy *p, mr_buf *out)
{
    mr_resultset rs;
    char num[24];
    mr_rs_begin(&rs, out, 1, name_value, 2);
    row2(&rs, "version", MYREWRITE_VERSION);
    row2(&rs, "libevent", event_get_version());
    row2(&rs, "openssl", OpenSSL_version(OPENSSL_VERSION));
    snprintf(num, sizeof(num), "%u", p->nworkers);
    row2(&rs, "workers", num);
    snprintf(num, sizeof(num), "%lld", (long long)(time(NULL) - mr_admin_started()));
    row2(&rs, "uptime_seconds", num);
    mr_rs_end(&rs);
}

/* One "key = value" line of mr_config_dump(); passwords come out masked. */
static void config_line(mr_resultset *rs, char *line)
{
    char *eq = strstr(line, " = ");
    if (!eq)
        return; /* the [myrewrite] header */
    *eq = '\0';
    row2(rs, line, eq + 3);
}

void mr_admin_show_config(mr_proxy *p, mr_buf *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        mr_admin_error(out, 1037, "HY000", "out of memory");
        return;
    }
    mr_config_dump(p->cfg, mem);
    fclose(mem);
    mr_resultset rs;
    static const mr_col cols[] = {{"key", MR_COL_TEXT}, {"value", MR_COL_TEXT}};
    mr_rs_begin(&rs, out, 1, cols, 2);
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save))
        config_line(&rs, line);
    mr_rs_end(&rs);
    free(text);
}

/* Sums one counter over every worker; `off` is its offset in mr_stats. */
static uint64_t sum_stat(mr_proxy *p, size_t off)
{
    uint64_t total = 0;
    for (unsigned i = 0; i < p->nworkers; i++)
        total += mr_stat_get((mr_counter *)((char *)&p->workers[i].stats + off));
    return total;
}

#define STAT(field) offsetof(mr_stats, field)

static const struct {
    const char *name;
    size_t off;
} stat_rows[] = {
    {"connections_accepted", STAT(connections_accepted)},
    {"connections_active", STAT(connections_active)},
    {"commands", STAT(commands)},
    {"commands_refused", STAT(commands_refused)},
    {"statements_rewritten", STAT(statements_rewritten)},
    {"statements_blocked", STAT(statements_blocked)},
    {"statements_unreadable_passed", STAT(unreadable_passed)},
    {"statements_unreadable_blocked", STAT(unreadable_blocked)},
    {"session_state_errors", STAT(state_errors)},
    {"delayed_parked", STAT(delayed_parked)},
    {"delayed_park_timeouts", STAT(delayed_park_timeouts)},
    {"delayed_park_wait_us", STAT(delayed_park_wait_us)},
    {"delayed_read_pending", STAT(delayed_read_pending)},
    {"bytes_from_clients", STAT(bytes_from_clients)},
    {"bytes_from_backend", STAT(bytes_from_backend)},
};

/* DELAYED rules in mode = memory, all tables together (SHOW DELAYED has
 * the staged tables' rows). */
static void memory_rows(mr_resultset *rs)
{
    mr_dmem_stats m;
    mr_dmem_stats_read(&m);
    counter_row(rs, "delayed_memory_statements", m.statements);
    counter_row(rs, "delayed_memory_refused", m.refused);
    counter_row(rs, "delayed_memory_keys_held", m.keys_held);
    counter_row(rs, "delayed_memory_rounds", m.rounds);
    counter_row(rs, "delayed_memory_chunks", m.chunks);
    counter_row(rs, "delayed_memory_keys_written", m.keys);
    counter_row(rs, "delayed_memory_errors", m.errors);
    counter_row(rs, "delayed_memory_keys_lost", m.lost);
}

void mr_admin_show_stats(mr_proxy *p, mr_buf *out)
{
    mr_resultset rs;
    char name[64];
    mr_rs_begin(&rs, out, 1, counter_value, 2);
    for (size_t i = 0; i < sizeof(stat_rows) / sizeof(stat_rows[0]); i++)
        counter_row(&rs, stat_rows[i].name, sum_stat(p, stat_rows[i].off));
    for (int r = 0; r < MR_CLOSE_MAX; r++) {
        snprintf(name, sizeof(name), "closes_%s", mr_close_reason_name((mr_close_reason)r));
        counter_row(&rs, name, sum_stat(p, STAT(closes) + (size_t)r * sizeof(mr_counter)));
    }
    memory_rows(&rs);
    mr_rs_end(&rs);
}

void mr_admin_show_backends(mr_proxy *p, mr_buf *out)
{
    static const mr_col cols[] = {
        {"address", MR_COL_TEXT}, {"connections", MR_COL_INT}, {"proxy_user", MR_COL_TEXT}};
    char num[24];
    snprintf(num, sizeof(num), "%" PRIu64, (uint64_t)atomic_load(&p->connections));
    const char *row[3] = {p->backend_name, num, p->cfg->proxy_user[0] ? "yes" : "no"};
    mr_resultset rs;
    mr_rs_begin(&rs, out, 1, cols, 3);
    mr_rs_row(&rs, row);
    mr_rs_end(&rs);
}

void mr_admin_show_queues(mr_proxy *p, mr_buf *out)
{
    mr_queue_stats *q = (mr_queue_stats *)mr_queue_stats_get(); /* read with relaxed loads */
    mr_resultset rs;
    (void)p;
    mr_rs_begin(&rs, out, 1, counter_value, 2);
    counter_row(&rs, "release_runs", mr_stat_get(&q->release_runs));
    counter_row(&rs, "rows_released", mr_stat_get(&q->rows_released));
    counter_row(&rs, "kills", mr_stat_get(&q->kills));
    counter_row(&rs, "reaper_runs", mr_stat_get(&q->reaper_runs));
    counter_row(&rs, "reaper_skipped", mr_stat_get(&q->reaper_skipped));
    counter_row(&rs, "reaper_rows", mr_stat_get(&q->reaper_rows));
    counter_row(&rs, "errors", mr_stat_get(&q->errors));
    counter_row(&rs, "gave_up", mr_stat_get(&q->gave_up));
    counter_row(&rs, "no_process", mr_stat_get(&q->no_process));
    mr_rs_end(&rs);
}
