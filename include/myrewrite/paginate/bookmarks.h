/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/bookmarks.h - the keyset bookmark store: for each listing, where the pages
 * the proxy relayed ended (row position and the order's values there), so a
 * later deeper page can seek instead of skipping rows.
 *
 * One store for the process, shared by every worker (a client's pool spreads
 * its pages over workers): striped by listing hash, each stripe behind its
 * own mutex, held only for a copy. Bounded: each stripe keeps at most
 * ceil(max_bookmarks / MR_BOOKMARK_STRIPES) bookmarks and evicts the least
 * recently used. Bookmarks expire `ttl_ms` after they were recorded.
 *
 * Writes: a per-table generation (a fixed array of slots indexed by the
 * table hash, plus one global generation for statements whose tables are
 * unknown, like CALL). A bookmark keeps the generation read when its page
 * was sent; once a write to that table has passed since, it is dropped. Two
 * tables sharing a slot only drop each other's bookmarks more often.
 *
 * A listing whose order cannot be bookmarked (a nullable column, a type
 * without an exact text form, a column missing from the select list) is
 * remembered as refused for the same TTL.
 */
#ifndef MYREWRITE_BOOKMARKS_H
#define MYREWRITE_BOOKMARKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/paginate/stats.h"

#define MR_BOOKMARK_STRIPES 16

/* The generation of a table's slot (global writes included). */
uint64_t mr_bookmarks_gen(uint64_t table_hash);
/* A write to the table passed (or is about to). */
void mr_bookmarks_note_write(uint64_t table_hash);
/* A statement that may write any table passed (CALL, EXECUTE of SQL-level
 * prepared statements...). */
void mr_bookmarks_note_write_all(void);

/* Records that row `pos` - 1 of the listing (pos rows precede the next
 * page) has the order values `values` (NUL-separated literals). `gen` is
 * mr_bookmarks_gen() read when the page was sent; a stale one is ignored. */
void mr_bookmarks_put(uint64_t listing, uint64_t table_hash, uint64_t gen, uint64_t pos,
                      const char *values, size_t len, uint64_t ttl_ms, uint64_t max_bookmarks,
                      uint64_t now_ms);
/* Remembers that the listing cannot be bookmarked (see above). */
void mr_bookmarks_refuse(uint64_t listing, uint64_t table_hash, uint64_t gen, uint64_t ttl_ms,
                         uint64_t now_ms);

typedef enum mr_bookmark_find {
    MR_BOOKMARK_NONE,    /* no usable bookmark at or before the offset */
    MR_BOOKMARK_FOUND,   /* *pos and values are filled */
    MR_BOOKMARK_REFUSED, /* the listing was refused (mr_bookmarks_refuse) */
} mr_bookmark_find;

/* The bookmark of the listing with the greatest position <= offset that is
 * neither expired nor older than a write to its table. `values` (cap bytes)
 * receives its literals, *len their length. */
mr_bookmark_find mr_bookmarks_find(uint64_t listing, uint64_t table_hash, uint64_t offset,
                                   uint64_t now_ms, uint64_t *pos, char *values, size_t cap,
                                   size_t *len);

/* Write tracking costs a lexer pass per statement: sessions do it only
 * once some page was watched for a bookmark (armed). */
void mr_bookmarks_arm(void);
bool mr_bookmarks_armed(void);

/* Drops every bookmark (tests). */
void mr_bookmarks_clear(void);
/* Milliseconds of a monotonic clock: what now_ms means for callers. */
uint64_t mr_bookmarks_now_ms(void);

/* The store as the pure layers reach it: paginate's statement side
 * (mr_stmt_ctx.bookmarks) and the watch of a page's response
 * (mr_keyset_watch_begin) call these instead of linking the store. */
typedef struct mr_bookmark_port {
    uint64_t (*gen)(uint64_t table_hash);
    void (*put)(uint64_t listing, uint64_t table_hash, uint64_t gen, uint64_t pos,
                const char *values, size_t len, uint64_t ttl_ms, uint64_t max_bookmarks,
                uint64_t now_ms);
    void (*refuse)(uint64_t listing, uint64_t table_hash, uint64_t gen, uint64_t ttl_ms,
                   uint64_t now_ms);
    mr_bookmark_find (*find)(uint64_t listing, uint64_t table_hash, uint64_t offset,
                             uint64_t now_ms, uint64_t *pos, char *values, size_t cap, size_t *len);
    uint64_t (*now_ms)(void);
} mr_bookmark_port;

/* The process's store (paginate/bookmarks.c). */
extern const mr_bookmark_port mr_bookmarks_store;

#endif
