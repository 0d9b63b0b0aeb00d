/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/show_pools.c - the admin console's SHOW POOLS (one row per user: its
 * sessions and server connections), SHOW SERVERS (one row per server
 * connection) and SHOW PINS (why sessions keep their connections), from
 * the worker pools' snapshots (pool/pool.h). With pool = session the
 * workers have no pool and the answers are empty.
 *
 * Admin console thread; holds one pool's lock while copying, never while
 * building the answer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin_impl.h"
#include "myrewrite/admin/proto.h"
#include "myrewrite/pool/pool.h"
#include "myrewrite/session/worker.h"

static const char *pool_mode(const mr_proxy *p) { return p->cfg->pool; }

static void pool_row(mr_resultset *rs, const mr_proxy *p, const mr_pool_row *r)
{
    char n[9][24];
    uint64_t v[9] = {r->sessions, r->waiting,       r->pinned,
                     r->active,   r->idle,          p->cfg->pool_size,
                     r->waits,    r->wait_timeouts, r->max_wait_us / 1000};
    const char *row[11] = {r->user, pool_mode(p)};
    for (int i = 0; i < 9; i++) {
        snprintf(n[i], sizeof n[i], "%" PRIu64, v[i]);
        row[2 + i] = n[i];
    }
    mr_rs_row(rs, row);
}

void mr_admin_show_pools(mr_proxy *p, mr_buf *out)
{
    static const mr_col cols[] = {
        {"user", MR_COL_TEXT},         {"pool_mode", MR_COL_TEXT}, {"cl_active", MR_COL_INT},
        {"cl_waiting", MR_COL_INT},    {"cl_pinned", MR_COL_INT},  {"sv_active", MR_COL_INT},
        {"sv_idle", MR_COL_INT},       {"sv_max", MR_COL_INT},     {"waits_total", MR_COL_INT},
        {"wait_timeouts", MR_COL_INT}, {"maxwait_ms", MR_COL_INT}};
    mr_pool_row *rows = NULL;
    size_t n = 0;
    for (unsigned i = 0; i < p->nworkers; i++)
        if (p->workers[i].pool && !mr_pool_rows(p->workers[i].pool, &rows, &n)) {
            free(rows);
            mr_admin_error(out, 1037, "HY000", "out of memory");
            return;
        }
    mr_resultset rs;
    mr_rs_begin(&rs, out, 1, cols, 11);
    for (size_t i = 0; i < n; i++)
        pool_row(&rs, p, &rows[i]);
    mr_rs_end(&rs);
    free(rows);
}

static void server_row(mr_resultset *rs, const mr_pool_srv_row *r)
{
    char worker[16], id[16], sess[24], age[32], idle[32], units[24];
    snprintf(worker, sizeof worker, "%u", r->worker);
    snprintf(id, sizeof id, "%" PRIu32, r->thread_id);
    snprintf(sess, sizeof sess, "%" PRIu64, r->session);
    snprintf(age, sizeof age, "%" PRIu64 ".%03" PRIu64, r->age_ms / 1000, r->age_ms % 1000);
    snprintf(idle, sizeof idle, "%" PRIu64 ".%03" PRIu64, r->idle_ms / 1000, r->idle_ms % 1000);
    snprintf(units, sizeof units, "%" PRIu64, r->units);
    const char *row[8] = {
        worker, r->user, id,   r->idle ? "idle" : "active", r->session ? sess : NULL,
        age,    idle,    units};
    mr_rs_row(rs, row);
}

void mr_admin_show_servers(mr_proxy *p, mr_buf *out)
{
    static const mr_col cols[] = {{"worker", MR_COL_INT},           {"user", MR_COL_TEXT},
                                  {"thread_id", MR_COL_INT},        {"state", MR_COL_TEXT},
                                  {"session", MR_COL_INT},          {"age_seconds", MR_COL_DECIMAL},
                                  {"idle_seconds", MR_COL_DECIMAL}, {"units", MR_COL_INT}};
    mr_pool_srv_row *rows = NULL;
    size_t n = 0;
    for (unsigned i = 0; i < p->nworkers; i++)
        if (p->workers[i].pool && !mr_pool_srv_rows(p->workers[i].pool, &rows, &n)) {
            free(rows);
            mr_admin_error(out, 1037, "HY000", "out of memory");
            return;
        }
    mr_resultset rs;
    mr_rs_begin(&rs, out, 1, cols, 8);
    for (size_t i = 0; i < n; i++)
        server_row(&rs, &rows[i]);
    mr_rs_end(&rs);
    free(rows);
}

void mr_admin_show_pins(mr_proxy *p, mr_buf *out)
{
    static const mr_col cols[] = {
        {"reason", MR_COL_TEXT}, {"pinned_now", MR_COL_INT}, {"pins_total", MR_COL_INT}};
    mr_pool_totals t = {0};
    for (unsigned i = 0; i < p->nworkers; i++)
        if (p->workers[i].pool)
            mr_pool_counters(p->workers[i].pool, &t);
    mr_resultset rs;
    mr_rs_begin(&rs, out, 1, cols, 3);
    for (unsigned r = 0; r < MR_PIN_REASONS; r++) {
        char now[24], all[24];
        snprintf(now, sizeof now, "%" PRIu64, t.pinned[r]);
        snprintf(all, sizeof all, "%" PRIu64, t.pins[r]);
        const char *row[3] = {mr_pin_reason_name((mr_pin_reason)r), now, all};
        mr_rs_row(&rs, row);
    }
    mr_rs_end(&rs);
}
