/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pool/pool_stmt.c - server-side prepared statements of a session over
 * the pool (pool = transaction), without pinning it: the client knows each
 * statement by an id of the proxy's own (pool/stmt_map.h), and each pooled
 * connection keeps the statements prepared on it (pool/stmt_cache.h, in
 * mr_srv). A COM_STMT_PREPARE goes to the connection borrowed and its
 * prepare-OK reaches the client with the session's id; a statement command
 * names the session's id, and goes to the connection borrowed with that
 * connection's id, the statement prepared there first when it lacks it (a
 * prelude whose answer the proxy reads, session/pool/prelude.c; MariaDB runs the
 * execute that follows in the same write by the id 0xFFFFFFFF), the
 * parameter types the execute relies on and the long data kept put in
 * (pool/stmt_exec.h). What stays on one server statement pins the session
 * (reason `prepared`): a cursor open, long data past pool_long_data_max.
 * Why a statement's identity, not the session, keys a connection's cache,
 * and why RESET and CLOSE go only where a statement is held: the headers of
 * pool/stmt_cache.h and pool/stmt_map.h.
 *
 * Nothing here runs with pool = session (s->puser NULL). Runs on the
 * session's worker thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/base/log.h"
#include "myrewrite/pool/stmt_cache.h"
#include "myrewrite/pool/stmt_exec.h"
#include "myrewrite/pool/stmt_map.h"
#include "myrewrite/proto/stmt_execute.h"
#include "myrewrite/proto/stmt_rewrite.h"
#include "session/core/session_impl.h"

#define ER_UNKNOWN_STMT_HANDLER 1243
#define ER_STMT_HAS_NO_OPEN_CURSOR 1421
#define CURSOR_FLAGS 0x07 /* an execute's CURSOR_TYPE_READ_ONLY, FOR_UPDATE, SCROLLABLE */
/* The status bits of the session rather than of the last answer (in a
 * transaction, autocommit, NO_BACKSLASH_ESCAPES, read-only transaction):
 * what an OK of the proxy's own carries. */
#define SESSION_STATUS 0x2203u

struct ss_pstmt {
    mr_stmt_map map;
    char *text; /* the COM_STMT_PREPARE going out (owned) ... */
    size_t text_len;
    char schema[200];          /* ... under this schema */
    bool answer_due;           /* its answer's first packet comes next */
    uint32_t close_id;         /* a server statement to close at the response's end (0: none) */
    mr_tracker ptrack;         /* the answer to an on-demand prepare (a prelude) ... */
    bool ptrack_on;            /* ... is being read */
    mr_stmt_cached *preparing; /* its entry, whose server id that answer gives */
    mr_stmt_cached *held;      /* held by the command in flight (cursor, reset) */
    uint8_t *prep_err;         /* the ERR that refused an on-demand prepare (owned): the
                                  client's answer in place of its execute's ERR */
    uint32_t prep_err_len;
};

/* The session's statements are the proxy's (pool = transaction, against
 * MariaDB: a statement prepared on demand runs in the same write by the id
 * 0xFFFFFFFF, which MySQL lacks; there a prepare pins the session). */
static bool pooled(const mr_session *s) { return s->puser && s->pstmt_pooled; }

bool ss_pstmt_wants_whole(const mr_session *s, uint8_t cmd)
{
    return pooled(s) && (cmd == MR_COM_STMT_PREPARE || mr_stmt_cmd_names_id(cmd));
}

static struct ss_pstmt *pstmt_of(mr_session *s)
{
    if (!s->pstmt && (s->pstmt = calloc(1, sizeof *s->pstmt)))
        mr_stmt_map_init(&s->pstmt->map, cfg(s)->pool_long_data_max);
    return s->pstmt;
}

