/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/kind_pattern.c - the kinds matched by their compiled pattern
 * (rules/compile.c): rewrite (digest pattern -> replacement), regex (pcre2
 * -> replacement) and block (digest pattern, regex, or statement without
 * WHERE -> the DBA's ERR). Their keys are checked here; rules/match.c
 * matches them.
 *
 * Pure, any thread (in practice the main thread, while rules load).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/sql/stmt.h"
#include "rules/rules_impl.h"

typedef mr_rule_draft draft;
typedef mr_rule_loader loader;

static bool parse_code(loader *L, const draft *dr, uint16_t *out)
{
    const char *v = mr_rule_val(dr, "code");
    *out = 1148;
    if (!v)
        return true;
    unsigned long n = 0;
    size_t i = 0;
    for (; v[i] >= '0' && v[i] <= '9' && n <= 65535; i++)
        n = n * 10 + (unsigned long)(v[i] - '0');
    if (i == 0 || v[i] || n < 1 || n > 65535) {
        mr_rule_bad_value(L, dr, "code", "an error number from 1 to 65535");
        return false;
    }
    *out = (uint16_t)n;
    return true;
}

static bool parse_sqlstate(loader *L, const draft *dr, char out[6])
{
    const char *v = mr_rule_val(dr, "sqlstate");
    memcpy(out, "42000", 6);
    if (!v)
        return true;
    bool ok = strlen(v) == 5;
    for (size_t i = 0; ok && i < 5; i++)
        ok = (v[i] >= '0' && v[i] <= '9') || (v[i] >= 'A' && v[i] <= 'Z');
    if (!ok) {
        mr_rule_bad_value(L, dr, "sqlstate", "5 digits or capital letters, like 42000 or HY000");
        return false;
    }
    memcpy(out, v, 6);
    return true;
}

/* `require`: none, or one word; *out stays NULL for none. */
static bool parse_require(loader *L, const draft *dr, char **out, bool *given)
{
    const char *v = mr_rule_val(dr, "require");
    *out = NULL;
    *given = v != NULL;
    if (!v || strcasecmp(v, "none") == 0)
        return true;
    size_t n = strlen(v);
    bool ok = n > 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)v[i]) || v[i] == '_';
    if (!ok) {
        mr_rule_bad_value(
            L, dr, "require",
            "none, or one word of letters, digits and _ that every matching statement holds");
        return false;
    }
    *out = mr_rule_strdup(L, v);
    for (size_t i = 0; *out && i < n; i++)
        (*out)[i] = (char)tolower((unsigned char)(*out)[i]);
    return *out != NULL;
}

static rule_src src_at(loader *L, const mr_rule *r, const draft *dr, const char *k)
{
    return (rule_src){.d = rules_loader_diag(L),
                      .r = r,
                      .line = mr_rule_line(dr, k) ? mr_rule_line(dr, k) : dr->line};
}

static bool finish_rewrite(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    const char *what = "rewrite rules need pattern and replacement";
    bool ok = mr_rule_need(L, dr, "pattern", what);
    ok &= mr_rule_need(L, dr, "replacement", what);
    if (!ok)
        return false;
    rule_src at = src_at(L, r, dr, "pattern");
    if (!rules_compile_pattern(&at, mr_rule_val(dr, "pattern"), im))
        return false;
    at = src_at(L, r, dr, "replacement");
    if (!rules_compile_replacement(&at, mr_rule_val(dr, "replacement"), im))
        return false;
    r->pattern = mr_rule_strdup(L, mr_rule_val(dr, "pattern"));
    r->replacement = mr_rule_strdup(L, mr_rule_val(dr, "replacement"));
    return r->pattern && r->replacement;
}

/* match, caseless and require, shared by regex and block rules. */
static bool compile_match(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    bool caseless, given;
    bool ok = mr_rule_bool(L, dr, "caseless", true, &caseless);
    ok &= parse_require(L, dr, &im->require, &given);
    rule_src at = src_at(L, r, dr, "match");
    if (!ok || !rules_compile_regex(&at, mr_rule_val(dr, "match"), caseless, im))
        return false;
    if (!given) {
        im->require = rules_derive_word(mr_rule_val(dr, "match"), strlen(mr_rule_val(dr, "match")));
        im->require_derived = im->require != NULL;
    }
    r->pattern = mr_rule_strdup(L, mr_rule_val(dr, "match"));
    return r->pattern != NULL;
}

static bool finish_regex(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    const char *what = "regex rules need match and replace";
    bool ok = mr_rule_need(L, dr, "match", what);
    ok &= mr_rule_need(L, dr, "replace", what);
    ok &= mr_rule_bool(L, dr, "global", false, &im->global);
    if (!ok || !compile_match(L, dr, r, im))
        return false;
    rule_src at = src_at(L, r, dr, "replace");
    if (!rules_compile_regex_replace(&at, mr_rule_val(dr, "replace"), im))
        return false;
    r->replacement = mr_rule_strdup(L, mr_rule_val(dr, "replace"));
    return r->replacement != NULL;
}

