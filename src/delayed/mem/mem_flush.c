/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/mem/mem_flush.c - the flusher of mode = memory (delayed/mem.h) on
 * its own bgconn thread and the proxy's own connection.
 *
 * A round swaps every shard's map out (a few instructions under each
 * shard's mutex) and merges the entries into `pending`, the keys this
 * thread holds, older first. Then, table by table, it applies pending in
 * chunks of flush_rows keys, one transaction per chunk: deletes, then the
 * upserts or UPDATE ... JOINs. A chunk that commits is dropped from
 * pending; one that fails is rolled back and stays for the next round
 * (merged with what arrives meanwhile), so it is applied once. When the
 * connection breaks during COMMIT nobody can tell whether the chunk
 * committed: it is dropped (and logged), never retried, so it is applied
 * at most once (rules/README.md, "memory mode").
 *
 * read_pending's point reads look into pending from workers (delayed/mem/mem.c,
 * read_sum): pending_lock guards every change to it (a shard's swap
 * and merge, a chunk's keys marked done after its COMMIT returned, the
 * sweep), never a statement to the server, so a read waits at most for one
 * shard's merge. A chunk's keys stay in pending, counted by reads, until
 * its COMMIT has returned. A chunk of a read_pending table also writes its
 * number into this proxy's row of `schema`.myrewrite_read_marks inside its
 * transaction: a read asks the server, in the same snapshot as the table's
 * row, whether that chunk is applied, so it counts the chunk exactly once.
 *
 * While no key is held the tick says nothing is due, so the connection is
 * closed after own_connection_idle; a table's first key wakes the thread,
 * which opens it again for the round.
 *
 * Threads: start/stop on the main thread (or under the reload lock); wake
 * and the FLUSH DELAYED job from any thread; the rest on the flusher thread. Counters are written
 * by the flusher thread only.
 *
 * Over 600 lines, on purpose: the round, its chunks (their marks and dead
 * letters) and the thread share one state, F, that no other file needs;
 * split, F would have to become a global of the room, as the store's
 * shards had to (delayed/mem/shards.c), for no reader's gain.
 */
#include <inttypes.h>
#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "delayed/flush/flush_job.h"
#include "delayed/mem/mem_impl.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"
#include "myrewrite/delayed/reject.h"
#include "myrewrite/net/bgconn.h"

#define KEYS_PER_STATEMENT 500
#define IDLE_MS 60000

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    /* guarded by lock */
    mr_bgconn *bg;
    bool final_wanted, final_done;
    uint64_t deadline_ms;
    /* any thread */
    mr_counter rounds, chunks, keys, errors, lost;
    /* written by the flusher thread under pending_lock, read by workers under it */
    pthread_mutex_t pending_lock;
    dm_map pending;
    uint64_t inflight; /* the chunk in flight with a mark written, 0: none */
    uint64_t proxy;    /* this proxy's row in the marks tables; set before the thread */
    /* flusher thread */
    uint64_t chunks_sent; /* chunk numbers */
    mr_dmem_syntax syntax;
    unsigned fail_code; /* the latest failed chunk's error, read before its ROLLBACK */
    char fail_msg[200];
} F = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .cond = PTHREAD_COND_INITIALIZER,
       .pending_lock = PTHREAD_MUTEX_INITIALIZER};

void dm_pending_lock(void) { pthread_mutex_lock(&F.pending_lock); }

void dm_pending_unlock(void) { pthread_mutex_unlock(&F.pending_lock); }

uint64_t dm_pending_inflight(void) { return F.inflight; }

uint64_t dm_marks_proxy(void) { return F.proxy; }

const dm_entry *dm_pending_find(const struct mr_dmem_table *t, const char *key, size_t klen,
                                uint64_t hash)
{
    const dm_entry *e = dm_find(&F.pending, t, key, klen, hash);
    return e && !e->done ? e : NULL;
}