static mr_stmt_cache *cache_of(mr_srv *srv, const mr_config *c)
{
    if (!srv->stmts && (srv->stmts = malloc(sizeof *srv->stmts)))
        mr_stmt_cache_init(srv->stmts, c->pool_stmt_cache ? (uint32_t)c->pool_stmt_cache : 1);
    return srv->stmts;
}

/* The session's state that may change how a statement's text is read or
 * what it does (pool/stmt_map.h's parse context): every variable the
 * session set, as replayed on the connections it borrows (sql_mode, the
 * character sets and collations, and whatever else: a variable not named
 * here could change a DDL's defaults). Sessions in the same state share
 * their server statements. */
static void parse_context(const mr_session *s, mr_buf *b)
{
    for (unsigned i = 0; i < s->pstate.n; i++) {
        const mr_pool_var *v = &s->pstate.v[i];
        mr_buf_put(b, v->name, strlen(v->name));
        mr_buf_put(b, "=", 1);
        mr_buf_put(b, v->value, strlen(v->value) + 1); /* its NUL ends it */
    }
}

/* A command of the proxy's own, with no answer, ahead of what follows. */
static void write_command(mr_session *s, const void *p, size_t n)
{
    mr_conn_z_command(s->backend);
    mr_conn_write(s->backend, p, n);
    mr_conn_z_command(s->backend);
}

static void close_on_server(mr_session *s, uint32_t id)
{
    uint8_t pkt[MR_PKT_HEADER + 5] = {5, 0, 0, 0, MR_COM_STMT_CLOSE};
    mr_stmt_id_set(pkt + MR_PKT_HEADER, id);
    write_command(s, pkt, sizeof pkt);
}

static void trim(mr_session *s, mr_stmt_cache *c, const mr_stmt_cached *keep)
{
    uint32_t id;
    while (mr_stmt_cache_trim(c, keep, &id))
        close_on_server(s, id);
}

/* The pin lasts while a statement holds an entry of the connection (its
 * holds are all this session's: it is pinned). */
static void settle_pin(mr_session *s)
{
    const mr_stmt_cache *c = s->srv ? s->srv->stmts : NULL;
    for (const mr_stmt_cached *e = c ? c->newest : NULL; e; e = e->older)
        if (e->holder) {
            ss_pool_pin(s, MR_PIN_PREPARED);
            return;
        }
    ss_pool_unpin(s, MR_PIN_PREPARED);
}

static void unknown_statement(mr_session *s, uint32_t id, const char *where)
{
    char msg[160];
    snprintf(msg, sizeof msg, "Unknown prepared statement handler (%u) given to %s", id, where);
    ss_send_err(s, 1, ER_UNKNOWN_STMT_HANDLER, "HY000", msg);
}

static bool out_of_memory(mr_session *s)
{
    ss_send_err(s, 1, MR_ER_OUT_OF_MEMORY, "HY001", "myrewrite is out of memory");
    s->from_client.discard = true;
    return true;
}

/* MariaDB's metadata cache (MARIADB_CLIENT_CACHE_METADATA) is not offered
 * to the clients of a pool: a server statement leaves out an execute's
 * column definitions when they are the ones it sent last, and with the
 * statement run on several connections (and shared by sessions) the
 * client may never have got those (its binary rows are then read with
 * other types: measured by t_pool_ps, `? + 1` read as a double). */
void ss_pstmt_greeting(mr_session *s, uint8_t *p, mr_greeting *g)
{
    s->pstmt_pooled = s->w->pool && g->mariadb;
    if (!s->w->pool || !g->mariadb || !g->ext_caps_off)
        return;
    g->mariadb_ext_caps &= ~(uint32_t)MR_MARIADB_CAP_CACHE_METADATA;
    uint32_t v = g->mariadb_ext_caps & MR_MARIADB_EXT_CAP_RELAYED;
    for (int i = 0; i < 4; i++)
        p[g->ext_caps_off + (size_t)i] = (uint8_t)(v >> (8 * i));
}

/* ---- COM_STMT_PREPARE from the client ---- */

