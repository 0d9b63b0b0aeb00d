/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_sql.c - the SQL front end (sql/): lexer, statement splitter,
 * digest, statement recognizer and the client character-set guard.
 *
 * Feeds: byte 0's low bits are the lexer flags (NO_BACKSLASH_ESCAPES,
 * ANSI_QUOTES, SKIP_COMMENTS), bits 4-6 its multibyte rule (none, big5,
 * sjis, gbk, gb18030); the rest is a COM_QUERY text.
 * Checks beyond no crash: tokens lie inside the text, in order, without
 * overlap, and the bulk lexer agrees with the iterator; split spans lie
 * inside the text, in order, and sql_split_first finds the first of them;
 * the digest is a C string of the length it
 * reports, its hash is FNV-1a of its text when complete, and it is the same
 * when run twice, also into a smaller buffer (same hash, text a prefix);
 * every token index the recognizer returns is inside the token array.
 */
#include <string.h>

#include "fuzz.h"
#include "myrewrite/sql/charset_guard.h"
#include "myrewrite/sql/digest.h"
#include "myrewrite/sql/stmt.h"

#define MAX_TOKENS 4096
#define MAX_SPANS 256

static sql_token tok[MAX_TOKENS];

static void lex(const char *s, size_t n, unsigned flags, size_t *ntok)
{
    sql_rc rc = sql_lex(s, n, flags, tok, MAX_TOKENS, ntok);
    sql_lexer lx;
    sql_token t;
    sql_lexer_init(&lx, s, n, flags);
    size_t end = 0;
    for (size_t i = 0; i < *ntok; i++) {
        FUZZ_CHECK(tok[i].off >= end && tok[i].off + (size_t)tok[i].len <= n);
        end = tok[i].off + tok[i].len;
        FUZZ_CHECK(sql_lexer_next(&lx, &t) && memcmp(&t, &tok[i], sizeof t) == 0);
    }
    FUZZ_CHECK(rc != SQL_ERR || (*ntok > 0 && tok[*ntok - 1].kind == SQL_TOK_ERROR));
}

static void split(const char *s, size_t n, unsigned flags)
{
    static sql_span spans[MAX_SPANS];
    size_t count, end = 0;
    sql_rc rc = sql_split(s, n, flags, spans, MAX_SPANS, &count);
    FUZZ_CHECK(count <= MAX_SPANS);
    sql_span first;
    size_t next;
    sql_rc rc1 = sql_split_first(s, n, flags, &first, &next);
    FUZZ_CHECK(next <= n);
    if (count > 0 && (count > 1 || rc != SQL_ERR))
        FUZZ_CHECK(rc1 == SQL_OK && first.off == spans[0].off && first.len == spans[0].len);
    if (count == 0 && rc == SQL_OK)
        FUZZ_CHECK(rc1 == SQL_OK && first.len == 0);
    for (size_t i = 0; i < count; i++) {
        FUZZ_CHECK(spans[i].off >= end && spans[i].off + (size_t)spans[i].len <= n);
        end = spans[i].off + spans[i].len;
    }
}

static void digest(const char *s, size_t n, unsigned flags)
{
    static char out[SQL_DIGEST_DEFAULT_MAX], again[SQL_DIGEST_DEFAULT_MAX], small[64];
    sql_digest_result r1, r2, r3;
    sql_rc rc = sql_digest(s, n, flags, out, sizeof out, &r1);
    FUZZ_CHECK(strlen(out) == r1.len && r1.len <= r1.full_len &&
               r1.truncated == (r1.len < r1.full_len));
    if (rc == SQL_OK && !r1.truncated)
        FUZZ_CHECK(sql_hash64(out, r1.len) == r1.hash);
    FUZZ_CHECK(sql_digest(s, n, flags, again, sizeof again, &r2) == rc);
    FUZZ_CHECK(r2.hash == r1.hash && r2.len == r1.len && strcmp(out, again) == 0);
    sql_digest(s, n, flags, small, sizeof small, &r3);
    FUZZ_CHECK(r3.hash == r1.hash && r3.full_len == r1.full_len && r3.len < sizeof small);
    FUZZ_CHECK(memcmp(small, out, r3.len) == 0);
}

static bool index_ok(uint32_t i, size_t ntok) { return i == SQL_NONE || i <= ntok; }

static bool range_ok(sql_range r, size_t ntok)
{
    return r.first == SQL_NONE || (r.first <= r.end && r.end <= ntok);
}

static void recognize(const char *s, size_t ntok)
{
    static sql_stmt st;
    sql_stmt_parse(s, tok, ntok, &st);
    FUZZ_CHECK(st.kind <= SQL_STMT_OTHER && index_ok(st.verb, ntok) && st.end <= ntok);
    FUZZ_CHECK(st.ntables <= SQL_STMT_MAX_TABLES && st.nassign <= SQL_STMT_MAX_ASSIGN);
    FUZZ_CHECK(st.norder <= SQL_STMT_MAX_ORDER);
    for (unsigned i = 0; i < st.ntables; i++) {
        const sql_table_ref *t = &st.tables[i];
        FUZZ_CHECK(range_ok(t->span, ntok) && index_ok(t->name, ntok) && index_ok(t->alias, ntok));
        FUZZ_CHECK(index_ok(t->schema, ntok));
    }
    for (unsigned i = 0; i < st.nassign; i++)
        FUZZ_CHECK(range_ok(st.assign[i].column, ntok) && range_ok(st.assign[i].expr, ntok));
    for (unsigned i = 0; i < st.norder; i++)
        FUZZ_CHECK(range_ok(st.order[i].expr, ntok) && index_ok(st.order[i].dir, ntok));
    FUZZ_CHECK(range_ok(st.where.body, ntok) && range_ok(st.order_by.body, ntok));
    FUZZ_CHECK(range_ok(st.limit.span, ntok) && index_ok(st.limit.offset, ntok));
    FUZZ_CHECK(index_ok(st.limit.count, ntok) && range_ok(st.set.body, ntok));
    FUZZ_CHECK(range_ok(st.values.body, ntok) && range_ok(st.columns, ntok));
    for (unsigned m = 0; m < SQL_MOD__COUNT; m++)
        FUZZ_CHECK(index_ok(st.mod_tok[m], ntok));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mb = ((data[0] >> 4) & 7) % (SQL_LEX_MB_COUNT + 1);
    unsigned flags = (data[0] & 7) | mb << 4;
    const char *s = (const char *)data + 1;
    size_t n = size - 1, ntok;
    lex(s, n, flags, &ntok);
    split(s, n, flags);
    digest(s, n, flags);
    recognize(s, ntok);
    const char *name;
    mr_charset_statement(s, n, flags, &name);
    return 0;
}
