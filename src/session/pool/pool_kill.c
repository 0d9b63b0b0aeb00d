/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pool/pool_kill.c - a client's `KILL [QUERY | CONNECTION] <id>` of a
 * session of this proxy, under `pool = transaction`.
 *
 * A session shows the client one id for its life, the thread id of its
 * login's server connection (the handshake's), while its statements run on
 * whatever server connection it borrowed. A KILL whose number is a live
 * session's id (any worker's: the SHOW CLIENTS registries are searched
 * under their locks) is taken here:
 *   - the session holds a server connection: the KILL goes to the server
 *     on the killer's own borrowed connection with that connection's
 *     thread id instead (the server checks the killer's privileges), and
 *     the target does not give that connection back until the KILL's
 *     answer came (its slot's kill_holds): a KILL never reaches another
 *     session's work on it;
 *   - it holds none: KILL QUERY is answered OK (a command of the session
 *     waiting for a server connection gets ERR 1317 instead of running),
 *     and KILL CONNECTION ends the session on its own worker (its client
 *     sees the connection close, as when the server kills an idle
 *     connection) and is answered OK; a killer of another user gets the
 *     server's ERR 1095.
 * Any other number goes to the server unchanged.
 *
 * The killer and the target meet in the target's slot: the killer adds a
 * hold and then reads backend_id, the target clears backend_id and then
 * reads the holds (both sequentially consistent): either the killer sees
 * no connection, or the target sees the hold and keeps its connection.
 * Runs on the worker threads of the two sessions.
 */
#include <stdio.h>
#include <string.h>

#include "myrewrite/base/log.h"
#include "myrewrite/pool/hints.h"
#include "myrewrite/pool/kill.h"
#include "session/core/session_impl.h"

#define ER_KILL_DENIED 1095 /* ER_KILL_DENIED_ERROR: "You are not owner of thread %lld" */
#define ER_QUERY_INTERRUPTED 1317

/* What the killer learns of the target in its slot, under its registry's lock. */
typedef struct kill_find {
    uint32_t tid;     /* the client's number */
    const char *user; /* the killer's user */
    bool connection;  /* KILL CONNECTION */
    uint64_t session; /* the target */
    uint32_t backend; /* the thread id of its server connection (0: none now) */
    bool owner;       /* the same user: the server's own check of a KILL */
} kill_find;

static bool grab(mr_client_slot *slot, void *arg)
{
    kill_find *f = arg;
    uint32_t id = atomic_load_explicit(&slot->client_thread_id, memory_order_relaxed);
    if (!id || id != f->tid) /* 0: a session still logging in has no id yet */
        return false;
    f->session = slot->id;
    f->owner = strcmp(slot->user, f->user) == 0;
    atomic_fetch_add(&slot->kill_holds, 1); /* then the read: see ss_pool_kill_holds */
    f->backend = atomic_load(&slot->backend_id);
    if (!f->backend) {
        atomic_fetch_sub(&slot->kill_holds, 1); /* nothing to hold */
        if (f->owner) /* its worker acts on it: see mr_session_kill_check */
            atomic_store(f->connection ? &slot->kill_close : &slot->kill_query, true);
    }
    return true;
}

static bool release(mr_client_slot *slot, void *arg)
{
    if (slot->id != *(const uint64_t *)arg)
        return false;
    atomic_fetch_sub(&slot->kill_holds, 1);
    return true;
}

/* The target holds a server connection: the KILL goes out with its thread
 * id, and the hold lasts until the answer (ss_pool_kill_done). */
static stmt_verdict send_kill(mr_session *s, const char *sql, size_t len, const mr_pool_kill *k,
                              const kill_find *f, unsigned worker)
{
    mr_debug(s->id, "KILL %s %u is session %llu's: sent for its server connection %u",
             k->connection ? "CONNECTION" : "QUERY", k->id, (unsigned long long)f->session,
             f->backend);
    s->kill_target = f->session;
    s->kill_worker = worker;
    mr_buf b;
    mr_buf_init(&b);
    mr_pool_kill_rewrite(sql, len, k, f->backend, &b);
    stmt_verdict v = STMT_RELAY;
    if (b.failed) {
        ss_send_err(s, 1, MR_ER_OUT_OF_MEMORY, "HY001", "myrewrite is out of memory");
        ss_close_after_flush(s, MR_CLOSE_MALFORMED, "out of memory");
        v = STMT_CLOSED;
    } else if (!ss_send_text(s, MR_COM_QUERY, b.data, b.len)) {
        v = STMT_CLOSED;
    }
    mr_buf_free(&b);
    if (v == STMT_CLOSED)
        ss_pool_kill_done(s);
    return v;
}

/* The target holds no server connection: the proxy answers. */
static stmt_verdict answer(mr_session *s, const mr_pool_kill *k, const kill_find *f)
{
    if (!f->owner) {
        char msg[64];
        snprintf(msg, sizeof msg, "You are not owner of thread %u", k->id);
        ss_send_err(s, 1, ER_KILL_DENIED, "HY000", msg);
    } else {
        mr_debug(s->id, "KILL %s %u is session %llu's, which runs nothing: %s",
                 k->connection ? "CONNECTION" : "QUERY", k->id, (unsigned long long)f->session,
                 k->connection ? "it ends" : "answered OK");
        s->fs.ops->send_ok(&s->fs, 0, 0);
    }
    s->from_client.discard = true;
    s->digest = NULL;
    return ALIVE(s) ? STMT_ANSWERED : STMT_CLOSED;
}

/* A number that is no live session's but one of the pool's server
 * connections (a session that ended: its login's connection serves others
 * now) is not relayed: the server would kill whatever runs on it. The
 * answer is what the server gives for a thread it does not have. */
static bool unknown_thread(mr_session *s, mr_proxy *p, const mr_pool_kill *k, stmt_verdict *v)
{
    unsigned wi = 0;
    while (wi < p->nworkers &&
           !(p->workers[wi].pool && mr_pool_holds_thread(p->workers[wi].pool, k->id)))
        wi++;
    if (wi == p->nworkers)
        return false;
    char msg[64];
    snprintf(msg, sizeof msg, "Unknown thread id: %u", k->id);
    ss_send_err(s, 1, 1094, "HY000", msg);
    s->from_client.discard = true;
    s->digest = NULL;
    *v = ALIVE(s) ? STMT_ANSWERED : STMT_CLOSED;
    return true;
}

bool ss_pool_kill(mr_session *s, uint8_t cmd, const char *sql, size_t len, unsigned lex_flags,
                  stmt_verdict *v)
{
    mr_pool_kill k;
    if (!s->w->pool || !s->srv || cmd != MR_COM_QUERY)
        return false;
    /* KILL CONNECTION_ID(): the session's own id, as it reads everywhere */
    mr_buf own;
    mr_buf_init(&own);
    bool read =
        mr_pool_own_connection_id(sql, len, lex_flags, s->client_thread_id, &own) && !own.failed
            ? mr_pool_kill_read((const char *)own.data, own.len, lex_flags, &k)
            : mr_pool_kill_read(sql, len, lex_flags, &k);
    mr_buf_free(&own);
    if (!read)
        return false;
    mr_proxy *p = s->w->proxy;
    kill_find f = {.tid = k.id, .user = s->user, .connection = k.connection};
    unsigned wi = 0;
    while (wi < p->nworkers && !mr_client_find(&p->workers[wi].clients, grab, &f))
        wi++;
    if (wi == p->nworkers)
        return unknown_thread(s, p, &k, v); /* else the server answers, as direct */
    if (f.backend) {
        *v = send_kill(s, sql, len, &k, &f, wi);
        return true;
    }
    /* the target may have seen the hold taken and given back just now, and
     * ends on its own worker: either way its worker looks */
    mr_worker_signal(&p->workers[wi], MR_WORKER_MSG_KILL);
    *v = answer(s, &k, &f);
    return true;
}

bool ss_pool_process_kill(mr_session *s, const uint8_t *p, uint32_t len, stmt_verdict *v)
{
    if (!s->w->pool || len != 5) /* COM_PROCESS_KILL is its byte and a 4-byte id */
        return false;
    char text[24];
    int n = snprintf(text, sizeof text, "KILL %u", ss_stmt_id(p)); /* p[1..4], as a statement id */
    return ss_pool_kill(s, MR_COM_QUERY, text, (size_t)n, 0, v);
}

void ss_pool_kill_done(mr_session *s)
{
    if (!s->kill_target)
        return;
    mr_worker *tw = &s->w->proxy->workers[s->kill_worker];
    if (mr_client_find(&tw->clients, release, &s->kill_target))
        mr_worker_signal(tw, MR_WORKER_MSG_KILL); /* it may give its connection back now */
    s->kill_target = 0;
}

/* A KILL QUERY found the session holding no server connection: a command
 * of it waiting for one is the statement it meant (direct, it would be
 * running), and is answered ERR 1317 instead of run. */
static void interrupt_wait(mr_session *s)
{
    uint8_t hdr[MR_PKT_HEADER];
    mr_pkt_header h;
    if (!s->pwait || s->state != SS_IDLE || mr_conn_input_length(s->client) < sizeof hdr)
        return; /* nothing waits: the KILL met nothing running, as its OK said */
    mr_pool_wait_cancel(s->pwait);
    s->pwait = NULL;
    evbuffer_copyout(mr_conn_input(s->client), hdr, sizeof hdr);
    mr_pkt_header_read(hdr, sizeof hdr, &h);
    mr_debug(s->id, "pool: a KILL QUERY interrupted the command waiting for a connection");
    ss_send_err(s, 1, ER_QUERY_INTERRUPTED, "70100", "Query execution was interrupted");
    ss_pool_drop_command(s, &h);
    s->from_client.blocked = false; /* paused while it waited */
    mr_conn_read_enable(s->client, true);
    ss_up.resume(s);
}

void mr_session_kill_check(mr_session *s)
{
    if (!ALIVE(s))
        return;
    if (atomic_exchange(&s->slot.kill_close, false)) {
        ss_close(s, MR_CLOSE_BACKEND_LOST, "ended by KILL CONNECTION from another session");
        return;
    }
    if (atomic_exchange(&s->slot.kill_query, false)) {
        interrupt_wait(s);
        if (!ALIVE(s))
            return;
    }
    if (s->srv && s->state == SS_IDLE && !s->from_client.remaining && !s->from_client.continuation)
        ss_pool_unit_end(s); /* a hold let go: the connection may go back */
}
