/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_delayed.c - the DELAYED statement reader: UPDATE/DELETE DELAYED
 * read against a delayed rule (delayed/sql/staging_read.c), the staging INSERT
 * written from it (delayed/sql/staging_sql.c), the memory-mode batch
 * (delayed/statement/mem_stmt.c) and the plain statement a pending
 * derivation sends (mr_delayed_strip).
 *
 * Feeds: byte 0: bit 0 a prepared text (its `?` take values from a fixed
 * list: a number, a string with a quote and a backslash, NULL), bit 1
 * NO_BACKSLASH_ESCAPES; the rest is the statement, read against each
 * delayed rule of fuzz_rules.h.
 * Checks beyond no crash: the staging INSERT always lexes and is an
 * INSERT; the stripped statement lexes and is the same kind of statement
 * without DELAYED; the table names fit 64 bytes; a batch's column
 * operations name the rule's columns, its text values lie in its text
 * buffer, and its key buffer is whole length-prefixed values, the same
 * number for every row; the staging INSERT's rows as data lie in its text,
 * and the INSERT joined with itself in a group batch (its add rows merged)
 * is one INSERT that lexes.
 */
#include <string.h>

#include "fuzz_rules.h"
#include "myrewrite/delayed/group_sql.h"
#include "myrewrite/delayed/mem.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/sql/stmt.h"

#define MAX_TOKENS 4096

static const mr_exec_param param_values[] = {
    {.kind = MR_EXEC_PARAM_INT, .n = 5},
    {.kind = MR_EXEC_PARAM_TEXT, .p = "it's \\ x", .len = 8},
    {.kind = MR_EXEC_PARAM_NULL},
};
static const mr_exec_params params = {param_values, 3};

static void check_batch(const mr_dmem_batch *b, const mr_delayed_def *def)
{
    for (unsigned i = 0; i < b->nops; i++) {
        FUZZ_CHECK(b->ops[i].col < mr_dmem_columns(def));
        if (b->ops[i].op == MR_DMEM_SET_TEXT)
            FUZZ_CHECK(b->ops[i].off + (size_t)b->ops[i].len <= b->text.len);
    }
    size_t pos = 0, values = 0;
    while (pos < b->keys.len) {
        uint32_t len;
        FUZZ_CHECK(pos + 4 <= b->keys.len);
        memcpy(&len, b->keys.data + pos, 4);
        FUZZ_CHECK(len <= b->keys.len - pos - 4);
        pos += 4 + len;
        values++;
    }
    FUZZ_CHECK(b->nrows > 0 && values % b->nrows == 0 && values / b->nrows >= def->nkeys);
}

/* The rows as data lie in the text, one after the other, each `(...)`
 * with its tail inside it. */
static void check_stage(const mr_dstage *st)
{
    size_t at = st->prefix_len;
    FUZZ_CHECK(st->nrows > 0 && at > 0 && at < st->len);
    for (uint32_t i = 0; i < st->nrows; i++) {
        const mr_dstage_row *r = &st->rows[i];
        FUZZ_CHECK(r->off == at + (i ? 2 : 0) && r->len >= 2 && r->off + r->len <= st->len);
        FUZZ_CHECK(st->text[r->off] == '(' && st->text[r->off + r->len - 1] == ')');
        FUZZ_CHECK(r->tail > r->off && r->tail < r->off + r->len);
        at = r->off + r->len;
    }
    FUZZ_CHECK(at == st->len);
}

/* The INSERT joined with itself in a group batch: one INSERT that lexes;
 * plain adds merge, so its rows are no more than twice the statement's. */
static void joined(const mr_dstage *st, unsigned flags)
{
    mr_dstage two[2] = {*st, *st};
    mr_buf out[1];
    size_t merged = 0;
    mr_buf_init(&out[0]);
    FUZZ_CHECK(mr_dgroup_build(two, 2, out, 1, &merged) == 1);
    FUZZ_CHECK(fuzz_lexes((const char *)out[0].data, out[0].len, flags));
    FUZZ_CHECK(merged <= 2 * (size_t)st->nrows && (st->ndelta || merged == 0));
    FUZZ_CHECK(out[0].len <= 2 * st->len);
    mr_buf_free(&out[0]);
}

