/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/tracker.c - response boundary tracking (see proto/tracker.h).
 * Pure, any thread; each session owns one mr_tracker.
 */
#include "myrewrite/proto/tracker.h"

#include "myrewrite/proto/stmt_rewrite.h"

#include <string.h>

struct command_info {
    const char *name;
    mr_expect expect;
};

/* Commands a client may send, and the shape of the server's answer.
 * Unlisted commands (replication, COM_DAEMON, obsolete ones) are refused by
 * the session with an error naming the command. COM_STMT_BULK_EXECUTE
 * (MARIADB_CLIENT_STMT_BULK_OPERATIONS) is answered like an execute: one OK
 * for all its rows, or the result set of a RETURNING, or an ERR. */
static const struct command_info commands[256] = {
    [MR_COM_SLEEP] = {"COM_SLEEP", MR_EXPECT_UNSUPPORTED},
    [MR_COM_QUIT] = {"COM_QUIT", MR_EXPECT_NONE},
    [MR_COM_INIT_DB] = {"COM_INIT_DB", MR_EXPECT_ONE},
    [MR_COM_QUERY] = {"COM_QUERY", MR_EXPECT_RESULT},
    [MR_COM_FIELD_LIST] = {"COM_FIELD_LIST", MR_EXPECT_FIELD_LIST},
    [MR_COM_CREATE_DB] = {"COM_CREATE_DB", MR_EXPECT_ONE},
    [MR_COM_DROP_DB] = {"COM_DROP_DB", MR_EXPECT_ONE},
    [MR_COM_REFRESH] = {"COM_REFRESH", MR_EXPECT_ONE},
    [MR_COM_SHUTDOWN] = {"COM_SHUTDOWN", MR_EXPECT_ONE},
    [MR_COM_STATISTICS] = {"COM_STATISTICS", MR_EXPECT_ONE},
    [MR_COM_PROCESS_INFO] = {"COM_PROCESS_INFO", MR_EXPECT_RESULT},
    [MR_COM_CONNECT] = {"COM_CONNECT", MR_EXPECT_UNSUPPORTED},
    [MR_COM_PROCESS_KILL] = {"COM_PROCESS_KILL", MR_EXPECT_ONE},
    [MR_COM_DEBUG] = {"COM_DEBUG", MR_EXPECT_ONE},
    [MR_COM_PING] = {"COM_PING", MR_EXPECT_ONE},
    [MR_COM_TIME] = {"COM_TIME", MR_EXPECT_UNSUPPORTED},
    [MR_COM_DELAYED_INSERT] = {"COM_DELAYED_INSERT", MR_EXPECT_UNSUPPORTED},
    [MR_COM_CHANGE_USER] = {"COM_CHANGE_USER", MR_EXPECT_AUTH},
    [MR_COM_BINLOG_DUMP] = {"COM_BINLOG_DUMP", MR_EXPECT_UNSUPPORTED},
    [MR_COM_TABLE_DUMP] = {"COM_TABLE_DUMP", MR_EXPECT_UNSUPPORTED},
    [MR_COM_CONNECT_OUT] = {"COM_CONNECT_OUT", MR_EXPECT_UNSUPPORTED},
    [MR_COM_REGISTER_SLAVE] = {"COM_REGISTER_SLAVE", MR_EXPECT_UNSUPPORTED},
    [MR_COM_STMT_PREPARE] = {"COM_STMT_PREPARE", MR_EXPECT_PREPARE},
    [MR_COM_STMT_EXECUTE] = {"COM_STMT_EXECUTE", MR_EXPECT_EXECUTE},
    [MR_COM_STMT_SEND_LONG_DATA] = {"COM_STMT_SEND_LONG_DATA", MR_EXPECT_NONE},
    [MR_COM_STMT_CLOSE] = {"COM_STMT_CLOSE", MR_EXPECT_NONE},
    [MR_COM_STMT_RESET] = {"COM_STMT_RESET", MR_EXPECT_ONE},
    [MR_COM_SET_OPTION] = {"COM_SET_OPTION", MR_EXPECT_ONE},
    [MR_COM_STMT_FETCH] = {"COM_STMT_FETCH", MR_EXPECT_FETCH},
    [MR_COM_DAEMON] = {"COM_DAEMON", MR_EXPECT_UNSUPPORTED},
    [MR_COM_BINLOG_DUMP_GTID] = {"COM_BINLOG_DUMP_GTID", MR_EXPECT_UNSUPPORTED},
    [MR_COM_RESET_CONNECTION] = {"COM_RESET_CONNECTION", MR_EXPECT_ONE},
    [MR_COM_STMT_BULK_EXECUTE] = {"COM_STMT_BULK_EXECUTE", MR_EXPECT_EXECUTE},
};

