/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/group/batch.c - one group-commit batch run on a runner's
 * connection (dg_run_batch): its members' INSERTs as one multi-row INSERT
 * per rule (delayed/group_sql.h), in one transaction when there are
 * several, under the batch limit (delayed/group/group_watch.h), retried
 * while the staging table is missing; then counted, and every member
 * answered with the outcome.
 *
 * Runner threads: a batch is run by one of them, which alone touches its
 * members' answers until it delivers them.
 */
#include <mysql.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "delayed/group/group_impl.h"
#include "delayed/group/group_watch.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"
#include "myrewrite/delayed/flush.h"
#include "myrewrite/delayed/group_sql.h"
#include "myrewrite/net/bgconn.h"
#include "myrewrite/stats/rule_stats.h"

#define STAGING_RETRY_MS 50 /* between two tries while the staging table is missing */
#define ER_NO_SUCH_TABLE 1146
#define CUT_BEFORE_SENT 2013 /* CR_SERVER_LOST: the limit passed before a statement went */

uint64_t dg_park_timeout_ms;

/* What one batch's run knows besides its error. */
typedef struct batch_run {
    dg_watch *watch;    /* its limit (NULL: none) */
    uint64_t parked_us; /* it waited this long for the staging table */
    unsigned warnings;  /* its INSERTs' warnings */
} batch_run;

/* The warnings of the INSERT just run, into the proxy's log (they are on
 * its connection: the client's SHOW WARNINGS cannot list them). */
static void log_warnings(MYSQL *db, unsigned n)
{
    if (mysql_query(db, "SHOW WARNINGS LIMIT 5") != 0) /* the first few say enough */
        return;
    MYSQL_RES *r = mysql_store_result(db);
    for (MYSQL_ROW row; r && (row = mysql_fetch_row(r));)
        mr_warn(0, "group commit: the batch's staging INSERT warned (%u warning(s)): %s %s %s", n,
                row[0] ? row[0] : "", row[1] ? row[1] : "", row[2] ? row[2] : "");
    mysql_free_result(r);
}

/* One statement of a batch, under its limit (commits: it may commit
 * rows); its error, CUT_BEFORE_SENT when the limit had passed. */
static unsigned send_one(MYSQL *db, batch_run *b, const char *sql, size_t len, bool commits,
                         bool insert)
{
    if (!dg_watch_send(b->watch, commits))
        return CUT_BEFORE_SENT;
    unsigned e = mysql_real_query(db, sql, len) != 0 ? mysql_errno(db) : 0;
    dg_watch_sent(b->watch);
    unsigned w = !e && insert ? mysql_warning_count(db) : 0;
    if (w) {
        b->warnings += w;
        log_warnings(db, w);
    }
    return e;
}

/* Runs the k INSERTs of a batch: one in autocommit, several in one
 * transaction. 0 when committed; else the error (code, state, message in
 * err), nothing of the batch staged, or the connection broke or was cut. */
static unsigned run_inserts(MYSQL *db, batch_run *b, const mr_buf *st, size_t k, char *state,
                            char *err, size_t cap)
{
    bool tx = k > 1;
    unsigned e = 0;
    if (tx)
        e = send_one(db, b, "START TRANSACTION", 17, false, false);
    for (size_t i = 0; !e && i < k; i++)
        e = send_one(db, b, (const char *)st[i].data, st[i].len, !tx, true);
    if (!e && tx)
        e = send_one(db, b, "COMMIT", 6, true, false);
    if (e == CUT_BEFORE_SENT) {
        snprintf(state, 6, "70100");
        snprintf(err, cap, "group_commit_timeout passed");
    } else if (e) {
        snprintf(state, 6, "%s", mysql_sqlstate(db));
        snprintf(err, cap, "%u %s", e, mysql_error(db));
        if (tx && !mr_bg_conn_broken(db) && mysql_query(db, "ROLLBACK") != 0)
            mr_warn(0, "group commit: ROLLBACK after a failed batch: %u %s", mysql_errno(db),
                    mysql_error(db));
    }
    return e;
}

