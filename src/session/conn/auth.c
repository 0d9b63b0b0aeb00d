/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/conn/auth.c - the authentication exchanges of a session: the login
 * (greeting, HandshakeResponse, auth switch and plugin rounds) and
 * COM_CHANGE_USER's. The client's HandshakeResponse is checked for what the
 * proxy cannot relay (MariaDB extensions the greeting hid are cleared in
 * it, TLS without a certificate and compression not offered are refused)
 * and made to ask the server for the backend leg's compression (zlib as
 * backend_compress says, never zstd: its level byte is taken out); then
 * only the packets the exchange is waiting for go to the server.
 *
 * Why: a client may write commands right behind its last auth packet (in
 * the same send()). Relayed at once they would skip the rules, and their
 * answers would come while the proxy still reads the exchange. Held in the
 * client's input until the server's OK or ERR, they go through the command
 * path one at a time, as mariadbd itself reads them: after a login's OK as
 * the first commands, after a refused COM_CHANGE_USER as the next ones (the
 * session keeps its old user); a refused login closes the session.
 *
 * Which packet the server waits for: after each of its packets that does
 * not end the exchange (the greeting, an auth switch request, plugin data)
 * one client packet with the next sequence id. A plugin's data may also be
 * followed by the OK without an answer (caching_sha2_password's fast path),
 * so a packet with sequence id 0, a command, is held rather than refused.
 *
 * TLS toward the client: when the proxy has a certificate its greeting
 * offers CLIENT_SSL. The client's SSLRequest is taken here, never relayed;
 * TLS starts on the client's conn, and the real HandshakeResponse follows
 * over it. TLS toward the backend (backend_tls, and always for a TLS client
 * when the server offers it): the proxy sends the server an SSLRequest of
 * its own, made of the head of the client's response, starts TLS on the
 * backend conn, and the response follows over it. Each leg's SSLRequest
 * is seen by one side only, so for the rest of the login the sequence ids
 * are moved by login_shift (+1: only the client's leg had one, -1: only
 * the server's); the response relayed says CLIENT_SSL as the backend leg
 * is. A client that came over TLS believes its password is protected: a
 * server that asks it for the password in clear (mysql_clear_password,
 * dialog, sha256_password, or caching_sha2_password's full authentication)
 * over a plain backend leg is not answered; the client gets ERR 1251.
 * Runs on the session's worker thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/base/log.h"
#include "myrewrite/net/tls.h"
#include "myrewrite/net/tls_reload.h"
#include "myrewrite/sql/charset_guard.h"
#include "session/core/session_impl.h"

bool ss_auth_exchange(const mr_session *s)
{
    return s->state == SS_AUTH || (s->state == SS_RESPONSE && s->tracker.expect == MR_EXPECT_AUTH);
}

void ss_auth_greeting_sent(mr_session *s, uint8_t seq)
{
    s->auth_phase = SS_AUTH_RESPONSE_DUE;
    s->auth_seq = (uint8_t)(seq + 1);
}

/* A packet of the server's in the exchange: it ends it, or asks the client
 * for one more (a packet before the client's HandshakeResponse leaves that
 * response due). */
void ss_auth_server_packet(mr_session *s, uint8_t seq, bool ends)
{
    if (ends)
        s->auth_phase = SS_AUTH_OVER;
    else if (s->auth_phase != SS_AUTH_RESPONSE_DUE)
        s->auth_phase = SS_AUTH_CLIENT_TURN;
    s->auth_seq = (uint8_t)(seq + 1);
}

void ss_auth_client_sent(mr_session *s) { s->auth_phase = SS_AUTH_SERVER_TURN; }

bool ss_auth_response_due(const mr_session *s)
{
    return s->state == SS_AUTH && s->auth_phase == SS_AUTH_RESPONSE_DUE;
}

ss_auth_verdict ss_auth_client_packet(mr_session *s, uint8_t seq)
{
    bool asked = s->auth_phase == SS_AUTH_RESPONSE_DUE || s->auth_phase == SS_AUTH_CLIENT_TURN;
    if (asked && seq == s->auth_seq)
        return AUTH_RELAY;
    if (!asked || (seq == 0 && s->auth_phase == SS_AUTH_CLIENT_TURN))
        return AUTH_HOLD; /* a pipelined command, or the server has not asked yet */
    mr_warn(s->id,
            "client sent a packet with sequence id %u during authentication; the "
            "server waits for %u",
            seq, s->auth_seq);
    ss_send_err(s, (uint8_t)(seq + 1), MR_ER_PACKETS_OUT_OF_ORDER, "08S01",
                "Got packets out of order: the authentication exchange waits for the client's "
                "answer to the server's last packet");
    ss_close_after_flush(s, MR_CLOSE_MALFORMED, "packet out of order during authentication");
    return AUTH_CLOSED;
}

/* What the proxy cannot relay yet, as the client's ERR message and the log
 * detail; NULL: nothing. */
static const char *unsupported_request(const mr_session *s, const mr_handshake_response *hr,
                                       const char **detail)
{
    if (hr->ssl_request && mr_conn_tls_active(s->client)) {
        *detail = "client sent a second SSLRequest over TLS";
        return "a second SSLRequest over an encrypted connection: send the HandshakeResponse";
    }
    if (hr->ssl_request) {
        *detail = "client asked for TLS";
        return "myrewrite has no TLS certificate configured (tls_cert, tls_key); connect with "
               "TLS disabled (ssl-mode=DISABLED) or configure one";
    }
    return NULL;
}

/* The compression the client's leg gets (s->client_*): zlib when the client
 * asks for it (MySQL's choice when a client asks for both), else zstd at
 * the client's level, held to zstd_max_level. NULL, or the ERR to send: its
 * code, message (in msg) and log detail. */
static const char *choose_compression(mr_session *s, const mr_handshake_response *hr,
                                      uint16_t *code, char *msg, size_t size)
{
    bool zlib = (hr->caps & MR_CAP_COMPRESS) != 0, zstd = (hr->caps & MR_CAP_ZSTD_COMPRESSION) != 0;
    *code = MR_ER_NOT_SUPPORTED;
    if (zlib && !s->compress_offered && !(zstd && s->zstd_offered)) {
        snprintf(msg, size,
                 "myrewrite offers no zlib protocol compression here (compression = "
                 "no or zstd, or the server does not offer it); connect without "
                 "compression");
        return "client asked for zlib compression";
    }
    if (zstd && !s->zstd_offered && !(zlib && s->compress_offered)) {
        snprintf(msg, size,
                 "myrewrite offers no zstd protocol compression here (compression = "
                 "no or zlib); connect with zlib compression "
                 "(compression_algorithms=zlib) or without compression");
        return "client asked for zstd compression";
    }
    s->client_compress = zlib || zstd;
    s->client_zalgo = zlib && s->compress_offered ? MR_ZALGO_ZLIB : MR_ZALGO_ZSTD;
    s->client_zlevel = 1; /* zlib: the cheapest level (the proxy shares the app host's CPU) */
    if (!s->client_compress || s->client_zalgo == MR_ZALGO_ZLIB)
        return NULL;
    if (hr->zstd_level < 0) {
        *code = MR_ER_MALFORMED_PACKET;
        snprintf(msg, size,
                 "malformed handshake response: CLIENT_ZSTD_COMPRESSION_ALGORITHM is "
                 "set but the zstd_compression_level byte after the connect "
                 "attributes is missing");
        return "zstd asked for without its level";
    }
    if (hr->zstd_level < MR_ZSTD_LEVEL_MIN || hr->zstd_level > MR_ZSTD_LEVEL_MAX) {
        snprintf(msg, size, "zstd_compression_level %d is out of range: zstd levels are %d to %d",
                 hr->zstd_level, MR_ZSTD_LEVEL_MIN, MR_ZSTD_LEVEL_MAX);
        return "zstd level out of range";
    }
    /* The client names the level but the proxy's CPU pays for it, so it is
     * held to zstd_max_level (levels 19-22 cost far more than 3). A level
     * out of range was refused above, not capped: it is a broken client. */
    uint64_t cap = cfg(s)->zstd_max_level;
    s->client_zlevel = (uint8_t)((uint64_t)hr->zstd_level < cap ? (uint64_t)hr->zstd_level : cap);
    return NULL;
}

/* The SSLRequest (`len` payload bytes heading the client's input) is taken
 * off; TLS starts; the real HandshakeResponse is due next, with the next
 * sequence id. */
static bool start_client_tls(mr_session *s, uint32_t len, uint8_t seq)
{
    evbuffer_drain(mr_conn_input(s->client), MR_PKT_HEADER + (size_t)len);
    s->from_client.remaining = 0;
    struct ssl_ctx_st *ctx = mr_tls_client_ref(s->w->proxy);
    bool started = ctx && mr_conn_start_tls(s->client, ctx, true, NULL);
    mr_tls_ctx_free(ctx); /* the TLS connection holds its own reference */
    if (!started) {
        ss_close(s, MR_CLOSE_TLS_FAILED, "out of memory starting TLS");
        return false;
    }
    s->auth_phase = SS_AUTH_RESPONSE_DUE; /* the real response comes over TLS */
    s->auth_seq = (uint8_t)(seq + 1);
    s->login_shift = 1;
    return false; /* what follows in the input is TLS: the conn reads it */
}

/* The response relayed says CLIENT_SSL as the backend connection is: a
 * plain one must not make the server wait for a TLS handshake. The verify
 * flag is the client's own business. */
static void set_tls_caps(mr_session *s, bool backend_tls)
{
    uint8_t *p = evbuffer_pullup(mr_conn_input(s->client), MR_PKT_HEADER + 4);
    if (!p)
        return;
    if (backend_tls)
        p[MR_PKT_HEADER + 1] |= (uint8_t)(MR_CAP_SSL >> 8);
    else
        p[MR_PKT_HEADER + 1] &= (uint8_t) ~(MR_CAP_SSL >> 8);
    p[MR_PKT_HEADER + 3] &= (uint8_t) ~(MR_CAP_SSL_VERIFY_SERVER_CERT >> 24);
}

/* The zstd level byte at payload offset `at` of the response (`len` bytes,
 * heading the client's input) is taken out: the server, which is asked for
 * no zstd, reads no such byte. False: out of memory. */
static bool drop_zstd_level(mr_session *s, uint32_t len, size_t at)
{
    struct evbuffer *in = mr_conn_input(s->client);
    size_t total = MR_PKT_HEADER + (size_t)len;
    if (s->from_client.remaining != total || at >= len)
        return true; /* not read whole (over relay_buffer): the server ignores what
                        follows the attributes */
    uint8_t *p = evbuffer_pullup(in, (ev_ssize_t)total), *q = malloc(total - 1);
    if (!p || !q) {
        free(q);
        return false;
    }
    memcpy(q, p, MR_PKT_HEADER + at);
    memcpy(q + MR_PKT_HEADER + at, p + MR_PKT_HEADER + at + 1, len - at - 1);
    q[0] = (uint8_t)(len - 1);
    q[1] = (uint8_t)((len - 1) >> 8);
    q[2] = (uint8_t)((len - 1) >> 16);
    evbuffer_drain(in, total);
    bool ok = evbuffer_prepend(in, q, total - 1) == 0;
    free(q);
    s->from_client.remaining -= ok ? 1 : 0;
    return ok;
}

/* Whatever the client's leg speaks (the proxy ends it there), the response
 * relayed asks the server for zlib when backend_compress says so and the
 * server offers it, and never for zstd. False: out of memory. */
static bool relay_compression(mr_session *s, const mr_handshake_response *hr, uint32_t len)
{
    uint8_t *p = evbuffer_pullup(mr_conn_input(s->client), MR_PKT_HEADER + 4);
    if (!p)
        return false;
    if (s->backend_zlib)
        p[MR_PKT_HEADER] |= (uint8_t)MR_CAP_COMPRESS;
    else
        p[MR_PKT_HEADER] &= (uint8_t)~MR_CAP_COMPRESS;
    p[MR_PKT_HEADER + 3] &= (uint8_t) ~(MR_CAP_ZSTD_COMPRESSION >> 24);
    s->backend_compress = s->backend_zlib;
    return hr->zstd_level < 0 || drop_zstd_level(s, len, hr->zstd_level_at);
}

/* backend_tls prefer and up, and any client that came over TLS: TLS with a
 * backend that offers it. */
static bool backend_tls_wanted(const mr_session *s, bool client_tls)
{
    const mr_proxy *p = s->w->proxy;
    return p->backend_tls_on && s->backend_offers_tls &&
           (p->backend_tls_mode >= MR_BTLS_PREFER || client_tls);
}

/* The proxy's own SSLRequest to the backend (sequence id 1: the server's
 * numbering), made of the head of the client's response p; then TLS on the
 * backend conn. The response goes once it is up (the conn holds it). */
static bool start_backend_tls(mr_session *s, const uint8_t *p, bool client_tls)
{
    const mr_proxy *px = s->w->proxy;
    uint8_t req[MR_PKT_HEADER + 32] = {32, 0, 0, 1};
    memcpy(req + MR_PKT_HEADER, p, 32);
    req[MR_PKT_HEADER + 1] |= (uint8_t)(MR_CAP_SSL >> 8);
    req[MR_PKT_HEADER + 3] &= (uint8_t) ~(MR_CAP_SSL_VERIFY_SERVER_CERT >> 24);
    mr_conn_write(s->backend, req, sizeof(req));
    const char *host =
        px->backend_tls_mode == MR_BTLS_VERIFY_IDENTITY ? px->backend_tls_host : NULL;
    struct ssl_ctx_st *ctx = mr_tls_backend_ref(s->w->proxy);
    bool started = ctx && mr_conn_start_tls(s->backend, ctx, false, host);
    mr_tls_ctx_free(ctx);
    if (!started) {
        ss_send_err(s, (uint8_t)(s->seq + 1), MR_ER_BACKEND_UNAVAILABLE, "08S01",
                    "backend unavailable: TLS toward it could not be started");
        ss_close_after_flush(s, MR_CLOSE_BACKEND_DOWN, "cannot start TLS toward the backend");
        return false;
    }
    set_tls_caps(s, true);
    s->login_shift = client_tls ? 0 : -1;
    return true;
}

void ss_auth_shift_to_server(mr_session *s, struct evbuffer *in)
{
    uint8_t *p = evbuffer_pullup(in, MR_PKT_HEADER);
    if (p)
        p[3] = (uint8_t)(p[3] - s->login_shift);
}

uint8_t ss_auth_shift_to_client(mr_session *s, struct evbuffer *in, size_t off, uint8_t seq)
{
    uint8_t *p = evbuffer_pullup(in, (ev_ssize_t)(off + MR_PKT_HEADER));
    uint8_t to = (uint8_t)(seq + s->login_shift);
    if (p)
        p[off + 3] = to;
    return to;
}

/* Does this login packet of the server make the client send its password
 * as it is? An auth switch to a plugin that does (its name follows 0xFE),
 * or caching_sha2_password's "perform full authentication" (0x01 0x04). */
static const char *cleartext_ask(const uint8_t *p, size_t n, uint32_t len)
{
    static const char *const plugins[] = {"mysql_clear_password", "dialog", "sha256_password"};
    if (n == 2 && len == 2 && p[0] == 0x01 && p[1] == 0x04)
        return "caching_sha2_password full authentication";
    if (n < 2 || p[0] != 0xfe)
        return NULL;
    for (size_t i = 0; i < sizeof(plugins) / sizeof(plugins[0]); i++) {
        size_t l = strlen(plugins[i]);
        if (n >= 1 + l + 1 && memcmp(p + 1, plugins[i], l) == 0 && p[1 + l] == 0)
            return plugins[i];
    }
    return NULL;
}

bool ss_auth_server_check(mr_session *s, const uint8_t *p, size_t n, uint32_t len, uint8_t seq)
{
    if (!mr_conn_tls_active(s->client) || mr_conn_tls_active(s->backend))
        return true;
    const char *what = cleartext_ask(p, n, len);
    if (!what)
        return true;
    char msg[400];
    snprintf(msg, sizeof(msg),
             "the server asks for the password in clear text (%s) and "
             "myrewrite's connection to the server is not encrypted: the password is not sent; "
             "use an account whose plugin never sends it (mysql_native_password, ed25519)",
             what);
    mr_warn(s->id, "refused to relay a cleartext password request (%s) for a TLS client", what);
    ss_send_err(s, seq, MR_ER_NOT_SUPPORTED_AUTH_MODE, "08004", msg);
    ss_close_after_flush(s, MR_CLOSE_CLEARTEXT_REFUSED, "cleartext password over a plain backend");
    return false;
}

/* The MariaDB extensions the proxy does not relay are cleared in the
 * response relayed, should the client ask for one the greeting hid: the
 * server then never uses them. The client's own reading of the server
 * follows the greeting it saw. */
static void clear_masked_ext_caps(mr_session *s, const mr_handshake_response *hr)
{
    if (!(hr->mariadb_ext_caps & MR_MARIADB_EXT_CAP_MASKED))
        return;
    uint8_t *p = evbuffer_pullup(mr_conn_input(s->client), MR_PKT_HEADER + 32);
    if (!p)
        return;
    uint32_t keep = hr->mariadb_ext_caps & MR_MARIADB_EXT_CAP_RELAYED;
    for (int i = 0; i < 4; i++)
        p[MR_PKT_HEADER + 28 + i] = (uint8_t)(keep >> (8 * i));
    mr_debug(s->id,
             "client asked for MariaDB extensions 0x%08x that the greeting did not offer; "
             "cleared",
             hr->mariadb_ext_caps & MR_MARIADB_EXT_CAP_MASKED);
}

/* What the session keeps of the login it relays: the capabilities both ends
 * have (the tracker reads responses by them), the user, schema and character
 * set the rules filter on once the server accepts them. */
static void note_login(mr_session *s, const mr_handshake_response *hr)
{
    s->caps &= hr->caps;
    s->ext_caps &= hr->mariadb_ext_caps;
    ss_copy_name(s->pending_user, sizeof(s->pending_user), hr->user, hr->user_len,
                 &s->user_pending);
    ss_copy_name(s->pending_schema, sizeof(s->pending_schema), hr->db, hr->db_len,
                 &s->schema_pending);
    s->pending_charset = mr_charset_unsafe_collation(hr->charset);
    s->charset_pending = true;
    mr_tracker_init(&s->tracker, (s->caps & MR_CAP_DEPRECATE_EOF) != 0);
    mr_tracker_set_mariadb(&s->tracker, s->ext_caps);
    mr_tracker_set_optional_metadata(&s->tracker,
                                     (s->caps & MR_CAP_OPTIONAL_RESULTSET_METADATA) != 0);
    mr_tracker_begin(&s->tracker, MR_EXPECT_AUTH);
}

bool ss_auth_check_response(mr_session *s, const uint8_t *p, uint32_t len, uint8_t seq)
{
    mr_handshake_response hr;
    if (mr_handshake_response_parse(p, len, &hr) != MR_OK) {
        ss_send_err(s, (uint8_t)(seq + 1), MR_ER_MALFORMED_PACKET, "08S01",
                    "malformed handshake response: myrewrite supports protocol 4.1 clients");
        ss_close_after_flush(s, MR_CLOSE_MALFORMED, "malformed handshake response");
        return false;
    }
    bool tls = mr_conn_tls_active(s->client);
    if (hr.ssl_request && !tls && s->w->proxy->client_tls_on)
        return start_client_tls(s, len, seq);
    const char *detail, *msg = unsupported_request(s, &hr, &detail);
    if (msg) {
        ss_send_err(s, (uint8_t)(seq + 1), MR_ER_NOT_SUPPORTED, "08004", msg);
        ss_close_after_flush(s, MR_CLOSE_UNSUPPORTED, detail);
        return false;
    }
    char zmsg[300];
    uint16_t zcode;
    if ((detail = choose_compression(s, &hr, &zcode, zmsg, sizeof(zmsg)))) {
        ss_send_err(s, (uint8_t)(seq + 1), zcode, zcode == MR_ER_NOT_SUPPORTED ? "08004" : "08S01",
                    zmsg);
        ss_close_after_flush(
            s, zcode == MR_ER_NOT_SUPPORTED ? MR_CLOSE_UNSUPPORTED : MR_CLOSE_MALFORMED, detail);
        return false;
    }
    if (!tls && s->w->proxy->require_tls) {
        ss_send_err(s, (uint8_t)(seq + 1), MR_ER_SECURE_TRANSPORT_REQUIRED, "08004",
                    "Connections using insecure transport are prohibited: myrewrite requires TLS "
                    "(require_tls = yes); connect with TLS (ssl-mode=REQUIRED)");
        ss_close_after_flush(s, MR_CLOSE_TLS_REQUIRED, "plaintext client under require_tls");
        return false;
    }
    clear_masked_ext_caps(s, &hr);
    bool server_tracks = (s->caps & MR_CAP_SESSION_TRACK) != 0;
    note_login(s, &hr); /* before either leg's TLS: both relay this same login */
    s->backend_caps = s->caps;
    ss_pool_login_caps(s, server_tracks, (uint8_t)hr.charset);
    if (!relay_compression(s, &hr, len)) {
        ss_close(s, MR_CLOSE_BACKEND_LOST, "out of memory relaying the handshake response");
        return false;
    }
    if (backend_tls_wanted(s, tls)) /* the response may have moved: its head again */
        return start_backend_tls(
            s, evbuffer_pullup(mr_conn_input(s->client), MR_PKT_HEADER + 32) + MR_PKT_HEADER, tls);
    if (tls)
        set_tls_caps(s, false);
    return true;
}
