/*
 * session_dmem.c - prepared statements of mode = memory DELAYED rules.
 *
 * COM_STMT_PREPARE of such a statement goes to the server as a stand-in
 * with the same `?` count (`DO ?, ?`, rules_delayed.c), so the server
 * hands out the statement id and the client sees the parameter count it
 * expects. The session keeps the original text under that id; each
 * COM_STMT_EXECUTE of it is read here (binary protocol: null bitmap,
 * new-params-bound flag, types, values; the types of the previous execute
 * are kept when the flag is 0), its values are bound to the `?` of the
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
 * Not taken (ERR 1235, nothing applied): an execute whose packet is larger
 * than relay_buffer, parameters sent with COM_STMT_SEND_LONG_DATA, and
 * COM_STMT_BULK_EXECUTE. Runs on the session's worker thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/delayed_mem.h"
#include "myrewrite/delayed_sql.h"
#include "myrewrite/log.h"
#include "session_impl.h"

#define MAX_PARAMS 256
#define LAST_PREPARED 0xffffffffu /* statement id of MariaDB's direct execution */
#define LAST_NOT_MEMORY 0xffffffffu /* s->dlast: the last prepare was not a memory stand-in */

struct ss_dstmt {
    struct ss_dstmt *next;
    uint32_t id;
    unsigned nparams;
    bool long_data;           /* COM_STMT_SEND_LONG_DATA was used on it */
    bool have_types;
    uint8_t types[2 * MAX_PARAMS];
    size_t len;
    char sql[];               /* the original text */
};

/* ---- the statement table ---------------------------------------------------------- */

static struct ss_dstmt *find(const mr_session *s, uint32_t id)
{
    for (struct ss_dstmt *d = s->dstmts; d; d = d->next)
        if (d->id == id)
            return d;
    return NULL;
}

static void forget(mr_session *s, uint32_t id)
{
    for (struct ss_dstmt **pp = &s->dstmts; *pp; pp = &(*pp)->next)
        if ((*pp)->id == id) {
            struct ss_dstmt *d = *pp;
            *pp = d->next;
            free(d);
            return;
        }
}

void ss_dmem_forget_all(mr_session *s)
{
    while (s->dstmts) {
        struct ss_dstmt *d = s->dstmts;
        s->dstmts = d->next;
        free(d);
    }
    free(s->dprep);
    s->dprep = NULL;
    s->dlast = LAST_NOT_MEMORY;
}

bool ss_dmem_note_prepare(mr_session *s, const char *sql, size_t len, unsigned nparams)
{
    free(s->dprep);
    s->dprep = NULL;
    if (nparams > MAX_PARAMS)
        return false;
    struct ss_dstmt *d = calloc(1, sizeof *d + len + 1);
    if (!d)
        return false;
    d->nparams = nparams;
    d->len = len;
    memcpy(d->sql, sql, len);
    s->dprep = d;
    return true;
}

