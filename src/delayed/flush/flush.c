/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/flush.c - the flusher of staged delayed rules (see
 * delayed/flush.h for what a flush does and why it is exactly-once): its
 * thread, its rounds, the tables default rules derive, FLUSH DELAYED's
 * jobs, and the main thread's side (configure, wake, stop).
 *
 * The main thread hands copies of the delayed rules over under `D.lock`;
 * the flusher's bgconn thread adopts them in its tick, creates missing
 * staging tables, and flushes each table when its interval is due. On stop
 * the main thread asks for a final flush and waits for it, bounded.
 * Owns the rule copies (made by delayed/flush/table.c). A table's setup is
 * delayed/flush/setup.c's, a chunk delayed/flush/apply.c's (the locked
 * path's delayed/flush/flush_locked.c's), the statements and counters
 * delayed/flush/exec.c's.
 */
#include "myrewrite/delayed/flush.h"

#include <mysql.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "delayed/flush/flush_impl.h"
#include "delayed/flush/flush_job.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"
#include "myrewrite/delayed/derive.h"
#include "myrewrite/delayed/reject.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/net/bgconn.h"
#include "myrewrite/stats/rule_stats.h"

#define IDLE_MS 60000
#define SETUP_RETRY_MS 10000 /* a table whose check failed is checked again after this */
#define SETUP_ASKED_MS 200   /* ... or, asked for (a staging table is missing), this */
#define STAGING_POLL_MS 20   /* a start waiting for the staging tables looks this often */
#define ADOPT_MS 60000       /* between scans for staging tables of default rules */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    /* guarded by lock */
    dflush_tables next;
    bool have_next;
    bool final_wanted;
    bool final_done;
    uint64_t staging_checks; /* ticks that set up every table not ready (done_cond) */
    bool setup_asked;        /* a staging table is missing: set up the tables not ready
                                now, whatever their setup_after_ms (mr_delayed_setup_now) */
    uint64_t deadline_ms;
    uint64_t flush_asked, flush_done; /* rounds asked (mr_delayed_wake), the last one served */
    char flush_filter[200];           /* its table ("" = all), as `t` or `schema.t` */
    /* main thread */
    mr_bgconn *bg;
    /* flusher thread */
    dflush_tables cur;
    dflush_tables derived;  /* tables derived by default rules (t only); kept across reloads */
    uint64_t next_adopt_ms; /* next scan for staging tables a default rule would own */
} D = {.lock = PTHREAD_MUTEX_INITIALIZER, .done_cond = PTHREAD_COND_INITIALIZER};

/* ---- rounds -------------------------------------------------------------------------- */

/* After a failed chunk: a staging table dropped outside the proxy is made
 * again (the proxy owns it), logged, and flushing goes on; a main table
 * that is gone sends the table back to its setup, which drains staging
 * into the dead-letter table. */
static void check_dropped(MYSQL *db, table *t, bool main_too)
{
    if (mr_bg_conn_broken(db) || !t->ready)
        return;
    if (dflush_table_exists(db, t, t->def.staging_table) == 0) {
        mr_warn(0,
                "delayed %s: the staging table %s.%s was dropped outside the proxy; it is "
                "created again (statements staged on it meanwhile got the server's ERR 1146 "
                "and were not taken)",
                t->rule, t->def.schema, t->def.staging_table);
        t->ready = false;
        if (!dflush_setup_table(db, t))
            t->setup_after_ms = mr_mono_ms() + SETUP_RETRY_MS;
    } else if (main_too && dflush_table_exists(db, t, t->def.table) == 0) {
        t->ready = false;
        t->setup_after_ms = 0; /* set up (and drained) in the next round */
    }
}

/* A round's duration goes to the histogram; a round whose chunks all
 * committed is the table's latest flush (SHOW DELAYED, lag). */
static void note_round(table *t, bool ok, uint64_t us)
{
    mr_flush_observe(us);
    struct mr_rule_stats *rows[2] = {t->stats, t->def.table_stats};
    for (int k = 0; k < 2; k++) {
        if (!rows[k])
            continue;
        mr_stat_add(&rows[k]->rounds, 1);
        if (ok) {
            atomic_store_explicit(&rows[k]->last_flush_us, us, memory_order_relaxed);
            atomic_store_explicit(&rows[k]->last_flush_at, mr_unix_ms(), memory_order_relaxed);
        }
    }
}

