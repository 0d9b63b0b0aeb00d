/*
 * session/flush_delayed.c - `FLUSH DELAYED [tbl]` sent through the proxy by a
 * client: the flushers run a round now and the client gets OK once it is
 * done (or an ERR saying why not).
 *
 * The worker never waits: a short-lived helper thread asks the flushers
 * (mr_delayed_flush_now, mr_dmem_flush_now, the same machinery as the
 * admin console's FLUSH DELAYED) and waits for them, then writes one byte
 * to a pipe whose read end is an event of the worker's event_base. The
 * session meanwhile reads no further command. If the session ends first,
 * the request is orphaned (req->s = NULL) and freed when the byte comes.
 *
 * Threads: everything on the session's worker, except flush_thread.
 */
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "myrewrite/delayed/derive.h"
#include "myrewrite/delayed/flush.h"
#include "myrewrite/delayed/mem.h"
#include "myrewrite/delayed/reject.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/base/log.h"
#include "myrewrite/sql/lexer.h"
#include "session/session_impl.h"

#define FLUSH_WAIT_MS 30000

struct ss_flush {
    mr_session *s;           /* NULL once the session is gone (worker thread) */
    struct event *ev;
    int rd, wr;
    char filter[140];        /* `t` or `schema.t`; "" = all */
    bool staged, memory;     /* which flushers have a matching table */
    int result;              /* helper: 0 done, 1 timed out, 2 a chunk failed, -1 no flusher */
    uint64_t rejected;       /* helper: rows the round moved to dead-letter tables */
    char where[400];         /* helper: which tables, why, and where the rows are */
};

/* ---- reading the statement ---------------------------------------------------- */

static bool word_is(const char *sql, const sql_token *t, const char *w)
{
    return t->kind == SQL_TOK_WORD && t->len == strlen(w) && strncasecmp(sql + t->off, w, t->len) == 0;
}

/* A name token (bare or `quoted`) into buf; false when it is not one. */
static bool name_of(const char *sql, const sql_token *t, char *buf, size_t cap)
{
    const char *p = sql + t->off;
    size_t n = t->len;
    if (t->kind == SQL_TOK_QIDENT && n >= 2 && p[0] == '`' && !(t->flags & SQL_TF_ESCAPED)) {
        p++;
        n -= 2;
    } else if (t->kind != SQL_TOK_WORD) {
        return false;
    }
    if (n == 0 || n >= cap)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return true;
}

/* FLUSH DELAYED [[schema.]tbl] [;]: 1 with schema/table filled (empty
 * when none), 0 when the text is something else, -1 when it starts so but
 * does not read. */
static int read_flush(const char *sql, size_t len, unsigned lex_flags, char *schema,
                      char *table, size_t cap)
{
    sql_lexer lx;
    sql_token t[6];
    size_t n = 0;
    sql_lexer_init(&lx, sql, len, lex_flags | SQL_LEX_SKIP_COMMENTS);
    for (sql_token x; n < 6 && sql_lexer_next(&lx, &x);)
        if (x.kind != SQL_TOK_COMMENT && !(x.kind == SQL_TOK_SEMI && n >= 2))
            t[n++] = x;
    if (n < 2 || !word_is(sql, &t[0], "FLUSH") || !word_is(sql, &t[1], "DELAYED"))
        return 0;
    schema[0] = table[0] = '\0';
    if (n == 2)
        return 1;
    if (n == 3)
        return name_of(sql, &t[2], table, cap) ? 1 : -1;
    if (n == 5 && t[3].kind == SQL_TOK_DOT && name_of(sql, &t[2], schema, cap) &&
        name_of(sql, &t[4], table, cap))
        return 1;
    return -1;
}

/* Which enabled delayed rules name the table (any, when table is ""). */
static bool find_tables(const mr_ruleset *rs, const char *schema, const char *table,
                        bool *staged, bool *memory)
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

/* ---- the round --------------------------------------------------------------- */

static void *flush_thread(void *arg)
{
    struct ss_flush *f = arg;
    int a = f->staged ? mr_delayed_flush_now(f->filter, FLUSH_WAIT_MS) : -1;
    int b = f->memory ? mr_dmem_flush_now(f->filter, FLUSH_WAIT_MS) : -1;
    f->result = a < 0 ? b : b < 0 ? a : a > b ? a : b;
    f->rejected = mr_dreject_round_report(f->filter, f->where, sizeof f->where);
    char one = 1;
    if (write(f->wr, &one, 1) != 1)
        mr_error(0, "FLUSH DELAYED: cannot wake the worker; the client waits for its timeout");
    return NULL;
}

static void flush_free(struct ss_flush *f)
{
    if (f->ev)
        event_free(f->ev);
    close(f->rd);
    close(f->wr);
    free(f);
}

