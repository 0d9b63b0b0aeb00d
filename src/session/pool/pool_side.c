/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pool/pool_side.c - a session over the pool (`pool = transaction`): room
 * to log in, borrowing a server connection when a command comes and giving
 * it back at the end of a unit of work, the state replayed on the
 * connection borrowed, and the pins that keep one.
 *
 * A unit of work ends with a response that leaves the session unpinned:
 * outside a transaction (the server's status says so) and with no state
 * the proxy cannot carry to another connection. The connection then goes
 * back with the session's state recorded on it; the next command borrows
 * one (the session's own last when still idle) and the differences go out
 * ahead of it as preludes: COM_RESET_CONNECTION when the connection holds
 * a variable the session never set (the reset restores the login's
 * character set, which `SET x = DEFAULT` would not), one SET of the
 * trackers and the session's variables, and COM_INIT_DB. Runs on the
 * session's worker thread. What the trackers report is read in
 * ok_state.c, the values put into a statement's text in own_values.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/base/log.h"
#include "myrewrite/pool/hints.h"
#include "myrewrite/proto/ok_view.h"
#include "myrewrite/sql/quote.h"
#include "session/core/session_impl.h"

#define TRACKERS                                                                                   \
    "session_track_system_variables='*',session_track_schema=ON,"                                  \
    "session_track_state_change=ON,session_track_transaction_info='CHARACTERISTICS'"
/* After the login: the trackers on, and the character set the login gave
 * (the handshake's, or init_connect's SET NAMES) set to itself, so the
 * trackers report it: it is the session's to carry to other connections,
 * whose own logins may have had another. */
#define LOGIN_PRELUDE                                                                              \
    "SET SESSION " TRACKERS ",character_set_client=@@character_set_client,"                        \
    "character_set_connection=@@character_set_connection,"                                         \
    "character_set_results=@@character_set_results,collation_connection=@@collation_connection"

/* pool = statement: pool = transaction that refuses what its words say pins. */
static bool statement_pool(const mr_session *s) { return strcmp(cfg(s)->pool, "statement") == 0; }

void ss_pool_pin(mr_session *s, mr_pin_reason r)
{
    if (!s->puser || (s->pins & MR_HINT(r)))
        return;
    if (!s->pins && statement_pool(s)) /* only the reply told: kept, as pool = transaction */
        mr_info(s->id,
                "pool = statement: a %s keeps the session on its server connection "
                "(pinned: %s), as pool = transaction would; no word of the statement said so",
                mr_command_name(s->command), mr_pin_reason_name(r));
    mr_debug(s->id, "pool: pinned (%s) by %s", mr_pin_reason_name(r), mr_command_name(s->command));
    mr_pool_pin(s->puser, r, s->pins == 0);
    s->pins |= MR_HINT(r);
}

void ss_pool_unpin(mr_session *s, mr_pin_reason r)
{
    if (!s->puser || !(s->pins & MR_HINT(r)))
        return;
    s->pins &= ~MR_HINT(r);
    mr_debug(s->id, "pool: unpinned (%s)", mr_pin_reason_name(r));
    mr_pool_unpin(s->puser, r, s->pins == 0);
}

static void unpin_all(mr_session *s)
{
    for (unsigned r = 0; r < MR_PIN_REASONS; r++)
        ss_pool_unpin(s, (mr_pin_reason)r);
}

/* ---- logging in ---- */

/* Capabilities that shape only the login (whether it named a schema, sent
 * attributes, its auth plugin's framing, TLS and compression, which the key
 * has apart): two logins of one application differing in them share a pool. */
#define LOGIN_ONLY_CAPS                                                                            \
    (MR_CAP_CONNECT_WITH_DB | MR_CAP_CONNECT_ATTRS | MR_CAP_PLUGIN_AUTH |                          \
     MR_CAP_PLUGIN_AUTH_LENENC | MR_CAP_SSL | MR_CAP_SSL_VERIFY_SERVER_CERT | MR_CAP_COMPRESS |    \
     MR_CAP_ZSTD_COMPRESSION | (1u << 22) /* CAN_HANDLE_EXPIRED_PASSWORDS */ |                     \
     (1u << 31) /* REMEMBER_OPTIONS */)

static void login_room(void *arg, mr_srv *srv, bool timed_out)
{
    mr_session *s = arg;
    (void)srv;
    s->pwait = NULL;
    if (timed_out) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "Too many connections: myrewrite's pool toward the server is full "
                 "(pool_max_connections %" PRIu64 ", all users and workers, every connection in "
                 "use) and none came free within pool_max_wait (%" PRIu64 " ms); see SHOW POOLS",
                 cfg(s)->pool_max_connections ? cfg(s)->pool_max_connections : cfg(s)->pool_size,
                 cfg(s)->pool_max_wait_ms);
        ss_send_err(s, 0, MR_ER_CON_COUNT, "08004", msg);
        ss_close_after_flush(s, MR_CLOSE_BACKEND_DOWN, "no room in the pool to log in");
        return;
    }
    s->pool_login = true;
    ss_up.connect(s);
}

