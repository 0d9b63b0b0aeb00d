/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rules.h - helpers shared by the test_rules_*.c programs: load rules
 * from a string while capturing diagnostics, apply them, and check output.
 */
#ifndef TEST_RULES_H
#define TEST_RULES_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/core/rule_kinds.h"
#include "myrewrite/rules/rules.h"

typedef struct loaded {
    mr_ruleset *rs;
    char *diag; /* everything reported, one error per line */
    size_t diag_len;
    int errors;
} loaded;

static inline loaded load_named(const char *text, const char *name, unsigned shards)
{
    loaded l = {0};
    mr_diag d = {open_memstream(&l.diag, &l.diag_len), 0};
    assert_non_null(d.out);
    l.rs = mr_rules_load_string(text, name, mr_rule_kinds_all, shards, &d);
    fclose(d.out);
    l.errors = d.errors;
    return l;
}

static inline loaded load(const char *text) { return load_named(text, "t.rules", 1); }

static inline void loaded_free(loaded *l)
{
    mr_ruleset_free(l->rs);
    free(l->diag);
    memset(l, 0, sizeof *l);
}

/* Loads text that must be valid. */
static inline mr_ruleset *load_ok(const char *text)
{
    loaded l = load(text);
    if (!l.rs || l.errors)
        fail_msg("unexpected load errors:\n%s", l.diag);
    mr_ruleset *rs = l.rs;
    free(l.diag);
    return rs;
}

/* Loads text that must fail with exactly `want` as its only diagnostic. */
static inline void expect_error(const char *text, const char *want)
{
    loaded l = load(text);
    if (l.rs || l.errors != 1 || strcmp(l.diag, want) != 0)
        fail_msg("rules:\n%s\nwanted one error:\n%sgot %d error(s):\n%s", text, want, l.errors,
                 l.diag);
    loaded_free(&l);
}

/* A result that owns its text; free with result_free. */
static inline mr_match_result result_new(void)
{
    mr_match_result r;
    memset(&r, 0, sizeof r);
    mr_buf_init(&r.text);
    mr_buf_init(&r.would_be);
    return r;
}

static inline void result_free(mr_match_result *r)
{
    mr_buf_free(&r->text);
    mr_buf_free(&r->would_be);
}

/* Applies rs to sql with ctx (NULL = anonymous COM_QUERY). */
static inline void apply_ctx(const mr_ruleset *rs, const char *sql, const mr_stmt_ctx *ctx,
                             mr_rules_scratch *s, mr_match_result *res)
{
    static const mr_stmt_ctx none = {0};
    mr_rules_apply(rs, sql, strlen(sql), ctx ? ctx : &none, s, res);
}

/* The text that would reach the server: rewritten or original. */
static inline char *sent_text(const mr_match_result *res, const char *sql)
{
    if (res->action == MR_ACT_REWRITE)
        return strndup((const char *)res->text.data, res->text.len);
    return strdup(sql);
}

/* Applies and checks the action and the text sent. */
static inline void expect_sent(const mr_ruleset *rs, const mr_stmt_ctx *ctx, const char *sql,
                               mr_action action, const char *want)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, ctx, s, &res);
    char *got = sent_text(&res, sql);
    if (res.action != action || strcmp(got, want) != 0)
        fail_msg("statement: %s\nwanted action %d: %s\ngot action %d: %s", sql, action, want,
                 res.action, got);
    free(got);
    result_free(&res);
    mr_rules_scratch_free(s);
}

/* Applies and checks a DELAYED refusal (1235) whose message holds `want`. */
static inline void expect_refused_with(const mr_ruleset *set, const mr_stmt_ctx *ctx,
                                       const char *sql, const char *want)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(set, sql, ctx, s, &res);
    if (res.action != MR_ACT_BLOCK || !res.message || !strstr(res.message, want))
        fail_msg("statement: %s\nwanted refusal with: %s\ngot action %d: %s", sql, want, res.action,
                 res.message ? res.message : "(none)");
    assert_int_equal(res.err_code, 1235);
    result_free(&res);
    mr_rules_scratch_free(s);
}

static inline char *explain_text(const mr_ruleset *rs, const mr_stmt_ctx *ctx, const char *sql)
{
    static const mr_stmt_ctx none = {0};
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_non_null(out);
    mr_rules_explain(rs, sql, strlen(sql), ctx ? ctx : &none, out);
    fclose(out);
    return buf;
}

/* Fails unless the explain output of sql holds `line` as a whole line. */
static inline void expect_explain_line(const mr_ruleset *rs, const mr_stmt_ctx *ctx,
                                       const char *sql, const char *line)
{
    char *text = explain_text(rs, ctx, sql);
    size_t n = strlen(line);
    bool found = false;
    for (const char *p = text; p && *p && !found;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        found = len == n && memcmp(p, line, n) == 0;
        p = nl ? nl + 1 : NULL;
    }
    if (!found)
        fail_msg("explain of %s lacks the line\n%s\nexplain:\n%s", sql, line, text);
    free(text);
}

#endif
