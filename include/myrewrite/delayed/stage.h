/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/stage.h - a staging INSERT as data: what the statement side read
 * from an UPDATE/DELETE DELAYED (delayed/staging_sql.h writes it), so that
 * nothing downstream reads the SQL text the proxy wrote.
 *
 * The text is the INSERT as sent when it goes alone: a prefix up to and
 * with `VALUES ` (the staging table and its column list), then the rows,
 * `(...)`, joined by ", ". Each row is known by its span in the text and
 * by where its values after the add deltas begin (the key values and the
 * op: its tail); an INSERT whose rows hold nothing but adds, as whole
 * numbers, carries those deltas as numbers too (ndelta of them per row),
 * which is all the group merge (delayed/sql/group_merge.h) needs: it compares
 * tails byte for byte and sums the numbers, and a merged row is rendered
 * from them.
 *
 * Pure, any thread. The view owns nothing.
 */
#ifndef MYREWRITE_DELAYED_STAGE_H
#define MYREWRITE_DELAYED_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"

/* One row of the INSERT: text[off, off + len) is its `(...)`, and
 * text[tail, off + len) its values after the deltas, to the `)`. */
typedef struct mr_dstage_row {
    uint32_t off, len, tail;
} mr_dstage_row;

typedef struct mr_dstage {
    const char *text; /* the whole INSERT */
    size_t len;
    size_t prefix_len; /* up to and with `VALUES ` */
    unsigned ndelta;   /* every row starts with this many add deltas, in d; 0: the rows
                          are not plain adds (a delete, a `col = literal`, a bucket
                          column, a delta that is not a whole number of at most 18
                          digits) and are copied as they are */
    uint32_t nrows;
    const mr_dstage_row *rows;
    const int64_t *d; /* nrows * ndelta: row r's deltas at d[r * ndelta] */
} mr_dstage;

/* The builder's side: the arrays a view points into, owned. */
typedef struct mr_dstage_rows {
    mr_buf rows; /* mr_dstage_row each */
    mr_buf d;    /* int64_t each */
    size_t prefix_len;
    unsigned ndelta;
} mr_dstage_rows;

/* The view of an INSERT text[0..len) whose rows are in r. */
static inline mr_dstage mr_dstage_of(const char *text, size_t len, const mr_dstage_rows *r)
{
    return (mr_dstage){.text = text,
                       .len = len,
                       .prefix_len = r->prefix_len,
                       .ndelta = r->ndelta,
                       .nrows = (uint32_t)(r->rows.len / sizeof(mr_dstage_row)),
                       .rows = (const mr_dstage_row *)(const void *)r->rows.data,
                       .d = (const int64_t *)(const void *)r->d.data};
}

#endif
