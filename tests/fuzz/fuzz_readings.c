/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_readings.c - block rules meet every reading of a text the server
 * may have (rules/readings.c), checked against plain readings.
 *
 * Feeds: byte 0 is the session: bits 0-1 the lexer flags it knows
 * (NO_BACKSLASH_ESCAPES, ANSI_QUOTES), bits 4-6 its multibyte rule (none,
 * big5, sjis, gbk, gb18030), bit 7 whether ANSI_QUOTES and the multibyte
 * rule are unsure (as in a session) or known. The rest is a COM_QUERY text,
 * matched against two block rules (UPDATE/DELETE without WHERE, a digest).
 * Checks beyond no crash: when the text is not refused, no statement of
 * any plain reading is one the rules block on its own: not of the text read
 * whole in any mode that may be in force at its start, nor of the rest of
 * such a reading read whole in any mode from any of its statement starts
 * (one mode change). Statements holding a ';' are left out of the check
 * (read alone, they would be read as several).
 */
#include <string.h>

#include "fuzz.h"
#include "myrewrite/core/rule_kinds.h"
#include "myrewrite/rules/rules.h"

#define MAX_STARTS 16

static const char rules_text[] = "[block no_where]\n"
                                 "statement = delete, update\n"
                                 "where = missing\n"
                                 "message = no WHERE\n"
                                 "[block no_secret]\n"
                                 "pattern = SELECT * FROM secret\n"
                                 "message = secret\n";

static const mr_ruleset *rules(void)
{
    static mr_ruleset *rs;
    if (!rs) {
        mr_diag d = {stderr, 0};
        rs = mr_rules_load_string(rules_text, "readings.rules", mr_rule_kinds_all, 1, &d);
        FUZZ_CHECK(rs);
    }
    return rs;
}

static mr_rules_scratch *scratch;
static mr_match_result res;

/* Refused at all (any), or by one of the two block rules (a DELAYED
 * statement is refused by its kind, which another reading leaves alone:
 * the server would refuse its syntax). */
static bool blocked(const char *sql, size_t len, const mr_stmt_ctx *ctx, bool any)
{
    mr_rules_apply(rules(), sql, len, ctx, scratch, &res);
    if (res.action != MR_ACT_BLOCK)
        return false;
    return any || strcmp(res.message, "no WHERE") == 0 || strcmp(res.message, "secret") == 0;
}

/* Does one statement of the text, read whole in `mode` from `from`, meet a
 * block on its own? Statement starts after the first go into starts[]. */
static bool reading_blocks(const char *sql, size_t len, size_t from, unsigned mode, size_t *starts,
                           size_t *nstarts)
{
    mr_stmt_ctx one = {.user = "app", .lex_flags = mode};
    while (from < len) {
        sql_span sp;
        size_t next;
        if (sql_split_first(sql + from, len - from, mode, &sp, &next) != SQL_OK)
            return false; /* the server stops at the error */
        const char *st = sql + from + sp.off;
        if (sp.len > 0 && !memchr(st, ';', sp.len) && blocked(st, sp.len, &one, false))
            return true;
        from += next;
        if (starts && from < len && *nstarts < MAX_STARTS)
            starts[(*nstarts)++] = from;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!scratch) {
        scratch = mr_rules_scratch_new();
        mr_buf_init(&res.text);
        mr_buf_init(&res.would_be);
    }
    unsigned mb = ((data[0] >> 4) & 7) % (SQL_LEX_MB_COUNT + 1);
    unsigned own = (data[0] & 3) | mb << 4;
    unsigned unsure = (data[0] & 0x80) ? SQL_LEX_ANSI_QUOTES | SQL_LEX_MB_MASK : 0;
    const char *sql = (const char *)data + 1;
    size_t len = size - 1;
    mr_stmt_ctx ctx = {.user = "app", .lex_flags = own, .lex_unsure = unsure};
    if (blocked(sql, len, &ctx, true))
        return 0;
    for (unsigned a = 0; a < 2; a++)
        for (unsigned m = 0; m <= SQL_LEX_MB_COUNT; m++) {
            unsigned start = own;
            if (unsure)
                start =
                    (own & SQL_LEX_NO_BACKSLASH_ESCAPES) | (a ? SQL_LEX_ANSI_QUOTES : 0) | m << 4;
            else if (a || m)
                continue;
            size_t starts[MAX_STARTS], n = 0;
            FUZZ_CHECK(!reading_blocks(sql, len, 0, start, starts, &n));
            for (size_t i = 0; i < n; i++)
                for (unsigned later = 0; later < 4 * (SQL_LEX_MB_COUNT + 1); later++)
                    FUZZ_CHECK(!reading_blocks(sql, len, starts[i], (later & 3) | (later >> 2) << 4,
                                               NULL, NULL));
        }
    return 0;
}
