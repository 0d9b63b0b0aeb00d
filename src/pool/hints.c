/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/hints.c - the words of a statement that tell the pool to pin its
 * session (see pool/hints.h). One pass of the lexer; no parse.
 */
#include "myrewrite/pool/hints.h"

#include <stdbool.h>

#include "myrewrite/sql/lexer.h"

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

static uint32_t words_of(const sql_lexer *lx, const sql_token *t, const char *sql, bool set_or_into)
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
    else if (call_of(lx, t, sql, "CONNECTION_ID"))
        pins |= MR_HINT(MR_PIN_CONNECTION_ID);
    for (unsigned i = 0; i < sizeof lock_fns / sizeof lock_fns[0]; i++)
        if (call_of(lx, t, sql, lock_fns[i]))
            pins |= MR_HINT(MR_PIN_LOCK_FUNCTION);
    return pins;
}

void mr_pool_hints_read(const char *sql, size_t len, unsigned lex_flags, mr_pool_hints *h)
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
        first = false;
        h->pins |= words_of(&lx, &t, sql, set_or_into);
    }
    h->replay_only = set_or_use && !h->pins;
}
