/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/ok_view.h - a client's view of an OK packet that a server sent on a
 * connection with CLIENT_SESSION_TRACK and every session tracker on.
 *
 * A pooled server connection tracks everything (system variables '*', the
 * schema, state changes, transaction characteristics) so the proxy knows
 * each session's state exactly. A client must still get the OK packets it
 * would have got talking to the server directly with its own
 * session_track_* settings and capabilities: mr_track_want holds those
 * settings, mr_ok_for_client rewrites an OK packet to that view.
 *
 * Pure, any thread. Owns nothing; writes only into the caller's mr_buf.
 */
#ifndef MYREWRITE_PROTO_OK_VIEW_H
#define MYREWRITE_PROTO_OK_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/proto/codec.h"

/* session_track_transaction_info's levels. */
enum mr_trx_track {
    MR_TRX_TRACK_OFF = 0,
    MR_TRX_TRACK_STATE = 1,
    MR_TRX_TRACK_CHARACTERISTICS = 2,
};

/* Longest session_track_system_variables list kept, as normalized (names
 * in lower case, blanks around them dropped, one comma between). A longer
 * list is refused by mr_track_want_set, which then leaves the settings as
 * they were: the caller must not let such a SET through as if it applied
 * (an ERR saying the limit, or a connection that is not pooled). */
#define MR_TRACK_VARS_MAX 1024

/* What one client's own session_track_* settings are. */
typedef struct mr_track_want {
    bool all_vars;                /* the list ends with '*': every variable */
    uint16_t vars_len;            /* bytes of vars in use */
    char vars[MR_TRACK_VARS_MAX]; /* "name,name": the named variables, lower case */
    bool schema;                  /* session_track_schema */
    bool state_change;            /* session_track_state_change */
    uint8_t trx_info;             /* session_track_transaction_info: enum mr_trx_track */
} mr_track_want;

/* MariaDB 10.11's defaults: system variables "autocommit,
 * character_set_client,character_set_connection,character_set_results,
 * time_zone", schema ON, state change OFF, transaction info OFF. A server
 * started with other global values gives its sessions those instead: read
 * them (SELECT @@global.session_track_...) and apply them with
 * mr_track_want_set. */
void mr_track_want_defaults(mr_track_want *w);

/* Applies the value of one session_track_* variable (name in any case), as
 * a tracker entry reports it or a SET assigns it (without quotes): the
 * list of system variables (comma-separated names, any case, blanks
 * around them ignored, '*' as the last item for all); ON/OFF/1/0/TRUE/
 * FALSE; OFF/STATE/CHARACTERISTICS/0/1/2. false, and *w unchanged, for
 * another variable, a value the server would refuse ('*' not last, an
 * empty name) or a list longer than MR_TRACK_VARS_MAX. */
bool mr_track_want_set(mr_track_want *w, const char *name, size_t name_len, const char *value,
                       size_t value_len);

/* Applies every session_track_* entry of a state block (as
 * mr_ok_session_state finds it) to *w, in order. false when one of them
 * has a value mr_track_want_set refuses (the others still apply) or the
 * block does not parse. */
bool mr_track_want_apply(mr_track_want *w, const uint8_t *state, size_t len);

/* Does the client's list name this system variable (or is it '*')? */
bool mr_track_want_var(const mr_track_want *w, const uint8_t *name, size_t len);

/*
 * The OK packet the client would have got from the server directly.
 * p/n: a whole OK payload (0x00, or the 0xFE OK ending a result set under
 * CLIENT_DEPRECATE_EOF) sent on a connection with CLIENT_SESSION_TRACK and
 * every tracker on: only a packet proto/tracker.h takes for the OK that
 * ends a response or a result set (a COM_STMT_PREPARE answer and a binary
 * row start with 0x00 too). client_caps: the client's capabilities; w: its
 * settings AFTER the statement (a statement that sets a session_track_*
 * variable is answered as the new setting says, as the server does).
 *
 * When the client's view is the packet itself: *rewritten = false and out
 * is not touched. Otherwise *rewritten = true and the payload is appended
 * to out: the entries its settings would not have produced dropped, the
 * state block and SERVER_SESSION_STATE_CHANGED dropped when nothing is
 * left (kept, with an empty block, when its transaction tracker at STATE
 * fired, as the server does), the info text written as the server writes
 * it then (a length-encoded string, left out when empty and no state
 * follows). A client without CLIENT_SESSION_TRACK gets no state block and
 * no SERVER_SESSION_STATE_CHANGED. Entries keep the packet's order.
 * MR_MALFORMED (out not touched) for a payload that does not parse as such
 * an OK: the caller relays it as it is. Check out->failed after.
 */
mr_rc mr_ok_for_client(const uint8_t *p, size_t n, uint32_t client_caps, const mr_track_want *w,
                       mr_buf *out, bool *rewritten);

/*
 * The same for an EOF packet (0xFE, under 9 bytes: a client without
 * CLIENT_DEPRECATE_EOF), in place. Its status carries
 * SERVER_SESSION_STATE_CHANGED when a tracker fired before it in the
 * statement, but no state, so which one is not known: mariadbd 10.11 sets it
 * there for the transaction tracker (a result set inside a transaction is a
 * state change), so it is kept for a client with CLIENT_SESSION_TRACK and
 * session_track_transaction_info on and cleared for any other. true when it
 * cleared the flag.
 */
bool mr_eof_for_client(uint8_t *p, size_t n, uint32_t client_caps, const mr_track_want *w);

/* May the proxy replay this reported system variable's value onto another
 * server connection to carry the session over? false for the variables
 * whose value is the proxy's own on a pooled connection or is a one-shot
 * consumed by the next statement (see ok_view.c for each). */
bool mr_sst_var_replayable(const uint8_t *name, size_t len);

#endif
