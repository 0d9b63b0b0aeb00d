/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schema/cache.c - the table descriptions behind schema/cache.h: a hash
 * table of entries with an LRU list, a FIFO of tables to load, DDL holds,
 * and the loader tick on the cache's own bgconn thread.
 *
 * Everything shared sits under C.lock, which is only ever held for hash
 * lookups, list edits and a memcpy: the loader runs its queries with the
 * lock released and installs the result afterwards. An entry's `gen` is
 * bumped by every invalidation, and a load installs only into the entry
 * generation it was queued for, so a load that raced with DDL is dropped.
 *
 * Only tables a rule in force asked about are read: a lookup (from a rule
 * that needs the key) marks its entry `wanted`; DDL holds create entries
 * that are not, and those are never loaded, and go when the DDL ends. A new
 * rule set (mr_schema_cache_rules_changed) unmarks them all.
 * Owns the entries, their descriptions, the queue and the holds.
 */
#include "myrewrite/schema/cache.h"
#include "myrewrite/base/clock.h"

#include <inttypes.h>
#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "myrewrite/base/log.h"
#include "myrewrite/net/bgconn.h"
#include "myrewrite/rules/kind.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/sql/lexer.h"
#include "myrewrite/sql/quote.h"
#include "myrewrite/sql/stmt.h"

#define DDL_TABLES 8            /* tables one DDL statement may hold */
#define DDL_TOKENS 512          /* tokens read of a DDL text (names come first) */
#define MISSING_RECHECK_MS 1000 /* a table that did not exist is read again this soon */

typedef struct entry {
    char schema[MR_SD_NAME];
    char table[MR_SD_NAME];
    uint64_t hash;
    struct entry *hnext;         /* bucket chain */
    struct entry *lprev, *lnext; /* LRU list, most recent first */
    bool loaded;                 /* key and desc are valid */
    bool queued;                 /* a load request is in the queue */
    bool wanted;                 /* a lookup asked for it under the rules in force */
    bool reported;               /* its keyless state was logged (once until DDL) */
    uint32_t gen;                /* bumped by each invalidation */
    uint32_t holds;              /* DDL statements in flight on the table */
    uint64_t loaded_ms;
    char last_error[160]; /* why the last load failed; "" when it did not */
    mr_row_key key;
    mr_table_desc *desc; /* owned */
} entry;

typedef struct req {
    char schema[MR_SD_NAME];
    char table[MR_SD_NAME];
    uint32_t gen;
    struct req *next;
} req;

typedef struct hold {
    uint64_t id;
    bool all; /* DDL on tables not named: drop everything again at its end */
    int n;
    mr_ddl_table t[DDL_TABLES];
    struct hold *next;
} hold;

