/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/rewrite.c - builds the text a matched rewrite or regex rule sends,
 * and decides whether it may be sent: it must lex as one statement, and a
 * prepared statement must keep its `?` parameters, same number, same
 * order.
 *
 * Pure, any thread. Owns nothing; writes only the caller's scratch and
 * output buffer.
 */
#include <string.h>

#include "rules/rules_run.h"

/* The `?` parameters of S: their offsets in s->params, their count, or
 * -1; collected once per statement version. */
static int stmt_params(run *R, stmt *S)
{
    if (S->nparams >= 0)
        return S->nparams;
    sql_lexer lx;
    sql_lexer_init(&lx, S->text, S->len, R->ctx->lex_flags);
    sql_token t;
    size_t n = 0;
    while (sql_lexer_next(&lx, &t)) {
        if (t.kind == SQL_TOK_ERROR)
            return -1;
        if (t.kind != SQL_TOK_PARAM)
            continue;
        if (!GROW(R->s->params, R->s->param_cap, n + 1))
            return -1;
        R->s->params[n++] = t.off;
    }
    S->nparams = (int)n;
    return S->nparams;
}

/* The result must lex and stay one statement: a rewrite may never turn
 * one statement into two. */
static bool result_ok(const run *R, const char *text, size_t len, int *nparams)
{
    sql_lexer lx;
    sql_lexer_init(&lx, text, len, R->ctx->lex_flags);
    sql_token t;
    bool any = false, after_semi = false;
    *nparams = 0;
    while (sql_lexer_next(&lx, &t)) {
        if (t.kind == SQL_TOK_ERROR)
            return false;
        if (t.kind == SQL_TOK_COMMENT)
            continue;
        if (t.kind == SQL_TOK_SEMI) {
            after_semi = any;
            continue;
        }
        if (after_semi)
            return false;
        any = true;
        *nparams += t.kind == SQL_TOK_PARAM;
    }
    return any;
}

