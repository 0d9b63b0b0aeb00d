/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/explain.c - the dry run behind `myrewrite --explain` (see rules/rules.h):
 * runs the matcher with a trace and prints, one item per line, the digest,
 * every rule tried with the reason it did or did not apply, and the
 * outcome.
 *
 * Pure, any thread. Owns a scratch and a result for the length of one
 * call; counts no hits.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/sql/digest.h"
#include "rules/rules_impl.h"

typedef struct explainer {
    FILE *out;
    const mr_stmt_ctx *ctx;
    unsigned last_index; /* statement whose rules are being listed */
    const char *last_rewriter;
} explainer;

/* Statement text on one line: control bytes shown as \n, \t, \xNN. */
static void put_text(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            fputs("\\n", out);
        else if (c == '\t')
            fputs("\\t", out);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
}

static void on_statement(void *ctx, unsigned index, unsigned version, const char *text, size_t len,
                         const char *dig, uint64_t hash)
{
    explainer *E = ctx;
    if (version == RULES_VERSION_INNER)
        fprintf(E->out, "statement %u runs the SQL in its string literal: ", index);
    else if (version == 0)
        fprintf(E->out, "statement %u: ", index);
    else
        fprintf(E->out, "statement %u as rewritten by %s: ", index, E->last_rewriter);
    put_text(E->out, text, len);
    fputc('\n', E->out);
    if (!dig) {
        fprintf(E->out, "  does not lex: passed through untouched\n");
        return;
    }
    fprintf(E->out, "  digest: %s\n  digest hash: 0x%016" PRIx64 "\n", dig, hash);
    E->last_index = index;
}

static const char *action_word(const mr_rule *r)
{
    if (r->kind == MR_RULE_BLOCK)
        return "block";
    return "rewrite";
}

static void filter_why(explainer *E, const char *what, const char *want, const char *have)
{
    fprintf(E->out, "not matched: filter %s: rule is for '%s', session %s is %s%s%s", what, want,
            what, have ? "'" : "", have ? have : "unknown", have ? "'" : "");
}

static void why_text(explainer *E, const mr_ruleset *rs, size_t i, rule_why why, const char *detail)
{
    const mr_rule *r = &rs->rules[i];
    const rule_impl *im = &rs->impl[i];
    FILE *out = E->out;
    switch (why) {
    case WHY_MATCHED:
        /* a kind may say more (paginate: which of its rewrites; a default
         * delayed rule: which phase) */
        if (r->entry->explain_match)
            r->entry->explain_match(out, r, detail);
        else if (detail && detail[0]) /* dynamic = refuse: the form refused */
            fprintf(out, "matched: %s (%s)", action_word(r), detail);
        else
            fprintf(out, "matched: %s", action_word(r));
        if (r->cont && r->kind != MR_RULE_BLOCK)
            fputs(", continue", out);
        break;
    case WHY_LOG_ONLY:
        fprintf(out, "matched: %s, log_only: the original is sent", action_word(r));
        break;
    case WHY_DISABLED: fputs("not matched: disabled", out); break;
    case WHY_USER: filter_why(E, "user", r->user, E->ctx->user); break;
    case WHY_SCHEMA: filter_why(E, "schema", r->schema, E->ctx->schema); break;
    case WHY_DIGEST: fprintf(out, "not matched: digest differs (rule's: %s)", im->digest); break;
    case WHY_WORD:
        fprintf(out, "not matched: prefilter word '%s' absent, regex not run", im->require);
        break;
    case WHY_NO_MATCH: fputs("not matched: regex no match", out); break;
    case WHY_REGEX_ERROR: fprintf(out, "not matched: regex error: %s", detail); break;
    case WHY_NOT_KIND: fprintf(out, "not matched: %s", detail); break;
    case WHY_HAS_WHERE: fputs("not matched: has a WHERE clause", out); break;
    case WHY_UNSURE: fprintf(out, "not matched: %s, not blocked", detail); break;
    case WHY_PREPARED:
        fprintf(out, "not matched: skipped for prepared: would change parameters (%s)", detail);
        break;
    case WHY_BAD_RESULT: fprintf(out, "not matched: %s", detail); break;
    case WHY_SLOTS: fprintf(out, "not matched: %s", detail); break;
    case WHY_CHARSET: fprintf(out, "not applied: %s", detail); break;
    case WHY_NOTED: fprintf(out, "matched, the rules go on: %s", detail); break;
    }
}

