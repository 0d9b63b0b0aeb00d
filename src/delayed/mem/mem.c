/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/mem/mem.c - the in-memory tables of mode = memory (delayed/mem.h):
 * one shard per worker, each a chained hash map of (table, key) -> net
 * change behind the shard's own mutex. A worker only ever locks its own
 * shard; the flusher locks each shard once per round, for as long as it
 * takes to swap two pointers. So the hot path takes no global lock.
 *
 * read_pending's reads (read_sum, through a table's mr_read_port) lock
 * every shard in turn under the flusher's pending lock: only tables of
 * rules with read_pending are read, and only by their point reads.
 *
 * Threads: mr_dmem_init / configure / stop on the main thread (configure
 * also under the reload lock); mr_dmem_apply and read_sum on workers.
 * The shards and the table list are delayed/mem/shards.c's, the maps
 * delayed/mem/map.c's.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delayed/mem/mem_impl.h"
#include "myrewrite/base/log.h"
#include "myrewrite/schema/cache.h"

static void put_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void put_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* First pass: how many keys are new, and may the batch go in at all? */
static int check_batch(dm_shard *sh, struct mr_dmem_table *t, const mr_dmem_batch *b,
                       uint64_t *fresh, char *err, size_t errlen)
{
    const char *p = (const char *)b->keys.data;
    *fresh = 0;
    for (uint32_t r = 0; r < b->nrows; r++) {
        size_t n = dm_tuple_len(p, t->def.nkeys);
        dm_entry *e = dm_find(&sh->map, t, p, n, dm_hash(t, p, n));
        *fresh += e == NULL;
        if (dm_overflows(e, b)) {
            put_err(err, errlen,
                    "UPDATE DELAYED on %s.%s: the delta held for this key would "
                    "overflow a signed 64-bit integer; run FLUSH DELAYED first",
                    t->def.schema, t->def.table);
            return -1;
        }
        p += n;
    }
    uint64_t held = atomic_load_explicit(&t->nkeys, memory_order_relaxed);
    if (*fresh && held + *fresh > t->def.memory_max_keys) {
        put_err(err, errlen,
                "DELAYED on %s.%s: the proxy holds %" PRIu64 " keys of this "
                "table in memory, its memory_max_keys (%" PRIu64 "); a flush has been asked "
                "for, retry shortly",
                t->def.schema, t->def.table, held, t->def.memory_max_keys);
        return -1;
    }
    return 0;
}

int mr_dmem_apply(unsigned shard_no, const mr_dmem_batch *b, uint64_t *affected, char *err,
                  size_t errlen)
{
    struct mr_dmem_table *t = b->def->mem;
    if (!t || !dm_M.shards) {
        put_err(err, errlen,
                "DELAYED on %s.%s: mode = memory needs the proxy's own "
                "connection to flush (proxy_user in the config); nothing was taken",
                b->def->schema, b->def->table);
        return -1;
    }
    dm_shard *sh = &dm_M.shards[shard_no % dm_M.nshards];
    uint64_t fresh, made = 0, before = 0;
    pthread_mutex_lock(&sh->lock);
    int rc = check_batch(sh, t, b, &fresh, err, errlen);
    /* all keys or none: a client that retries after the ERR counts nothing twice */
    bool oom = rc == 0 && !dm_map_apply(&sh->map, t, b, &made);
    /* counted before the flusher can swap the new keys out and count them off */
    if (made)
        before = atomic_fetch_add(&t->nkeys, made);
    mr_counter *c = rc == 0 ? &sh->statements : &sh->refused;
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    pthread_mutex_unlock(&sh->lock);
    uint64_t early = t->def.flush_early;
    if (rc != 0 || (early && before < early && before + made >= early))
        dm_flusher_wake(t); /* at the bound, or past the flush-early threshold */
    else if (made && !before)
        dm_flusher_wake(NULL); /* the first key: an idle flusher opens its connection */
    if (rc == 0 && oom) {
        put_err(err, errlen,
                "DELAYED on %s.%s: the proxy is out of memory; nothing of this statement "
                "was taken",
                t->def.schema, t->def.table);
        return -1;
    }
    *affected = b->nrows;
    return rc;
}