bool ss_pstmt_prepare(mr_session *s, const uint8_t *p, size_t n, uint32_t len)
{
    if (s->puser && !s->pstmt_pooled)
        ss_pool_pin(s, MR_PIN_PREPARED); /* until the session ends or resets */
    if (!pooled(s))
        return false;
    struct ss_pstmt *ps = pstmt_of(s);
    if (!ps)
        return out_of_memory(s);
    free(ps->text);
    ps->text = NULL;
    ps->answer_due = false;
    if (n < len) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "a COM_STMT_PREPARE of %u bytes is larger than relay_buffer (%llu): with "
                 "pool = transaction myrewrite keeps each statement's text to prepare it again "
                 "on other server connections; raise relay_buffer; nothing was run",
                 (unsigned)len, (unsigned long long)cfg(s)->relay_buffer);
        ss_send_err(s, 1, MR_ER_NOT_SUPPORTED, "42000", msg);
        s->from_client.discard = true;
        return true;
    }
    ss_pstmt_text(s, (const char *)p + 1, len - 1);
    return false;
}

void ss_pstmt_text(mr_session *s, const char *text, size_t len)
{
    struct ss_pstmt *ps = s->pstmt;
    if (!ps)
        return;
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, text, len);
        copy[len] = '\0';
    }
    free(ps->text);
    ps->text = copy;
    ps->text_len = len;
    memcpy(ps->schema, s->schema, sizeof ps->schema);
}

bool ss_pstmt_answer_due(const mr_session *s) { return s->pstmt && s->pstmt->answer_due; }

void ss_pstmt_sent(mr_session *s, uint8_t cmd)
{
    s->pstmt->answer_due = cmd == MR_COM_STMT_PREPARE;
}

bool ss_pstmt_err_due(const mr_session *s) { return s->pstmt->prep_err != NULL; }

/* The execute after a failed on-demand prepare names 0xFFFFFFFF, which the
 * server then does not know (ERR 1243): the client gets the prepare's ERR,
 * what a direct execute of the statement answers (its re-prepare fails the
 * same way). The ERR is `len` bytes at `off` of *in (or of the fresh bytes
 * of first), all there. */
void ss_pstmt_replace_err(mr_session *s, struct evbuffer **in, struct evbuffer_iovec *first,
                          size_t off, uint32_t len, uint8_t seq)
{
    struct ss_pstmt *ps = s->pstmt;
    if (!*in)
        *in = mr_conn_input(s->backend); /* the fresh bytes in: offsets hold */
    first->iov_len = 0;
    mr_conn_relay(s->backend, s->client, off); /* what came before it */
    mr_conn_drain(s->backend, MR_PKT_HEADER + (size_t)len);
    uint32_t n = ps->prep_err_len;
    uint8_t hdr[MR_PKT_HEADER] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), seq};
    mr_conn_write(s->client, hdr, sizeof hdr);
    mr_conn_write(s->client, ps->prep_err, n);
    free(ps->prep_err);
    ps->prep_err = NULL;
}

/* The answer's first packet (payload len bytes at off of in, avail there):
 * a prepare-OK gets the session's id, in place. False: wait for more. */