static struct {
    pthread_mutex_t lock;
    /* guarded by lock */
    entry **buckets;
    size_t nbuckets; /* a power of two */
    size_t count;
    entry *lru_head, *lru_tail;
    req *q_head, *q_tail;
    hold *holds;
    uint64_t next_hold;
    /* set on the main thread before the loader starts, read-only after */
    bool on;
    uint64_t ttl_ms;
    size_t max_tables;
    mr_bgconn *bg;
    pthread_mutex_t hook_lock;  /* held while on_load runs or changes */
    void (*on_load)(void *arg); /* told after each table installed (loader thread) */
    void *on_load_arg;
    mr_schema_cache_stats stats; /* any thread, relaxed atomics */
} C = {.lock = PTHREAD_MUTEX_INITIALIZER, .hook_lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t name_hash(const char *schema, const char *table)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const char *p = schema; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
    h = (h ^ 0xff) * 0x100000001b3ULL; /* no byte of a name is 0xff in a separator's place */
    for (const char *p = table; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
    return h;
}

const mr_schema_cache_stats *mr_schema_cache_stats_get(void) { return &C.stats; }

/* ---- entries (C.lock held) ------------------------------------------------------ */

static entry *find(const char *schema, const char *table, uint64_t h)
{
    if (!C.buckets)
        return NULL;
    for (entry *e = C.buckets[h & (C.nbuckets - 1)]; e; e = e->hnext)
        if (e->hash == h && strcmp(e->table, table) == 0 && strcmp(e->schema, schema) == 0)
            return e;
    return NULL;
}

static void lru_unlink(entry *e)
{
    if (e->lprev)
        e->lprev->lnext = e->lnext;
    else
        C.lru_head = e->lnext;
    if (e->lnext)
        e->lnext->lprev = e->lprev;
    else
        C.lru_tail = e->lprev;
    e->lprev = e->lnext = NULL;
}

static void lru_front(entry *e)
{
    if (C.lru_head == e)
        return;
    if (e->lprev || e->lnext || C.lru_tail == e)
        lru_unlink(e);
    e->lnext = C.lru_head;
    if (C.lru_head)
        C.lru_head->lprev = e;
    C.lru_head = e;
    if (!C.lru_tail)
        C.lru_tail = e;
}

static void entry_remove(entry *e)
{
    entry **pp = &C.buckets[e->hash & (C.nbuckets - 1)];
    while (*pp != e)
        pp = &(*pp)->hnext;
    *pp = e->hnext;
    lru_unlink(e);
    mr_td_free(e->desc);
    free(e);
    C.count--;
}

/* Drops the least recently used entry that no DDL holds. */
static bool evict_one(void)
{
    for (entry *e = C.lru_tail; e; e = e->lprev)
        if (!e->holds) {
            entry_remove(e);
            mr_stat_add(&C.stats.evictions, 1);
            return true;
        }
    return false;
}

static entry *create(const char *schema, const char *table, uint64_t h)
{
    if (strlen(schema) >= MR_SD_NAME || strlen(table) >= MR_SD_NAME)
        return NULL;
    if (C.count >= C.max_tables && !evict_one())
        return NULL;
    entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    strcpy(e->schema, schema);
    strcpy(e->table, table);
    e->hash = h;
    entry **b = &C.buckets[h & (C.nbuckets - 1)];
    e->hnext = *b;
    *b = e;
    lru_front(e);
    C.count++;
    return e;
}

/* Forgets what was loaded: lookups answer unknown until the next load. */
static void invalidate(entry *e)
{
    e->gen++;
    e->loaded = false;
    e->queued = false; /* a request already queued is for the old generation: dropped */
    mr_td_free(e->desc);
    e->desc = NULL;
    mr_stat_add(&C.stats.invalidations, 1);
}

/* Queues a load of e (once); true when the loader should be woken. */
static bool enqueue(entry *e)
{
    if (e->queued || e->holds)
        return false;
    req *r = calloc(1, sizeof *r);
    if (!r)
        return false;
    memcpy(r->schema, e->schema, sizeof r->schema);
    memcpy(r->table, e->table, sizeof r->table);
    r->gen = e->gen;
    if (C.q_tail)
        C.q_tail->next = r;
    else
        C.q_head = r;
    C.q_tail = r;
    e->queued = true;
    return true;
}

/* ---- lookups (workers) ------------------------------------------------------------ */

/* What a lookup that cannot answer tells the rule (for logs and --explain). */
typedef enum why_unknown { W_OFF, W_DDL, W_LOADING, W_FULL } why_unknown;

static void unknown(mr_row_key *out, why_unknown w, const char *schema, const char *table,
                    const char *last_error)
{
    memset(out, 0, sizeof *out);
    out->status = MR_KEY_UNKNOWN;
    out->pending = w == W_DDL || w == W_LOADING;
    switch (w) {
    case W_OFF:
        snprintf(out->why, sizeof out->why, "no proxy_user: the schema cache is off (%s.%s)",
                 schema, table);
        break;
    case W_DDL:
        snprintf(out->why, sizeof out->why,
                 "DDL on %s.%s is in flight: its key is read "
                 "again once it is done",
                 schema, table);
        break;
    case W_LOADING:
        snprintf(out->why, sizeof out->why,
                 "the schema of %.64s.%.64s is not loaded yet (a load "
                 "is queued%s%.100s)",
                 schema, table, last_error[0] ? "; the last one failed: " : "", last_error);
        break;
    case W_FULL:
        snprintf(out->why, sizeof out->why,
                 "the schema cache cannot take %s.%s (out of "
                 "memory, or every entry is held by DDL)",
                 schema, table);
        break;
    }
}

/* Under the lock: answers from e, or says why it cannot yet. */
static bool answer(entry *e, mr_row_key *out, uint64_t now)
{
    if (e->holds) {
        unknown(out, W_DDL, e->schema, e->table, "");
        return false;
    }
    if (!e->loaded) {
        unknown(out, W_LOADING, e->schema, e->table, e->last_error);
        mr_stat_add(&C.stats.misses, 1);
        return enqueue(e) || e->queued; /* a wake also retries after a failed connect */
    }
    *out = e->key;
    mr_stat_add(&C.stats.hits, 1);
    /* a table that did not exist is looked for again soon: a DELAYED
     * statement parked on it (session/stmt/park_stmt.c) goes on once it is created */
    uint64_t ttl = e->desc && !e->desc->exists && MISSING_RECHECK_MS < C.ttl_ms ? MISSING_RECHECK_MS
                                                                                : C.ttl_ms;
    return now - e->loaded_ms >= ttl && enqueue(e);
}

/* Under the lock: the entry of a table, made (and queued by the caller's
 * answer) on a miss; NULL when the cache cannot take it. */
static entry *lookup(const char *schema, const char *table)
{
    uint64_t h = name_hash(schema, table);
    entry *e = find(schema, table, h);
    if (!e)
        e = create(schema, table, h);
    if (e)
        lru_front(e);
    return e;
}

mr_key_status mr_schema_cache_row_key(const char *schema, const char *table, mr_row_key *out)
{
    if (!C.on) {
        unknown(out, W_OFF, schema, table, "");
        return MR_KEY_UNKNOWN;
    }
    uint64_t now = mr_mono_ms();
    pthread_mutex_lock(&C.lock);
    entry *e = lookup(schema, table);
    bool wake = false;
    if (e) {
        e->wanted = true; /* a rule in force asked: reloaded after DDL from now on */
        wake = answer(e, out, now);
    } else {
        unknown(out, W_FULL, schema, table, "");
    }
    pthread_mutex_unlock(&C.lock);
    if (wake)
        mr_bgconn_wake(C.bg);
    return out->status;
}

mr_range_status mr_schema_cache_column_range(const char *schema, const char *table,
                                             const char *column, mr_col_range *out)
{
    if (!C.on)
        return MR_RANGE_UNKNOWN;
    mr_row_key rk; /* the same loading, DDL and TTL rules as a key lookup */
    uint64_t now = mr_mono_ms();
    mr_range_status st = MR_RANGE_UNKNOWN;
    pthread_mutex_lock(&C.lock);
    entry *e = lookup(schema, table);
    if (e)
        e->wanted = true; /* a delayed rule in force asked */
    bool wake = e && answer(e, &rk, now);
    if (e && e->loaded && !e->holds && e->desc)
        st = mr_td_column_range(e->desc, column, out);
    pthread_mutex_unlock(&C.lock);
    if (wake)
        mr_bgconn_wake(C.bg);
    return st;
}

static mr_key_status source_row_key(void *arg, const char *schema, const char *table,
                                    mr_row_key *out)
{
    (void)arg;
    return mr_schema_cache_row_key(schema, table, out);
}

static mr_range_status source_column_range(void *arg, const char *schema, const char *table,
                                           const char *column, mr_col_range *out)
{
    (void)arg;
    return mr_schema_cache_column_range(schema, table, column, out);
}

static const mr_schema_source source = {.row_key = source_row_key,
                                        .column_range = source_column_range};

const mr_schema_source *mr_schema_cache_source(void) { return &source; }

void mr_schema_cache_on_load(void (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&C.hook_lock);
    C.on_load = fn;
    C.on_load_arg = arg;
    pthread_mutex_unlock(&C.hook_lock);
}

/* Queues a load of one table named by a rule, unless it is known or queued. */
static void want(const char *schema, const char *table)
{
    if (!schema || !table || strcmp(schema, "*") == 0 || strcmp(table, "*") == 0)
        return;
    uint64_t h = name_hash(schema, table);
    pthread_mutex_lock(&C.lock);
    entry *e = find(schema, table, h);
    if (!e)
        e = create(schema, table, h);
    if (e)
        e->wanted = true; /* a rule in force names it */
    bool wake = e && !e->loaded && enqueue(e);
    pthread_mutex_unlock(&C.lock);
    if (wake)
        mr_bgconn_wake(C.bg);
}

void mr_schema_cache_preload(const mr_ruleset *rs)
{
    if (!C.on)
        return;
    for (size_t i = 0; i < mr_ruleset_count(rs); i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        const char *schema, *table, *staging;
        if (r->entry->wants_row_key && r->entry->wants_row_key(r) &&
            r->entry->tables(r, &schema, &table, &staging))
            want(schema, table);
    }
}

/* ---- DDL ------------------------------------------------------------------------ */

/* Is the first word of the text one that starts DDL? */
static bool starts_ddl(const char *sql, size_t len, unsigned lex_flags)
{
    sql_lexer lx;
    sql_token t;
    sql_lexer_init(&lx, sql, len, lex_flags | SQL_LEX_SKIP_COMMENTS);
    if (!sql_lexer_next(&lx, &t) || t.kind != SQL_TOK_WORD)
        return false;
    return t.id == SQL_KW_CREATE || t.id == SQL_KW_ALTER || t.id == SQL_KW_DROP ||
           t.id == SQL_KW_RENAME || t.id == SQL_KW_TRUNCATE;
}

/* Past the tokens read (a long text): does a later statement start with a
 * DDL verb? Then its tables are unknown here and everything must go. */
static bool ddl_after(const char *sql, size_t len, const sql_token *last, unsigned lex_flags)
{
    size_t from = (size_t)last->off + last->len;
    sql_lexer lx;
    sql_token t;
    sql_lexer_init(&lx, sql + from, len - from, lex_flags | SQL_LEX_SKIP_COMMENTS);
    bool after_semi = last->kind == SQL_TOK_SEMI;
    while (sql_lexer_next(&lx, &t)) {
        if (after_semi && t.kind == SQL_TOK_WORD &&
            (t.id == SQL_KW_CREATE || t.id == SQL_KW_ALTER || t.id == SQL_KW_DROP ||
             t.id == SQL_KW_RENAME || t.id == SQL_KW_TRUNCATE))
            return true;
        after_semi = t.kind == SQL_TOK_SEMI;
    }
    return false;
}

/* The tables of every statement of the text into h; false: drop everything. */
static bool ddl_tables(hold *h, const char *sql, size_t len, unsigned lex_flags, const char *dflt)
{
    sql_token tok[DDL_TOKENS];
    size_t ntok;
    sql_rc rc = sql_lex(sql, len, lex_flags | SQL_LEX_SKIP_COMMENTS, tok, DDL_TOKENS, &ntok);
    if (rc == SQL_ERR)
        return true; /* the server will refuse it too */
    for (size_t at = 0; at < ntok;) {
        sql_stmt st;
        sql_stmt_parse(sql, tok + at, ntok - at, &st);
        int n = mr_ddl_tables(sql, tok + at, ntok - at, &st, h->t + h->n, DDL_TABLES - h->n);
        if (n < 0)
            return false;
        for (int i = h->n; i < h->n + n; i++)
            if (!h->t[i].schema[0]) {
                if (!dflt || strlen(dflt) >= MR_SD_NAME)
                    return false;
                strcpy(h->t[i].schema, dflt);
            }
        h->n += n;
        at += st.end + 1;
    }
    return rc == SQL_OK || !ddl_after(sql, len, &tok[ntok - 1], lex_flags);
}

static void drop_all(void)
{
    for (entry *e = C.lru_head; e; e = e->lnext)
        invalidate(e);
}

uint64_t mr_schema_cache_ddl_begin(const char *sql, size_t len, unsigned lex_flags,
                                   const char *default_schema)
{
    if (!C.on || (!starts_ddl(sql, len, lex_flags) && !memchr(sql, ';', len)))
        return 0;
    hold found = {0};
    bool named = ddl_tables(&found, sql, len, lex_flags, default_schema);
    if (named && !found.n)
        return 0; /* no DDL in the text */
    hold *h = malloc(sizeof *h);
    if (!h)
        return 0;
    *h = found;
    h->all = !named;
    if (h->all)
        h->n = 0;
    pthread_mutex_lock(&C.lock);
    if (h->all)
        drop_all();
    for (int i = 0; i < h->n; i++) {
        uint64_t hh = name_hash(h->t[i].schema, h->t[i].table);
        entry *e = find(h->t[i].schema, h->t[i].table, hh);
        if (!e)
            e = create(h->t[i].schema, h->t[i].table, hh);
        if (!e) {
            h->n = i; /* those after it are not held */
            break;
        }
        invalidate(e);
        e->reported = false; /* a changed table may lose (or gain) its key: say so again */
        e->holds++;
    }
    uint64_t id = 0;
    if (h->n || h->all) {
        id = h->id = ++C.next_hold;
        h->next = C.holds;
        C.holds = h;
    }
    pthread_mutex_unlock(&C.lock);
    if (!id)
        free(h);
    return id;
}

void mr_schema_cache_ddl_end(uint64_t id)
{
    if (!id)
        return;
    bool wake = false;
    pthread_mutex_lock(&C.lock);
    hold **pp = &C.holds;
    while (*pp && (*pp)->id != id)
        pp = &(*pp)->next;
    hold *h = *pp;
    if (h)
        *pp = h->next;
    if (h && h->all)
        drop_all(); /* what was read while it ran may be the old schema */
    for (int i = 0; h && i < h->n; i++) {
        entry *e = find(h->t[i].schema, h->t[i].table, name_hash(h->t[i].schema, h->t[i].table));
        if (!e || !e->holds)
            continue;
        e->holds--;
        invalidate(e); /* a load may have started before the hold */
        if (!e->wanted && !e->holds)
            entry_remove(e); /* held only for the DDL: no rule reads it */
        else
            wake |= e->holds == 0 && e->wanted && enqueue(e);
    }
    pthread_mutex_unlock(&C.lock);
    free(h);
    if (wake)
        mr_bgconn_wake(C.bg);
}

/* ---- the loader (its own thread) ------------------------------------------------- */

/* Rows of `head` WHERE TABLE_SCHEMA = s AND TABLE_NAME = t [tail]. */
static MYSQL_RES *query(MYSQL *db, const mr_table_desc *td, const char *head, const char *tail)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, head);
    mr_buf_put_str(&b, " WHERE TABLE_SCHEMA = ");
    mr_sql_put_literal(&b, td->schema);
    mr_buf_put_str(&b, " AND TABLE_NAME = ");
    mr_sql_put_literal(&b, td->table);
    mr_buf_put_str(&b, tail);
    mr_buf_put(&b, "", 1);
    bool ok = !b.failed &&
              mr_bg_query(db, (const char *)b.data, "schema cache: reading information_schema");
    mr_buf_free(&b);
    return ok ? mysql_store_result(db) : NULL;
}