/* Flushes chunks until the staging table has fewer than flush_rows left
 * (or the deadline passes, 0 = none). False when a chunk failed or the
 * table could not be flushed (a FLUSH DELAYED on it answers an ERR). */
static bool flush_table(MYSQL *db, table *t, uint64_t deadline)
{
    mr_dreject_round_begin(t->def.schema, t->def.table); /* FLUSH DELAYED reports this round */
    if (!t->ready && mr_mono_ms() < t->setup_after_ms)
        return false; /* a failed check is not repeated (and logged) every round */
    if (!t->ready && !dflush_setup_table(db, t)) {
        t->setup_after_ms = mr_mono_ms() + SETUP_RETRY_MS;
        return false;
    }
    if (!dflush_named_lock(db, t, "GET_LOCK")) {
        mr_stat_add(&dflush_stats()->skipped, 1);
        return true; /* another proxy flushes it now */
    }
    mr_stat_add(&dflush_stats()->rounds, 1);
    uint64_t t0 = mr_mono_ns();
    long n;
    do
        n = t->locked ? dflush_locked_chunk(db, t) : dflush_chunk(db, t);
    while (n >= (long)t->def.flush_rows && (!deadline || mr_mono_ms() < deadline));
    note_round(t, n >= 0, (mr_mono_ns() - t0) / 1000);
    if (!mr_bg_conn_broken(db))
        (void)dflush_named_lock(db, t, "RELEASE_LOCK");
    if (n < 0)
        check_dropped(db, t, true);
    return n >= 0;
}

/* ---- flusher thread ------------------------------------------------------------------ */

/* The new set's table that flushes the same staging table as old, or NULL. */
static table *successor(dflush_tables *ts, const table *old)
{
    for (size_t i = 0; i < ts->n; i++)
        if (strcmp(ts->t[i].def.schema, old->def.schema) == 0 &&
            strcmp(ts->t[i].def.staging_table, old->def.staging_table) == 0)
            return &ts->t[i];
    return NULL;
}

/* A snapshot of the locked path lives on the connection, not in the rule:
 * the old rule applies what it holds (and sends an UNLOCK TABLES it owes)
 * before it goes; what it could not settle passes to the new rule on the
 * same staging table, or is logged as lost with the connection. */
static void hand_over_snapshots(MYSQL *db, dflush_tables *ts)
{
    for (size_t i = 0; i < D.cur.n; i++) {
        table *old = &D.cur.t[i], *next = successor(ts, old);
        if (dflush_locked_settle(db, old))
            continue;
        if (next) {
            memcpy(next->tmp_name, old->tmp_name, sizeof next->tmp_name);
            next->tmp_ready = old->tmp_ready;
            next->snap_stale = old->snap_stale;
            next->unlock_owed = old->unlock_owed;
        } else {
            mr_error(0,
                     "delayed %s: reloaded away while its flush snapshot %s.%s holds rows "
                     "that could not be applied; they are lost when the flusher's "
                     "connection closes",
                     old->rule, old->def.schema, old->tmp_name);
        }
    }
}

static void adopt_tables(MYSQL *db)
{
    pthread_mutex_lock(&D.lock);
    bool have = D.have_next;
    dflush_tables ts = D.next;
    D.have_next = false;
    pthread_mutex_unlock(&D.lock);
    if (!have)
        return;
    hand_over_snapshots(db, &ts);
    dflush_tables_free(&D.cur);
    D.cur = ts;
    D.next_adopt_ms = 0; /* a new default rule may own staging tables already */
}

static bool on_connect(MYSQL *db, void *arg)
{
    (void)db;
    (void)arg;
    for (size_t i = 0; i < D.cur.n + D.derived.n; i++) {
        table *t = i < D.cur.n ? &D.cur.t[i] : &D.derived.t[i - D.cur.n];
        t->ready = false;
        t->reject_ready = false;
        t->tmp_ready = t->snap_stale = t->unlock_owed = false; /* gone with the old one */
        t->setup_after_ms = 0;
    }
    D.next_adopt_ms = 0; /* a new connection may find staging tables a dead proxy left */
    return true;
}

