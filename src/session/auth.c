/*
 * session/auth.c - the authentication exchanges of a session: the login
 * (greeting, HandshakeResponse, auth switch and plugin rounds) and
 * COM_CHANGE_USER's. The client's HandshakeResponse is checked for what the
 * proxy cannot relay; then only the packets the exchange is waiting for go
 * to the server.
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
 * Runs on the session's worker thread.
 */
#include "myrewrite/sql/charset_guard.h"
#include "myrewrite/base/log.h"
#include "session/session_impl.h"

bool ss_auth_exchange(const mr_session *s)
{
    return s->state == SS_AUTH ||
           (s->state == SS_RESPONSE && s->tracker.expect == MR_EXPECT_AUTH);
}

void ss_auth_server_packet(mr_session *s, uint8_t seq, bool ends)
{
    s->auth_turn = !ends;
    s->auth_seq = (uint8_t)(seq + 1);
}

void ss_auth_client_sent(mr_session *s) { s->auth_turn = false; }

ss_auth_verdict ss_auth_client_packet(mr_session *s, uint8_t seq)
{
    if (s->auth_turn && seq == s->auth_seq)
        return AUTH_RELAY;
    if (!s->auth_turn || (seq == 0 && s->auth_seen_response))
        return AUTH_HOLD; /* a pipelined command, or the server has not asked yet */
    mr_warn(s->id, "client sent a packet with sequence id %u during authentication; the "
            "server waits for %u", seq, s->auth_seq);
    ss_send_err(s, (uint8_t)(seq + 1), MR_ER_PACKETS_OUT_OF_ORDER, "08S01",
                "Got packets out of order: the authentication exchange waits for the client's "
                "answer to the server's last packet");
    ss_close_after_flush(s, MR_CLOSE_MALFORMED, "packet out of order during authentication");
    return AUTH_CLOSED;
}

/* What the proxy cannot relay yet, as the client's ERR message and the log
 * detail; NULL: nothing. */
static const char *unsupported_request(const mr_handshake_response *hr, const char **detail)
{
    if (hr->ssl_request) {
        *detail = "client asked for TLS";
        return "myrewrite does not support TLS between client and proxy yet; connect with TLS "
               "disabled (ssl-mode=DISABLED)";
    }
    if (hr->caps & (MR_CAP_COMPRESS | MR_CAP_ZSTD_COMPRESSION)) {
        *detail = "client asked for compression";
        return "myrewrite does not support protocol compression; connect without compression";
    }
    if (hr->mariadb_ext_caps & MR_MARIADB_CAP_CACHE_METADATA) {
        *detail = "client asked for the metadata cache";
        return "myrewrite does not support MariaDB's result set metadata cache "
               "(MARIADB_CLIENT_CACHE_METADATA) yet; connect without it";
    }
    return NULL;
}

bool ss_auth_check_response(mr_session *s, const uint8_t *p, uint32_t len, uint8_t seq)
{
    mr_handshake_response hr;
    s->auth_seen_response = true;
    if (mr_handshake_response_parse(p, len, &hr) != MR_OK) {
        ss_send_err(s, (uint8_t)(seq + 1), MR_ER_MALFORMED_PACKET, "08S01",
                 "malformed handshake response: myrewrite supports protocol 4.1 clients");
        ss_close_after_flush(s, MR_CLOSE_MALFORMED, "malformed handshake response");
        return false;
    }
    const char *detail, *msg = unsupported_request(&hr, &detail);
    if (msg) {
        ss_send_err(s, (uint8_t)(seq + 1), MR_ER_NOT_SUPPORTED, "08004", msg);
        ss_close_after_flush(s, MR_CLOSE_UNSUPPORTED, detail);
        return false;
    }
    s->caps &= hr.caps;
    ss_copy_name(s->pending_user, sizeof(s->pending_user), hr.user, hr.user_len, &s->user_pending);
    ss_copy_name(s->pending_schema, sizeof(s->pending_schema), hr.db, hr.db_len,
              &s->schema_pending);
    s->pending_charset = mr_charset_unsafe_collation(hr.charset);
    s->charset_pending = true;
    mr_tracker_init(&s->tracker, (s->caps & MR_CAP_DEPRECATE_EOF) != 0);
    mr_tracker_begin(&s->tracker, MR_EXPECT_AUTH);
    return true;
}
