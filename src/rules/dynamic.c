/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/dynamic.c - statements that run SQL of their own (sql/dynamic.h).
 *
 * `EXECUTE IMMEDIATE '...'` and `PREPARE s FROM '...'` with a string
 * literal: the literal is read as the server reads it and the block rules
 * meet the statement inside, so a block rule that matches it refuses the
 * outer statement with its own ERR. Rewrite and regex rules do not touch
 * the inside (a rewrite would have to write the literal again). Forms whose
 * SQL the text does not show (a variable, an expression, CALL, a compound
 * statement, a literal the session's character set keeps the proxy from
 * reading) are relayed, unless a block rule with `dynamic = refuse` applies
 * to the session: the first such rule refuses them, with its code and
 * SQLSTATE and a message naming it and what the proxy examines.
 *
 * Pure, any thread; writes only the caller's scratch and result. Nothing is
 * lexed twice for a statement that cannot be dynamic: its first word tells.
 */
#include <stdio.h>
#include <string.h>

#include "myrewrite/sql/dynamic.h"
#include "rules/rules_run.h"

/* Statements of a literal: the server prepares one, but every one is
 * examined; more than this many is refused as unread. */
#define INNER_MAX 8

/* The first block rule with dynamic = refuse that applies to the session
 * refuses S: false then (res is the block). A log_only one counts and lets
 * it through, as for any block. */
static bool refused(run *R, unsigned index, const char *what)
{
    const mr_ruleset *rs = R->rs;
    (void)index;
    for (size_t i = 0; i < rs->n; i++) {
        const mr_rule *r = &rs->rules[i];
        bool applies = r->kind == MR_RULE_BLOCK && rs->impl[i].dynamic_refuse && r->enabled &&
                       (!r->user || (R->ctx->user && strcmp(r->user, R->ctx->user) == 0)) &&
                       (!r->schema || (R->ctx->schema && strcmp(r->schema, R->ctx->schema) == 0));
        if (!applies)
            continue;
        mr_rule_count_hit(R, i);
        char detail[160];
        snprintf(detail, sizeof detail, "dynamic = refuse: %s", what);
        mr_rule_trace(R, i, r->log_only ? WHY_LOG_ONLY : WHY_MATCHED, detail);
        if (r->log_only)
            return false;
        snprintf(R->s->dynamic_msg, sizeof R->s->dynamic_msg,
                 "statement refused by myrewrite rule %s (dynamic = refuse): %s runs SQL the "
                 "proxy's rules cannot examine, and nothing was sent; the rules examine "
                 "EXECUTE IMMEDIATE and PREPARE ... FROM a quoted string literal only",
                 r->name, what);
        R->res->action = MR_ACT_BLOCK;
        R->res->err_code = r->err_code;
        memcpy(R->res->sqlstate, r->sqlstate, sizeof R->res->sqlstate);
        R->res->message = R->s->dynamic_msg;
        return true;
    }
    return false;
}

/* The block rules over each statement of the literal's text. */
static bool inner_passes(run *R, const char *text, size_t len, unsigned index)
{
    sql_span spans[INNER_MAX];
    size_t n = 0;
    sql_rc rc = sql_split(text, len, R->ctx->lex_flags, spans, INNER_MAX, &n);
    if (rc != SQL_OK)
        return !refused(R, index,
                        rc == SQL_PARTIAL ? "a string of more statements than the proxy reads"
                                          : "a string that does not read as SQL");
    for (size_t k = 0; k < n; k++) {
        stmt S = {.text = text + spans[k].off, .len = spans[k].len, .nparams = -1};
        if (!rules_inner_passes(R, &S, index) || !rules_dynamic(R, &S, index))
            return false;
    }
    return true;
}

/* Reads of the literal that must all pass. The server decodes it in the
 * mode in force when the statement runs, which an earlier statement of the
 * same text (SET sql_mode, SET NAMES) may have changed though its tokens
 * read the same ('... # \nWHERE ...' is one string either way, a newline
 * with backslash escapes and two bytes without), and which the session may
 * not know (unsure: ctx->lex_unsure). So, past the text's first statement
 * or where the session is unsure, a literal holding a backslash is read
 * both ways, and one that also holds a byte >= 0x80 under every multibyte
 * rule too (a trail byte 0x5c escapes nothing): fail closed. The first
 * statement's backslash mode is the server's status flag. Returns how many
 * modes went into out[]. */