static void count(mr_counter *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* ---- gathering ------------------------------------------------------------------ */

/* Moves every shard's entries into pending, composing a key's older
 * change (pending) with its newer one. */
static void gather(void)
{
    for (unsigned i = 0; i < dm_shards(); i++) {
        dm_map m = {0};
        /* swap and merge in one hold: a read never sees a key in neither place */
        dm_pending_lock();
        dm_swap_shard(i, &m);
        for (size_t b = 0; m.b && b <= m.mask; b++)
            for (dm_entry *e = m.b[b], *next; e; e = next) {
                next = e->next;
                dm_entry *old = dm_find(&F.pending, e->t, e->key, e->klen, e->hash);
                if (old) {
                    dm_compose(old, e);
                    atomic_fetch_sub(&e->t->nkeys, 1);
                    dm_entry_free(e);
                } else if (!dm_insert(&F.pending, e)) {
                    /* cannot happen once pending has buckets; keep the key anyway */
                    e->next = NULL;
                    mr_error(0, "delayed: out of memory merging keys; a delta was lost");
                    atomic_fetch_sub(&e->t->nkeys, 1);
                    dm_entry_free(e);
                }
            }
        dm_pending_unlock();
        free(m.b);
    }
}

/* Frees the entries marked done and unlinks them from pending. */
static void sweep(void)
{
    dm_pending_lock();
    for (size_t b = 0; F.pending.b && b <= F.pending.mask; b++)
        for (dm_entry **pp = &F.pending.b[b]; *pp;) {
            dm_entry *e = *pp;
            if (!e->done) {
                pp = &e->next;
                continue;
            }
            *pp = e->next;
            F.pending.n--;
            atomic_fetch_sub(&e->t->nkeys, 1);
            dm_entry_free(e);
        }
    dm_pending_unlock();
}

/* ---- one chunk ---------------------------------------------------------------------- */

static bool run(MYSQL *db, const mr_buf *b, const struct mr_dmem_table *t, const char *what)
{
    return mr_bg_query_buf(db, b, t->rule, what);
}

static const mr_delayed_def *sort_def; /* the table being sorted (flusher thread only) */

static int by_shape(const void *a, const void *b)
{
    const mr_dmem_row *x = a, *y = b;
    uint64_t sx = mr_dmem_shape(sort_def, x->v), sy = mr_dmem_shape(sort_def, y->v);
    return (sx > sy) - (sx < sy);
}

typedef bool (*build_fn)(mr_buf *, const mr_delayed_def *, const mr_dmem_row *, size_t);

static bool upsert(mr_buf *b, const mr_delayed_def *d, const mr_dmem_row *r, size_t n)
{
    return mr_dmem_sql_upsert(b, d, r, n, F.syntax);
}

/* Statements of up to KEYS_PER_STATEMENT rows over rows[0..n), a new
 * statement wherever the shape changes when `by_shape_too`. */
static bool run_groups(MYSQL *db, const struct mr_dmem_table *t, const mr_dmem_row *rows, size_t n,
                       build_fn build, bool by_shape_too, const char *what)
{
    for (size_t at = 0; at < n;) {
        size_t end = at + 1;
        uint64_t shape = mr_dmem_shape(&t->def, rows[at].v);
        while (end < n && end - at < KEYS_PER_STATEMENT &&
               (!by_shape_too || mr_dmem_shape(&t->def, rows[end].v) == shape))
            end++;
        mr_buf b;
        mr_buf_init(&b);
        bool ok = build(&b, &t->def, rows + at, end - at) && run(db, &b, t, what);
        mr_buf_free(&b);
        if (!ok)
            return false;
        at = end;
    }
    return true;
}

/* The chunk's statements, inside its transaction. */
static bool apply_chunk(MYSQL *db, const struct mr_dmem_table *t, dm_entry **es, size_t n,
                        mr_dmem_row *rows)
{
    size_t nd = 0, nw = 0;
    for (size_t i = 0; i < n; i++)
        if (es[i]->del)
            rows[nd++] = (mr_dmem_row){es[i]->key, es[i]->klen, true, es[i]->v};
    if (!run_groups(db, t, rows, nd, mr_dmem_sql_delete, false, "deleting rows"))
        return false;
    bool insert = t->def.missing == MR_DELAYED_MISSING_INSERT;
    for (size_t i = 0; i < n; i++) {
        mr_dmem_row r = {es[i]->key, es[i]->klen, es[i]->del, es[i]->v};
        /* after a delete, only an upsert brings the row back */
        if (mr_dmem_row_writes(&t->def, &r) && (!r.del || insert))
            rows[nw++] = r;
    }
    sort_def = &t->def;
    qsort(rows, nw, sizeof *rows, by_shape);
    return run_groups(db, t, rows, nw, insert ? upsert : mr_dmem_sql_update, true,
                      insert ? "upserting deltas" : "adding deltas");
}

typedef enum { CHUNK_DONE, CHUNK_FAILED, CHUNK_UNKNOWN } chunk_rc;

/* A read_pending table's chunk is numbered and its keys noted in flight
 * (reads then ask the server whether it is applied); 0 for the others. */
static uint64_t number_chunk(const struct mr_dmem_table *t, dm_entry **es, size_t n)
{
    if (!atomic_load(&t->marks_ready))
        return 0;
    dm_pending_lock();
    uint64_t seq = ++F.chunks_sent;
    for (size_t i = 0; i < n; i++)
        es[i]->chunk = seq;
    F.inflight = seq;
    dm_pending_unlock();
    return seq;
}

/* The chunk's number into this proxy's mark row, in its transaction. A
 * failure stops the marks for the table (reads then count the chunk until
 * its COMMIT returns, as without them) but not the chunk. */
static void write_mark(MYSQL *db, struct mr_dmem_table *t, uint64_t seq)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_dmem_sql_mark(&b, t->def.schema, F.proxy, seq);
    if (!mr_bg_query_buf(db, &b, t->rule, "writing the read_pending mark")) {
        atomic_store(&t->marks_ready, false);
        dm_pending_lock();
        F.inflight = 0;
        dm_pending_unlock();
    }
    mr_buf_free(&b);
}

