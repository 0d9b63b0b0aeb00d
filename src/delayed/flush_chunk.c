/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush_chunk.c - one chunk of a staged table: its staged rows read,
 * summed per key (delayed/chunk.h) and applied to the main table in one
 * transaction, or key by key with the refused keys moved to the dead-letter
 * table; the SQL helpers every part of the flusher runs its statements
 * with, and the counters they count into (SHOW DELAYED, /metrics).
 *
 * The flusher's bgconn thread; the counters are read by any thread. Below
 * the table setup (delayed/flush_table.c), the locked path
 * (delayed/flush_locked.c) and the flusher (delayed/flush.c).
 */
#include <inttypes.h>
#include <mysql.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delayed/flush_impl.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"
#include "myrewrite/delayed/reject.h"
#include "myrewrite/net/bgconn.h"
#include "myrewrite/sql/quote.h"
#include "myrewrite/stats/rule_stats.h"

#define SEQS_PER_STATEMENT 5000 /* staged rows per DELETE FROM staging */
#define ER_NO_SUCH_TABLE 1146

static mr_delayed_stats S;

const mr_delayed_stats *mr_delayed_stats_get(void) { return &S; }

mr_delayed_stats *dflush_stats(void) { return &S; }

/* ---- SQL text ------------------------------------------------------------------ */

void dflush_put_table(mr_buf *b, const char *schema, const char *name)
{
    dchunk_put_table(b, schema, name);
}

void dflush_put_fmt(mr_buf *b, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        mr_buf_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Runs the text built in b; logs and counts a failure. */
bool dflush_exec(MYSQL *db, const mr_buf *b, const table *t, const char *what)
{
    if (mr_bg_query_buf(db, b, t->rule, what))
        return true;
    dflush_count_error(t, what, mysql_errno(db), mysql_error(db));
    return false;
}

bool dflush_exec_str(MYSQL *db, const char *sql, const table *t, const char *what)
{
    mr_buf b = {.data = (uint8_t *)(uintptr_t)sql, .len = strlen(sql)};
    return dflush_exec(db, &b, t, what);
}

/* The first row of a query on (schema, name) strings; NULL when none. */
MYSQL_RES *dflush_schema_query(MYSQL *db, const table *t, const char *sql_head, const char *name)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, sql_head);
    mr_buf_put_str(&b, " WHERE TABLE_SCHEMA = ");
    mr_sql_put_literal(&b, t->def.schema);
    mr_buf_put_str(&b, " AND TABLE_NAME = ");
    mr_sql_put_literal(&b, name);
    MYSQL_RES *res =
        dflush_exec(db, &b, t, "reading information_schema") ? mysql_store_result(db) : NULL;
    mr_buf_free(&b);
    return res;
}

/* 1: table `name` of t's schema exists, 0: it does not, -1: unknown. */
int dflush_table_exists(MYSQL *db, const table *t, const char *name)
{
    MYSQL_RES *res = dflush_schema_query(db, t, "SELECT 1 FROM information_schema.TABLES", name);
    int rc = res ? mysql_num_rows(res) > 0 : -1;
    mysql_free_result(res);
    return rc;
}

/* `<name>_set`: where a staged row keeps the value of SET name = literal. */
void dflush_put_set_ident(mr_buf *b, const char *name)
{
    mr_sql_put_ident_suffixed(b, name, "_set");
}

/* ---- one chunk: read and aggregate ----------------------------------------------- */

static void chunk_free(chunk *c)
{
    mysql_free_result(c->res);
    mr_buf_free(&c->arena);
    free(c->keylits);
    free(c->rows);
    free(c->deltas);
    free(c->vals);
    free(c->keys);
    memset(c, 0, sizeof *c);
}

