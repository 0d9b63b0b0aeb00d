/*
 * schema/desc.c - a table's description from information_schema rows, the
 * row key derived from it, and the tables a DDL statement changes (see
 * schema/desc.h).
 *
 * Pure, any thread. Owns the arrays of each description it creates.
 */
#include "myrewrite/schema/desc.h"
#include "myrewrite/sql/token_value.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool copy_name(char *dst, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (!src || n >= MR_SD_NAME)
        return false;
    memcpy(dst, src, n + 1);
    return true;
}

mr_table_desc *mr_td_new(const char *schema, const char *table)
{
    mr_table_desc *td = calloc(1, sizeof *td);
    if (td && (!copy_name(td->schema, schema) || !copy_name(td->table, table))) {
        free(td);
        return NULL;
    }
    return td;
}

void mr_td_free(mr_table_desc *td)
{
    if (!td)
        return;
    free(td->cols);
    free(td->idx);
    free(td);
}

void mr_td_set_engine(mr_table_desc *td, const char *engine)
{
    td->exists = true;
    if (!engine || !copy_name(td->engine, engine))
        td->engine[0] = '\0';
}

/* Grows an array of `elem`-sized items by one (zeroed); NULL when out of memory. */
static void *push(void **arr, size_t *n, size_t elem)
{
    void *p = realloc(*arr, (*n + 1) * elem);
    if (!p)
        return NULL;
    *arr = p;
    void *slot = (char *)p + *n * elem;
    memset(slot, 0, elem);
    (*n)++;
    return slot;
}

bool mr_td_add_column(mr_table_desc *td, const char *name, const char *is_nullable)
{
    if (!name || !is_nullable || strlen(name) >= MR_SD_NAME || td->ncols >= UINT16_MAX)
        return false;
    mr_sd_column *c = push((void **)&td->cols, &td->ncols, sizeof *c);
    if (!c)
        return false;
    copy_name(c->name, name);
    c->nullable = strcasecmp(is_nullable, "YES") == 0;
    return true;
}

void mr_td_set_column_type(mr_table_desc *td, const char *data_type, const char *column_type)
{
    if (td->ncols)
        mr_range_read(data_type, column_type, &td->cols[td->ncols - 1].range);
}

mr_range_status mr_td_column_range(const mr_table_desc *td, const char *column, mr_col_range *out)
{
    int c = td->exists ? mr_td_column(td, column) : -1;
    if (c < 0)
        return MR_RANGE_NO_COLUMN;
    *out = td->cols[c].range;
    return out->kind == MR_RANGE_NONE ? MR_RANGE_UNKNOWN : MR_RANGE_KNOWN;
}

