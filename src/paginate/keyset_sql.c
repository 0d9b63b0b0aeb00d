/*
 * paginate/keyset_sql.c - a SELECT as a keyset listing, and its seek form
 * (see paginate/keyset.h).
 *
 * The seek is the expanded OR form
 *   k1 >= v1 AND (k1 > v1 OR (k1 = v1 AND k2 > v2))
 * because MariaDB never turns a row comparison (k1, k2) > (v1, v2) into an
 * index range, while it does for each disjunct here; the leading k1 >= v1
 * (only with two or more columns) is implied by the rest and gives the range
 * optimizer a plain bound on the first column. DESC columns compare with <.
 *
 * Pure, any thread. Reads the caller's tokens; appends to the caller's buffer.
 */
#include <string.h>
#include <strings.h>

#include "myrewrite/paginate/keyset.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/sql/quote.h"
#include "myrewrite/sql/token_value.h"

/* ---- tokens ------------------------------------------------------------------ */

/* The name token t into dst[MR_KEYSET_NAME_MAX + 1]. */
static bool read_name(const char *text, const sql_token *t, char *dst)
{
    return sql_tok_name(t, text, dst, MR_KEYSET_NAME_MAX + 1);
}

/* The column token of an ORDER BY item that is c, q.c or s.t.c; SQL_NONE
 * for anything else. */
static uint32_t plain_column(const sql_token *tok, const sql_order_item *it)
{
    uint32_t t[5], n = 0;
    for (uint32_t i = it->expr.first; i < it->expr.end; i++) {
        if (tok[i].kind == SQL_TOK_COMMENT)
            continue;
        if (n == 5)
            return SQL_NONE;
        t[n++] = i;
    }
    if (n != 1 && n != 3 && n != 5)
        return SQL_NONE;
    for (uint32_t k = 1; k < n; k += 2)
        if (tok[t[k]].kind != SQL_TOK_DOT)
            return SQL_NONE;
    for (uint32_t k = 0; k < n; k += 2)
        if (tok[t[k]].kind != SQL_TOK_WORD && tok[t[k]].kind != SQL_TOK_QIDENT)
            return SQL_NONE;
    return t[n - 1];
}

static bool read_number(const char *text, const sql_token *t, uint64_t *v)
{
    if (t->kind != SQL_TOK_NUMBER)
        return false;
    *v = 0;
    for (uint32_t k = 0; k < t->len; k++) {
        char c = text[t->off + k];
        if (c < '0' || c > '9' || *v > (UINT64_MAX - 9) / 10)
            return false;
        *v = *v * 10 + (unsigned)(c - '0');
    }
    return true;
}

/* ---- the listing ---------------------------------------------------------------- */

uint64_t mr_keyset_table_hash(const char *name, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        h = (h ^ (uint8_t)(c >= 'A' && c <= 'Z' ? c + 32 : c)) * 1099511628211ull;
    }
    return h;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const uint8_t *)p)[i]) * 1099511628211ull;
    return h;
}

/* The statement's tokens without comments and without the LIMIT clause,
 * each followed by a separator, then the default schema. */
static uint64_t listing_hash(const char *text, const sql_token *tok, const sql_stmt *st,
                             const char *schema)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < st->end; i++) {
        if (i == st->limit.span.first) {
            i = st->limit.span.end - 1;
            continue;
        }
        if (tok[i].kind == SQL_TOK_COMMENT)
            continue;
        h = fnv(h, text + tok[i].off, tok[i].len);
        h = fnv(h, "\x01", 1);
    }
    return fnv(h, schema ? schema : "", schema ? strlen(schema) : 0);
}

static bool has_col(const mr_keyset_listing *ls, const char *name)
{
    for (unsigned k = 0; k < ls->ncols; k++)
        if (strcasecmp(ls->cols[k].name, name) == 0)
            return true;
    return false;
}