/* ---- read_pending ---------------------------------------------------------------- */

/* Adds entry e's change to the sums (e NULL: nothing); false on overflow. */
static bool add_entry(const dm_entry *e, int64_t *sums, size_t nsums, bool *gone)
{
    if (!e)
        return true;
    *gone |= e->del;
    for (size_t c = 0; c < nsums; c++)
        if (e->v[c].op == MR_DMEM_VAL_ADD && __builtin_add_overflow(sums[c], e->v[c].n, &sums[c]))
            return false;
    return true;
}

/* The flusher's entry for the key: in the chunk in flight (whose mark the
 * read asks the server about), or held like the shards' entries. */
static bool add_pending(const struct mr_dmem_table *t, const dm_entry *e, size_t nsums,
                        mr_read_held *out)
{
    uint64_t chunk = dm_pending_inflight();
    if (!e || !chunk || e->chunk != chunk || !atomic_load(&t->marks_ready))
        return add_entry(e, out->held, nsums, &out->gone);
    out->chunk = chunk;
    out->proxy = dm_marks_proxy();
    return add_entry(e, out->inflight, nsums, &out->gone);
}

/* What this proxy holds for one key of table arg: the flusher's pending
 * entry (a chunk in flight counts until its COMMIT returned), then every
 * shard's. Under the pending lock throughout, so a round's swap and merge
 * never hides a key from the read; a shard's lock is held only while its
 * entry is read. Any worker. */
static bool read_sum(void *arg, const char *key, size_t klen, size_t nsums, mr_read_held *out)
{
    const struct mr_dmem_table *t = arg;
    uint64_t h = dm_hash(t, key, klen);
    memset(out, 0, sizeof *out);
    if (nsums > MR_RULE_MAX_NAMES)
        return false;
    dm_pending_lock();
    bool ok = add_pending(t, dm_pending_find(t, key, klen, h), nsums, out);
    for (unsigned i = 0; ok && dm_M.shards && i < dm_M.nshards; i++) {
        dm_shard *sh = &dm_M.shards[i];
        pthread_mutex_lock(&sh->lock);
        ok = add_entry(dm_find(&sh->map, t, key, klen, h), out->held, nsums, &out->gone);
        pthread_mutex_unlock(&sh->lock);
    }
    dm_pending_unlock();
    return ok;
}

/* Has the flusher made table arg's marks table? A prepared read names it
 * only then (a COM_STMT_PREPARE naming a table that does not exist fails).
 * Any worker. */
static bool read_marks(void *arg, uint64_t *proxy)
{
    const struct mr_dmem_table *t = arg;
    *proxy = dm_marks_proxy();
    return atomic_load(&t->marks_ready);
}

/* ---- configuration -------------------------------------------------------------- */

static char **names_dup(char *const *v, size_t n, bool *ok)
{
    char **c = calloc(n ? n : 1, sizeof *c);
    *ok = *ok && c;
    for (size_t i = 0; c && i < n; i++)
        *ok = *ok && (c[i] = strdup(v[i])) != NULL;
    return c;
}

/* The rule's keys and, last, its bucket column: in memory and in the flush
 * the bucket is one more key column, filled by the proxy (delayed/bucket.h). */
static char **keys_with_bucket(const mr_delayed_def *s, bool *ok)
{
    size_t n = s->nkeys + (s->bucket_column != NULL);
    char **c = calloc(n ? n : 1, sizeof *c);
    *ok = *ok && c;
    for (size_t i = 0; c && i < n; i++)
        *ok = *ok && (c[i] = strdup(i < s->nkeys ? s->keys[i] : s->bucket_column)) != NULL;
    return c;
}

