/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/stmt/hooks.c - runs the features' hooks (feature/feature.h) at the
 * points of a session's commands, and acts on what they ask: relay, send
 * instead, answered here, or wait in SS_WAIT_BG for a background job.
 *
 * The table is session/core/features.c. Each run is one loop over the
 * entries of that short array that have the hook (found once: `has`, and
 * the session's watchers); nothing is allocated per statement (a feature makes its
 * per-session state once, and the packet copy for response hooks is made
 * once per session).
 *
 * Worker thread of the session.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include "myrewrite/base/log.h"
#include "myrewrite/sql/lexer.h"
#include "session/core/session_impl.h"

static mr_session *session_of(mr_fsession *fs)
{
    return (mr_session *)(void *)((char *)fs - offsetof(mr_session, fs));
}

/* ---- what a hook may do ---------------------------------------------------------- */

static void op_send_err(mr_fsession *fs, uint16_t code, const char *sqlstate, const char *msg)
{
    ss_send_err(session_of(fs), 1, code, sqlstate, msg);
}

static void op_send_ok(mr_fsession *fs, uint64_t affected, uint16_t warnings)
{
    mr_session *s = session_of(fs);
    mr_buf ok;
    mr_buf_init(&ok);
    /* the session's own status (autocommit, in transaction), never "more results" */
    mr_ok_build(&ok, 1, affected, 0, (uint16_t)(s->tracker.status & ~MR_STATUS_MORE_RESULTS),
                warnings);
    if (!ok.failed)
        mr_conn_write(s->client, ok.data, ok.len);
    mr_buf_free(&ok);
}

static void op_answer_now(mr_fsession *fs) { mr_session_bg_answered(session_of(fs)); }

static bool op_prelude(mr_fsession *fs, const char *sql, size_t len, const char *what)
{
    return ss_prelude_send(session_of(fs), sql, len, what);
}

static const mr_fsession_ops fs_ops = {op_send_err, op_send_ok, op_answer_now, op_prelude};

/* The entries of ss_features that have each hook run on every command (bit
 * i: ss_features[i]): the table is fixed at build time, so they are found
 * once, and each command visits only the entries that have the hook instead
 * of testing every entry's pointer. */
static struct {
    uint32_t command, wants_whole, response_end, command_done;
} has;
static pthread_once_t has_once = PTHREAD_ONCE_INIT;

static void find_hooks(void)
{
    for (unsigned i = 0; i < ss_nfeatures; i++) {
        const mr_feature *f = ss_features[i];
        has.command |= f->command ? 1u << i : 0;
        has.wants_whole |= f->wants_whole ? 1u << i : 0;
        has.response_end |= f->response_end ? 1u << i : 0;
        has.command_done |= f->command_done ? 1u << i : 0;
    }
}

/* The index of the lowest bit of *left, which it takes off. */
static unsigned next_bit(uint32_t *left)
{
    unsigned i = (unsigned)__builtin_ctz(*left);
    *left &= *left - 1;
    return i;
}

void ss_hooks_start(mr_session *s)
{
    pthread_once(&has_once, find_hooks);
    mr_worker *w = s->w;
    s->fs = (mr_fsession){
        .id = s->id,
        .shard = w->id,
        .stats = &w->stats,
        .base = w->base,
        .wake = {mr_worker_wake_bg, w},
        .ops = &fs_ops,
    };
    /* the entries that may watch a response, so that each packet asks only them */
    s->watchers = 0;
    for (unsigned i = 0; i < ss_nfeatures; i++)
        if (ss_features[i]->response_wants && ss_features[i]->response_packet)
            s->watchers |= 1u << i;
}

/* Does the feature of the lowest bit of *left want the packet starting now?
 * Takes that bit off; -1 when none is left. */
static int next_watcher(mr_session *s, uint32_t *left, bool *wants)
{
    if (!*left)
        return -1;
    int i = __builtin_ctz(*left);
    *left &= *left - 1;
    *wants = ss_features[i]->response_wants(&s->fs, &s->fstate[i], (int)s->tracker.state);
    return i;
}