bool ss_pstmt_prepare_answer(mr_session *s, struct evbuffer *in, size_t off, uint32_t len,
                             size_t avail)
{
    struct ss_pstmt *ps = s->pstmt;
    size_t head = len < 12 ? len : 12;
    if (avail < MR_PKT_HEADER + head)
        return false;
    ps->answer_due = false;
    uint8_t *p =
        evbuffer_pullup(in, (ev_ssize_t)(off + MR_PKT_HEADER + head)) + off + MR_PKT_HEADER;
    mr_prepare_ok ok;
    if (!head || p[0] != 0x00 || mr_prepare_ok_parse(p, head, &ok) != MR_OK) {
        mr_stmt_map_prepare_failed(&ps->map);
        return true;
    }
    mr_buf ctx;
    mr_buf_init(&ctx);
    parse_context(s, &ctx);
    mr_stmt *st = ps->text && !ctx.failed
                      ? mr_stmt_map_add(&ps->map, ps->text, ps->text_len, ps->schema, ctx.data,
                                        ctx.len, ok.params, ok.columns)
                      : NULL;
    mr_buf_free(&ctx);
    mr_stmt_cache *c = cache_of(s->srv, cfg(s));
    if (!st || !c) {
        mr_warn(s->id, "out of memory keeping a prepared statement: the session closes");
        ps->close_id = ok.stmt_id;
        ss_close(s, MR_CLOSE_MALFORMED, "out of memory keeping a prepared statement");
        return true;
    }
    mr_stmt_id_set(p, st->id);
    mr_stmt_cached *e = mr_stmt_cache_find(c, st);
    if (e) { /* the new one replaces it: prepared now, in all of the session's state (a DDL's
                defaults, the database's character set: what no key names), as direct */
        ps->close_id = e->server_id;
        e->server_id = ok.stmt_id;
        mr_stmt_types_drop(&e->types);
    } else if (!mr_stmt_cache_add(c, st, ok.stmt_id)) {
        ps->close_id = ok.stmt_id; /* no room to note it: prepared again when needed */
    }
    return true;
}

/* ---- statements prepared on demand ---- */

/* st prepared on the connection borrowed, as preludes: under its own schema
 * (MariaDB runs a statement in its prepare's), back to the session's. */
static mr_stmt_cached *prepare_here(mr_session *s, struct ss_pstmt *ps, mr_stmt *st,
                                    mr_stmt_cache *c)
{
    bool other = st->schema_len && (strlen(s->schema) != st->schema_len ||
                                    memcmp(s->schema, st->schema, st->schema_len) != 0);
    if (s->prelude_pending + 1 + 2 * other > SS_PRELUDES_MAX)
        return NULL;
    mr_stmt_cached *e = mr_stmt_cache_add(c, st, MR_STMT_ID_LAST);
    if (!e)
        return NULL;
    if (other)
        ss_prelude_command(s, MR_COM_INIT_DB, st->schema, st->schema_len,
                           "COM_INIT_DB (a prepared statement's own schema)");
    if (!ss_prelude_prepare(s, st->text, st->text_len)) {
        mr_stmt_cache_remove(c, e);
        return NULL;
    }
    if (other && s->schema[0])
        ss_prelude_command(s, MR_COM_INIT_DB, s->schema, strlen(s->schema),
                           "COM_INIT_DB (the session's schema again)");
    else if (other)
        s->srv->broken = true; /* no statement unselects a schema: not lent again */
    ps->preparing = e;
    ps->ptrack_on = false;
    return e;
}

int ss_pstmt_prelude_packet(mr_session *s, const uint8_t *p, uint32_t len)
{
    struct ss_pstmt *ps = s->pstmt;
    bool first = !ps->ptrack_on;
    if (first) {
        ps->ptrack = s->tracker; /* the session's negotiated settings */
        mr_tracker_begin(&ps->ptrack, MR_EXPECT_PREPARE);
        ps->ptrack_on = true;
    }
    mr_track_result r =
        mr_tracker_feed(&ps->ptrack, p, len < MR_TRACK_PREFIX ? len : MR_TRACK_PREFIX, len);
    mr_stmt_cached *e = ps->preparing;
    if (first && e) {
        mr_prepare_ok ok;
        mr_err err;
        if (mr_prepare_ok_parse(p, len, &ok) == MR_OK) {
            e->server_id = ok.stmt_id;
        } else {
            if (len && p[0] == 0xff && mr_err_parse(p, len, &err) == MR_OK)
                mr_warn(s->id, "preparing a statement again on a pooled connection: %u %.*s",
                        err.code, (int)err.msg_len, err.msg);
            free(ps->prep_err);
            ps->prep_err = len && p[0] == 0xff ? malloc(len) : NULL;
            ps->prep_err_len = ps->prep_err ? len : 0;
            if (ps->prep_err)
                memcpy(ps->prep_err, p, len);
            if (ps->held == e)
                ps->held = NULL;
            mr_stmt_cache_remove(s->srv->stmts, e); /* its execute fails too */
        }
        ps->preparing = NULL;
    }
    if (r != MR_TRACK_MORE)
        ps->ptrack_on = false;
    return (int)r;
}

