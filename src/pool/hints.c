/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/hints.c - the words of a statement that tell the pool to pin its
 * session (see pool/hints.h). One pass of the lexer; no parse.
 */
#include "myrewrite/pool/hints.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/sql/lexer.h"
#include "myrewrite/sql/token_value.h"

static bool word(const sql_token *t, const char *sql, const char *w)
{
    return t->kind == SQL_TOK_WORD && sql_tok_is_word(t, sql, w);
}

/* A function name: the word is followed by '(' (the lexer's look-ahead). */
static bool call_of(const sql_lexer *lx, const sql_token *t, const char *sql, const char *w)
{
    if (!word(t, sql, w))
        return false;
    sql_lexer ahead = *lx;
    sql_token n;
    return sql_lexer_next_sig(&ahead, &n) && n.kind == SQL_TOK_LPAREN;
}

/* A user variable assigned: in a SET, after INTO, or before `:=`. One only
 * read needs no pin: a session that assigns one keeps its connection to
 * the end, which is then closed, so no pooled connection holds any. */
static bool assigned(const sql_lexer *lx, const sql_token *t, bool set_or_into)
{
    if (t->kind != SQL_TOK_VAR)
        return false;
    sql_lexer ahead = *lx;
    sql_token n;
    return set_or_into ||
           (sql_lexer_next_sig(&ahead, &n) && n.kind == SQL_TOK_OP && n.id == SQL_OP_ASSIGN);
}

static uint32_t words_of(const sql_lexer *lx, const sql_token *t, const char *sql, bool set_or_into,
                         bool own)
{
    static const char *const lock_fns[] = {"GET_LOCK", "RELEASE_LOCK", "RELEASE_ALL_LOCKS",
                                           "IS_USED_LOCK"};
    uint32_t pins = 0;
    if (assigned(lx, t, set_or_into))
        pins |= MR_HINT(MR_PIN_USER_VARIABLE);
    else if (word(t, sql, "TEMPORARY"))
        pins |= MR_HINT(MR_PIN_TEMPORARY_TABLE);
    else if (word(t, sql, "SQL_CALC_FOUND_ROWS"))
        pins |= MR_HINT(MR_PIN_FOUND_ROWS);
    else if (!own && call_of(lx, t, sql, "CONNECTION_ID"))
        pins |= MR_HINT(MR_PIN_CONNECTION_ID);
    for (unsigned i = 0; i < sizeof lock_fns / sizeof lock_fns[0]; i++)
        if (call_of(lx, t, sql, lock_fns[i]))
            pins |= MR_HINT(MR_PIN_LOCK_FUNCTION);
    return pins;
}

void mr_pool_hints_read(const char *sql, size_t len, unsigned lex_flags, bool own, mr_pool_hints *h)
{
    sql_lexer lx;
    sql_token t;
    bool first = true, set_or_use = false, set_or_into = false;
    *h = (mr_pool_hints){0};
    sql_lexer_init(&lx, sql, len, lex_flags);
    while (sql_lexer_next_sig(&lx, &t)) {
        if (t.kind == SQL_TOK_EXEC_COMMENT || t.kind == SQL_TOK_ERROR) {
            h->maybe |= MR_HINT(MR_PIN_STATE_CHANGE); /* unread words: any change pins */
            set_or_use = false;
            continue;
        }
        if (first)
            set_or_into = word(&t, sql, "SET");
        if (first)
            set_or_use = word(&t, sql, "SET") || word(&t, sql, "USE");
        else if (word(&t, sql, "INTO"))
            set_or_into = true;
        if (t.kind == SQL_TOK_VAR)
            h->maybe |= MR_HINT(MR_PIN_USER_VARIABLE);
        else if (word(&t, sql, "SELECT") || t.kind == SQL_TOK_SEMI)
            set_or_use = false; /* a subquery, or a second statement */
        if (first && (word(&t, sql, "PREPARE") || word(&t, sql, "EXECUTE")))
            h->maybe |= MR_HINT(MR_PIN_PREPARED_SQL);
        if (word(&t, sql, "CALL") || word(&t, sql, "EXECUTE"))
            h->opaque = true;
        first = false;
        h->pins |= words_of(&lx, &t, sql, set_or_into, own);
        if (t.kind == SQL_TOK_WORD && t.len > 14 &&
            strncasecmp(sql + t.off, "session_track_", 14) == 0)
            h->tracking = true;
    }
    h->replay_only = set_or_use && !h->pins;
}

