/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/session/session_prepared.c - prepared statements of mode = memory DELAYED
 * rules, in a client session (the delayed feature's hooks).
 *
 * COM_STMT_PREPARE of such a statement goes to the server as a stand-in
 * with the same `?` count (`DO ?, ?`, delayed/statement/statement.c), so the server
 * hands out the statement id and the client sees the parameter count it
 * expects. The session keeps the original text under that id; each
 * COM_STMT_EXECUTE of it is read here (proto/stmt_execute.h; the types of the
 * previous execute are kept for one that binds none), its values are bound to the `?` of the
 * original, the rules read it into a memory batch, and the proxy answers
 * OK itself. The stand-in is never executed. COM_STMT_CLOSE forgets the
 * id (and goes on to the server); COM_RESET_CONNECTION and a successful
 * COM_CHANGE_USER forget them all, as the server does.
 *
 * MariaDB's direct execution (PREPARE and EXECUTE sent together, the
 * execute naming statement 0xffffffff: the one prepared last) works the
 * same: the execute waits in the client's buffer until the prepare's
 * answer is in, so the id is known by then.
 *
 * An execute whose rule names no key, run while the schema cache reads the
 * table's key again (DDL on it through the proxy), is parked by the session
 * as a text statement is (MR_HOOK_PARK, session/stmt/park_stmt.c): it is read again
 * here when the cache has the table, or gets the delayed_park_timeout ERR.
 *
 * Not taken (ERR 1235, nothing applied): an execute whose packet is larger
 * than relay_buffer, parameters sent with COM_STMT_SEND_LONG_DATA, and
 * COM_STMT_BULK_EXECUTE. Runs on the session's worker thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delayed/session/session_impl.h"
#include "myrewrite/base/log.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/paginate/bookmarks.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/proto/stmt_execute.h"
#include "myrewrite/schema/cache.h"

#define MAX_PARAMS MR_EXEC_MAX_PARAMS
#define STMT_LAST 0xffffffffu /* MariaDB's direct execution: the statement prepared last */

struct ds_stmt {
    struct ds_stmt *next;
    uint32_t id;
    unsigned nparams;
    bool long_data;   /* COM_STMT_SEND_LONG_DATA was used on it */
    bool read;        /* a point read with read_pending: the server runs it, after a SET */
    const char *zero; /* ... the SET of zeros (in sql[], after the text) */
    size_t zlen;
    bool have_types;
    uint8_t types[2 * MAX_PARAMS];
    size_t len;
    char sql[]; /* the original text */
};

/* ---- the statement table ---------------------------------------------------------- */

static struct ds_stmt *find(const ds_session *s, uint32_t id)
{
    for (struct ds_stmt *d = s->dstmts; d; d = d->next)
        if (d->id == id)
            return d;
    return NULL;
}

static void forget(ds_session *s, uint32_t id)
{
    for (struct ds_stmt **pp = &s->dstmts; *pp; pp = &(*pp)->next)
        if ((*pp)->id == id) {
            struct ds_stmt *d = *pp;
            *pp = d->next;
            free(d);
            return;
        }
}

void ds_forget_all(ds_session *s)
{
    while (s->dstmts) {
        struct ds_stmt *d = s->dstmts;
        s->dstmts = d->next;
        free(d);
    }
    free(s->dprep);
    s->dprep = NULL;
    s->dlast = LAST_NOT_MEMORY;
}

static struct ds_stmt *note(ds_session *s, const char *sql, size_t len, unsigned nparams,
                            const char *zero, size_t zlen)
{
    free(s->dprep);
    s->dprep = NULL;
    if (nparams > MAX_PARAMS)
        return NULL;
    struct ds_stmt *d = calloc(1, sizeof *d + len + 1 + zlen + 1);
    if (!d)
        return NULL;
    d->nparams = nparams;
    d->len = len;
    memcpy(d->sql, sql, len);
    if (zlen)
        memcpy(d->sql + len + 1, zero, zlen);
    d->zero = d->sql + len + 1;
    d->zlen = zlen;
    s->dprep = d;
    return d;
}

bool ds_note_prepare(ds_session *s, const char *sql, size_t len, unsigned nparams)
{
    return note(s, sql, len, nparams, NULL, 0) != NULL;
}

bool ds_note_read(ds_session *s, const char *sql, size_t len, unsigned nparams, const char *zero,
                  size_t zlen)
{
    struct ds_stmt *d = note(s, sql, len, nparams, zero, zlen);
    if (d)
        d->read = true;
    return d != NULL;
}

void ds_prepared(ds_session *s, bool ok, uint32_t id)
{
    struct ds_stmt *d = s->dprep;
    s->dprep = NULL;
    if (ok) /* the id MariaDB's direct execution means by 0xffffffff */
        s->dlast = d ? id : LAST_NOT_MEMORY;
    if (!d)
        return;
    if (!ok) {
        free(d);
        return;
    }
    forget(s, id); /* a reused id (never, from mysqld) would otherwise shadow */
    d->id = id;
    d->next = s->dstmts;
    s->dstmts = d;
}

/* ---- answering ------------------------------------------------------------------ */

static mr_hook_action refuse(mr_fsession *fs, const char *msg)
{
    mr_stat_add(&fs->stats->statements_blocked, 1);
    fs->ops->send_err(fs, MR_DELAYED_ERR_CODE, MR_DELAYED_SQLSTATE, msg);
    return MR_HOOK_ANSWERED;
}