bool ss_pool_may_connect(mr_session *s)
{
    mr_pool *p = s->w->pool;
    if (!p)
        return true;
    if (mr_pool_login_room(p)) {
        s->pool_login = true;
        return true;
    }
    s->pwait = mr_pool_wait_for(p, NULL, NULL, login_room, s);
    if (!s->pwait)
        login_room(s, NULL, true);
    return false;
}

void ss_pool_login_caps(mr_session *s, bool server_tracks, uint8_t charset)
{
    s->login_charset = charset;
    if (!s->w->pool || !server_tracks)
        return;
    uint8_t *p = evbuffer_pullup(mr_conn_input(s->client), MR_PKT_HEADER + 4);
    if (!p)
        return;
    p[MR_PKT_HEADER + 2] |= (uint8_t)(MR_CAP_SESSION_TRACK >> 16);
    s->backend_caps |= MR_CAP_SESSION_TRACK;
    s->pool_view = true;
}

bool ss_pool_logged_in(mr_session *s)
{
    mr_pool *p = s->w->pool;
    if (!p)
        return true;
    if (!s->pool_view) { /* no CLIENT_SESSION_TRACK: its state could not be followed */
        static _Atomic bool said;
        if (!atomic_exchange(&said, true))
            mr_warn(s->id, "pool = transaction: the server does not offer session tracking "
                           "(CLIENT_SESSION_TRACK); its sessions keep their own connections, "
                           "as with pool = session (said once)");
        s->pool_login = false;
        mr_pool_login_done(p, NULL, NULL, 0, s->id); /* its room: the connection is the session's */
        return true;
    }
    mr_pool_key k = {.caps = s->backend_caps & ~LOGIN_ONLY_CAPS,
                     .ext_caps = s->ext_caps,
                     .tls = mr_conn_tls_active(s->backend),
                     .zlib = s->backend_compress};
    memcpy(k.user, s->user, sizeof k.user);
    s->puser = mr_pool_user_get(p, &k);
    s->pool_login = false;
    s->srv =
        mr_pool_login_done(p, s->puser, s->puser ? s->backend : NULL, s->backend_thread_id, s->id);
    if (!s->srv) {
        s->puser = NULL;
        return false;
    }
    mr_pool_session_add(s->puser, 1);
    memcpy(s->srv->state.schema, s->schema, sizeof s->schema);
    if (s->pool_view &&
        ss_prelude_send(s, LOGIN_PRELUDE, sizeof LOGIN_PRELUDE - 1, "SET of the login's state")) {
        s->srv->tracking = true;
        s->learn_login = true;
    }
    return true;
}

/* ---- borrowing ---- */

static bool numeric(const char *v)
{
    const char *c = v + (*v == '-');
    bool digits = false, dot = false;
    for (; *c; c++) {
        if (*c >= '0' && *c <= '9')
            digits = true;
        else if (*c == '.' && !dot)
            dot = true;
        else
            return false;
    }
    return digits;
}

/* One SET of what srv lacks of the session's variables (and the trackers
 * when not in force), as a prelude; srv then holds the session's state. */
