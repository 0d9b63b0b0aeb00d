/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/group/group.c - the group-commit runner (see delayed/group.h): one
 * queue of members and MR_DGROUP_CONNS bgconn threads that take batches
 * from it, run each batch's INSERTs and answer every member.
 *
 * Threads: the queue under G.lock (any thread submits; the runner's threads
 * take); a batch is run by one runner thread, which alone touches its
 * members' answers until it delivers them.
 */
#include "myrewrite/delayed/group.h"

#include <mysql.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "delayed/group/group_watch.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"
#include "myrewrite/delayed/flush.h"
#include "myrewrite/delayed/group_sql.h"
#include "myrewrite/net/bgconn.h"
#include "myrewrite/stats/rule_stats.h"

#define MAX_BATCH 4096      /* members in one batch, whatever the bounds */
#define STAGING_RETRY_MS 50 /* between two tries while the staging table is missing */
#define ER_NO_SUCH_TABLE 1146
#define CUT_BEFORE_SENT 2013 /* CR_SERVER_LOST: the limit passed before a statement went */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t more; /* a member was queued (CLOCK_MONOTONIC) */
    mr_dgroup_member *head, **tail;
    size_t nqueued;
    uint64_t qrows, qbytes;         /* staging rows and text bytes queued */
    bool filling;                   /* a thread waits for a batch to fill ... */
    uint64_t fill_rows, fill_bytes; /* ... up to these: a submit that reaches one signals */
    unsigned ticking;               /* runner threads inside tick() */
    bool running, stopping;
    bool concurrent;          /* the last batch held more than one member, or had
                                 more queued behind it */
    uint64_t park_timeout_ms; /* delayed_park_timeout: how long a batch waits for its
                                 staging table */
    mr_bgconn *conn[MR_DGROUP_CONNS];
    mr_dgroup_stats stats;
} G = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- members ------------------------------------------------------------------ */

/* One block for st's deltas (8-aligned, first), rows and text, into m. */
static bool copy_stage(mr_dgroup_member *m, const mr_dstage *st)
{
    size_t nd = (size_t)st->nrows * st->ndelta * sizeof *st->d;
    size_t nr = (size_t)st->nrows * sizeof *st->rows;
    char *block = malloc(nd + nr + st->len + 1);
    if (!block)
        return false;
    if (nd)
        memcpy(block, st->d, nd);
    if (nr)
        memcpy(block + nd, st->rows, nr);
    memcpy(block + nd + nr, st->text, st->len);
    m->copy = block;
    m->stage = *st;
    m->stage.d = (const int64_t *)(void *)block;
    m->stage.rows = (const mr_dstage_row *)(void *)(block + nd);
    m->stage.text = m->sql = block + nd + nr;
    m->len = st->len;
    return true;
}

mr_dgroup_member *mr_dgroup_member_new(const mr_dstage *st, uint32_t rows,
                                       const mr_delayed_def *def, struct mr_rule_stats *stats,
                                       void (*wake)(void *arg), void *wake_arg)
{
    mr_dgroup_member *m = calloc(1, sizeof *m);
    if (!m || !copy_stage(m, st) || pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m ? m->copy : NULL);
        free(m);
        return NULL;
    }
    m->rows = rows;
    m->wait_us = def->group_wait_us;
    m->max_rows = def->group_rows ? def->group_rows : 1000;
    m->max_bytes = def->group_bytes ? def->group_bytes : 1u << 20;
    m->timeout_ms = def->group_timeout_ms ? def->group_timeout_ms : 10000;
    m->stats = stats;
    m->refs = 1;
    m->wake = wake;
    m->wake_arg = wake_arg;
    return m;
}

/* Drops one reference (lock held); the last one frees. */
static void unref_locked(mr_dgroup_member *m)
{
    bool last = --m->refs == 0;
    pthread_mutex_unlock(&m->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m->copy);
    free(m);
}

bool mr_dgroup_member_answered(mr_dgroup_member *m)
{
    pthread_mutex_lock(&m->lock);
    bool done = m->answered;
    pthread_mutex_unlock(&m->lock);
    return done;
}

