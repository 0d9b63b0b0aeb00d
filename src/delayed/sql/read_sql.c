/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/sql/read_sql.c - read_pending's point read (delayed/read_sql.h): is a
 * SELECT the one shape a staged rule's read takes, and its rewrite that adds
 * the staging table's pending sum for the key in the same statement.
 *
 * Memory mode's prepared form reads the sums from user variables that a SET
 * the session sends ahead of each execute fills in (mr_delayed_read_build_vars,
 * mr_delayed_read_set).
 *
 * Pure, any thread. Owns nothing; writes the caller's buffer and message.
 */
#include "myrewrite/delayed/read_sql.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/delayed/mem_sql.h"
#include "myrewrite/sql/quote.h"
#include "myrewrite/sql/token_value.h"

/* What a plain point read may not have: anything that makes it more than
 * one row of one table read by its key. */
#define NOT_A_POINT_READ                                                                           \
    (SQL_SF_JOIN | SQL_SF_SUBQUERY | SQL_SF_UNION | SQL_SF_DERIVED | SQL_SF_GROUP_BY |             \
     SQL_SF_HAVING | SQL_SF_WINDOW | SQL_SF_INTO | SQL_SF_MULTI_TABLE | SQL_SF_WITH |              \
     SQL_SF_HINT | SQL_SF_EXEC_COMMENT | SQL_SF_UNSUPPORTED | SQL_SF_LEX_ERROR | SQL_SF_OVERFLOW | \
     SQL_SF_PAREN)

static uint32_t skip(const sql_token *tok, uint32_t i, uint32_t end)
{
    while (i < end && tok[i].kind == SQL_TOK_COMMENT)
        i++;
    return i;
}