/* ---- derived tables --------------------------------------------------------------- */

static mr_derive_reg *derived_reg;
static mr_derive_port derived_port;

static void derived_init(void)
{
    derived_reg = mr_derive_reg_new(); /* NULL: DELAYED on derived tables is sent plain */
    derived_port = (mr_derive_port){.lookup = mr_derive_lookup, .reg = derived_reg};
}

struct mr_derive_reg *mr_delayed_derived(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, derived_init);
    return derived_reg;
}

const struct mr_derive_port *mr_delayed_derive_port(void)
{
    return mr_delayed_derived() ? &derived_port : NULL;
}

/* The default rule named `rule` in the current set, or NULL (reloaded away). */
static const dflush_default *default_named(const char *rule)
{
    for (size_t i = 0; i < D.cur.nd; i++)
        if (strcmp(D.cur.d[i].how.rule, rule) == 0)
            return &D.cur.d[i];
    return NULL;
}

/* Is schema.name (a table or a staging table) another rule's than d's: an
 * explicit rule's, or, for the default rule of any schema, in a schema
 * with a default rule of its own? */
static bool owned(const dflush_default *dd, const char *schema, const char *name)
{
    for (size_t i = 0; strcmp(dd->schema, "*") == 0 && i < D.cur.nd; i++)
        if (strcmp(D.cur.d[i].schema, schema) == 0)
            return true;
    for (size_t i = 0; i < D.cur.n; i++) {
        const mr_delayed_def *d = &D.cur.t[i].def;
        if (strcmp(d->schema, schema) == 0 &&
            (strcmp(d->table, name) == 0 || strcmp(d->staging_table, name) == 0))
            return true;
    }
    return false;
}

static bool derived_push(table *t)
{
    table *grown = realloc(D.derived.t, (D.derived.n + 1) * sizeof *grown);
    if (!grown)
        return false;
    D.derived.t = grown;
    D.derived.t[D.derived.n++] = *t;
    return true;
}

/* Derives the pending tables (a bounded number per tick, so the flushes of
 * the others are not held back by a burst of new tables). */
static void derive_pending(MYSQL *db)
{
    mr_derive_reg *g = mr_delayed_derived();
    mr_derived *e;
    for (int n = 0; g && n < 50 && !mr_bg_conn_broken(db) && (e = mr_derive_take(g)); n++) {
        const dflush_default *dd = default_named(e->how.rule);
        table t;
        mr_delayed_def *def = NULL;
        char why[300];
        switch (dflush_derive(db, e, dd ? dd->stats : NULL, &t, &def, why, sizeof why)) {
        case DERIVE_OK:
            if (!derived_push(&t)) {
                dflush_table_free(&t);
                mr_derive_def_free(def);
                mr_derive_fail(g, e, "myrewrite: out of memory deriving the delayed rule");
                break;
            }
            mr_derive_publish(g, e, def);
            break;
        case DERIVE_FAILED:
            if (e->state != MR_DERIVE_FAILED) /* a retry that fails again is not logged again */
                mr_error(0, "delayed %s: %s", e->how.rule, why);
            mr_derive_fail(g, e, why);
            break;
        default: mr_derive_untake(g, e); /* the connection broke: again after the reconnect */
        }
    }
}

/* At start, after a reconnect and every ADOPT_MS: registers the tables
 * whose staging tables a default rule would own, so rows a dead proxy
 * staged are flushed without a statement on them; and gives the tables
 * that could not be derived another try. */
static void adopt_staging(MYSQL *db)
{
    uint64_t now = mr_mono_ms();
    mr_derive_reg *g = mr_delayed_derived();
    if (!g || now < D.next_adopt_ms || !D.cur.nd)
        return;
    D.next_adopt_ms = now + ADOPT_MS;
    mr_derive_retry_failed(g);
    for (size_t i = 0; i < D.cur.nd && !mr_bg_conn_broken(db); i++)
        dflush_adopt(db, g, &D.cur.d[i], owned);
}

/* One round: adopts and derives what is pending, then flushes the tables
 * that are due, every table when `final` (chunking until deadline), and
 * those matching `filter` (NULL: none asked). False when a table asked for
 * failed. *wait: the time until the next table is due. */
