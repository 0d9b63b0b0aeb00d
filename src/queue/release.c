/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/release.c - release on disconnect and the zombie reaper for queue rules
 * (see queue/release.h for the order of a release and the threads involved).
 *
 * Workers push ended sessions (the owner id of their claims, and the server
 * connection whose end the release waits for) under `Q.lock`; the queue's
 * bgconn thread (tick) moves them to its own waiting list, polls
 * information_schema.PROCESSLIST until each such connection is gone, then
 * releases the owner's claims in every queue table. The same thread runs
 * the reaper rounds. Owns the copies of the queue rules, the id lists and
 * the counters.
 */
#include "myrewrite/queue/release.h"
#include "myrewrite/base/clock.h"

#include <inttypes.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "myrewrite/base/log.h"
#include "myrewrite/net/bgconn.h"
#include "myrewrite/queue/live.h"
#include "myrewrite/queue/release_sql.h"

#define POLL_MS 20         /* while ended connections wait to disappear */
#define KILL_AFTER_MS 2000 /* still listed this long after its session ended */
#define GIVE_UP_MS 30000   /* then the reaper's business */
#define MAX_TRIES 5        /* failed releases of one id before giving up */
#define IN_LIST_MAX 256    /* ids per PROCESSLIST query */
#define ENDED_MAX 1000000  /* ended ids kept while the own connection is down */

/* An ended session: whose claims, once which connection is gone. */
typedef struct ended {
    uint32_t owner; /* the claims' owner id */
    uint32_t wait;  /* the server connection to wait for (0: none) */
} ended;

typedef struct waiting {
    uint64_t id;   /* the claims' owner */
    uint64_t wait; /* the connection that must be gone first (0: none) */
    uint64_t since_ms;
    bool killed;
    unsigned tries;
} waiting;

typedef struct defs {
    mr_queue_def *q;
    char **rule; /* rule names, for logs */
    size_t n;
} defs;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t idle_cond;
    /* guarded by lock */
    ended *ended;
    size_t nended, ended_cap;
    bool ended_full; /* ENDED_MAX reached: said once until the list drains */
    defs next;       /* from mr_queue_configure, adopted by the thread */
    bool have_next;
    bool idle; /* nothing pending after the last tick */
    /* main thread */
    mr_bgconn *bg;
    bool warned_no_user;
    /* any thread */
    _Atomic bool active;
    mr_queue_stats stats;
    /* bgconn thread */
    defs cur;
    uint64_t *next_reap; /* per cur.q: monotonic ms of the next round */
    waiting *wait;
    size_t nwait, wait_cap;
    bool process_priv;
} Q = {.lock = PTHREAD_MUTEX_INITIALIZER, .idle_cond = PTHREAD_COND_INITIALIZER, .idle = true};

const mr_queue_stats *mr_queue_stats_get(void) { return &Q.stats; }

bool mr_queue_active(void) { return atomic_load_explicit(&Q.active, memory_order_relaxed); }

/* ---- rule copies ---------------------------------------------------------------- */

static char *dup_or_null(const char *s, bool *ok)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *ok = false;
    return d;
}

static void def_free(mr_queue_def *q)
{
    char *fields[] = {q->schema,          q->table,
                      q->owner_column,    q->status_column,
                      q->claimed_value,   q->unclaimed_value,
                      q->unclaimed_owner, q->claimed_at_column,
                      q->release,         q->reap};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        free(fields[i]);
}

static bool def_copy(mr_queue_def *d, const mr_queue_def *s)
{
    bool ok = true;
    *d = *s;
    d->schema = dup_or_null(s->schema, &ok);
    d->table = dup_or_null(s->table, &ok);
    d->owner_column = dup_or_null(s->owner_column, &ok);
    d->status_column = dup_or_null(s->status_column, &ok);
    d->claimed_value = dup_or_null(s->claimed_value, &ok);
    d->unclaimed_value = dup_or_null(s->unclaimed_value, &ok);
    d->unclaimed_owner = dup_or_null(s->unclaimed_owner, &ok);
    d->claimed_at_column = dup_or_null(s->claimed_at_column, &ok);
    d->release = dup_or_null(s->release, &ok);
    d->reap = dup_or_null(s->reap, &ok);
    return ok;
}

static void defs_free(defs *d)
{
    for (size_t i = 0; i < d->n; i++) {
        def_free(&d->q[i]);
        free(d->rule[i]);
    }
    free(d->q);
    free(d->rule);
    memset(d, 0, sizeof *d);
}