static bool replay_vars(mr_session *s, mr_srv *srv)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put(&b, "SET SESSION ", 12);
    size_t empty = b.len;
    if (!srv->tracking)
        mr_buf_put(&b, TRACKERS, sizeof TRACKERS - 1);
    if (srv->last_insert_id != s->last_insert_id) { /* LAST_INSERT_ID() is the session's own */
        char lid[40];
        int n = snprintf(lid, sizeof lid, "%slast_insert_id=%" PRIu64, b.len > empty ? "," : "",
                         s->last_insert_id);
        mr_buf_put(&b, lid, (size_t)n);
        srv->last_insert_id = s->last_insert_id;
    }
    for (unsigned i = 0; i < s->pstate.n; i++) {
        const mr_pool_var *v = &s->pstate.v[i], *has = mr_pool_state_get(&srv->state, v->name);
        if (has && strcmp(has->value, v->value) == 0)
            continue;
        if (b.len > empty)
            mr_buf_put(&b, ",", 1);
        mr_sql_put_ident(&b, v->name);
        mr_buf_put(&b, "=", 1);
        if (!v->value[0] && strncmp(v->name, "character_set_", 14) == 0)
            mr_buf_put(&b, "NULL", 4); /* character_set_results = NULL is reported empty */
        else if (numeric(v->value))
            mr_buf_put(&b, v->value, strlen(v->value));
        else
            mr_sql_put_literal(&b, v->value);
    }
    bool sent = b.len > empty;
    bool ok = !sent || (!b.failed && ss_prelude_send(s, (const char *)b.data, b.len,
                                                     "SET of the session's state"));
    mr_buf_free(&b);
    if (ok && sent) {
        srv->tracking = true;
        ok = mr_pool_state_copy(&srv->state, &s->pstate);
        mr_pool_count(srv->pool, &srv->pool->replays);
    }
    return ok;
}

/* Does srv hold a variable the session never set? Then only a reset
 * gives the session the login's value of it. */
static bool needs_reset(const mr_session *s, const mr_srv *srv)
{
    for (unsigned i = 0; i < srv->state.n; i++)
        if (!mr_pool_state_get(&s->pstate, srv->state.v[i].name))
            return true;
    return false;
}

static bool replay(mr_session *s, mr_srv *srv)
{
    if (needs_reset(s, srv)) {
        if (!ss_prelude_command(s, MR_COM_RESET_CONNECTION, NULL, 0, "COM_RESET_CONNECTION"))
            return false;
        srv->tracking = false;
        mr_pool_state_clear_vars(&srv->state); /* the reset keeps the schema */
        ss_pstmt_srv_reset(srv);               /* and drops the prepared statements */
        srv->last_insert_id = 0;               /* and LAST_INSERT_ID() */
        mr_pool_count(srv->pool, &srv->pool->resets);
    }
    if (!replay_vars(s, srv))
        return false;
    if (strcmp(srv->state.schema, s->schema) != 0) {
        if (!ss_prelude_command(s, MR_COM_INIT_DB, s->schema, strlen(s->schema), "COM_INIT_DB"))
            return false;
        memcpy(srv->state.schema, s->schema, sizeof s->schema);
    }
    return true;
}

static void attach(mr_session *s, mr_srv *srv)
{
    mr_pool_lent(srv, s->id);
    mr_debug(s->id, "pool: borrowed server connection %u", srv->thread_id);
    s->srv = srv;
    s->backend = srv->conn;
    s->backend_thread_id = srv->thread_id;
    s->srv_fresh = true;
    atomic_store_explicit(&s->slot.backend_id, srv->thread_id, memory_order_relaxed);
    memset(&s->from_backend, 0, sizeof s->from_backend);
    mr_conn_set_callbacks(srv->conn, ss_up.backend_callbacks, s);
    mr_conn_read_enable(srv->conn, true);
    if (!replay(s, srv)) {
        srv->broken = true; /* its state is not the session's: never lent again */
        ss_send_err(s, 1, MR_ER_BACKEND_LOST, "08S01",
                    "out of memory replaying the session's state on a pooled connection");
        ss_close_after_flush(s, MR_CLOSE_BACKEND_LOST, "out of memory replaying state");
    }
}