void mr_dgroup_member_release(mr_dgroup_member *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->wake = NULL;
    unref_locked(m);
}

/* The runner is done with the member: its answer is written, its
 * submitter woken (under the lock, so that it cannot let go meanwhile). */
static void deliver(mr_dgroup_member *m)
{
    uint64_t waited = (mr_mono_ns() - m->joined_ns) / 1000;
    if (!m->unsent) { /* an unsent one is answered by the server, not a batch */
        atomic_fetch_add_explicit(&G.stats.waited, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&G.stats.wait_us, waited, memory_order_relaxed);
    }
    if (m->stats && !m->unsent) {
        atomic_fetch_add_explicit(&m->stats->group_statements, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&m->stats->group_wait_us, waited, memory_order_relaxed);
    }
    m->next = NULL;
    pthread_mutex_lock(&m->lock);
    m->answered = true;
    if (m->wake)
        m->wake(m->wake_arg);
    unref_locked(m);
}

__attribute__((format(printf, 4, 5))) static void fail(mr_dgroup_member *m, uint16_t code,
                                                       const char *state, const char *fmt, ...)
{
    m->ok = false;
    m->err_code = code;
    snprintf(m->sqlstate, sizeof m->sqlstate, "%s", state);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->msg, sizeof m->msg, fmt, ap);
    va_end(ap);
}

/* ---- the queue ---------------------------------------------------------------- */

bool mr_dgroup_submit(mr_dgroup_member *m)
{
    m->next = NULL;
    m->joined_ns = mr_mono_ns();
    pthread_mutex_lock(&G.lock);
    /* a runner that cannot connect sends nobody into a wait: the client's
     * own connection stages the statement, or says why not */
    bool ok = G.running && !G.stopping && mr_bgconn_usable(G.conn[0]);
    bool wake = ok && G.ticking < MR_DGROUP_CONNS;
    if (ok) {
        pthread_mutex_lock(&m->lock);
        m->refs++; /* the runner's, until it delivers */
        pthread_mutex_unlock(&m->lock);
        *G.tail = m;
        G.tail = &m->next;
        G.nqueued++;
        G.qrows += m->rows;
        G.qbytes += m->len;
        /* one wake-up per batch, when it is full, not one per statement */
        if (G.filling &&
            (G.qrows >= G.fill_rows || G.qbytes >= G.fill_bytes || G.nqueued >= MAX_BATCH))
            pthread_cond_signal(&G.more);
    }
    pthread_mutex_unlock(&G.lock);
    if (wake) /* threads in their tick take it anyway; an idle one starts one */
        for (unsigned i = 0; i < MR_DGROUP_CONNS; i++)
            mr_bgconn_wake(G.conn[i]);
    return ok;
}

/* Rows and bytes queued from the head on, as a batch would take them. */
static size_t fits(uint64_t max_rows, uint64_t max_bytes, uint64_t *rows, uint64_t *bytes)
{
    size_t n = 0;
    *rows = *bytes = 0;
    for (mr_dgroup_member *m = G.head; m && n < MAX_BATCH; m = m->next, n++) {
        if (n && (*rows + m->rows > max_rows || *bytes + m->len > max_bytes))
            break;
        *rows += m->rows;
        *bytes += m->len;
    }
    return n;
}

/* Takes the next batch off the queue (under G.lock), after waiting up to
 * the head's group_commit_wait for more when sessions write concurrently
 * and everything queued still fits. *n: its members (0: none queued). */