static bool defs_from(defs *d, const mr_ruleset *rs)
{
    size_t n = 0, total = mr_ruleset_count(rs);
    memset(d, 0, sizeof *d);
    for (size_t i = 0; i < total; i++)
        n += mr_ruleset_rule(rs, i)->kind == MR_RULE_QUEUE && mr_ruleset_rule(rs, i)->enabled;
    if (!n)
        return true;
    d->q = calloc(n, sizeof *d->q);
    d->rule = calloc(n, sizeof *d->rule);
    bool ok = d->q && d->rule;
    for (size_t i = 0; ok && i < total; i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        if (r->kind != MR_RULE_QUEUE || !r->enabled)
            continue;
        ok = def_copy(&d->q[d->n], r->queue);
        d->rule[d->n++] = dup_or_null(r->name, &ok);
    }
    if (!ok)
        defs_free(d);
    return ok;
}

/* The column form with a claim time, or a release template with `reap`. */
static bool has_reaper(const mr_queue_def *q)
{
    return q->release ? q->reap != NULL : q->claimed_at_column != NULL;
}

/* ---- main thread ---------------------------------------------------------------- */

static void log_rules(const defs *d)
{
    for (size_t i = 0; i < d->n; i++) {
        const mr_queue_def *q = &d->q[i];
        if (!has_reaper(q))
            mr_info(0, "queue rule %s on %s.%s: release on disconnect; no reaper (%s)", d->rule[i],
                    q->schema, q->table,
                    q->release ? "release without reap" : "no claimed_at_column");
        else
            mr_info(0,
                    "queue rule %s on %s.%s: release on disconnect; reaper for claims older "
                    "than %" PRIu64 " ms",
                    d->rule[i], q->schema, q->table, q->timeout_ms);
    }
}

static bool start_thread(const mr_proxy *p);

void mr_queue_configure(const mr_proxy *p, const mr_ruleset *rs)
{
    defs d;
    if (!defs_from(&d, rs)) {
        mr_error(0, "queue: out of memory reading the queue rules; they stay as they were");
        return;
    }
    if (d.n && !Q.bg && !start_thread(p)) {
        defs_free(&d);
        return;
    }
    log_rules(&d);
    pthread_mutex_lock(&Q.lock);
    if (Q.have_next)
        defs_free(&Q.next);
    Q.next = d;
    Q.have_next = true;
    pthread_mutex_unlock(&Q.lock);
    atomic_store(&Q.active, d.n > 0 && Q.bg);
    if (Q.bg)
        mr_bgconn_wake(Q.bg);
}

void mr_queue_session_ended(uint32_t id, uint32_t wait)
{
    if (!atomic_load_explicit(&Q.active, memory_order_relaxed) || id == 0)
        return;
    pthread_mutex_lock(&Q.lock);
    if (Q.nended >= ENDED_MAX) {
        bool say = !Q.ended_full;
        Q.ended_full = true;
        pthread_mutex_unlock(&Q.lock);
        if (say)
            mr_error(0,
                     "queue: %d ended sessions wait for the proxy's own connection; the "
                     "claims of those that end meanwhile are left to the reaper",
                     ENDED_MAX);
        return;
    }
    bool ok = Q.nended < Q.ended_cap;
    if (!ok) {
        size_t cap = Q.ended_cap ? Q.ended_cap * 2 : 256;
        ended *e = realloc(Q.ended, cap * sizeof *e);
        if ((ok = e != NULL)) {
            Q.ended = e;
            Q.ended_cap = cap;
        }
    }
    if (ok) {
        Q.ended[Q.nended++] = (ended){.owner = id, .wait = wait};
        Q.idle = false;
    }
    pthread_mutex_unlock(&Q.lock);
    if (!ok)
        mr_error(0, "queue: out of memory; claims of connection %u are left to the reaper", id);
    mr_bgconn_wake(Q.bg);
}