static void answer(mr_session *s, int result, const struct ss_flush *f)
{
    if (f->rejected && (result == 0 || result == 2)) {
        char msg[600];
        snprintf(msg, sizeof msg, "FLUSH DELAYED: %" PRIu64 " staged row(s) could not be "
                 "applied, the server refused them (%s; SHOW DELAYED REJECTED lists them)",
                 f->rejected, f->where);
        ss_send_err(s, 1, MR_DELAYED_ERR_CODE, "HY000", msg);
    } else if (result == 0) {
        mr_buf ok;
        mr_buf_init(&ok);
        mr_ok_build(&ok, 1, 0, 0, (uint16_t)(s->tracker.status & ~MR_STATUS_MORE_RESULTS), 0);
        if (!ok.failed)
            mr_conn_write(s->client, ok.data, ok.len);
        mr_buf_free(&ok);
    } else {
        ss_send_err(s, 1, MR_DELAYED_ERR_CODE, "HY000", result == 1
                        ? "FLUSH DELAYED: the flush did not finish within 30 s (is the server "
                          "reachable?); it goes on in the background"
                        : result == 2
                        ? "FLUSH DELAYED: a chunk failed (see the proxy's log); its deltas are "
                          "kept and retried at the next round"
                        : "FLUSH DELAYED: no flusher is running (proxy_user is not set, so the "
                          "proxy has no connection of its own)");
    }
}

static void flush_done_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct ss_flush *f = arg;
    char one;
    if (read(f->rd, &one, 1) != 1)
        return; /* spurious: the byte is still to come */
    mr_session *s = f->s; /* f's results were written before the byte, by the helper */
    if (!s || !ALIVE(s)) {
        flush_free(f);
        return;
    }
    s->flush = NULL;
    answer(s, f->result, f);
    flush_free(f);
    ss_set_state(s, SS_IDLE);
    if (s->w->draining) {
        ss_close(s, MR_CLOSE_SHUTDOWN, "proxy shutting down");
        return;
    }
    ss_pump_client(s); /* a command may already be waiting */
}

static stmt_verdict refuse(mr_session *s, const char *msg)
{
    ss_send_err(s, 1, MR_DELAYED_ERR_CODE, MR_DELAYED_SQLSTATE, msg);
    s->from_client.discard = true;
    return STMT_ANSWERED;
}

/* Starts the helper; false (nothing started) when out of resources. */
static bool start(mr_session *s, struct ss_flush *f)
{
    int fds[2];
    if (pipe(fds) != 0)
        return false;
    f->rd = fds[0];
    f->wr = fds[1];
    f->s = s;
    fcntl(f->rd, F_SETFL, O_NONBLOCK);
    f->ev = event_new(s->w->base, f->rd, EV_READ | EV_PERSIST, flush_done_cb, f);
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    bool ok = f->ev && event_add(f->ev, NULL) == 0 && pthread_create(&th, &at, flush_thread, f) == 0;
    pthread_attr_destroy(&at);
    return ok;
}

stmt_verdict ss_flush_delayed(mr_session *s, const char *sql, size_t len, unsigned lex_flags)
{
    const mr_ruleset *rs = s->w->rules->set;
    char schema[65], table[65];
    if (!mr_ruleset_has_delayed(rs))
        return STMT_RELAY; /* no delayed rule: the server answers as it would */
    int rc = read_flush(sql, len, lex_flags, schema, table, sizeof table);
    if (rc == 0)
        return STMT_RELAY;
    if (rc < 0)
        return refuse(s, "FLUSH DELAYED takes nothing or one table name: FLUSH DELAYED "
                         "[[schema.]table]");
    const char *sch = schema[0] ? schema : s->schema[0] ? s->schema : NULL;
    struct ss_flush *f = calloc(1, sizeof *f);
    if (!f)
        return refuse(s, "FLUSH DELAYED: myrewrite is out of memory");
    if (!find_tables(rs, sch, table, &f->staged, &f->memory)) {
        char msg[300];
        snprintf(msg, sizeof msg, "FLUSH DELAYED: no delayed rule for table %.64s%s%.64s",
                 sch ? sch : "",
                 sch ? "." : "", table);
        free(f);
        return refuse(s, msg);
    }
    if (table[0])
        snprintf(f->filter, sizeof f->filter, "%.64s.%.64s", sch, table);
    if (!start(s, f)) {
        if (f->s)
            flush_free(f); /* the pipe was made */
        else
            free(f);
        return refuse(s, "FLUSH DELAYED: cannot start the flush request (out of resources)");
    }
    s->flush = f;
    s->from_client.discard = true;
    s->digest = NULL;
    ss_set_state(s, SS_WAIT_BG); /* no further command is read until the answer */
    return STMT_WAITING;
}

void ss_flush_orphan(mr_session *s)
{
    if (s->flush)
        s->flush->s = NULL;
    s->flush = NULL;
}