mr_expect mr_expect_for_command(uint8_t command) { return commands[command].expect; }

const char *mr_command_name(uint8_t command)
{
    return commands[command].name ? commands[command].name : "unknown command";
}

void mr_tracker_init(mr_tracker *t, bool deprecate_eof)
{
    memset(t, 0, sizeof(*t));
    t->deprecate_eof = deprecate_eof;
}

void mr_tracker_set_mariadb(mr_tracker *t, uint32_t mariadb_caps)
{
    t->mariadb_caps = mariadb_caps;
}

void mr_tracker_set_optional_metadata(mr_tracker *t, bool on) { t->optional_metadata = on; }

void mr_tracker_begin(mr_tracker *t, mr_expect expect)
{
    t->expect = expect;
    t->ended_with_err = false;
    t->remaining = 0;
    t->sets = 0;
    switch (expect) {
    case MR_EXPECT_ONE: t->state = MR_TS_ONE; break;
    case MR_EXPECT_AUTH: t->state = MR_TS_AUTH; break;
    case MR_EXPECT_FIELD_LIST: t->state = MR_TS_FIELDS; break;
    case MR_EXPECT_FETCH: t->state = MR_TS_ROWS; break;
    case MR_EXPECT_NONE:
    case MR_EXPECT_UNSUPPORTED: t->state = MR_TS_IDLE; break;
    default: t->state = MR_TS_FIRST; break;
    }
}

void mr_tracker_infile_done(mr_tracker *t)
{
    if (t->state == MR_TS_INFILE)
        t->state = MR_TS_FIRST; /* the server answers with OK or ERR */
}

static mr_track_result done(mr_tracker *t)
{
    t->state = MR_TS_IDLE;
    return MR_TRACK_DONE;
}

static mr_track_result err_packet(mr_tracker *t)
{
    t->ended_with_err = true;
    return done(t);
}

/* An OK or EOF ends one result; MORE_RESULTS means another one follows. */
static mr_track_result end_of_result(mr_tracker *t, uint16_t status)
{
    t->status = status;
    if ((status & MR_STATUS_MORE_RESULTS) && t->expect != MR_EXPECT_FETCH) {
        t->state = MR_TS_FIRST;
        return MR_TRACK_MORE;
    }
    return done(t);
}

static bool is_eof(const mr_tracker *t, const uint8_t *p, size_t n, uint32_t len)
{
    (void)t;
    return n > 0 && p[0] == 0xfe && len < 9;
}

/* With DEPRECATE_EOF a result set ends with an OK packet whose header is
 * 0xFE; a row can only start with 0xFE if it is at least 16 MiB long. */
static bool is_terminator(const mr_tracker *t, const uint8_t *p, size_t n, uint32_t len)
{
    if (n == 0 || p[0] != 0xfe)
        return false;
    return t->deprecate_eof ? len < MR_PKT_MAX_PAYLOAD : len < 9;
}

/* A packet with a status (OK or EOF) was read: tracker.h's `ends`. */
static void ended(mr_tracker *t, bool ok)
{
    t->ends++;
    t->end_is_ok = ok;
}

static mr_track_result terminator_status(mr_tracker *t, const uint8_t *p, size_t n, uint32_t len,
                                         uint16_t *status)
{
    mr_ok ok;
    bool is_ok = t->deprecate_eof && len >= 7;
    mr_rc rc = is_ok ? mr_ok_parse(p, n, &ok) : mr_eof_parse(p, n, &ok);
    if (rc != MR_OK)
        return MR_TRACK_MALFORMED;
    *status = ok.status;
    ended(t, is_ok);
    return MR_TRACK_MORE;
}

