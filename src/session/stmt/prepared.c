/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/stmt/prepared.c - the server-side prepared statements whose text the
 * front end acted on. A prepared statement meets the rules once, at
 * COM_STMT_PREPARE; what that decided must be repeated at each
 * COM_STMT_EXECUTE, which the front end never sees: a page whose LIMIT
 * offset is a `?` meets its rule's max_offset (the value is read from the
 * execute; beyond it the proxy answers the rule's ERR and sends nothing;
 * a value without one plain reading, proto/exec_limit.c, or an execute it
 * cannot read gets ERR 1210 and is not sent either),
 * and the features' execute hooks repeat what their verdict hooks noted
 * at the prepare (feature/feature.h: a count, a prelude that goes out
 * first). COM_STMT_BULK_EXECUTE of a statement a rule of a no_bulk kind
 * (rules/kind.h) rewrote is refused with an ERR and nothing is run: its
 * rows would bypass what each execute must repeat (the guardrail, the
 * prelude, the counts). The notes live until COM_STMT_CLOSE,
 * or until COM_RESET_CONNECTION / COM_CHANGE_USER drop every prepared
 * statement on the server too. Statements nothing acted on are not kept.
 *
 * Runs on the session's worker thread.
 */
#include <stdlib.h>
#include <string.h>

#include "myrewrite/base/log.h"
#include "myrewrite/proto/stmt_execute.h"
#include "myrewrite/stats/rule_stats.h"
#include "session/core/session_impl.h"

/* What the guardrail needs at each execute, copied at prepare time: the
 * rule set may be reloaded in between. */
struct ss_pguard {
    uint64_t max_offset;
    unsigned param, nparams;
    uint16_t err_code;
    char sqlstate[6];
    struct mr_rule_stats *stats; /* refusals counted here (never freed) */
    void (*refused)(mr_stats *w, struct mr_rule_stats *rule); /* ... by the kind (mr_page_guard) */
    char *message;   /* the rule's own message, or NULL: the default */
    char where[132]; /* schema.table for the default message; "" = any */
    void (*too_deep)(uint64_t max_offset, const char *where, uint64_t offset, char *buf,
                     size_t size); /* the kind's default message (mr_page_guard) */
    bool have_types;
    bool long_data;      /* COM_STMT_SEND_LONG_DATA for the offset or one before it: every
                            execute is refused until COM_STMT_RESET (the server keeps the data) */
    bool owe_types;      /* a refused execute bound types the server never got: */
    uint8_t *owed;       /*   its types block as sent (with names under query attributes), */
    size_t owed_len;     /*   its length */
    uint64_t owed_count; /*   and the values it typed */
    uint8_t types[];     /* 2 * nparams: kept between executes */
};

static void note_clear(ss_pnote *n)
{
    if (n->fnote) {
        for (unsigned i = 0; i < MR_FEATURES_MAX; i++)
            free(n->fnote[i]);
        free(n->fnote);
    }
    if (n->guard) {
        free(n->guard->message);
        free(n->guard->owed);
    }
    free(n->guard);
    *n = (ss_pnote){0};
}

void ss_prepared_begin(mr_session *s) { note_clear(&s->pnote_next); }

void ss_prepared_note_guard(mr_session *s, const mr_page_guard *g)
{
    const mr_rule *r = g->rule;
    if (!r || !g->too_deep || !g->refused || g->nparams > MR_EXEC_MAX_PARAMS || s->pnote_next.guard)
        return;
    ss_pguard *pg = calloc(1, sizeof *pg + 2 * (size_t)g->nparams);
    if (!pg || (r->message && !(pg->message = strdup(r->message)))) {
        free(pg);
        mr_warn(s->id, "out of memory: the prepared page's max_offset is not checked");
        return;
    }
    pg->max_offset = g->max_offset;
    pg->param = g->param;
    pg->nparams = g->nparams;
    pg->err_code = r->err_code;
    memcpy(pg->sqlstate, r->sqlstate, sizeof pg->sqlstate);
    pg->stats = mr_rule_stats_of(r);
    memcpy(pg->where, g->where, sizeof pg->where);
    pg->too_deep = g->too_deep;
    pg->refused = g->refused;
    s->pnote_next.guard = pg;
}

