/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/keyset.h - keyset pagination: a deep page of a listing the proxy
 * has seen before becomes a seek from the last row of an earlier page
 *
 *   SELECT ... FROM t WHERE (orig) AND (k1 > v1 OR (k1 = v1 AND k2 > v2))
 *     ORDER BY k1, k2 LIMIT (off - known), n
 *
 * A *listing* is one SELECT with its LIMIT removed (same text, same literal
 * values, same default schema). Its order is the ORDER BY with the rule's
 * key columns appended (as the deferred join does), so it is total.
 *
 * The parts: the listing and the seek text (paginate/keyset_sql.c, pure),
 * SQL literals re-made from a row's text values (paginate/keyset_value.c,
 * pure), the bookmark store shared by every worker (paginate/bookmarks.c), and the
 * reading of the last row of a page as it streams to the client
 * (paginate/keyset_watch.c, one per session).
 */
#ifndef MYREWRITE_PAGINATE_KEYSET_H
#define MYREWRITE_PAGINATE_KEYSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/paginate/rule.h"
#include "myrewrite/rules/keyset_note.h"
#include "myrewrite/sql/stmt.h"

struct mr_paginate_def;

/* ---- paginate/keyset_sql.c (pure) ---- */

/* Fills `ls` from a SELECT the deferred join would take (the caller checked
 * with mr_paginate_takes): every ORDER BY item must be a plain column of the
 * table; the key columns it lacks are appended in the direction of its last
 * item (as the deferred join appends them). The listing is the text, the
 * default schema and the account (`user`, the session's login name: every
 * session reaches the server from the proxy's address, so the name decides
 * the account). False with *why set when the statement is not a keyset
 * listing. */
bool mr_keyset_listing_of(const char *text, size_t len, const sql_token *tok, const sql_stmt *st,
                          const struct mr_paginate_def *def, const char *schema, const char *user,
                          mr_keyset_listing *ls, const char **why);

/* Appends the seek form of the statement to `out`: its WHERE (parenthesized)
 * AND the seek after `values` (the listing's literals, NUL-separated, one per
 * column), its ORDER BY with the appended key columns, LIMIT skip, count. */
void mr_keyset_seek_sql(const char *text, size_t len, const sql_token *tok, const sql_stmt *st,
                        const mr_keyset_listing *ls, const char *values, size_t values_len,
                        uint64_t skip, mr_buf *out);

/* How many literals a bookmark's NUL-separated values hold. */
unsigned mr_keyset_value_count(const char *values, size_t len);

/* Appends the statement with the appended key columns added to its ORDER
 * BY (nothing else changes) and returns true; false when the ORDER BY names
 * every key column already (the statement is then fine as it is). Pages a
 * keyset rule does not seek still need it: their last row must be the last
 * in the same total order the seeks assume. */
bool mr_keyset_ordered_sql(const char *text, size_t len, const sql_token *tok, const sql_stmt *st,
                           const mr_keyset_listing *ls, mr_buf *out);

/* The store's slot for a table name (case-insensitive: over-invalidating
 * `T` with `t` is harmless). */
uint64_t mr_keyset_table_hash(const char *name, size_t len);

/* ---- paginate/keyset_value.c (pure) ---- */

/* Why a column cannot carry a bookmark (NULL: it can), from its column
 * definition: type, flags and character set. */
const char *mr_keyset_column_problem(uint8_t type, uint16_t flags, uint16_t charset);
/* Appends the text-protocol value v[0..n) of such a column as an SQL literal
 * that compares equal to it: integers and decimals as numbers, dates as
 * quoted strings, character strings as _utf8mb4 X'..', binary as X'..'.
 * False (and nothing useful appended) when the text is not what the type
 * promises. */
bool mr_keyset_literal(mr_buf *out, uint8_t type, uint16_t charset, const uint8_t *v, size_t n);

/* ---- paginate/keyset_writes.c (pure) ---- */

#define MR_KEYSET_WRITE_SLOTS 32

/* Tables (mr_keyset_table_hash) a text may write; `all` when it may write
 * any, or names more than MR_KEYSET_WRITE_SLOTS. */
typedef struct mr_keyset_writes {
    uint64_t slot[MR_KEYSET_WRITE_SLOTS];
    unsigned n;
    bool all;
} mr_keyset_writes;

void mr_keyset_writes_add(mr_keyset_writes *wr, uint64_t table_hash);
/* Adds what each statement of the text may write (over-approximated: see
 * paginate/keyset_writes.c). */
void mr_keyset_writes_scan(const char *sql, size_t len, unsigned lex_flags, mr_keyset_writes *wr);
/* May the text create a temporary table (over-approximated: see
 * paginate/keyset_writes.c)? A session that ran one neither uses nor
 * leaves bookmarks: its table names may resolve to its own tables. */
bool mr_keyset_temp_scan(const char *sql, size_t len, unsigned lex_flags);

/* ---- paginate/keyset_watch.c: a page's response, as it streams ---- */

/* Reads the column definitions and keeps the last row of one page; at the
 * end of the response it records the bookmark (or the listing's refusal).
 * One per session, on its worker thread; owns its row copy. */
typedef struct mr_keyset_watch {
    bool active;
    bool ext_metadata; /* MARIADB_CLIENT_EXTENDED_METADATA: definitions carry a type-info
                          string after org_name (set by the session; kept by begin) */
    const struct mr_bookmark_port *store; /* where the page's end is recorded */
    bool broken;                          /* give up quietly: no bookmark, no refusal */
    bool rows_started;
    const char *problem; /* the listing's order cannot be bookmarked: refuse it */
    mr_keyset_note note;
    uint64_t gen;                /* the table's write generation when the page was sent */
    unsigned columns;            /* column definitions seen */
    int idx[MR_KEYSET_MAX_COLS]; /* result column of each listing column; -1 unknown */
    uint8_t type[MR_KEYSET_MAX_COLS];
    uint16_t charset[MR_KEYSET_MAX_COLS];
    uint64_t rows;
    uint8_t *row; /* payload of the latest row (owned) */
    size_t row_len, row_cap;
} mr_keyset_watch;

/* The response to a statement whose note asks to watch it begins. */
void mr_keyset_watch_begin(mr_keyset_watch *w, const mr_keyset_note *note,
                           const struct mr_bookmark_port *store);
/* True when the session must hand over whole packets (column definitions
 * and rows) while the tracker is in state `ts` (an mr_track_state). */
bool mr_keyset_watch_wants(const mr_keyset_watch *w, int ts);
/* A whole packet's payload, read while the tracker was in state `ts`. A
 * packet over MR_KEYSET_PACKET_MAX comes as p == NULL: the watch gives up. */
void mr_keyset_watch_packet(mr_keyset_watch *w, int ts, const uint8_t *p, size_t n);
/* The response ended (ok: without an error): records what was learnt. */
void mr_keyset_watch_end(mr_keyset_watch *w, bool ok, uint64_t now_ms);
void mr_keyset_watch_free(mr_keyset_watch *w);

#endif