static mr_dgroup_member *take_batch(size_t *n)
{
    *n = 0;
    if (!G.head)
        return NULL;
    uint64_t max_rows = G.head->max_rows, max_bytes = G.head->max_bytes, rows, bytes;
    size_t k = fits(max_rows, max_bytes, &rows, &bytes);
    if (G.concurrent && G.head->wait_us && !G.stopping) {
        uint64_t wait_ns = G.head->wait_us * 1000;
        struct timespec end;
        clock_gettime(CLOCK_MONOTONIC, &end);
        end.tv_sec += (time_t)(wait_ns / 1000000000u);
        end.tv_nsec += (long)(wait_ns % 1000000000u);
        if (end.tv_nsec >= 1000000000) {
            end.tv_sec++;
            end.tv_nsec -= 1000000000;
        }
        G.filling = true;
        G.fill_rows = max_rows;
        G.fill_bytes = max_bytes;
        while (k == G.nqueued && G.qrows < max_rows && G.qbytes < max_bytes &&
               G.nqueued < MAX_BATCH && !G.stopping) {
            if (pthread_cond_timedwait(&G.more, &G.lock, &end) != 0)
                break; /* the wait is over */
            if (!G.head)
                break; /* another thread took them meanwhile */
            k = fits(max_rows, max_bytes, &rows, &bytes);
        }
        G.filling = false;
        if (!G.head)
            return NULL;
        k = fits(max_rows, max_bytes, &rows, &bytes);
    }
    mr_dgroup_member *first = G.head, **cut = &G.head;
    for (size_t i = 0; i < k; i++)
        cut = &(*cut)->next;
    G.head = *cut;
    *cut = NULL;
    if (!G.head)
        G.tail = &G.head;
    G.nqueued -= k;
    G.qrows -= rows;
    G.qbytes -= bytes;
    G.concurrent = k > 1 || G.head != NULL;
    *n = k;
    return first;
}

/* ---- a batch -------------------------------------------------------------------- */

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
        if (e != ER_NO_SUCH_TABLE || waited / 1000000 >= G.park_timeout_ms)
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
    atomic_fetch_add_explicit(&G.stats.batches, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&G.stats.statements, n, memory_order_relaxed);
    if (ok)
        atomic_fetch_add_explicit(&G.stats.rows, rows, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&G.stats.failed, 1, memory_order_relaxed);
    if (parked) {
        atomic_fetch_add_explicit(&G.stats.parked, n, memory_order_relaxed);
        atomic_fetch_add_explicit(&G.stats.park_wait_us, parked_us * n, memory_order_relaxed);
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
        fail(m, 1927, "70100",
             "myrewrite: group commit: the batch did not commit within group_commit_timeout "
             "(%llu ms), so the proxy closed its connection while the batch's commit was in "
             "flight: this UPDATE DELAYED may or may not have been staged; batch of %s",
             (unsigned long long)x->limit_ms, detail);
    else /* no COMMIT went: the server rolls the open transaction back as it closes */
        fail(m, 1969, "70100",
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
            fail(m, 1927, "70100",
                 "myrewrite: group commit: the proxy's own connection broke "
                 "during the batch's staging INSERT, so this UPDATE DELAYED may or may not "
                 "have been staged; batch of %s",
                 detail);
        else
            fail(m, (uint16_t)x->e, x->state,
                 "myrewrite: group commit: the batch's staging INSERT "
                 "failed and staged nothing of its %s",
                 detail);
        deliver(m);
    }
}

