/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/sql/mem_sql.c - a memory table's columns and the memory-mode
 * flusher's statements (see delayed/mem_sql.h for their form and why).
 *
 * Pure, any thread. Writes only the caller's buffer.
 */
#include "myrewrite/delayed/mem_sql.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/delayed/mem.h"
#include "myrewrite/sql/quote.h"

enum { SHAPE_ADD = 1, SHAPE_SET = 2 }; /* two bits per column */

static bool is_counter(const mr_delayed_def *def, const char *name)
{
    for (size_t i = 0; i < def->ncolumns; i++)
        if (strcasecmp(def->columns[i], name) == 0)
            return true;
    return false;
}

size_t mr_dmem_columns(const mr_delayed_def *def)
{
    size_t n = def->ncolumns;
    for (size_t i = 0; i < def->nset_columns; i++)
        n += !is_counter(def, def->set_columns[i]);
    return n;
}

const char *mr_dmem_column(const mr_delayed_def *def, size_t i)
{
    if (i < def->ncolumns)
        return def->columns[i];
    i -= def->ncolumns;
    for (size_t j = 0; j < def->nset_columns; j++)
        if (!is_counter(def, def->set_columns[j]) && i-- == 0)
            return def->set_columns[j];
    return NULL;
}

mr_dmem_syntax mr_dmem_syntax_for(const char *server_info, unsigned long version)
{
    if (server_info && strstr(server_info, "MariaDB"))
        return MR_DMEM_SYNTAX_VALUES;
    return version >= 80020 ? MR_DMEM_SYNTAX_ROW_ALIAS : MR_DMEM_SYNTAX_VALUES;
}

/* A counter column left alone is the same as + 0; a set-only one is left out. */
static unsigned col_shape(const mr_delayed_def *def, size_t c, const mr_dmem_val *v)
{
    if (v[c].op == MR_DMEM_VAL_INT || v[c].op == MR_DMEM_VAL_TEXT)
        return SHAPE_SET;
    return c < def->ncolumns ? SHAPE_ADD : 0;
}

uint64_t mr_dmem_shape(const mr_delayed_def *def, const mr_dmem_val *v)
{
    uint64_t shape = 0;
    for (size_t c = 0, n = mr_dmem_columns(def); c < n; c++)
        shape |= (uint64_t)col_shape(def, c, v) << (2 * c);
    return shape;
}

bool mr_dmem_row_writes(const mr_delayed_def *def, const mr_dmem_row *r)
{
    for (size_t c = 0, n = mr_dmem_columns(def); c < n; c++)
        if (r->v[c].op != MR_DMEM_VAL_NONE)
            return true;
    return false;
}

/* ---- pieces ---------------------------------------------------------------------- */

static void put_table(mr_buf *b, const mr_delayed_def *def)
{
    mr_sql_put_ident(b, def->schema);
    mr_buf_put(b, ".", 1);
    mr_sql_put_ident(b, def->table);
}

static void put_int(mr_buf *b, int64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%" PRId64, v);
    mr_buf_put(b, tmp, (size_t)n);
}

/* The key values of a row, ", "-separated, each as 'value' AS `key` when
 * `named`. */
static void put_key_values(mr_buf *b, const mr_delayed_def *def, const mr_dmem_row *r, bool named)
{
    const char *p = r->key;
    for (size_t k = 0; k < def->nkeys; k++) {
        uint32_t len;
        memcpy(&len, p, 4);
        if (k)
            mr_buf_put(b, ", ", 2);
        mr_sql_put_literal_n(b, p + 4, len);
        if (named) {
            mr_buf_put_str(b, " AS ");
            mr_sql_put_ident(b, def->keys[k]);
        }
        p += 4 + len;
    }
}

/* The key column names, ", "-separated, each after `prefix` ("`m`." or ""). */
static void put_key_names_of(mr_buf *b, const mr_delayed_def *def, const char *prefix)
{
    for (size_t k = 0; k < def->nkeys; k++) {
        if (k)
            mr_buf_put(b, ", ", 2);
        mr_buf_put_str(b, prefix);
        mr_sql_put_ident(b, def->keys[k]);
    }
}

static void put_key_names(mr_buf *b, const mr_delayed_def *def) { put_key_names_of(b, def, ""); }

/* (keys) IN ((v, ...), ...) over rows[0..n), the names after `prefix`. */
static void put_keys_in(mr_buf *b, const mr_delayed_def *def, const char *prefix,
                        const mr_dmem_row *rows, size_t n)
{
    mr_buf_put(b, "(", 1);
    put_key_names_of(b, def, prefix);
    mr_buf_put_str(b, ") IN (");
    for (size_t i = 0; i < n; i++) {
        mr_buf_put_str(b, i ? ", (" : "(");
        put_key_values(b, def, &rows[i], false);
        mr_buf_put(b, ")", 1);
    }
    mr_buf_put(b, ")", 1);
}

