/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/apply.c - one flush chunk: the staged rows read and summed
 * per key (delayed/sql/chunk.h), the main table written and the rows read
 * deleted from staging in one transaction (dflush_chunk); when the server
 * refuses the data, the chunk again key by key, the keys it refuses moved
 * to the dead-letter table (dflush_chunk_isolating); and the same without a
 * transaction of its own for the locked path (dflush_apply).
 *
 * Flusher thread.
 */
#include <inttypes.h>
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delayed/flush/flush_impl.h"
#include "myrewrite/base/buf.h"
#include "myrewrite/base/log.h"
#include "myrewrite/delayed/reject.h"
#include "myrewrite/net/bgconn.h"
#include "myrewrite/sql/quote.h"
#include "myrewrite/stats/rule_stats.h"

#define SEQS_PER_STATEMENT 5000 /* staged rows per DELETE FROM staging */
#define ER_NO_SUCH_TABLE 1146

/* ---- one chunk: read and aggregate ----------------------------------------------- */

static void chunk_free(chunk *c)
{
    mysql_free_result(c->res);
    mr_buf_free(&c->arena);
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
    mr_buf_put_str(&b, t->def.nset_columns ? ", `set_mask`, `op`" : ", `op`");
    if (t->key_weights)
        mr_buf_put_str(&b, t->key_weights);
    mr_buf_put_str(&b, " FROM ");
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

/* s->woff: per key column its weight (after `op`, when t->key_weights asked
 * for them; NULL for a column without a collation) or else its value, each
 * after its length. */
static void load_weights(const table *t, chunk *c, MYSQL_ROW row, unsigned long *len, staged *s)
{
    size_t nk = t->def.nkeys, ns = t->def.nset_columns;
    size_t w = 1 + nk + t->def.ncolumns + (ns ? ns + 1 : 0) + 1;
    s->woff = c->arena.len;
    for (size_t k = 0; k < nk; k++) {
        size_t at = t->key_weights && row[w + k] ? w + k : 1 + k;
        uint32_t n = (uint32_t)len[at];
        mr_buf_put(&c->arena, &n, sizeof n);
        if (row[at])
            mr_buf_put(&c->arena, row[at], len[at]);
    }
    s->wlen = c->arena.len - s->woff;
}

/* Copies the result into rows[] with each key as escaped literals. */
static bool load_rows(MYSQL *db, const table *t, chunk *c)
{
    size_t n = (size_t)mysql_num_rows(c->res), nk = t->def.nkeys, nc = t->def.ncolumns;
    size_t ns = t->def.nset_columns;
    c->rows = calloc(n ? n : 1, sizeof *c->rows);
    c->deltas = calloc((2 * n + 1) * (nc ? nc : 1), sizeof *c->deltas);
    c->vals = calloc((2 * n + 1) * (ns ? ns : 1), sizeof *c->vals);
    c->keys = calloc(n ? n : 1, sizeof *c->keys);
    if (!c->rows || !c->deltas || !c->vals || !c->keys)
        return false;
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(c->res))) {
        unsigned long *len = mysql_fetch_lengths(c->res);
        staged *s = &c->rows[c->nrows];
        s->seq = strtoull(row[0], NULL, 10);
        s->koff = c->arena.len;
        for (size_t k = 0; k < nk; k++) {
            if (k)
                mr_buf_put(&c->arena, ", ", 2);
            mr_sql_put_literal_n(&c->arena, row[1 + k] ? row[1 + k] : "", len[1 + k]);
        }
        s->klen = c->arena.len - s->koff;
        load_weights(t, c, row, len, s);
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
            dchunk_put_key_tuple(&b, c, &c->keys[at]);
        }
        mr_buf_put(&b, ")", 1);
        bool ok = !n || dflush_exec(db, &b, t, "deleting rows");
        mr_buf_free(&b);
        if (!ok)
            return false;
        mr_stat_add(&dflush_stats()->keys, n);
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
        mr_stat_add(&dflush_stats()->keys, n);
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
    bool sp = !t->locked; /* the locked path has no transaction: one key's statements */
    if (sp && !dflush_exec_str(db, "SAVEPOINT `mr_key`", t, "SAVEPOINT"))
        return -1;
    bool deleted = apply_deletes(db, t, &one);
    if (deleted && apply_adds(db, t, &one))
        return 1;
    r->code = mysql_errno(db);
    snprintf(r->msg, sizeof r->msg, "%s", mysql_error(db));
    /* A main table information_schema no longer lists is tried all the
     * same: only the server's own 1146 for this key's statement moves it to
     * the dead-letter table (a listing can lag a restart or a restore). */
    bool gone = t->main_gone && r->code == ER_NO_SUCH_TABLE;
    if (!(gone || mr_dreject_data_error(r->code)) || mr_bg_conn_broken(db))
        return -1;
    /* Without a savepoint a DELETE that went through stays: the dead-letter
     * row then holds only the add the server refused. */
    r->deleted = !sp && deleted && one.keys[0].del;
    return !sp || dflush_exec_str(db, "ROLLBACK TO SAVEPOINT `mr_key`", t, "ROLLBACK TO SAVEPOINT")
               ? 0
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
long dflush_chunk_isolating(MYSQL *db, table *t)
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
        return isolate && !mr_bg_conn_broken(db) ? dflush_chunk_isolating(db, t) : -1;
    }
    dflush_count_chunk(t, n);
    return n;
}

long dflush_apply(MYSQL *db, table *t, uint64_t *written, long *rejected)
{
    chunk c;
    memset(&c, 0, sizeof c);
    uint64_t keys_before = mr_stat_get(&dflush_stats()->keys); /* +n per statement that succeeded */
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
    *written = mr_stat_get(&dflush_stats()->keys) - keys_before + (isolate ? nr : 0);
    for (size_t i = 0; ok && i < nr; i++)
        *rejected += (long)c.keys[rs[i].key].nrows;
    if (ok)
        reject_note(t, &c, rs, nr);
    long n = ok ? (long)c.nrows : -1;
    free(rs);
    chunk_free(&c);
    return n;
}