int mr_td_column(const mr_table_desc *td, const char *name)
{
    for (size_t i = 0; i < td->ncols; i++)
        if (strcasecmp(td->cols[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* The index named `index`, the last one added (rows come grouped by index). */
static mr_sd_index *index_for(mr_table_desc *td, const char *index, bool unique)
{
    if (td->nidx && strcmp(td->idx[td->nidx - 1].name, index) == 0)
        return &td->idx[td->nidx - 1];
    for (size_t i = 0; i < td->nidx; i++)
        if (strcmp(td->idx[i].name, index) == 0)
            return NULL; /* rows of one index are not together: malformed */
    mr_sd_index *x = push((void **)&td->idx, &td->nidx, sizeof *x);
    if (!x)
        return NULL;
    copy_name(x->name, index);
    x->primary = strcmp(index, "PRIMARY") == 0;
    x->unique = unique || x->primary;
    return x;
}

bool mr_td_add_index_column(mr_table_desc *td, const char *index, const char *non_unique,
                            const char *column)
{
    if (!index || !non_unique || !column || strlen(index) >= MR_SD_NAME)
        return false;
    int c = mr_td_column(td, column);
    if (c < 0)
        return false;
    mr_sd_index *x = index_for(td, index, strcmp(non_unique, "0") == 0);
    if (!x || x->ncols >= MR_SD_MAX_KEY_COLS)
        return false;
    x->cols[x->ncols++] = (uint16_t)c;
    return true;
}

bool mr_td_index_not_null(const mr_table_desc *td, size_t i)
{
    const mr_sd_index *x = &td->idx[i];
    for (uint8_t k = 0; k < x->ncols; k++)
        if (td->cols[x->cols[k]].nullable)
            return false;
    return x->ncols > 0;
}

bool mr_engine_transactional(const char *engine)
{
    return engine && strcasecmp(engine, "InnoDB") == 0;
}

/* The index a rewrite may join on: PRIMARY, else the narrowest unique NOT
 * NULL one (a unique key with a nullable column admits many NULL rows). */
static const mr_sd_index *best_key(const mr_table_desc *td)
{
    const mr_sd_index *best = NULL;
    for (size_t i = 0; i < td->nidx; i++) {
        const mr_sd_index *x = &td->idx[i];
        if (x->primary)
            return x;
        if (!x->unique || !mr_td_index_not_null(td, i))
            continue;
        if (!best || x->ncols < best->ncols ||
            (x->ncols == best->ncols && strcmp(x->name, best->name) < 0))
            best = x;
    }
    return best;
}

void mr_td_row_key(const mr_table_desc *td, mr_row_key *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->engine, td->engine, sizeof out->engine);
    out->transactional = mr_engine_transactional(td->engine);
    out->status = MR_KEY_NONE;
    if (!td->exists) {
        snprintf(out->why, sizeof out->why, "table %s.%s does not exist", td->schema, td->table);
        out->pending = true; /* a deploy may be about to create it */
        return;
    }
    const mr_sd_index *x = best_key(td);
    if (!x) {
        snprintf(out->why, sizeof out->why, "%s.%s has no primary key and no unique NOT NULL key",
                 td->schema, td->table);
        return;
    }
    out->status = MR_KEY_FOUND;
    out->primary = x->primary;
    out->ncols = x->ncols;
    for (uint8_t k = 0; k < x->ncols; k++)
        memcpy(out->cols[k], td->cols[x->cols[k]].name, MR_SD_NAME);
}

/* ---- DDL ----------------------------------------------------------------------- */

/* CREATE [UNIQUE|FULLTEXT|SPATIAL] INDEX ... ON [s.]t, DROP INDEX ... ON [s.]t:
 * the table after the first top-level ON. */
static int index_table(const char *text, const sql_token *tok, size_t ntok, mr_ddl_table *out)
{
    bool index = false;
    for (size_t i = 0; i < ntok; i++) {
        if (tok[i].kind == SQL_TOK_SEMI)
            break;
        index |= sql_tok_is_word(&tok[i], text, "INDEX");
        if (!index || !sql_tok_is_word(&tok[i], text, "ON") || i + 1 >= ntok)
            continue;
        out->schema[0] = '\0';
        if (i + 3 < ntok && tok[i + 2].kind == SQL_TOK_DOT)
            return sql_tok_name(&tok[i + 1], text, out->schema, MR_SD_NAME) &&
                           sql_tok_name(&tok[i + 3], text, out->table, MR_SD_NAME)
                       ? 1
                       : -1;
        return sql_tok_name(&tok[i + 1], text, out->table, MR_SD_NAME) ? 1 : -1;
    }
    return -1;
}

int mr_ddl_tables(const char *text, const sql_token *tok, size_t ntok, const sql_stmt *st,
                  mr_ddl_table *out, int max)
{
    if (st->kind != SQL_STMT_DDL)
        return 0;
    if (st->flags & (SQL_SF_EXEC_COMMENT | SQL_SF_OVERFLOW | SQL_SF_LEX_ERROR))
        return -1;
    if (st->ntables == 0)
        return max > 0 ? index_table(text, tok, ntok, out) : -1;
    int n = 0;
    for (unsigned i = 0; i < st->ntables; i++) {
        const sql_table_ref *r = &st->tables[i];
        if (r->derived || r->name == SQL_NONE || n >= max)
            return -1;
        out[n].schema[0] = '\0';
        if (r->schema != SQL_NONE &&
            !sql_tok_name(&tok[r->schema], text, out[n].schema, MR_SD_NAME))
            return -1;
        if (!sql_tok_name(&tok[r->name], text, out[n].table, MR_SD_NAME))
            return -1;
        n++;
    }
    return n;
}