void ss_dmem_prepared(mr_session *s, bool ok, uint32_t id)
{
    struct ss_dstmt *d = s->dprep;
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

/* ---- reading COM_STMT_EXECUTE --------------------------------------------------- */

typedef struct cursor {
    const uint8_t *p;
    size_t left;
} cursor;

static bool take(cursor *c, size_t n, const uint8_t **out)
{
    if (c->left < n)
        return false;
    *out = c->p;
    c->p += n;
    c->left -= n;
    return true;
}

static bool lenenc(cursor *c, uint64_t *v)
{
    const uint8_t *b;
    if (!take(c, 1, &b))
        return false;
    unsigned n = b[0] < 0xfb ? 0 : b[0] == 0xfc ? 2 : b[0] == 0xfd ? 3 : b[0] == 0xfe ? 8 : 9;
    if (n == 9)
        return false;
    if (n == 0) {
        *v = b[0];
        return true;
    }
    const uint8_t *x;
    if (!take(c, n, &x))
        return false;
    *v = 0;
    for (unsigned i = 0; i < n; i++)
        *v |= (uint64_t)x[i] << (8 * i);
    return true;
}

static uint64_t le(const uint8_t *b, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

/* A fixed-size integer of n bytes, signed unless the type's unsigned flag is set. */
static bool int_value(cursor *c, unsigned n, bool is_unsigned, mr_dmem_param *out, char *buf)
{
    const uint8_t *b;
    if (!take(c, n, &b))
        return false;
    uint64_t u = le(b, n);
    if (is_unsigned) {
        if (u > INT64_MAX) { /* written out: it fits no delta, but may be a key */
            out->kind = MR_DMEM_PARAM_TEXT;
            out->len = (uint32_t)snprintf(buf, 32, "%llu", (unsigned long long)u);
            out->p = buf;
            return true;
        }
        out->n = (int64_t)u;
    } else {
        unsigned shift = 64 - 8 * n;
        out->n = (int64_t)(u << shift) >> shift; /* sign-extend */
    }
    out->kind = MR_DMEM_PARAM_INT;
    return true;
}

/* DATE / DATETIME / TIMESTAMP as 'YYYY-MM-DD[ HH:MM:SS[.ffffff]]'. */
static bool date_value(cursor *c, mr_dmem_param *out, char *buf)
{
    const uint8_t *n, *b;
    if (!take(c, 1, &n) || (n[0] != 0 && n[0] != 4 && n[0] != 7 && n[0] != 11) ||
        !take(c, n[0], &b))
        return false;
    unsigned y = n[0] ? (unsigned)le(b, 2) : 0, mo = n[0] ? b[2] : 0, d = n[0] ? b[3] : 0;
    int len = snprintf(buf, 32, "%04u-%02u-%02u", y, mo, d);
    if (n[0] >= 7)
        len += snprintf(buf + len, 32 - (size_t)len, " %02u:%02u:%02u", b[4], b[5], b[6]);
    if (n[0] == 11)
        len += snprintf(buf + len, 32 - (size_t)len, ".%06u", (unsigned)le(b + 7, 4));
    out->kind = MR_DMEM_PARAM_TEXT;
    out->p = buf;
    out->len = (uint32_t)len;
    return true;
}

/* One value of the given type; false when the packet is short or the type
 * is not one a key or a delta can be. */
static bool value(cursor *c, uint8_t type, bool is_unsigned, mr_dmem_param *out, char *buf)
{
    const uint8_t *b;
    uint64_t n;
    switch (type) {
    case 1: return int_value(c, 1, is_unsigned, out, buf);   /* TINY */
    case 2: case 13: return int_value(c, 2, is_unsigned, out, buf); /* SHORT, YEAR */
    case 3: case 9: return int_value(c, 4, is_unsigned, out, buf);  /* LONG, INT24 */
    case 8: return int_value(c, 8, is_unsigned, out, buf);   /* LONGLONG */
    case 4: case 5: {                                        /* FLOAT, DOUBLE */
        double v;
        if (!take(c, type == 4 ? 4 : 8, &b))
            return false;
        if (type == 4) {
            float f;
            memcpy(&f, b, 4);
            v = f;
        } else {
            memcpy(&v, b, 8);
        }
        out->kind = MR_DMEM_PARAM_TEXT;
        out->len = (uint32_t)snprintf(buf, 32, "%.17g", v);
        out->p = buf;
        return true;
    }
    case 7: case 10: case 12: return date_value(c, out, buf); /* TIMESTAMP, DATE, DATETIME */
    case 0: case 15: case 16: case 245: case 246: case 247: case 248: case 249: case 250:
    case 251: case 252: case 253: case 254:                  /* strings, decimals, blobs */
        if (!lenenc(c, &n) || n > UINT32_MAX || !take(c, (size_t)n, &b))
            return false;
        out->kind = MR_DMEM_PARAM_TEXT;
        out->p = (const char *)b;
        out->len = (uint32_t)n;
        return true;
    default: return false;
    }
}

/* The parameters of an execute into params (values point into the packet
 * or into bufs). NULL on success, else what is wrong. */
static const char *read_params(struct ss_dstmt *d, cursor *c, mr_dmem_param *params,
                               char (*bufs)[32])
{
    const uint8_t *nulls, *flag, *types;
    if (!d->nparams)
        return NULL;
    if (!take(c, (d->nparams + 7) / 8, &nulls) || !take(c, 1, &flag))
        return "the parameters of COM_STMT_EXECUTE are cut short";
    if (flag[0] == 1) {
        if (!take(c, 2 * (size_t)d->nparams, &types))
            return "the parameter types of COM_STMT_EXECUTE are cut short";
        memcpy(d->types, types, 2 * (size_t)d->nparams);
        d->have_types = true;
    } else if (!d->have_types) {
        return "COM_STMT_EXECUTE bound no parameter types";
    }
    for (unsigned i = 0; i < d->nparams; i++) {
        params[i] = (mr_dmem_param){.kind = MR_DMEM_PARAM_NULL};
        if (nulls[i / 8] & (1u << (i % 8)))
            continue;
        if (!value(c, d->types[2 * i], (d->types[2 * i + 1] & 0x80) != 0, &params[i], bufs[i]))
            return "a parameter of COM_STMT_EXECUTE has a type a key or delta cannot have, "
                   "or is cut short";
    }
    return NULL;
}

/* ---- answering ------------------------------------------------------------------ */

static stmt_verdict refuse(mr_session *s, const char *msg)
{
    mr_stat_add(&s->w->stats.statements_blocked, 1);
    ss_send_err(s, 1, MR_DELAYED_ERR_CODE, MR_DELAYED_SQLSTATE, msg);
    s->from_client.discard = true;
    return STMT_ANSWERED;
}

/* The execute of a memory statement: its values meet the rules with the
 * original text, and the batch goes into the shard. */
static stmt_verdict execute(mr_session *s, struct ss_dstmt *d, const uint8_t *p, size_t n)
{
    mr_dmem_param params[MAX_PARAMS];
    char bufs[MAX_PARAMS][32];                /* numbers and dates written out */
    cursor c = {p + 10, n - 10};              /* cmd, id, flags, iteration count */
    if (d->long_data)
        return refuse(s, "DELAYED in mode = memory: parameters sent with "
                         "COM_STMT_SEND_LONG_DATA are not taken; bind them to the execute");
    const char *bad = read_params(d, &c, params, bufs);
    if (bad)
        return refuse(s, bad);
    mr_dmem_params ps = {params, d->nparams};
    mr_worker *w = s->w;
    mr_match_result *res = &w->match;
    mr_stmt_ctx ctx = {
        .user = s->user[0] ? s->user : NULL,
        .schema = s->schema[0] ? s->schema : NULL,
        .prepared = true,
        .lex_flags = (s->tracker.status & MR_STATUS_NO_BACKSLASH_ESCAPES)
                         ? SQL_LEX_NO_BACKSLASH_ESCAPES : 0,
        .shard = w->id,
        .params = &ps,
    };
    mr_rules_apply(w->rules->set, d->sql, d->len, &ctx, w->scratch, res);
    if (res->action == MR_ACT_BLOCK)
        return refuse(s, res->message);
    if (res->action != MR_ACT_DELAYED_MEMORY)
        return refuse(s, "DELAYED: the rule this statement was prepared under is gone (rules "
                         "reloaded); prepare it again");
    return ss_delayed_memory(s, res->dmem);
}

bool ss_dmem_command(mr_session *s, uint8_t cmd, const uint8_t *p, size_t n, uint32_t len,
                     stmt_verdict *v)
{
    if (!s->dstmts || n < 5)
        return false;
    uint32_t id = (uint32_t)le(p + 1, 4);
    if (id == LAST_PREPARED) /* MariaDB: the statement prepared last on this connection */
        id = s->dlast;
    struct ss_dstmt *d = id == LAST_NOT_MEMORY ? NULL : find(s, id);
    if (!d)
        return false;
    switch (cmd) {
    case MR_COM_STMT_EXECUTE:
        if (n != len || n < 10)
            *v = refuse(s, "DELAYED in mode = memory: this COM_STMT_EXECUTE is larger than "
                           "relay_buffer or malformed; nothing was taken");
        else
            *v = execute(s, d, p, n);
        return true;
    case MR_COM_STMT_BULK_EXECUTE:
        *v = refuse(s, "DELAYED in mode = memory is not taken by COM_STMT_BULK_EXECUTE; "
                       "execute the statement once per row");
        return true;
    case MR_COM_STMT_SEND_LONG_DATA: d->long_data = true; return false;
    case MR_COM_STMT_RESET: d->long_data = false; return false;
    case MR_COM_STMT_CLOSE: forget(s, id); return false;
    default: return false;
    }
}
