/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pool/pool_view.c - what the client of a pooled session sees of the
 * server's OK and EOF packets. The pool's connections negotiate
 * CLIENT_SESSION_TRACK and turn every tracker on (session/pool/pool_side.c), so
 * their OKs carry session state the client may not have asked for: each
 * OK or EOF whose status says the state changed is replaced in the relay
 * by the packet the server would have sent the client directly, by its
 * capabilities and its own session_track_* settings (proto/ok_view.h).
 * Runs on the session's worker thread, inside ss_pump_backend.
 */
#include <pthread.h>
#include <string.h>

#include "myrewrite/proto/ok_view.h"
#include "myrewrite/proto/session_track.h"
#include "session/core/session_impl.h"

/* What a client's own trackers are until it sets one: MariaDB's defaults
 * (global values set otherwise on the server are not read). */
static mr_track_want defaults;
static pthread_once_t defaults_once = PTHREAD_ONCE_INIT;

static void make_defaults(void) { mr_track_want_defaults(&defaults); }

static const mr_track_want *want_of(const mr_session *s)
{
    if (s->want)
        return s->want;
    pthread_once(&defaults_once, make_defaults);
    return &defaults;
}

/* The payload (len bytes at `off` of the input, or of the fresh bytes of
 * `first` when in is NULL) into buf. */
static void payload(struct evbuffer *in, const struct evbuffer_iovec *first, size_t off,
                    uint32_t len, uint8_t *buf)
{
    if (!in) {
        memcpy(buf, (const uint8_t *)first->iov_base + off + MR_PKT_HEADER, len);
        return;
    }
    struct evbuffer_ptr pos;
    evbuffer_ptr_set(in, &pos, off + MR_PKT_HEADER, EVBUFFER_PTR_SET);
    evbuffer_copyout_from(in, &pos, buf, len);
}

/* The client's view of the payload in buf into out: false when it is buf
 * as it is. */
static bool view(const mr_session *s, uint8_t *buf, uint32_t len, bool is_ok, mr_buf *out)
{
    const mr_track_want *w = want_of(s);
    if (!is_ok) {
        if (!mr_eof_for_client(buf, len, s->caps, w))
            return false;
        mr_buf_put(out, buf, len);
        return true;
    }
    bool rewritten = false;
    return mr_ok_for_client(buf, len, s->caps, w, out, &rewritten) == MR_OK && rewritten;
}

bool ss_pool_view(mr_session *s, struct evbuffer **in, struct evbuffer_iovec *first, size_t move,
                  uint32_t len, uint8_t seq, size_t avail)
{
    uint8_t buf[4096];
    if (len > sizeof buf || avail < MR_PKT_HEADER + (size_t)len) {
        ss_pool_pin(s, MR_PIN_UNKNOWN_STATE); /* relayed as it is */
        return false;
    }
    payload(*in, first, move, len, buf);
    mr_buf out;
    mr_buf_init(&out);
    if (!view(s, buf, len, s->tracker.end_is_ok, &out) || out.failed) {
        mr_buf_free(&out);
        return false;
    }
    if (!*in)
        *in = mr_conn_input(s->backend); /* the fresh bytes in: offsets hold */
    first->iov_len = 0;
    mr_conn_relay(s->backend, s->client, move); /* what came before it */
    mr_conn_drain(s->backend, MR_PKT_HEADER + (size_t)len);
    uint8_t hdr[MR_PKT_HEADER] = {(uint8_t)out.len, (uint8_t)(out.len >> 8),
                                  (uint8_t)(out.len >> 16), seq};
    mr_conn_write(s->client, hdr, sizeof hdr);
    mr_conn_write(s->client, out.data, out.len);
    mr_buf_free(&out);
    return true;
}
