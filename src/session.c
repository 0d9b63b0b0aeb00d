/*
 * session.c - the state machine of one client connection (see session.h).
 *
 * Runs on its worker's thread; owns both connections, the tracker and the
 * framing state of each direction. Bytes are relayed as they arrive: a
 * packet's head is inspected (first MR_TRACK_PREFIX bytes) and the packet
 * then streams through, so a 1 GB row never sits in memory. When the peer
 * we write to falls behind by relay_buffer bytes, we stop reading from the
 * other side until it catches up.
 */
#include "myrewrite/session.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "myrewrite/codec.h"
#include "myrewrite/conn.h"
#include "myrewrite/log.h"
#include "myrewrite/rules.h"
#include "myrewrite/sql_lexer.h"
#include "myrewrite/tracker.h"
#include "myrewrite/worker.h"

typedef enum session_state {
    SS_CONNECTING, /* backend connect in progress; the client waits */
    SS_GREETING,   /* waiting for the backend's greeting */
    SS_AUTH,       /* relaying the authentication exchange until OK or ERR */
    SS_IDLE,       /* between commands: the client speaks next */
    SS_RESPONSE,   /* relaying the backend's answer to the current command */
    SS_INFILE,     /* relaying LOCAL INFILE contents from the client */
    SS_CLOSING,    /* flushing a last packet to the client, then free */
    SS_CLOSED,     /* both sockets gone; memory freed from the event loop */
    SS_MAX
} session_state;

static const char *const state_names[SS_MAX] = {
    "connecting", "greeting", "auth", "idle", "response", "infile", "closing", "closed",
};

/* A session that is closing or closed relays nothing more. Code that calls
 * anything which may close the session checks this before going on. */
#define ALIVE(s) ((s)->state < SS_CLOSING)

/* Framing of one direction: where the current packet stands. */
typedef struct framing {
    uint64_t remaining;   /* bytes of the current packet not yet moved */
    bool continuation;    /* the next packet continues a 16 MiB payload */
    bool discard;         /* drop the current packet instead of relaying it */
    bool ends_response;   /* the current packet completes the response */
    bool blocked;         /* reading paused: the peer's output is full */
} framing;

struct mr_session {
    uint64_t id;
    mr_worker *w;
    struct mr_session *prev, *next;  /* worker's list */
    mr_conn *client;                 /* owned */
    mr_conn *backend;                /* owned; NULL once closed */
    session_state state;
    mr_tracker tracker;
    framing from_client, from_backend;
    uint8_t seq;                     /* sequence id last relayed, either way: an ERR
                                        the proxy injects continues from it */
    uint8_t command;                 /* the command being answered */
    uint64_t command_bytes;          /* payload of the current client command so far */
    uint32_t caps;                   /* negotiated capabilities */
    uint32_t backend_thread_id;      /* the backend's connection id */
    bool auth_seen_response;         /* the client's HandshakeResponse was checked */
    mr_close_reason close_reason;
    char user[96];                   /* authenticated user, for rule filters */
    char schema[200];                /* default schema, for rule filters */
    char pending_user[96];           /* COM_CHANGE_USER: applied on success */
    char pending_schema[200];        /* COM_INIT_DB / USE: applied on success */
    bool user_pending, schema_pending;
    mr_digest_entry *digest;         /* stats entry of the statement in flight */
    uint64_t command_start_ns;
};

static void pump_client(mr_session *s);
static void pump_backend(mr_session *s);
static void session_free(mr_session *s);

static const mr_config *cfg(const mr_session *s) { return s->w->proxy->cfg; }

static void set_state(mr_session *s, session_state to)
{
    mr_debug(s->id, "state %s -> %s", state_names[s->state], state_names[to]);
    s->state = to;
}

mr_session *mr_session_next(mr_session *s) { return s->next; }

/* ---- closing ---- */

/* Tells the backend we are leaving, so it does not count an aborted client.
 * Only between commands, and only if nothing is queued ahead of it. */