/* The chunk left flight (committed and marked done, or rolled back). */
static void chunk_landed(void)
{
    dm_pending_lock();
    F.inflight = 0;
    dm_pending_unlock();
}

static chunk_rc flush_chunk(MYSQL *db, struct mr_dmem_table *t, dm_entry **es, size_t n,
                            mr_dmem_row *rows)
{
    mr_buf b = {.data = (uint8_t *)(uintptr_t) "START TRANSACTION", .len = 17};
    uint64_t seq = number_chunk(t, es, n);
    bool ok = run(db, &b, t, "START TRANSACTION") && apply_chunk(db, t, es, n, rows);
    if (ok && seq)
        write_mark(db, t, seq);
    if (ok) {
        b = (mr_buf){.data = (uint8_t *)(uintptr_t) "COMMIT", .len = 6};
        if (run(db, &b, t, "COMMIT"))
            return CHUNK_DONE;
        if (mr_bg_conn_broken(db))
            return CHUNK_UNKNOWN;
    }
    count(&F.errors, 1);
    F.fail_code = mysql_errno(db);
    snprintf(F.fail_msg, sizeof F.fail_msg, "%s", mysql_error(db));
    if (!mr_bg_conn_broken(db))
        (void)mysql_query(db, "ROLLBACK");
    chunk_landed(); /* not applied: its keys are held again */
    return CHUNK_FAILED;
}

/* Counts a chunk's outcome and marks its keys done; false when it failed. */
static bool settle(const struct mr_dmem_table *t, chunk_rc rc, dm_entry **es, size_t m)
{
    if (rc == CHUNK_FAILED)
        return false;
    dm_pending_lock(); /* reads stop counting them only now, after the COMMIT returned */
    for (size_t i = 0; i < m; i++)
        es[i]->done = true;
    F.inflight = 0;
    dm_pending_unlock();
    if (rc == CHUNK_UNKNOWN) {
        mr_error(0,
                 "delayed %s: the connection broke during COMMIT; the %zu keys of that "
                 "chunk may or may not have been written and are not retried (never applied "
                 "twice)",
                 t->rule, m);
        count(&F.lost, m);
        return false;
    }
    count(&F.chunks, 1);
    count(&F.keys, m);
    return true;
}

/* Is the latest failed chunk's error one that the same keys would meet
 * again: a refusal of the data, the table gone, or, for a table whose rule was reloaded
 * away, any server error but a lock wait or deadlock (nothing will make
 * such a table take it, and its keys would be retried forever)? */
static bool refused(MYSQL *db, const struct mr_dmem_table *t)
{
    unsigned e = F.fail_code;
    if (mr_bg_conn_broken(db) || e == 1205 || e == 1213 || e == 0)
        return false;
    /* 1146: the table is gone, and its keys would be retried every round */
    return mr_dreject_data_error(e) || e == 1146 || (e < 2000 && !dm_table_live(t));
}

/* Moves key e to t's dead-letter table (one autocommitted INSERT) and
 * marks it done; false (the key stays pending) when that failed. When the
 * connection broke under the INSERT nobody can tell whether the server
 * wrote it: as for a COMMIT cut off, the key is dropped, not written again
 * (never two dead-letter rows for one change), and the log line carries
 * its key and change for the operator. */