void ss_hooks_view(mr_session *s)
{
    mr_fsession *fs = &s->fs;
    fs->user = s->user[0] ? s->user : NULL;
    fs->schema = s->schema[0] ? s->schema : NULL;
    fs->status = s->tracker.status;
    fs->lex_flags = ss_lex_flags(s);
    fs->authenticated = s->authenticated;
    fs->backend_thread_id = s->backend_thread_id;
    fs->own_id = s->client_thread_id;
    fs->pooled = s->pool_view;
    fs->ext_caps = s->ext_caps;
    fs->query_attrs = (s->caps & MR_CAP_QUERY_ATTRIBUTES) != 0;
    fs->rules = s->w->rules->set;
    fs->scratch = s->w->scratch;
    fs->match = &s->w->match;
}

void ss_hooks_ports(mr_session *s, mr_stmt_ctx *ctx)
{
    for (unsigned i = 0; i < ss_nfeatures; i++)
        if (ss_features[i]->ports)
            ss_features[i]->ports(&s->fs, &s->fstate[i], ctx);
}

/* ---- acting on a hook's answer ------------------------------------------------------ */

/* own: its CONNECTION_ID() is the session's already (else it pins). */
static stmt_verdict send_instead(mr_session *s, uint8_t cmd, const uint8_t *text, size_t len,
                                 bool own)
{
    if (!ss_send_text(s, cmd, text, len))
        return STMT_CLOSED;
    if (cmd == MR_COM_QUERY && s->srv) /* what the server runs may pin */
        ss_pool_statement(s, (const char *)text, len, ss_lex_flags(s), own);
    if (cmd == MR_COM_STMT_PREPARE && s->pstmt) /* what the server prepares is prepared again */
        ss_pstmt_text(s, (const char *)text, len);
    mr_stat_add(&s->w->stats.statements_rewritten, 1);
    return STMT_RELAY;
}

stmt_verdict ss_send_instead(mr_session *s, uint8_t cmd, const uint8_t *text, size_t len)
{
    mr_buf own; /* pool = transaction: a rewrite's CONNECTION_ID() is the session's too */
    mr_buf_init(&own);
    bool mine = s->pool_view && ss_pool_own_text(s, cmd, text, len, &own);
    if (mine) {
        text = own.data;
        len = own.len;
    }
    stmt_verdict v = send_instead(s, cmd, text, len, mine);
    mr_buf_free(&own);
    return v;
}

static stmt_verdict act(mr_session *s, mr_hook_action a, uint8_t cmd, const mr_hook_stmt *st)
{
    switch (a) {
    case MR_HOOK_SEND: return st ? ss_send_instead(s, cmd, st->send, st->send_len) : STMT_RELAY;
    case MR_HOOK_ANSWERED:
        s->from_client.discard = true;
        s->digest = NULL;
        s->schema_pending = s->charset_pending = false;
        return ALIVE(s) ? STMT_ANSWERED : STMT_CLOSED;
    case MR_HOOK_WAIT_BG:
        s->from_client.discard = true;
        s->bg_after_rules = st && st->res;
        if (s->bg_after_rules) { /* a job runs the statement in another form */
            if (s->digest)
                mr_stat_add(&s->digest->rewritten, 1);
            mr_stat_add(&s->w->stats.statements_rewritten, 1);
        } else {
            s->digest = NULL;
        }
        ss_set_state(s, SS_WAIT_BG); /* no further command is read until the answer */
        return STMT_WAITING;
    case MR_HOOK_PASS:
    default: return STMT_RELAY;
    }
}

/* A parked command runs the command hooks again. */
static stmt_verdict rerun_command(mr_session *s, uint8_t cmd, const char *p, size_t n)
{
    return ss_hooks_command(s, cmd, (const uint8_t *)p, n, (uint32_t)n);
}

/* A command hook could not take the command yet (MR_HOOK_PARK): it waits
 * for the schema cache as a text statement does (session/stmt/park_stmt.c),
 * or, when it cannot wait, gets the rules' ERR now. The hook counted nothing. */
