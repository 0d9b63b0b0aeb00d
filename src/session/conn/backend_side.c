/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/conn/backend_side.c - the backend side of a session: the greeting (masked
 * before the client sees it), then every backend packet, classified by the
 * tracker and relayed to the client in batches, up to the end of each
 * response. Runs on the session's worker thread.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "myrewrite/base/log.h"
#include "myrewrite/net/backend_addr.h"
#include "myrewrite/net/tls.h"
#include "myrewrite/proto/server_version.h"
#include "myrewrite/schema/cache.h"
#include "myrewrite/sql/charset_guard.h"
#include "session/core/session_impl.h"

/* The guard of sql/charset_guard.h follows a character set change. An unsafe
 * one is taken even when the response ended in an error (a multi-statement
 * text may have applied it before failing): reading a session as unsafe
 * only costs it its rewrites. */
static void apply_charset(mr_session *s, bool ok)
{
    if (!s->charset_pending || (!ok && !s->pending_charset))
        return;
    if (s->pending_charset != s->charset_unsafe)
        mr_info(s->id,
                s->pending_charset ? "client character set is now %s: statements are "
                                     "relayed without rewrites"
                                   : "client character set is now%s one the rules "
                                     "can read: rewrites apply again",
                s->pending_charset ? s->pending_charset : "");
    s->charset_unsafe = s->pending_charset;
}

/* A schema or user change takes effect only once the server accepted it. */
static void apply_pending(mr_session *s, bool ok)
{
    apply_charset(s, ok);
    s->charset_pending = false;
    if (ok && s->schema_pending)
        memcpy(s->schema, s->pending_schema, sizeof(s->schema));
    if (ok && s->user_pending)
        memcpy(s->user, s->pending_user, sizeof(s->user));
    if (ok && (s->schema_pending || s->user_pending))
        mr_client_set_names(&s->w->clients, &s->slot, s->user, s->schema);
    s->schema_pending = s->user_pending = false;
}

static void response_done(mr_session *s)
{
    bool ok = !s->tracker.ended_with_err;
    mr_stat_add(&s->w->stats.commands, 1);
    apply_pending(s, ok);
    ss_hooks_response_end(s, true);
    if (s->command == MR_COM_STMT_PREPARE) {
        ss_prepared_done(s, ok, s->tracker.stmt_id);
    } else if (ok && (s->command == MR_COM_RESET_CONNECTION || s->command == MR_COM_CHANGE_USER)) {
        ss_hooks_prepared_reset(s); /* the server dropped its prepared statements */
        ss_prepared_forget_all(s);
        ss_pstmt_forget(s);
        memset(&s->track, 0, sizeof s->track); /* and its session state: nothing reported holds */
    }
    if (ok && s->command == MR_COM_RESET_CONNECTION && !s->charset_unsafe)
        s->charset_unsafe = s->server_charset_unsafe; /* the server's default may be back */
    mr_schema_cache_ddl_end(s->ddl_hold);             /* the server is done with the DDL */
    s->ddl_hold = 0;
    if (s->digest) {
        mr_digest_stats_record(s->digest, (mr_mono_ns() - s->command_start_ns) / 1000);
        s->digest = NULL;
    }
    ss_set_state(s, SS_IDLE);
    if (s->srv) {
        ss_pool_kill_done(s); /* a KILL's answer: its target may give its connection back */
        ss_pstmt_response_done(s, ok); /* what a prepared statement holds */
        ss_pool_response_done(s, ok);  /* pool = transaction: the unit may end here */
    }
    if (s->w->draining) {
        ss_close(s, MR_CLOSE_SHUTDOWN, "proxy shutting down");
        return;
    }
    ss_up.resume(s); /* a command may already be waiting */
}

