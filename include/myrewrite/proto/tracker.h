/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/tracker.h - knows where each backend response ends.
 *
 * Pure, any thread. The session feeds the tracker the start of every logical
 * server packet (continuation packets of a payload >= 16 MiB are not fed)
 * and learns whether the response goes on, is complete, or waits for the
 * client (LOCAL INFILE data, an authentication answer).
 */
#ifndef MYREWRITE_TRACKER_H
#define MYREWRITE_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/proto/codec.h"

/* Bytes of payload the tracker needs to classify a packet (or the whole
 * payload when it is shorter): enough for any OK, EOF or prepare-OK head. */
#define MR_TRACK_PREFIX 32

/* What a command's response looks like. */
typedef enum mr_expect {
    MR_EXPECT_UNSUPPORTED = 0, /* the proxy does not relay this command */
    MR_EXPECT_NONE,            /* no response (COM_QUIT, STMT_CLOSE, SEND_LONG_DATA) */
    MR_EXPECT_ONE,             /* exactly one packet (OK, ERR, EOF or a string) */
    MR_EXPECT_RESULT,          /* OK | ERR | LOCAL INFILE | text result sets */
    MR_EXPECT_EXECUTE,         /* OK | ERR | LOCAL INFILE | binary result sets, maybe a cursor */
    MR_EXPECT_FETCH,           /* binary rows until EOF/OK or ERR */
    MR_EXPECT_FIELD_LIST,      /* column definitions until EOF or ERR */
    MR_EXPECT_PREPARE,         /* ERR | prepare-OK + parameter and column definitions */
    MR_EXPECT_AUTH,            /* authentication exchange until OK or ERR */
} mr_expect;

typedef enum mr_track_state {
    MR_TS_IDLE = 0,    /* no response pending */
    MR_TS_FIRST,       /* first packet of a (next) result */
    MR_TS_COLUMNS,     /* column definitions, `remaining` to go */
    MR_TS_COLUMNS_EOF, /* the EOF after column definitions */
    MR_TS_ROWS,        /* rows until the terminating EOF/OK or ERR */
    MR_TS_PREP_PARAMS, /* prepare: parameter definitions */
    MR_TS_PREP_PARAMS_EOF,
    MR_TS_PREP_COLUMNS, /* prepare: column definitions */
    MR_TS_PREP_COLUMNS_EOF,
    MR_TS_FIELDS, /* COM_FIELD_LIST definitions */
    MR_TS_ONE,    /* any single packet */
    MR_TS_AUTH,   /* auth exchange */
    MR_TS_INFILE, /* the client is sending LOCAL INFILE data */
    MR_TS_MAX
} mr_track_state;

typedef enum mr_track_result {
    MR_TRACK_MORE,        /* more server packets follow */
    MR_TRACK_DONE,        /* this packet ends the response */
    MR_TRACK_CLIENT_NEXT, /* the client sends next (LOCAL INFILE contents) */
    MR_TRACK_MALFORMED,   /* the packet does not fit the response */
} mr_track_result;

typedef struct mr_tracker {
    mr_track_state state;
    mr_expect expect;
    bool deprecate_eof;    /* negotiated CLIENT_DEPRECATE_EOF */
    uint32_t mariadb_caps; /* negotiated MariaDB extended capabilities (MR_MARIADB_CAP_*) */
    uint64_t remaining;    /* definitions left in the current block */
    uint16_t prep_columns;
    uint16_t status; /* server status from the last OK/EOF seen */
    bool ended_with_err;
    bool optional_metadata; /* negotiated CLIENT_OPTIONAL_RESULTSET_METADATA (MySQL 8) */
    bool prep_no_metadata;  /* this prepare-OK said metadata_follows = 0 */
    mr_ok last_ok;          /* the last OK packet (affected rows etc.) */
    uint32_t oks;           /* OK packets (0x00) seen: a change says the last one was one */
    uint32_t ends;          /* packets with a status seen (any OK, an EOF): a change says the
                               last one was one, ... */
    bool end_is_ok;         /* ... an OK (its session state may follow) rather than an EOF */
    uint32_t stmt_id;       /* from a prepare-OK */
    /* what ROW_COUNT() and FOUND_ROWS() read after the response (pool =
     * transaction carries them): */
    uint32_t sets;  /* result sets begun in this response */
    uint64_t rows;  /* rows of the last result set (so far) */
    bool rows_last; /* the last result so far is a result set (not an OK) */
} mr_tracker;

mr_expect mr_expect_for_command(uint8_t command);
const char *mr_command_name(uint8_t command);

void mr_tracker_init(mr_tracker *t, bool deprecate_eof);
/* The MariaDB extensions the login negotiated (after mr_tracker_init):
 * MR_MARIADB_CAP_PROGRESS makes progress reports (mr_is_progress) part of
 * any response rather than an ERR that ends it; MR_MARIADB_CAP_CACHE_METADATA
 * adds a "metadata follows" byte to each column count, and when it is 0 the
 * column definitions are left out. */
void mr_tracker_set_mariadb(mr_tracker *t, uint32_t mariadb_caps);
/* CLIENT_OPTIONAL_RESULTSET_METADATA was negotiated (after mr_tracker_init):
 * each column count carries a metadata_follows byte, and so does a
 * prepare-OK (after its warning count); when it is 0 (the session's
 * resultset_metadata = NONE) no column or parameter definitions follow,
 * only the EOFs that would end them (without DEPRECATE_EOF). */
void mr_tracker_set_optional_metadata(mr_tracker *t, bool on);
/* Starts tracking the response to a command with the given expectation. */
void mr_tracker_begin(mr_tracker *t, mr_expect expect);
/* Feeds the first min(payload_len, MR_TRACK_PREFIX) bytes of a server packet. */
mr_track_result mr_tracker_feed(mr_tracker *t, const uint8_t *prefix, size_t prefix_len,
                                uint32_t payload_len);
/* The client finished its LOCAL INFILE data (sent the empty packet). */
void mr_tracker_infile_done(mr_tracker *t);

#endif
