/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/sql/group_merge.h - the rows of a group-commit batch's INSERTs, with
 * the add rows of one key merged (used by delayed/sql/group_sql.c), taken as
 * the statement side gave them (delayed/stage.h), never read from text.
 *
 * A batch's statements are concurrent: each session waits for its own, and
 * every one of them is answered only once the batch has committed, so any
 * order of them inside the batch is one the sessions could have seen. Two
 * add rows (op 0) of the same staging INSERT column list and the same key
 * can therefore be one row holding the sums of their deltas: the flusher
 * adds them up the same way, and the batch stages all of them or none.
 * That leaves the server one row to insert, and the flusher one to read
 * and delete, per hot key and batch instead of one per statement.
 *
 * A statement's rows are merged only when its ndelta says they are plain
 * adds (delayed/stage.h: whole-number deltas of at most 18 digits, no
 * delete, no `col = literal`, no bucket column); the key is the row's tail,
 * the values after the deltas as the statement side wrote them, compared
 * byte for byte (rows whose keys are written differently stay apart, so a
 * string is merged only with one written the same way). Any other
 * statement's rows are copied as they are. A merged delta that would leave
 * the BIGINT range keeps its row apart.
 *
 * Pure, any thread. Owns its arrays; points into the texts given to it.
 */
#ifndef MYREWRITE_DELAYED_GROUP_MERGE_H
#define MYREWRITE_DELAYED_GROUP_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/delayed/stage.h"

#define DG_MAX_DELTAS 16 /* deltas a mergeable row may have */

/* A row to merge, or (ndelta 0) a statement's VALUES copied whole. */
typedef struct dg_row {
    size_t group;     /* which INSERT of the batch */
    const char *text; /* the row from its `(`, or the statement's rows whole */
    size_t len;       /* ... its bytes */
    const char *key;  /* the row's tail: the values after the deltas, to the `)` */
    size_t key_len;
    unsigned ndelta; /* 0: copied whole */
    unsigned merged; /* rows summed into this one (1: itself only) */
    bool gone;       /* summed into an earlier row */
    int64_t d[DG_MAX_DELTAS];
} dg_row;

typedef struct dg_rows {
    dg_row *v;
    size_t n, cap;
} dg_rows;

/* Adds a statement's rows to INSERT `group`: each with its deltas when
 * they are plain adds, else all of them as one copied text. False when out
 * of memory. */
bool dg_rows_add(dg_rows *r, size_t group, const mr_dstage *st);
/* Sums the rows of one group and key into the first of them. False when
 * out of memory (nothing merged then). */
bool dg_rows_merge(dg_rows *r);
/* Appends every row left, in order, to its group's buffer out[group];
 * has[group] tells whether that buffer has a row already (updated). */
void dg_rows_write(const dg_rows *r, mr_buf *out, bool *has);
/* The rows summed into another. */
size_t dg_rows_gone(const dg_rows *r);
void dg_rows_free(dg_rows *r);

#endif