static bool round_over(MYSQL *db, const char *filter, bool final, uint64_t deadline, uint64_t *wait)
{
    adopt_staging(db); /* before deriving: an adopted table is flushed in this very round */
    derive_pending(db);
    uint64_t now = mr_mono_ms();
    bool asked_ok = true;
    *wait = IDLE_MS;
    for (size_t i = 0; i < D.cur.n + D.derived.n && !mr_bg_conn_broken(db); i++) {
        table *t = i < D.cur.n ? &D.cur.t[i] : &D.derived.t[i - D.cur.n];
        bool mine = filter && mr_delayed_filter_matches(filter, &t->def);
        if (final || mine || now >= t->next_ms) {
            /* a round reads everything staged so far (in chunks), so a
             * requested flush is an ordinary round run now */
            bool ok = flush_table(db, t, final ? deadline : 0);
            asked_ok = asked_ok && (ok || !mine);
            now = mr_mono_ms();
            t->next_ms = now + t->def.flush_interval_ms;
        }
        uint64_t left = t->next_ms > now ? t->next_ms - now : 0;
        *wait = left < *wait ? left : *wait;
    }
    return asked_ok;
}

/* Each table not set up yet (its staging table perhaps not created) is set
 * up now, ahead of any flush: a start waits for this (mr_delayed_wait_staging)
 * so that no staged statement meets a missing staging table. */
static void setup_pending(MYSQL *db)
{
    static uint64_t last_asked_ms;
    uint64_t now = mr_mono_ms();
    pthread_mutex_lock(&D.lock);
    bool asked = D.setup_asked && now - last_asked_ms >= SETUP_ASKED_MS;
    if (asked)
        D.setup_asked = false;
    pthread_mutex_unlock(&D.lock);
    if (asked)
        last_asked_ms = now;
    for (size_t i = 0; i < D.cur.n && !mr_bg_conn_broken(db); i++) {
        table *t = &D.cur.t[i];
        if (asked)
            check_dropped(db, t, false); /* a staged statement failed: here, perhaps */
        if (!t->ready && (asked || now >= t->setup_after_ms) && !dflush_setup_table(db, t))
            t->setup_after_ms = mr_mono_ms() + SETUP_RETRY_MS;
    }
    pthread_mutex_lock(&D.lock);
    D.staging_checks++;
    pthread_cond_broadcast(&D.done_cond);
    pthread_mutex_unlock(&D.lock);
}

static uint64_t tick(MYSQL *db, void *arg)
{
    (void)arg;
    adopt_tables(db);
    setup_pending(db);
    char filter[sizeof D.flush_filter];
    pthread_mutex_lock(&D.lock);
    bool final = D.final_wanted;
    uint64_t deadline = D.deadline_ms;
    uint64_t asked = D.flush_asked;
    bool asked_now = asked > D.flush_done;
    memcpy(filter, D.flush_filter, sizeof filter);
    pthread_mutex_unlock(&D.lock);
    uint64_t wait;
    round_over(db, asked_now ? filter : NULL, final, deadline, &wait);
    if ((final || asked_now) && !mr_bg_conn_broken(db)) {
        pthread_mutex_lock(&D.lock);
        D.final_done = D.final_done || final;
        if (asked > D.flush_done)
            D.flush_done = asked;
        pthread_cond_broadcast(&D.done_cond);
        pthread_mutex_unlock(&D.lock);
    }
    if (!D.cur.n && !D.derived.n && !D.cur.nd)
        return MR_BG_NOTHING_DUE; /* no delayed rules left: the connection may go */
    return wait;
}

/* ---- FLUSH DELAYED from a client: a job ----------------------------------------- */

/* The round runs on the flusher's thread, in its job queue: nobody waits
 * for it. A connection that broke under it runs it again once back. */
static bool run_flush_job(MYSQL *db, void *arg)
{
    dflush_job *j = arg;
    adopt_tables(db);
    uint64_t wait;
    bool ok = round_over(db, j->filter, false, 0, &wait);
    if (mr_bg_conn_broken(db))
        return false;
    dflush_job_done(j, ok ? 0 : 2);
    return true;
}