/* The command heading the client's input waited too long: ERR 1040 for
 * it, and its packets are dropped. */
static void refuse_command(mr_session *s)
{
    uint8_t hdr[MR_PKT_HEADER];
    mr_pkt_header h;
    char msg[300];
    evbuffer_copyout(mr_conn_input(s->client), hdr, sizeof hdr);
    mr_pkt_header_read(hdr, sizeof hdr, &h);
    snprintf(msg, sizeof msg,
             "Too many connections: no server connection of myrewrite's pool for user '%s' came "
             "free within pool_max_wait (%" PRIu64 " ms; pool_size %" PRIu64
             "); the command was not run; see SHOW POOLS",
             s->user, cfg(s)->pool_max_wait_ms, cfg(s)->pool_size);
    mr_info(s->id, "%s", msg);
    ss_send_err(s, 1, MR_ER_CON_COUNT, "08004", msg);
    ss_pool_drop_command(s, &h);
}

void ss_pool_drop_command(mr_session *s, const mr_pkt_header *h)
{
    s->from_client.remaining = MR_PKT_HEADER + (uint64_t)h->len;
    s->from_client.continuation = h->len == MR_PKT_MAX_PAYLOAD;
    s->from_client.discard = true;
}

static void unit_ready(void *arg, mr_srv *srv, bool timed_out)
{
    mr_session *s = arg;
    s->pwait = NULL;
    if (srv)
        attach(s, srv);
    else if (timed_out)
        refuse_command(s);
    if (!ALIVE(s))
        return;
    s->from_client.blocked = false;
    mr_conn_read_enable(s->client, true);
    ss_up.resume(s);
}

/* A command packet with no payload has no command byte to wait for: it is
 * malformed, as command_start says of it on a session with a connection. */
static bool empty_command(mr_session *s)
{
    uint8_t hdr[MR_PKT_HEADER];
    if (mr_conn_input_length(s->client) < sizeof hdr)
        return false;
    evbuffer_copyout(mr_conn_input(s->client), hdr, sizeof hdr);
    if (hdr[0] | hdr[1] | hdr[2])
        return false;
    mr_warn(s->id, "malformed command packet: empty payload");
    ss_close_after_flush(s, MR_CLOSE_MALFORMED, "malformed command packet");
    return true;
}

/* The user has no server connection left (closed by the server, by a pinned
 * session's end, by pool_idle_timeout's sweep of another worker's...) and
 * only a login brings one: the session is closed with an ERR that says so,
 * and the driver's reconnect logs in again. */
static void no_connection_left(mr_session *s)
{
    char msg[300];
    snprintf(msg, sizeof msg,
             "myrewrite's pool has no server connection left for user '%s' and opens new ones "
             "only with a client's own login (it holds no password): reconnect",
             s->user);
    mr_info(s->id, "%s", msg);
    ss_send_err(s, 1, MR_ER_BACKEND_LOST, "08S01", msg);
    ss_close_after_flush(s, MR_CLOSE_BACKEND_LOST, "no server connection left in the pool");
}

bool ss_pool_attach(mr_session *s)
{
    if (s->pwait || !s->puser || s->state != SS_IDLE || empty_command(s))
        return false;
    uint8_t head[MR_PKT_HEADER + 1];
    if (mr_conn_input_length(s->client) < sizeof head)
        return false;
    evbuffer_copyout(mr_conn_input(s->client), head, sizeof head);
    if (head[MR_PKT_HEADER] == MR_COM_QUIT) {
        ss_close(s, MR_CLOSE_CLIENT_QUIT, "COM_QUIT");
        return false;
    }
    mr_srv *srv = mr_pool_take(s->puser, s->id, s->schema);
    if (srv) {
        attach(s, srv);
        return ALIVE(s);
    }
    if (mr_pool_user_empty(s->puser)) {
        no_connection_left(s);
        return false;
    }
    mr_debug(s->id, "pool: waiting for a server connection");
    s->pwait = mr_pool_wait_for(s->w->pool, s->puser, s->schema, unit_ready, s);
    if (!s->pwait) {
        refuse_command(s);
        return true; /* the pump drops it */
    }
    s->from_client.blocked = true; /* until a connection comes */
    mr_conn_read_enable(s->client, false);
    return false;
}