static bool load_engine(MYSQL *db, mr_table_desc *td)
{
    MYSQL_RES *res = query(db, td, "SELECT ENGINE FROM information_schema.TABLES", "");
    if (!res)
        return false;
    MYSQL_ROW row = mysql_fetch_row(res);
    if (row)
        mr_td_set_engine(td, row[0]);
    mysql_free_result(res);
    return true;
}

static bool load_columns(MYSQL *db, mr_table_desc *td)
{
    MYSQL_RES *res = query(db, td,
                           "SELECT COLUMN_NAME, IS_NULLABLE, DATA_TYPE, COLUMN_TYPE "
                           "FROM information_schema.COLUMNS",
                           " ORDER BY ORDINAL_POSITION");
    bool ok = res != NULL;
    MYSQL_ROW row;
    while (ok && (row = mysql_fetch_row(res))) {
        ok = mr_td_add_column(td, row[0], row[1]);
        if (ok)
            mr_td_set_column_type(td, row[2], row[3]);
    }
    mysql_free_result(res);
    return ok;
}

static bool load_indexes(MYSQL *db, mr_table_desc *td)
{
    MYSQL_RES *res = query(db, td,
                           "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM "
                           "information_schema.STATISTICS",
                           " ORDER BY INDEX_NAME, SEQ_IN_INDEX");
    bool ok = res != NULL;
    MYSQL_ROW row;
    while (ok && (row = mysql_fetch_row(res)))
        ok = mr_td_add_index_column(td, row[0], row[1], row[2]);
    mysql_free_result(res);
    return ok;
}