bool mr_delayed_flush_job(const char *table_filter, mr_delayed_flush_done done, void *arg)
{
    pthread_mutex_lock(&D.lock);
    mr_bgconn *bg = D.bg;
    pthread_mutex_unlock(&D.lock);
    return dflush_job_submit(bg, run_flush_job, table_filter, done, arg);
}

/* ---- main thread ------------------------------------------------------------------- */

static bool start_thread(const mr_proxy *p)
{
    static const mr_bgconn_ops ops = {
        .name = "delayed flush", .on_connect = on_connect, .tick = tick, .arg = NULL};
    mr_bgconn *bg = mr_bgconn_start(p->cfg, p->backend_name, &ops);
    pthread_mutex_lock(&D.lock); /* read by the other threads' calls */
    D.bg = bg;
    pthread_mutex_unlock(&D.lock);
    return bg != NULL;
}

void mr_delayed_setup_now(void)
{
    pthread_mutex_lock(&D.lock);
    mr_bgconn *bg = D.bg;
    D.setup_asked = true;
    pthread_mutex_unlock(&D.lock);
    if (bg)
        mr_bgconn_wake(bg);
}

bool mr_delayed_wait_staging(uint64_t timeout_ms)
{
    uint64_t end = mr_mono_ms() + timeout_ms;
    pthread_mutex_lock(&D.lock);
    mr_bgconn *bg = D.bg;
    /* in slices: a failed connect is seen by polling, nobody signals it */
    while (bg && D.staging_checks == 0 && mr_bgconn_connect_failures(bg) == 0 &&
           mr_mono_ms() < end) {
        struct timespec slice = mr_deadline_in(CLOCK_REALTIME, STAGING_POLL_MS);
        pthread_cond_timedwait(&D.done_cond, &D.lock, &slice);
    }
    bool done = !bg || D.staging_checks > 0;
    pthread_mutex_unlock(&D.lock);
    return done;
}

void mr_delayed_wake(void)
{
    pthread_mutex_lock(&D.lock);
    mr_bgconn *bg = D.bg;
    D.flush_asked++;
    D.flush_filter[0] = '\0'; /* all tables: a superset of any filter asked concurrently */
    pthread_mutex_unlock(&D.lock);
    if (bg)
        mr_bgconn_wake(bg);
}

void mr_delayed_configure(const mr_proxy *p, const mr_ruleset *rs)
{
    dflush_tables ts;
    if (!dflush_tables_from(&ts, rs)) {
        mr_error(0, "delayed: out of memory reading the delayed rules; they stay as they were");
        return;
    }
    if ((ts.n || ts.nd) && !D.bg && !start_thread(p)) {
        mr_error(0, "delayed: no own connection, so nothing is flushed: staged rows wait in "
                    "their staging tables until proxy_user is set");
        dflush_tables_free(&ts);
        return;
    }
    pthread_mutex_lock(&D.lock);
    if (D.have_next)
        dflush_tables_free(&D.next);
    D.next = ts;
    D.have_next = true;
    pthread_mutex_unlock(&D.lock);
    if (D.bg)
        mr_bgconn_wake(D.bg);
}

void mr_delayed_stop(uint64_t drain_ms)
{
    if (!D.bg)
        return;
    struct timespec until = mr_deadline_in(CLOCK_REALTIME, drain_ms);
    pthread_mutex_lock(&D.lock);
    D.final_wanted = true;
    D.final_done = false;
    D.deadline_ms = mr_mono_ms() + drain_ms;
    pthread_mutex_unlock(&D.lock);
    mr_bgconn_wake(D.bg);
    pthread_mutex_lock(&D.lock);
    while (mr_bgconn_usable(D.bg) && !D.final_done &&
           pthread_cond_timedwait(&D.done_cond, &D.lock, &until) == 0)
        ;
    bool done = D.final_done;
    pthread_mutex_unlock(&D.lock);
    if (!done)
        mr_warn(0, "delayed: final flush not done within the shutdown timeout; staged rows stay "
                   "in their staging tables for the next flush");
    mr_bgconn_stop(D.bg);
    D.bg = NULL;
    dflush_tables_free(&D.cur);
    dflush_tables_free(&D.derived);
    if (D.have_next)
        dflush_tables_free(&D.next);
    D.have_next = false;
    D.final_wanted = false;
}