void mr_queue_stop(uint64_t drain_ms)
{
    if (!Q.bg)
        return;
    atomic_store(&Q.active, false);
    struct timespec ts = mr_deadline_in(CLOCK_REALTIME, drain_ms);
    mr_bgconn_wake(Q.bg);
    pthread_mutex_lock(&Q.lock);
    while (!Q.idle && pthread_cond_timedwait(&Q.idle_cond, &Q.lock, &ts) == 0)
        ;
    if (!Q.idle)
        mr_warn(0, "queue: stopping with releases still pending; the reaper will find them");
    pthread_mutex_unlock(&Q.lock);
    mr_bgconn_stop(Q.bg);
    Q.bg = NULL;
    defs_free(&Q.cur);
    if (Q.have_next)
        defs_free(&Q.next);
    Q.have_next = false;
    free(Q.next_reap);
    free(Q.wait);
    free(Q.ended);
    mr_queue_live_free();
    Q.next_reap = NULL;
    Q.wait = NULL;
    Q.ended = NULL;
    Q.nwait = Q.wait_cap = Q.nended = Q.ended_cap = 0;
}

/* ---- bgconn thread: connection ---------------------------------------------------- */

/* Reads one unsigned number from a single-row query; false on error or NULL. */
static bool query_number(MYSQL *db, const char *sql, const char *what, uint64_t *out)
{
    if (!mr_bg_query(db, sql, what))
        return false;
    MYSQL_RES *res = mysql_store_result(db);
    MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
    bool ok = row && row[0];
    if (ok)
        *out = strtoull(row[0], NULL, 10);
    mysql_free_result(res);
    return ok;
}

/* Without PROCESS, PROCESSLIST shows only the proxy's own connections:
 * every worker would look dead, and the reaper would free live claims.
 * So the connection is refused (and retried: a GRANT takes effect on the
 * next connect). The test asks for the privilege the session really holds
 * (roles included): the InnoDB transaction list is refused without it with
 * 1227, where the grant tables would only tell what was granted directly.
 * Global privileges are fixed for a connection's lifetime, so one check per
 * connect is enough. */
static bool on_connect(MYSQL *db, void *arg)
{
    (void)arg;
    static const char sql[] = "SELECT COUNT(*) FROM information_schema.INNODB_TRX";
    if (mysql_query(db, sql) == 0) {
        mysql_free_result(mysql_store_result(db));
        if (!Q.process_priv)
            mr_info(0, "queue: proxy_user has the PROCESS privilege now; release on disconnect "
                       "and the reaper resume");
        Q.process_priv = true;
        return true;
    }
    if (mysql_errno(db) != ER_SPECIFIC_ACCESS_DENIED_ERROR) {
        mr_warn(0, "queue: checking the PROCESS privilege failed: %u %s", mysql_errno(db),
                mysql_error(db));
        mr_stat_add(&Q.stats.errors, 1);
        return false;
    }
    mr_stat_add(&Q.stats.no_process, 1);
    if (Q.process_priv)
        mr_error(0, "queue: proxy_user lacks the PROCESS privilege, so PROCESSLIST shows only "
                    "its own connections and every worker would look dead; release on disconnect "
                    "and the reaper are refused until it is granted (GRANT PROCESS ON *.*; checked "
                    "at every reconnect)");
    Q.process_priv = false;
    return false;
}

/* ---- bgconn thread: the lists ---------------------------------------------------- */

static void adopt_defs(void)
{
    pthread_mutex_lock(&Q.lock);
    bool have = Q.have_next;
    defs d = Q.next;
    Q.have_next = false;
    pthread_mutex_unlock(&Q.lock);
    if (!have)
        return;
    uint64_t *nr = calloc(d.n ? d.n : 1, sizeof *nr);
    if (!nr) {
        mr_error(0, "queue: out of memory adopting the queue rules; keeping the previous ones");
        defs_free(&d);
        return;
    }
    defs_free(&Q.cur);
    free(Q.next_reap);
    Q.cur = d;
    Q.next_reap = nr;
}

static bool wait_grow(void)
{
    if (Q.nwait < Q.wait_cap)
        return true;
    size_t cap = Q.wait_cap ? Q.wait_cap * 2 : 64;
    waiting *w = realloc(Q.wait, cap * sizeof *w);
    if (!w)
        return false;
    Q.wait = w;
    Q.wait_cap = cap;
    return true;
}

/* Moves the ids pushed by workers to the waiting list. */
static void take_ended(uint64_t now)
{
    pthread_mutex_lock(&Q.lock);
    for (size_t i = 0; i < Q.nended && wait_grow(); i++)
        Q.wait[Q.nwait++] =
            (waiting){.id = Q.ended[i].owner, .wait = Q.ended[i].wait, .since_ms = now};
    Q.nended = 0;
    Q.ended_full = false;
    pthread_mutex_unlock(&Q.lock);
}