/* The notes live on the stack until one is made: a prepare the features
 * note nothing of allocates nothing. */
void ss_prepared_verdict(mr_session *s, const mr_match_result *res)
{
    void *notes[MR_FEATURES_MAX] = {0};
    ss_hooks_verdict(s, res, notes);
    unsigned i = 0;
    while (i < MR_FEATURES_MAX && !notes[i])
        i++;
    if (i == MR_FEATURES_MAX)
        return;
    if (!(s->pnote_next.fnote = malloc(sizeof notes))) {
        mr_warn(s->id, "out of memory: a prepared statement runs without what the features "
                       "noted (counts, a claim's prelude)");
        for (; i < MR_FEATURES_MAX; i++)
            free(notes[i]);
        return;
    }
    memcpy(s->pnote_next.fnote, notes, sizeof notes);
}

static bool worth_keeping(const ss_pnote *n) { return n->fnote || n->guard || n->rewritten; }

void ss_prepared_done(mr_session *s, bool ok, uint32_t id)
{
    ss_pnote note = s->pnote_next;
    s->pnote_next = (ss_pnote){0};
    if (ok)
        s->plast = id;
    if (!ok || !worth_keeping(&note)) {
        note_clear(&note);
        return;
    }
    if (s->npnotes == s->pnotes_cap) {
        size_t cap = s->pnotes_cap ? s->pnotes_cap * 2 : 8;
        ss_pnote *grown = realloc(s->pnotes, cap * sizeof *grown);
        if (!grown) {
            mr_warn(s->id,
                    "out of memory: prepared statement %u runs without its claim prelude, "
                    "guardrail and counts",
                    id);
            note_clear(&note);
            return;
        }
        s->pnotes = grown;
        s->pnotes_cap = cap;
    }
    note.id = id;
    s->pnotes[s->npnotes++] = note;
}

static ss_pnote *find(mr_session *s, uint32_t id)
{
    for (size_t i = 0; i < s->npnotes; i++)
        if (s->pnotes[i].id == id)
            return &s->pnotes[i];
    return NULL;
}

/* How the session's executes carry their parameters (p: a whole execute). */
static unsigned exec_form(const mr_session *s, const uint8_t *p)
{
    return mr_exec_form((s->caps & MR_CAP_QUERY_ATTRIBUTES) != 0, p);
}

/* The offset an execute binds (NULL), or why the guard cannot read it:
 * a value with no plain reading (proto/exec_limit.c), or an execute that
 * cannot be decoded (cut at relay_buffer, malformed, a type the decoder
 * does not know). */
static const char *offset_of(ss_pguard *g, const uint8_t *p, size_t n, unsigned form, uint64_t *off)
{
    mr_exec_param v[MR_EXEC_MAX_PARAMS];
    char bufs[MR_EXEC_MAX_PARAMS][32];
    if (n < MR_EXEC_HEADER)
        return "the execute is cut short";
    const char *why = mr_exec_params_read(p + MR_EXEC_HEADER, n - MR_EXEC_HEADER, g->nparams,
                                          g->param + 1, g->types, &g->have_types, v, bufs, form);
    if (why)
        return why;
    return mr_exec_limit_value(g->types[2 * g->param], &v[g->param], off);
}

/* A refused execute bound types the server never got: kept to be put
 * into the next execute that binds none. */
static void owe(mr_session *s, ss_pguard *g, const uint8_t *p, size_t n, unsigned form)
{
    mr_exec_layout lay;
    if (mr_exec_layout_read(p + MR_EXEC_HEADER, n - MR_EXEC_HEADER, g->nparams, form, &lay) ||
        !lay.types_len)
        return;
    uint8_t *copy = malloc(lay.types_len);
    if (!copy) {
        mr_warn(s->id, "out of memory: the parameter types of a refused execute are not kept");
        return;
    }
    memcpy(copy, p + MR_EXEC_HEADER + lay.types, lay.types_len);
    free(g->owed);
    g->owed = copy;
    g->owed_len = lay.types_len;
    g->owed_count = lay.count;
    g->owe_types = true; /* the client now takes these types as sent */
}