static stmt_verdict park_command(mr_session *s, uint8_t cmd, const uint8_t *p, size_t n)
{
    const mr_match_result *res = &s->w->match;
    if (ss_park_statement(s, cmd, (const char *)p, n, res, rerun_command))
        return STMT_WAITING;
    mr_stat_add(&s->w->stats.statements_blocked, 1);
    ss_send_err(s, 1, res->err_code, res->sqlstate, res->message);
    return act(s, MR_HOOK_ANSWERED, cmd, NULL);
}

/* ---- the hook points ------------------------------------------------------------------ */

stmt_verdict ss_hooks_command(mr_session *s, uint8_t cmd, const uint8_t *p, size_t n, uint32_t len)
{
    ss_hooks_view(s);
    for (uint32_t left = has.command; left;) {
        unsigned i = next_bit(&left);
        mr_hook_action a = ss_features[i]->command(&s->fs, &s->fstate[i], cmd, p, n, len);
        if (a == MR_HOOK_PARK)
            return park_command(s, cmd, p, n);
        if (a != MR_HOOK_PASS)
            return act(s, a, cmd, NULL);
    }
    return STMT_RELAY;
}

bool ss_hooks_wants_whole(mr_session *s, uint8_t cmd, const uint8_t *head, uint32_t len)
{
    for (uint32_t left = has.wants_whole; left;) {
        unsigned i = next_bit(&left);
        if (ss_features[i]->wants_whole(&s->fs, &s->fstate[i], cmd, head, len))
            return true;
    }
    return false;
}

stmt_verdict ss_hooks_statement(mr_session *s, bool before_rules, mr_hook_stmt *st)
{
    ss_hooks_view(s);
    for (unsigned i = 0; i < ss_nfeatures; i++) {
        const mr_feature *f = ss_features[i];
        mr_hook_action (*hook)(mr_fsession *, void **, mr_hook_stmt *) =
            before_rules ? f->before_rules : f->statement;
        mr_hook_action a = hook ? hook(&s->fs, &s->fstate[i], st) : MR_HOOK_PASS;
        if (a != MR_HOOK_PASS)
            return act(s, a, st->cmd, st);
    }
    return STMT_RELAY;
}

void ss_hooks_verdict(mr_session *s, const mr_match_result *res, void **notes)
{
    for (unsigned i = 0; i < ss_nfeatures; i++)
        if (ss_features[i]->verdict)
            ss_features[i]->verdict(&s->fs, &s->fstate[i], res, notes ? &notes[i] : NULL);
}

void ss_hooks_execute(mr_session *s, void *const *notes)
{
    bool viewed = false; /* the execute comes before the command hooks refresh the view */
    for (unsigned i = 0; i < ss_nfeatures; i++) {
        if (!notes[i] || !ss_features[i]->execute)
            continue;
        if (!viewed)
            ss_hooks_view(s);
        viewed = true;
        ss_features[i]->execute(&s->fs, &s->fstate[i], notes[i]);
    }
}

/* Hands the packet to one feature: whole, or NULL when too large. False
 * when it is not all buffered yet. */
static bool give_packet(mr_session *s, unsigned i, struct evbuffer *in,
                        const struct evbuffer_ptr *pos, uint32_t len, size_t avail)
{
    const mr_feature *f = ss_features[i];
    int ts = (int)s->tracker.state;
    if (len > MR_FEATURE_PACKET_MAX) {
        f->response_packet(&s->fs, &s->fstate[i], ts, NULL, len);
        return true;
    }
    size_t total = MR_PKT_HEADER + (size_t)len;
    if (avail < total)
        return false; /* the rest of the packet comes with a later read */
    if (!s->hook_packet && !(s->hook_packet = malloc(MR_PKT_HEADER + MR_FEATURE_PACKET_MAX))) {
        f->response_packet(&s->fs, &s->fstate[i], ts, NULL, len); /* out of memory */
        return true;
    }
    struct evbuffer_ptr at = *pos;
    evbuffer_copyout_from(in, &at, s->hook_packet, total);
    f->response_packet(&s->fs, &s->fstate[i], ts, s->hook_packet + MR_PKT_HEADER, len);
    return true;
}

bool ss_hooks_response_watched(mr_session *s)
{
    uint32_t left = s->watchers;
    bool wants;
    while (next_watcher(s, &left, &wants) >= 0)
        if (wants)
            return true;
    return false;
}