static void against(const char *sql, const sql_token *tok, size_t ntok, const mr_delayed_stmt *d,
                    const mr_delayed_def *def, bool prepared, unsigned flags)
{
    char err[512];
    mr_buf out;
    mr_dstage_rows rows = {0};
    mr_buf_init(&out);
    if (mr_delayed_build(sql, tok, ntok, d, def, prepared, &out, &rows, err, sizeof err)) {
        FUZZ_CHECK(!out.failed && out.len > 12 && memcmp(out.data, "INSERT INTO ", 12) == 0);
        FUZZ_CHECK(fuzz_lexes((const char *)out.data, out.len, flags));
        mr_dstage st = mr_dstage_of((const char *)out.data, out.len, &rows);
        check_stage(&st);
        if (!prepared)
            joined(&st, flags);
    }
    mr_buf_free(&out);
    mr_buf_free(&rows.rows);
    mr_buf_free(&rows.d);
    mr_dmem_batch b;
    memset(&b, 0, sizeof b);
    mr_buf_init(&b.keys);
    mr_buf_init(&b.text);
    if (mr_dmem_read_stmt(sql, tok, d, def, flags & SQL_LEX_NO_BACKSLASH_ESCAPES,
                          prepared ? &params : NULL, &b, err, sizeof err))
        check_batch(&b, def);
    mr_dmem_batch_free(&b);
    mr_delayed_table_is(sql, tok, d, "shop", def);
}

static void stripped(const char *sql, size_t len, const sql_token *tok, const sql_stmt *st,
                     unsigned flags)
{
    static sql_token tok2[MAX_TOKENS];
    static sql_stmt st2;
    mr_buf out;
    mr_buf_init(&out);
    FUZZ_CHECK(mr_delayed_strip(sql, len, tok, st, &out) && !out.failed);
    size_t n2;
    const char *s2 = (const char *)out.data;
    FUZZ_CHECK(sql_lex(s2, out.len, flags, tok2, MAX_TOKENS, &n2) == SQL_OK);
    sql_stmt_parse(s2, tok2, n2, &st2);
    FUZZ_CHECK(st2.kind == st->kind && !(st2.mods & (1u << SQL_MOD_DELAYED)));
    mr_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static sql_token tok[MAX_TOKENS];
    static sql_stmt st;
    static mr_delayed_stmt d;
    if (size < 1)
        return 0;
    const mr_ruleset *rs = fuzz_rules();
    bool prepared = data[0] & 1;
    unsigned flags = (data[0] & 2) ? SQL_LEX_NO_BACKSLASH_ESCAPES : 0;
    const char *sql = (const char *)data + 1;
    size_t len = size - 1, ntok;
    if (sql_lex(sql, len, flags, tok, MAX_TOKENS, &ntok) != SQL_OK)
        return 0;
    sql_stmt_parse(sql, tok, ntok, &st);
    if (!mr_delayed_is_delayed(&st))
        return 0;
    char err[512], schema[65], table[65];
    if (!mr_delayed_parse(sql, tok, &st, &d, err, sizeof err))
        return 0;
    if (!(st.flags & SQL_SF_MULTI_STMT))
        stripped(sql, len, tok, &st, flags); /* as the session sends it: parsed first */
    if (mr_delayed_names(sql, tok, &d, "shop", schema, table))
        FUZZ_CHECK(strlen(schema) <= 64 && strlen(table) <= 64);
    mr_delayed_no_rule(sql, tok, &d, NULL, err, sizeof err);
    for (size_t i = 0; i < mr_ruleset_count(rs); i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        if (r->kind == MR_RULE_DELAYED)
            against(sql, tok, ntok, &d, r->delayed, prepared, flags);
    }
    return 0;
}