mr_table_desc *mr_schema_read(MYSQL *db, const char *schema, const char *table)
{
    mr_table_desc *td = mr_td_new(schema, table);
    bool ok = td && load_engine(db, td);
    ok = ok && (!td->exists || (load_columns(db, td) && load_indexes(db, td)));
    if (!ok) {
        mr_warn(0, "cannot read %s.%s from information_schema", schema, table);
        mr_td_free(td);
        return NULL;
    }
    return td;
}

/* Puts a loaded description in place, unless DDL or eviction came first. */
static void install(const req *r, mr_table_desc *td, bool broken)
{
    bool told = td != NULL;
    pthread_mutex_lock(&C.lock);
    entry *e = find(r->schema, r->table, name_hash(r->schema, r->table));
    if (e && e->gen == r->gen)
        e->queued = false;
    if (e && e->gen == r->gen)
        snprintf(e->last_error, sizeof e->last_error, "%s",
                 td       ? ""
                 : broken ? "the proxy's own connection to the server (proxy_user) is down"
                          : "reading information_schema failed, see the proxy's log");
    if (e && e->gen == r->gen && td) {
        mr_td_row_key(td, &e->key);
        if (e->key.status != MR_KEY_FOUND && !e->reported)
            mr_info(0, "schema cache: %s; rules that need its key leave it alone", e->key.why);
        e->reported = e->reported || e->key.status != MR_KEY_FOUND;
        mr_td_free(e->desc);
        e->desc = td;
        e->loaded = true;
        e->loaded_ms = mr_mono_ms();
        td = NULL;
    }
    pthread_mutex_unlock(&C.lock);
    mr_td_free(td);
    if (!told)
        return; /* a failed load is not told: lookups queue it again */
    pthread_mutex_lock(&C.hook_lock);
    if (C.on_load)
        C.on_load(C.on_load_arg);
    pthread_mutex_unlock(&C.hook_lock);
}

