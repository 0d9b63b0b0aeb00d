/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/show_clients.c - the admin console's SHOW CLIENTS: one row per client
 * session, from the snapshots each worker publishes (stats/client_info.h).
 *
 * Admin console thread. Holds one worker's registry lock while copying its
 * slots (a memcpy per session), never while building the answer.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "admin/admin_impl.h"
#include "myrewrite/admin/proto.h"
#include "myrewrite/proto/tracker.h"
#include "myrewrite/session/worker.h"
#include "myrewrite/stats/client_info.h"

/* Copies one worker's slots into a grown array; false when out of memory. */
static bool copy_worker(mr_worker *w, mr_client_row **rows, size_t *n, size_t *cap)
{
    for (;;) {
        size_t got = mr_client_snapshot(&w->clients, *rows + *n, *cap - *n);
        if (got <= *cap - *n) {
            *n += got;
            return true;
        }
        size_t want = *n + got + 16; /* sessions may arrive between two calls */
        mr_client_row *grown = realloc(*rows, want * sizeof **rows);
        if (!grown)
            return false;
        *rows = grown;
        *cap = want;
    }
}

static const char *utc(int64_t t, char *buf, size_t n)
{
    struct tm tm;
    time_t tt = (time_t)t;
    if (!gmtime_r(&tt, &tm))
        return NULL;
    strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

static void client_row(mr_resultset *rs, const mr_client_row *c)
{
    char id[24], backend[16], worker[16], secs[32], stmts[24], in[24], out[24], since[32];
    snprintf(id, sizeof id, "%" PRIu64, c->id);
    snprintf(backend, sizeof backend, "%" PRIu32, c->backend_id);
    snprintf(worker, sizeof worker, "%u", c->worker);
    snprintf(secs, sizeof secs, "%" PRIu64 ".%03" PRIu64, c->state_ms / 1000, c->state_ms % 1000);
    snprintf(stmts, sizeof stmts, "%" PRIu64, c->statements);
    snprintf(in, sizeof in, "%" PRIu64, c->bytes_in);
    snprintf(out, sizeof out, "%" PRIu64, c->bytes_out);
    const char *row[14] = {
        id,
        c->user[0] ? c->user : NULL,
        c->addr,
        c->schema[0] ? c->schema : NULL,
        c->backend_id ? backend : NULL,
        worker,
        c->state,
        secs,
        c->command >= 0 ? mr_command_name((uint8_t)c->command) : NULL,
        c->text[0] ? c->text : NULL,
        stmts,
        in,
        out,
        utc(c->connected_at, since, sizeof since),
    };
    mr_rs_row(rs, row);
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = ((const mr_client_row *)a)->id, y = ((const mr_client_row *)b)->id;
    return x < y ? -1 : x > y;
}

void mr_admin_show_clients(mr_proxy *p, mr_buf *out)
{
    static const mr_col cols[] = {{"id", MR_COL_INT},         {"user", MR_COL_TEXT},
                                  {"client", MR_COL_TEXT},    {"schema", MR_COL_TEXT},
                                  {"backend_id", MR_COL_INT}, {"worker", MR_COL_INT},
                                  {"state", MR_COL_TEXT},     {"state_seconds", MR_COL_DECIMAL},
                                  {"command", MR_COL_TEXT},   {"last_statement", MR_COL_TEXT},
                                  {"statements", MR_COL_INT}, {"bytes_in", MR_COL_INT},
                                  {"bytes_out", MR_COL_INT},  {"connected_at", MR_COL_TEXT}};
    size_t n = 0, cap = 64;
    mr_client_row *rows = malloc(cap * sizeof *rows);
    for (unsigned i = 0; i < p->nworkers; i++) {
        if (!rows || !copy_worker(&p->workers[i], &rows, &n, &cap)) {
            free(rows);
            mr_admin_error(out, 1037, "HY000", "out of memory");
            return;
        }
    }
    if (n)
        qsort(rows, n, sizeof *rows, by_id);
    mr_resultset rs;
    mr_rs_begin(&rs, out, 1, cols, 14);
    for (size_t i = 0; i < n; i++)
        client_row(&rs, &rows[i]);
    mr_rs_end(&rs);
    free(rows);
}