bool mr_pool_own_connection_id(const char *sql, size_t len, unsigned lex_flags, uint32_t id,
                               mr_buf *out)
{
    sql_lexer lx;
    sql_token t;
    size_t copied = 0;
    char num[16];
    int nlen = snprintf(num, sizeof num, "%u", id);
    sql_lexer_init(&lx, sql, len, lex_flags);
    while (sql_lexer_next_sig(&lx, &t)) {
        if (!call_of(&lx, &t, sql, "CONNECTION_ID"))
            continue;
        sql_token open, close;
        sql_lexer ahead = lx;
        if (!sql_lexer_next_sig(&ahead, &open) || !sql_lexer_next_sig(&ahead, &close) ||
            close.kind != SQL_TOK_RPAREN)
            continue; /* CONNECTION_ID takes no argument: the server's error stands */
        mr_buf_put(out, sql + copied, t.off - copied);
        mr_buf_put(out, num, (size_t)nlen);
        copied = close.off + close.len;
        lx = ahead;
    }
    if (!copied)
        return false;
    mr_buf_put(out, sql + copied, len - copied);
    return true;
}

/* One `[SESSION | LOCAL | @@session. | @@local. | @@]name = value`. */
static bool track_assignment(sql_lexer *lx, const char *sql, unsigned lex_flags,
                             mr_pool_track_set *out, bool *more)
{
    sql_token t, eq, v, next;
    if (!sql_lexer_next_sig(lx, &t))
        return false;
    if (word(&t, sql, "SESSION") || word(&t, sql, "LOCAL"))
        if (!sql_lexer_next_sig(lx, &t))
            return false;
    const char *name = sql + t.off;
    size_t nlen = t.len;
    if (t.kind == SQL_TOK_SYSVAR) { /* @@x, @@session.x, @@local.x */
        const char *dot = memchr(name, '.', nlen);
        if (dot &&
            (strncasecmp(name, "@@session.", 10) == 0 || strncasecmp(name, "@@local.", 8) == 0))
            nlen -= (size_t)(dot + 1 - name), name = dot + 1;
        else if (!dot)
            nlen -= 2, name += 2;
        else
            return false; /* @@global.: not the session's */
    } else if (t.kind != SQL_TOK_WORD) {
        return false;
    }
    if (nlen >= sizeof out->name || !sql_lexer_next_sig(lx, &eq) || eq.kind != SQL_TOK_OP ||
        (eq.id != SQL_OP_EQ && eq.id != SQL_OP_ASSIGN) || !sql_lexer_next_sig(lx, &v))
        return false;
    memcpy(out->name, name, nlen);
    out->name[nlen] = '\0';
    if (v.kind == SQL_TOK_STRING && !(v.flags & SQL_TF_INTRODUCER) && v.len < sizeof out->value) {
        size_t n = sql_tok_string(&v, sql, lex_flags, out->value);
        out->value[n] = '\0';
    } else if ((v.kind == SQL_TOK_WORD && !word(&v, sql, "DEFAULT")) || v.kind == SQL_TOK_NUMBER) {
        if (v.len >= sizeof out->value)
            return false;
        memcpy(out->value, sql + v.off, v.len);
        out->value[v.len] = '\0';
    } else {
        return false;
    }
    *more = sql_lexer_next_sig(lx, &next);
    return !*more || next.kind == SQL_TOK_COMMA || next.kind == SQL_TOK_SEMI;
}

int mr_pool_track_sets(const char *sql, size_t len, unsigned lex_flags, mr_pool_track_set *out,
                       int max)
{
    sql_lexer lx;
    sql_token t;
    sql_lexer_init(&lx, sql, len, lex_flags);
    if (!sql_lexer_next_sig(&lx, &t) || !word(&t, sql, "SET"))
        return -1;
    int n = 0;
    bool more = true;
    mr_pool_track_set one;
    while (more) {
        if (!track_assignment(&lx, sql, lex_flags, &one, &more))
            return -1;
        if (strncasecmp(one.name, "session_track_", 14) != 0)
            continue;
        if (n == max)
            return -1;
        out[n++] = one;
    }
    return n;
}
