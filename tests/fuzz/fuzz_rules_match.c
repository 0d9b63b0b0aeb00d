/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_rules_match.c - the rule matcher (rules/match.c and the kinds it
 * calls) with the fixed set of fuzz_rules.h applied to fuzzed statements.
 *
 * Feeds: byte 0 sets the session: bit 0 a COM_STMT_PREPARE text, bits 1-2
 * the lexer flags (NO_BACKSLASH_ESCAPES, ANSI_QUOTES), bits 3-4 the
 * unreadable policy, bit 5 the default schema (shop or none), bit 6 an
 * unsafe client character set (gbk, read with its multibyte rule), bit 7 also the dry run (explain,
 * as the admin console's EXPLAIN REWRITE runs it). The rest is the COM_QUERY text. Checks beyond no
 * crash: the action is one of the four; a block carries its code, SQLSTATE and message; a rewrite
 * result always lexes when the statement did; a text that lexes is never taken for unreadable; a
 * memory-mode DELAYED carries its batch; the digest is a C string of the
 * length reported; applying the rules twice gives the same action, text
 * and digest. As in a session, ANSI_QUOTES and the multibyte rule are
 * unsure: the other readings of the text (rules/readings.c) run too.
 */
#include <string.h>

#include "fuzz_rules.h"

static void apply(const mr_ruleset *rs, const char *sql, size_t len, const mr_stmt_ctx *ctx,
                  mr_rules_scratch *s, mr_match_result *res)
{
    memset(res, 0, sizeof *res);
    mr_buf_init(&res->text);
    mr_buf_init(&res->would_be);
    mr_rules_apply(rs, sql, len, ctx, s, res);
}

static void check(const mr_match_result *res, const char *sql, size_t len, unsigned flags)
{
    bool lexes = fuzz_lexes(sql, len, flags);
    FUZZ_CHECK(res->action <= MR_ACT_DELAYED_MEMORY);
    FUZZ_CHECK(!res->text.failed && res->nmatched <= MR_MATCH_MAX_RULES);
    if (res->action == MR_ACT_BLOCK)
        FUZZ_CHECK(res->err_code && strlen(res->sqlstate) == 5 && res->message);
    if (res->action == MR_ACT_REWRITE && lexes)
        FUZZ_CHECK(fuzz_lexes((const char *)res->text.data, res->text.len, flags));
    if (lexes)
        FUZZ_CHECK(res->unreadable == MR_UNREADABLE_NONE);
    if (res->action == MR_ACT_DELAYED_MEMORY)
        FUZZ_CHECK(res->dmem);
}

static void explain(const mr_ruleset *rs, const char *sql, size_t len, const mr_stmt_ctx *ctx)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&buf, &n);
    FUZZ_CHECK(out);
    mr_rules_explain(rs, sql, len, ctx, out);
    fclose(out);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static mr_rules_scratch *scratch;
    if (size < 1)
        return 0;
    const mr_ruleset *rs = fuzz_rules();
    if (!scratch)
        scratch = mr_rules_scratch_new();
    uint8_t o = data[0];
    mr_stmt_ctx ctx = {
        .user = "app",
        .schema = (o & 0x20) ? NULL : "shop",
        .prepared = o & 1,
        .lex_flags = ((o >> 1) & 3) | ((o & 0x40) ? SQL_LEX_MB_GBK : 0),
        .lex_unsure = SQL_LEX_ANSI_QUOTES | SQL_LEX_MB_MASK,
        .skip_locked = true,
        .charset_unsafe = (o & 0x40) ? "gbk" : NULL,
        .unreadable = (uint8_t)(((o >> 3) & 3) % 3),
    };
    const char *sql = (const char *)data + 1;
    size_t len = size - 1;
    mr_match_result a, b;
    apply(rs, sql, len, &ctx, scratch, &a);
    check(&a, sql, len, ctx.lex_flags);
    uint64_t hash = a.digest_hash;
    size_t dlen = a.digest ? strlen(a.digest) : 0;
    apply(rs, sql, len, &ctx, scratch, &b);
    FUZZ_CHECK(a.action == b.action && hash == b.digest_hash);
    FUZZ_CHECK(!b.digest || strlen(b.digest) == dlen);
    FUZZ_CHECK(a.text.len == b.text.len &&
               (!a.text.len || memcmp(a.text.data, b.text.data, a.text.len) == 0));
    if (o & 0x80)
        explain(rs, sql, len, &ctx);
    mr_buf_free(&a.text);
    mr_buf_free(&a.would_be);
    mr_buf_free(&b.text);
    mr_buf_free(&b.would_be);
    return 0;
}
