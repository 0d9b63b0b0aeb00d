/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/sql/staging_impl.h - the token steps the reader of DELAYED
 * statements (delayed/sql/staging_read.c) and the writer of their staging
 * INSERT (delayed/sql/staging_sql.c) share. Pure.
 */
#ifndef MYREWRITE_DELAYED_STAGING_IMPL_H
#define MYREWRITE_DELAYED_STAGING_IMPL_H

#include "myrewrite/delayed/staging_sql.h"
#include <strings.h>

#include "myrewrite/sql/lexer.h"

#define NAME_MAX_LEN 64

/* Index of the first non-comment token at or after i, or end. */
static inline uint32_t skip(const sql_token *tok, uint32_t i, uint32_t end)
{
    while (i < end && tok[i].kind == SQL_TOK_COMMENT)
        i++;
    return i;
}

static inline bool is_op(const sql_token *t, sql_op op)
{
    return t->kind == SQL_TOK_OP && t->id == op;
}

static inline bool is_kw(const sql_token *t, sql_kw kw)
{
    return t->kind == SQL_TOK_WORD && t->id == kw;
}

/* The statement's verb, as messages name it. */
static inline const char *verb(const mr_delayed_stmt *d)
{
    return d->is_delete ? "DELETE DELAYED" : "UPDATE DELAYED";
}

/* Index of `name` in list (case-insensitive, as column names are), or -1. */
static inline int find_name(char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(list[i], name) == 0)
            return (int)i;
    return -1;
}

#endif