static mr_track_result feed_first(mr_tracker *t, const uint8_t *p, size_t n, uint32_t len)
{
    if (n == 0)
        return MR_TRACK_MALFORMED;
    if (p[0] == 0xff)
        return err_packet(t);
    if (p[0] == 0x00) {
        if (mr_ok_parse(p, n, &t->last_ok) != MR_OK)
            return MR_TRACK_MALFORMED;
        t->oks++;
        t->rows_last = false;
        ended(t, true);
        return end_of_result(t, t->last_ok.status);
    }
    /* LOAD DATA LOCAL asks for the file whatever command runs it: a query,
     * or an execute of a prepared one (mariadbd's net_request_file does not
     * look at the command). 0xFB is NULL as a length, never a column count. */
    if (p[0] == 0xfb && (t->expect == MR_EXPECT_RESULT || t->expect == MR_EXPECT_EXECUTE)) {
        t->state = MR_TS_INFILE;
        return MR_TRACK_CLIENT_NEXT;
    }
    mr_reader r = {p, n, 0};
    uint64_t count;
    uint8_t follows = 1;
    if (mr_read_lenenc(&r, &count) != MR_OK || count == 0)
        return MR_TRACK_MALFORMED;
    bool flagged = (t->mariadb_caps & MR_MARIADB_CAP_CACHE_METADATA) || t->optional_metadata;
    if (flagged && (mr_read_u8(&r, &follows) != MR_OK || follows > 1))
        return MR_TRACK_MALFORMED;
    if (r.pos != len)
        return MR_TRACK_MALFORMED;
    t->remaining = count;
    t->sets++;
    t->rows = 0;
    t->rows_last = true;
    /* MARIADB_CLIENT_CACHE_METADATA: "metadata follows" = 0 when the client
     * has the columns already (an execute of a statement whose prepare sent
     * them); CLIENT_OPTIONAL_RESULTSET_METADATA: 0 under resultset_metadata
     * = NONE. No definitions, but the EOF that ends them still comes. */
    if (!follows)
        t->state = t->deprecate_eof ? MR_TS_ROWS : MR_TS_COLUMNS_EOF;
    else
        t->state = MR_TS_COLUMNS;
    return MR_TRACK_MORE;
}

static mr_track_result feed_columns_eof(mr_tracker *t, const uint8_t *p, size_t n, uint32_t len)
{
    mr_ok eof;
    if (n > 0 && p[0] == 0xff)
        return err_packet(t);
    if (!is_eof(t, p, n, len) || mr_eof_parse(p, n, &eof) != MR_OK)
        return MR_TRACK_MALFORMED;
    t->status = eof.status;
    ended(t, false);
    /* An opened cursor sends no rows now; COM_STMT_FETCH asks for them. A
     * cursor is opened only for a lone SELECT, never with more results to
     * come: a result set from inside a compound statement carries
     * CURSOR_EXISTS for the block's own open cursor and MORE_RESULTS, and
     * its rows follow. */
    if (t->expect == MR_EXPECT_EXECUTE && (eof.status & MR_STATUS_CURSOR_EXISTS) &&
        !(eof.status & MR_STATUS_MORE_RESULTS))
        return done(t);
    t->state = MR_TS_ROWS;
    return MR_TRACK_MORE;
}

static mr_track_result feed_rows(mr_tracker *t, const uint8_t *p, size_t n, uint32_t len)
{
    if (n > 0 && p[0] == 0xff)
        return err_packet(t);
    if (!is_terminator(t, p, n, len)) {
        t->rows++;
        return MR_TRACK_MORE; /* a row */
    }
    uint16_t status = 0;
    if (terminator_status(t, p, n, len, &status) != MR_TRACK_MORE)
        return MR_TRACK_MALFORMED;
    return end_of_result(t, status);
}

static mr_track_result prepare_next_block(mr_tracker *t)
{
    if (t->prep_columns > 0) {
        t->remaining = t->prep_columns;
        t->state = t->prep_no_metadata ? MR_TS_PREP_COLUMNS_EOF : MR_TS_PREP_COLUMNS;
        return MR_TRACK_MORE;
    }
    return done(t);
}

/* A prepare-OK under CLIENT_OPTIONAL_RESULTSET_METADATA whose
 * metadata_follows (after filler and warning count, at byte 12) is 0: no
 * definitions, just the EOF after each block that has some (without
 * DEPRECATE_EOF). */
static mr_track_result prepare_without_metadata(mr_tracker *t, uint16_t params)
{
    if (t->deprecate_eof)
        return done(t);
    if (params > 0) {
        t->state = MR_TS_PREP_PARAMS_EOF; /* then prepare_next_block */
        return MR_TRACK_MORE;
    }
    return prepare_next_block(t);
}

static mr_track_result feed_prepare_ok(mr_tracker *t, const uint8_t *p, size_t n, uint32_t len)
{
    mr_prepare_ok ok;
    if (n > 0 && p[0] == 0xff)
        return err_packet(t);
    if (mr_prepare_ok_parse(p, n, &ok) != MR_OK)
        return MR_TRACK_MALFORMED;
    uint16_t params = ok.params;
    t->stmt_id = ok.stmt_id;
    t->prep_columns = ok.columns;
    t->prep_no_metadata = false;
    if (t->optional_metadata && len > 12) {
        if (n <= 12 || p[12] > 1)
            return MR_TRACK_MALFORMED;
        if (p[12] == 0) {
            t->prep_no_metadata = true;
            return prepare_without_metadata(t, params);
        }
    }
    if (params > 0) {
        t->remaining = params;
        t->state = MR_TS_PREP_PARAMS;
        return MR_TRACK_MORE;
    }
    return prepare_next_block(t);
}