static void backend_quit(mr_session *s)
{
    static const uint8_t quit[5] = {1, 0, 0, 0, MR_COM_QUIT};
    if (!s->backend || s->state != SS_IDLE)
        return;
    if (evbuffer_get_length(mr_conn_output(s->backend)) != 0)
        return;
    ssize_t n = send(mr_conn_fd(s->backend), quit, sizeof(quit), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n; /* best effort: the socket closes right after either way */
}

static void close_backend(mr_session *s)
{
    if (!s->backend)
        return;
    backend_quit(s);
    mr_conn_free(s->backend);
    s->backend = NULL;
}

static void session_close(mr_session *s, mr_close_reason why, const char *detail)
{
    mr_log_level lvl = (why == MR_CLOSE_CLIENT_QUIT || why == MR_CLOSE_CLIENT_GONE ||
                        why == MR_CLOSE_SHUTDOWN)
                           ? MR_LOG_DEBUG
                           : MR_LOG_INFO;
    if (mr_log_enabled(lvl))
        mr_log(lvl, s->id, "closed (%s) in state %s: %s", mr_close_reason_name(why),
               state_names[s->state], detail);
    mr_stat_add(&s->w->stats.closes[why], 1);
    close_backend(s);
    session_free(s);
}

/* Sends whatever is queued for the client (typically an ERR), then closes. */
static void close_after_flush(mr_session *s, mr_close_reason why, const char *detail)
{
    if (!ALIVE(s))
        return;
    mr_info(s->id, "closing (%s): %s", mr_close_reason_name(why), detail);
    mr_stat_add(&s->w->stats.closes[why], 1);
    close_backend(s);
    set_state(s, SS_CLOSING);
    s->close_reason = why;
    mr_conn_read_enable(s->client, false);
    if (evbuffer_get_length(mr_conn_output(s->client)) == 0) {
        session_free(s);
        return;
    }
    /* the write callback frees the session once the ERR is out */
    struct timeval tv = {5, 0}; /* a client that never reads its ERR */
    mr_conn_set_timeout(s->client, &tv);
}

/* Queues an ERR packet for the client with the given sequence id. */
static void send_err(mr_session *s, uint8_t seq, uint16_t code, const char *sqlstate,
                     const char *msg)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_err_build(&b, seq, code, sqlstate, msg);
    if (!b.failed)
        mr_conn_write(s->client, b.data, b.len);
    mr_buf_free(&b);
}

/* ---- backpressure ---- */

static size_t queued(struct evbuffer *b) { return evbuffer_get_length(b); }

static void set_reading(mr_conn *from, framing *f, bool want)
{
    if (want == f->blocked) {
        f->blocked = !want;
        mr_conn_read_enable(from, want);
    }
}

/* Read from the client only while the backend keeps up and the client's
 * unprocessed input (pipelined commands) stays under relay_buffer. */
static void client_flow(mr_session *s)
{
    if (!ALIVE(s) || !s->backend)
        return;
    size_t limit = cfg(s)->relay_buffer;
    set_reading(s->client, &s->from_client,
                queued(mr_conn_output(s->backend)) < limit &&
                    queued(mr_conn_input(s->client)) < limit);
}

/* Read from the backend only while the client keeps up. */
static void backend_flow(mr_session *s)
{
    if (!ALIVE(s) || !s->backend)
        return;
    set_reading(s->backend, &s->from_backend,
                queued(mr_conn_output(s->client)) < cfg(s)->relay_buffer);
}

/* ---- backend side ---- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A schema or user change takes effect only once the server accepted it. */
static void apply_pending(mr_session *s, bool ok)
{
    if (ok && s->schema_pending)
        memcpy(s->schema, s->pending_schema, sizeof(s->schema));
    if (ok && s->user_pending)
        memcpy(s->user, s->pending_user, sizeof(s->user));
    s->schema_pending = s->user_pending = false;
}

static void response_done(mr_session *s)
{
    mr_stat_add(&s->w->stats.commands, 1);
    apply_pending(s, !s->tracker.ended_with_err);
    if (s->digest) {
        mr_digest_stats_record(s->digest, (now_ns() - s->command_start_ns) / 1000);
        s->digest = NULL;
    }
    set_state(s, SS_IDLE);
    if (s->w->draining) {
        session_close(s, MR_CLOSE_SHUTDOWN, "proxy shutting down");
        return;
    }
    pump_client(s); /* a command may already be waiting */
}

static void auth_done(mr_session *s)
{
    if (s->tracker.ended_with_err) {
        close_after_flush(s, MR_CLOSE_AUTH_FAILED, "backend refused authentication");
        return;
    }
    mr_conn_set_timeout(s->client, NULL);
    apply_pending(s, true);
    mr_debug(s->id, "authenticated; backend thread id %u", s->backend_thread_id);
    set_state(s, SS_IDLE);
    if (s->w->draining) {
        session_close(s, MR_CLOSE_SHUTDOWN, "proxy shutting down");
        return;
    }
    pump_client(s);
}