static req *take_queue(void)
{
    pthread_mutex_lock(&C.lock);
    req *r = C.q_head;
    C.q_head = C.q_tail = NULL;
    pthread_mutex_unlock(&C.lock);
    return r;
}

static uint64_t tick(MYSQL *db, void *arg)
{
    (void)arg;
    for (req *r = take_queue(), *next; r; r = next) {
        next = r->next;
        bool broken = mr_bg_conn_broken(db);
        mr_table_desc *td = broken ? NULL : mr_schema_read(db, r->schema, r->table);
        mr_stat_add(td ? &C.stats.loads : &C.stats.load_errors, 1);
        install(r, td, broken);
        free(r);
    }
    return 60000;
}

/* ---- start and stop (main thread) ------------------------------------------------ */

static bool on_connect(MYSQL *db, void *arg)
{
    (void)db;
    (void)arg;
    return true;
}

void mr_schema_cache_start(const mr_config *cfg, const char *backend)
{
    C.ttl_ms = cfg->schema_cache_ttl_ms;
    C.max_tables = cfg->schema_cache_max_tables ? cfg->schema_cache_max_tables : 1;
    for (C.nbuckets = 64; C.nbuckets < C.max_tables && C.nbuckets < 65536; C.nbuckets *= 2)
        ;
    C.buckets = calloc(C.nbuckets, sizeof *C.buckets);
    if (!C.buckets) {
        mr_error(0, "schema cache: out of memory; it stays off");
        return;
    }
    static const mr_bgconn_ops ops = {
        .name = "schema cache", .on_connect = on_connect, .tick = tick, .arg = NULL, .lazy = true};
    if (!cfg->proxy_user || !cfg->proxy_user[0])
        return; /* bgconn would only log that it is off; rules say so per statement */
    C.bg = mr_bgconn_start(cfg, backend, &ops);
    C.on = C.bg != NULL;
}

void mr_schema_cache_rules_changed(void)
{
    pthread_mutex_lock(&C.lock);
    for (entry *e = C.lru_head; e; e = e->lnext)
        e->wanted = e->reported = false;
    pthread_mutex_unlock(&C.lock);
}

void mr_schema_cache_stop(void)
{
    if (C.bg)
        mr_bgconn_stop(C.bg);
    C.bg = NULL;
    C.on = false;
    pthread_mutex_lock(&C.lock);
    while (C.lru_head)
        entry_remove(C.lru_head);
    for (req *r = C.q_head, *next; r; r = next) {
        next = r->next;
        free(r);
    }
    C.q_head = C.q_tail = NULL;
    for (hold *h = C.holds, *next; h; h = next) {
        next = h->next;
        free(h);
    }
    C.holds = NULL;
    free(C.buckets);
    C.buckets = NULL;
    pthread_mutex_unlock(&C.lock);
}
