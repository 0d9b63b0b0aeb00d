/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/hints.h - what a statement's text says about the session state it may
 * leave on its server connection, for `pool = transaction`.
 *
 * The server's session trackers are the proxy's main source (pool/pool.h),
 * but they cannot say everything: the state-change tracker reports "1" for a
 * user variable, a temporary table or a prepared SQL statement alike, and
 * for a plain SET of a system variable as well; `DO GET_LOCK(...)` reports
 * nothing; a result set's end carries no tracker data to a client without
 * CLIENT_DEPRECATE_EOF. So the words of the text name the reason to pin,
 * and whether a reported change is only one the proxy replays.
 *
 * Pure, any thread.
 */
#ifndef MYREWRITE_POOL_HINTS_H
#define MYREWRITE_POOL_HINTS_H

#include <stddef.h>
#include <stdint.h>

#include "myrewrite/pool/pool.h"

#define MR_HINT(r) (1u << (r))

typedef struct mr_pool_hints {
    uint32_t pins;   /* MR_HINT(reason): reasons the text gives to pin at once */
    uint32_t maybe;  /* reasons to pin should the server report a state change */
    int replay_only; /* 1: only SET of system variables, SET NAMES / CHARACTER SET,
                        USE: a reported change is one the trackers name */
} mr_pool_hints;

/* Reads the text (lexer flags as the session reads it). */
void mr_pool_hints_read(const char *sql, size_t len, unsigned lex_flags, mr_pool_hints *h);

#endif