static const char *order_columns(const char *text, const sql_token *tok, const sql_stmt *st,
                                 const mr_paginate_def *def, mr_keyset_listing *ls)
{
    char name[MR_SQL_NAME_BUF];
    for (unsigned k = 0; k < st->norder; k++) {
        uint32_t c = plain_column(tok, &st->order[k]);
        if (c == SQL_NONE || !sql_tok_name(&tok[c], text, name, sizeof name))
            return "ORDER BY an expression (keyset needs plain columns)";
        if (ls->ncols == MR_KEYSET_MAX_COLS)
            return "more ORDER BY columns than keyset takes";
        mr_keyset_col *col = &ls->cols[ls->ncols++];
        if (!read_name(text, &tok[c], col->name))
            return "an ORDER BY column name too long";
        col->desc = st->order[k].desc;
        col->expr_first = st->order[k].expr.first;
        col->expr_end = st->order[k].expr.end;
    }
    bool desc = st->norder > 0 && st->order[st->norder - 1].desc; /* as the deferred join */
    for (size_t j = 0; j < def->nkeys; j++) {
        if (has_col(ls, def->keys[j]))
            continue;
        if (ls->ncols == MR_KEYSET_MAX_COLS)
            return "more ORDER BY columns than keyset takes";
        mr_keyset_col *col = &ls->cols[ls->ncols++];
        if (strlen(def->keys[j]) > MR_KEYSET_NAME_MAX)
            return "a key column name too long";
        strcpy(col->name, def->keys[j]);
        col->desc = desc;
        col->expr_first = col->expr_end = SQL_NONE;
    }
    return NULL;
}

bool mr_keyset_listing_of(const char *text, size_t len, const sql_token *tok, const sql_stmt *st,
                          const mr_paginate_def *def, const char *schema, mr_keyset_listing *ls,
                          const char **why)
{
    (void)len;
    const sql_limit *l = &st->limit;
    memset(ls, 0, sizeof *ls);
    *why = NULL;
    if (l->kw == SQL_NONE)
        *why = "no LIMIT";
    else if (l->offset != SQL_NONE && !read_number(text, &tok[l->offset], &ls->offset))
        *why = "the LIMIT offset is not a plain number";
    else if (!read_name(text, &tok[st->tables[0].name], ls->table))
        *why = "the table name is not readable";
    else
        *why = order_columns(text, tok, st, def, ls);
    if (*why)
        return false;
    ls->table_hash = mr_keyset_table_hash(ls->table, strlen(ls->table));
    ls->hash = listing_hash(text, tok, st, schema);
    /* the order's columns too: a reloaded rule with another key is another listing */
    for (unsigned k = 0; k < ls->ncols; k++) {
        ls->hash = fnv(ls->hash, ls->cols[k].name, strlen(ls->cols[k].name));
        ls->hash = fnv(ls->hash, ls->cols[k].desc ? "\x02" : "\x03", 1);
    }
    return true;
}

/* ---- the seek --------------------------------------------------------------------- */

static void put_range(mr_buf *b, const char *text, const sql_token *tok, uint32_t first,
                      uint32_t end)
{
    while (end > first && tok[end - 1].kind == SQL_TOK_COMMENT)
        end--;
    if (end > first)
        mr_buf_put(b, text + tok[first].off,
                   (size_t)tok[end - 1].off + tok[end - 1].len - tok[first].off);
}

/* The alias, or [schema.]name, as written: what qualifies an appended key. */
static void put_qualifier(mr_buf *b, const char *text, const sql_token *tok, const sql_stmt *st)
{
    const sql_table_ref *r = &st->tables[0];
    if (r->alias != SQL_NONE)
        put_range(b, text, tok, r->alias, r->alias + 1);
    else
        put_range(b, text, tok, r->schema != SQL_NONE ? r->schema : r->name, r->name + 1);
}

static void put_col(mr_buf *b, const char *text, const sql_token *tok, const sql_stmt *st,
                    const mr_keyset_col *c)
{
    if (c->expr_first != SQL_NONE) {
        put_range(b, text, tok, c->expr_first, c->expr_end);
        return;
    }
    put_qualifier(b, text, tok, st);
    mr_buf_put_str(b, ".");
    mr_sql_put_ident(b, c->name);
}

/* The literal of column k in the NUL-separated list. */
static const char *value_at(const char *values, size_t len, unsigned k, size_t *n)
{
    const char *p = values, *end = values + len;
    for (; k > 0 && p < end; k--)
        p += strnlen(p, (size_t)(end - p)) + 1;
    *n = p < end ? strnlen(p, (size_t)(end - p)) : 0;
    return p;
}