#define LITERAL_MODES (2 + 2 * SQL_LEX_MB_COUNT)
static size_t literal_modes(const char *text, const sql_token *tok, const sql_dynamic *d,
                            unsigned base, unsigned unsure, unsigned out[LITERAL_MODES])
{
    bool bs = false, high = false;
    for (uint32_t i = d->lit.first; i < d->lit.end; i++)
        for (uint32_t k = 0; k < tok[i].len; k++) {
            unsigned char c = (unsigned char)text[tok[i].off + k];
            bs |= c == '\\';
            high |= c >= 0x80;
        }
    size_t n = 0;
    out[n++] = base;
    if (!bs)
        return n;
    if (unsure & SQL_LEX_NO_BACKSLASH_ESCAPES)
        out[n++] = base ^ SQL_LEX_NO_BACKSLASH_ESCAPES;
    unsigned plain = base & ~(unsigned)(SQL_LEX_MB_MASK | SQL_LEX_NO_BACKSLASH_ESCAPES);
    for (unsigned mb = 1; high && (unsure & SQL_LEX_MB_MASK) && mb <= SQL_LEX_MB_COUNT; mb++)
        for (unsigned nbe = 0; nbe < 2; nbe++) {
            unsigned m = plain | (mb << 4) | (nbe ? SQL_LEX_NO_BACKSLASH_ESCAPES : 0u);
            if (m != out[0] && (n < 2 || m != out[1]))
                out[n++] = m;
        }
    return n;
}

/* The literal's text in this depth's buffer, once per mode it may be read
 * in, then the rules over each (the inner text lexed in that mode). All
 * readings are decoded first: examining one lexes over the outer tokens. */
static bool literal_passes(run *R, const sql_dynamic *d, const char *text, unsigned index)
{
    if (R->ctx->charset_unsafe)
        return !refused(R, index, "a string literal in a character set the proxy cannot read");
    if (R->dyn_depth >= RULES_DYN_DEPTH)
        return !refused(R, index, "dynamic SQL inside dynamic SQL");
    bytes *b = &R->s->dyn[R->dyn_depth];
    unsigned modes[LITERAL_MODES];
    unsigned unsure = index > 1 ? ~0u : R->ctx->lex_unsure;
    size_t nmodes = literal_modes(text, R->s->tok, d, R->ctx->lex_flags, unsure, modes);
    size_t max = sql_dynamic_text_max(R->s->tok, d), at[LITERAL_MODES + 1] = {0};
    if (!mr_rule_text_reserve(b, nmodes * max + 1))
        return !refused(R, index, "a string too large to read");
    for (size_t m = 0; m < nmodes; m++)
        at[m + 1] = at[m] + sql_dynamic_text(text, R->s->tok, d, modes[m], b->p + at[m]);
    b->len = at[nmodes];
    const mr_stmt_ctx *session = R->ctx;
    mr_stmt_ctx reading = *session;
    bool ok = true;
    R->ctx = &reading;
    R->dyn_depth++;
    for (size_t m = 0; ok && m < nmodes; m++) {
        reading.lex_flags = modes[m];
        ok = inner_passes(R, b->p + at[m], at[m + 1] - at[m], index);
    }
    R->dyn_depth--;
    R->ctx = session;
    return ok;
}

bool rules_dynamic(run *R, stmt *S, unsigned index)
{
    if (!R->rs || !R->rs->any_block || !sql_dynamic_may(S->text, S->len, R->ctx->lex_flags))
        return true;
    size_t count = 0;
    if (rules_lex(R, S->text, S->len, &count) != SQL_OK)
        return true; /* out of memory, or an error the unreadable policy saw */
    sql_dynamic d;
    sql_dynamic_find(S->text, R->s->tok, count, R->ctx->lex_flags, &d);
    switch (d.kind) {
    case SQL_DYN_NONE: return true;
    case SQL_DYN_HIDDEN: return !refused(R, index, d.what);
    case SQL_DYN_LITERAL: break;
    }
    return literal_passes(R, &d, S->text, index);
}