static bool read_rows(MYSQL *db, const table *t, chunk *c)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "SELECT `seq`");
    for (size_t i = 0; i < t->def.nkeys; i++) {
        mr_buf_put(&b, ", ", 2);
        mr_sql_put_ident(&b, t->def.keys[i]);
    }
    for (size_t i = 0; i < t->def.ncolumns; i++) {
        mr_buf_put(&b, ", ", 2);
        mr_sql_put_ident(&b, t->def.columns[i]);
    }
    for (size_t i = 0; i < t->def.nset_columns; i++) {
        mr_buf_put(&b, ", ", 2);
        dflush_put_set_ident(&b, t->def.set_columns[i]);
    }
    mr_buf_put_str(&b, t->def.nset_columns ? ", `set_mask`, `op` FROM " : ", `op` FROM ");
    dflush_put_table(&b, t->def.schema, t->read_from ? t->read_from : t->def.staging_table);
    dflush_put_fmt(&b, " ORDER BY `seq` LIMIT %" PRIu64 "%s", t->def.flush_rows,
            t->read_from ? "" : " FOR UPDATE");
    bool ok = dflush_exec(db, &b, t, "reading staged rows");
    mr_buf_free(&b);
    return ok && (c->res = mysql_store_result(db)) != NULL;
}

/* A whole number as the server prints an integer column: -?[0-9]+ */
static bool is_integer_text(const char *v, size_t n)
{
    size_t i = n && v[0] == '-';
    if (i == n)
        return false;
    for (; i < n; i++)
        if (v[i] < '0' || v[i] > '9')
            return false;
    return true;
}

/* The value of set column s as a literal: NULL, or a counter's integer bare
 * (so `value + adds` stays integer arithmetic), or quoted. */
static void load_value(MYSQL *db, const table *t, chunk *c, size_t s, const char *v, size_t n,
                       lit *out)
{
    out->off = c->arena.len;
    if (!v)
        mr_buf_put_str(&c->arena, "NULL");
    else if (dchunk_counter_of(t, s) >= 0 && is_integer_text(v, n))
        mr_buf_put(&c->arena, v, n);
    else
        mr_sql_put_literal_n(&c->arena, v, n);
    out->len = c->arena.len - out->off;
}

/* set_mask and the values it names, after the counters in a result row. */
static void load_sets(MYSQL *db, const table *t, chunk *c, MYSQL_ROW row, unsigned long *len,
                      size_t first, staged *s)
{
    size_t ns = t->def.nset_columns;
    if (!ns)
        return;
    s->val = &c->vals[c->nrows * ns];
    s->mask = row[first + ns] ? strtoull(row[first + ns], NULL, 10) : 0;
    for (size_t j = 0; j < ns; j++)
        if (s->mask & (1ull << j))
            load_value(db, t, c, j, row[first + j], len[first + j], &s->val[j]);
}

/* Copies the result into rows[] with each key value as an escaped literal. */
static bool load_rows(MYSQL *db, const table *t, chunk *c)
{
    size_t n = (size_t)mysql_num_rows(c->res), nk = t->def.nkeys, nc = t->def.ncolumns;
    size_t ns = t->def.nset_columns;
    c->rows = calloc(n ? n : 1, sizeof *c->rows);
    c->keylits = calloc(n * nk + 1, sizeof *c->keylits);
    c->deltas = calloc((2 * n + 1) * (nc ? nc : 1), sizeof *c->deltas);
    c->vals = calloc((2 * n + 1) * (ns ? ns : 1), sizeof *c->vals);
    c->keys = calloc(n ? n : 1, sizeof *c->keys);
    if (!c->rows || !c->keylits || !c->deltas || !c->vals || !c->keys)
        return false;
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(c->res))) {
        unsigned long *len = mysql_fetch_lengths(c->res);
        staged *s = &c->rows[c->nrows];
        s->seq = strtoull(row[0], NULL, 10);
        s->key = &c->keylits[c->nrows * nk];
        for (size_t k = 0; k < nk; k++) {
            s->key[k].off = c->arena.len;
            mr_sql_put_literal_n(&c->arena, row[1 + k] ? row[1 + k] : "", len[1 + k]);
            s->key[k].len = c->arena.len - s->key[k].off;
        }
        s->delta = &c->deltas[c->nrows * nc];
        for (size_t j = 0; j < nc; j++)
            s->delta[j] = row[1 + nk + j] ? strtoll(row[1 + nk + j], NULL, 10) : 0;
        load_sets(db, t, c, row, len, 1 + nk + nc, s);
        size_t op = 1 + nk + nc + (ns ? ns + 1 : 0);
        s->del = row[op] && row[op][0] == '1';
        c->nrows++;
    }
    return !c->arena.failed;
}