bool ss_hooks_response_packet(mr_session *s, struct evbuffer *in, const struct evbuffer_ptr *pos,
                              uint32_t len, size_t avail)
{
    uint32_t left = s->watchers;
    bool wants;
    for (int i; (i = next_watcher(s, &left, &wants)) >= 0;)
        if (wants && !give_packet(s, (unsigned)i, in, pos, len, avail))
            return false;
    return true;
}

void ss_hooks_response_end(mr_session *s, bool relayed)
{
    mr_hook_response r = {s->command, !s->tracker.ended_with_err, s->tracker.stmt_id};
    for (uint32_t left = relayed ? has.command_done : has.response_end; left;) {
        unsigned i = next_bit(&left);
        const mr_feature *f = ss_features[i];
        (relayed ? f->command_done : f->response_end)(&s->fs, &s->fstate[i], &r);
    }
}

void ss_hooks_prepared_reset(mr_session *s)
{
    for (unsigned i = 0; i < ss_nfeatures; i++)
        if (ss_features[i]->prepared_reset)
            ss_features[i]->prepared_reset(&s->fs, &s->fstate[i]);
}

void ss_hooks_end(mr_session *s)
{
    ss_hooks_view(s);
    s->fs.end_wait_id = ss_pool_end_wait(s);
    for (unsigned i = 0; i < ss_nfeatures; i++)
        if (ss_features[i]->session_end)
            ss_features[i]->session_end(&s->fs, &s->fstate[i]);
    free(s->hook_packet);
    s->hook_packet = NULL;
}

/* ---- a background job answered ----------------------------------------------------- */

/* A statement the job answered after the rules ends as a relayed one would:
 * counted, its digest's latency, the command_done hooks (a flusher wake). */
static void bg_finish(mr_session *s)
{
    mr_stat_add(&s->w->stats.commands, 1);
    ss_hooks_response_end(s, true);
    if (s->digest) {
        mr_digest_stats_record(s->digest, (mr_mono_ns() - s->command_start_ns) / 1000);
        s->digest = NULL;
    }
}

/* The job gave the statement back: it goes to the server now, on the
 * session's own connection, and the response is relayed (its end counts
 * it, as for any statement). */
static void bg_send(mr_session *s, const mr_hook_stmt *out)
{
    mr_buf b;
    mr_buf_init(&b);
    ss_command_build(s, &b, out->cmd, out->send, out->send_len, true); /* no attributes */
    if (b.failed) {
        mr_buf_free(&b);
        ss_send_err(s, 1, MR_ER_OUT_OF_MEMORY, "HY001", "myrewrite is out of memory");
        ss_set_state(s, SS_IDLE);
        return;
    }
    mr_conn_write(s->backend, b.data, b.len);
    mr_buf_free(&b);
    mr_tracker_begin(&s->tracker, mr_expect_for_command(out->cmd));
    ss_set_state(s, SS_IDLE); /* the command goes on as a relayed one */
    ss_set_state(s, SS_RESPONSE);
}

void mr_session_bg_answered(mr_session *s)
{
    if (s->state != SS_WAIT_BG || s->park)
        return; /* a parked session waits for the background (session/core/park.c) */
    ss_hooks_view(s);
    mr_hook_stmt out = {.cmd = s->command};
    mr_hook_action a = MR_HOOK_PASS;
    for (unsigned i = 0; i < ss_nfeatures && a == MR_HOOK_PASS; i++)
        if (ss_features[i]->bg_answer)
            a = ss_features[i]->bg_answer(&s->fs, &s->fstate[i], &out);
    if (a == MR_HOOK_PASS || !ALIVE(s))
        return;
    if (a == MR_HOOK_SEND && out.send) {
        bg_send(s, &out);
        return;
    }
    if (s->bg_after_rules)
        bg_finish(s);
    ss_set_state(s, SS_IDLE);
    if (s->w->draining) {
        ss_close(s, MR_CLOSE_SHUTDOWN, "proxy shutting down");
        return;
    }
    ss_up.resume(s); /* a command may already be waiting */
}