/* An execute whose offset the guard cannot read: ERR 1210, nothing sent
 * (the server's own readings of such values are not the guard's). */
static void refuse_unread(mr_session *s, ss_pguard *g, const char *why, uint32_t len)
{
    char msg[512];
    if (g->long_data)
        why = "a value at or before it was sent with COM_STMT_SEND_LONG_DATA (the guard reads "
              "values from the execute itself; COM_STMT_RESET clears what was sent)";
    else if (!why)
        snprintf(msg, sizeof msg,
                 "the execute (%u bytes) is larger than relay_buffer, so it is "
                 "not read whole",
                 (unsigned)len);
    char full[768];
    snprintf(full, sizeof full,
             "myrewrite cannot check the LIMIT offset (parameter %u) of this prepared page "
             "against max_offset %llu: %s. Bind the offset as an integer type or as a string "
             "of decimal digits; nothing was run",
             g->param + 1, (unsigned long long)g->max_offset, why ? why : msg);
    ss_send_err(s, 1, MR_ER_WRONG_ARGUMENTS, "HY000", full);
}

/* An execute deeper than max_offset: the rule's ERR, nothing sent. One
 * whose offset cannot be read: ERR 1210, nothing sent (fail closed). */
static bool guard_refuses(mr_session *s, ss_pguard *g, const uint8_t *p, size_t n, uint32_t len)
{
    uint64_t off = 0;
    unsigned form = exec_form(s, p);
    const char *why = n != len || g->long_data ? NULL : offset_of(g, p, n, form, &off);
    bool unread = n != len || g->long_data || why;
    if (!unread && off <= g->max_offset)
        return false;
    if (n == len)
        owe(s, g, p, n, form);
    g->refused(&s->w->stats, g->stats);
    mr_stat_add(&s->w->stats.statements_blocked, 1);
    s->from_client.discard = true;
    if (unread) {
        refuse_unread(s, g, why, len);
        return true;
    }
    char msg[512];
    if (!g->message)
        g->too_deep(g->max_offset, g->where[0] ? g->where : NULL, off, msg, sizeof msg);
    ss_send_err(s, 1, g->err_code, g->sqlstate, g->message ? g->message : msg);
    return true;
}

/* The note of the statement a COM_STMT_EXECUTE / CLOSE names (p[0..5)). */
static ss_pnote *named(mr_session *s, const uint8_t *p)
{
    uint32_t id = ss_stmt_id(p);
    return find(s, id == SS_STMT_LAST ? s->plast : id);
}

bool ss_prepared_guarded(mr_session *s, const uint8_t *head, uint32_t len)
{
    if (!s->npnotes || len < 5)
        return false;
    const ss_pnote *note = named(s, head);
    return note && note->guard;
}

/* The first execute sent after a refused one that bound types: if it
 * binds none itself (the client believes the server has them), it goes out
 * with the owed types put in and its flag set, in place of the client's
 * bytes. One the proxy did not read whole cannot be mended (see
 * rules/README.md). */