static void greeting_unusable(mr_session *s, const char *why)
{
    send_err(s, 0, MR_ER_BACKEND_UNAVAILABLE, "08S01",
             "backend unavailable: its greeting is not MySQL protocol 10");
    close_after_flush(s, MR_CLOSE_MALFORMED, why);
}

/* The greeting is read whole (it is small) so its capabilities can be masked
 * before the client sees them. An ERR instead of a greeting (e.g. "Too many
 * connections" from mysqld) is relayed as it is. */
static void read_greeting(mr_session *s, struct evbuffer *in)
{
    uint8_t hdr[MR_PKT_HEADER];
    mr_pkt_header h;
    mr_greeting g;
    if (evbuffer_copyout(in, hdr, sizeof(hdr)) < (ev_ssize_t)sizeof(hdr))
        return;
    mr_pkt_header_read(hdr, sizeof(hdr), &h);
    if (h.len > 65536) {
        greeting_unusable(s, "oversized greeting from backend");
        return;
    }
    size_t total = MR_PKT_HEADER + (size_t)h.len;
    if (evbuffer_get_length(in) < total)
        return;
    uint8_t *pkt = evbuffer_pullup(in, (ev_ssize_t)total);
    uint8_t *payload = pkt + MR_PKT_HEADER;
    if (h.len > 0 && payload[0] == 0xff) {
        mr_err err;
        if (mr_err_parse(payload, h.len, &err) == MR_OK)
            mr_warn(s->id, "backend refused the connection: %u %.*s", err.code,
                    (int)err.msg_len, err.msg);
        evbuffer_remove_buffer(in, mr_conn_output(s->client), total);
        mr_conn_flush(s->client);
        close_after_flush(s, MR_CLOSE_BACKEND_DOWN, "backend sent an error instead of a greeting");
        return;
    }
    if (mr_greeting_parse(payload, h.len, &g) != MR_OK) {
        greeting_unusable(s, "malformed greeting from backend");
        return;
    }
    mr_greeting_mask(payload, &g);
    s->caps = g.caps & ~(uint32_t)MR_CAP_MASKED;
    s->backend_thread_id = g.thread_id;
    s->seq = h.seq;
    s->from_backend.remaining = total; /* pump_backend relays it */
    mr_conn_set_timeout(s->backend, NULL);
    struct timeval tv = {(time_t)(cfg(s)->handshake_timeout_ms / 1000),
                         (suseconds_t)(cfg(s)->handshake_timeout_ms % 1000) * 1000};
    mr_conn_set_timeout(s->client, &tv);
    mr_tracker_begin(&s->tracker, MR_EXPECT_AUTH);
    set_state(s, SS_AUTH);
}

/* Classifies the head of a backend packet; false means stop pumping. */
static bool backend_packet_start(mr_session *s, const uint8_t *p, uint32_t len, uint8_t seq)
{
    framing *f = &s->from_backend;
    s->seq = seq;
    f->remaining = MR_PKT_HEADER + (uint64_t)len;
    bool continued = f->continuation;
    f->continuation = (len == MR_PKT_MAX_PAYLOAD);
    if (continued)
        return true; /* a piece of a large payload: nothing to classify */
    if (s->state != SS_RESPONSE && s->state != SS_AUTH) {
        /* e.g. a server that announces its idle timeout before closing */
        mr_debug(s->id, "unsolicited backend packet in state %s", state_names[s->state]);
        return true;
    }
    size_t n = len < MR_TRACK_PREFIX ? len : MR_TRACK_PREFIX;
    switch (mr_tracker_feed(&s->tracker, p, n, len)) {
    case MR_TRACK_MORE: break;
    case MR_TRACK_DONE: f->ends_response = true; break;
    case MR_TRACK_CLIENT_NEXT: set_state(s, SS_INFILE); break;
    case MR_TRACK_MALFORMED:
        mr_warn(s->id, "backend packet does not fit the %s response (first byte 0x%02x, %u bytes)",
                mr_command_name(s->command), n ? p[0] : 0, len);
        close_after_flush(s, MR_CLOSE_MALFORMED, "malformed response from backend");
        return false;
    }
    return true;
}

/* Called when the packet that ends the response has been fully relayed. */
static void backend_response_complete(mr_session *s)
{
    s->from_backend.ends_response = false;
    if (s->state == SS_AUTH)
        auth_done(s);
    else
        response_done(s);
}

/* Relays complete and partial packets from the backend to the client in one
 * batch (a single evbuffer move), inspecting each packet's head on the way. */