/* ---- statement commands from the client ---- */

/* A command larger than relay_buffer goes on as it comes, but for its id:
 * the packet's first bytes are written again with the connection's. */
static void relay_with_id(mr_session *s, const uint8_t *p, uint32_t len, uint32_t id)
{
    uint8_t head[MR_PKT_HEADER + 5] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16), 0,
                                       p[0]};
    mr_stmt_id_set(head + MR_PKT_HEADER, id);
    s->from_client.discard = false; /* the rest goes as it comes */
    mr_conn_drain(s->client, sizeof head);
    s->from_client.remaining -= sizeof head;
    mr_conn_write(s->backend, head, sizeof head);
}

static bool send_rewritten(mr_session *s, const uint8_t *p, size_t n, uint32_t id)
{
    mr_buf out;
    mr_buf_init(&out);
    const char *bad = mr_stmt_cmd_rewrite(&out, p, n, id);
    if (!bad && !out.failed)
        mr_conn_write(s->backend, out.data, out.len);
    mr_buf_free(&out);
    s->from_client.discard = true;
    return bad || out.failed;
}

/* The connection's statement for st: held for it, cached, or prepared now. */
static mr_stmt_cached *entry_for(mr_session *s, struct ss_pstmt *ps, mr_stmt *st, mr_stmt_cache *c)
{
    mr_stmt_cached *e = mr_stmt_cache_held_by(c, st);
    if (!e)
        e = mr_stmt_cache_find(c, st);
    if (!e)
        e = prepare_here(s, ps, st, c);
    if (e)
        trim(s, c, e);
    return e;
}

static bool execute(mr_session *s, struct ss_pstmt *ps, mr_stmt *st, mr_stmt_cached *e,
                    const uint8_t *p, size_t n, uint32_t len)
{
    uint8_t cmd = p[0];
    if (cmd == MR_COM_STMT_EXECUTE && n > 5 && (p[5] & CURSOR_FLAGS)) {
        mr_stmt_cache_hold(e, st); /* a cursor may open */
    }
    if (e->holder == st)
        ps->held = e; /* its cursor or long data: settled at the answer's end */
    if (n < len) {    /* not read whole: goes as it comes if it owes nothing */
        if (st->long_data.len || st->long_data_over || !mr_stmt_types_same(&st->types, &e->types))
            goto too_large;
        relay_with_id(s, p, len, e->server_id);
        return false;
    }
    mr_buf out;
    mr_buf_init(&out);
    const char *bad =
        cmd == MR_COM_STMT_EXECUTE
            ? mr_stmt_exec_for(&out, &ps->map, st, e, p, n,
                               mr_exec_form((s->caps & MR_CAP_QUERY_ATTRIBUTES) != 0, p))
            : mr_stmt_bulk_for(&out, &ps->map, st, e, p, n);
    if (!bad && !out.failed)
        mr_conn_write(s->backend, out.data, out.len);
    bool failed = out.failed;
    mr_buf_free(&out);
    s->from_client.discard = true;
    if (failed)
        return out_of_memory(s);
    if (bad) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "Incorrect arguments to mysqld_stmt_execute: myrewrite cannot send this execute "
                 "to a pooled server connection (%s); nothing was run",
                 bad);
        ss_send_err(s, 1, MR_ER_WRONG_ARGUMENTS, "HY000", msg);
        return true;
    }
    return false;
