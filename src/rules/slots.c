/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/slots.c - finds the source bytes behind every `?` and `(...)` of a
 * statement's digest, so a rewrite can splice the original literals.
 *
 * Pure, any thread. Owns nothing; writes only the caller's array.
 *
 * sql_digest writes text, not positions, so this walk follows its literal
 * grouping: a literal token, adjacent strings ('a' 'b'), a sign folded
 * into a number, an IN list or a run of VALUES rows made only of literals
 * (the list test itself, sql_digest_literal_row, is shared with the
 * digest). Both walks must agree; the matcher checks
 * that a statement has as many slots as the pattern it matched, and the
 * unit tests compare slot counts with digests.
 */
#include <string.h>

#include "myrewrite/sql/digest.h"
#include "rules/rules_impl.h"

typedef struct walker {
    const char *s;
    uint8_t prev_kind; /* last significant token, as the digest sees it */
    uint16_t prev_id;
    int depth;
    int values_depth; /* depth of a VALUES row list, -1 when none */
    bool last_str;    /* previous output piece was a string literal */
    rules_slot *out;
    size_t max;
    size_t n;
} walker;

static void add_slot(walker *w, uint32_t off, uint32_t end)
{
    if (w->n < w->max) {
        w->out[w->n].off = off;
        w->out[w->n].end = end;
    }
    w->n++;
}

/* 'a' 'b' is one literal to MySQL and one `?` in the digest. */
static void add_literal(walker *w, const sql_token *first, uint32_t end, bool is_string)
{
    if (is_string && w->last_str) {
        if (w->n > 0 && w->n <= w->max)
            w->out[w->n - 1].end = end;
    } else {
        add_slot(w, first->off, end);
    }
    w->last_str = is_string;
}

static bool collapse_in(sql_lexer *lx, sql_token *close)
{
    sql_lexer p = *lx;
    if (!sql_digest_literal_row(&p, true, close))
        return false;
    *lx = p;
    return true;
}

static bool collapse_rows(sql_lexer *lx, sql_token *close)
{
    sql_lexer p = *lx;
    if (!sql_digest_literal_row(&p, false, close))
        return false;
    *lx = p;
    for (;;) {
        sql_token t, c;
        sql_lexer q = p;
        if (!sql_lexer_next_sig(&q, &t) || t.kind != SQL_TOK_COMMA)
            break;
        if (!sql_lexer_next_sig(&q, &t) || t.kind != SQL_TOK_LPAREN ||
            !sql_digest_literal_row(&q, false, &c))
            break;
        *lx = p = q;
        *close = c;
    }
    return true;
}

static void on_word(walker *w, const sql_token *t)
{
    w->last_str = false;
    if (t->id == SQL_KW_NONE)
        return;
    if (sql_kw_flags((sql_kw)t->id) & SQL_KWF_LITERAL)
        add_literal(w, t, t->off + t->len, false);
    if (t->id == SQL_KW_VALUES || t->id == SQL_KW_VALUE)
        w->values_depth = w->depth;
}

static bool fold_sign(walker *w, sql_lexer *lx, const sql_token *t)
{
    sql_token nx;
    if (!sql_digest_sign_folds(lx, t, w->prev_kind, w->prev_id, &nx))
        return false;
    add_literal(w, t, nx.off + nx.len, false);
    w->prev_kind = SQL_TOK_NUMBER;
    return true;
}

static void on_lparen(walker *w, sql_lexer *lx, const sql_token *open)
{
    bool in_list = w->prev_kind == SQL_TOK_WORD && w->prev_id == SQL_KW_IN;
    bool row = w->values_depth == w->depth &&
               ((w->prev_kind == SQL_TOK_WORD &&
                 (w->prev_id == SQL_KW_VALUES || w->prev_id == SQL_KW_VALUE)) ||
                w->prev_kind == SQL_TOK_COMMA);
    sql_token close;
    w->last_str = false;
    if ((in_list && collapse_in(lx, &close)) || (row && collapse_rows(lx, &close))) {
        add_slot(w, open->off + 1, close.off);
        w->prev_kind = SQL_TOK_RPAREN;
        return;
    }
    w->depth++;
    w->prev_kind = SQL_TOK_LPAREN;
}

/* One significant token; false to stop (trailing ';'). */
static bool on_token(walker *w, sql_lexer *lx, const sql_token *t)
{
    w->values_depth = sql_digest_values_depth(w->values_depth, w->depth, t);
    if (t->kind == SQL_TOK_SEMI && !sql_digest_more_after_semi(lx))
        return false;
    if (sql_tok_is_literal(t->kind)) {
        add_literal(w, t, t->off + t->len, t->kind == SQL_TOK_STRING);
    } else if (t->kind == SQL_TOK_WORD) {
        on_word(w, t);
    } else if (t->kind == SQL_TOK_LPAREN) {
        on_lparen(w, lx, t);
        return true;
    } else if (t->kind == SQL_TOK_OP && fold_sign(w, lx, t)) {
        return true;
    } else {
        w->last_str = false;
        if (t->kind == SQL_TOK_RPAREN && w->depth > 0)
            w->depth--;
    }
    w->prev_kind = t->kind;
    w->prev_id = t->id;
    return true;
}

static bool walk(walker *w, sql_lexer *lx);

/* The digest normalizes an executable comment's body in place, literals
 * included, so its slots are found the same way. */
static bool walk_exec(walker *w, const sql_lexer *lx, const sql_token *t)
{
    size_t off, len;
    sql_exec_body(t, w->s, &off, &len);
    w->last_str = false;
    sql_lexer in = *lx;
    in.pos = off;
    in.n = off + len;
    in.in_exec = 1;
    in.prev = 0;
    bool ok = walk(w, &in);
    w->last_str = false;
    return ok;
}

static bool walk(walker *w, sql_lexer *lx)
{
    sql_token t;
    while (sql_lexer_next(lx, &t)) {
        if (t.kind == SQL_TOK_ERROR)
            return false;
        if (t.kind == SQL_TOK_COMMENT) {
            if (t.flags & SQL_TF_HINT)
                w->last_str = false; /* kept in the digest: separates strings */
            continue;
        }
        if (t.kind == SQL_TOK_EXEC_COMMENT) {
            if (!walk_exec(w, lx, &t))
                return false;
            continue;
        }
        if (!on_token(w, lx, &t))
            break;
    }
    return true;
}

size_t rules_slots(const char *s, size_t n, unsigned lex_flags, rules_slot *out, size_t max)
{
    walker w;
    memset(&w, 0, sizeof w);
    w.s = s;
    w.values_depth = -1;
    w.out = out;
    w.max = max;
    sql_lexer lx;
    sql_lexer_init(&lx, s, n, lex_flags & ~(unsigned)SQL_LEX_SKIP_COMMENTS);
    return walk(&w, &lx) ? w.n : SIZE_MAX;
}
