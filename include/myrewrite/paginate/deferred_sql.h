/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/deferred_sql.h - deep pagination of one table: decides whether a SELECT
 * is a deep page a paginate rule takes, and builds its deferred join
 *
 *   SELECT <list> FROM t [AS a] JOIN (SELECT <pk> FROM t [AS a] [WHERE ...]
 *     ORDER BY ... LIMIT off, n) AS myrewrite_dj USING (<pk>) ORDER BY ...
 *
 * from whole tokens of the original text (literals are never re-quoted).
 * When the ORDER BY does not name every primary-key column, the missing
 * ones are appended (in the direction of the last ORDER BY item) to both ORDER BYs, which makes the
 * order among ties, and so the rows of each page, deterministic.
 *
 * Pure, any thread. Owns nothing; writes only the caller's buffer.
 */
#ifndef MYREWRITE_PAGINATE_SQL_H
#define MYREWRITE_PAGINATE_SQL_H

#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/paginate/rule.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/sql/stmt.h"

typedef enum mr_pag_outcome {
    MR_PAG_PASS,     /* send the statement as it is; info->why says why */
    MR_PAG_REWRITE,  /* `out` holds the deferred join */
    MR_PAG_TOO_DEEP, /* the offset is beyond max_offset: refuse the statement */
} mr_pag_outcome;

typedef struct mr_pag_info {
    const char *why;       /* static text: why it passed, or what was done */
    uint64_t offset;       /* the LIMIT offset, once read (0 before) */
    bool offset_param;     /* the offset is a `?`: rewritten whatever its value */
    unsigned offset_index; /* offset_param: which `?` of the statement it is (from 0) */
    unsigned nparams;      /* offset_param: the statement's `?` count */
    bool no_key;           /* passed only because def has no key columns */
} mr_pag_info;

/* Looks at one statement text[0..len): `tok` and `st` are its tokens and
 * recognized form (sql_lex + sql_stmt_parse over it); `schema` is the session's
 * default schema (NULL when none). On MR_PAG_REWRITE the new statement is
 * appended to `out`. A `?` offset (prepared statements) cannot be compared
 * with the threshold or max_offset before COM_STMT_EXECUTE: such a page is
 * rewritten for every offset (the deferred join returns the same rows at
 * any depth), and info says which `?` it is, so that the session can hold
 * each execute to max_offset. A def without key columns never rewrites
 * (no_key). */
mr_pag_outcome mr_paginate_sql(const char *text, size_t len, const sql_token *tok,
                               const sql_stmt *st, const mr_paginate_def *def, const char *schema,
                               mr_buf *out, mr_pag_info *info);

/* True when the statement has the shape the deferred join takes (one
 * table, SELECT list FROM t [WHERE] ORDER BY LIMIT, see rules/README.md),
 * whatever its LIMIT; false with *why (static text) otherwise. */
bool mr_paginate_takes(const char *text, size_t len, const sql_token *tok, const sql_stmt *st,
                       const mr_paginate_def *def, const char *schema, const char **why);

/* The guardrail's default message for a page at `offset`, NUL-terminated
 * (truncated to size). */
void mr_paginate_too_deep_msg(const mr_paginate_def *def, uint64_t offset, char *buf, size_t size);
/* The same for a rule whose table is `where` (schema.table, or NULL: any). */
void mr_paginate_too_deep_text(uint64_t max_offset, const char *where, uint64_t offset, char *buf,
                               size_t size);

#endif
