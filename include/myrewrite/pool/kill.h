/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/kill.h - a client's KILL of a connection id, for `pool = transaction`.
 *
 * Drivers cancel a statement with `KILL QUERY <id>` and end a connection
 * with `KILL [CONNECTION] <id>`, sent on a second connection with the id the
 * first one's handshake gave. Through the pool that id is a session's, not
 * the server connection's that runs its statement now: the session side
 * finds the session and sends the KILL with its current server thread id
 * instead (session/pool/pool_kill.c). This reads the statement and writes the
 * new text.
 *
 * Pure, any thread.
 */
#ifndef MYREWRITE_POOL_KILL_H
#define MYREWRITE_POOL_KILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"

typedef struct mr_pool_kill {
    uint32_t id;      /* the number the client wrote */
    bool connection;  /* KILL [CONNECTION]: the connection; false: KILL QUERY */
    uint32_t num_off; /* where the number stands in the text ... */
    uint32_t num_len; /* ... and its length */
} mr_pool_kill;

/* Is the text exactly `KILL [HARD | SOFT] [CONNECTION | QUERY] <number>`
 * (plain comments anywhere, `;` at the end, the number a decimal of at
 * most 2^32 - 1)?
 * Anything else, an executable comment included (its words depend on the
 * server's version), is not: KILL USER, KILL QUERY ID, an expression,
 * a second statement. */
bool mr_pool_kill_read(const char *sql, size_t len, unsigned lex_flags, mr_pool_kill *k);

/* The same text with the number replaced by `id`, into out (check
 * out->failed). */
void mr_pool_kill_rewrite(const char *sql, size_t len, const mr_pool_kill *k, uint32_t id,
                          mr_buf *out);

#endif
