/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/group_sql.h - the multi-row INSERT of a group-commit batch: the
 * staging INSERTs of several sessions' UPDATE DELAYED statements
 * (delayed/staging_sql.h) joined into one statement per column list.
 *
 * A staging INSERT is `INSERT INTO `s`.`t` (cols...) VALUES (...), ...`;
 * its prefix is everything before the VALUES lists. Two statements with
 * the same prefix (same staging table, same columns in the same order)
 * join into one INSERT: the prefix once, then each one's VALUES lists,
 * comma-separated, in the order given, but for the add rows of one key
 * in a statement whose ndelta says it has deltas: those are merged into
 * the key's first row, their deltas summed (delayed/group_merge.h says when
 * and why that is the same). Names in the prefix are quoted
 * with backticks and are skipped whole, so a column named `) VALUES (`
 * does not end it.
 *
 * Pure, any thread. Owns nothing; writes the caller's buffers.
 */
#ifndef MYREWRITE_DELAYED_GROUP_SQL_H
#define MYREWRITE_DELAYED_GROUP_SQL_H

#include <stdbool.h>
#include <stddef.h>

#include "myrewrite/base/buf.h"

/* The most INSERTs (distinct prefixes) one batch is built into. */
#define MR_DGROUP_MAX_STMTS 8

typedef struct mr_dgroup_text {
    const char *sql; /* a staging INSERT */
    size_t len;
    unsigned ndelta; /* its rows start with this many add deltas (col = col + N) and
                        hold no `col = literal`: its add rows may merge with others of
                        the same key; 0: its rows are copied as they are */
} mr_dgroup_text;

/* Length of the prefix of a staging INSERT, up to and with `VALUES `;
 * 0 when the text is not one (no VALUES outside the quoted names). */
size_t mr_dgroup_prefix_len(const char *sql, size_t len);

/* Joins n staging INSERTs into at most `cap` INSERTs, out[0..k) (each
 * reset first), one per prefix in the order they first appear, the add
 * rows of one key merged (see above; *merged, unless NULL: the rows summed
 * into another); returns k,
 * or 0 when a text is not a staging INSERT, there are more prefixes than
 * cap, or a buffer failed (out of memory). */
size_t mr_dgroup_build(const mr_dgroup_text *t, size_t n, mr_buf *out, size_t cap, size_t *merged);

#endif