/* ---- what a command tells ---- */

/* The client sets its own session_track_* settings: its view of OKs follows
 * them, and the pool's trackers go back on before its next command. A form
 * not read (or the transaction tracker switched, whose first report the
 * proxy cannot rebuild) pins the session. */
static void client_tracking(mr_session *s, const char *sql, size_t len, unsigned lex_flags)
{
    mr_pool_track_set sets[4];
    int n = mr_pool_track_sets(sql, len, lex_flags, sets, 4);
    if (n > 0 && !s->want && (s->want = malloc(sizeof *s->want)))
        mr_track_want_defaults(s->want);
    if (n < 0 || (n > 0 && !s->want)) {
        ss_pool_pin(s, MR_PIN_TRACKING);
        return;
    }
    for (int i = 0; i < n; i++) {
        bool trx = strcasecmp(sets[i].name, "session_track_transaction_info") == 0;
        if (trx || !mr_track_want_set(s->want, sets[i].name, strlen(sets[i].name), sets[i].value,
                                      strlen(sets[i].value)))
            ss_pool_pin(s, MR_PIN_TRACKING);
    }
    s->srv->tracking = false;
}

/* pool = statement: a statement whose words pin (why: MR_HINT bits, the
 * lowest named) is answered with an ERR and not run. */
static void refuse_pinning(mr_session *s, uint32_t why)
{
    char msg[400];
    mr_pin_reason r = (mr_pin_reason)__builtin_ctz(why);
    snprintf(msg, sizeof msg,
             "pool = statement: this statement would keep the session on one server connection "
             "past its end (pin reason %s: a transaction, LOCK TABLES, SET TRANSACTION, a user "
             "variable, a temporary table, GET_LOCK, SQL_CALC_FOUND_ROWS, PREPARE, or a "
             "prepared ROW_COUNT() or FOUND_ROWS()), which "
             "pool = statement does not do; nothing was run. Use pool = transaction (or "
             "pool = session) for such clients",
             mr_pin_reason_name(r));
    mr_debug(s->id, "%s", msg);
    /* The connection was borrowed for this command and its preludes are
     * on their way: answered now, the client could leave before their
     * answers are in, and the connection (its state then unknown) would be
     * closed instead of given back, the user's last perhaps. */
    free(s->answer_due);
    s->answer_due = s->prelude_pending ? strdup(msg) : NULL;
    if (!s->answer_due)
        ss_send_err(s, 1, MR_ER_NOT_SUPPORTED, "42000", msg);
    s->from_client.discard = true;
    s->schema_pending = s->charset_pending = false;
}

/* A prepare reading ROW_COUNT() or FOUND_ROWS(): each execute reads the
 * connection's, so the session keeps the one it prepared on (to its reset;
 * named as a prepared statement's pin). */
static uint32_t prepare_pins(const mr_session *s, const char *sql, size_t len, unsigned lex_flags)
{
    return s->command == MR_COM_STMT_PREPARE && mr_pool_reads_counts(sql, len, lex_flags)
               ? MR_HINT(MR_PIN_PREPARED_SQL)
               : 0;
}

void ss_pool_answer_due(mr_session *s)
{
    char *msg = s->answer_due;
    if (!msg)
        return;
    s->answer_due = NULL;
    ss_send_err(s, 1, MR_ER_NOT_SUPPORTED, "42000", msg);
    free(msg);
}

bool ss_pool_refuses(mr_session *s, const char *sql, size_t len, unsigned lex_flags)
{
    if (!s->srv || !statement_pool(s))
        return false;
    mr_pool_hints h;
    mr_pool_hints_read(sql, len, lex_flags, true, &h);
    uint32_t why =
        h.pins | mr_pool_opens(sql, len, lex_flags) | prepare_pins(s, sql, len, lex_flags);
    if (why)
        refuse_pinning(s, why);
    return why != 0;
}

