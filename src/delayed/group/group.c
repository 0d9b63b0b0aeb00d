/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/group/group.c - the group-commit runner (see delayed/group.h): one
 * queue of members and MR_DGROUP_CONNS bgconn threads that take batches
 * from it, run each batch's INSERTs and answer every member (a member is
 * delayed/group/member.c's, a batch's run delayed/group/batch.c's).
 *
 * Threads: the queue under G.lock (any thread submits; the runner's threads
 * take); a batch is run by one runner thread, which alone touches its
 * members' answers until it delivers them.
 */
#include "myrewrite/delayed/group.h"

#include <mysql.h>
#include <time.h>

#include "delayed/group/group_impl.h"
#include "delayed/group/group_watch.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"
#include "myrewrite/net/bgconn.h"

#define MAX_BATCH 4096 /* members in one batch, whatever the bounds */

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
    bool concurrent; /* the last batch held more than one member, or had
                        more queued behind it */
    mr_bgconn *conn[MR_DGROUP_CONNS];
} G = {.lock = PTHREAD_MUTEX_INITIALIZER};

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
        bool ok = dg_run_batch(db, b, n);
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
        dg_deliver(m);
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
    dg_park_timeout_ms = p->cfg->delayed_park_timeout_ms;
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
        dg_fail(m, 1053, "08S01", "myrewrite: %s",
                "the proxy is shutting down; this UPDATE "
                "DELAYED was not staged");
        dg_deliver(m);
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
