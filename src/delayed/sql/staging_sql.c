/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/sql/staging_sql.c - writes the staging INSERT of an UPDATE DELAYED
 * / DELETE DELAYED statement read and checked by delayed/sql/staging_read.c
 * (output in delayed/staging_sql.h).
 *
 * Pure, any thread. Works on the caller's tokens; literals are copied as
 * the bytes of their tokens, so whatever a string holds it stays one
 * string, lexed by the server as it was lexed here.
 */
#include "myrewrite/delayed/staging_sql.h"

#include <string.h>

#include "delayed/sql/staging_impl.h"
#include "myrewrite/delayed/bucket.h"
#include "myrewrite/sql/quote.h"
#include "myrewrite/sql/token_value.h"

#define fail mr_delayed_fail

/* ---- the INSERT ------------------------------------------------------------- */

typedef struct writer {
    const char *text;
    const sql_token *tok;
    size_t ntok;
    mr_buf *out;
    size_t start;         /* where the INSERT begins in out */
    mr_dstage_rows *rows; /* its rows as data (NULL: not kept) */
    bool plain;           /* every delta so far is a whole number */
    uint32_t last_param;  /* token of the latest ? written, SQL_NONE before any */
    bool param_moved;     /* a ? written twice or out of order */
    size_t params;
} writer;

static void put_tok(writer *w, uint32_t i)
{
    const sql_token *t = &w->tok[i];
    if (t->kind == SQL_TOK_PARAM) {
        if (w->last_param != SQL_NONE && i <= w->last_param)
            w->param_moved = true;
        w->last_param = i;
        w->params++;
    }
    mr_buf_put(w->out, w->text + t->off, t->len);
}

/* The literal starting at token i (its '-' sign kept). */
static void put_literal(writer *w, uint32_t i, uint32_t end)
{
    i = skip(w->tok, i, end);
    if (is_op(&w->tok[i], SQL_OP_MINUS)) {
        mr_buf_put(w->out, "-", 1);
        i = skip(w->tok, i + 1, end);
    }
    put_tok(w, i);
}

/* The nth literal of a key's range. */
static void put_key_value(writer *w, const mr_delayed_key *k, uint32_t nth)
{
    uint32_t i = k->first;
    for (uint32_t n = 0; n < nth; n++) {
        mr_delayed_literal_at(w->tok, i, k->end, &i);
        i = skip(w->tok, i, k->end) + 1; /* past the comma */
    }
    put_literal(w, i, k->end);
}

/* The bits of set_mask for the statement's `col = literal` assignments:
 * bit s for set_columns[s] (col[i] >= ncolumns, or a counter that is also a
 * set column, tells which assignments those are). */
static uint64_t set_mask_of(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                            const mr_delayed_def *def)
{
    char nm[NAME_MAX_LEN + 1];
    uint64_t mask = 0;
    for (unsigned i = 0; i < d->nset; i++) {
        if (!d->set[i].is_set || !sql_tok_name(&tok[d->set[i].col], text, nm, sizeof nm))
            continue;
        int s = find_name(def->set_columns, def->nset_columns, nm);
        if (s >= 0 && s < 64)
            mask |= 1ull << s;
    }
    return mask;
}

/* Staged mode keeps `col = literal` in `<col>_set` (the value, typed as the
 * main table's column) with its bit in `set_mask`, so one staged row can
 * carry adds and sets; the flusher replays them in seq order per key. */
static void put_column_of(mr_buf *b, const mr_delayed_def *def, const mr_delayed_set *a, int col,
                          const char *name)
{
    if (!a->is_set) {
        mr_sql_put_ident(b, def->columns[col]);
        return;
    }
    mr_sql_put_ident_suffixed(b, name, "_set");
}

static void put_columns(const writer *w, const mr_delayed_stmt *d, const mr_delayed_def *def,
                        const int *col, const int *key, uint64_t mask)
{
    mr_buf *b = w->out;
    char nm[NAME_MAX_LEN + 1];
    mr_buf_put_str(b, "INSERT INTO ");
    mr_sql_put_ident(b, def->schema);
    mr_buf_put(b, ".", 1);
    mr_sql_put_ident(b, def->staging_table);
    mr_buf_put(b, " (", 2);
    for (unsigned i = 0; i < d->nset; i++) {
        if (!sql_tok_name(&w->tok[d->set[i].col], w->text, nm, sizeof nm))
            nm[0] = '\0'; /* read once already by check_columns */
        put_column_of(b, def, &d->set[i], col[i], nm);
        mr_buf_put(b, ", ", 2);
    }
    for (unsigned i = 0; i < d->nkey; i++) {
        mr_sql_put_ident(b, def->keys[key[i]]);
        mr_buf_put(b, ", ", 2);
    }
    if (def->bucket_column) {
        mr_sql_put_ident(b, def->bucket_column);
        mr_buf_put(b, ", ", 2);
    }
    mr_buf_put_str(b, mask ? "`set_mask`, `op`) VALUES " : "`op`) VALUES ");
}

/* Counter term a's delta as a number, when it is a whole one of at most
 * 18 digits (any such fits an int64_t). */
