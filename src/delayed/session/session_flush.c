/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/session/session_flush.c - `FLUSH DELAYED [tbl]` sent through the proxy by
 * a client: the flushers run a round now and the client gets OK once it is
 * done (or an ERR saying why not).
 *
 * The worker never waits. The round is a request to the flushers that
 * have a matching table (delayed/flush_request.h): the last job done calls
 * the session's wake (feature/feature.h), which writes to its worker's
 * pipe; the worker then runs the bg_answer hooks of its waiting sessions
 * and this one sends the answer. Meanwhile the session sits in SS_WAIT_BG
 * and reads no further command. After 30 s a timer answers that the flush
 * goes on in the background. A session that ends first lets go of the
 * request, so a job finishing later wakes nobody.
 *
 * Threads: the session's worker.
 */
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "delayed/session/session_impl.h"
#include "myrewrite/base/log.h"
#include "myrewrite/delayed/derive.h"
#include "myrewrite/delayed/flush.h"
#include "myrewrite/delayed/flush_request.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/sql/lexer.h"
#include "myrewrite/sql/token_value.h"

#define FLUSH_WAIT_MS 30000

struct ds_flush {
    mr_dflush_req *req;  /* the flushers' jobs */
    struct event *timer; /* FLUSH_WAIT_MS */
    mr_fsession *fs;     /* whose request it is */
    bool timed_out;      /* the timer fired first */
};

/* ---- reading the statement ---------------------------------------------------- */

/* FLUSH DELAYED [[schema.]tbl] [;]: 1 with schema/table filled (empty
 * when none), 0 when the text is something else, -1 when it starts so but
 * does not read. */
static int read_flush(const char *sql, size_t len, unsigned lex_flags, char *schema, char *table,
                      size_t cap)
{
    sql_lexer lx;
    sql_token t[6];
    size_t n = 0;
    sql_lexer_init(&lx, sql, len, lex_flags | SQL_LEX_SKIP_COMMENTS);
    for (sql_token x; n < 6 && sql_lexer_next(&lx, &x);) {
        if (x.kind != SQL_TOK_COMMENT && !(x.kind == SQL_TOK_SEMI && n >= 2))
            t[n++] = x;
        /* every statement passes here: the others are told by their first words */
        if ((n == 1 && !sql_tok_is_word(&t[0], sql, "FLUSH")) ||
            (n == 2 && !sql_tok_is_word(&t[1], sql, "DELAYED")))
            return 0;
    }
    if (n < 2)
        return 0;
    schema[0] = table[0] = '\0';
    if (n == 2)
        return 1;
    if (n == 3)
        return sql_tok_name(&t[2], sql, table, cap) ? 1 : -1;
    if (n == 5 && t[3].kind == SQL_TOK_DOT && sql_tok_name(&t[2], sql, schema, cap) &&
        sql_tok_name(&t[4], sql, table, cap))
        return 1;
    return -1;
}

/* Which enabled delayed rules name the table (any, when table is ""). */
static bool find_tables(const mr_ruleset *rs, const char *schema, const char *table, bool *staged,
                        bool *memory)
{
    *staged = *memory = false;
    for (size_t i = 0; i < mr_ruleset_count(rs); i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        if (r->kind != MR_RULE_DELAYED || !r->enabled)
            continue;
        const mr_delayed_def *d = r->delayed;
        /* a default rule's tables are flushed with the staged ones (those
         * not derived yet are derived first, in the same round) */
        if (d->derive && (!table[0] || (schema && (strcmp(d->schema, "*") == 0 ||
                                                   strcmp(d->schema, schema) == 0)))) {
            *staged = true;
            continue;
        }
        if (table[0] && (strcmp(d->table, table) != 0 || !schema || strcmp(d->schema, schema)))
            continue;
        *staged |= d->mode == MR_DELAYED_STAGED;
        *memory |= d->mode == MR_DELAYED_MEMORY;
    }
    /* derived tables stay flushed after their default rule is reloaded away */
    struct mr_derive_reg *g = mr_delayed_derived();
    if (!*staged && table[0] && schema && g && mr_derive_known(g, schema, table))
        *staged = true;
    return *staged || *memory;
}

/* ---- the request ------------------------------------------------------------- */

/* The session lets go: later parts wake nobody. */
static void release(struct ds_flush *f)
{
    if (f->timer)
        event_free(f->timer);
    if (f->req)
        mr_dflush_req_release(f->req);
    free(f);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct ds_flush *f = arg; /* the session frees the timer as it lets go: f is there */
    f->timed_out = true;
    f->fs->ops->answer_now(f->fs);
}