too_large:;
    char msg[400];
    snprintf(msg, sizeof msg,
             "an execute of %u bytes is larger than relay_buffer (%llu) and needs rewriting for "
             "the pooled server connection (parameter types or long data it relies on); raise "
             "relay_buffer or bind the types in every execute; nothing was run",
             (unsigned)len, (unsigned long long)cfg(s)->relay_buffer);
    ss_send_err(s, 1, MR_ER_NOT_SUPPORTED, "42000", msg);
    s->from_client.discard = true;
    return true;
}

/* Long data past the session's budget: the session is pinned to this
 * connection, which gets the pieces kept and this one. */
static bool long_data_here(mr_session *s, struct ss_pstmt *ps, mr_stmt *st, mr_stmt_cache *c,
                           const uint8_t *p, size_t n, uint32_t len)
{
    mr_stmt_cached *e = mr_stmt_cache_held_by(c, st);
    bool held = e != NULL;
    if (!e && !(e = entry_for(s, ps, st, c)))
        return out_of_memory(s);
    mr_stmt_cache_hold(e, st);
    ss_pool_pin(s, MR_PIN_PREPARED);
    if (!held) {
        mr_buf out;
        mr_buf_init(&out);
        const char *bad = mr_stmt_long_data_build(st, &out, e->server_id);
        if (!bad && !out.failed)
            mr_conn_write(s->backend, out.data, out.len);
        mr_buf_free(&out);
        mr_stmt_long_data_drop(&ps->map, st);
        st->long_data_over = true;
    }
    if (n < len)
        relay_with_id(s, p, len, e->server_id);
    else
        send_rewritten(s, p, n, e->server_id);
    return false;
}

static bool reset(mr_session *s, struct ss_pstmt *ps, mr_stmt *st, mr_stmt_cache *c,
                  const uint8_t *p, size_t n)
{
    mr_stmt_long_data_reset(&ps->map, st);
    mr_stmt_cached *e = mr_stmt_cache_held_by(c, st);
    if (e) { /* a cursor or long data on it: the server resets them */
        ps->held = e;
        send_rewritten(s, p, n, e->server_id);
        return false;
    }
    mr_buf ok; /* nothing of st is on any server: the answer is the proxy's */
    mr_buf_init(&ok);
    mr_ok_build(&ok, 1, 0, 0, (uint16_t)(s->tracker.status & SESSION_STATUS), 0);
    if (!ok.failed)
        mr_conn_write(s->client, ok.data, ok.len);
    mr_buf_free(&ok);
    s->from_client.discard = true;
    return true;
}

static void close_statement(mr_session *s, struct ss_pstmt *ps, mr_stmt *st, mr_stmt_cache *c)
{
    mr_stmt_cached *e;
    while (c && (e = mr_stmt_cache_held_by(c, st))) { /* its cursor or long data goes */
        close_on_server(s, e->server_id);
        if (ps->preparing == e)
            ps->preparing = NULL;
        mr_stmt_cache_remove(c, e);
    }
    mr_stmt_map_close(&ps->map, st);
    s->from_client.discard = true;
    settle_pin(s);
}

