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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"

#include "myrewrite/pool/pool.h"

#define MR_HINT(r) (1u << (r))

typedef struct mr_pool_hints {
    uint32_t pins;   /* MR_HINT(reason): reasons the text gives to pin at once */
    uint32_t maybe;  /* reasons to pin should the server report a state change */
    int replay_only; /* 1: only SET of system variables, SET NAMES / CHARACTER SET,
                        USE: a reported change is one the trackers name */
    bool tracking;   /* names a session_track_* variable */
    bool opaque;     /* runs code whose words are elsewhere (CALL, EXECUTE, a stored
                        function in SELECT is not caught): a state change it reports
                        is never taken as only the variables named with it */
} mr_pool_hints;

/* Reads the text (lexer flags as the session reads it). own: the client's
 * text, whose CONNECTION_ID() the session replaces by its own id (so it
 * gives no pin); else a feature's rewrite, which is sent as it is. */
void mr_pool_hints_read(const char *sql, size_t len, unsigned lex_flags, bool own,
                        mr_pool_hints *h);

/* The session's own values of what a statement may read from its server
 * connection: that connection serves other sessions too. */
typedef struct mr_pool_own {
    uint32_t connection_id; /* the thread id the client's handshake gave it */
    bool row_count_known;   /* ROW_COUNT(): from its last statement's answer */
    int64_t row_count;
    bool found_rows_known; /* FOUND_ROWS(): the rows of its last result set */
    uint64_t found_rows;
    bool counts_only; /* CONNECTION_ID() left as it is */
} mr_pool_own;

/* pool = statement: the reasons to pin that the text's words give and the
 * pool otherwise learns only from the reply (the server's status and
 * trackers): a transaction begun (BEGIN, START TRANSACTION, XA START,
 * SET autocommit = 0), LOCK TABLES, SET TRANSACTION, PREPARE ... FROM.
 * MR_HINT bits; 0: none. */
uint32_t mr_pool_opens(const char *sql, size_t len, unsigned lex_flags);

/* The text with each CONNECTION_ID(), and each ROW_COUNT() and FOUND_ROWS()
 * known in its first statement (a later one reads the earlier ones'), as
 * the session's own value into out: in a select list `COALESCE(value,
 * call)`, its column's type as direct, and as an item alone with
 * ` AS `call`` (its name as direct); elsewhere `(value+0)` (an
 * expression: after ORDER BY a bare number is a column's position). Calls
 * inside an executable comment's body too, its wrapper kept; not
 * `db.name()` (a stored function). False when
 * nothing was replaced, and for a text with a CREATE or ALTER of a stored
 * program, a trigger, an event or a view (evaluated where they run): out
 * then holds nothing to use. */
bool mr_pool_own_values(const char *sql, size_t len, unsigned lex_flags, const mr_pool_own *own,
                        mr_buf *out);
/* The text calls ROW_COUNT() or FOUND_ROWS() where mr_pool_own_values
 * would put a value: a prepare's are read at each execute, on whatever
 * connection runs it, so such a prepare keeps its connection. */
bool mr_pool_reads_counts(const char *sql, size_t len, unsigned lex_flags);

/* The same for CONNECTION_ID() alone. */
bool mr_pool_own_connection_id(const char *sql, size_t len, unsigned lex_flags, uint32_t id,
                               mr_buf *out);

/* The session_track_* assignments of a SET statement, in order: name and
 * value (a string literal's value, or the word or number as written) into
 * the caller's buffers. The count, or -1 when the text names a
 * session_track_ variable in a form this reader does not take (SET GLOBAL,
 * an expression, DEFAULT, a statement that is not a plain SET). */
typedef struct mr_pool_track_set {
    char name[40];
    char value[1100];
} mr_pool_track_set;
int mr_pool_track_sets(const char *sql, size_t len, unsigned lex_flags, mr_pool_track_set *out,
                       int max);

#endif
