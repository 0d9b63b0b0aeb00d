/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pool/prelude_take.c - the answer to a prelude (session/pool/prelude.c)
 * taken off the backend's input before the client's response: an OK or ERR,
 * whose session state goes to the pool's side (ss_pool_prelude_state), or a
 * whole prepare response, packet by packet to the pool's prepared
 * statements (ss_pstmt_prelude_packet). Runs on the session's worker thread.
 */
#include <string.h>

#include "myrewrite/base/log.h"
#include "session/core/session_impl.h"

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