/* A table that learned its key from the schema is reused only while the
 * schema cache still gives that key: after an ALTER of the primary key a
 * reload gives the rule a fresh table, which learns the new one, while
 * the old table flushes what it holds under the old key. A key the cache
 * does not know now also gets a fresh table: reuse only saves coalescing. */
static bool key_still_current(const struct mr_dmem_table *t)
{
    if (!mr_dmem_keys_known(&t->learn))
        return true;
    mr_row_key rk;
    char *cols[MR_SD_MAX_KEY_COLS];
    if (mr_schema_cache_row_key(t->def.schema, t->def.table, &rk) != MR_KEY_FOUND || !rk.primary)
        return false;
    for (uint8_t i = 0; i < rk.ncols; i++)
        cols[i] = rk.cols[i];
    return mr_dmem_keys_same(&t->learn, cols, rk.ncols);
}

/* Do a table's keys (bucket column last) come from rule settings d? */
static bool same_keys(const struct mr_dmem_table *t, const mr_delayed_def *d)
{
    const mr_delayed_def *o = &t->def;
    if (t->from_schema || !d->nkeys)
        return t->from_schema && !d->nkeys && key_still_current(t);
    size_t n = d->nkeys + (d->bucket_column != NULL);
    if (o->nkeys != n || o->bucket != d->bucket)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(o->keys[i], i < d->nkeys ? d->keys[i] : d->bucket_column) != 0)
            return false;
    return true;
}

static void names_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static void table_free(struct mr_dmem_table *t)
{
    free(t->def.schema);
    free(t->def.table);
    if (t->from_schema)
        mr_dmem_keys_free(&t->learn); /* owns the names def.keys points at */
    else
        names_free(t->def.keys, t->def.nkeys);
    names_free(t->def.columns, t->def.ncolumns);
    names_free(t->def.set_columns, t->def.nset_columns);
    free(t->rule);
    free(t);
}

static struct mr_dmem_table *table_new(const mr_rule *r)
{
    const mr_delayed_def *s = r->delayed;
    struct mr_dmem_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    bool ok = true;
    t->def = *s;
    t->def.staging_table = t->def.staging_engine = NULL;
    t->def.mem = NULL;
    t->def.schema = strdup(s->schema);
    t->def.table = strdup(s->table);
    t->rule = strdup(r->name);
    ok = t->def.schema && t->def.table && t->rule;
    t->from_schema = !s->nkeys;
    if (t->from_schema) {
        t->def.keys = NULL; /* until a worker learns them */
        t->def.nkeys = 0;
        mr_dmem_keys_init(&t->learn, &t->def);
    } else {
        t->def.keys = keys_with_bucket(s, &ok);
        t->def.nkeys = s->nkeys + (s->bucket_column != NULL);
    }
    t->def.bucket_column = NULL; /* the last of the keys here */
    t->def.columns = names_dup(s->columns, s->ncolumns, &ok);
    t->def.set_columns = names_dup(s->set_columns, s->nset_columns, &ok);
    t->ncols = mr_dmem_columns(&t->def);
    t->read = (mr_read_port){.sum = read_sum, .marks = read_marks, .arg = t};
    t->live = true;
    if (!ok) {
        table_free(t);
        return NULL;
    }
    return t;
}

static bool same_names(char *const *a, size_t na, char *const *b, size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i], b[i]) != 0)
            return false;
    return true;
}

/* A table configured before for the same rule, unchanged: reloads reuse it,
 * so the list does not grow and held keys keep coalescing. */
static struct mr_dmem_table *reusable(const mr_rule *r)
{
    const mr_delayed_def *d = r->delayed;
    for (struct mr_dmem_table *t = dm_M.tables; t; t = t->next) {
        const mr_delayed_def *o = &t->def;
        if (strcmp(t->rule, r->name) == 0 && strcmp(o->schema, d->schema) == 0 &&
            strcmp(o->table, d->table) == 0 && o->missing == d->missing &&
            o->flush_interval_ms == d->flush_interval_ms && o->flush_rows == d->flush_rows &&
            o->flush_early == d->flush_early && o->memory_max_keys == d->memory_max_keys &&
            same_keys(t, d) && same_names(o->columns, o->ncolumns, d->columns, d->ncolumns) &&
            same_names(o->set_columns, o->nset_columns, d->set_columns, d->nset_columns))
            return t;
    }
    return NULL;
}