static bool delta_value(const writer *w, const mr_delayed_set *a, int64_t *out)
{
    const sql_token *t = &w->tok[a->num];
    const char *p = w->text + t->off;
    int64_t v = 0;
    if (t->kind != SQL_TOK_NUMBER || t->len == 0 || t->len > 18)
        return false;
    for (size_t i = 0; i < t->len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
    }
    *out = a->minus ? -v : v;
    return true;
}

/* The row's place in the text and its deltas, into w->rows. */
static void keep_row(writer *w, const mr_delayed_stmt *d, size_t off, size_t tail)
{
    mr_dstage_rows *r = w->rows;
    mr_dstage_row row = {(uint32_t)(off - w->start), (uint32_t)(w->out->len - off),
                         (uint32_t)(tail - w->start)};
    mr_buf_put(&r->rows, &row, sizeof row);
    for (unsigned i = 0; i < d->nset; i++) {
        int64_t v = 0;
        w->plain = w->plain && delta_value(w, &d->set[i], &v);
        mr_buf_put(&r->d, &v, sizeof v);
    }
}

static void put_row(writer *w, const mr_delayed_stmt *d, const mr_delayed_def *def, uint32_t row,
                    uint64_t mask)
{
    if (row)
        mr_buf_put(w->out, ", ", 2);
    size_t off = w->out->len;
    mr_buf_put(w->out, "(", 1);
    for (unsigned i = 0; i < d->nset; i++) {
        if (d->set[i].is_set) {
            put_literal(w, d->set[i].num, (uint32_t)w->ntok);
        } else {
            if (d->set[i].minus)
                mr_buf_put(w->out, "-", 1);
            put_tok(w, d->set[i].num);
        }
        mr_buf_put(w->out, ", ", 2);
    }
    size_t tail = w->out->len;
    for (unsigned i = 0; i < d->nkey; i++) {
        put_key_value(w, &d->key[i], (int)i == d->in_term ? row : 0);
        mr_buf_put(w->out, ", ", 2);
    }
    if (def->bucket_column) { /* the time the row is staged, by the server's clock */
        mr_buf_put_str(w->out, mr_bucket_sql(def->bucket));
        mr_buf_put(w->out, ", ", 2);
    }
    if (mask) {
        char m[24];
        mr_buf_put(w->out, m, (size_t)snprintf(m, sizeof m, "%llu, ", (unsigned long long)mask));
    }
    mr_buf_put_str(w->out, d->is_delete ? "1)" : "0)");
    if (w->rows)
        keep_row(w, d, off, tail);
}

/* Rows holding nothing but adds: no delete, no `col = literal`, and no
 * bucket (the server's clock writes that one). */
static bool adds_only(const mr_delayed_stmt *d, const mr_delayed_def *def)
{
    if (d->is_delete || def->bucket_column || d->nset == 0)
        return false;
    for (unsigned i = 0; i < d->nset; i++)
        if (d->set[i].is_set)
            return false;
    return true;
}

static size_t count_params(const sql_token *tok, size_t ntok)
{
    size_t n = 0;
    for (size_t i = 0; i < ntok; i++)
        n += tok[i].kind == SQL_TOK_PARAM;
    return n;
}

bool mr_delayed_build(const char *text, const sql_token *tok, size_t ntok, const mr_delayed_stmt *d,
                      const mr_delayed_def *def, bool prepared, mr_buf *out, mr_dstage_rows *rows,
                      char *err, size_t errlen)
{
    int col[MR_DELAYED_MAX_TERMS], key[MR_DELAYED_MAX_TERMS];
    if (!mr_delayed_check(text, tok, d, def, col, key, err, errlen))
        return false;
    mr_dstage_rows *stage = rows;
    uint32_t nrows = d->in_term >= 0 ? d->key[d->in_term].count : 1;
    if (nrows > MR_DELAYED_MAX_ROWS)
        return fail(err, errlen, "%s: at most %d values in the IN list", verb(d),
                    MR_DELAYED_MAX_ROWS);
    size_t start = out->len;
    writer w = {.text = text,
                .tok = tok,
                .ntok = ntok,
                .out = out,
                .start = start,
                .rows = stage,
                .plain = true,
                .last_param = SQL_NONE};
    uint64_t mask = set_mask_of(text, tok, d, def);
    if (stage) {
        mr_buf_reset(&stage->rows);
        mr_buf_reset(&stage->d);
    }
    put_columns(&w, d, def, col, key, mask);
    if (stage)
        stage->prefix_len = out->len - start;
    for (uint32_t r = 0; r < nrows; r++)
        put_row(&w, d, def, r, mask);
    if (stage) {
        stage->ndelta = w.plain && adds_only(d, def) ? d->nset : 0;
        if (stage->rows.failed || stage->d.failed)
            out->failed = true;
    }
    if (prepared && (w.param_moved || w.params != count_params(tok, ntok))) {
        out->len = start;
        return fail(err, errlen,
                    "%s in a prepared statement: a ? would be repeated (one per "
                    "IN value); write the numbers as literals, or use key = ?",
                    verb(d));
    }
    if (out->failed)
        return fail(err, errlen, "%s: out of memory", verb(d));
    return true;
}