static bool why_not(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool why_not(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return false;
}

/* A column name token (bare and not reserved, or `quoted`) equal to name,
 * in any case as MariaDB compares column names. */
static bool names_column(const char *text, const sql_token *t, const char *name)
{
    char nm[MR_SQL_NAME_BUF];
    return sql_tok_name(t, text, nm, sizeof nm) && strcasecmp(nm, name) == 0;
}

static bool plain_name(const char *text, const sql_token *t)
{
    char nm[MR_SQL_NAME_BUF];
    return sql_tok_name(t, text, nm, sizeof nm);
}

bool mr_delayed_read_table(const char *text, const sql_token *tok, const sql_stmt *st,
                           mr_delayed_read *out)
{
    if (st->kind != SQL_STMT_SELECT || (st->flags & NOT_A_POINT_READ) || st->ntables != 1)
        return false;
    const sql_table_ref *t = &st->tables[0];
    if (t->derived || t->name == SQL_NONE || !plain_name(text, &tok[t->name]) ||
        (t->schema != SQL_NONE && !plain_name(text, &tok[t->schema])))
        return false;
    out->schema = t->schema;
    out->table = t->name;
    return true;
}

/* Key columns: the rule's keys, then its bucket column (the staging table
 * keys its rows by both). */
static size_t nkeys_of(const mr_delayed_def *def) { return def->nkeys + (def->bucket_column != 0); }

static const char *key_of(const mr_delayed_def *def, size_t i)
{
    return i < def->nkeys ? def->keys[i] : def->bucket_column;
}

/* The index of the key column token t names, or -1. */
static int key_index(const char *text, const sql_token *t, const mr_delayed_def *def)
{
    for (size_t k = 0; k < nkeys_of(def); k++)
        if (names_column(text, t, key_of(def, k)))
            return (int)k;
    return -1;
}

/* A counter column the read may add to (one SET col = literal cannot touch:
 * a set value is not a sum), as its index in def->columns, or -1. */
static int counter_index(const char *text, const sql_token *t, const mr_delayed_def *def)
{
    for (size_t c = 0; c < def->ncolumns; c++) {
        if (!names_column(text, t, def->columns[c]))
            continue;
        for (size_t s = 0; s < def->nset_columns; s++)
            if (strcasecmp(def->set_columns[s], def->columns[c]) == 0)
                return -1;
        return (int)c;
    }
    return -1;
}

static bool read_items(const char *text, const sql_token *tok, const sql_stmt *st,
                       const mr_delayed_def *def, mr_delayed_read *rd, char *why, size_t whylen)
{
    uint32_t i = skip(tok, st->select_list.body.first, st->select_list.body.end);
    uint32_t end = st->select_list.body.end;
    bool counters = false;
    rd->nitems = 0;
    while (i < end) {
        if (rd->nitems == MR_DELAYED_MAX_TERMS)
            return why_not(why, whylen, "more than %d columns", MR_DELAYED_MAX_TERMS);
        int c = counter_index(text, &tok[i], def);
        if (c < 0 && key_index(text, &tok[i], def) < 0)
            return why_not(why, whylen,
                           "the select list holds something other than the rule's "
                           "counter columns (not in set_columns) and key columns");
        rd->item[rd->nitems] = i;
        rd->item_col[rd->nitems++] = c;
        counters |= c >= 0;
        i = skip(tok, i + 1, end);
        if (i < end && tok[i].kind != SQL_TOK_COMMA)
            return why_not(why, whylen, "a select list item is more than a column name");
        if (i < end && (i = skip(tok, i + 1, end)) >= end)
            return why_not(why, whylen, "the select list ends with a comma");
    }
    if (!counters)
        return why_not(why, whylen, "no counter column in the select list");
    return true;
}

/* WHERE k = v [AND k2 = v2 ...]: every key column once, nothing else. */
static bool read_where(const char *text, const sql_token *tok, const sql_stmt *st,
                       const mr_delayed_def *def, mr_delayed_read *rd, char *why, size_t whylen)
{
    uint32_t end = st->where.body.end, i = skip(tok, st->where.body.first, end);
    bool seen[MR_DELAYED_MAX_TERMS + 1] = {false};
    size_t found = 0;
    while (i < end) {
        int k = key_index(text, &tok[i], def);
        uint32_t eq = skip(tok, i + 1, end), lit = eq < end ? skip(tok, eq + 1, end) : end, past;
        if (k < 0 || seen[k] || eq >= end || tok[eq].kind != SQL_TOK_OP ||
            tok[eq].id != SQL_OP_EQ || lit >= end || !mr_delayed_literal_at(tok, lit, end, &past))
            return why_not(why, whylen,
                           "the WHERE is not key = literal (or ?) for each key column once, "
                           "joined by AND");
        seen[k] = true;
        rd->term[found++] = (mr_delayed_key){.col = i, .first = lit, .end = past, .count = 1};
        rd->nterms = (unsigned)found;
        i = skip(tok, past, end);
        if (i < end && !(tok[i].kind == SQL_TOK_WORD && tok[i].id == SQL_KW_AND))
            return why_not(why, whylen, "the WHERE has more than key = literal terms and AND");
        if (i < end && (i = skip(tok, i + 1, end)) >= end)
            return why_not(why, whylen, "the WHERE ends with AND");
    }
    if (found != nkeys_of(def))
        return why_not(why, whylen, "the WHERE does not give every key column");
    return true;
}

bool mr_delayed_read_shape(const char *text, const sql_token *tok, const sql_stmt *st,
                           const mr_delayed_def *def, mr_delayed_read *rd, char *why, size_t whylen)
{
    const sql_table_ref *t = &st->tables[0];
    if (st->mods)
        return why_not(why, whylen, "a SELECT modifier (DISTINCT, SQL_NO_CACHE...)");
    if (t->alias != SQL_NONE || skip(tok, t->name + 1, t->span.end) != t->span.end)
        return why_not(why, whylen, "the table has an alias, a partition or an index hint");
    if (st->order_by.kw != SQL_NONE || st->limit.kw != SQL_NONE || st->lock.kind != SQL_LOCK_NONE)
        return why_not(why, whylen, "ORDER BY, LIMIT or a locking clause");
    if (st->where.kw == SQL_NONE)
        return why_not(why, whylen, "no WHERE");
    /* nothing after the WHERE body but the statement's end */
    if (skip(tok, st->where.body.end, st->end) != st->end)
        return why_not(why, whylen, "something follows the WHERE");
    if (!def->nkeys)
        return why_not(why, whylen, "the table's key is not known yet");
    rd->where = st->where.body;
    rd->nterms = 0;
    return read_items(text, tok, st, def, rd, why, whylen) &&
           read_where(text, tok, st, def, rd, why, whylen);
}

/* `mr_s`.`k` = `mr_t`.`k` AND ... over every key column. */
static void put_key_match(mr_buf *out, const mr_delayed_def *def)
{
    for (size_t k = 0; k < nkeys_of(def); k++) {
        mr_buf_put_str(out, k ? " AND `mr_s`." : "`mr_s`.");
        mr_sql_put_ident(out, key_of(def, k));
        mr_buf_put_str(out, " = `mr_t`.");
        mr_sql_put_ident(out, key_of(def, k));
    }
}

static void put_staging(mr_buf *out, const mr_delayed_def *def)
{
    mr_sql_put_ident(out, def->schema);
    mr_buf_put_str(out, ".");
    mr_sql_put_ident(out, def->staging_table);
    mr_buf_put_str(out, " AS `mr_s` WHERE ");
    put_key_match(out, def);
}

static void put_tok(mr_buf *out, const char *text, const sql_token *t)
{
    mr_buf_put(out, text + t->off, t->len);
}

/* The counter plus its pending sum, as a signed whole number added to the
 * column (INT + BIGINT is BIGINT, DECIMAL + BIGINT a DECIMAL: the type
 * follows the column; a NULL counter stays NULL, as the flush leaves it).
 * Staged: the staging table's sum for the key; memory: the sum held. */
static void put_counter(mr_buf *out, const char *text, const sql_token *t,
                        const mr_delayed_def *def, int c, const mr_read_held *mem)
{
    mr_buf_put_str(out, "(`mr_t`.");
    mr_sql_put_ident(out, def->columns[c]);
    char n[160];
    if (mem && mem->chunk && mem->inflight[c]) {
        snprintf(n, sizeof n, " + CAST(%" PRId64 " + IF(COALESCE((SELECT `mr_m`.`seq` FROM ",
                 mem->held[c]);
        mr_buf_put_str(out, n);
        mr_sql_put_ident(out, def->schema);
        mr_buf_put_str(out, ".");
        mr_sql_put_ident(out, MR_DMEM_MARKS_TABLE);
        snprintf(n, sizeof n,
                 " AS `mr_m` WHERE `mr_m`.`proxy` = %" PRIu64 "), 0) >= %" PRIu64 ", 0, %" PRId64
                 ") AS SIGNED)) AS ",
                 mem->proxy, mem->chunk, mem->inflight[c]);
        mr_buf_put_str(out, n);
    } else if (mem) {
        snprintf(n, sizeof n, " + CAST(%" PRId64 " AS SIGNED)) AS ", mem->held[c]);
        mr_buf_put_str(out, n);
    } else {
        mr_buf_put_str(out, " + CAST(COALESCE((SELECT SUM(`mr_s`.");
        mr_sql_put_ident(out, def->columns[c]);
        mr_buf_put_str(out, ") FROM ");
        put_staging(out, def);
        mr_buf_put_str(out, "), 0) AS SIGNED)) AS ");
    }
    put_tok(out, text, t);
}

/* A key with a DELETE DELAYED pending reads as no row: staged, while the
 * staging table holds one; memory, while the proxy holds one. */
static void put_not_deleted(mr_buf *out, const mr_delayed_def *def, const mr_read_held *mem)
{
    if (mem) {
        mr_buf_put_str(out, mem->gone ? ") AND 0 = 1" : ")");
        return;
    }
    mr_buf_put_str(out, ") AND NOT EXISTS (SELECT 1 FROM ");
    put_staging(out, def);
    mr_buf_put_str(out, " AND `mr_s`.`op` = 1)");
}

/* " FROM [schema.]table AS `mr_t` WHERE (<the read's condition>": both
 * forms close the parenthesis with what they add to the condition. */
static void put_from_where(mr_buf *out, const char *text, const sql_token *tok,
                           const mr_delayed_read *rd)
{
    mr_buf_put_str(out, " FROM ");
    if (rd->schema != SQL_NONE) {
        put_tok(out, text, &tok[rd->schema]);
        mr_buf_put_str(out, ".");
    }
    put_tok(out, text, &tok[rd->table]);
    mr_buf_put_str(out, " AS `mr_t` WHERE (");
    const sql_token *first = &tok[rd->where.first], *last = &tok[rd->where.end - 1];
    mr_buf_put(out, text + first->off, last->off + last->len - first->off);
}

bool mr_delayed_read_build(const char *text, const sql_token *tok, const mr_delayed_read *rd,
                           const mr_delayed_def *def, const mr_read_held *mem, mr_buf *out)
{
    mr_buf_put_str(out, "SELECT ");
    for (unsigned i = 0; i < rd->nitems; i++) {
        if (i)
            mr_buf_put_str(out, ", ");
        if (rd->item_col[i] >= 0)
            put_counter(out, text, &tok[rd->item[i]], def, rd->item_col[i], mem);
        else
            put_tok(out, text, &tok[rd->item[i]]);
    }
    put_from_where(out, text, tok, rd);
    put_not_deleted(out, def, mem);
    return !out->failed;
}

/* ---- memory mode, prepared: the sums in user variables ---------------------------- */

/* The variables of select list item i (1-based in the names): the held sum
 * and the chunk in flight's; one chunk number and one delete flag for all. */
#define VAR_HELD "@myrewrite_rp_h"
#define VAR_FLIGHT "@myrewrite_rp_f"
#define VAR_CHUNK "@myrewrite_rp_chunk"
#define VAR_GONE "@myrewrite_rp_gone"

static void put_var(mr_buf *out, const char *var, unsigned item)
{
    char n[64];
    snprintf(n, sizeof n, "COALESCE(%s%u, 0)", var, item + 1);
    mr_buf_put_str(out, n);
}

/* The counter plus the variables' sums; with the marks table the chunk in
 * flight counts only while the read's snapshot lacks its mark, as in the
 * text form; without it, always (until its COMMIT returned). */
static void put_counter_vars(mr_buf *out, const char *text, const sql_token *t,
                             const mr_delayed_def *def, int c, unsigned item, bool marks,
                             uint64_t proxy)
{
    mr_buf_put_str(out, "(`mr_t`.");
    mr_sql_put_ident(out, def->columns[c]);
    mr_buf_put_str(out, " + CAST(");
    put_var(out, VAR_HELD, item);
    if (marks) {
        mr_buf_put_str(out, " + IF(COALESCE((SELECT `mr_m`.`seq` FROM ");
        mr_sql_put_ident(out, def->schema);
        mr_buf_put_str(out, ".");
        mr_sql_put_ident(out, MR_DMEM_MARKS_TABLE);
        char n[96];
        snprintf(n, sizeof n, " AS `mr_m` WHERE `mr_m`.`proxy` = %" PRIu64 "), 0) >= ", proxy);
        mr_buf_put_str(out, n);
        mr_buf_put_str(out, "COALESCE(" VAR_CHUNK ", 0), 0, ");
        put_var(out, VAR_FLIGHT, item);
        mr_buf_put_str(out, ")");
    } else {
        mr_buf_put_str(out, " + ");
        put_var(out, VAR_FLIGHT, item);
    }
    mr_buf_put_str(out, " AS SIGNED)) AS ");
    put_tok(out, text, t);
}

bool mr_delayed_read_build_vars(const char *text, const sql_token *tok, const mr_delayed_read *rd,
                                const mr_delayed_def *def, bool marks, uint64_t proxy, mr_buf *out)
{
    mr_buf_put_str(out, "SELECT ");
    for (unsigned i = 0; i < rd->nitems; i++) {
        if (i)
            mr_buf_put_str(out, ", ");
        if (rd->item_col[i] >= 0)
            put_counter_vars(out, text, &tok[rd->item[i]], def, rd->item_col[i], i, marks, proxy);
        else
            put_tok(out, text, &tok[rd->item[i]]);
    }
    put_from_where(out, text, tok, rd);
    mr_buf_put_str(out, ") AND COALESCE(" VAR_GONE ", 0) = 0");
    return !out->failed;
}

bool mr_delayed_read_set(const mr_delayed_read *rd, const mr_read_held *mem, mr_buf *out)
{
    char n[128];
    snprintf(n, sizeof n, "SET " VAR_CHUNK " = %" PRIu64 ", " VAR_GONE " = %d",
             mem ? mem->chunk : 0, mem && mem->gone);
    mr_buf_put_str(out, n);
    for (unsigned i = 0; i < rd->nitems; i++) {
        int c = rd->item_col[i];
        if (c < 0)
            continue;
        snprintf(n, sizeof n, ", " VAR_HELD "%u = %" PRId64 ", " VAR_FLIGHT "%u = %" PRId64, i + 1,
                 mem ? mem->held[c] : 0, i + 1, mem ? mem->inflight[c] : 0);
        mr_buf_put_str(out, n);
    }
    return !out->failed;
}