/* ---- one chunk: apply -------------------------------------------------------------- */

/* DELETE FROM main WHERE (keys) IN ((...), ...) for the deleted keys. */
static bool apply_deletes(MYSQL *db, const table *t, const chunk *c)
{
    for (size_t at = 0; at < c->nkeys;) {
        mr_buf b;
        mr_buf_init(&b);
        mr_buf_put_str(&b, t->locked ? "DELETE LOW_PRIORITY FROM " : "DELETE FROM ");
        dflush_put_table(&b, t->def.schema, t->def.table);
        mr_buf_put_str(&b, " WHERE (");
        dchunk_put_key_names(&b, t);
        mr_buf_put_str(&b, ") IN (");
        size_t n = 0;
        for (; at < c->nkeys && n < KEYS_PER_STATEMENT; at++) {
            if (!c->keys[at].del)
                continue;
            if (n++)
                mr_buf_put(&b, ", ", 2);
            dchunk_put_key_tuple(&b, t, c, &c->keys[at]);
        }
        mr_buf_put(&b, ")", 1);
        bool ok = !n || dflush_exec(db, &b, t, "deleting rows");
        mr_buf_free(&b);
        if (!ok)
            return false;
        mr_stat_add(&S.keys, n);
    }
    return true;
}

/* The keys whose sets are `mask`: one statement shape per mask (which
 * columns are replaced rather than added to). */
static bool apply_mask(MYSQL *db, const table *t, const chunk *c, uint64_t mask)
{
    bool upsert = t->def.missing == MR_DELAYED_MISSING_INSERT;
    for (size_t at = 0; at < c->nkeys;) {
        mr_buf b;
        mr_buf_init(&b);
        size_t n = 0;
        if (upsert)
            dchunk_build_upsert(&b, t, c, mask, &at, &n);
        else
            dchunk_build_update(&b, t, c, mask, &at, &n);
        bool ok = !n || dflush_exec(db, &b, t, upsert ? "upserting deltas" : "adding deltas");
        mr_buf_free(&b);
        if (!ok)
            return false;
        mr_stat_add(&S.keys, n);
    }
    return true;
}

static int by_mask(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Adds (mask 0), then each distinct set of set columns in turn. */
static bool apply_adds(MYSQL *db, const table *t, const chunk *c)
{
    if (!apply_mask(db, t, c, 0))
        return false;
    if (!t->def.nset_columns)
        return true;
    uint64_t *masks = malloc((c->nkeys ? c->nkeys : 1) * sizeof *masks);
    if (!masks) {
        mr_error(0, "delayed %s: out of memory sorting set columns", t->rule);
        return false;
    }
    size_t n = 0;
    for (size_t i = 0; i < c->nkeys; i++)
        if (c->keys[i].mask && dchunk_wants_add(t, &c->keys[i]))
            masks[n++] = c->keys[i].mask;
    qsort(masks, n, sizeof *masks, by_mask);
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++)
        if (i == 0 || masks[i] != masks[i - 1])
            ok = apply_mask(db, t, c, masks[i]);
    free(masks);
    return ok;
}

/* DELETE FROM staging WHERE seq IN (exactly the rows read). */
static bool delete_staged(MYSQL *db, const table *t, const chunk *c)
{
    for (size_t at = 0; at < c->nrows;) {
        mr_buf b;
        mr_buf_init(&b);
        mr_buf_put_str(&b, "DELETE FROM ");
        dflush_put_table(&b, t->def.schema, t->def.staging_table);
        mr_buf_put_str(&b, " WHERE `seq` IN (");
        for (size_t n = 0; at < c->nrows && n < SEQS_PER_STATEMENT; at++, n++)
            dflush_put_fmt(&b, n ? ",%" PRIu64 : "%" PRIu64, c->rows[at].seq);
        mr_buf_put(&b, ")", 1);
        bool ok = dflush_exec(db, &b, t, "deleting staged rows");
        mr_buf_free(&b);
        if (!ok)
            return false;
    }
    return true;
}

/* ---- refused keys: the dead-letter table ------------------------------------------ */