static void auth_done(mr_session *s)
{
    if (s->tracker.ended_with_err) {
        ss_close_after_flush(s, MR_CLOSE_AUTH_FAILED, "backend refused authentication");
        return;
    }
    mr_conn_set_timeout(s->client, NULL);
    /* the OK went out plain; all that follows either way is in frames */
    size_t limit = cfg(s)->relay_buffer;
    if ((s->client_compress &&
         !mr_conn_start_compress(s->client, (mr_zalgo)s->client_zalgo, s->client_zlevel, limit)) ||
        (s->backend_compress && !mr_conn_start_compress(s->backend, MR_ZALGO_ZLIB, 1, limit))) {
        ss_close(s, MR_CLOSE_BACKEND_LOST, "out of memory starting compression");
        return;
    }
    s->authenticated = true;
    s->login_shift = 0; /* commands start at sequence id 0 on both legs */
    apply_pending(s, true);
    if (!ss_pool_logged_in(s)) {
        ss_close(s, MR_CLOSE_BACKEND_LOST, "out of memory joining the pool");
        return;
    }
    mr_debug(s->id, "authenticated; backend thread id %u", s->backend_thread_id);
    ss_set_state(s, SS_IDLE);
    ss_pool_unit_end(s); /* pool = transaction: the login's connection joins the idle ones */
    if (s->w->draining) {
        ss_close(s, MR_CLOSE_SHUTDOWN, "proxy shutting down");
        return;
    }
    ss_up.resume(s);
}

static void greeting_unusable(mr_session *s, const char *why)
{
    ss_send_err(s, 0, MR_ER_BACKEND_UNAVAILABLE, "08S01",
                "backend unavailable: its greeting is not MySQL protocol 10");
    ss_close_after_flush(s, MR_CLOSE_MALFORMED, why);
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
            mr_warn(s->id, "backend refused the connection: %u %.*s", err.code, (int)err.msg_len,
                    err.msg);
        evbuffer_remove_buffer(in, mr_conn_output(s->client), total);
        mr_conn_flush(s->client);
        ss_close_after_flush(s, MR_CLOSE_BACKEND_DOWN,
                             "backend sent an error instead of a greeting");
        return;
    }
    if (mr_greeting_parse(payload, h.len, &g) != MR_OK) {
        greeting_unusable(s, "malformed greeting from backend");
        return;
    }
    /* TLS and compression end at the proxy: offered for the client's leg
     * whatever the backend leg does (zlib as the server would; zstd, which
     * MariaDB does not speak, as `compression` says). */
    uint32_t offer = s->w->proxy->client_tls_on ? MR_CAP_SSL : 0;
    s->compress_offered = (cfg(s)->compression & MR_COMPRESS_ZLIB) && (g.caps & MR_CAP_COMPRESS);
    s->zstd_offered = (cfg(s)->compression & MR_COMPRESS_ZSTD) != 0;
    s->backend_zlib = cfg(s)->backend_compress && (g.caps & MR_CAP_COMPRESS);
    if (s->compress_offered)
        offer |= MR_CAP_COMPRESS;
    if (s->zstd_offered)
        offer |= MR_CAP_ZSTD_COMPRESSION;
    mr_greeting_mask_offer(payload, &g, offer);
    ss_pstmt_greeting(s, payload, &g); /* pool = transaction: no metadata cache */
    s->caps = g.caps & ~(uint32_t)MR_CAP_MASKED;
    s->ext_caps = g.mariadb_ext_caps & MR_MARIADB_EXT_CAP_RELAYED;
    s->backend_offers_tls = (g.caps & MR_CAP_SSL) != 0;
    if (!s->backend_offers_tls && s->w->proxy->backend_tls_mode >= MR_BTLS_REQUIRE) {
        ss_send_err(s, 0, MR_ER_BACKEND_UNAVAILABLE, "08S01",
                    "backend unavailable: it does not offer TLS and backend_tls requires it");
        ss_close_after_flush(s, MR_CLOSE_BACKEND_DOWN, "backend does not offer TLS");
        return;
    }
    s->backend_thread_id = s->client_thread_id = g.thread_id;
    atomic_store_explicit(&s->slot.backend_id, g.thread_id, memory_order_relaxed);
    atomic_store_explicit(&s->slot.client_thread_id, g.thread_id, memory_order_relaxed);
    s->skip_locked = mr_server_has_skip_locked(g.server_version, g.server_version_len);
    s->server_charset_unsafe = mr_charset_unsafe_collation(g.charset);
    s->seq = h.seq;
    s->from_backend.remaining = total; /* ss_pump_backend relays it */
    mr_conn_set_timeout(s->backend, NULL);
    struct timeval tv = {(time_t)(cfg(s)->handshake_timeout_ms / 1000),
                         (suseconds_t)(cfg(s)->handshake_timeout_ms % 1000) * 1000};
    mr_conn_set_timeout(s->client, &tv);
    mr_tracker_begin(&s->tracker, MR_EXPECT_AUTH);
    ss_auth_greeting_sent(s, h.seq);
    ss_set_state(s, SS_AUTH);
}