/* The value a row gives column c (+ n as n, = n as n, = 'text' quoted). */
static void put_col_value(mr_buf *b, const mr_dmem_val *v)
{
    if (v->op == MR_DMEM_VAL_TEXT)
        mr_sql_put_literal_n(b, v->text, v->len);
    else
        put_int(b, v->op == MR_DMEM_VAL_NONE ? 0 : v->n);
}

/* ---- statements ------------------------------------------------------------------- */

bool mr_dmem_sql_delete(mr_buf *out, const mr_delayed_def *def, const mr_dmem_row *rows, size_t n)
{
    mr_buf_put_str(out, "DELETE FROM ");
    put_table(out, def);
    mr_buf_put_str(out, " WHERE ");
    put_keys_in(out, def, "", rows, n);
    return !out->failed;
}

bool mr_dmem_sql_upsert(mr_buf *out, const mr_delayed_def *def, const mr_dmem_row *rows, size_t n,
                        mr_dmem_syntax syntax)
{
    size_t ncol = mr_dmem_columns(def);
    uint64_t shape = n ? mr_dmem_shape(def, rows[0].v) : 0;
    mr_buf_put_str(out, "INSERT INTO ");
    put_table(out, def);
    mr_buf_put_str(out, " (");
    put_key_names(out, def);
    for (size_t c = 0; c < ncol; c++)
        if ((shape >> (2 * c)) & 3) {
            mr_buf_put(out, ", ", 2);
            mr_sql_put_ident(out, mr_dmem_column(def, c));
        }
    mr_buf_put_str(out, ") VALUES ");
    for (size_t i = 0; i < n; i++) {
        mr_buf_put_str(out, i ? ", (" : "(");
        put_key_values(out, def, &rows[i], false);
        for (size_t c = 0; c < ncol; c++)
            if ((shape >> (2 * c)) & 3) {
                mr_buf_put(out, ", ", 2);
                put_col_value(out, &rows[i].v[c]);
            }
        mr_buf_put(out, ")", 1);
    }
    bool alias = syntax == MR_DMEM_SYNTAX_ROW_ALIAS;
    mr_buf_put_str(out, alias ? " AS `d` ON DUPLICATE KEY UPDATE " : " ON DUPLICATE KEY UPDATE ");
    bool first = true;
    for (size_t c = 0; c < ncol; c++) {
        unsigned how = (shape >> (2 * c)) & 3;
        if (!how)
            continue;
        const char *col = mr_dmem_column(def, c);
        if (!first)
            mr_buf_put(out, ", ", 2);
        first = false;
        mr_sql_put_ident(out, col);
        mr_buf_put_str(out, " = ");
        if (how == SHAPE_ADD) {
            mr_sql_put_ident(out, col);
            mr_buf_put_str(out, " + ");
        }
        if (alias) {
            mr_buf_put_str(out, "`d`.");
            mr_sql_put_ident(out, col);
        } else {
            mr_buf_put_str(out, "VALUES(");
            mr_sql_put_ident(out, col);
            mr_buf_put(out, ")", 1);
        }
    }
    return !out->failed; /* a rule has counter columns, so `first` is false here */
}