/* ---- answering ----------------------------------------------------------------- */

static void answer(mr_fsession *fs, const mr_dflush_outcome *o)
{
    int result = o->result;
    if (o->rejected && (result == 0 || result == 2)) {
        char msg[600];
        snprintf(msg, sizeof msg,
                 "FLUSH DELAYED: %" PRIu64 " staged row(s) could not be "
                 "applied, the server refused them (%s; SHOW DELAYED REJECTED lists them)",
                 o->rejected, o->where);
        fs->ops->send_err(fs, MR_DELAYED_ERR_CODE, "HY000", msg);
    } else if (result == 0) {
        fs->ops->send_ok(fs, 0, 0);
    } else {
        fs->ops->send_err(
            fs, MR_DELAYED_ERR_CODE, "HY000",
            result == 1   ? "FLUSH DELAYED: the flush did not finish within 30 s (is the server "
                            "reachable?); it goes on in the background"
            : result == 2 ? "FLUSH DELAYED: a chunk failed (see the proxy's log); its deltas are "
                            "kept and retried at the next round"
                          : "FLUSH DELAYED: no flusher is running (proxy_user is not set, so the "
                            "proxy has no connection of its own)");
    }
}

bool ds_flush_answer(mr_fsession *fs, ds_session *d)
{
    struct ds_flush *f = d->flush;
    mr_dflush_outcome o;
    if (!f)
        return false;
    if (!mr_dflush_req_outcome(f->req, &o) && !f->timed_out)
        return false; /* another session's job woke the worker */
    d->flush = NULL;
    answer(fs, &o);
    release(f);
    return true;
}

void ds_flush_orphan(ds_session *d)
{
    if (d->flush)
        release(d->flush);
    d->flush = NULL;
}

/* ---- the statement --------------------------------------------------------------- */

static mr_hook_action refuse(mr_fsession *fs, const char *msg)
{
    fs->ops->send_err(fs, MR_DELAYED_ERR_CODE, MR_DELAYED_SQLSTATE, msg);
    return MR_HOOK_ANSWERED;
}

/* The request with its timer; NULL with *no_flusher when no flusher took
 * a job, or out of memory. */
static struct ds_flush *request_new(mr_fsession *fs, const char *filter, bool staged, bool memory,
                                    bool *no_flusher)
{
    struct ds_flush *f = calloc(1, sizeof *f);
    *no_flusher = false;
    if (!f)
        return NULL;
    f->fs = fs;
    f->timer = event_new(fs->base, -1, 0, timer_cb, f);
    struct timeval tv = {FLUSH_WAIT_MS / 1000, 0};
    if (!f->timer || event_add(f->timer, &tv) != 0 ||
        !(f->req =
              mr_dflush_req_start(filter, staged, memory, fs->wake.fn, fs->wake.arg, no_flusher))) {
        release(f);
        return NULL;
    }
    return f;
}

mr_hook_action ds_flush_statement(mr_fsession *fs, void **st, mr_hook_stmt *stmt)
{
    char schema[65], table[65];
    if (stmt->cmd != MR_COM_QUERY || !mr_ruleset_has_delayed(fs->rules))
        return MR_HOOK_PASS; /* no delayed rule: the server answers as it would */
    int rc = read_flush(stmt->sql, stmt->len, fs->lex_flags, schema, table, sizeof table);
    if (rc == 0)
        return MR_HOOK_PASS;
    if (rc < 0)
        return refuse(fs, "FLUSH DELAYED takes nothing or one table name: FLUSH DELAYED "
                          "[[schema.]table]");
    const char *sch = schema[0] ? schema : fs->schema;
    bool staged, memory;
    if (!find_tables(fs->rules, sch, table, &staged, &memory)) {
        char msg[300];
        snprintf(msg, sizeof msg, "FLUSH DELAYED: no delayed rule for table %.64s%s%.64s",
                 sch ? sch : "", sch ? "." : "", table);
        return refuse(fs, msg);
    }
    ds_session *d = ds_state(st);
    char filter[140] = "";
    if (table[0])
        snprintf(filter, sizeof filter, "%.64s.%.64s", sch, table);
    bool no_flusher = false;
    struct ds_flush *f = d ? request_new(fs, filter, staged, memory, &no_flusher) : NULL;
    if (!f && no_flusher)
        return refuse(fs, "FLUSH DELAYED: no flusher is running (proxy_user is not set, so the "
                          "proxy has no connection of its own)");
    if (!f)
        return refuse(fs, "FLUSH DELAYED: myrewrite is out of memory");
    d->flush = f;
    return MR_HOOK_WAIT_BG;
}