static bool reject(MYSQL *db, struct mr_dmem_table *t, dm_entry *e, unsigned code, const char *msg)
{
    mr_buf b, key, change;
    mr_buf_init(&b);
    mr_buf_init(&key);
    mr_buf_init(&change);
    mr_dmem_row r = {e->key, e->klen, e->del, e->v};
    mr_dmem_describe(&key, &change, &t->def, &r);
    bool ok = !key.failed && !change.failed;
    if (ok && !t->reject_ready) {
        mr_dreject_put_create(&b, t->def.schema, t->def.table);
        ok = t->reject_ready = run(db, &b, t, "creating the dead-letter table");
        mr_buf_reset(&b);
    }
    if (ok)
        mr_dreject_put_insert(&b, t->def.schema, t->def.table, (const char *)key.data,
                              (const char *)change.data, 1, code, msg);
    bool sent = ok; /* the INSERT goes to the server */
    ok = ok && run(db, &b, t, "writing a refused key to the dead-letter table");
    if (!ok && sent && mr_bg_conn_broken(db)) {
        dm_pending_lock();
        e->done = true;
        dm_pending_unlock();
        count(&F.lost, 1);
        mr_error(0,
                 "delayed %s: the connection broke while %s on %s.%s %s (refused: %u %s) was "
                 "written to %s.%.47s_delayed_rejected; it may or may not be there and is not "
                 "written again",
                 t->rule, (const char *)change.data, t->def.schema, t->def.table,
                 (const char *)key.data, code, msg, t->def.schema, t->def.table);
    }
    if (ok) {
        dm_pending_lock();
        e->done = true;
        dm_pending_unlock();
        mr_error(0,
                 "delayed %s: the server refused %s on %s.%s %s (%u %s)%s; it went to "
                 "%s.%.47s_delayed_rejected",
                 t->rule, (const char *)change.data, t->def.schema, t->def.table,
                 (const char *)key.data, code, msg,
                 dm_table_live(t) ? "" : " after its rule was reloaded away", t->def.schema,
                 t->def.table);
        mr_dreject_note(t->def.schema, t->def.table, (const char *)key.data,
                        (const char *)change.data, 1, code, msg);
    }
    mr_buf_free(&b);
    mr_buf_free(&key);
    mr_buf_free(&change);
    return ok;
}

/* A chunk the server refused for its data (a value out of a column's
 * range, a key it cannot convert): its keys one by one, each in its own
 * transaction, so one bad key does not hold back the others. A key that
 * fails alone in the same way goes to the dead-letter table; one that
 * fails otherwise stays pending for the next round. */
static bool isolate(MYSQL *db, struct mr_dmem_table *t, dm_entry **es, size_t m, mr_dmem_row *rows)
{
    bool all = true;
    for (size_t i = 0; i < m && !mr_bg_conn_broken(db); i++) {
        chunk_rc rc = m > 1 ? flush_chunk(db, t, &es[i], 1, rows) : CHUNK_FAILED;
        if (rc == CHUNK_FAILED && refused(db, t)) {
            char msg[sizeof F.fail_msg];
            memcpy(msg, F.fail_msg, sizeof msg);
            all = reject(db, t, es[i], F.fail_code, msg) && all;
            continue;
        }
        all = settle(t, rc, &es[i], 1) && all;
        if (rc == CHUNK_UNKNOWN)
            return false;
    }
    return all && !mr_bg_conn_broken(db);
}

/* A read_pending table's marks table, once per connection (outside any
 * transaction: CREATE commits). Without it reads count a chunk until its
 * COMMIT returns. */
static void make_marks(MYSQL *db, struct mr_dmem_table *t)
{
    if (!t->def.read_pending || atomic_load(&t->marks_ready) || t->marks_tried)
        return;
    mr_buf b;
    mr_buf_init(&b);
    mr_dmem_sql_marks_table(&b, t->def.schema);
    t->marks_tried = true;
    atomic_store(&t->marks_ready, mr_bg_query_buf(db, &b, t->rule,
                                                  "creating the read_pending "
                                                  "marks table"));
    mr_buf_free(&b);
}