/* statement = delete, update (any of them, separated by commas or spaces) */
static bool parse_statement(loader *L, const draft *dr, unsigned *mask)
{
    const char *v = mr_rule_val(dr, "statement");
    *mask = 0;
    while (*v) {
        size_t n = strcspn(v, ", |");
        if (n == 6 && strncasecmp(v, "delete", 6) == 0)
            *mask |= 1u << SQL_STMT_DELETE;
        else if (n == 6 && strncasecmp(v, "update", 6) == 0)
            *mask |= 1u << SQL_STMT_UPDATE;
        else if (n > 0)
            break;
        v += n + (v[n] != '\0');
    }
    if (*v || !*mask) {
        mr_rule_bad_value(L, dr, "statement", "delete, update, or both separated by a comma");
        return false;
    }
    return true;
}

static bool block_by_statement(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    if (!mr_rule_val(dr, "where")) {
        mr_rule_error(L, mr_rule_line(dr, "statement"),
                      "[block %s] has statement but no where; write where = missing", dr->name);
        return false;
    }
    bool ok = parse_statement(L, dr, &im->stmt_mask);
    if (strcasecmp(mr_rule_val(dr, "where"), "missing") != 0) {
        mr_rule_bad_value(L, dr, "where", "missing (the only condition so far)");
        ok = false;
    }
    if (!ok)
        return false;
    im->how = HOW_NO_WHERE;
    char text[128];
    snprintf(text, sizeof text, "statement = %s, where = missing", mr_rule_val(dr, "statement"));
    r->pattern = mr_rule_strdup(L, text);
    return r->pattern != NULL;
}

/* Exactly one of pattern / match / statement says what a block catches:
 * that key, or NULL. */
static const char *block_selector(loader *L, const draft *dr)
{
    int count =
        !!mr_rule_val(dr, "pattern") + !!mr_rule_val(dr, "match") + !!mr_rule_val(dr, "statement");
    if (count == 1)
        return mr_rule_val(dr, "pattern") ? "pattern"
               : mr_rule_val(dr, "match") ? "match"
                                          : "statement";
    mr_rule_error(L, dr->line,
                  "[block %s] %s; block rules take exactly one of pattern (SQL with ?), "
                  "match (regex) or statement + where",
                  dr->name,
                  count ? "has more than one of pattern, match and statement"
                        : "says nothing to block");
    return NULL;
}

static bool only_with_match(loader *L, const draft *dr, const char *k)
{
    if (!mr_rule_val(dr, k) || mr_rule_val(dr, "match"))
        return true;
    mr_rule_error(L, mr_rule_line(dr, k), "%s in [block %s] only applies with match", k, dr->name);
    return false;
}

/* dynamic = pass (the default: what the rules cannot read is relayed) or
 * refuse (rules/dynamic.c). */
static bool parse_dynamic(loader *L, const draft *dr, bool *refuse)
{
    const char *v = mr_rule_val(dr, "dynamic");
    *refuse = v && strcasecmp(v, "refuse") == 0;
    if (!v || *refuse || strcasecmp(v, "pass") == 0)
        return true;
    mr_rule_bad_value(L, dr, "dynamic",
                      "pass or refuse (refuse: also refuse CALL, compound statements and "
                      "EXECUTE IMMEDIATE / PREPARE ... FROM anything but a string literal)");
    return false;
}

static bool finish_block(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    const char *sel = block_selector(L, dr);
    bool ok = mr_rule_need(L, dr, "message", "block rules need the message the client gets") && sel;
    ok &= parse_code(L, dr, &r->err_code);
    ok &= parse_sqlstate(L, dr, r->sqlstate);
    ok &= parse_dynamic(L, dr, &im->dynamic_refuse);
    ok &= only_with_match(L, dr, "caseless");
    ok &= only_with_match(L, dr, "require");
    if (mr_rule_val(dr, "where") && !mr_rule_val(dr, "statement")) {
        mr_rule_error(L, mr_rule_line(dr, "where"),
                      "where in [block %s] only applies with statement = delete|update", dr->name);
        ok = false;
    }
    if (!ok)
        return false;
    r->message = mr_rule_strdup(L, mr_rule_val(dr, "message"));
    if (strcmp(sel, "match") == 0)
        return compile_match(L, dr, r, im) && r->message;
    if (strcmp(sel, "statement") == 0)
        return block_by_statement(L, dr, r, im) && r->message;
    rule_src at = src_at(L, r, dr, "pattern");
    if (!rules_compile_pattern(&at, mr_rule_val(dr, "pattern"), im))
        return false;
    r->pattern = mr_rule_strdup(L, mr_rule_val(dr, "pattern"));
    return r->pattern && r->message;
}

static const char *const rewrite_keys[] = {"pattern", "replacement", NULL};
static const char *const regex_keys[] = {"match", "replace", "caseless", "global", "require", NULL};
static const char *const block_keys[] = {"pattern",   "match",   "caseless", "require",
                                         "statement", "where",   "message",  "code",
                                         "sqlstate",  "dynamic", NULL};

const mr_rule_kind mr_rewrite_kind = {
    .name = "rewrite",
    .type = MR_RULE_REWRITE,
    .keys = rewrite_keys,
    .parse = finish_rewrite,
};
const mr_rule_kind mr_regex_kind = {
    .name = "regex",
    .type = MR_RULE_REGEX,
    .keys = regex_keys,
    .parse = finish_regex,
};
const mr_rule_kind mr_block_kind = {
    .name = "block",
    .type = MR_RULE_BLOCK,
    .keys = block_keys,
    .parse = finish_block,
};