/* A key the server refused in an isolating chunk, noted after the commit. */
typedef struct refused {
    size_t key; /* index in c->keys */
    unsigned code;
    char msg[200];
    bool deleted; /* the locked path applied the key's DELETE before its add failed */
} refused;

/* The key as refused: what is left of its change once a DELETE went through. */
static net refused_net(const chunk *c, const refused *r)
{
    net k = c->keys[r->key];
    if (r->deleted)
        k.del = false;
    return k;
}

/* Creates the dead-letter table (DDL: outside any transaction). */
static bool reject_setup(MYSQL *db, table *t)
{
    if (t->reject_ready)
        return true;
    mr_buf b;
    mr_buf_init(&b);
    mr_dreject_put_create(&b, t->def.schema, t->def.table);
    t->reject_ready = dflush_exec(db, &b, t, "creating the dead-letter table");
    mr_buf_free(&b);
    return t->reject_ready;
}

/* Writes refused key r to the dead-letter table (inside the transaction). */
static bool reject_write(MYSQL *db, const table *t, const chunk *c, const refused *r)
{
    mr_buf key, change, b;
    mr_buf_init(&key);
    mr_buf_init(&change);
    mr_buf_init(&b);
    net kr = refused_net(c, r);
    const net *k = &kr;
    dchunk_key_text(t, c, k, &key);
    dchunk_change_text(t, c, k, &change);
    bool ok = !key.failed && !change.failed;
    if (ok)
        mr_dreject_put_insert(&b, t->def.schema, t->def.table, (const char *)key.data,
                              (const char *)change.data, k->nrows, r->code, r->msg);
    ok = ok && dflush_exec(db, &b, t, "writing a refused key to the dead-letter table");
    mr_buf_free(&key);
    mr_buf_free(&change);
    mr_buf_free(&b);
    return ok;
}

/* After the commit: counts and logs each refused key, once. */
static void reject_note(const table *t, const chunk *c, const refused *rs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mr_buf key, change;
        mr_buf_init(&key);
        mr_buf_init(&change);
        net kr = refused_net(c, &rs[i]);
        const net *k = &kr;
        dchunk_key_text(t, c, k, &key);
        dchunk_change_text(t, c, k, &change);
        const char *ks = key.failed ? "?" : (const char *)key.data;
        const char *cs = change.failed ? "?" : (const char *)change.data;
        mr_error(0,
                 "delayed %s: the server refused %s on %s.%s %s (%u %s); its %zu staged "
                 "row(s) went to %s.%.47s_delayed_rejected",
                 t->rule, cs, t->def.schema, t->def.table, ks, rs[i].code, rs[i].msg, k->nrows,
                 t->def.schema, t->def.table);
        mr_dreject_note(t->def.schema, t->def.table, ks, cs, k->nrows, rs[i].code, rs[i].msg);
        mr_buf_free(&key);
        mr_buf_free(&change);
    }
}

/* Key i alone under a savepoint: 1 applied, 0 refused for its data (rolled
 * back to the savepoint; *r filled), -1 any other failure. */
static int apply_one(MYSQL *db, const table *t, const chunk *c, size_t i, refused *r)
{
    chunk one = *c;
    one.keys = &c->keys[i];
    one.nkeys = 1;
    *r = (refused){.key = i};
    if (c->keys[i].overflow) {
        r->code = 1690;
        snprintf(r->msg, sizeof r->msg,
                 "the deltas staged for this key sum past the BIGINT "
                 "range");
        return 0;
    }
    if (t->main_gone) {
        r->code = ER_NO_SUCH_TABLE;
        snprintf(r->msg, sizeof r->msg, "Table '%s.%s' doesn't exist", t->def.schema, t->def.table);
        return 0;
    }
    bool sp = !t->locked; /* the locked path has no transaction: one key's statements */
    if (sp && !dflush_exec_str(db, "SAVEPOINT `mr_key`", t, "SAVEPOINT"))
        return -1;
    bool deleted = apply_deletes(db, t, &one);
    if (deleted && apply_adds(db, t, &one))
        return 1;
    r->code = mysql_errno(db);
    snprintf(r->msg, sizeof r->msg, "%s", mysql_error(db));
    if (!mr_dreject_data_error(r->code) || mr_bg_conn_broken(db))
        return -1;
    /* Without a savepoint a DELETE that went through stays: the dead-letter
     * row then holds only the add the server refused. */
    r->deleted = !sp && deleted && one.keys[0].del;
    return !sp || dflush_exec_str(db, "ROLLBACK TO SAVEPOINT `mr_key`", t, "ROLLBACK TO SAVEPOINT") ? 0
                                                                                             : -1;
}