/* Applies table t's pending keys in chunks; false when some stay pending. */
static bool flush_table(MYSQL *db, struct mr_dmem_table *t, uint64_t deadline)
{
    mr_dreject_round_begin(t->def.schema, t->def.table); /* even with nothing pending */
    make_marks(db, t); /* before any key: a prepared read names it only once it exists */
    if (!dm_table_keyed(t))
        return true; /* no statement has reached it yet: nothing held, no key to write with */
    size_t n = 0;
    for (size_t b = 0; F.pending.b && b <= F.pending.mask; b++)
        for (dm_entry *e = F.pending.b[b]; e; e = e->next)
            n += e->t == t && !e->done;
    if (!n)
        return true;
    dm_entry **es = malloc(n * sizeof *es);
    size_t chunk = t->def.flush_rows;
    mr_dmem_row *rows = malloc((n < chunk ? n : chunk) * sizeof *rows);
    bool ok = es && rows, go = ok;
    size_t k = 0;
    for (size_t b = 0; ok && b <= F.pending.mask; b++)
        for (dm_entry *e = F.pending.b[b]; e; e = e->next)
            if (e->t == t && !e->done)
                es[k++] = e;
    for (size_t at = 0; go && at < n; at += chunk) {
        size_t m = n - at < chunk ? n - at : chunk;
        chunk_rc rc = flush_chunk(db, t, es + at, m, rows);
        if (!settle(t, rc, es + at, m)) {
            ok = false;
            go = rc == CHUNK_FAILED && refused(db, t);
            if (go)
                ok = isolate(db, t, es + at, m, rows);
        }
        if (deadline && mr_mono_ms() >= deadline) {
            ok = ok && at + m >= n;
            go = false;
        }
    }
    free(es);
    free(rows);
    return ok;
}

/* What one round is asked to do beyond the tables that are due. */
typedef struct round_ask {
    bool all;           /* every table (final flush) */
    const char *filter; /* FLUSH DELAYED's tables; NULL: none asked */
    uint64_t deadline;  /* final flush: stop chunking then (0 = none) */
    bool asked_ok;      /* out: the tables asked for have nothing pending */
} round_ask;

/* Gathers every shard, then flushes the tables that are due or asked for.
 * False when a flushed table keeps keys pending. *wait is the time until
 * the next table is due. */
static bool round_due(MYSQL *db, round_ask *a, uint64_t *wait)
{
    gather();
    bool ok = true, any = false;
    uint64_t now = mr_mono_ms();
    *wait = IDLE_MS;
    a->asked_ok = true;
    for (struct mr_dmem_table *t = dm_tables(); t; t = t->next) {
        bool wanted = atomic_exchange(&t->wanted, false);
        bool asked = a->all || (a->filter && mr_delayed_filter_matches(a->filter, &t->def));
        if ((asked || wanted || now >= t->next_ms) && !mr_bg_conn_broken(db)) {
            any = true;
            bool tok = flush_table(db, t, a->deadline);
            ok = tok && ok; /* one table's trouble holds back no other */
            a->asked_ok = a->asked_ok && (tok || !asked);
            now = mr_mono_ms();
            t->next_ms = now + t->def.flush_interval_ms;
        } else if (asked) {
            a->asked_ok = false; /* the connection broke */
        }
        uint64_t left = t->next_ms > now ? t->next_ms - now : 0;
        *wait = left < *wait ? left : *wait;
    }
    sweep();
    if (any)
        count(&F.rounds, 1);
    return ok;
}

/* ---- the thread ------------------------------------------------------------------- */

static bool on_connect(MYSQL *db, void *arg)
{
    (void)arg;
    F.syntax = mr_dmem_syntax_for(mysql_get_server_info(db), mysql_get_server_version(db));
    for (struct mr_dmem_table *t = dm_tables(); t; t = t->next) {
        t->reject_ready = false;
        t->marks_tried = false;
        make_marks(db, t); /* at once: a prepared read names it only once it exists */
    }
    mr_info(0, "delayed memory flush: server %s, upserts with %s", mysql_get_server_info(db),
            F.syntax == MR_DMEM_SYNTAX_ROW_ALIAS ? "a row alias" : "VALUES()");
    return true;
}

/* No key held anywhere (shards or pending): no round is due until a
 * statement brings one, and mr_dmem_apply wakes the thread when a table's
 * first key arrives, so the connection may close after own_connection_idle
 * and open again for that flush. */
static bool nothing_held(void)
{
    if (F.pending.n)
        return false;
    for (struct mr_dmem_table *t = dm_tables(); t; t = t->next)
        if (atomic_load_explicit(&t->nkeys, memory_order_relaxed))
            return false;
    return true;
}