void ss_pool_statement(mr_session *s, const char *sql, size_t len, unsigned lex_flags, bool own)
{
    if (!s->srv)
        return;
    mr_pool_hints h;
    mr_pool_hints_read(sql, len, lex_flags, own, &h);
    h.pins |= prepare_pins(s, sql, len, lex_flags);
    if (h.tracking)
        client_tracking(s, sql, len, lex_flags);
    s->hint_maybe |= h.maybe; /* the client's text and a rewrite of it: both count */
    s->hint_opaque = s->hint_opaque || h.opaque;
    s->hint_replay_only = s->hint_replay_only && h.replay_only;
    s->hints_read = true;
    for (unsigned r = 0; r < MR_PIN_REASONS; r++)
        if (h.pins & MR_HINT(r))
            ss_pool_pin(s, (mr_pin_reason)r);
    /* FOUND_ROWS() reads the statement right before: the pin lasts one more */
    s->found_rows_ends =
        (s->pins & MR_HINT(MR_PIN_FOUND_ROWS)) && !(h.pins & MR_HINT(MR_PIN_FOUND_ROWS));
}

void ss_pool_command(mr_session *s, uint8_t cmd)
{
    if (!s->srv)
        return;
    s->hint_maybe = 0;
    s->hint_replay_only = true;
    s->hints_read = cmd == MR_COM_INIT_DB; /* a schema change: the tracker names it */
    s->hint_opaque = false;
    /* after a reset (the client's, or its own SET of session_track_*): the
     * trackers on again, and what the reset took that is the session's */
    if (s->srv->tracking || cmd == MR_COM_QUIT)
        return;
    s->srv_fresh = true; /* the prelude's SET is the connection's last statement now */
    if (!replay_vars(s, s->srv))
        s->srv->broken = true;
}

/* ---- giving back ---- */

static void give_back(mr_session *s)
{
    mr_srv *srv = s->srv;
    mr_debug(s->id, "pool: gave back server connection %u", srv->thread_id);
    if (!mr_pool_state_copy(&srv->state, &s->pstate))
        srv->broken = true;
    srv->last_insert_id = s->last_insert_id;
    memcpy(srv->state.schema, s->schema, sizeof s->schema);
    s->srv = NULL;
    s->backend = NULL;
    atomic_store_explicit(&s->slot.backend_id, 0, memory_order_relaxed);
    if (s->from_client.blocked && ALIVE(s)) { /* paused for the backend: reading goes on */
        s->from_client.blocked = false;
        mr_conn_read_enable(s->client, true);
    }
    mr_pool_give_back(srv, s->id);
}

/* What ROW_COUNT() and FOUND_ROWS() give after the statement answered: the
 * last OK's affected rows, -1 after a result set or an error; the rows of
 * the last result set, kept by statements that send none (as mariadbd
 * does). After a reset they are the server's again. */
static void own_counts(mr_session *s, bool ok)
{
    s->srv_fresh = false;
    if (s->command == MR_COM_RESET_CONNECTION || s->command == MR_COM_CHANGE_USER) {
        s->row_count_known = s->found_rows_known = false;
        return;
    }
    if (s->command != MR_COM_QUERY && s->command != MR_COM_STMT_EXECUTE)
        return;
    const mr_tracker *t = &s->tracker;
    s->row_count_known = true;
    s->row_count = !ok || t->rows_last ? -1 : (int64_t)t->last_ok.affected_rows;
    if (t->sets) {
        /* after SQL_CALC_FOUND_ROWS the total, not the rows: the server's (pinned) */
        s->found_rows_known = !(s->pins & MR_HINT(MR_PIN_FOUND_ROWS)) || s->found_rows_ends;
        s->found_rows = t->rows;
    }
}