/* The execute's values, bound to the original text, meet the rules. NULL,
 * or why the values cannot be read. */
static const char *apply(mr_fsession *fs, struct ds_stmt *d, const uint8_t *p, size_t n)
{
    mr_exec_param params[MAX_PARAMS];
    char bufs[MAX_PARAMS][32]; /* numbers and dates written out */
    const char *bad = mr_exec_params_read(p + MR_EXEC_HEADER, n - MR_EXEC_HEADER, d->nparams,
                                          d->nparams, d->types, &d->have_types, params, bufs,
                                          mr_exec_form(fs->query_attrs, p));
    if (bad)
        return bad;
    mr_exec_params ps = {params, d->nparams};
    mr_match_result *res = fs->match;
    mr_stmt_ctx ctx = {
        .user = fs->user,
        .schema = fs->schema,
        .prepared = true,
        .lex_flags = fs->lex_flags,
        .shard = fs->shard,
        .params = &ps,
        .schema_src = mr_schema_cache_source(), /* keys of rules without one, column ranges */
        .bookmarks = &mr_bookmarks_store,
    };
    mr_rules_apply(fs->rules, d->sql, d->len, &ctx, fs->scratch, res);
    return NULL;
}

/* The execute of a memory statement: the batch its values make goes into
 * the shard. */
static mr_hook_action execute(mr_fsession *fs, struct ds_stmt *d, const uint8_t *p, size_t n)
{
    if (d->long_data)
        return refuse(fs, "DELAYED in mode = memory: parameters sent with "
                          "COM_STMT_SEND_LONG_DATA are not taken; bind them to the execute");
    const char *bad = apply(fs, d, p, n);
    if (bad)
        return refuse(fs, bad);
    const mr_match_result *res = fs->match;
    if (res->action == MR_ACT_BLOCK && res->park)
        return MR_HOOK_PARK; /* the key is being read again (DDL): the session waits */
    if (res->action == MR_ACT_BLOCK)
        return refuse(fs, res->message);
    if (res->action != MR_ACT_DELAYED_MEMORY)
        return refuse(fs, "DELAYED: the rule this statement was prepared under is gone (rules "
                          "reloaded); prepare it again");
    return ds_memory(fs, res->dmem);
}

/* The execute of a point read: the server runs it, after the SET of what
 * this proxy holds for the key bound (zeros when the rules no longer read
 * it: the rule gone or changed, a key the memory table does not take). */
static mr_hook_action execute_read(mr_fsession *fs, struct ds_stmt *d, const uint8_t *p, size_t n,
                                   uint32_t len)
{
    static const char what[] = "read_pending's SET of the held deltas ahead of a prepared "
                               "point read (the read gives the table's value without them)";
    if (n != len || n < 10)
        return refuse(fs, "read_pending in mode = memory: this COM_STMT_EXECUTE of a point "
                          "read is larger than relay_buffer or malformed; nothing was run");
    if (d->long_data)
        return refuse(fs, "read_pending in mode = memory: a point read's key sent with "
                          "COM_STMT_SEND_LONG_DATA is not read; bind it to the execute");
    const char *bad = apply(fs, d, p, n);
    const mr_match_result *res = fs->match;
    bool set = !bad && res->read_set;
    if (!fs->ops->prelude(fs, set ? res->read_set : d->zero, set ? res->read_set_len : d->zlen,
                          what)) /* the variables would still hold the last execute's */
        return refuse(fs, "read_pending in mode = memory: out of memory; nothing was run");
    return MR_HOOK_PASS; /* the execute goes to the server as the client sent it */
}

mr_hook_action ds_command(mr_fsession *fs, ds_session *s, uint8_t cmd, const uint8_t *p, size_t n,
                          uint32_t len)
{
    if (!s || !s->dstmts || n < 5)
        return MR_HOOK_PASS;
    uint32_t id =
        (uint32_t)p[1] | (uint32_t)p[2] << 8 | (uint32_t)p[3] << 16 | (uint32_t)p[4] << 24;
    if (id == STMT_LAST) /* MariaDB: the statement prepared last on this connection */
        id = s->dlast;
    struct ds_stmt *d = id == LAST_NOT_MEMORY ? NULL : find(s, id);
    if (!d)
        return MR_HOOK_PASS;
    if (d->read && cmd == MR_COM_STMT_EXECUTE)
        return execute_read(fs, d, p, n, len);
    if (d->read && (cmd == MR_COM_STMT_BULK_EXECUTE || cmd == MR_COM_STMT_FETCH))
        return MR_HOOK_PASS; /* the server's to answer (a fetch reads what the execute ran) */
    switch (cmd) {
    case MR_COM_STMT_EXECUTE:
        if (n != len || n < 10)
            return refuse(fs, "DELAYED in mode = memory: this COM_STMT_EXECUTE is larger than "
                              "relay_buffer or malformed; nothing was taken");
        return execute(fs, d, p, n);
    case MR_COM_STMT_BULK_EXECUTE:
        return refuse(fs, "DELAYED in mode = memory is not taken by COM_STMT_BULK_EXECUTE; "
                          "execute the statement once per row");
    case MR_COM_STMT_SEND_LONG_DATA: d->long_data = true; return MR_HOOK_PASS;
    case MR_COM_STMT_RESET: d->long_data = false; return MR_HOOK_PASS;
    case MR_COM_STMT_CLOSE: forget(s, id); return MR_HOOK_PASS;
    default: return MR_HOOK_PASS;
    }
}