static void put_cmp(mr_buf *b, const char *text, const sql_token *tok, const sql_stmt *st,
                    const mr_keyset_listing *ls, unsigned k, const char *op, const char *values,
                    size_t len)
{
    size_t n;
    const char *v = value_at(values, len, k, &n);
    put_col(b, text, tok, st, &ls->cols[k]);
    mr_buf_put_str(b, op);
    mr_buf_put(b, v, n);
}

static void put_seek(mr_buf *b, const char *text, const sql_token *tok, const sql_stmt *st,
                     const mr_keyset_listing *ls, const char *values, size_t len)
{
    if (ls->ncols > 1) {
        put_cmp(b, text, tok, st, ls, 0, ls->cols[0].desc ? " <= " : " >= ", values, len);
        mr_buf_put_str(b, " AND ");
    }
    mr_buf_put_str(b, "(");
    for (unsigned k = 0; k < ls->ncols; k++) {
        mr_buf_put_str(b, k ? " OR (" : "(");
        for (unsigned e = 0; e < k; e++) {
            put_cmp(b, text, tok, st, ls, e, " = ", values, len);
            mr_buf_put_str(b, " AND ");
        }
        put_cmp(b, text, tok, st, ls, k, ls->cols[k].desc ? " < " : " > ", values, len);
        mr_buf_put_str(b, ")");
    }
    mr_buf_put_str(b, ")");
}

static void put_u64(mr_buf *b, uint64_t v)
{
    char d[24];
    int i = (int)sizeof d;
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    mr_buf_put(b, d + i, sizeof d - (size_t)i);
}

/* The key columns the listing's ORDER BY lacks, as ", col [DESC]" each:
 * they make the order total, as the deferred join appends them. */
static void put_appended_keys(mr_buf *out, const char *text, const sql_token *tok,
                              const sql_stmt *st, const mr_keyset_listing *ls)
{
    for (unsigned k = 0; k < ls->ncols; k++)
        if (ls->cols[k].expr_first == SQL_NONE) {
            mr_buf_put_str(out, ", ");
            put_col(out, text, tok, st, &ls->cols[k]);
            if (ls->cols[k].desc)
                mr_buf_put_str(out, " DESC");
        }
}

void mr_keyset_seek_sql(const char *text, size_t len, const sql_token *tok, const sql_stmt *st,
                        const mr_keyset_listing *ls, const char *values, size_t values_len,
                        uint64_t skip, mr_buf *out)
{
    const sql_table_ref *r = &st->tables[0];
    put_range(out, text, tok, 0, r->span.end); /* SELECT list FROM table [AS alias] */
    mr_buf_put_str(out, " WHERE ");
    if (st->where.kw != SQL_NONE) {
        mr_buf_put_str(out, "(");
        put_range(out, text, tok, st->where.body.first, st->where.body.end);
        mr_buf_put_str(out, ") AND ");
    }
    put_seek(out, text, tok, st, ls, values, values_len);
    mr_buf_put_str(out, " ORDER BY ");
    put_range(out, text, tok, st->order_by.body.first, st->order_by.body.end);
    put_appended_keys(out, text, tok, st, ls);
    mr_buf_put_str(out, " LIMIT ");
    put_u64(out, skip);
    mr_buf_put_str(out, ", ");
    put_range(out, text, tok, st->limit.count, st->limit.count + 1);
    const sql_token *z = &tok[st->limit.span.end - 1];
    size_t tail = (size_t)z->off + z->len;
    mr_buf_put(out, text + tail, len - tail);
}

bool mr_keyset_ordered_sql(const char *text, size_t len, const sql_token *tok, const sql_stmt *st,
                           const mr_keyset_listing *ls, mr_buf *out)
{
    bool appended = false;
    for (unsigned k = 0; k < ls->ncols; k++)
        appended |= ls->cols[k].expr_first == SQL_NONE;
    if (!appended)
        return false;
    uint32_t last = st->order_by.body.end;
    while (last > st->order_by.body.first && tok[last - 1].kind == SQL_TOK_COMMENT)
        last--;
    size_t cut = (size_t)tok[last - 1].off + tok[last - 1].len;
    mr_buf_put(out, text, cut);
    put_appended_keys(out, text, tok, st, ls);
    mr_buf_put(out, text + cut, len - cut);
    return true;
}

unsigned mr_keyset_value_count(const char *values, size_t len)
{
    unsigned n = 1;
    for (size_t i = 0; i < len; i++)
        n += values[i] == '\0';
    return n;
}
