/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/stmt_cache.h - the statements prepared on one server connection:
 * a statement's identity -> its server id there, least recently used first
 * out past a capacity (the caller closes each evicted statement with
 * COM_STMT_CLOSE, which has no answer).
 *
 * The key is the statement's identity (mr_stmt.key): its text, the default
 * schema it was prepared under and the parse context (sql_mode, the client
 * character set and collation). Not the session nor the client's id: every
 * session of the pool that prepares the same text under the same schema
 * and context means the same statement, and finds the one the connection
 * has (an application's sessions prepare the same few statements; keyed
 * by session, every borrow by another session would prepare again and a
 * connection would hold each statement once per session). What a server
 * statement keeps between commands is handled per use:
 *   - parameter types: the entry keeps the types it last got and the
 *     caller compares them with the client statement's (mr_stmt_exec_for);
 *   - long data and an open cursor: while a client statement has either on
 *     a server statement, the caller holds the entry (mr_stmt_cache_hold):
 *     it is not evicted, and no other client statement uses it (a second
 *     server statement of the same key is prepared for that one).
 * A client's COM_STMT_CLOSE leaves the server statements cached for the
 * next session (the capacity bounds them); COM_STMT_RESET goes where the
 * entry is held, else the proxy answers it (nothing is on a server).
 *
 * Pure, one thread: the connection's owner. The cache owns its entries.
 */
#ifndef MYREWRITE_POOL_STMT_CACHE_H
#define MYREWRITE_POOL_STMT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/pool/set.h"
#include "myrewrite/pool/stmt_map.h"

typedef struct mr_stmt_cached {
    uint32_t server_id;
    const mr_stmt *holder;                /* not NULL: held for this client statement */
    mr_stmt_kept_types types;             /* the types the server statement got last */
    struct mr_stmt_cached *newer, *older; /* the use order (least recent: cache's oldest) */
    uint64_t hash;
    size_t key_len;
    uint8_t key[]; /* a copy of mr_stmt.key */
} mr_stmt_cached;

typedef struct mr_stmt_cache {
    mr_pool_set by_key;
    mr_stmt_cached *newest, *oldest;
    uint32_t capacity;
} mr_stmt_cache;

/* An empty cache of capacity (>= 1) statements: more only while the others
 * are held. */
void mr_stmt_cache_init(mr_stmt_cache *c, uint32_t capacity);
/* Frees the entries (nothing is sent: the connection is closing, or its
 * server dropped every statement, COM_RESET_CONNECTION). */
void mr_stmt_cache_clear(mr_stmt_cache *c);
static inline uint32_t mr_stmt_cache_count(const mr_stmt_cache *c) { return c->by_key.n; }

/* The server statement of st's identity here that st may use (not held
 * for another), now the most recently used; NULL: prepare it. */
mr_stmt_cached *mr_stmt_cache_find(mr_stmt_cache *c, const mr_stmt *st);
/* Server statement server_id was prepared here for st (or, server_id
 * MR_STMT_ID_LAST, is being prepared by a COM_STMT_PREPARE sent with the
 * execute after it, MariaDB's direct execution: set e->server_id from its
 * prepare-OK, or remove e on an ERR). Now the most recently used. NULL:
 * out of memory (the caller closes server_id: it is prepared again at the
 * next execute). The cache may now be over its capacity: see trim. */
mr_stmt_cached *mr_stmt_cache_add(mr_stmt_cache *c, const mr_stmt *st, uint32_t server_id);
/* While the cache is over its capacity, the caller calls this and closes
 * *evicted (COM_STMT_CLOSE) each time it returns true: the least recently
 * used entry neither held nor `keep` (the one the caller is about to use)
 * has left the cache. False: nothing (more) to evict. After an add, and
 * after holds end (held entries count, but never leave). */
bool mr_stmt_cache_trim(mr_stmt_cache *c, const mr_stmt_cached *keep, uint32_t *evicted);
/* Forgets e (the caller closed it, or the server said it does not know it). */
void mr_stmt_cache_remove(mr_stmt_cache *c, mr_stmt_cached *e);
/* An entry held for st, or NULL. When the client closes st (or resets the
 * session), each one is closed on the server (COM_STMT_CLOSE: its cursor
 * and long data go with it) and removed, before mr_stmt_map_close: a hold
 * must not outlive its statement. */
mr_stmt_cached *mr_stmt_cache_held_by(const mr_stmt_cache *c, const mr_stmt *st);
/* Holds e for st (a cursor open on it, long data sent to it) or, st NULL,
 * lets it go. */
static inline void mr_stmt_cache_hold(mr_stmt_cached *e, const mr_stmt *st) { e->holder = st; }

#endif
