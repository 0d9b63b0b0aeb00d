/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/core/session.c - one client connection and its own backend connection:
 * its states, closing and flow control (see session/session.h; its start and its
 * end are in session/pump/life.c, the relay itself in session/conn/backend_side.c
 * and session/pump/client_side.c, the front end's part in session/stmt/statement.c).
 *
 * Runs on its worker's thread; owns both connections, the tracker and the
 * framing state of each direction. Bytes are relayed as they arrive: a
 * packet's head is inspected (first MR_TRACK_PREFIX bytes) and the packet
 * then streams through, so a 1 GB row never sits in memory. When the peer
 * we write to falls behind by relay_buffer bytes, we stop reading from the
 * other side until it catches up.
 */
#include <assert.h>
#include <string.h>

#include "myrewrite/base/log.h"
#include "session/core/session_impl.h"

static const char *const state_names[SS_MAX] = {
    "connecting", "greeting", "auth", "idle", "response", "infile", "waiting", "closing", "closed",
};

const char *ss_state_name(session_state st) { return state_names[st]; }

#define TO(st) (1u << (st))
#define ENDS (TO(SS_CLOSING) | TO(SS_CLOSED)) /* any live state may close */

/* The states each state may go to. A session starts in SS_CONNECTING (and
 * sets it again once its backend connect is under way). */
static const unsigned next_states[SS_MAX] = {
    [SS_CONNECTING] = TO(SS_CONNECTING) | TO(SS_GREETING) | ENDS,
    [SS_GREETING] = TO(SS_AUTH) | ENDS,
    [SS_AUTH] = TO(SS_IDLE) | ENDS,
    [SS_IDLE] = TO(SS_RESPONSE) | TO(SS_WAIT_BG) | ENDS,
    [SS_RESPONSE] = TO(SS_IDLE) | TO(SS_INFILE) | ENDS,
    [SS_INFILE] = TO(SS_RESPONSE) | ENDS,
    [SS_WAIT_BG] = TO(SS_IDLE) | ENDS,
    [SS_CLOSING] = TO(SS_CLOSED),
    [SS_CLOSED] = 0,
};

/* A change the table does not allow is a bug of the proxy: fatal where
 * assertions are on (Debug, the sanitizer builds), else logged and counted
 * (myrewrite_session_state_errors_total) and made anyway, since refusing it
 * would leave the session in a state its code no longer expects. */
/* backend_read_timeout: while a command's answer is awaited, a backend that
 * sends nothing for that long is taken as gone (backend_side.c says so). */
static void time_backend_answer(mr_session *s, session_state to)
{
    uint64_t ms = cfg(s)->backend_read_timeout_ms;
    if (!ms || !s->backend || (to == SS_RESPONSE) == (s->state == SS_RESPONSE))
        return;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    mr_conn_set_read_idle(s->backend, to == SS_RESPONSE ? &tv : NULL);
}

void ss_set_state(mr_session *s, session_state to)
{
    mr_debug(s->id, "state %s -> %s", ss_state_name(s->state), ss_state_name(to));
    if (!(next_states[s->state] & TO(to))) {
        mr_warn(s->id, "session state %s -> %s is not an allowed change", ss_state_name(s->state),
                ss_state_name(to));
        mr_stat_add(&s->w->stats.state_errors, 1);
        assert(!"session state change not in the transition table");
    }
    time_backend_answer(s, to);
    s->state = to;
    mr_client_set_state(&s->slot, ss_state_name(to));
}

mr_session *mr_session_next(mr_session *s) { return s->next; }

ss_upcalls ss_up;

void ss_close(mr_session *s, mr_close_reason why, const char *detail)
{
    mr_log_level lvl =
        (why == MR_CLOSE_CLIENT_QUIT || why == MR_CLOSE_CLIENT_GONE || why == MR_CLOSE_SHUTDOWN)
            ? MR_LOG_DEBUG
            : MR_LOG_INFO;
    if (mr_log_enabled(lvl))
        mr_log(lvl, s->id, "closed (%s) in state %s: %s", mr_close_reason_name(why),
               ss_state_name(s->state), detail);
    mr_stat_add(&s->w->stats.closes[why], 1);
    ss_up.close_backend(s);
    ss_up.free(s);
}

/* Sends whatever is queued for the client (typically an ERR), then closes. */
void ss_close_after_flush(mr_session *s, mr_close_reason why, const char *detail)
{
    if (!ALIVE(s))
        return;
    mr_info(s->id, "closing (%s): %s", mr_close_reason_name(why), detail);
    mr_stat_add(&s->w->stats.closes[why], 1);
    ss_up.close_backend(s);
    ss_set_state(s, SS_CLOSING);
    mr_conn_read_enable(s->client, false);
    if (mr_conn_pending(s->client) == 0) {
        ss_up.free(s);
        return;
    }
    /* the write callback frees the session once the ERR is out */
    struct timeval tv = {5, 0}; /* a client that never reads its ERR */
    mr_conn_set_timeout(s->client, &tv);
}

/* Queues an ERR packet for the client with the given sequence id. */
void ss_send_err(mr_session *s, uint8_t seq, uint16_t code, const char *sqlstate, const char *msg)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_err_build(&b, seq, code, sqlstate, msg);
    if (!b.failed)
        mr_conn_write(s->client, b.data, b.len);
    mr_buf_free(&b);
}

/* A compressed conn is told each time reading goes on: frames it holds
 * beyond what it inflated are then taken even if the socket stays quiet. */
static void set_reading(mr_conn *from, framing *f, bool want)
{
    if (want == f->blocked) {
        f->blocked = !want;
        mr_conn_read_enable(from, want);
    } else if (want && mr_conn_compressed(from)) {
        mr_conn_read_enable(from, true);
    }
}

/* Read from the client only while the backend keeps up and the client's
 * unprocessed input (pipelined commands) stays under relay_buffer. Keeping
 * up is judged by mr_conn_pending, not by the output evbuffer: compressed
 * output moves into frames at each flush, and on io_uring into the send in
 * flight at the end of the turn, so the evbuffer alone is empty while the
 * backend is behind. */
void ss_client_flow(mr_session *s)
{
    if (!ALIVE(s) || !s->backend)
        return;
    size_t limit = cfg(s)->relay_buffer;
    set_reading(s->client, &s->from_client,
                mr_conn_pending(s->backend) < limit && mr_conn_input_length(s->client) < limit);
}

/* Read from the backend only while the client keeps up. */
void ss_backend_flow(mr_session *s)
{
    if (!ALIVE(s) || !s->backend)
        return;
    set_reading(s->backend, &s->from_backend, mr_conn_pending(s->client) < cfg(s)->relay_buffer);
}

/* Copies a user or schema name; names too long for the buffer are left unknown. */
void ss_copy_name(char *dst, size_t cap, const char *src, size_t len, bool *set)
{
    if (!src || len >= cap)
        return;
    memcpy(dst, src, len);
    dst[len] = '\0';
    *set = true;
}

void mr_session_drain(mr_session *s, int force)
{
    if (force)
        ss_close(s, MR_CLOSE_SHUTDOWN, "proxy shutdown timeout reached");
    else if (s->state == SS_IDLE || s->state == SS_CONNECTING || s->state == SS_GREETING)
        ss_close(s, MR_CLOSE_SHUTDOWN, "proxy shutting down");
}