/* One definition packet of a block; the block may end with an EOF. */
static mr_track_result feed_definition(mr_tracker *t, mr_track_state eof_state,
                                       mr_track_result (*after)(mr_tracker *))
{
    if (--t->remaining > 0)
        return MR_TRACK_MORE;
    if (!t->deprecate_eof) {
        t->state = eof_state;
        return MR_TRACK_MORE;
    }
    return after(t);
}

static mr_track_result columns_done(mr_tracker *t)
{
    t->state = MR_TS_ROWS;
    return MR_TRACK_MORE;
}

static mr_track_result feed_block_eof(mr_tracker *t, const uint8_t *p, size_t n, uint32_t len,
                                      mr_track_result (*after)(mr_tracker *))
{
    mr_ok eof;
    if (!is_eof(t, p, n, len) || mr_eof_parse(p, n, &eof) != MR_OK)
        return MR_TRACK_MALFORMED;
    return after(t);
}

static mr_track_result feed_fields(mr_tracker *t, const uint8_t *p, size_t n, uint32_t len)
{
    if (n > 0 && p[0] == 0xff)
        return err_packet(t);
    if (n > 0 && p[0] == 0xfe && len < MR_PKT_MAX_PAYLOAD)
        return done(t);
    return MR_TRACK_MORE;
}

/* Any single packet ends the response; OK, ERR and EOF still update state. */
static mr_track_result feed_one(mr_tracker *t, const uint8_t *p, size_t n, uint32_t len)
{
    mr_ok ok;
    if (n > 0 && p[0] == 0xff)
        return err_packet(t);
    if (n > 0 && p[0] == 0x00 && mr_ok_parse(p, n, &ok) == MR_OK) {
        t->last_ok = ok;
        t->oks++;
        t->status = ok.status;
        ended(t, true);
    } else if (is_eof(t, p, n, len) && mr_eof_parse(p, n, &ok) == MR_OK) {
        t->status = ok.status;
        ended(t, false);
    }
    return done(t);
}

static mr_track_result feed_auth(mr_tracker *t, const uint8_t *p, size_t n)
{
    if (n > 0 && p[0] == 0xff)
        return err_packet(t);
    if (n > 0 && p[0] == 0x00) {
        if (mr_ok_parse(p, n, &t->last_ok) == MR_OK) {
            t->status = t->last_ok.status;
            ended(t, true);
        }
        return done(t);
    }
    return MR_TRACK_MORE; /* auth switch or plugin data: the client answers */
}

/* A progress report may come anywhere in a command's response (before its
 * first packet, between result sets, among rows): it changes nothing. No
 * other packet of a response starts 0xFF 0xFF 0xFF (an ERR has a code
 * below 0xFFFF; rows and definitions never start with 0xFF). */
static bool progress_report(const mr_tracker *t, const uint8_t *p, size_t n)
{
    return (t->mariadb_caps & MR_MARIADB_CAP_PROGRESS) && t->state != MR_TS_IDLE &&
           t->state != MR_TS_AUTH && mr_is_progress(p, n);
}

mr_track_result mr_tracker_feed(mr_tracker *t, const uint8_t *p, size_t n, uint32_t len)
{
    if (progress_report(t, p, n))
        return MR_TRACK_MORE;
    switch (t->state) {
    case MR_TS_FIRST:
        return t->expect == MR_EXPECT_PREPARE ? feed_prepare_ok(t, p, n, len)
                                              : feed_first(t, p, n, len);
    case MR_TS_COLUMNS: return feed_definition(t, MR_TS_COLUMNS_EOF, columns_done);
    case MR_TS_COLUMNS_EOF: return feed_columns_eof(t, p, n, len);
    case MR_TS_ROWS: return feed_rows(t, p, n, len);
    case MR_TS_PREP_PARAMS: return feed_definition(t, MR_TS_PREP_PARAMS_EOF, prepare_next_block);
    case MR_TS_PREP_PARAMS_EOF: return feed_block_eof(t, p, n, len, prepare_next_block);
    case MR_TS_PREP_COLUMNS: return feed_definition(t, MR_TS_PREP_COLUMNS_EOF, done);
    case MR_TS_PREP_COLUMNS_EOF: return feed_block_eof(t, p, n, len, done);
    case MR_TS_FIELDS: return feed_fields(t, p, n, len);
    case MR_TS_ONE: return feed_one(t, p, n, len);
    case MR_TS_AUTH: return feed_auth(t, p, n);
    default: return MR_TRACK_MALFORMED; /* nothing was asked: unsolicited packet */
    }
}