/* Applies c key by key; the keys the server refuses go to the dead-letter
 * table. *rs gets the refused ones; false on any other failure. */
static bool apply_isolating(MYSQL *db, const table *t, const chunk *c, refused **rs, size_t *n)
{
    *n = 0;
    if (!(*rs = calloc(c->nkeys ? c->nkeys : 1, sizeof **rs)))
        return false;
    for (size_t i = 0; i < c->nkeys; i++) {
        int rc = apply_one(db, t, c, i, &(*rs)[*n]);
        if (rc < 0)
            return false;
        if (rc == 0) {
            if (!reject_write(db, t, c, &(*rs)[*n]))
                return false; /* not counted: the key was neither applied nor moved */
            (*n)++;
        }
    }
    return true;
}

/* The chunk again, key by key (its cost is paid only after a refusal): one
 * transaction that applies the keys the server takes, moves the others to
 * the dead-letter table and deletes every row read from staging. */
static long flush_chunk_isolating(MYSQL *db, table *t)
{
    if (!reject_setup(db, t))
        return -1;
    chunk c;
    memset(&c, 0, sizeof c);
    refused *rs = NULL;
    size_t nr = 0;
    if (!dflush_exec_str(db, "START TRANSACTION", t, "START TRANSACTION"))
        return -1;
    bool ok = read_rows(db, t, &c) && load_rows(db, t, &c);
    if (ok && c.nrows) {
        dchunk_aggregate(t, &c);
        ok = apply_isolating(db, t, &c, &rs, &nr) && delete_staged(db, t, &c);
    }
    ok = ok && dflush_exec_str(db, "COMMIT", t, "COMMIT");
    long n = ok ? (long)c.nrows : -1;
    if (ok)
        reject_note(t, &c, rs, nr);
    else if (!mr_bg_conn_broken(db))
        (void)mysql_query(db, "ROLLBACK");
    size_t refused_rows = 0;
    for (size_t i = 0; ok && i < nr; i++)
        refused_rows += c.keys[rs[i].key].nrows;
    free(rs);
    chunk_free(&c);
    if (n > 0)
        dflush_count_chunk(t, n - (long)refused_rows);
    return n;
}

/* One transaction; returns the rows read (applied, or moved to the
 * dead-letter table), or -1 (rolled back). */
long dflush_chunk(MYSQL *db, table *t)
{
    chunk c;
    memset(&c, 0, sizeof c);
    if (!dflush_exec_str(db, "START TRANSACTION", t, "START TRANSACTION"))
        return -1;
    bool ok = read_rows(db, t, &c) && load_rows(db, t, &c), isolate = false;
    if (ok && c.nrows) {
        dchunk_aggregate(t, &c);
        isolate = dchunk_any_overflow(&c);
        ok = !isolate && apply_deletes(db, t, &c) && apply_adds(db, t, &c);
        isolate =
            isolate || (!ok && !mr_bg_conn_broken(db) && mr_dreject_data_error(mysql_errno(db)));
        ok = ok && delete_staged(db, t, &c);
    }
    ok = ok && dflush_exec_str(db, "COMMIT", t, "COMMIT");
    long n = ok ? (long)c.nrows : -1;
    chunk_free(&c);
    if (!ok) {
        if (!mr_bg_conn_broken(db))
            (void)mysql_query(db, "ROLLBACK");
        return isolate && !mr_bg_conn_broken(db) ? flush_chunk_isolating(db, t) : -1;
    }
    dflush_count_chunk(t, n);
    return n;
}


