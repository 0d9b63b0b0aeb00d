/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/prelude.c - a statement the proxy sends on the session's backend
 * connection ahead of the client's own, whose answer the client never sees:
 * a feature's (the mr_fsession_ops prelude op, feature/feature.h: a
 * claim's SET TRANSACTION ISOLATION LEVEL READ COMMITTED, the SET of the
 * user variables a prepared memory-mode point read adds before each of its
 * COM_STMT_EXECUTEs), or the pool's (below).
 *
 * With pool = transaction, a COM_STMT_PREPARE is a prelude too: a statement
 * of the session prepared on a connection that lacks it
 * (session/pool_stmt.c). Its answer is a whole prepare response
 * (prepare-OK, parameter and column definitions, EOFs), read to its end.
 *
 * Runs on the session's worker thread. A prelude goes out right before
 * the client's command, so its answer (one OK or ERR packet, or a prepare
 * response) comes ahead of the response the backend sends; ss_pump_backend
 * hands each here first.
 */
#include <string.h>

#include "myrewrite/base/log.h"
#include "myrewrite/proto/stmt_rewrite.h"
#include "session/session_impl.h"

/* Sends text ahead of the command in flight; what it is for goes into the
 * log should the server refuse it. */
bool ss_prelude_send(mr_session *s, const char *text, size_t len, const char *what)
{
    if (s->prelude_pending >= SS_PRELUDES_MAX)
        return false;
    mr_buf out;
    mr_buf_init(&out);
    ss_command_build(s, &out, MR_COM_QUERY, text, len, true);
    bool sent = !out.failed;
    if (sent) {
        mr_conn_write(s->backend, out.data, out.len);
        mr_conn_z_command(s->backend); /* the statement after it is a command of its own */
        s->prelude_prepare[s->prelude_pending] = false;
        s->prelude_what[s->prelude_pending++] = what;
    }
    mr_buf_free(&out);
    return sent;
}

bool ss_prelude_command(mr_session *s, uint8_t cmd, const char *data, size_t len, const char *what)
{
    if (s->prelude_pending >= SS_PRELUDES_MAX)
        return false;
    uint8_t hdr[MR_PKT_HEADER + 1] = {(uint8_t)(len + 1), (uint8_t)((len + 1) >> 8),
                                      (uint8_t)((len + 1) >> 16), 0, cmd};
    mr_conn_write(s->backend, hdr, sizeof hdr);
    if (len)
        mr_conn_write(s->backend, data, len);
    mr_conn_z_command(s->backend);
    s->prelude_prepare[s->prelude_pending] = false;
    s->prelude_what[s->prelude_pending++] = what;
    return true;
}

bool ss_prelude_prepare(mr_session *s, const char *text, size_t len)
{
    if (s->prelude_pending >= SS_PRELUDES_MAX)
        return false;
    mr_buf out;
    mr_buf_init(&out);
    mr_stmt_prepare_build(&out, text, len);
    bool sent = !out.failed;
    if (sent) {
        mr_conn_write(s->backend, out.data, out.len);
        mr_conn_z_command(s->backend);
        s->prelude_prepare[s->prelude_pending] = true;
        s->prelude_what[s->prelude_pending++] = "COM_STMT_PREPARE (a statement prepared again)";
    }
    mr_buf_free(&out);
    return sent;
}

static void prelude_done(mr_session *s)
{
    s->prelude_pending--;
    memmove(s->prelude_what, s->prelude_what + 1, s->prelude_pending * sizeof s->prelude_what[0]);
    memmove(s->prelude_prepare, s->prelude_prepare + 1,
            s->prelude_pending * sizeof s->prelude_prepare[0]);
}

/* A prepare response, packet by packet (each read whole: definitions are
 * small) until its end. */
static int take_prepare(mr_session *s, struct evbuffer *in)
{
    for (;;) {
        uint8_t hdr[MR_PKT_HEADER];
        if (evbuffer_copyout(in, hdr, sizeof hdr) < (ev_ssize_t)sizeof hdr)
            return 0;
        mr_pkt_header h;
        mr_pkt_header_read(hdr, sizeof hdr, &h);
        size_t total = MR_PKT_HEADER + (size_t)h.len;
        if (h.len > 65536) {
            mr_warn(s->id, "backend answered the proxy's %s with a packet of %u bytes",
                    s->prelude_what[0], (unsigned)h.len);
            ss_close_after_flush(s, MR_CLOSE_MALFORMED, "malformed response from backend");
            return -1;
        }
        if (evbuffer_get_length(in) < total)
            return 0;
        uint8_t *p = evbuffer_pullup(in, (ev_ssize_t)total) + MR_PKT_HEADER;
        int r = ss_pstmt_prelude_packet(s, p, h.len);
        mr_stat_add(&s->w->stats.bytes_from_backend, total);
        evbuffer_drain(in, total);
        if (r == MR_TRACK_MALFORMED || r == MR_TRACK_CLIENT_NEXT) {
            mr_warn(s->id, "backend's answer to the proxy's %s does not fit a prepare response",
                    s->prelude_what[0]);
            ss_close_after_flush(s, MR_CLOSE_MALFORMED, "malformed response from backend");
            return -1;
        }
        if (r == MR_TRACK_DONE) {
            prelude_done(s);
            return 1;
        }
    }
}

int ss_prelude_take(mr_session *s, struct evbuffer *in)
{
    if (s->prelude_prepare[0])
        return take_prepare(s, in);
    uint8_t hdr[MR_PKT_HEADER + 1];
    if (evbuffer_copyout(in, hdr, sizeof hdr) < (ev_ssize_t)sizeof hdr)
        return 0;
    mr_pkt_header h;
    mr_pkt_header_read(hdr, sizeof hdr, &h);
    size_t total = MR_PKT_HEADER + (size_t)h.len;
    const char *what = s->prelude_what[0];
    if (h.len == 0 || h.len > 65536 || (hdr[MR_PKT_HEADER] != 0x00 && hdr[MR_PKT_HEADER] != 0xff)) {
        mr_warn(s->id, "backend answered the proxy's %s with neither OK nor ERR", what);
        ss_close_after_flush(s, MR_CLOSE_MALFORMED, "malformed response from backend");
        return -1;
    }
    if (evbuffer_get_length(in) < total)
        return 0;
    uint8_t *p = evbuffer_pullup(in, (ev_ssize_t)total) + MR_PKT_HEADER;
    mr_err err;
    if (p[0] == 0xff && mr_err_parse(p, h.len, &err) == MR_OK)
        mr_warn(s->id, "refused (%u %.*s): %s", err.code, (int)err.msg_len, err.msg, what);
    if (p[0] == 0xff && s->srv)
        s->srv->broken = true; /* a pooled connection whose state is not known: not lent again */
    const uint8_t *state;
    size_t n;
    if (p[0] == 0x00 && s->srv &&
        mr_ok_session_state(p, h.len, s->backend_caps, &state, &n) == MR_OK && n > 0)
        ss_pool_prelude_state(s, state, n);
    mr_stat_add(&s->w->stats.bytes_from_backend, total);
    evbuffer_drain(in, total);
    prelude_done(s);
    return 1;
}
