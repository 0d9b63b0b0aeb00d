/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/kill.c - reads a client's `KILL ... <id>` and writes it with another
 * id (see pool/kill.h).
 */
#include "myrewrite/pool/kill.h"

#include <stdio.h>

#include "myrewrite/sql/lexer.h"

/* A decimal of at most UINT32_MAX: its value into *v. */
static bool decimal(const char *p, size_t n, uint32_t *v)
{
    uint64_t x = 0;
    if (n == 0 || n > 10)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        x = x * 10 + (uint64_t)(p[i] - '0');
    }
    if (x > UINT32_MAX)
        return false;
    *v = (uint32_t)x;
    return true;
}

bool mr_pool_kill_read(const char *sql, size_t len, unsigned lex_flags, mr_pool_kill *k)
{
    sql_lexer lx;
    sql_token t;
    sql_lexer_init(&lx, sql, len, lex_flags);
    if (!sql_lexer_next_sig(&lx, &t) || t.kind != SQL_TOK_WORD || t.id != SQL_KW_KILL)
        return false;
    if (!sql_lexer_next_sig(&lx, &t))
        return false;
    if (sql_tok_is_word(&t, sql, "HARD") || sql_tok_is_word(&t, sql, "SOFT"))
        if (!sql_lexer_next_sig(&lx, &t))
            return false;
    k->connection = true;
    if (sql_tok_is_word(&t, sql, "QUERY") || sql_tok_is_word(&t, sql, "CONNECTION")) {
        k->connection = sql_tok_is_word(&t, sql, "CONNECTION");
        if (!sql_lexer_next_sig(&lx, &t))
            return false;
    }
    if (t.kind != SQL_TOK_NUMBER || !decimal(sql + t.off, t.len, &k->id))
        return false;
    k->num_off = t.off;
    k->num_len = t.len;
    while (sql_lexer_next_sig(&lx, &t)) /* the server drops trailing ';' */
        if (t.kind != SQL_TOK_SEMI)
            return false;
    return true;
}

void mr_pool_kill_rewrite(const char *sql, size_t len, const mr_pool_kill *k, uint32_t id,
                          mr_buf *out)
{
    char num[16];
    int n = snprintf(num, sizeof num, "%u", id);
    mr_buf_put(out, sql, k->num_off);
    mr_buf_put(out, num, (size_t)n);
    mr_buf_put(out, sql + k->num_off + k->num_len, len - k->num_off - k->num_len);
}