bool ss_pstmt_command(mr_session *s, uint8_t cmd, const uint8_t *p, size_t n, uint32_t len)
{
    if (!pooled(s) || !mr_stmt_cmd_names_id(cmd))
        return false;
    if (n < 5) {
        ss_send_err(s, 1, MR_ER_MALFORMED_PACKET, "HY000",
                    "malformed statement command: it names no statement id");
        s->from_client.discard = true;
        return true;
    }
    uint32_t id = mr_stmt_id_get(p);
    struct ss_pstmt *ps = s->pstmt;
    mr_stmt *st = ps ? mr_stmt_map_get(&ps->map, id) : NULL;
    s->from_client.discard = true; /* the proxy sends its own bytes for it */
    if (!st) {
        switch (cmd) {
        case MR_COM_STMT_FETCH: unknown_statement(s, id, "mysqld_stmt_fetch"); return true;
        case MR_COM_STMT_RESET: unknown_statement(s, id, "mysqld_stmt_reset"); return true;
        case MR_COM_STMT_EXECUTE:
        case MR_COM_STMT_BULK_EXECUTE: unknown_statement(s, id, "mysqld_stmt_execute"); return true;
        default: return false; /* no answer either way (long data: the execute fails) */
        }
    }
    mr_stmt_cache *c = cache_of(s->srv, cfg(s));
    if (!c)
        return cmd == MR_COM_STMT_CLOSE ? false : out_of_memory(s);
    mr_stmt_cached *e;
    switch (cmd) {
    case MR_COM_STMT_CLOSE: close_statement(s, ps, st, c); return false;
    case MR_COM_STMT_RESET: return reset(s, ps, st, c, p, n);
    case MR_COM_STMT_FETCH:
        if (!(e = mr_stmt_cache_held_by(c, st))) {
            char msg[120];
            snprintf(msg, sizeof msg, "The statement (%u) has no open cursor", st->id);
            ss_send_err(s, 1, ER_STMT_HAS_NO_OPEN_CURSOR, "HY000", msg);
            return true;
        }
        ps->held = e;
        return send_rewritten(s, p, n, e->server_id) && out_of_memory(s);
    case MR_COM_STMT_SEND_LONG_DATA:
        if (!mr_stmt_cache_held_by(c, st) && n == len && mr_stmt_long_data_add(&ps->map, st, p, n))
            return false; /* kept: sent before the execute, wherever that runs */
        return long_data_here(s, ps, st, c, p, n, len);
    default:
        if (!(e = entry_for(s, ps, st, c)))
            return out_of_memory(s);
        return execute(s, ps, st, e, p, n, len);
    }
}

/* ---- ends ---- */

void ss_pstmt_response_done(mr_session *s, bool ok)
{
    struct ss_pstmt *ps = s->pstmt;
    if (!ps || !s->srv)
        return;
    mr_stmt_cache *c = s->srv->stmts;
    if (ps->close_id)
        close_on_server(s, ps->close_id);
    ps->close_id = 0;
    free(ps->prep_err); /* it refused a prepare for a command with no ERR of its own */
    ps->prep_err = NULL;
    mr_stmt_cached *e = ps->held;
    ps->held = NULL;
    uint16_t st = s->tracker.status;
    bool done; /* nothing of the statement stays on the server statement */
    if (s->command == MR_COM_STMT_FETCH) /* the server closes a cursor read to its end */
        done = ok && (st & MR_STATUS_LAST_ROW_SENT);
    else if (s->command == MR_COM_STMT_RESET)
        done = ok;
    else /* an execute: the long data went with it; a cursor opened, or not */
        done = !ok || !(st & MR_STATUS_CURSOR_EXISTS);
    if (e && done)
        mr_stmt_cache_hold(e, NULL);
    if (s->command == MR_COM_STMT_PREPARE) {
        free(ps->text);
        ps->text = NULL;
    }
    if (c)
        trim(s, c, NULL);
    settle_pin(s);
}

void ss_pstmt_forget(mr_session *s)
{
    if (s->srv && s->srv->stmts)
        mr_stmt_cache_clear(s->srv->stmts); /* the server dropped them all */
    if (!s->pstmt)
        return;
    mr_stmt_map_clear(&s->pstmt->map);
    s->pstmt->held = s->pstmt->preparing = NULL;
}

void ss_pstmt_free(mr_session *s)
{
    if (!s->pstmt)
        return;
    mr_stmt_map_free(&s->pstmt->map);
    free(s->pstmt->text);
    free(s->pstmt->prep_err);
    free(s->pstmt);
    s->pstmt = NULL;
}