static void pay_types(mr_session *s, ss_pguard *g, const uint8_t *p, size_t n, uint32_t len)
{
    mr_exec_layout lay;
    if (n != len || n < MR_EXEC_HEADER ||
        mr_exec_layout_read(p + MR_EXEC_HEADER, n - MR_EXEC_HEADER, g->nparams, exec_form(s, p),
                            &lay) ||
        !lay.count)
        return;
    g->owe_types = false;
    if (lay.types_len)
        return;                       /* it binds its own */
    if (lay.count != g->owed_count) { /* query attributes: other values than those typed */
        mr_warn(s->id,
                "an execute binds no types after a refused one bound types for %llu "
                "values, and it sends %llu: it goes out as sent",
                (unsigned long long)g->owed_count, (unsigned long long)lay.count);
        return;
    }
    size_t at = MR_EXEC_HEADER + lay.flag;
    mr_buf body, out;
    mr_buf_init(&body);
    mr_buf_init(&out);
    mr_buf_put(&body, p + 1, at - 1);
    mr_buf_put(&body, "\x01", 1);
    mr_buf_put(&body, g->owed, g->owed_len);
    mr_buf_put(&body, p + at + 1, n - at - 1);
    if (!body.failed)
        mr_command_build(&out, MR_COM_STMT_EXECUTE, body.data, body.len);
    if (!body.failed && !out.failed) {
        mr_conn_write(s->backend, out.data, out.len);
        s->from_client.discard = true; /* the client's bytes are dropped as they come */
    } else {
        mr_warn(s->id, "out of memory: an execute goes out without the parameter types it owes");
    }
    mr_buf_free(&body);
    mr_buf_free(&out);
}

/* A bulk execute of a statement the front end acted on: nothing is run,
 * so no row is applied (let alone some of them). */
static bool refuse_bulk(mr_session *s)
{
    mr_stat_add(&s->w->stats.statements_blocked, 1);
    ss_send_err(s, 1, MR_ER_NOT_SUPPORTED, "42000",
                "COM_STMT_BULK_EXECUTE (array binding) of a statement a myrewrite delayed, "
                "paginate or queue rule rewrote is not supported; nothing was run: execute it "
                "once per row (no STMT_ATTR_ARRAY_SIZE)");
    s->from_client.discard = true;
    return true;
}

/* COM_STMT_SEND_LONG_DATA (no answer) and COM_STMT_RESET of a guarded
 * statement: the guard cannot read a value sent apart, nor place the
 * values after it in the execute. */
static void note_long_data(ss_pnote *note, uint8_t cmd, const uint8_t *p, size_t n)
{
    if (!note->guard)
        return;
    if (cmd == MR_COM_STMT_RESET)
        note->guard->long_data = false;
    else if (n >= 7 && (unsigned)(p[5] | p[6] << 8) <= note->guard->param)
        note->guard->long_data = true;
}

bool ss_prepared_command(mr_session *s, uint8_t cmd, const uint8_t *p, size_t n, uint32_t len)
{
    if (!s->npnotes || n < 5 ||
        (cmd != MR_COM_STMT_EXECUTE && cmd != MR_COM_STMT_CLOSE &&
         cmd != MR_COM_STMT_BULK_EXECUTE && cmd != MR_COM_STMT_SEND_LONG_DATA &&
         cmd != MR_COM_STMT_RESET))
        return false;
    ss_pnote *note = named(s, p);
    if (!note)
        return false;
    if (cmd == MR_COM_STMT_SEND_LONG_DATA || cmd == MR_COM_STMT_RESET) {
        note_long_data(note, cmd, p, n);
        return false;
    }
    if (cmd == MR_COM_STMT_BULK_EXECUTE)
        return refuse_bulk(s);
    if (cmd == MR_COM_STMT_CLOSE) {
        note_clear(note);
        *note = s->pnotes[--s->npnotes];
        return false;
    }
    if (note->guard && guard_refuses(s, note->guard, p, n, len))
        return true;
    if (note->fnote)
        ss_hooks_execute(s, note->fnote); /* counts, a claim's prelude */
    if (note->guard && note->guard->owe_types)
        pay_types(s, note->guard, p, n, len); /* after the prelude: it goes out first */
    return false;
}

void ss_prepared_forget_all(mr_session *s)
{
    for (size_t i = 0; i < s->npnotes; i++)
        note_clear(&s->pnotes[i]);
    free(s->pnotes);
    s->pnotes = NULL;
    s->npnotes = s->pnotes_cap = 0;
    note_clear(&s->pnote_next);
}
