/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/read_sql.h - read_pending of a staged delayed rule: a point read
 * of the rule's counters by the full key, rewritten so that one statement
 * adds what the staging table still holds for that key (rules/README.md,
 * "read_pending").
 *
 * Taken (keywords any case, names bare or `quoted`):
 *   SELECT c [, c2 ...] FROM [schema.]tbl WHERE k = v [AND k2 = v2 ...]
 * where each c is a counter column of the rule (not one of set_columns)
 * or a key column, at least one a counter; the WHERE gives every key
 * column (the bucket column included) once with `=`, v a literal or `?`.
 * Nothing else: no alias, no join, no subquery, no DISTINCT or other
 * modifier, no GROUP BY, ORDER BY, LIMIT, locking clause or INTO.
 *
 * The result, for c a counter and k the key:
 *   SELECT (`mr_t`.`c` + CAST(COALESCE((SELECT SUM(`mr_s`.`c`) FROM
 *       `schema`.`staging` AS `mr_s` WHERE `mr_s`.`k` = `mr_t`.`k`), 0)
 *       AS SIGNED)) AS c, ...
 *     FROM tbl AS `mr_t` WHERE (k = v ...) AND NOT EXISTS (SELECT 1 FROM
 *       `schema`.`staging` AS `mr_s` WHERE `mr_s`.`k` = `mr_t`.`k` AND
 *       `mr_s`.`op` = 1)
 * Each column keeps its name as written; a key column is copied as
 * written; the WHERE's literals and `?` are copied byte for byte and stay
 * in their order, so a prepared statement keeps its parameters. A key
 * with a DELETE DELAYED staged reads as no row.
 *
 * Memory mode (read_pending with mode = memory) builds the same SELECT with
 * the sum the proxy holds for the key written as a number in place of the
 * staging subquery (mr_read_held, below).
 *
 * Pure, any thread. Owns nothing; writes the caller's buffer and message.
 */
#ifndef MYREWRITE_DELAYED_READ_SQL_H
#define MYREWRITE_DELAYED_READ_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/delayed/rule.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/sql/stmt.h"

/* A point read, as read: token indexes into the caller's array. */
typedef struct mr_delayed_read {
    uint32_t schema; /* SQL_NONE when unqualified */
    uint32_t table;
    uint32_t item[MR_DELAYED_MAX_TERMS]; /* the select list's column tokens */
    int item_col[MR_DELAYED_MAX_TERMS];  /* index in def->columns; -1: a key column */
    unsigned nitems;
    sql_range where;                               /* the WHERE body */
    mr_delayed_key term[MR_DELAYED_MAX_TERMS + 1]; /* its key = literal terms, in order */
    unsigned nterms;
} mr_delayed_read;

/* Is st a SELECT from one plain table (no join, subquery, union...)? Then
 * its table's tokens are in out->schema and out->table, for the caller to
 * find the rule. */
bool mr_delayed_read_table(const char *text, const sql_token *tok, const sql_stmt *st,
                           mr_delayed_read *out);

/* Does the read fit def (its keys given: a rule without key takes the
 * schema's)? False with why it does not in why. */
bool mr_delayed_read_shape(const char *text, const sql_token *tok, const sql_stmt *st,
                           const mr_delayed_def *def, mr_delayed_read *rd, char *why,
                           size_t whylen);

/* Appends the rewritten SELECT to out; false when out of memory or a name
 * cannot be written (the buffer is then failed). mem NULL: staged mode,
 * the sum is the staging table's. Memory mode (mem: what the proxy holds
 * for the key, read when the statement is taken): the column adds the
 * held sum, `(`mr_t`.`c` + CAST(5 AS SIGNED)) AS c`, and a chunk in
 * flight only if the read's snapshot does not hold its mark yet:
 *   CAST(5 + IF(COALESCE((SELECT `mr_m`.`seq` FROM
 *       `schema`.`myrewrite_read_marks` AS `mr_m` WHERE `mr_m`.`proxy` =
 *       P), 0) >= N, 0, 3) AS SIGNED)
 * A held delete makes the WHERE `(...) AND 0 = 1`. */
bool mr_delayed_read_build(const char *text, const sql_token *tok, const mr_delayed_read *rd,
                           const mr_delayed_def *def, const mr_read_held *mem, mr_buf *out);

/* Memory mode, COM_STMT_PREPARE: the key is bound only at each execute, so
 * the prepared SELECT reads what the proxy holds from user variables, which
 * the session sets ahead of each COM_STMT_EXECUTE (mr_delayed_read_set).
 * Counter item i (1-based) becomes
 *   (`mr_t`.`c` + CAST(COALESCE(@myrewrite_rp_hI, 0) + IF(COALESCE((SELECT
 *       `mr_m`.`seq` FROM `schema`.`myrewrite_read_marks` AS `mr_m` WHERE
 *       `mr_m`.`proxy` = P), 0) >= COALESCE(@myrewrite_rp_chunk, 0), 0,
 *       COALESCE(@myrewrite_rp_fI, 0)) AS SIGNED)) AS c
 * so the chunk in flight counts only while the read's own snapshot lacks
 * its mark, as in the text form; without the marks table (`marks` false)
 * the IF is `+ COALESCE(@myrewrite_rp_fI, 0)`. The WHERE becomes
 * `WHERE (...) AND COALESCE(@myrewrite_rp_gone, 0) = 0`. The `?` stay as
 * written and in their order. False when out of memory. */
bool mr_delayed_read_build_vars(const char *text, const sql_token *tok, const mr_delayed_read *rd,
                                const mr_delayed_def *def, bool marks, uint64_t proxy, mr_buf *out);

/* The SET of those variables for one execute: mem what the proxy holds for
 * the key bound (NULL: zeros, the read then returns the table's value):
 *   SET @myrewrite_rp_chunk = N, @myrewrite_rp_gone = 0|1,
 *       @myrewrite_rp_h1 = H, @myrewrite_rp_f1 = F, ...
 * False when out of memory. */
bool mr_delayed_read_set(const mr_delayed_read *rd, const mr_read_held *mem, mr_buf *out);

#endif