static void pump_backend(mr_session *s)
{
    struct evbuffer *in = mr_conn_input(s->backend);
    framing *f = &s->from_backend;
    size_t avail = evbuffer_get_length(in), move = 0;
    struct evbuffer_ptr pos;
    uint8_t head[MR_PKT_HEADER + MR_TRACK_PREFIX];
    bool complete = false;

    evbuffer_ptr_set(in, &pos, 0, EVBUFFER_PTR_SET);
    for (;;) {
        if (f->remaining > 0) {
            size_t take = avail - move < f->remaining ? avail - move : (size_t)f->remaining;
            move += take;
            f->remaining -= take;
            if (f->remaining > 0 || (f->ends_response && !f->continuation)) {
                complete = f->remaining == 0;
                break;
            }
            if (move < avail)
                evbuffer_ptr_set(in, &pos, take, EVBUFFER_PTR_ADD);
            continue;
        }
        if (avail - move < MR_PKT_HEADER || move >= cfg(s)->relay_buffer)
            break;
        size_t got = avail - move < sizeof(head) ? avail - move : sizeof(head);
        evbuffer_copyout_from(in, &pos, head, got);
        mr_pkt_header h;
        mr_pkt_header_read(head, got, &h);
        if (got < MR_PKT_HEADER + (h.len < MR_TRACK_PREFIX ? h.len : MR_TRACK_PREFIX))
            break;
        mr_stat_add(&s->w->stats.bytes_from_backend, MR_PKT_HEADER + (uint64_t)h.len);
        if (!backend_packet_start(s, head + MR_PKT_HEADER, h.len, h.seq))
            return;
    }
    if (move > 0) {
        evbuffer_remove_buffer(in, mr_conn_output(s->client), move);
        mr_conn_flush(s->client);
    }
    backend_flow(s);
    if (complete)
        backend_response_complete(s);
    else if (move > 0 && evbuffer_get_length(in) > 0 && !f->blocked)
        pump_backend(s); /* stopped at relay_buffer with more queued */
}

static void backend_read_cb(mr_conn *c, void *arg)
{
    mr_session *s = arg;
    (void)c;
    if (s->state == SS_GREETING) {
        read_greeting(s, mr_conn_input(s->backend));
        if (s->state != SS_AUTH)
            return;
    }
    pump_backend(s);
}

static void backend_write_cb(mr_conn *c, void *arg)
{
    mr_session *s = arg;
    (void)c;
    if (s->from_client.blocked)
        pump_client(s); /* it resumes reading once the backlog is relayed */
}

static void backend_failed(mr_session *s, const char *what)
{
    char msg[512];
    if (s->state == SS_CONNECTING || s->state == SS_GREETING) {
        snprintf(msg, sizeof(msg), "backend unavailable: %s %s", s->w->proxy->backend_name, what);
        send_err(s, 0, MR_ER_BACKEND_UNAVAILABLE, "08S01", msg);
        mr_warn(s->id, "%s", msg);
        close_after_flush(s, MR_CLOSE_BACKEND_DOWN, msg);
        return;
    }
    bool mid_packet = s->from_backend.remaining > 0 || s->from_backend.continuation;
    if (s->state == SS_IDLE || mid_packet) {
        session_close(s, MR_CLOSE_BACKEND_LOST, what);
        return;
    }
    snprintf(msg, sizeof(msg), "backend connection lost during %s: %s",
             s->state == SS_AUTH ? "authentication" : mr_command_name(s->command), what);
    send_err(s, (uint8_t)(s->seq + 1), MR_ER_BACKEND_LOST, "08S01", msg);
    close_after_flush(s, MR_CLOSE_BACKEND_LOST, msg);
}