static void wait_remove(size_t i) { Q.wait[i] = Q.wait[--Q.nwait]; }

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* ---- bgconn thread: liveness ----------------------------------------------------- */

typedef struct idset {
    uint64_t *v;
    size_t n, cap;
} idset;

static bool idset_add(idset *s, uint64_t id)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        uint64_t *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return false;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = id;
    return true;
}

static bool idset_has(const idset *s, uint64_t id)
{
    return s->n && bsearch(&id, s->v, s->n, sizeof id, cmp_u64) != NULL;
}

/* Fills `live` (sorted) with the ids of the result's first column. */
static bool read_ids(MYSQL *db, const char *sql, const char *what, idset *live)
{
    if (!mr_bg_query(db, sql, what))
        return false;
    MYSQL_RES *res = mysql_store_result(db);
    if (!res)
        return false;
    bool ok = true;
    MYSQL_ROW row;
    while (ok && (row = mysql_fetch_row(res)))
        if (row[0] && row[0][0] >= '0' && row[0][0] <= '9')
            ok = idset_add(live, strtoull(row[0], NULL, 10));
    mysql_free_result(res);
    if (live->n)
        qsort(live->v, live->n, sizeof *live->v, cmp_u64);
    return ok;
}

/* Which of the connections the waiting sessions wait for are still there
 * (by IN lists). */
static bool live_waiting(MYSQL *db, idset *live)
{
    char sql[IN_LIST_MAX * 12 + 100];
    for (size_t at = 0; at < Q.nwait;) {
        int o = snprintf(sql, sizeof sql,
                         "SELECT ID FROM information_schema.PROCESSLIST WHERE ID IN (");
        size_t k = 0;
        for (; k < IN_LIST_MAX && at < Q.nwait; at++)
            if (Q.wait[at].wait)
                o += snprintf(sql + o, sizeof sql - (size_t)o, "%s%" PRIu64, k++ ? "," : "",
                              Q.wait[at].wait);
        if (!k)
            break; /* none to wait for */
        snprintf(sql + o, sizeof sql - (size_t)o, ")");
        if (!read_ids(db, sql, "queue: reading PROCESSLIST", live))
            return false;
    }
    if (live->n)
        qsort(live->v, live->n, sizeof *live->v, cmp_u64);
    return true;
}

/* The connections in PROCESSLIST and this proxy's live pooled sessions,
 * whose ids own their claims while their login connections may be gone
 * (queue/live.h), into live (sorted). Read after the claims: a session is
 * live before it can claim, so an owner found and missing from both is
 * gone for good (ids are not reused). */
static bool read_live(MYSQL *db, idset *live)
{
    if (!read_ids(db, "SELECT ID FROM information_schema.PROCESSLIST",
                  "queue reaper: reading PROCESSLIST", live))
        return false;
    if (!mr_queue_live_ids(&live->v, &live->n, &live->cap))
        return false;
    if (live->n)
        qsort(live->v, live->n, sizeof *live->v, cmp_u64);
    return true;
}

/* ---- bgconn thread: releases ------------------------------------------------------ */

/* Runs one release statement; rows changed, or -1. */
static long long run_update(MYSQL *db, const char *sql, const char *what)
{
    if (!sql) {
        mr_error(0, "queue: out of memory building %s", what);
        return -1;
    }
    if (!mr_bg_query(db, sql, what)) {
        mr_stat_add(&Q.stats.errors, 1);
        return -1;
    }
    return (long long)mysql_affected_rows(db);
}

/* Releases the claims of `id` in every queue table; false on a failure. */
static bool release_id(MYSQL *db, const waiting *w, uint64_t now)
{
    long long total = 0;
    for (size_t i = 0; i < Q.cur.n; i++) {
        char *sql = mr_queue_release_sql(&Q.cur.q[i], w->id);
        long long n = run_update(db, sql, "queue: release on disconnect");
        free(sql);
        if (n < 0)
            return false;
        total += n;
        if (n > 0)
            mr_info(0,
                    "queue: released %lld rows of %s.%s claimed by backend connection %" PRIu64
                    " (rule %s), %" PRIu64 " ms after its session ended",
                    n, Q.cur.q[i].schema, Q.cur.q[i].table, w->id, Q.cur.rule[i],
                    now - w->since_ms);
    }
    mr_stat_add(&Q.stats.release_runs, 1);
    mr_stat_add(&Q.stats.rows_released, (uint64_t)total);
    if (!total)
        mr_debug(0, "queue: backend connection %" PRIu64 " held no claims", w->id);
    return true;
}