/* The batch's INSERTs, retried while the staging table does not exist yet
 * (the flusher is woken to create it), up to delayed_park_timeout. */
static unsigned run_with_staging(MYSQL *db, batch_run *b, const mr_buf *st, size_t k, char *state,
                                 char *err, size_t cap)
{
    uint64_t start = mr_mono_ns();
    bool parked = false;
    for (;;) {
        unsigned e = run_inserts(db, b, st, k, state, err, cap);
        uint64_t waited = mr_mono_ns() - start;
        if (parked)
            b->parked_us = waited / 1000 ? waited / 1000 : 1;
        if (e != ER_NO_SUCH_TABLE || waited / 1000000 >= dg_park_timeout_ms)
            return e;
        if (!parked)
            mr_info(0,
                    "group commit: the staging table does not exist yet (%s); the batch "
                    "waits for the flusher to create it",
                    err);
        parked = true;
        mr_delayed_setup_now();
        struct timespec ts = {0, STAGING_RETRY_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* Counts a committed batch on the global and the rules' counters (each
 * rule's batches once). */
static void count_batch(mr_dgroup_member *first, size_t n, bool ok, uint64_t parked_us)
{
    bool parked = parked_us > 0;
    struct mr_rule_stats *seen[MR_DGROUP_MAX_STMTS];
    size_t nseen = 0;
    uint64_t rows = 0;
    for (mr_dgroup_member *m = first; m; m = m->next) {
        rows += m->rows;
        if (m->stats && ok)
            atomic_fetch_add_explicit(&m->stats->group_rows, m->rows, memory_order_relaxed);
        if (m->stats && parked) {
            atomic_fetch_add_explicit(&m->stats->group_parked, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&m->stats->group_park_wait_us, parked_us,
                                      memory_order_relaxed);
        }
        size_t j = 0;
        while (j < nseen && seen[j] != m->stats)
            j++;
        if (j == nseen && m->stats && nseen < MR_DGROUP_MAX_STMTS) {
            seen[nseen++] = m->stats;
            atomic_fetch_add_explicit(&m->stats->group_batches, 1, memory_order_relaxed);
        }
    }
    atomic_fetch_add_explicit(&dg_stats.batches, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&dg_stats.statements, n, memory_order_relaxed);
    if (ok)
        atomic_fetch_add_explicit(&dg_stats.rows, rows, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&dg_stats.failed, 1, memory_order_relaxed);
    if (parked) {
        atomic_fetch_add_explicit(&dg_stats.parked, n, memory_order_relaxed);
        atomic_fetch_add_explicit(&dg_stats.park_wait_us, parked_us * n, memory_order_relaxed);
    }
}

/* How a batch ended, for its answers. */
typedef struct batch_end {
    unsigned e; /* 0: committed */
    const char *state, *err;
    bool broken;   /* the connection broke (or was cut) under it */
    bool cut;      /* group_commit_timeout passed ... */
    bool in_doubt; /* ... while a statement that commits was in flight */
    uint64_t limit_ms;
    unsigned warnings;
} batch_end;

/* A batch cut at its limit: what is known of its rows. */
static void fail_cut(mr_dgroup_member *m, const batch_end *x, const char *detail)
{
    if (x->in_doubt) /* the autocommit INSERT or the COMMIT had gone: it may have landed */
        dg_fail(m, 1927, "70100",
                "myrewrite: group commit: the batch did not commit within group_commit_timeout "
                "(%llu ms), so the proxy closed its connection while the batch's commit was in "
                "flight: this UPDATE DELAYED may or may not have been staged; batch of %s",
                (unsigned long long)x->limit_ms, detail);
    else /* no COMMIT went: the server rolls the open transaction back as it closes */
        dg_fail(m, 1969, "70100",
                "myrewrite: group commit: the batch did not commit within group_commit_timeout "
                "(%llu ms), so the proxy closed its connection before the batch's commit was "
                "sent: nothing of it was staged (the server rolls it back); batch of %s",
                (unsigned long long)x->limit_ms, detail);
}

/* Every member gets the batch's outcome. */
static void answer_all(mr_dgroup_member *first, size_t n, const batch_end *x)
{
    char detail[420];
    snprintf(detail, sizeof detail, "%zu statement(s) (this one included): %.300s", n, x->err);
    for (mr_dgroup_member *m = first, *next; m; m = next) {
        next = m->next;
        if (!x->e) {
            m->ok = true;
            m->warnings = x->warnings > 65535 ? 65535 : (uint16_t)x->warnings;
        } else if (x->cut) {
            fail_cut(m, x, detail);
        } else if (x->broken) /* sent, then cut: committed or not, nobody knows */
            dg_fail(m, 1927, "70100",
                    "myrewrite: group commit: the proxy's own connection broke "
                    "during the batch's staging INSERT, so this UPDATE DELAYED may or may not "
                    "have been staged; batch of %s",
                    detail);
        else
            dg_fail(m, (uint16_t)x->e, x->state,
                    "myrewrite: group commit: the batch's staging INSERT "
                    "failed and staged nothing of its %s",
                    detail);
        dg_deliver(m);
    }
}

/* Runs one batch; false when the connection broke under it. */
bool dg_run_batch(MYSQL *db, mr_dgroup_member *first, size_t n)
{
    mr_dstage *t = malloc(n * sizeof *t);
    mr_buf st[MR_DGROUP_MAX_STMTS];
    for (size_t j = 0; j < MR_DGROUP_MAX_STMTS; j++)
        mr_buf_init(&st[j]);
    size_t i = 0, k = 0, merged = 0;
    for (mr_dgroup_member *m = first; t && m; m = m->next, i++)
        t[i] = m->stage;
    if (t)
        k = mr_dgroup_build(t, n, st, MR_DGROUP_MAX_STMTS, &merged);
    free(t);
    char state[6] = "HY000", err[400] = "myrewrite is out of memory";
    unsigned e = 1037; /* ER_OUTOFMEMORY */
    batch_run b = {0};
    if (k == 0 && n > 1) { /* more column lists than one batch takes: one by one */
        for (mr_dgroup_member *m = first, *next; m; m = next) {
            next = m->next;
            m->next = NULL;
            if (!dg_run_batch(db, m, 1)) { /* the rest is answered after the reconnect */
                for (mr_dgroup_member *r = next, *after; r; r = after) {
                    after = r->next;
                    dg_fail(r, 1927, "70100", "myrewrite: group commit: %s",
                            "the proxy's own "
                            "connection broke before this UPDATE DELAYED was sent; nothing staged");
                    dg_deliver(r);
                }
                return false;
            }
        }
        return true;
    }
    batch_end x = {.limit_ms = first->timeout_ms};
    if (k) {
        b.watch = dg_watch_begin(db, x.limit_ms);
        e = run_with_staging(db, &b, st, k, state, err, sizeof err);
        x.cut = dg_watch_end(b.watch, &x.in_doubt);
    }
    for (size_t j = 0; j < MR_DGROUP_MAX_STMTS; j++)
        mr_buf_free(&st[j]);
    x.e = e;
    x.state = state;
    x.err = err;
    x.warnings = b.warnings;
    bool shut = x.cut;  /* the socket is shut: the connection is made again */
    x.cut = x.cut && e; /* done just before the cut: committed, answered so */
    x.broken = x.cut || (e && mr_bg_conn_broken(db));
    if (x.cut)
        mr_warn(0,
                "group commit: a batch of %zu statement(s) did not commit within "
                "group_commit_timeout (%llu ms); its connection was closed%s",
                n, (unsigned long long)x.limit_ms,
                x.in_doubt ? " with its commit in flight" : " before its commit was sent");
    else if (e)
        mr_warn(0, "group commit: a batch of %zu statement(s) failed: %s", n, err);
    count_batch(first, n, !e, b.parked_us);
    if (!e)
        atomic_fetch_add_explicit(&dg_stats.merged, merged, memory_order_relaxed);
    answer_all(first, n, &x);
    return !x.broken && !shut;
}