void ss_pool_response_done(mr_session *s, bool ok)
{
    if (!s->srv)
        return;
    if (ok && (s->command == MR_COM_RESET_CONNECTION || s->command == MR_COM_CHANGE_USER)) {
        unpin_all(s); /* the server dropped the session's state */
        s->last_insert_id = 0;
        free(s->want); /* its trackers are the server's defaults again */
        s->want = NULL;
        mr_pool_state_clear_vars(&s->srv->state);
        s->srv->tracking = false;
        /* a reset gives back the login's character set; a change of user its own
         * (pinned for good: its values are the server's, not replayed) */
        if (s->command == MR_COM_CHANGE_USER)
            mr_pool_state_clear_vars(&s->pstate);
        else if (!mr_pool_state_copy_vars(&s->pstate, &s->login_state))
            ss_pool_pin(s, MR_PIN_UNKNOWN_STATE);
        /* the trackers on again and the login's character set back, now: the
         * connection can then go back with its state known */
        if (s->command == MR_COM_RESET_CONNECTION && !replay_vars(s, s->srv))
            s->srv->broken = true;
        if (s->command == MR_COM_CHANGE_USER)
            ss_pool_pin(s, MR_PIN_CHANGE_USER); /* another key's login: never pooled again */
    } else if (!s->srv->tracking && !replay_vars(s, s->srv)) /* its own SET session_track_* */
        s->srv->broken = true;
    if (ok && s->tracker.last_ok.last_insert_id)
        s->last_insert_id = s->tracker.last_ok.last_insert_id; /* what LAST_INSERT_ID() gives */
    own_counts(s, ok);
    if (s->tracker.status & MR_STATUS_IN_TRANS)
        ss_pool_pin(s, MR_PIN_TRANSACTION);
    else
        ss_pool_unpin(s, MR_PIN_TRANSACTION);
    if (s->found_rows_ends)
        ss_pool_unpin(s, MR_PIN_FOUND_ROWS);
    s->found_rows_ends = false;
    ss_pool_unit_end(s);
}

void ss_pool_unit_end(mr_session *s)
{
    if (!s->srv)
        return;
    if (s->pins || s->prelude_pending || mr_conn_input_length(s->client) >= MR_PKT_HEADER) {
        mr_debug(s->id, "pool: kept (pins 0x%x, preludes %u, input %zu)", s->pins,
                 s->prelude_pending, mr_conn_input_length(s->client));
        return; /* pinned, or a command already waits: the connection stays */
    }
    if (!s->srv->tracking) {
        mr_debug(s->id, "pool: kept (its trackers are off)");
        return; /* reset by the client: its state is the server's defaults, not the
                   session's, until the next command's prelude */
    }
    if (ss_pool_kill_holds(s))
        return; /* session/pool/pool_kill.c */
    give_back(s);
}

/* May the session's connection go back to the pool as the session ends:
 * nothing in flight, nothing of the session's left on it? */
static bool ends_clean(mr_session *s)
{
    return s->state == SS_IDLE && !s->pins && !s->prelude_pending && !s->srv->broken &&
           s->srv->tracking && !ss_pool_kill_holds(s);
}

uint32_t ss_pool_end_wait(mr_session *s)
{
    if (!s->pool_view)
        return s->backend_thread_id; /* its connection is its own, closed with it */
    if (s->srv)
        return ends_clean(s) ? 0 : s->srv->thread_id;
    return s->end_wait_id;
}

void ss_pool_session_end(mr_session *s)
{
    if (s->pwait)
        mr_pool_wait_cancel(s->pwait);
    s->pwait = NULL;
    if (s->pool_login) /* its connection is the session's own until the login ends */
        mr_pool_login_done(s->w->pool, NULL, NULL, 0, s->id);
    s->pool_login = false;
    if (s->srv) {
        if (ends_clean(s)) {
            give_back(s);
        } else {
            mr_srv *srv = s->srv;
            s->end_wait_id = srv->thread_id; /* the work it ran there ends with it */
            s->srv = NULL;
            s->backend = NULL;
            mr_pool_drop(srv); /* what it holds is this session's, or unknown */
        }
    }
    free(s->answer_due);
    s->answer_due = NULL;
    unpin_all(s);
    if (s->puser)
        mr_pool_session_add(s->puser, -1);
    s->puser = NULL;
    mr_pool_state_free(&s->pstate);
    mr_pool_state_free(&s->login_state);
    free(s->want);
    s->want = NULL;
}