/* An ended connection still listed: kill it once after a while, give up later. */
static bool still_running(MYSQL *db, waiting *w, uint64_t now)
{
    if (now - w->since_ms >= GIVE_UP_MS) {
        mr_stat_add(&Q.stats.gave_up, 1);
        mr_warn(0,
                "queue: backend connection %" PRIu64 " still exists %u s after its session "
                "ended; its claims are left to the reaper",
                w->wait, GIVE_UP_MS / 1000);
        return false;
    }
    if (!w->killed && now - w->since_ms >= KILL_AFTER_MS) {
        char sql[64];
        snprintf(sql, sizeof sql, "KILL CONNECTION %" PRIu64, w->wait);
        w->killed = true;
        if (mysql_query(db, sql) == 0 || mysql_errno(db) == ER_NO_SUCH_THREAD) {
            mr_info(0,
                    "queue: backend connection %" PRIu64 " was still running %u ms after its "
                    "session ended; killed it (its open work rolls back)",
                    w->wait, KILL_AFTER_MS);
            mr_stat_add(&Q.stats.kills, 1);
        } else {
            mr_warn(0, "queue: KILL CONNECTION %" PRIu64 " failed: %u %s", w->wait, mysql_errno(db),
                    mysql_error(db));
            mr_stat_add(&Q.stats.errors, 1);
        }
    }
    return true;
}

static void release_waiting(MYSQL *db, uint64_t now)
{
    idset live = {0};
    if (!live_waiting(db, &live)) {
        mr_stat_add(&Q.stats.errors, 1);
        free(live.v);
        return;
    }
    for (size_t i = Q.nwait; i-- > 0;) {
        waiting *w = &Q.wait[i];
        bool keep;
        if (w->wait && idset_has(&live, w->wait))
            keep = still_running(db, w, now);
        else if (release_id(db, w, now))
            keep = false;
        else
            keep = !mr_bg_conn_broken(db) ? ++w->tries < MAX_TRIES : true;
        if (mr_bg_conn_broken(db))
            break;
        if (!keep)
            wait_remove(i);
    }
    free(live.v);
}

/* ---- bgconn thread: the reaper ---------------------------------------------------- */

static uint64_t reap_interval(const mr_queue_def *q)
{
    uint64_t ms = q->timeout_ms / 4;
    return ms > 10000 ? 10000 : ms < 100 ? 100 : ms;
}

/* Releases the zombie claims of one table, lock held. */
static void reap_table(MYSQL *db, size_t i)
{
    const mr_queue_def *q = &Q.cur.q[i];
    idset owners = {0}, live = {0};
    char *find = mr_queue_reap_find_sql(q);
    bool ok = find && read_ids(db, find, "queue reaper: finding old claims", &owners);
    free(find);
    if (ok && owners.n)
        ok = read_live(db, &live);
    for (size_t k = 0; ok && k < owners.n; k++) {
        if (idset_has(&live, owners.v[k]))
            continue;
        char *sql = mr_queue_reap_sql(q, owners.v[k]);
        long long n = run_update(db, sql, "queue reaper: release");
        free(sql);
        ok = n >= 0;
        if (n > 0) {
            mr_info(0,
                    "queue reaper: released %lld rows of %s.%s claimed by connection %" PRIu64
                    ", which is gone, more than %" PRIu64 " ms ago (rule %s)",
                    n, q->schema, q->table, owners.v[k], q->timeout_ms, Q.cur.rule[i]);
            mr_stat_add(&Q.stats.reaper_rows, (uint64_t)n);
        }
    }
    if (!ok)
        mr_stat_add(&Q.stats.errors, 1);
    free(owners.v);
    free(live.v);
}

/* Reads one text value from a single-row query into out; false on error or NULL. */
static bool query_text(MYSQL *db, const char *sql, const char *what, char *out, size_t cap)
{
    if (!mr_bg_query(db, sql, what))
        return false;
    MYSQL_RES *res = mysql_store_result(db);
    MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
    bool ok = row && row[0] && strlen(row[0]) < cap;
    if (ok)
        memcpy(out, row[0], strlen(row[0]) + 1);
    mysql_free_result(res);
    return ok;
}