/* Under cfg_lock: no table is in the set in force (until marked again). */
static void set_all_dead(void)
{
    for (struct mr_dmem_table *t = dm_M.tables; t; t = t->next)
        t->live = false;
}

void mr_dmem_configure(const mr_proxy *p, const mr_ruleset *rs)
{
    size_t total = mr_ruleset_count(rs), n = 0;
    for (size_t i = 0; i < total; i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        n += r->kind == MR_RULE_DELAYED && r->enabled && r->delayed->mode == MR_DELAYED_MEMORY;
    }
    if (!n || !dm_M.shards || (!dm_flusher_running() && !dm_flusher_start(p))) {
        if (n)
            mr_error(0, "delayed: mode = memory rules have no flusher (set proxy_user); their "
                        "statements are refused");
        pthread_mutex_lock(&dm_M.cfg_lock);
        set_all_dead();
        pthread_mutex_unlock(&dm_M.cfg_lock);
        return;
    }
    pthread_mutex_lock(&dm_M.cfg_lock);
    set_all_dead(); /* in the same hold as what follows: the flusher never sees a kept
                       table not live */
    for (size_t i = 0; i < total; i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        if (r->kind != MR_RULE_DELAYED || !r->enabled || r->delayed->mode != MR_DELAYED_MEMORY)
            continue;
        struct mr_dmem_table *t = reusable(r);
        if (t) {
            t->live = true;
        } else if ((t = table_new(r)) != NULL) {
            t->next = dm_M.tables;
            dm_M.tables = t;
        } else {
            mr_error(0, "delayed %s: out of memory; its statements are refused", r->name);
            continue;
        }
        /* set once, before the set reaches any worker */
        mr_delayed_def *rd = (mr_delayed_def *)(uintptr_t)r->delayed;
        rd->mem = t;
        rd->mem_keys = t->from_schema ? &t->learn.port : NULL;
        rd->mem_read = rd->read_pending ? &t->read : NULL;
    }
    pthread_mutex_unlock(&dm_M.cfg_lock);
    dm_flusher_wake(NULL); /* new tables get their first round now */
}

void mr_dmem_stats_read(mr_dmem_stats *out)
{
    memset(out, 0, sizeof *out);
    dm_flusher_stats(out);
    for (unsigned i = 0; dm_M.shards && i < dm_M.nshards; i++) {
        out->statements += atomic_load_explicit(&dm_M.shards[i].statements, memory_order_relaxed);
        out->refused += atomic_load_explicit(&dm_M.shards[i].refused, memory_order_relaxed);
    }
    pthread_mutex_lock(&dm_M.cfg_lock);
    for (struct mr_dmem_table *t = dm_M.tables; t; t = t->next)
        out->keys_held += atomic_load_explicit(&t->nkeys, memory_order_relaxed);
    pthread_mutex_unlock(&dm_M.cfg_lock);
}

void mr_dmem_stop(uint64_t drain_ms)
{
    if (dm_flusher_running())
        dm_flusher_stop(drain_ms); /* the final round empties the shards */
    for (unsigned i = 0; dm_M.shards && i < dm_M.nshards; i++) {
        dm_map_free(&dm_M.shards[i].map);
        pthread_mutex_destroy(&dm_M.shards[i].lock);
    }
    free(dm_M.shards);
    dm_M.shards = NULL;
    pthread_mutex_lock(&dm_M.cfg_lock);
    while (dm_M.tables) {
        struct mr_dmem_table *t = dm_M.tables;
        dm_M.tables = t->next;
        table_free(t);
    }
    pthread_mutex_unlock(&dm_M.cfg_lock);
}