/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/mem_sql.h - the statements the memory-mode flusher sends
 * (delayed/mem/mem_flush.c): one key's net effect per row, written as
 *   DELETE FROM t WHERE (keys) IN ((...), ...)                tombstones
 *   INSERT INTO t (keys, cols) VALUES ... ON DUPLICATE KEY UPDATE
 *       c = c + VALUES(c), s = VALUES(s)                     missing = insert
 *     (MySQL 8.0.20 and later, which warn on VALUES(): `... AS d ON
 *      DUPLICATE KEY UPDATE c = c + d.c`)
 *   UPDATE t AS m JOIN (SELECT g.keys, SUM(r.c), MAX(r.s) FROM t AS g JOIN
 *       (SELECT ... UNION ALL ...) AS r USING (keys) GROUP BY g.keys) AS d
 *       USING (keys) SET m.c = m.c + d.c, m.s = d.s
 *       WHERE (m.keys) IN ((...), ...)                       missing = ignore
 * The WHERE repeats the keys so that the server reads only those rows of t
 * even when its statistics take t for empty (as InnoDB may after a crash):
 * without it, such a plan scans t once per key of the derived table.
 * The GROUP BY sums the spellings of one row's key ('abc' and 'ABC' in
 * utf8mb4_general_ci): a multi-table UPDATE changes a row once. It groups
 * by the row the join with t found (g.keys), not by the literals: those
 * would be grouped in the connection's collation, which took 'abc' and
 * 'ABC' of a utf8mb4_bin key for one key and sent both deltas to one of
 * the rows. (An empty SELECT of t's keys heading the UNION, to give the
 * literals t's collation, is not enough: MariaDB 10.11 then looks up the
 * outer IN list pushed into the UNION in two collations at once, and
 * dropped 'ss' of a utf8mb4_unicode_ci key given as 'ß' and 'ss'.)
 *
 * Literals are quoted with backslash escapes for a utf8mb4 connection
 * without NO_BACKSLASH_ESCAPES (what bgconn sets up). Pure, any thread.
 */
#ifndef MYREWRITE_DELAYED_MEM_SQL_H
#define MYREWRITE_DELAYED_MEM_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/delayed/rule.h"
#include "myrewrite/rules/rules.h"

/* A memory table's columns: the rule's counter columns, then the set-only
 * columns of set_columns (those not already counters). */
size_t mr_dmem_columns(const mr_delayed_def *def);
const char *mr_dmem_column(const mr_delayed_def *def, size_t i);

/* A column's net change for one key. */
typedef enum mr_dmem_val_op {
    MR_DMEM_VAL_NONE, /* untouched */
    MR_DMEM_VAL_ADD,  /* + n */
    MR_DMEM_VAL_INT,  /* = n */
    MR_DMEM_VAL_TEXT, /* = 'text' */
} mr_dmem_val_op;

typedef struct mr_dmem_val {
    int64_t n;
    const char *text;
    uint32_t len;
    uint8_t op; /* mr_dmem_val_op */
} mr_dmem_val;

/* One key: its encoded values (see mr_dmem_batch.keys) and, per column of
 * the table (mr_dmem_columns), its change. */
typedef struct mr_dmem_row {
    const char *key;
    uint32_t klen;
    bool del; /* delete the row first */
    const mr_dmem_val *v;
} mr_dmem_row;

/* Which upsert the server takes. */
typedef enum mr_dmem_syntax {
    MR_DMEM_SYNTAX_VALUES,    /* col = col + VALUES(col): MariaDB, MySQL before 8.0.20 */
    MR_DMEM_SYNTAX_ROW_ALIAS, /* ... AS d ON DUPLICATE KEY UPDATE col = col + d.col */
} mr_dmem_syntax;

/* From the connected server's version string and number
 * (mysql_get_server_info, mysql_get_server_version). */
mr_dmem_syntax mr_dmem_syntax_for(const char *server_info, unsigned long version);

/* Rows are written together when their shape is the same: for every column
 * whether it is added to, set, or (a set-only column) left alone. */
uint64_t mr_dmem_shape(const mr_delayed_def *def, const mr_dmem_val *v);
/* Does the row write any column after its delete? */
bool mr_dmem_row_writes(const mr_delayed_def *def, const mr_dmem_row *r);

/* Each appends one statement over rows[0..n) to out (rows of one shape
 * for the upsert and the update); false when out of memory. */
bool mr_dmem_sql_delete(mr_buf *out, const mr_delayed_def *def, const mr_dmem_row *rows, size_t n);
bool mr_dmem_sql_upsert(mr_buf *out, const mr_delayed_def *def, const mr_dmem_row *rows, size_t n,
                        mr_dmem_syntax syntax);
bool mr_dmem_sql_update(mr_buf *out, const mr_delayed_def *def, const mr_dmem_row *rows, size_t n);

/* read_pending's marks (rules/README.md, "read_pending"): per schema one
 * InnoDB table, one row per proxy run holding the number of its latest
 * committed chunk of a read_pending table of that schema. */
#define MR_DMEM_MARKS_TABLE "myrewrite_read_marks"
/* CREATE TABLE IF NOT EXISTS `schema`.`myrewrite_read_marks` (...). */
void mr_dmem_sql_marks_table(mr_buf *out, const char *schema);
/* INSERT INTO `schema`.`myrewrite_read_marks` (`proxy`, `seq`) VALUES
 * (proxy, seq) ON DUPLICATE KEY UPDATE `seq` = VALUES(`seq`). */
void mr_dmem_sql_mark(mr_buf *out, const char *schema, uint64_t proxy, uint64_t seq);

/* A key refused by the server, for the dead-letter table: `key` gets
 * "(`k1`, `k2`) = ('1', 'a')", `change` "`n` + 5, `s` = 'x'" (after
 * "DELETE, then " for a tombstone), both NUL-terminated. */
void mr_dmem_describe(mr_buf *key, mr_buf *change, const mr_delayed_def *def, const mr_dmem_row *r);

#endif