/* The `reap` template of a release-template rule, lock held. The cutoff
 * is read before PROCESSLIST: a claim older than it was made by a
 * connection that existed before the list was read, so an owner missing
 * from the list is gone for good (ids are not reused), and a connection
 * that appears later cannot own a row that old. */
static void reap_template(MYSQL *db, size_t i)
{
    const mr_queue_def *q = &Q.cur.q[i];
    char cutoff[64];
    idset live = {0};
    char *get = mr_queue_cutoff_sql(q);
    bool ok = get && query_text(db, get, "queue reaper: reading the cutoff", cutoff, sizeof cutoff);
    free(get);
    ok = ok && read_live(db, &live);
    long long n = -1;
    if (ok) {
        char *sql = mr_queue_fill_reap(q->reap, live.v, live.n, cutoff);
        n = run_update(db, sql, "queue reaper: reap template");
        free(sql);
    } else {
        mr_stat_add(&Q.stats.errors, 1);
    }
    if (n > 0) {
        mr_info(0,
                "queue reaper: released %lld rows of %s.%s claimed before %s by connections "
                "that are gone (rule %s, reap template)",
                n, q->schema, q->table, cutoff, Q.cur.rule[i]);
        mr_stat_add(&Q.stats.reaper_rows, (uint64_t)n);
    }
    free(live.v);
}

/* One round for table i: only with the advisory lock, so that of several
 * proxies on one server a single reaper works at a time. */
static void reap_round(MYSQL *db, size_t i)
{
    const mr_queue_def *q = &Q.cur.q[i];
    char *get = mr_queue_lock_sql(q, 1);
    uint64_t got = 0;
    bool ok = get && query_number(db, get, "queue reaper: GET_LOCK", &got);
    free(get);
    if (!ok || !got) {
        mr_stat_add(ok ? &Q.stats.reaper_skipped : &Q.stats.errors, 1);
        if (ok)
            mr_debug(0, "queue reaper: another proxy reaps %s.%s now; skipped", q->schema,
                     q->table);
        return;
    }
    if (q->reap)
        reap_template(db, i);
    else
        reap_table(db, i);
    mr_stat_add(&Q.stats.reaper_runs, 1);
    char *rel = mr_queue_lock_sql(q, 0);
    uint64_t ignored;
    if (!rel || !query_number(db, rel, "queue reaper: RELEASE_LOCK", &ignored))
        mr_stat_add(&Q.stats.errors, 1);
    free(rel);
}

/* Runs the rounds that are due; ms until the next one. */
static uint64_t reap_due(MYSQL *db, uint64_t now)
{
    uint64_t next = 60000;
    for (size_t i = 0; i < Q.cur.n && !mr_bg_conn_broken(db); i++) {
        const mr_queue_def *q = &Q.cur.q[i];
        if (!has_reaper(q))
            continue;
        if (now >= Q.next_reap[i]) {
            reap_round(db, i);
            Q.next_reap[i] = now + reap_interval(q);
        }
        uint64_t left = Q.next_reap[i] - now;
        next = left < next ? left : next;
    }
    return next;
}

/* ---- bgconn thread: the tick ----------------------------------------------------- */

static uint64_t tick(MYSQL *db, void *arg)
{
    (void)arg;
    uint64_t now = mr_mono_ms();
    adopt_defs();
    take_ended(now);
    if (!Q.cur.n)
        Q.nwait = 0; /* no queue tables any more: nothing to release */
    if (Q.nwait)
        release_waiting(db, now);
    uint64_t delay = reap_due(db, mr_mono_ms());
    pthread_mutex_lock(&Q.lock);
    Q.idle = Q.nwait == 0 && Q.nended == 0;
    if (Q.idle)
        pthread_cond_broadcast(&Q.idle_cond);
    pthread_mutex_unlock(&Q.lock);
    if (!Q.cur.n && Q.idle)
        return MR_BG_NOTHING_DUE; /* no queue rules left: the connection may go */
    return Q.nwait && delay > POLL_MS ? POLL_MS : delay;
}

static bool start_thread(const mr_proxy *p)
{
    static const mr_bgconn_ops ops = {
        .name = "queue release", .on_connect = on_connect, .tick = tick, .arg = NULL};
    Q.process_priv = true; /* so that a missing privilege is reported once */
    Q.bg = mr_bgconn_start(p->cfg, p->backend_name, &ops);
    return Q.bg != NULL;
}