/* Runs one batch; false when the connection broke under it. */
static bool run_batch(MYSQL *db, mr_dgroup_member *first, size_t n)
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
            if (!run_batch(db, m, 1)) { /* the rest is answered after the reconnect */
                for (mr_dgroup_member *r = next, *after; r; r = after) {
                    after = r->next;
                    fail(r, 1927, "70100", "myrewrite: group commit: %s",
                         "the proxy's own "
                         "connection broke before this UPDATE DELAYED was sent; nothing staged");
                    deliver(r);
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
        atomic_fetch_add_explicit(&G.stats.merged, merged, memory_order_relaxed);
    answer_all(first, n, &x);
    return !x.broken && !shut;
}

/* ---- the runner --------------------------------------------------------------- */

/* Runs batches while there are members; G.ticking counts the threads in
 * here, so that a submit wakes a thread only when one is not (a thread
 * leaves in the same critical section in which it found the queue empty). */
static uint64_t tick(MYSQL *db, void *arg)
{
    (void)arg;
    uint64_t due = MR_BG_NOTHING_DUE;
    pthread_mutex_lock(&G.lock);
    G.ticking++;
    for (;;) {
        size_t n;
        mr_dgroup_member *b = take_batch(&n);
        if (!b)
            break;
        pthread_mutex_unlock(&G.lock);
        bool ok = run_batch(db, b, n);
        pthread_mutex_lock(&G.lock);
        if (!ok) {
            due = 0; /* reconnect, then go on */
            break;
        }
    }
    G.ticking--;
    pthread_mutex_unlock(&G.lock);
    return due;
}

/* The runner cannot reach the server: what is queued was never sent, so it
 * goes back to its sessions, which send it on their own connections (new
 * statements are not queued while the connect fails: mr_dgroup_submit). */
static void on_connect_failed(const char *why, void *arg)
{
    (void)why;
    (void)arg;
    pthread_mutex_lock(&G.lock);
    mr_dgroup_member *left = G.head;
    G.head = NULL;
    G.tail = &G.head;
    G.nqueued = 0;
    G.qrows = G.qbytes = 0;
    pthread_mutex_unlock(&G.lock);
    for (mr_dgroup_member *m = left, *next; m; m = next) {
        next = m->next;
        m->ok = false;
        m->unsent = true;
        deliver(m);
    }
}

static bool on_connect(MYSQL *db, void *arg)
{
    (void)db;
    (void)arg;
    return true;
}

static bool any_group_rule(const mr_ruleset *rs)
{
    for (size_t i = 0; i < mr_ruleset_count(rs); i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        if (r->kind == MR_RULE_DELAYED && r->enabled && r->delayed->group_commit)
            return true;
    }
    return false;
}

static bool cond_init(void)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return false;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    bool ok = pthread_cond_init(&G.more, &ca) == 0;
    pthread_condattr_destroy(&ca);
    return ok;
}

void mr_dgroup_configure(const mr_proxy *p, const mr_ruleset *rs)
{
    if (G.running || G.stopping || !any_group_rule(rs))
        return;
    G.tail = &G.head;
    G.park_timeout_ms = p->cfg->delayed_park_timeout_ms;
    if (!cond_init())
        return;
    mr_bgconn_ops ops = {.name = "group commit",
                         .on_connect = on_connect,
                         .tick = tick,
                         .on_connect_failed = on_connect_failed,
                         .lazy = true};
    for (unsigned i = 0; i < MR_DGROUP_CONNS; i++)
        if (!(G.conn[i] = mr_bgconn_start(p->cfg, p->backend_name, &ops))) {
            while (i--)
                mr_bgconn_stop(G.conn[i]);
            mr_warn(0, "group commit is off: staged statements go on the client's own "
                       "connection, one commit each");
            return;
        }
    dg_watch_start(); /* without it, a batch is bounded by own_connection_timeout only */
    pthread_mutex_lock(&G.lock);
    G.running = true;
    pthread_mutex_unlock(&G.lock);
    mr_info(0, "group commit: %u connections of the proxy's own (opened at the first batch)",
            MR_DGROUP_CONNS);
}

void mr_dgroup_stop(void)
{
    pthread_mutex_lock(&G.lock);
    bool was = G.running;
    G.stopping = true;
    mr_dgroup_member *left = G.head;
    G.head = NULL;
    G.tail = &G.head;
    G.nqueued = 0;
    G.qrows = G.qbytes = 0;
    pthread_cond_broadcast(&G.more);
    pthread_mutex_unlock(&G.lock);
    for (mr_dgroup_member *m = left, *next; m; m = next) {
        next = m->next;
        fail(m, 1053, "08S01", "myrewrite: %s",
             "the proxy is shutting down; this UPDATE "
             "DELAYED was not staged");
        deliver(m);
    }
    if (!was)
        return;
    for (unsigned i = 0; i < MR_DGROUP_CONNS; i++)
        mr_bgconn_stop(G.conn[i]);
    dg_watch_stop(); /* every batch has ended */
    pthread_mutex_lock(&G.lock);
    G.running = false;
    pthread_mutex_unlock(&G.lock);
}

const mr_dgroup_stats *mr_dgroup_stats_get(void) { return &G.stats; }