static void on_rule(void *ctx, const mr_ruleset *rs, size_t i, rule_why why, const char *detail)
{
    explainer *E = ctx;
    const mr_rule *r = &rs->rules[i];
    fprintf(E->out, "  rule %s (%s:%d): ", r->name, r->file, r->line);
    why_text(E, rs, i, why, detail);
    fputc('\n', E->out);
    if (why == WHY_MATCHED && r->kind != MR_RULE_BLOCK)
        E->last_rewriter = r->name;
}

static void on_stopped(void *ctx, const mr_ruleset *rs, size_t from, size_t stopper)
{
    explainer *E = ctx;
    size_t n = rs->n - from;
    fprintf(E->out, "  %zu later rule%s not tried: %s matched without continue\n", n,
            n == 1 ? "" : "s", rs->rules[stopper].name);
}

/* The header: whole-text digest and statement count. */
static void header(FILE *out, const char *sql, size_t len, const mr_stmt_ctx *ctx)
{
    sql_digest_result dr;
    char probe[1];
    sql_rc rc = sql_digest(sql, len, ctx->lex_flags, probe, sizeof probe, &dr);
    char *dig = malloc(dr.full_len + 1);
    if (dig)
        sql_digest(sql, len, ctx->lex_flags, dig, dr.full_len + 1, &dr);
    fprintf(out, "digest: %s%s\ndigest hash: 0x%016" PRIx64 "\n", dig ? dig : "(out of memory)",
            rc == SQL_ERR ? " (stops at a lexing error)" : "", dr.hash);
    free(dig);
    size_t cap = 16, count = 0;
    sql_span *spans = malloc(cap * sizeof *spans);
    while (spans && sql_split(sql, len, ctx->lex_flags, spans, cap, &count) == SQL_PARTIAL) {
        sql_span *more = realloc(spans, cap * 2 * sizeof *spans);
        if (!more) {
            free(spans);
            spans = NULL;
            break;
        }
        spans = more;
        cap *= 2;
    }
    fprintf(out, "statements: %zu\n", spans ? count : (size_t)0);
    free(spans);
}

static void outcome(FILE *out, const mr_match_result *res)
{
    switch (res->action) {
    case MR_ACT_PASS: fputs("action: pass\ntext: (the original)\n", out); break;
    case MR_ACT_REWRITE:
        fputs("action: rewrite\ntext: ", out);
        put_text(out, (const char *)res->text.data, res->text.len);
        fputc('\n', out);
        if (res->group)
            fprintf(out,
                    "grouped: yes (rule %s has group_commit: in autocommit mode outside a "
                    "transaction this INSERT joins a multi-row INSERT of many sessions on the "
                    "proxy's own connection, answered after its commit; in a transaction it "
                    "goes on the client's connection as shown)\n",
                    res->group->name);
        if (res->read_pending)
            fprintf(out,
                    "read pending: yes (rule %s has read_pending: the point read returns the "
                    "table's value plus the deltas still pending for the key)\n",
                    res->read_pending->name);
        break;
    case MR_ACT_BLOCK:
        if (res->park)
            fputs("action: parked until the schema cache has the table (then the statement "
                  "is run again; after delayed_park_timeout it gets this error)\n",
                  out);
        else
            fputs("action: block\n", out);
        fprintf(out, "error: %u (%s) %s\n", res->err_code, res->sqlstate, res->message);
        break;
    case MR_ACT_DELAYED_MEMORY:
        fprintf(out,
                "action: delayed memory\nkeys: %u (added to the proxy's memory, answered "
                "with OK; nothing is sent)\n",
                res->dmem_keys);
        break;
    }
    fputs("matched:", out);
    for (unsigned k = 0; k < res->nmatched; k++)
        fprintf(out, "%s%s", k ? ", " : " ", res->matched[k]->name);
    fputs(res->nmatched ? "\n" : " none\n", out);
}

void mr_rules_explain(const mr_ruleset *rs, const char *sql, size_t len, const mr_stmt_ctx *ctx,
                      FILE *out)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    if (!s) {
        fputs("explain: out of memory\n", out);
        return;
    }
    explainer E = {.out = out, .ctx = ctx, .last_rewriter = "?"};
    rules_trace tr = {&E, on_statement, on_rule, on_stopped};
    mr_match_result res;
    memset(&res, 0, sizeof res);
    mr_buf_init(&res.text);
    mr_buf_init(&res.would_be);
    fputs("text: ", out);
    put_text(out, sql, len);
    fputc('\n', out);
    header(out, sql, len, ctx);
    fprintf(out, "rules: %zu\n", mr_ruleset_count(rs));
    rules_run(rs, sql, len, ctx, s, &res, &tr);
    outcome(out, &res);
    mr_buf_free(&res.text);
    mr_buf_free(&res.would_be);
    mr_rules_scratch_free(s);
}