static void backend_event_cb(mr_conn *c, int what, void *arg)
{
    mr_session *s = arg;
    (void)c;
    if (what & MR_CONN_CONNECTED) {
        int one = 1;
        setsockopt(mr_conn_fd(s->backend), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct timeval tv = {(time_t)(cfg(s)->connect_timeout_ms / 1000),
                             (suseconds_t)(cfg(s)->connect_timeout_ms % 1000) * 1000};
        mr_conn_set_timeout(s->backend, &tv); /* until the greeting is in */
        mr_conn_read_enable(s->backend, true);
        set_state(s, SS_GREETING);
        return;
    }
    /* Relay whatever arrived before the close (e.g. a final ERR). */
    if (s->state != SS_GREETING && s->state != SS_CONNECTING)
        pump_backend(s);
    if (!ALIVE(s) || !s->backend)
        return;
    char what_s[160];
    if (what & MR_CONN_TIMEOUT) /* only connecting and the greeting are timed */
        snprintf(what_s, sizeof(what_s), "did not %s within connect_timeout (%llu ms)",
                 s->state == SS_CONNECTING ? "accept the connection" : "send its greeting",
                 (unsigned long long)cfg(s)->connect_timeout_ms);
    else if (what & MR_CONN_ERROR)
        snprintf(what_s, sizeof(what_s), "failed: %s", strerror(mr_conn_errno(s->backend)));
    else
        snprintf(what_s, sizeof(what_s), "closed the connection");
    backend_failed(s, what_s);
}

/* ---- client side ---- */

/* Copies a user or schema name; names too long for the buffer are left unknown. */
static void copy_name(char *dst, size_t cap, const char *src, size_t len, bool *set)
{
    if (!src || len >= cap)
        return;
    memcpy(dst, src, len);
    dst[len] = '\0';
    *set = true;
}

/* Checks the client's HandshakeResponse (or SSLRequest) before relaying it. */
static bool check_handshake_response(mr_session *s, const uint8_t *p, uint32_t len, uint8_t seq)
{
    mr_handshake_response hr;
    s->auth_seen_response = true;
    if (mr_handshake_response_parse(p, len, &hr) != MR_OK) {
        send_err(s, (uint8_t)(seq + 1), MR_ER_MALFORMED_PACKET, "08S01",
                 "malformed handshake response: myrewrite supports protocol 4.1 clients");
        close_after_flush(s, MR_CLOSE_MALFORMED, "malformed handshake response");
        return false;
    }
    if (hr.ssl_request || (hr.caps & (MR_CAP_COMPRESS | MR_CAP_ZSTD_COMPRESSION))) {
        send_err(s, (uint8_t)(seq + 1), MR_ER_NOT_SUPPORTED, "08004",
                 hr.ssl_request ? "myrewrite does not support TLS between client and proxy yet; "
                                  "connect with TLS disabled (ssl-mode=DISABLED)"
                                : "myrewrite does not support protocol compression; connect "
                                  "without compression");
        close_after_flush(s, MR_CLOSE_UNSUPPORTED, hr.ssl_request ? "client asked for TLS"
                                                                   : "client asked for compression");
        return false;
    }
    s->caps &= hr.caps;
    copy_name(s->pending_user, sizeof(s->pending_user), hr.user, hr.user_len, &s->user_pending);
    copy_name(s->pending_schema, sizeof(s->pending_schema), hr.db, hr.db_len,
              &s->schema_pending);
    mr_tracker_init(&s->tracker, (s->caps & MR_CAP_DEPRECATE_EOF) != 0);
    mr_tracker_begin(&s->tracker, MR_EXPECT_AUTH);
    return true;
}

static void refuse_command(mr_session *s, uint8_t cmd)
{
    char msg[200];
    snprintf(msg, sizeof(msg),
             "%s is not supported through myrewrite (replication and obsolete commands must go "
             "to mysqld directly)",
             mr_command_name(cmd));
    mr_stat_add(&s->w->stats.commands_refused, 1);
    mr_info(s->id, "refused %s (0x%02x)", mr_command_name(cmd), cmd);
    send_err(s, 1, MR_ER_UNKNOWN_COM, "08S01", msg);
    s->from_client.discard = true;
}

/* `USE db` changes the default schema the rules filter on. */
static void note_use_statement(mr_session *s, const char *sql, size_t len, unsigned lex_flags)
{
    sql_lexer lx;
    sql_token t;
    sql_lexer_init(&lx, sql, len, lex_flags | SQL_LEX_SKIP_COMMENTS);
    if (!sql_lexer_next(&lx, &t) || t.kind != SQL_TOK_WORD || t.id != SQL_KW_USE)
        return;
    if (!sql_lexer_next(&lx, &t) || (t.kind != SQL_TOK_WORD && t.kind != SQL_TOK_QIDENT))
        return;
    size_t off = t.off, n = t.len;
    if (t.kind == SQL_TOK_QIDENT && n >= 2) { /* `name`: doubled backticks stay as they are */
        off++;
        n -= 2;
    }
    copy_name(s->pending_schema, sizeof(s->pending_schema), sql + off, n, &s->schema_pending);
}

/* Logs what the matched rules asked to log. */
static void log_matches(mr_session *s, const mr_match_result *res, const char *sql, size_t len)
{
    for (unsigned i = 0; i < res->nmatched; i++) {
        const mr_rule *r = res->matched[i];
        if (r->log == MR_RULE_LOG_DIGEST)
            mr_info(s->id, "rule %s%s: %s", r->name, r->log_only ? " (log only)" : "",
                    res->digest);
        else if (r->log == MR_RULE_LOG_FULL || r->log_only)
            mr_info(s->id, "rule %s%s: %.*s -> %.*s", r->name, r->log_only ? " (log only)" : "",
                    (int)(len > 2000 ? 2000 : len), sql,
                    (int)(res->text.len > 2000 ? 2000 : res->text.len),
                    res->action == MR_ACT_REWRITE ? (const char *)res->text.data : sql);
    }
}

typedef enum stmt_verdict {
    STMT_RELAY,    /* send it (as written or rewritten) and relay the answer */
    STMT_ANSWERED, /* the proxy answered it (a block); nothing goes to the backend */
    STMT_CLOSED,   /* the session had to close */
} stmt_verdict;

/* A whole COM_QUERY or COM_STMT_PREPARE: run the front end and act on it. */
static stmt_verdict statement_start(mr_session *s, uint8_t cmd, const char *sql, size_t len)
{
    mr_worker *w = s->w;
    mr_match_result *res = &w->match;
    unsigned lex_flags =
        (s->tracker.status & MR_STATUS_NO_BACKSLASH_ESCAPES) ? SQL_LEX_NO_BACKSLASH_ESCAPES : 0;
    mr_stmt_ctx ctx = {
        .user = s->user[0] ? s->user : NULL,
        .schema = s->schema[0] ? s->schema : NULL,
        .prepared = cmd == MR_COM_STMT_PREPARE,
        .lex_flags = lex_flags,
        .shard = w->id,
    };
    mr_buf_reset(&res->text);
    mr_rules_apply(w->rules->set, sql, len, &ctx, w->scratch, res);
    s->digest = mr_digest_stats_get(&w->digests, res->digest_hash, res->digest ? res->digest : "");
    if (res->nmatched)
        log_matches(s, res, sql, len);
    if (cmd == MR_COM_QUERY)
        note_use_statement(s, sql, len, lex_flags);
    if (res->action == MR_ACT_BLOCK) {
        mr_stat_add(&s->digest->blocked, 1);
        mr_stat_add(&w->stats.statements_blocked, 1);
        send_err(s, 1, res->err_code, res->sqlstate, res->message);
        s->from_client.discard = true;
        s->digest = NULL;
        s->schema_pending = false;
        return STMT_ANSWERED;
    }
    if (res->action == MR_ACT_REWRITE) {
        mr_buf out;
        mr_buf_init(&out);
        mr_command_build(&out, cmd, res->text.data, res->text.len);
        if (out.failed) {
            mr_buf_free(&out);
            send_err(s, 1, MR_ER_OUT_OF_MEMORY, "HY001", "myrewrite is out of memory");
            close_after_flush(s, MR_CLOSE_MALFORMED, "out of memory building a rewrite");
            return STMT_CLOSED;
        }
        mr_conn_write(s->backend, out.data, out.len);
        mr_buf_free(&out);
        mr_stat_add(&s->digest->rewritten, 1);
        mr_stat_add(&w->stats.statements_rewritten, 1);
        s->from_client.discard = true; /* the original bytes are dropped as they come */
    }
    return STMT_RELAY;
}

/* The first packet of a command: decide how its response will look. `p`
 * holds `n` bytes of the `len`-byte payload: the whole of it for the
 * commands the front end reads, else at least MR_TRACK_PREFIX. */
static bool command_start(mr_session *s, const uint8_t *p, size_t n, uint32_t len, uint8_t seq)
{
    if (len == 0 || seq != 0) {
        mr_warn(s->id, "malformed command packet: %s", len == 0 ? "empty payload"
                                                               : "sequence id is not 0");
        close_after_flush(s, MR_CLOSE_MALFORMED, "malformed command packet");
        return false;
    }
    uint8_t cmd = p[0];
    mr_expect expect = mr_expect_for_command(cmd);
    s->command = cmd;
    s->command_start_ns = now_ns();
    if (expect == MR_EXPECT_UNSUPPORTED) {
        refuse_command(s, cmd);
        return true;
    }
    if (cmd == MR_COM_QUIT) {
        session_close(s, MR_CLOSE_CLIENT_QUIT, "COM_QUIT");
        return false;
    }
    if (n == len && (cmd == MR_COM_QUERY || cmd == MR_COM_STMT_PREPARE)) {
        stmt_verdict v = statement_start(s, cmd, (const char *)p + 1, len - 1);
        if (v != STMT_RELAY)
            return v == STMT_ANSWERED;
    } else if (n == len && cmd == MR_COM_INIT_DB) {
        copy_name(s->pending_schema, sizeof(s->pending_schema), (const char *)p + 1, len - 1,
                  &s->schema_pending);
    } else if (n == len && cmd == MR_COM_CHANGE_USER) {
        const char *u, *db;
        size_t ul, dl;
        if (mr_change_user_parse(p, n, s->caps, &u, &ul, &db, &dl) == MR_OK) {
            copy_name(s->pending_user, sizeof(s->pending_user), u, ul, &s->user_pending);
            copy_name(s->pending_schema, sizeof(s->pending_schema), db, dl, &s->schema_pending);
        }
    }
    mr_tracker_begin(&s->tracker, expect);
    if (expect != MR_EXPECT_NONE)
        set_state(s, SS_RESPONSE);
    return true;
}

/* A packet the client sends while the backend waits for it. */
static bool client_data_packet(mr_session *s, const uint8_t *p, size_t n, uint32_t len,
                               uint8_t seq, bool continued)
{
    if (s->state == SS_AUTH && !s->auth_seen_response)
        return check_handshake_response(s, p, n, seq);
    if (s->state == SS_INFILE && len == 0 && !continued) {
        mr_tracker_infile_done(&s->tracker); /* the empty packet ends the file */
        set_state(s, SS_RESPONSE);
    }
    return true;
}

static bool client_may_send(const mr_session *s)
{
    switch (s->state) {
    case SS_IDLE:
    case SS_AUTH:
    case SS_INFILE: return true;
    case SS_RESPONSE: return s->tracker.expect == MR_EXPECT_AUTH; /* COM_CHANGE_USER */
    default: return false;
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
        send_err(s, (uint8_t)(seq + 1), MR_ER_NET_PACKET_TOO_LARGE, "08S01", msg);
        close_after_flush(s, MR_CLOSE_TOO_LARGE, msg);
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
static bool wants_whole_packet(const mr_session *s, const uint8_t *head, uint32_t len)
{
    if (s->from_client.continuation || len == 0 || len >= MR_PKT_MAX_PAYLOAD ||
        MR_PKT_HEADER + (uint64_t)len > cfg(s)->relay_buffer)
        return false;
    if (s->state == SS_AUTH)
        return !s->auth_seen_response;
    if (s->state != SS_IDLE)
        return false;
    switch (head[0]) {
    case MR_COM_QUERY:
    case MR_COM_STMT_PREPARE:
    case MR_COM_INIT_DB:
    case MR_COM_CHANGE_USER: return true;
    default: return false;
    }
}

static void pump_client(mr_session *s)
{
    struct evbuffer *in = mr_conn_input(s->client);
    framing *f = &s->from_client;
    uint8_t head[MR_PKT_HEADER + MR_TRACK_PREFIX];

    while (ALIVE(s) && s->backend) {
        size_t avail = evbuffer_get_length(in);
        if (f->remaining > 0) {
            if (avail == 0)
                break;
            size_t take = avail < f->remaining ? avail : (size_t)f->remaining;
            if (f->discard) {
                evbuffer_drain(in, take);
            } else {
                evbuffer_remove_buffer(in, mr_conn_output(s->backend), take);
                mr_conn_flush(s->backend);
            }
            f->remaining -= take;
            if (queued(mr_conn_output(s->backend)) >= cfg(s)->relay_buffer)
                break;
            continue;
        }
        if (!f->continuation && !client_may_send(s))
            break;
        if (avail < MR_PKT_HEADER)
            break;
        size_t got = (size_t)evbuffer_copyout(in, head, sizeof(head));
        mr_pkt_header h;
        mr_pkt_header_read(head, got, &h);
        size_t n = h.len < MR_TRACK_PREFIX ? h.len : MR_TRACK_PREFIX;
        if (got < MR_PKT_HEADER + n)
            break;
        const uint8_t *payload = head + MR_PKT_HEADER;
        if (wants_whole_packet(s, payload, h.len)) {
            if (avail < MR_PKT_HEADER + (size_t)h.len)
                break; /* fits in relay_buffer, so reading goes on until it is here */
            payload = evbuffer_pullup(in, MR_PKT_HEADER + (ev_ssize_t)h.len) + MR_PKT_HEADER;
            n = h.len;
        }
        mr_stat_add(&s->w->stats.bytes_from_clients, MR_PKT_HEADER + (uint64_t)h.len);
        if (!client_packet_start(s, payload, n, h.len, h.seq))
            return;
    }
    client_flow(s);
}

static void client_read_cb(mr_conn *c, void *arg)
{
    (void)c;
    pump_client(arg);
}

static void client_write_cb(mr_conn *c, void *arg)
{
    mr_session *s = arg;
    (void)c;
    if (s->state == SS_CLOSING) {
        if (evbuffer_get_length(mr_conn_output(s->client)) == 0)
            session_free(s);
        return;
    }
    if (s->from_backend.blocked)
        pump_backend(s); /* relays what is buffered, then resumes reading */
}

static void client_event_cb(mr_conn *c, int what, void *arg)
{
    mr_session *s = arg;
    if (!ALIVE(s)) {
        session_free(s); /* the client went away or never read its ERR */
        return;
    }
    if (what & MR_CONN_TIMEOUT) {
        send_err(s, (uint8_t)(s->seq + 1), MR_ER_HANDSHAKE, "08S01",
                 "authentication did not finish within handshake_timeout");
        close_after_flush(s, MR_CLOSE_TIMEOUT, "handshake timeout");
        return;
    }
    session_close(s, MR_CLOSE_CLIENT_GONE,
                  (what & MR_CONN_ERROR) ? strerror(mr_conn_errno(c))
                                         : "client closed the connection");
}

/* ---- life cycle ---- */

static const mr_conn_callbacks client_callbacks = {client_read_cb, client_write_cb,
                                                    client_event_cb};
static const mr_conn_callbacks backend_callbacks = {backend_read_cb, backend_write_cb,
                                                     backend_event_cb};

static bool connect_backend(mr_session *s)
{
    mr_proxy *p = s->w->proxy;
    struct timeval tv = {(time_t)(cfg(s)->connect_timeout_ms / 1000),
                         (suseconds_t)(cfg(s)->connect_timeout_ms % 1000) * 1000};
    s->backend = mr_conn_connect(s->w->base, (struct sockaddr *)&p->backend_addr,
                                 p->backend_addr_len, &tv, &backend_callbacks, s);
    if (!s->backend)
        return false;
    mr_conn_set_low_mark(s->backend, cfg(s)->relay_buffer / 2);
    return true;
}

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
    s->next = w->sessions;
    if (w->sessions)
        w->sessions->prev = s;
    w->sessions = s;
    w->nsessions++;
    mr_stat_add(&w->stats.connections_accepted, 1);
    mr_stat_add(&w->stats.connections_active, 1);
    s->client = mr_conn_new(w->base, fd, &client_callbacks, s);
    if (!s->client) {
        close(fd);
        session_free(s);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* fails harmlessly on unix sockets */
    mr_conn_set_low_mark(s->client, cfg(s)->relay_buffer / 2);
    mr_conn_read_enable(s->client, true);
    mr_debug(s->id, "client connected on worker %u", w->id);
    set_state(s, SS_CONNECTING);
    if (!connect_backend(s))
        backend_failed(s, "connect failed");
}

void mr_session_drain(mr_session *s, int force)
{
    if (force)
        session_close(s, MR_CLOSE_SHUTDOWN, "proxy shutdown timeout reached");
    else if (s->state == SS_IDLE || s->state == SS_CONNECTING || s->state == SS_GREETING)
        session_close(s, MR_CLOSE_SHUTDOWN, "proxy shutting down");
}

static void free_later(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    free(arg);
}

/* Unlinks the session and closes both sockets now; the memory goes on the
 * next loop turn, so callers up the stack can still test ALIVE(s). */
static void session_free(mr_session *s)
{
    mr_worker *w = s->w;
    if (s->state == SS_CLOSED)
        return;
    set_state(s, SS_CLOSED);
    if (s->prev)
        s->prev->next = s->next;
    else
        w->sessions = s->next;
    if (s->next)
        s->next->prev = s->prev;
    w->nsessions--;
    mr_stat_add(&w->stats.connections_active, (uint64_t)-1);
    atomic_fetch_sub(&w->proxy->connections, 1);
    if (s->backend)
        mr_conn_free(s->backend);
    if (s->client)
        mr_conn_free(s->client);
    s->backend = s->client = NULL;
    struct timeval now = {0, 0};
    if (event_base_once(w->base, -1, EV_TIMEOUT, free_later, s, &now) != 0)
        mr_error(s->id, "cannot schedule the session's release; leaking %zu bytes", sizeof(*s));
    mr_worker_session_ended(w);
}
