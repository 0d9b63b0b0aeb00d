/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/reject.h - the dead-letter place of delayed rules: keys whose
 * flushed change the server refuses for its data (a sum out of the
 * column's range, a NULL into NOT NULL, a value it cannot convert).
 *
 * Both flushers (staged and memory mode) move such a key's change, in the
 * transaction that applies the rest of its chunk, into the table
 * `<table>_delayed_rejected` of the main table's schema (created by the
 * flusher, outside any transaction), instead of retrying it every round
 * and holding back every other key of the table. This module builds that
 * table's SQL and counts what was moved: per table in total (SHOW DELAYED,
 * /metrics), per table in its latest round (FLUSH DELAYED answers an ERR
 * for a round that rejected rows), and the latest few keys with their
 * error (SHOW DELAYED REJECTED).
 *
 * Threads: the SQL builders and note/round calls on a flusher thread; the
 * readers on any thread. A mutex guards the tables and the recent list.
 */
#ifndef MYREWRITE_DELAYED_REJECT_H
#define MYREWRITE_DELAYED_REJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"

#define MR_DREJECT_RECENT 200 /* rejected keys SHOW DELAYED REJECTED lists, newest first */

/* Is `code` a refusal of the data (the same statement fails again with the
 * same values), not of the connection, a lock wait or a deadlock? */
bool mr_dreject_data_error(unsigned code);

/* The dead-letter table's name: `<table>_delayed_rejected`, the table's name
 * cut so that the whole fits MySQL's 64 characters. */
void mr_dreject_table_name(const char *table, char *out, size_t cap);
/* CREATE TABLE IF NOT EXISTS `schema`.`<table>_delayed_rejected` (...). */
void mr_dreject_put_create(mr_buf *b, const char *schema, const char *table);
/* INSERT INTO the dead-letter table one row: the key (as `col = value`
 * text), its change (`n + 5`, `DELETE then n + 5`, `s = 'x'`), how many
 * staged rows (or 1, a memory-mode key) it stood for, and the error. */
void mr_dreject_put_insert(mr_buf *b, const char *schema, const char *table, const char *key,
                           const char *change, uint64_t rows, unsigned code, const char *msg);

/* Flusher: a round of schema.table starts (its round count goes to 0). */
void mr_dreject_round_begin(const char *schema, const char *table);
/* Flusher, after the commit that moved it: one rejected key of `rows` rows. */
void mr_dreject_note(const char *schema, const char *table, const char *key, const char *change,
                     uint64_t rows, unsigned code, const char *msg);

/* Rows rejected so far on `name`, "schema.table" (0 when none). */
uint64_t mr_dreject_total(const char *name);
/* Rows rejected by the latest rounds of the tables matching `filter` (""
 * all, `t`, `schema.t`); `where` gets "schema.t (n rows, last: code msg),
 * ..." and the dead-letter tables, for FLUSH DELAYED's ERR. */
uint64_t mr_dreject_round_report(const char *filter, char *where, size_t cap);

/* One table's total, for /metrics; false past the last. */
bool mr_dreject_table_at(size_t i, char *name, size_t cap, uint64_t *rows);

typedef struct mr_dreject_key {
    char table[130]; /* schema.table */
    char key[200];
    char change[200];
    uint64_t rows;
    unsigned code;
    char msg[200];
    uint64_t at_ms; /* unix ms */
} mr_dreject_key;

/* Copies the newest rejected keys (of `table`, "" or NULL: all; `t` or
 * `schema.t`) into out[0..cap), newest first; returns how many. */
size_t mr_dreject_recent(const char *table, mr_dreject_key *out, size_t cap);

#endif