bool mr_dmem_sql_update(mr_buf *out, const mr_delayed_def *def, const mr_dmem_row *rows, size_t n)
{
    size_t ncol = mr_dmem_columns(def);
    uint64_t shape = n ? mr_dmem_shape(def, rows[0].v) : 0;
    mr_buf_put_str(out, "UPDATE ");
    put_table(out, def);
    mr_buf_put_str(out, " AS `m` JOIN (SELECT ");
    put_key_names_of(out, def, "`g`.");
    for (size_t c = 0; c < ncol; c++) {
        unsigned how = (shape >> (2 * c)) & 3;
        if (!how)
            continue;
        mr_buf_put_str(out, how == SHAPE_ADD ? ", SUM(`r`." : ", MAX(`r`.");
        mr_sql_put_ident(out, mr_dmem_column(def, c));
        mr_buf_put_str(out, ") AS ");
        mr_sql_put_ident(out, mr_dmem_column(def, c));
    }
    mr_buf_put_str(out, " FROM ");
    put_table(out, def);
    mr_buf_put_str(out, " AS `g` JOIN (");
    for (size_t i = 0; i < n; i++) {
        mr_buf_put_str(out, i ? " UNION ALL SELECT " : "SELECT ");
        put_key_values(out, def, &rows[i], i == 0);
        for (size_t c = 0; c < ncol; c++) {
            if (!((shape >> (2 * c)) & 3))
                continue;
            mr_buf_put(out, ", ", 2);
            put_col_value(out, &rows[i].v[c]);
            if (i == 0) {
                mr_buf_put_str(out, " AS ");
                mr_sql_put_ident(out, mr_dmem_column(def, c));
            }
        }
    }
    /* No IN list of its own on `g`: the outer one reaches it through `d` (r drives
     * eq_ref reads of g by its key); a second list doubled the statement's time on
     * INT keys, the server pushing each list into every branch of the UNION. */
    mr_buf_put_str(out, ") AS `r` USING (");
    put_key_names(out, def);
    mr_buf_put_str(out, ") GROUP BY ");
    put_key_names_of(out, def, "`g`.");
    mr_buf_put_str(out, ") AS `d` USING (");
    put_key_names(out, def);
    mr_buf_put_str(out, ") SET ");
    bool first = true;
    for (size_t c = 0; c < ncol; c++) {
        unsigned how = (shape >> (2 * c)) & 3;
        if (!how)
            continue;
        const char *col = mr_dmem_column(def, c);
        mr_buf_put_str(out, first ? "`m`." : ", `m`.");
        first = false;
        mr_sql_put_ident(out, col);
        mr_buf_put_str(out, how == SHAPE_ADD ? " = `m`." : " = `d`.");
        if (how == SHAPE_ADD) {
            mr_sql_put_ident(out, col);
            mr_buf_put_str(out, " + `d`.");
        }
        mr_sql_put_ident(out, col);
    }
    /* The same keys again as a filter on `m`: the join alone leaves the plan to the
     * table's statistics, and with stale ones (after a crash InnoDB may take a big table
     * for empty) the server scanned the whole table once per key, a statement of 500
     * keys taking seconds; the filter keeps it to one pass, whatever the estimate. */
    mr_buf_put_str(out, " WHERE ");
    put_keys_in(out, def, "`m`.", rows, n);
    return !out->failed;
}

/* ---- a refused key, as the dead-letter table shows it ------------------------------ */

void mr_dmem_describe(mr_buf *key, mr_buf *change, const mr_delayed_def *def, const mr_dmem_row *r)
{
    mr_buf_put(key, "(", 1);
    put_key_names(key, def);
    mr_buf_put_str(key, ") = (");
    put_key_values(key, def, r, false);
    mr_buf_put(key, ")", 1);
    mr_buf_put_u8(key, 0);
    bool writes = mr_dmem_row_writes(def, r);
    if (r->del)
        mr_buf_put_str(change, writes ? "DELETE, then " : "DELETE");
    for (size_t c = 0, n = mr_dmem_columns(def), k = 0; writes && c < n; c++) {
        const mr_dmem_val *v = &r->v[c];
        if (v->op == MR_DMEM_VAL_NONE)
            continue;
        if (k++)
            mr_buf_put(change, ", ", 2);
        mr_sql_put_ident(change, mr_dmem_column(def, c));
        mr_buf_put_str(change, v->op == MR_DMEM_VAL_ADD ? " + " : " = ");
        put_col_value(change, v);
    }
    mr_buf_put_u8(change, 0);
}

void mr_dmem_sql_marks_table(mr_buf *out, const char *schema)
{
    mr_buf_put_str(out, "CREATE TABLE IF NOT EXISTS ");
    mr_sql_put_ident(out, schema);
    mr_buf_put_str(out, ".");
    mr_sql_put_ident(out, MR_DMEM_MARKS_TABLE);
    mr_buf_put_str(out, " (`proxy` BIGINT UNSIGNED NOT NULL PRIMARY KEY, `seq` BIGINT UNSIGNED "
                        "NOT NULL) ENGINE=InnoDB");
}

void mr_dmem_sql_mark(mr_buf *out, const char *schema, uint64_t proxy, uint64_t seq)
{
    char v[64];
    mr_buf_put_str(out, "INSERT INTO ");
    mr_sql_put_ident(out, schema);
    mr_buf_put_str(out, ".");
    mr_sql_put_ident(out, MR_DMEM_MARKS_TABLE);
    snprintf(v, sizeof v, " (`proxy`, `seq`) VALUES (%" PRIu64 ", %" PRIu64 ")", proxy, seq);
    mr_buf_put_str(out, v);
    mr_buf_put_str(out, " ON DUPLICATE KEY UPDATE `seq` = VALUES(`seq`)");
}