/* Classifies the head of a backend packet; false means stop pumping. Always
 * inlined, as packet_head is: the pump's loop exists twice (relay_batch),
 * and a call per packet would cost a plain relay more than the pool's tests
 * the second copy saves. */
static inline __attribute__((always_inline)) bool
backend_packet_start(mr_session *s, const uint8_t *p, uint32_t len, uint8_t seq)
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
        mr_debug(s->id, "unsolicited backend packet in state %s", ss_state_name(s->state));
        return true;
    }
    size_t n = len < MR_TRACK_PREFIX ? len : MR_TRACK_PREFIX;
    bool auth = ss_auth_exchange(s);
    if (auth && !ss_auth_server_check(s, p, n, len, seq))
        return false;
    mr_track_result r = mr_tracker_feed(&s->tracker, p, n, len);
    if (auth) /* an auth switch or plugin data asks for the client's answer */
        ss_auth_server_packet(s, seq, r != MR_TRACK_MORE);
    switch (r) {
    case MR_TRACK_MORE: break;
    case MR_TRACK_DONE: f->ends_response = true; break;
    case MR_TRACK_CLIENT_NEXT: ss_set_state(s, SS_INFILE); break;
    case MR_TRACK_MALFORMED:
        mr_warn(s->id, "backend packet does not fit the %s response (first byte 0x%02x, %u bytes)",
                mr_command_name(s->command), n ? p[0] : 0, len);
        ss_close_after_flush(s, MR_CLOSE_MALFORMED, "malformed response from backend");
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

/* The `got` bytes at offset `off` of the input, copied into `buf`, with
 * `pos` left at `off` for the readers that take a position. */
static void copy_head(struct evbuffer *in, struct evbuffer_ptr *pos, size_t off, uint8_t *buf,
                      size_t got)
{
    evbuffer_ptr_set(in, pos, off, EVBUFFER_PTR_SET);
    evbuffer_copyout_from(in, pos, buf, got);
}

/* A packet's head at offset `off`: in place when it lies in the input's first
 * extent (a response read in one go: every packet of it), else copied into
 * `buf`. `first` caches that extent across calls (iov_len 0: not yet peeked);
 * it holds while nothing drains or rearranges the input. */
static inline __attribute__((always_inline)) const uint8_t *
packet_head(struct evbuffer *in, struct evbuffer_iovec *first, size_t off, uint8_t *buf, size_t got)
{
    if (first->iov_len == 0 && evbuffer_peek(in, -1, NULL, first, 1) < 1)
        first->iov_len = 0;
    if (off + got <= first->iov_len)
        return (const uint8_t *)first->iov_base + off;
    struct evbuffer_ptr pos;
    copy_head(in, &pos, off, buf, got);
    return buf;
}

/* A compressed server numbers the packets inside its frames on from its
 * frames' numbering after each flush (mariadbd does); a plain client checks
 * every packet's number. So over a compressed backend leg each packet the
 * client gets is numbered on from the last one either side sent (s->seq),
 * written into the packet at offset `off` of the input in place. */
static uint8_t renumber(mr_session *s, struct evbuffer *in, size_t off)
{
    uint8_t seq = (uint8_t)(s->seq + 1);
    struct evbuffer_ptr pos;
    struct evbuffer_iovec v[MR_PKT_HEADER];
    if (evbuffer_ptr_set(in, &pos, off, EVBUFFER_PTR_SET) != 0)
        return seq;
    int n = evbuffer_peek(in, MR_PKT_HEADER, &pos, v, MR_PKT_HEADER);
    size_t skip = 3; /* the sequence id follows the 3-byte length */
    for (int i = 0; i < n && i < MR_PKT_HEADER; i++) {
        if (skip < v[i].iov_len) {
            ((uint8_t *)v[i].iov_base)[skip] = seq;
            break;
        }
        skip -= v[i].iov_len;
    }
    return seq;
}

/* The backend's input for the pump: in place while its bytes are fresh
 * (net/conn.h: the response of a small read, never in an evbuffer), else
 * the input evbuffer, which `first` then caches the first extent of. */
static struct evbuffer *pump_source(mr_session *s, struct evbuffer_iovec *first, size_t *avail)
{
    const uint8_t *fresh = s->prelude_pending ? NULL : mr_conn_fresh(s->backend, avail);
    if (fresh) {
        first->iov_base = (void *)(uintptr_t)fresh;
        first->iov_len = *avail; /* every packet head lies in it */
        return NULL;
    }
    struct evbuffer *in = mr_conn_input(s->backend);
    *avail = evbuffer_get_length(in);
    first->iov_len = 0;
    return in;
}

/* An OK's session state, the payload at `off` of the input (`in`, or the
 * fresh bytes of `first` when in is NULL), `len` bytes of which `avail`
 * are there. A reported character set becomes the guard's at the
 * response's end, as a SET statement's would; an OK that is not all in the
 * input (or is over 4 KiB) is not read, and the character set is then
 * taken as unknown until one is reported. */
static void read_session_state(mr_session *s, struct evbuffer *in,
                               const struct evbuffer_iovec *first, size_t off, uint32_t len,
                               size_t avail)
{
    uint8_t buf[4096];
    const uint8_t *p = buf, *state;
    size_t n;
    bool cs_before = s->track.charset_client_v.known;
    size_t cs_len = s->track.charset_client_v.len;
    s->track.charset_client_v.known = false;
    if (len > sizeof buf || avail < MR_PKT_HEADER + (size_t)len) {
        s->pending_charset = MR_CHARSET_UNKNOWN;
        s->charset_pending = true;
        if (s->srv)
            ss_pool_pin(s, MR_PIN_UNKNOWN_STATE);
        return;
    }
    if (in) {
        struct evbuffer_ptr pos;
        copy_head(in, &pos, off + MR_PKT_HEADER, buf, len);
    } else {
        p = (const uint8_t *)first->iov_base + off + MR_PKT_HEADER;
    }
    if (mr_ok_session_state(p, len, s->backend_caps, &state, &n) == MR_OK && n > 0) {
        (void)mr_sst_apply(&s->track, state, n); /* what fits is kept */
        ss_pool_ok_state(s, state, n);
    }
    if (!s->track.charset_client_v.known) {
        s->track.charset_client_v.known = cs_before; /* not reported in this OK */
        s->track.charset_client_v.len = cs_len;
        return;
    }
    s->pending_charset =
        mr_charset_unsafe_name(s->track.charset_client, s->track.charset_client_v.len);
    s->charset_pending = true;
}

/* pool = transaction: a packet that may be an OK (0x00, or 0xFE ending a
 * result set) and fits read_session_state's buffer is read whole, so its
 * session state is never lost; a larger one pins its session instead. */
static bool pool_reads_whole(const uint8_t *hp, uint32_t len, size_t avail)
{
    uint8_t first = len ? hp[MR_PKT_HEADER] : 0xff;
    return (first == 0x00 || first == 0xfe) && len <= 4096 && avail < MR_PKT_HEADER + (size_t)len;
}

typedef enum { BATCH_STOP, BATCH_COMPLETE, BATCH_MOVED } batch_end;

/* Relays complete and partial packets from the backend to the client in one
 * batch (one mr_conn_relay: a write straight from the read when the client's
 * output is empty), inspecting each packet's head on the way. Inlined with
 * `pooled` a constant, twice (see ss_pump_backend); says whether the
 * response is complete, or bytes moved (more may be queued), or neither
 * (also when the session stopped). */
static inline __attribute__((always_inline)) batch_end relay_batch(mr_session *s,
                                                                   struct evbuffer *in,
                                                                   struct evbuffer_iovec first,
                                                                   size_t avail, bool pooled)
{
    framing *f = &s->from_backend;
    size_t move = 0;
    struct evbuffer_ptr pos;
    uint8_t head[MR_PKT_HEADER + MR_TRACK_PREFIX];
    bool complete = false;
    bool framed = mr_conn_compressed(s->backend);
    for (;;) {
        if (f->remaining > 0) {
            size_t take = avail - move < f->remaining ? avail - move : (size_t)f->remaining;
            move += take;
            f->remaining -= take;
            if (f->remaining > 0 || (f->ends_response && !f->continuation)) {
                complete = f->remaining == 0;
                break;
            }
            continue;
        }
        if (avail - move < MR_PKT_HEADER || move >= cfg(s)->relay_buffer)
            break;
        size_t got = avail - move < sizeof(head) ? avail - move : sizeof(head);
        bool watched = !f->continuation && s->state == SS_RESPONSE && ss_hooks_response_watched(s);
        bool shifted = s->login_shift && s->state == SS_AUTH;
        if ((watched || shifted || framed) && !in) {
            in = mr_conn_input(s->backend); /* the fresh bytes in: offsets hold */
            first.iov_len = 0;
        }
        const uint8_t *hp = head;
        if (!watched && !shifted) /* nothing rearranges the input: read it in place */
            hp = packet_head(in, &first, move, head, got);
        else
            copy_head(in, &pos, move, head, got);
        mr_pkt_header h;
        mr_pkt_header_read(hp, got, &h);
        if (got < MR_PKT_HEADER + (h.len < MR_TRACK_PREFIX ? h.len : MR_TRACK_PREFIX))
            break;
        if (watched && !ss_hooks_response_packet(s, in, &pos, h.len, avail - move))
            break; /* a hook reads it whole (a watched page's) */
        bool swap_err = false;
        if (pooled && !f->continuation) { /* pool = transaction */
            if (s->pool_view && pool_reads_whole(hp, h.len, avail - move))
                break; /* maybe an OK whose session state the pool reads: wait for all of it */
            swap_err = s->pstmt && s->state == SS_RESPONSE && h.len && hp[MR_PKT_HEADER] == 0xff &&
                       ss_pstmt_err_due(s);
            if (swap_err && avail - move < MR_PKT_HEADER + (size_t)h.len)
                break; /* an ERR the proxy replaces: read whole */
            if (s->pstmt && s->state == SS_RESPONSE && ss_pstmt_answer_due(s)) {
                if (!in)
                    in = mr_conn_input(s->backend); /* the fresh bytes in: offsets hold */
                if (!ss_pstmt_prepare_answer(s, in, move, h.len, avail - move))
                    break;         /* a prepare-OK: the session's id goes in once it is all here */
                first.iov_len = 0; /* the buffer may have been rearranged */
                copy_head(in, &pos, move, head, got);
                hp = head;
                if (!ALIVE(s))
                    return BATCH_STOP;
            }
        }
        if (shifted)
            h.seq = ss_auth_shift_to_client(s, in, move, h.seq);
        else if (framed)
            h.seq = renumber(s, in, move); /* in place: `first` stays valid */
        if (watched || shifted)
            first.iov_len = 0; /* the buffer may have been rearranged */
        mr_stat_add(&s->w->stats.bytes_from_backend, MR_PKT_HEADER + (uint64_t)h.len);
        mr_stat_add(&s->slot.bytes_out, MR_PKT_HEADER + (uint64_t)h.len);
        uint32_t ends = s->tracker.ends;
        if (!backend_packet_start(s, hp + MR_PKT_HEADER, h.len, h.seq))
            return BATCH_STOP;
        bool changed = s->tracker.ends != ends && /* a packet with a status: rare */
                       (s->tracker.status & MR_STATUS_SESSION_STATE_CHANGED) &&
                       (s->backend_caps & MR_CAP_SESSION_TRACK);
        if (changed && s->tracker.end_is_ok && s->state == SS_RESPONSE)
            read_session_state(s, in, &first, move, h.len, avail - move);
        if (f->ends_response && s->state == SS_RESPONSE)
            ss_hooks_response_end(s, false); /* before the client has the end and asks */
        if (swap_err) {
            ss_pstmt_replace_err(s, &in, &first, move, h.len, h.seq);
            move = 0; /* what came before it went out, and the prepare's ERR */
            avail = evbuffer_get_length(in);
            f->remaining = 0;
            if (f->ends_response && !f->continuation) {
                complete = true;
                break;
            }
        } else if (changed && pooled && s->pool_view &&
                   ss_pool_view(s, &in, &first, move, h.len, h.seq, avail - move)) {
            move = 0; /* what came before it went out, and its view */
            avail = evbuffer_get_length(in);
            f->remaining = 0;
            if (f->ends_response && !f->continuation) {
                complete = true;
                break;
            }
        }
    }
    if (complete && s->state == SS_RESPONSE) /* published before the client can have the end */
        mr_client_set_state(&s->slot, ss_state_name(SS_IDLE)); /* and ask SHOW CLIENTS */
    mr_conn_relay(s->backend, s->client, move);
    ss_backend_flow(s);
    return complete ? BATCH_COMPLETE : move > 0 ? BATCH_MOVED : BATCH_STOP;
}

/* The batch's loop is compiled twice, for a session over the pool (pool =
 * transaction: the pool reads some packets whole, replaces some) and for
 * one that never borrows, whose copy then has none of the pool's tests:
 * the relay of pool = session costs what it did before the pool. */
void ss_pump_backend(mr_session *s)
{
    size_t avail;
    struct evbuffer_iovec first = {NULL, 0};
    struct evbuffer *in = pump_source(s, &first, &avail);

    while (s->prelude_pending && ALIVE(s)) {
        int took = ss_prelude_take(s, in); /* its answer is the first packet: never relayed */
        if (took <= 0)
            return;
        avail = evbuffer_get_length(in);
        if (!s->prelude_pending && s->state == SS_IDLE) {
            ss_pool_answer_due(s); /* pool = statement: a refusal held back for them */
            if (ALIVE(s))
                ss_pool_unit_end(s); /* the command after them was the proxy's to answer */
            return;
        }
    }
    batch_end b = s->pool_view || s->pstmt ? relay_batch(s, in, first, avail, true)
                                           : relay_batch(s, in, first, avail, false);
    if (b == BATCH_COMPLETE)
        backend_response_complete(s);
    else if (b == BATCH_MOVED && mr_conn_input_length(s->backend) > 0 && !s->from_backend.blocked)
        ss_pump_backend(s); /* stopped at relay_buffer with more queued */
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
    ss_pump_backend(s);
}

static void backend_write_cb(mr_conn *c, void *arg)
{
    mr_session *s = arg;
    (void)c;
    if (s->from_client.blocked)
        ss_up.resume(s); /* it resumes reading once the backlog is relayed */
}

/* The backend ended the connection while the client waits for a command's
 * answer (KILL from another session, a crash, a restart): directly, the
 * client sees its socket close after whatever the server sent, so it gets
 * that here too (a FIN once the relayed bytes are out) and no ERR the server
 * never sent. A driver that cancels a query by KILL on a second connection
 * expects exactly that close. An ERR the server did send has been relayed
 * and ended the response (SS_IDLE). */
static bool server_closed_mid_command(const mr_session *s, bool proxy_gave_up)
{
    return !proxy_gave_up && (s->state == SS_RESPONSE || s->state == SS_INFILE);
}

void ss_backend_failed(mr_session *s, const char *what, bool proxy_gave_up)
{
    char msg[512];
    if (s->srv)
        s->srv->broken = true; /* never lent again */
    if (s->state == SS_CONNECTING || s->state == SS_GREETING) {
        if (s->state == SS_CONNECTING)
            mr_backend_suspect(); /* its address may have changed */
        snprintf(msg, sizeof(msg), "backend unavailable: %s %s", s->w->proxy->backend_name, what);
        ss_send_err(s, 0, MR_ER_BACKEND_UNAVAILABLE, "08S01", msg);
        mr_warn(s->id, "%s", msg);
        ss_close_after_flush(s, MR_CLOSE_BACKEND_DOWN, msg);
        return;
    }
    bool mid_packet = s->from_backend.remaining > 0 || s->from_backend.continuation;
    if (mid_packet) {
        ss_close(s, MR_CLOSE_BACKEND_LOST, what);
        return;
    }
    if (s->state == SS_IDLE) {
        /* what the server said last (KILL CONNECTION_ID()'s ERR 1927, an
         * idle timeout's ERR) still reaches a client that reads slowly */
        ss_close_after_flush(s, MR_CLOSE_BACKEND_LOST, what);
        return;
    }
    snprintf(msg, sizeof(msg), "backend connection lost during %s: %s",
             s->state == SS_AUTH ? "authentication" : mr_command_name(s->command), what);
    if (server_closed_mid_command(s, proxy_gave_up)) {
        ss_close_after_flush(s, MR_CLOSE_BACKEND_LOST, msg);
        return;
    }
    /* The login (the proxy's own exchange with the backend, its TLS), a
     * command the proxy answers itself (SS_WAIT_BG), or the proxy's own
     * backend_read_timeout: the proxy says why. */
    ss_send_err(s, (uint8_t)(s->seq + 1), MR_ER_BACKEND_LOST, "08S01", msg);
    ss_close_after_flush(s, MR_CLOSE_BACKEND_LOST, msg);
}

static void backend_event_cb(mr_conn *c, int what, void *arg)
{
    mr_session *s = arg;
    (void)c;
    if (what & MR_CONN_TLS_READY) {
        mr_debug(s->id, "backend TLS: %s", mr_conn_tls_cipher(c));
        return; /* the HandshakeResponse waiting in its output goes now */
    }
    if (what & MR_CONN_CONNECTED) {
        int one = 1;
        setsockopt(mr_conn_fd(s->backend), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        mr_conn_keepalive(s->backend, cfg(s)->backend_keepalive_ms);
        struct timeval tv = {(time_t)(cfg(s)->connect_timeout_ms / 1000),
                             (suseconds_t)(cfg(s)->connect_timeout_ms % 1000) * 1000};
        mr_conn_set_timeout(s->backend, &tv); /* until the greeting is in */
        mr_conn_read_enable(s->backend, true);
        ss_set_state(s, SS_GREETING);
        return;
    }
    /* Relay whatever arrived before the close (e.g. a final ERR). */
    if (s->state != SS_GREETING && s->state != SS_CONNECTING)
        ss_pump_backend(s);
    if (!ALIVE(s) || !s->backend)
        return;
    char what_s[300];
    bool read_timeout = (what & MR_CONN_TIMEOUT) && s->state == SS_RESPONSE;
    if (read_timeout) /* backend_read_timeout */
        snprintf(what_s, sizeof(what_s),
                 "the backend sent nothing for backend_read_timeout "
                 "(%llu ms)",
                 (unsigned long long)cfg(s)->backend_read_timeout_ms);
    else if (what & MR_CONN_TIMEOUT) /* connecting and the greeting */
        snprintf(what_s, sizeof(what_s), "did not %s within connect_timeout (%llu ms)",
                 s->state == SS_CONNECTING ? "accept the connection" : "send its greeting",
                 (unsigned long long)cfg(s)->connect_timeout_ms);
    else if (what & MR_CONN_ERROR)
        snprintf(what_s, sizeof(what_s), "failed: %s", mr_conn_error_text(s->backend));
    else
        snprintf(what_s, sizeof(what_s), "closed the connection");
    ss_backend_failed(s, what_s, read_timeout);
}

const mr_conn_callbacks ss_backend_callbacks = {backend_read_cb, backend_write_cb,
                                                backend_event_cb};