static size_t lower_bound(const uint32_t *v, size_t n, uint32_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A digest rewrite keeps a prepared statement's parameters when the
 * slots holding them are used once each, in their original order. */
static bool digest_keeps_params(const run *R, const rule_impl *im, size_t np)
{
    const uint32_t *pv = R->s->params;
    size_t expect = 0;
    for (size_t k = 0; k < im->ntpl; k++) {
        if (im->tpl[k].ref < 0)
            continue;
        const rules_slot *sl = &R->s->slots[im->tpl[k].ref];
        size_t lo = lower_bound(pv, np, sl->off), hi = lower_bound(pv, np, sl->end);
        if (hi == lo)
            continue;
        if (lo != expect)
            return false;
        expect = hi;
    }
    return expect == np;
}

static rule_why check_result(run *R, const bytes *out, int in_params)
{
    int out_params;
    if (!result_ok(R, out->p, out->len, &out_params)) {
        snprintf(R->detail, sizeof R->detail, "the rewritten text would not lex as one statement");
        return WHY_BAD_RESULT;
    }
    if (R->ctx->prepared && out_params != in_params) {
        snprintf(R->detail, sizeof R->detail, "%d parameter%s instead of %d", out_params,
                 out_params == 1 ? "" : "s", in_params);
        return WHY_PREPARED;
    }
    return WHY_MATCHED;
}

/* ---- rewriting ---------------------------------------------------------------------- */

static bool put(bytes *b, const char *p, size_t n)
{
    if (!GROW(b->p, b->cap, b->len + n + 1))
        return false;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return true;
}

static rule_why find_slots(run *R, const stmt *S, const rule_impl *im)
{
    size_t k = rules_slots(S->text, S->len, R->ctx->lex_flags, R->s->slots, R->s->slot_cap);
    if (k != SIZE_MAX && k > R->s->slot_cap && GROW(R->s->slots, R->s->slot_cap, k))
        k = rules_slots(S->text, S->len, R->ctx->lex_flags, R->s->slots, R->s->slot_cap);
    if (k == im->nslots && k <= R->s->slot_cap)
        return WHY_MATCHED;
    snprintf(R->detail, sizeof R->detail, "statement has %zu literal slots, pattern %u", k,
             im->nslots);
    return WHY_SLOTS;
}

/* Literals are copied byte for byte from the statement, quotes,
 * introducers and signs included, so none can change meaning. */
rule_why rules_digest_rewrite(run *R, stmt *S, const rule_impl *im, bytes *out)
{
    rule_why why = find_slots(R, S, im);
    if (why != WHY_MATCHED)
        return why;
    out->len = 0;
    bool ok = true;
    for (size_t k = 0; k < im->ntpl && ok; k++) {
        const tpl_piece *p = &im->tpl[k];
        if (p->ref < 0) {
            ok = put(out, im->tpl_text + p->off, p->len);
        } else {
            const rules_slot *sl = &R->s->slots[p->ref];
            ok = put(out, S->text + sl->off, sl->end - sl->off);
        }
    }
    if (!ok) {
        snprintf(R->detail, sizeof R->detail, "out of memory");
        return WHY_BAD_RESULT;
    }
    int np = 0;
    if (R->ctx->prepared) {
        np = stmt_params(R, S);
        if (np < 0 || !digest_keeps_params(R, im, (size_t)np)) {
            snprintf(R->detail, sizeof R->detail, "parameters would be reordered or dropped");
            return WHY_PREPARED;
        }
    }
    return check_result(R, out, np);
}

static void add_seg(mr_rules_scratch *s, size_t out, size_t len, long long in)
{
    if (len == 0)
        return;
    if (!GROW(s->segs, s->seg_cap, s->nseg + 1)) {
        s->seg_failed = true;
        return;
    }
    s->segs[s->nseg++] = (seg){out, len, in};
}

/* Called by pcre2_substitute for each substitution (prepared statements
 * only): records which output bytes were copied from which input bytes. */
static int on_substitute(pcre2_substitute_callout_block *b, void *data)
{
    mr_rules_scratch *s = data;
    const PCRE2_SIZE *ov = b->ovector;
    size_t o = b->output_offsets[0];
    if (ov[0] < s->seg_in || o - s->seg_out != ov[0] - s->seg_in)
        s->seg_failed = true;
    add_seg(s, s->seg_out, ov[0] - s->seg_in, (long long)s->seg_in);
    const rule_impl *im = s->seg_rule;
    for (size_t k = 0; k < im->ntpl; k++) {
        const tpl_piece *p = &im->tpl[k];
        if (p->ref < 0) {
            add_seg(s, o, p->len, -1);
            o += p->len;
            continue;
        }
        uint32_t g = (uint32_t)p->ref;
        if (g >= b->oveccount || ov[2 * g] == PCRE2_UNSET || ov[2 * g + 1] < ov[2 * g])
            continue;
        add_seg(s, o, ov[2 * g + 1] - ov[2 * g], (long long)ov[2 * g]);
        o += ov[2 * g + 1] - ov[2 * g];
    }
    if (o != b->output_offsets[1])
        s->seg_failed = true;
    s->seg_in = ov[1];
    s->seg_out = b->output_offsets[1];
    return 0;
}

/* Every `?` of the output must be an input parameter copied unchanged,
 * and they must come in the input's order. */
static bool regex_keeps_params(run *R, const bytes *out, size_t np)
{
    mr_rules_scratch *s = R->s;
    if (s->seg_failed)
        return false;
    sql_lexer lx;
    sql_lexer_init(&lx, out->p, out->len, R->ctx->lex_flags);
    sql_token t;
    size_t expect = 0, k = 0;
    while (sql_lexer_next(&lx, &t)) {
        if (t.kind != SQL_TOK_PARAM)
            continue;
        while (k < s->nseg && s->segs[k].out + s->segs[k].len <= t.off)
            k++;
        if (k == s->nseg || s->segs[k].out > t.off || s->segs[k].in < 0)
            return false;
        size_t in = (size_t)s->segs[k].in + (t.off - s->segs[k].out);
        size_t at = lower_bound(s->params, np, (uint32_t)in);
        if (at != expect || at >= np || s->params[at] != in)
            return false;
        expect++;
    }
    return expect == np;
}

rule_why rules_regex_error(run *R, int rc)
{
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(rc, msg, sizeof msg);
    snprintf(R->detail, sizeof R->detail, "pcre2: %s", (const char *)msg);
    return WHY_REGEX_ERROR;
}

static int substitute(run *R, const stmt *S, const mr_rule *r, const rule_impl *im, bytes *out)
{
    mr_rules_scratch *s = R->s;
    uint32_t opts = PCRE2_SUBSTITUTE_MATCHED | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH |
                    PCRE2_SUBSTITUTE_UNSET_EMPTY | (im->global ? PCRE2_SUBSTITUTE_GLOBAL : 0);
    int rc = PCRE2_ERROR_NOMEMORY;
    for (int attempt = 0; attempt < 3 && rc == PCRE2_ERROR_NOMEMORY; attempt++) {
        s->nseg = 0;
        s->seg_failed = false;
        s->seg_in = s->seg_out = 0;
        PCRE2_SIZE olen = out->cap;
        rc = pcre2_substitute(im->re, (PCRE2_SPTR)S->text, S->len, 0, opts, s->md, s->mctx,
                              (PCRE2_SPTR)r->replacement, PCRE2_ZERO_TERMINATED,
                              (PCRE2_UCHAR *)out->p, &olen);
        if (rc == PCRE2_ERROR_NOMEMORY) {
            /* the global search went on in the match data: match afresh */
            opts &= ~(uint32_t)PCRE2_SUBSTITUTE_MATCHED;
            if (!GROW(out->p, out->cap, olen + 1))
                break;
        } else if (rc >= 0) {
            out->len = olen;
        }
    }
    return rc;
}

rule_why rules_regex_rewrite(run *R, stmt *S, const mr_rule *r, const rule_impl *im, bytes *out)
{
    mr_rules_scratch *s = R->s;
    bool prepared = R->ctx->prepared;
    if (!GROW(out->p, out->cap, S->len + 256))
        return rules_regex_error(R, PCRE2_ERROR_NOMEMORY);
    if (prepared) {
        s->seg_rule = im;
        pcre2_set_substitute_callout(s->mctx, on_substitute, s);
    }
    int rc = substitute(R, S, r, im, out);
    if (prepared)
        pcre2_set_substitute_callout(s->mctx, NULL, NULL);
    if (rc < 0)
        return rules_regex_error(R, rc);
    int np = 0;
    if (prepared) {
        add_seg(s, s->seg_out, S->len - s->seg_in, (long long)s->seg_in);
        np = stmt_params(R, S);
        if (np < 0 || !regex_keeps_params(R, out, (size_t)np)) {
            snprintf(R->detail, sizeof R->detail, "parameters would be moved, added or dropped");
            return WHY_PREPARED;
        }
    }
    return check_result(R, out, np);
}
