/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/keyset_writes.c - which tables a statement text may write, for
 * dropping keyset bookmarks (see paginate/keyset.h).
 *
 * Deliberately coarse, and wrong only towards dropping more: a statement
 * whose first word is INSERT, UPDATE, DELETE, REPLACE, LOAD, TRUNCATE,
 * ALTER, DROP, RENAME or CREATE counts every name in it as a table written
 * (column names and keywords only bump a few innocent slots: more misses,
 * never a stale seek); CALL, EXECUTE and DO may write anything; so may an
 * executable comment or a lexing error in a statement that writes or
 * before its first word.
 *
 * mr_keyset_temp_scan is as coarse the same way: a text that names
 * TEMPORARY anywhere (an executable comment's body included), or runs
 * what the proxy cannot read (CALL, EXECUTE [IMMEDIATE], a lexing error),
 * may create a temporary table. The bytes are searched first (the word,
 * and how each statement starts), so most texts are never lexed for it.
 *
 * Pure, any thread.
 */
#include <string.h>

#include "myrewrite/paginate/keyset.h"

void mr_keyset_writes_add(mr_keyset_writes *wr, uint64_t table_hash)
{
    for (unsigned i = 0; i < wr->n; i++)
        if (wr->slot[i] == table_hash)
            return;
    if (wr->n == MR_KEYSET_WRITE_SLOTS)
        wr->all = true;
    else
        wr->slot[wr->n++] = table_hash;
}

static bool writes_named_tables(unsigned id)
{
    switch (id) {
    case SQL_KW_INSERT:
    case SQL_KW_UPDATE:
    case SQL_KW_DELETE:
    case SQL_KW_REPLACE:
    case SQL_KW_LOAD:
    case SQL_KW_TRUNCATE:
    case SQL_KW_ALTER:
    case SQL_KW_DROP:
    case SQL_KW_RENAME:
    case SQL_KW_CREATE: return true;
    default: return false;
    }
}

static bool writes_anything(unsigned id)
{
    return id == SQL_KW_CALL || id == SQL_KW_EXECUTE || id == SQL_KW_DO;
}

static void add_name(mr_keyset_writes *wr, const char *sql, const sql_token *t)
{
    size_t off = t->off, n = t->len;
    if (t->kind == SQL_TOK_QIDENT && n >= 2) {
        off++;
        n -= 2;
    }
    mr_keyset_writes_add(wr, mr_keyset_table_hash(sql + off, n));
}

void mr_keyset_writes_scan(const char *sql, size_t len, unsigned lex_flags, mr_keyset_writes *wr)
{
    sql_lexer lx;
    sql_token t;
    bool at_start = true, writing = false;
    sql_lexer_init(&lx, sql, len, lex_flags | SQL_LEX_SKIP_COMMENTS);
    while (!wr->all && sql_lexer_next(&lx, &t)) {
        if (t.kind == SQL_TOK_COMMENT)
            continue;
        if (t.kind == SQL_TOK_SEMI) {
            at_start = true;
            writing = false;
        } else if (t.kind == SQL_TOK_EXEC_COMMENT || t.kind == SQL_TOK_ERROR) {
            wr->all |= at_start || writing; /* its body is not read */
        } else if (at_start) {
            at_start = false;
            writing = t.kind == SQL_TOK_WORD && writes_named_tables(t.id);
            wr->all |= t.kind == SQL_TOK_WORD && writes_anything(t.id);
        } else if (writing && (t.kind == SQL_TOK_WORD || t.kind == SQL_TOK_QIDENT)) {
            add_name(wr, sql, &t);
        }
    }
}

/* ---- temporary tables ---------------------------------------------------------- */

/* p[0..n) is the lower-case letters w in any case. */
static bool ieq(const char *p, const char *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((p[i] | 0x20) != w[i])
            return false;
    return true;
}

/* "temporary" in any case, found from its last letter: memchr runs over
 * the text in wide steps, and a `y` is rare in SQL but for BY. */
static bool names_temporary(const char *p, size_t len)
{
    for (int c = 0; c < 2; c++)
        for (const char *q = p + 8, *end = p + len; q < end; q++) {
            q = memchr(q, c ? 'Y' : 'y', (size_t)(end - q));
            if (!q)
                break;
            if (ieq(q - 8, "temporar", 8))
                return true;
        }
    return false;
}

/* Does a statement of the text start with CALL or EXEC(UTE), or with
 * something other than a letter (a comment, an executable comment)? */
static bool odd_start(const char *p, size_t len)
{
    for (size_t i = 0; i < len;) {
        while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
            i++;
        if (i < len && !((p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'z'))
            return true;
        if (len - i >= 4 && (ieq(p + i, "call", 4) || ieq(p + i, "exec", 4)))
            return true;
        const char *semi = memchr(p + i, ';', len - i);
        i = semi ? (size_t)(semi - p) + 1 : len;
    }
    return false;
}

bool mr_keyset_temp_scan(const char *sql, size_t len, unsigned lex_flags)
{
    if (len < 4 || (!names_temporary(sql, len) && !odd_start(sql, len)))
        return false; /* most texts: no lexing for it */
    sql_lexer lx;
    sql_token t;
    bool at_start = true;
    sql_lexer_init(&lx, sql, len, lex_flags | SQL_LEX_SKIP_COMMENTS);
    while (sql_lexer_next(&lx, &t)) {
        if (t.kind == SQL_TOK_COMMENT)
            continue;
        if (t.kind == SQL_TOK_ERROR ||
            (t.kind == SQL_TOK_EXEC_COMMENT && names_temporary(sql + t.off, t.len)) ||
            (t.kind == SQL_TOK_WORD && t.id == SQL_KW_TEMPORARY) ||
            (at_start && t.kind == SQL_TOK_WORD && (t.id == SQL_KW_CALL || t.id == SQL_KW_EXECUTE)))
            return true;
        at_start = t.kind == SQL_TOK_SEMI;
    }
    return false;
}
