/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/session_track.h - the session state an OK packet carries when the
 * connection negotiated CLIENT_SESSION_TRACK and the server set
 * SERVER_SESSION_STATE_CHANGED: the server's own word on what a command
 * changed (system variables, the default schema, GTIDs, the transaction).
 *
 * Three layers, each usable alone: mr_ok_session_state finds the state
 * block of an OK packet; mr_sst_next walks its entries (every tracker
 * type, views into the packet); mr_sst_apply keeps what the entries say
 * in one mr_session_state, the session's tracked values in one place.
 *
 * Pure, any thread. Owns nothing but the mr_session_state the caller gives.
 */
#ifndef MYREWRITE_PROTO_SESSION_TRACK_H
#define MYREWRITE_PROTO_SESSION_TRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/proto/codec.h"

#define MR_STATUS_SESSION_STATE_CHANGED 0x4000

/* The tracker types of the protocol (enum_session_state_type). */
typedef enum mr_sst_type {
    MR_SST_SYSTEM_VARIABLES = 0,            /* name, value */
    MR_SST_SCHEMA = 1,                      /* the default schema */
    MR_SST_STATE_CHANGE = 2,                /* "1": state the trackers do not name changed */
    MR_SST_GTIDS = 3,                       /* an encoding byte, then the GTID set */
    MR_SST_TRANSACTION_CHARACTERISTICS = 4, /* SQL that recreates them ("" when none) */
    MR_SST_TRANSACTION_STATE = 5,           /* eight characters, e.g. "T_______" */
} mr_sst_type;

/* Where the session state of an OK packet (0x00, or the 0xFE OK ending a
 * result set under DEPRECATE_EOF) lies, for a connection with these
 * capabilities: *state / *len, len 0 when the packet has none. MR_OK, or
 * MR_MALFORMED when the packet is not an OK or ends inside a field (the
 * whole packet must be given). */
mr_rc mr_ok_session_state(const uint8_t *p, size_t n, uint32_t caps, const uint8_t **state,
                          size_t *len);

/* One entry. The views point into the state block. name is set for
 * SYSTEM_VARIABLES only; value is the variable's value, the schema, "1",
 * the GTID set (after its encoding byte), the characteristics or the
 * transaction state. An entry of a type this code does not know is given
 * with its raw data in value, so a caller can skip it. */
typedef struct mr_sst_entry {
    uint8_t type; /* mr_sst_type, or any other byte */
    const uint8_t *name;
    size_t name_len;
    const uint8_t *value;
    size_t value_len;
} mr_sst_entry;

typedef struct mr_sst_iter {
    const uint8_t *p;
    size_t n;
    size_t pos;
} mr_sst_iter;

void mr_sst_iter_init(mr_sst_iter *it, const uint8_t *state, size_t len);
/* The next entry into *e: MR_OK; MR_NEED_MORE at the end of the block;
 * MR_MALFORMED when an entry does not fit (the walk stops there). */
mr_rc mr_sst_next(mr_sst_iter *it, mr_sst_entry *e);

/* Longest values kept; a longer one is kept cut and marked. */
#define MR_SST_NAME_MAX 64   /* a schema name (MariaDB's limit, in characters, is 64) */
#define MR_SST_VALUE_MAX 512 /* sql_mode with every mode is about 450 bytes */
#define MR_SST_CHARSET_MAX 32

typedef struct mr_sst_value {
    bool known;     /* reported at least once */
    bool truncated; /* longer than the buffer: the text is a prefix */
    size_t len;
} mr_sst_value;

/* The tracked values of a session, as the server last reported them. */
typedef struct mr_session_state {
    char schema[MR_SST_NAME_MAX + 1];
    mr_sst_value schema_v;
    char sql_mode[MR_SST_VALUE_MAX + 1];
    mr_sst_value sql_mode_v;
    char charset_client[MR_SST_CHARSET_MAX + 1]; /* character_set_client */
    mr_sst_value charset_client_v;
    char gtids[MR_SST_VALUE_MAX + 1];
    mr_sst_value gtids_v;
    char trx_characteristics[MR_SST_VALUE_MAX + 1];
    mr_sst_value trx_characteristics_v;
    char trx_state[9];
    mr_sst_value trx_state_v;
    uint64_t state_changes; /* SESSION_TRACK_STATE_CHANGE entries seen */
    uint64_t other_vars;    /* system variables reported but not kept here */
    uint64_t unknown;       /* entries of a type this code does not know */
} mr_session_state;

/* Applies every entry of a state block to st. MR_OK, or MR_MALFORMED when
 * an entry does not fit (those before it are applied). */
mr_rc mr_sst_apply(mr_session_state *st, const uint8_t *state, size_t len);

/* Does the comma-separated sql_mode value hold the mode `name` (any case)? */
bool mr_sql_mode_has(const char *sql_mode, size_t len, const char *name);

#endif
