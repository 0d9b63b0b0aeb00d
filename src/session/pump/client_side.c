/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pump/client_side.c - the client side of a session: every client packet:
 * commands start here, refused ones are answered here, and LOCAL INFILE and
 * authentication data (checked in session/conn/auth.c) are relayed while the
 * backend waits for them. A session starts here (mr_session_start: the
 * client's socket taken). Runs on the session's worker thread.
 */
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "myrewrite/base/log.h"
#include "myrewrite/proto/query_attrs.h"
#include "myrewrite/sql/charset_guard.h"
#include "session/core/session_impl.h"

static void refuse_command(mr_session *s, uint8_t cmd)
{
    char msg[200];
    snprintf(msg, sizeof(msg),
             "%s is not supported through myrewrite (replication and obsolete commands must go "
             "to mysqld directly)",
             mr_command_name(cmd));
    mr_stat_add(&s->w->stats.commands_refused, 1);
    mr_info(s->id, "refused %s (0x%02x)", mr_command_name(cmd), cmd);
    ss_send_err(s, 1, MR_ER_UNKNOWN_COM, "08S01", msg);
    s->from_client.discard = true;
}

/* A statement too large for relay_buffer goes out without meeting the
 * rules (a block rule included): counted, and said once per session so a
 * DBA can see it. */
static void note_unexamined(mr_session *s, uint32_t len)
{
    mr_stat_add(&s->w->stats.statements_unexamined, 1);
    if (s->unexamined_logged)
        return;
    s->unexamined_logged = true;
    mr_warn(s->id,
            "a statement of %u bytes is larger than relay_buffer (%" PRIu64 "): relayed "
            "without meeting the rules (said once per session; counted in "
            "myrewrite_statements_unexamined_total)",
            (unsigned)len, cfg(s)->relay_buffer);
}

/* A whole COM_QUERY or COM_STMT_PREPARE meets the front end; a COM_QUERY
 * with CLIENT_QUERY_ATTRIBUTES has its attribute block read first, so the
 * rules see the text, and kept while the front end runs (s->qattrs). One
 * that cannot be read gets an ERR and is not sent. */
static stmt_verdict statement_start(mr_session *s, uint8_t cmd, const uint8_t *p, uint32_t len)
{
    mr_query_attrs a = {0};
    const char *why;
    if (cmd == MR_COM_QUERY && (s->caps & MR_CAP_QUERY_ATTRIBUTES)) {
        if (mr_query_attrs_read(p + 1, len - 1, &a, &why) != MR_OK) {
            char msg[300];
            snprintf(msg, sizeof msg,
                     "malformed COM_QUERY: %s (with CLIENT_QUERY_ATTRIBUTES the text follows a "
                     "parameter count, a parameter-set count of 1 and, when there are "
                     "attributes, their null bitmap, types, names and values); nothing was run",
                     why);
            mr_info(s->id, "%s", msg);
            ss_send_err(s, 1, MR_ER_MALFORMED_PACKET, "HY000", msg);
            s->from_client.discard = true;
            return STMT_ANSWERED;
        }
        s->qattrs = p + 1;
        s->qattrs_len = a.len;
        s->qattrs_count = a.count;
    }
    stmt_verdict v = ss_statement_start(s, cmd, (const char *)p + 1 + a.len, len - 1 - a.len);
    s->qattrs = NULL;
    s->qattrs_len = 0;
    s->qattrs_count = 0;
    return v;
}

/* The first packet of a command: decide how its response will look. `p`
 * holds `n` bytes of the `len`-byte payload: the whole of it for the
 * commands the front end reads, else at least MR_TRACK_PREFIX. */
static bool command_start(mr_session *s, const uint8_t *p, size_t n, uint32_t len, uint8_t seq)
{
    if (len == 0 || seq != 0) {
        mr_warn(s->id, "malformed command packet: %s",
                len == 0 ? "empty payload" : "sequence id is not 0");
        ss_close_after_flush(s, MR_CLOSE_MALFORMED, "malformed command packet");
        return false;
    }
    uint8_t cmd = p[0];
    mr_expect expect = mr_expect_for_command(cmd);
    mr_conn_z_command(s->backend); /* whatever goes out for it, the frames start at 0 */
    s->command = cmd;
    if (s->srv)
        ss_pool_command(s, cmd);
    mr_client_set_command(&s->slot, cmd);
    s->command_start_ns = mr_mono_ns();
    if (expect == MR_EXPECT_UNSUPPORTED) {
        refuse_command(s, cmd);
        return true;
    }
    if (cmd == MR_COM_QUIT) {
        ss_close(s, MR_CLOSE_CLIENT_QUIT, "COM_QUIT");
        return false;
    }
    if (ss_prepared_command(s, cmd, p, n, len)) /* a prepared page beyond max_offset */
        return true;
    stmt_verdict hv = ss_hooks_command(s, cmd, p, n, len); /* say, a prepared memory DELAYED */
    if (hv != STMT_RELAY)
        return hv == STMT_ANSWERED || hv == STMT_WAITING;
    if (cmd == MR_COM_PROCESS_KILL && n == len && ss_pool_process_kill(s, p, len, &hv) &&
        hv != STMT_RELAY) /* relayed: its text went out instead, one OK or ERR comes */
        return hv == STMT_ANSWERED;
    if (s->puser && !s->from_client.discard && ss_pstmt_command(s, cmd, p, n, len))
        return true; /* pool = transaction: answered by the proxy */
    if (s->puser && cmd == MR_COM_STMT_PREPARE && ss_pstmt_prepare(s, p, n, len))
        return true;
    if (n < len && (cmd == MR_COM_QUERY || cmd == MR_COM_STMT_PREPARE))
        note_unexamined(s, len);
    if (n == len && (cmd == MR_COM_QUERY || cmd == MR_COM_STMT_PREPARE)) {
        stmt_verdict v = statement_start(s, cmd, p, len);
        if (v != STMT_RELAY)
            return v == STMT_ANSWERED || v == STMT_WAITING;
    } else if (n == len && cmd == MR_COM_INIT_DB) {
        ss_copy_name(s->pending_schema, sizeof(s->pending_schema), (const char *)p + 1, len - 1,
                     &s->schema_pending);
    } else if (n == len && cmd == MR_COM_CHANGE_USER) {
        const char *u, *db;
        size_t ul, dl;
        int charset;
        if (mr_change_user_parse(p, n, s->caps, &u, &ul, &db, &dl, &charset) == MR_OK) {
            ss_copy_name(s->pending_user, sizeof(s->pending_user), u, ul, &s->user_pending);
            ss_copy_name(s->pending_schema, sizeof(s->pending_schema), db, dl, &s->schema_pending);
            s->pending_charset =
                charset >= 0 ? mr_charset_unsafe_collation((unsigned)charset) : s->charset_unsafe;
            s->charset_pending = true;
        }
    }
    mr_tracker_begin(&s->tracker, expect);
    if (s->pstmt)
        ss_pstmt_sent(s, cmd);
    if (expect == MR_EXPECT_AUTH)
        ss_auth_client_sent(s); /* COM_CHANGE_USER: the server speaks next */
    if (expect != MR_EXPECT_NONE)
        ss_set_state(s, SS_RESPONSE);
    return true;
}

/* A packet the client sends while the backend waits for it. */
static bool client_data_packet(mr_session *s, const uint8_t *p, size_t n, uint32_t len, uint8_t seq,
                               bool continued)
{
    bool response = ss_auth_response_due(s);
    if (ss_auth_exchange(s))
        ss_auth_client_sent(s);
    if (response)
        return ss_auth_check_response(s, p, n, seq);
    if (s->state == SS_INFILE && len == 0 && !continued) {
        mr_tracker_infile_done(&s->tracker); /* the empty packet ends the file */
        ss_set_state(s, SS_RESPONSE);
    }
    return true;
}

/* May the client packet starting now (sequence id seq) go on? Commands
 * between responses, LOCAL INFILE data while the server reads it, and in an
 * authentication exchange only the packet it waits for: anything else stays
 * in the client's input until the exchange ends (session/conn/auth.c). False
 * also when the session closed. */
static bool client_may_send(mr_session *s, uint8_t seq)
{
    switch (s->state) {
    case SS_IDLE:
    case SS_INFILE: return true;
    case SS_AUTH:
    case SS_RESPONSE: return ss_auth_exchange(s) && ss_auth_client_packet(s, seq) == AUTH_RELAY;
    default: return false; /* SS_WAIT_BG: the next command waits for the job's answer */
    }
}

/* Classifies the head of a client packet (`n` bytes of its `len`-byte
 * payload at `p`); false means stop pumping. */
static bool client_packet_start(mr_session *s, const uint8_t *p, size_t n, uint32_t len,
                                uint8_t seq)
{
    framing *f = &s->from_client;
    bool continued = f->continuation;
    f->remaining = MR_PKT_HEADER + (uint64_t)len;
    f->continuation = (len == MR_PKT_MAX_PAYLOAD);
    s->seq = seq;
    if (!continued) {
        f->discard = false;
        if (s->state == SS_IDLE)
            s->command_bytes = 0; /* a new command */
    }
    s->command_bytes += len;
    if (s->command_bytes > cfg(s)->max_packet_size) {
        char msg[160];
        snprintf(msg, sizeof(msg), "packet of more than %llu bytes exceeds max_packet_size",
                 (unsigned long long)cfg(s)->max_packet_size);
        ss_send_err(s, (uint8_t)(seq + 1), MR_ER_NET_PACKET_TOO_LARGE, "08S01", msg);
        ss_close_after_flush(s, MR_CLOSE_TOO_LARGE, msg);
        return false;
    }
    if (continued)
        return true;
    if (s->state == SS_IDLE)
        return command_start(s, p, n, len, seq);
    return client_data_packet(s, p, n, len, seq, continued);
}

/* The front end reads whole statements (up to relay_buffer; larger ones
 * are relayed unexamined), and the handshake and user/schema changes are
 * read whole for the user and schema the rules filter on. */
static bool wants_whole_packet(mr_session *s, const uint8_t *head, uint32_t len)
{
    if (s->from_client.continuation || len == 0 || len >= MR_PKT_MAX_PAYLOAD ||
        MR_PKT_HEADER + (uint64_t)len > cfg(s)->relay_buffer)
        return false;
    if (s->state == SS_AUTH)
        return ss_auth_response_due(s);
    if (s->state != SS_IDLE)
        return false;
    if (s->puser && ss_pstmt_wants_whole(s, head[0])) /* pool = transaction: ids are the proxy's */
        return true;
    switch (head[0]) {
    case MR_COM_QUERY:
    case MR_COM_STMT_PREPARE:
    case MR_COM_INIT_DB:
    case MR_COM_CHANGE_USER: return true;
    case MR_COM_STMT_EXECUTE: /* maybe a page under max_offset, or a feature's (memory DELAYED) */
        return ss_prepared_guarded(s, head, len) || ss_hooks_wants_whole(s, head[0], head, len);
    default: return false;
    }
}

/* The head of the client's input, `got` bytes: in place while the input is
 * fresh (net/conn.h: a small read not yet copied into an evbuffer, which
 * *fresh then points at), else copied into `head`. */
static const uint8_t *client_head(mr_session *s, const uint8_t *fresh, uint8_t *head, size_t got)
{
    if (fresh)
        return fresh;
    evbuffer_copyout(mr_conn_input(s->client), head, got);
    return head;
}

void ss_pump_client(mr_session *s)
{
    framing *f = &s->from_client;
    uint8_t head[MR_PKT_HEADER + MR_TRACK_PREFIX];

    while (ALIVE(s)) {
        size_t avail;
        const uint8_t *fresh = mr_conn_fresh(s->client, &avail);
        if (!fresh)
            avail = evbuffer_get_length(mr_conn_input(s->client));
        if (f->remaining > 0) {
            if (avail == 0)
                break;
            size_t take = avail < f->remaining ? avail : (size_t)f->remaining;
            if (f->discard)
                mr_conn_drain(s->client, take);
            else
                mr_conn_relay(s->client, s->backend, take);
            f->remaining -= take;
            if (s->backend && mr_conn_pending(s->backend) >= cfg(s)->relay_buffer)
                break; /* ss_client_flow pauses reading (see there) */
            continue;
        }
        if (avail < MR_PKT_HEADER)
            break;
        if (!s->backend && !f->continuation) { /* pool = transaction: borrow one */
            if (!ss_pool_attach(s))
                break; /* waiting for one, or closed */
            if (!s->backend)
                continue;                             /* refused: its packets are dropped */
            fresh = mr_conn_fresh(s->client, &avail); /* attaching may have read it */
            if (!fresh)
                avail = evbuffer_get_length(mr_conn_input(s->client));
        }
        size_t got = avail < sizeof(head) ? avail : sizeof(head);
        const uint8_t *hp = client_head(s, fresh, head, got);
        mr_pkt_header h;
        mr_pkt_header_read(hp, got, &h);
        if (!f->continuation && !client_may_send(s, h.seq))
            break;
        size_t n = h.len < MR_TRACK_PREFIX ? h.len : MR_TRACK_PREFIX;
        if (got < MR_PKT_HEADER + n)
            break;
        const uint8_t *payload = hp + MR_PKT_HEADER;
        if (wants_whole_packet(s, payload, h.len)) {
            if (avail < MR_PKT_HEADER + (size_t)h.len)
                break; /* fits in relay_buffer, so reading goes on until it is here */
            if (!fresh) {
                /* (fresh bytes are one piece already) */
                struct evbuffer *in = mr_conn_input(s->client);
                payload = evbuffer_pullup(in, MR_PKT_HEADER + (ev_ssize_t)h.len) + MR_PKT_HEADER;
            }
            n = h.len;
        }
        mr_stat_add(&s->w->stats.bytes_from_clients, MR_PKT_HEADER + (uint64_t)h.len);
        mr_stat_add(&s->slot.bytes_in, MR_PKT_HEADER + (uint64_t)h.len);
        if (!client_packet_start(s, payload, n, h.len, h.seq))
            return;
        if (s->login_shift && s->state == SS_AUTH && !f->discard)
            ss_auth_shift_to_server(s, mr_conn_input(s->client));
    }
    if (s->srv && ALIVE(s) && s->state == SS_IDLE && f->remaining == 0 && !f->continuation)
        ss_pool_unit_end(s); /* a command the proxy answered, or one with no answer */
    ss_client_flow(s);
}

static void client_read_cb(mr_conn *c, void *arg)
{
    (void)c;
    ss_pump_client(arg);
}

static void client_write_cb(mr_conn *c, void *arg)
{
    mr_session *s = arg;
    (void)c;
    if (s->state == SS_CLOSING) {
        if (mr_conn_pending(s->client) == 0)
            ss_free(s);
        return;
    }
    if (s->from_backend.blocked)
        ss_pump_backend(s); /* relays what is buffered, then resumes reading */
}

static void client_event_cb(mr_conn *c, int what, void *arg)
{
    mr_session *s = arg;
    if (!ALIVE(s)) {
        ss_free(s); /* the client went away or never read its ERR */
        return;
    }
    if (what & MR_CONN_TLS_READY) {
        mr_debug(s->id, "client TLS: %s", mr_conn_tls_cipher(c));
        return; /* the HandshakeResponse follows over TLS */
    }
    if ((what & MR_CONN_TIMEOUT) && mr_conn_tls_handshaking(c)) {
        ss_close(s, MR_CLOSE_TIMEOUT, "TLS handshake did not finish within handshake_timeout");
        return;
    }
    if ((what & MR_CONN_ERROR) && mr_conn_tls_handshaking(c)) {
        mr_info(s->id, "client %s", mr_conn_error_text(c));
        ss_close(s, MR_CLOSE_TLS_FAILED, mr_conn_error_text(c));
        return;
    }
    if (what & MR_CONN_TIMEOUT) {
        ss_send_err(s, (uint8_t)(s->seq + 1), MR_ER_HANDSHAKE, "08S01",
                    "authentication did not finish within handshake_timeout");
        ss_close_after_flush(s, MR_CLOSE_TIMEOUT, "handshake timeout");
        return;
    }
    ss_close(s, MR_CLOSE_CLIENT_GONE,
             (what & MR_CONN_ERROR) ? mr_conn_error_text(c) : "client closed the connection");
}

const mr_conn_callbacks ss_client_callbacks = {client_read_cb, client_write_cb, client_event_cb};

void mr_session_start(mr_worker *w, int fd)
{
    mr_session *s = calloc(1, sizeof(*s));
    if (!s) {
        close(fd);
        atomic_fetch_sub(&w->proxy->connections, 1);
        return;
    }
    s->w = w;
    s->id = atomic_fetch_add(&w->proxy->next_conn_id, 1) + 1;
    ss_hooks_start(s);
    s->next = w->sessions;
    if (w->sessions)
        w->sessions->prev = s;
    w->sessions = s;
    w->nsessions++;
    mr_client_register(&w->clients, &s->slot, s->id, w->id, fd);
    mr_stat_add(&w->stats.connections_accepted, 1);
    mr_stat_add(&w->stats.connections_active, 1);
    s->client = mr_conn_new(w->base, fd, &ss_client_callbacks, s);
    if (!s->client) {
        close(fd);
        ss_free(s);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
               sizeof(one)); /* fails harmlessly on unix sockets */
    mr_conn_set_low_mark(s->client, cfg(s)->relay_buffer / 2);
    mr_conn_read_enable(s->client, true);
    mr_debug(s->id, "client connected on worker %u", w->id);
    ss_set_state(s, SS_CONNECTING);
    if (ss_pool_may_connect(s)) /* else it connects once the pool has room */
        ss_connect(s);
}