static uint64_t tick(MYSQL *db, void *arg)
{
    (void)arg;
    pthread_mutex_lock(&F.lock);
    bool final = F.final_wanted;
    uint64_t deadline = F.deadline_ms;
    pthread_mutex_unlock(&F.lock);
    uint64_t wait;
    round_ask a = {.all = final, .filter = NULL, .deadline = final ? deadline : 0};
    bool ok = round_due(db, &a, &wait);
    pthread_mutex_lock(&F.lock);
    F.final_done = F.final_done || final;
    pthread_cond_broadcast(&F.cond);
    pthread_mutex_unlock(&F.lock);
    if (!ok && wait < 100)
        wait = 100; /* a failing server: no retry loop */
    return ok && !final && nothing_held() ? MR_BG_NOTHING_DUE : wait;
}

/* ---- FLUSH DELAYED from a client: a job (as delayed/flush/flush.c's) ------------------ */

/* Answered once: a round that the connection broke under reports its keys
 * pending (2), and they are flushed by the rounds after the reconnect. */
static bool run_flush_job(MYSQL *db, void *arg)
{
    dflush_job *j = arg;
    uint64_t wait;
    round_ask a = {.filter = j->filter};
    round_due(db, &a, &wait);
    dflush_job_done(j, a.asked_ok ? 0 : 2);
    return true;
}

bool mr_dmem_flush_job(const char *table_filter, void (*done)(void *arg, int rc), void *arg)
{
    pthread_mutex_lock(&F.lock);
    mr_bgconn *bg = F.bg;
    pthread_mutex_unlock(&F.lock);
    return dflush_job_submit(bg, run_flush_job, table_filter, done, arg);
}

bool dm_flusher_start(const mr_proxy *p)
{
    static const mr_bgconn_ops ops = {
        .name = "delayed memory flush", .on_connect = on_connect, .tick = tick, .arg = NULL};
    /* this run's row in the marks tables: another proxy, or this one after a
     * restart, never takes a mark for one of its chunks */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    F.proxy = ((uint64_t)ts.tv_sec << 20 ^ (uint64_t)ts.tv_nsec) * 0x9e3779b97f4a7c15ULL ^
              (uint64_t)getpid();
    mr_bgconn *bg = mr_bgconn_start(p->cfg, p->backend_name, &ops);
    pthread_mutex_lock(&F.lock);
    F.bg = bg;
    pthread_mutex_unlock(&F.lock);
    return bg != NULL;
}

bool dm_flusher_running(void)
{
    pthread_mutex_lock(&F.lock);
    bool r = F.bg != NULL;
    pthread_mutex_unlock(&F.lock);
    return r;
}

void dm_flusher_wake(struct mr_dmem_table *t)
{
    if (t)
        atomic_store(&t->wanted, true);
    pthread_mutex_lock(&F.lock);
    mr_bgconn *bg = F.bg;
    pthread_mutex_unlock(&F.lock);
    if (bg)
        mr_bgconn_wake(bg);
}

void dm_flusher_stats(mr_dmem_stats *out)
{
    out->rounds = atomic_load(&F.rounds);
    out->chunks = atomic_load(&F.chunks);
    out->keys = atomic_load(&F.keys);
    out->errors = atomic_load(&F.errors);
    out->lost = atomic_load(&F.lost);
}

void dm_flusher_stop(uint64_t drain_ms)
{
    struct timespec until = mr_deadline_in(CLOCK_REALTIME, drain_ms);
    pthread_mutex_lock(&F.lock);
    mr_bgconn *bg = F.bg;
    F.final_wanted = true;
    F.final_done = false;
    F.deadline_ms = mr_mono_ms() + drain_ms;
    pthread_mutex_unlock(&F.lock);
    if (!bg)
        return;
    mr_bgconn_wake(bg);
    pthread_mutex_lock(&F.lock);
    while (mr_bgconn_usable(bg) && !F.final_done &&
           pthread_cond_timedwait(&F.cond, &F.lock, &until) == 0)
        ;
    pthread_mutex_unlock(&F.lock);
    mr_bgconn_stop(bg);
    pthread_mutex_lock(&F.lock);
    F.bg = NULL;
    pthread_mutex_unlock(&F.lock);
    gather(); /* what the final round did not take: count it as lost, loudly */
    if (F.pending.n)
        mr_error(0,
                 "delayed: %zu keys held in memory were not flushed before shutdown "
                 "(shutdown_timeout, or the server is gone) and are lost",
                 F.pending.n);
    dm_map_free(&F.pending);
}