/* GET_LOCK / RELEASE_LOCK on the table's lock name; true when it returned 1. */
bool dflush_named_lock(MYSQL *db, const table *t, const char *fn)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "SELECT ");
    mr_buf_put_str(&b, fn);
    mr_buf_put(&b, "(", 1);
    mr_sql_put_literal(&b, t->lock_name);
    mr_buf_put_str(&b, strcmp(fn, "GET_LOCK") == 0 ? ", 0)" : ")");
    bool ok = dflush_exec(db, &b, t, fn);
    mr_buf_free(&b);
    MYSQL_RES *res = ok ? mysql_store_result(db) : NULL;
    MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
    ok = row && row[0] && strcmp(row[0], "1") == 0;
    mysql_free_result(res);
    return ok;
}

/* The main table does not exist, so what is staged for it can never be
 * applied: rather than stay staged for good, each key goes to the
 * dead-letter table (logged one by one, and FLUSH DELAYED names them), in
 * the chunk's transaction with the DELETE from staging. */
void dflush_drain_gone(MYSQL *db, table *t)
{
    if (!t->def.nkeys || dflush_table_exists(db, t, t->def.staging_table) != 1)
        return; /* keys never read (no key in the rule), or nothing staged */
    if (!dflush_named_lock(db, t, "GET_LOCK"))
        return; /* another proxy flushes it now */
    uint64_t moved = 0;
    long n;
    do
        if ((n = flush_chunk_isolating(db, t)) > 0)
            moved += (uint64_t)n;
    while (n >= (long)t->def.flush_rows);
    if (!mr_bg_conn_broken(db))
        (void)dflush_named_lock(db, t, "RELEASE_LOCK");
    if (moved)
        mr_error(0,
                 "delayed %s: table %s.%s does not exist, so its %" PRIu64 " staged row(s) "
                 "went to %s.%.47s_delayed_rejected (error 1146) instead of waiting in %s.%s",
                 t->rule, t->def.schema, t->def.table, moved, t->def.schema, t->def.table,
                 t->def.schema, t->def.staging_table);
}

long dflush_apply(MYSQL *db, table *t, uint64_t *written, long *rejected)
{
    chunk c;
    memset(&c, 0, sizeof c);
    uint64_t keys_before = mr_stat_get(&S.keys); /* +n per statement that succeeded */
    bool ok = read_rows(db, t, &c) && load_rows(db, t, &c), isolate = false;
    refused *rs = NULL;
    size_t nr = 0;
    *rejected = 0;
    if (ok && c.nrows) {
        dchunk_aggregate(t, &c);
        /* No transaction here: a statement over many keys that the server
         * refuses part way (1264 at its second row, say) has already written
         * the rows before it, and nothing says which they were, so a retry
         * of the rest would apply some twice. One statement per key instead:
         * the server writes a single row whole or not at all. */
        isolate = true;
        ok = reject_setup(db, t) && apply_isolating(db, t, &c, &rs, &nr);
    }
    *written = mr_stat_get(&S.keys) - keys_before + (isolate ? nr : 0);
    for (size_t i = 0; ok && i < nr; i++)
        *rejected += (long)c.keys[rs[i].key].nrows;
    if (ok)
        reject_note(t, &c, rs, nr);
    long n = ok ? (long)c.nrows : -1;
    free(rs);
    chunk_free(&c);
    return n;
}

void dflush_count_chunk(const table *t, long n)
{
    if (n <= 0)
        return;
    mr_stat_add(&S.chunks, 1);
    mr_stat_add(&S.rows, (uint64_t)n);
    struct mr_rule_stats *rows[2] = {t->stats, t->def.table_stats};
    for (int k = 0; k < 2; k++)
        if (rows[k])
            mr_stat_add(&rows[k]->flushed, (uint64_t)n);
}

void dflush_count_error(const table *t, const char *what, unsigned code, const char *msg)
{
    mr_stat_add(&S.errors, 1);
    struct mr_rule_stats *rows[2] = {t->stats, t->def.table_stats};
    for (int k = 0; k < 2; k++) {
        if (!rows[k])
            continue;
        mr_stat_add(&rows[k]->errors, 1);
        mr_rule_stats_set_error(rows[k], what, code, msg);
        atomic_store_explicit(&rows[k]->last_error_at, mr_unix_ms(), memory_order_relaxed);
    }
}
