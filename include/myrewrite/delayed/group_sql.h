/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/group_sql.h - the multi-row INSERT of a group-commit batch: the
 * staging INSERTs of several sessions' UPDATE DELAYED statements
 * (delayed/staging_sql.h), each as data (delayed/stage.h), joined into one
 * statement per column list.
 *
 * A staging INSERT is `INSERT INTO `s`.`t` (cols...) VALUES (...), ...`;
 * its prefix, the part before the rows, is known by its length. Two
 * statements with the same prefix (same staging table, same columns in the
 * same order) join into one INSERT: the prefix once, then each one's rows,
 * comma-separated, in the order given, but for the add rows of one key in
 * statements whose ndelta says they are plain adds: those are merged into
 * the key's first row, their deltas summed (delayed/sql/group_merge.h says when
 * and why that is the same). No text is read: prefixes and row tails are
 * compared byte for byte, deltas are the numbers the statement side read.
 *
 * Pure, any thread. Owns nothing; writes the caller's buffers.
 */
#ifndef MYREWRITE_DELAYED_GROUP_SQL_H
#define MYREWRITE_DELAYED_GROUP_SQL_H

#include <stdbool.h>
#include <stddef.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/delayed/stage.h"

/* The most INSERTs (distinct prefixes) one batch is built into. */
#define MR_DGROUP_MAX_STMTS 8

/* Joins n staging INSERTs into at most `cap` INSERTs, out[0..k) (each
 * reset first), one per prefix in the order they first appear, the add
 * rows of one key merged (see above; *merged, unless NULL: the rows summed
 * into another); returns k, or 0 when an INSERT has no prefix or no rows,
 * there are more prefixes than cap, or a buffer failed (out of memory). */
size_t mr_dgroup_build(const mr_dstage *t, size_t n, mr_buf *out, size_t cap, size_t *merged);

#endif
