/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/stmt_map.h - one client session's prepared statements, whichever
 * server connection runs them (issue 27, pool = transaction).
 *
 * The client knows each statement by an id the map gives (from 1 up, one
 * after the other, never 0 or MR_STMT_ID_LAST), not by a server's: the
 * session's statements outlive the server connections it borrows, and the
 * same statement has another id on each. The map keeps what preparing and
 * executing it again elsewhere takes:
 *   - its identity (the cache's key, pool/stmt_cache.h): the text, the
 *     default schema it was prepared under (MariaDB runs a statement in the
 *     schema of its prepare, whatever USE came since) and the parse context
 *     the caller gives (the session variables that change how the text is
 *     read: sql_mode, character_set_client, collation_connection);
 *   - its parameter and column counts (from the prepare-OK);
 *   - the parameter types its last execute bound (an execute that binds
 *     none relies on them);
 *   - the COM_STMT_SEND_LONG_DATA pieces sent since its last execute, up to
 *     a byte limit for the whole session. Past the limit the pieces cannot
 *     all be re-sent: the caller sends the ones kept and the rest to one
 *     connection, and an execute anywhere else must be refused
 *     (mr_stmt_long_data_resendable).
 *
 * Pure, one thread: the session's. The map owns its statements and
 * everything they hold.
 */
#ifndef MYREWRITE_POOL_STMT_MAP_H
#define MYREWRITE_POOL_STMT_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/pool/set.h"
#include "myrewrite/proto/stmt_rewrite.h"

/* Types kept: a copy of an execute's types block (owned p). */
typedef struct mr_stmt_kept_types {
    uint8_t *p;
    size_t len; /* 0: none */
    uint64_t count;
    bool named;
} mr_stmt_kept_types;

/* Replaces k with a copy of t (NULL: none); false: out of memory (k is
 * then empty). */
bool mr_stmt_types_keep(mr_stmt_kept_types *k, const mr_stmt_types *t);
/* The same types (both empty counts as the same). */
bool mr_stmt_types_same(const mr_stmt_kept_types *a, const mr_stmt_kept_types *b);
void mr_stmt_types_drop(mr_stmt_kept_types *k);
/* k as the rewrite takes it (NULL when empty). */
const mr_stmt_types *mr_stmt_types_view(const mr_stmt_kept_types *k, mr_stmt_types *view);

typedef struct mr_stmt {
    uint32_t id; /* the client's */
    uint16_t nparams, ncolumns;
    const char *text; /* the statement (into key) */
    size_t text_len;
    const char *schema; /* default schema when prepared, "" for none (into key) */
    size_t schema_len;
    const uint8_t *key; /* identity: schema, parse context, text (owned, with the statement) */
    size_t key_len;
    uint64_t hash;            /* of key */
    mr_stmt_kept_types types; /* bound by the last execute that bound some */
    mr_buf long_data;         /* SEND_LONG_DATA payloads since the last execute, each
                                 after its length (u32); the client's id in them */
    bool long_data_over;      /* more was sent than kept: not re-sendable */
} mr_stmt;

typedef struct mr_stmt_map {
    mr_pool_set by_id;
    uint32_t next_id;       /* the next id to try */
    uint32_t last;          /* the statement prepared last (MR_STMT_ID_LAST), 0: none */
    size_t long_data_limit; /* bytes of long data kept for the session */
    size_t long_data_bytes; /* kept now */
} mr_stmt_map;

/* An empty map keeping up to long_data_limit bytes of long data. */
void mr_stmt_map_init(mr_stmt_map *m, size_t long_data_limit);
/* Frees every statement (nothing is sent: see mr_stmt_map_clear). */
void mr_stmt_map_free(mr_stmt_map *m);
/* Drops every statement, as COM_RESET_CONNECTION and COM_CHANGE_USER do on a
 * server; ids go on from where they were (an old id stays unknown). */
void mr_stmt_map_clear(mr_stmt_map *m);

/* A statement the client prepared: text under schema (NULL or "" for
 * none) with the parse context ctx[0..ctx_len) and the counts of its
 * prepare-OK. It gets the next free id and becomes the last prepared.
 * NULL: out of memory (the caller answers the client an ERR and closes the
 * server statement). */
mr_stmt *mr_stmt_map_add(mr_stmt_map *m, const char *text, size_t text_len, const char *schema,
                         const void *ctx, size_t ctx_len, uint16_t nparams, uint16_t ncolumns);
/* The statement a client command names (MR_STMT_ID_LAST: the last one
 * prepared, while it is open), or NULL: unknown (ER_UNKNOWN_STMT_HANDLER). */
mr_stmt *mr_stmt_map_get(const mr_stmt_map *m, uint32_t id);
/* A client's COM_STMT_PREPARE failed: as MariaDB does, no statement is the
 * last prepared any more (an execute naming MR_STMT_ID_LAST then gets
 * ER_UNKNOWN_STMT_HANDLER; measured by t_stmt_pool). */
static inline void mr_stmt_map_prepare_failed(mr_stmt_map *m) { m->last = 0; }
/* COM_STMT_CLOSE: forgets st (and, when st was the last prepared, there
 * is no last one any more, as on the server). */
void mr_stmt_map_close(mr_stmt_map *m, mr_stmt *st);
static inline uint32_t mr_stmt_map_count(const mr_stmt_map *m) { return m->by_id.n; }

/* An execute (or bulk execute) of st bound types t (t->len > 0): they are
 * the ones to put into a later execute that binds none. false: out of
 * memory; st then keeps none (a later execute that binds none goes as
 * sent). */
bool mr_stmt_bind_types(mr_stmt *st, const mr_stmt_types *t);

/* A COM_STMT_SEND_LONG_DATA payload p[0..n) for st: true when it is kept
 * (nothing goes to a server yet). false when it is not kept: it would pass
 * the session's limit (or memory ran out), or pieces were already not
 * kept; then the caller sends mr_stmt_long_data_build's pieces and this
 * one to the connection it pins the session to, calls
 * mr_stmt_long_data_drop, and refuses an execute of st on any other
 * connection until mr_stmt_long_data_reset. */
bool mr_stmt_long_data_add(mr_stmt_map *m, mr_stmt *st, const uint8_t *p, size_t n);
/* The long data of st can go to any connection (none was left unkept). */
static inline bool mr_stmt_long_data_resendable(const mr_stmt *st) { return !st->long_data_over; }
/* Appends the kept pieces to out as COM_STMT_SEND_LONG_DATA packets for
 * server statement id (they go before the execute). NULL, or what is
 * wrong (out of memory). */
const char *mr_stmt_long_data_build(const mr_stmt *st, mr_buf *out, uint32_t id);
/* The kept pieces went to a server: frees them; st stays not re-sendable
 * when it was. */
void mr_stmt_long_data_drop(mr_stmt_map *m, mr_stmt *st);
/* An execute or COM_STMT_RESET of st went out: the server has no long data
 * for it any more; neither does st. */
void mr_stmt_long_data_reset(mr_stmt_map *m, mr_stmt *st);

#endif
