/*
 * rules/load.c - the text of rule files to rules: reads the INI sections,
 * checks every header, key and value against the kind table, and hands
 * patterns to rules/compile.c. Every problem in every file is reported,
 * as file:line: what is wrong and what is accepted.
 *
 * Pure, any thread (in practice the main thread, at start and on reload).
 * Owns the rules being read until rules_loader_take hands them over.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/base/duration.h"
#include "myrewrite/base/ini.h"
#include "myrewrite/delayed/rule.h"
#include "myrewrite/paginate/rule.h"
#include "myrewrite/queue/release_sql.h"
#include "myrewrite/queue/rule.h"
#include "myrewrite/sql/digest.h"
#include "myrewrite/sql/stmt.h"
#include "rules/rules_impl.h"

/* Keys every kind takes; they follow the kind's own in its error messages. */
static const char *const common_keys[] = {
    "enabled", "continue", "log_only", "log", "log_sample", "user", "schema", NULL,
};

typedef mr_rule_draft draft;
typedef struct mr_rule_loader loader;

/* ---- the loader --------------------------------------------------------------- */

struct mr_rule_loader {
    mr_diag *d;
    const mr_rule_kinds *kinds;
    int errors_before; /* d->errors when loading began */
    const char *file;
    mr_rule *rules;
    rule_impl *impl;
    size_t n;
    size_t cap;
    draft cur;
    bool have_cur;
    bool skip_keys;   /* the section header was bad: its keys are not checked */
    uint32_t *names;  /* open-addressing set of rule indexes, by name */
    size_t names_mask;
    bool oom;
};

void mr_rule_error(loader *L, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    mr_diag_error(L->d, L->file, line, "%s", n >= 0 ? msg : "out of memory while loading rules");
    if (n >= 0)
        free(msg);
}

void mr_rule_oom(loader *L)
{
    if (!L->oom)
        mr_rule_error(L, 0, "out of memory while loading rules");
    L->oom = true;
}

char *mr_rule_strdup(loader *L, const char *s)
{
    char *p = strdup(s);
    if (!p)
        mr_rule_oom(L);
    return p;
}

mr_diag *rules_loader_diag(loader *L)
{
    return L->d;
}

size_t mr_rule_loaded(const loader *L, const mr_rule **rules)
{
    *rules = L->rules;
    return L->n;
}

/* The kind's own keys, then the common ones: a key's index into dr->val. */
static const char *key_at(const mr_rule_kind *kd, size_t i)
{
    size_t own = 0;
    while (kd->keys[own])
        own++;
    return i < own ? kd->keys[i] : common_keys[i - own];
}

static int key_index(const draft *dr, const char *key)
{
    const char *k;
    for (size_t i = 0; (k = key_at(dr->kind, i)) != NULL; i++)
        if (strcmp(k, key) == 0)
            return (int)i;
    return -1;
}

const char *mr_rule_val(const draft *dr, const char *key)
{
    int i = key_index(dr, key);
    return i < 0 ? NULL : dr->val[i];
}

int mr_rule_line(const draft *dr, const char *key)
{
    int i = key_index(dr, key);
    return i < 0 ? 0 : dr->vline[i];
}

static void draft_clear(draft *dr)
{
    free(dr->name);
    for (int k = 0; k < MR_RULE_MAX_KEYS; k++)
        free(dr->val[k]);
    memset(dr, 0, sizeof *dr);
}

static uint64_t name_hash(const char *s)
{
    return sql_hash64(s, strlen(s));
}

/* Index of the rule named `name`, or NO_RULE. */
static uint32_t names_find(const loader *L, const char *name)
{
    if (!L->names)
        return NO_RULE;
    for (size_t k = name_hash(name) & L->names_mask;; k = (k + 1) & L->names_mask) {
        uint32_t i = L->names[k];
        if (i == NO_RULE || strcmp(L->rules[i].name, name) == 0)
            return i;
    }
}

static bool names_grow(loader *L)
{
    size_t cap = L->names ? (L->names_mask + 1) * 2 : 64;
    uint32_t *t = malloc(cap * sizeof *t);
    if (!t)
        return false;
    for (size_t k = 0; k < cap; k++)
        t[k] = NO_RULE;
    free(L->names);
    L->names = t;
    L->names_mask = cap - 1;
    for (size_t i = 0; i < L->n; i++) {
        size_t k = name_hash(L->rules[i].name) & L->names_mask;
        while (t[k] != NO_RULE)
            k = (k + 1) & L->names_mask;
        t[k] = (uint32_t)i;
    }
    return true;
}

/* Appends the (possibly half-built) rule; its errors are already counted
 * and a failed load frees it with the rest. False when out of memory. */
static bool push_rule(loader *L, const mr_rule *r, const rule_impl *im)
{
    if (L->n == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 16;
        mr_rule *nr = realloc(L->rules, cap * sizeof *nr);
        if (nr)
            L->rules = nr;
        rule_impl *ni = nr ? realloc(L->impl, cap * sizeof *ni) : NULL;
        if (ni)
            L->impl = ni;
        if (!nr || !ni)
            return false;
        L->cap = cap;
    }
    if ((!L->names || (L->n + 1) * 2 > L->names_mask) && !names_grow(L))
        return false;
    L->rules[L->n] = *r;
    L->impl[L->n] = *im;
    size_t k = name_hash(r->name) & L->names_mask;
    while (L->names[k] != NO_RULE)
        k = (k + 1) & L->names_mask;
    L->names[k] = (uint32_t)L->n++;
    return true;
}

void mr_queue_rule_free(mr_rule *r)
{
    mr_queue_def *q = (mr_queue_def *)r->queue;
    if (!q)
        return;
    free(q->schema);
    free(q->table);
    free(q->owner_column);
    free(q->status_column);
    free(q->claimed_value);
    free(q->unclaimed_value);
    free(q->unclaimed_owner);
    free(q->claimed_at_column);
    free(q->release);
    free(q->reap);
    free(q);
}

void mr_rule_names_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

void mr_delayed_rule_free(mr_rule *r)
{
    mr_delayed_def *d = (mr_delayed_def *)r->delayed;
    if (!d)
        return;
    free(d->schema);
    free(d->table);
    mr_rule_names_free(d->keys, d->nkeys);
    mr_rule_names_free(d->columns, d->ncolumns);
    mr_rule_names_free(d->set_columns, d->nset_columns);
    free(d->bucket_column);
    free(d->staged_rows);
    free(d->staging_table);
    free(d->staging_engine);
    free(d);
}

void mr_paginate_rule_free(mr_rule *r)
{
    mr_paginate_def *p = (mr_paginate_def *)r->paginate;
    if (!p)
        return;
    free(p->schema);
    free(p->table);
    mr_rule_names_free(p->keys, p->nkeys);
    free(p);
}

static void rule_free(mr_rule *r)
{
    if (r->entry && r->entry->free)
        r->entry->free(r);
    free(r->name);
    free(r->file);
    free(r->user);
    free(r->schema);
    free(r->pattern);
    free(r->replacement);
    free(r->message);
    memset(r, 0, sizeof *r);
}

/* ---- values ------------------------------------------------------------------- */

void mr_rule_bad_value(loader *L, const draft *dr, const char *k, const char *expected)
{
    mr_rule_error(L, mr_rule_line(dr, k), "%s = '%s' in [%s %s]: expected %s", k,
                mr_rule_val(dr, k), dr->kind->name, dr->name, expected);
}

bool mr_rule_bool(loader *L, const draft *dr, const char *k, bool dflt, bool *out)
{
    const char *v = mr_rule_val(dr, k);
    *out = dflt;
    if (!v)
        return true;
    static const char *const yes[] = {"yes", "true", "on", "1"};
    static const char *const no[] = {"no", "false", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0 || strcasecmp(v, no[i]) == 0) {
            *out = strcasecmp(v, yes[i]) == 0;
            return true;
        }
    }
    mr_rule_bad_value(L, dr, k, "yes or no");
    return false;
}

static bool parse_log(loader *L, const draft *dr, mr_rule_log *out)
{
    static const char *const names[] = {"off", "digest", "full"};
    const char *v = mr_rule_val(dr, "log");
    *out = MR_RULE_LOG_OFF;
    if (!v)
        return true;
    for (int i = 0; i < 3; i++)
        if (strcasecmp(v, names[i]) == 0) {
            *out = (mr_rule_log)i;
            return true;
        }
    mr_rule_bad_value(L, dr, "log", "off, digest or full");
    return false;
}

/* `log_sample = N`: log one match in N (counted per worker thread); only
 * meaningful for a rule that logs. */
static bool parse_log_sample(loader *L, const draft *dr, const mr_rule *r, uint32_t *out)
{
    const char *v = mr_rule_val(dr, "log_sample");
    *out = 1;
    if (!v)
        return true;
    unsigned long long n = 0;
    size_t i = 0;
    for (; v[i] >= '0' && v[i] <= '9' && n <= 1000000000ull; i++)
        n = n * 10 + (unsigned long long)(v[i] - '0');
    if (i == 0 || v[i] || n < 1 || n > 1000000000ull) {
        mr_rule_bad_value(L, dr, "log_sample", "a whole number from 1 (log every match) to 1000000000");
        return false;
    }
    if (r->log == MR_RULE_LOG_OFF && !r->log_only) {
        mr_rule_error(L, mr_rule_line(dr, "log_sample"),
                      "log_sample in [%s %s] needs log = digest or log = full (or log_only = yes): "
                      "the rule logs nothing to sample",
                      dr->kind->name, dr->name);
        return false;
    }
    *out = (uint32_t)n;
    return true;
}

static bool parse_filter(loader *L, const draft *dr, const char *k, char **out)
{
    *out = NULL;
    if (!mr_rule_val(dr, k))
        return true;
    if (!mr_rule_val(dr, k)[0]) {
        mr_rule_bad_value(L, dr, k, "a name (leave the key out to match any)");
        return false;
    }
    *out = mr_rule_strdup(L, mr_rule_val(dr, k));
    return *out != NULL;
}

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
        mr_rule_bad_value(L, dr, "require",
                  "none, or one word of letters, digits and _ that every matching statement holds");
        return false;
    }
    *out = mr_rule_strdup(L, v);
    for (size_t i = 0; *out && i < n; i++)
        (*out)[i] = (char)tolower((unsigned char)(*out)[i]);
    return *out != NULL;
}

/* `&=`, not `&&`: every bad value is reported, not only the first. */
static bool parse_common(loader *L, const draft *dr, mr_rule *r)
{
    bool ok = mr_rule_bool(L, dr, "enabled", true, &r->enabled);
    ok &= mr_rule_bool(L, dr, "continue", false, &r->cont);
    ok &= mr_rule_bool(L, dr, "log_only", false, &r->log_only);
    ok &= parse_log(L, dr, &r->log);
    ok &= parse_log_sample(L, dr, r, &r->log_sample);
    ok &= parse_filter(L, dr, "user", &r->user);
    ok &= parse_filter(L, dr, "schema", &r->schema);
    return ok;
}

bool mr_rule_need(loader *L, const draft *dr, const char *k, const char *what)
{
    if (mr_rule_val(dr, k) && mr_rule_val(dr, k)[0])
        return true;
    mr_rule_error(L, mr_rule_val(dr, k) ? mr_rule_line(dr, k) : dr->line, "[%s %s] has %s %s; %s",
                dr->kind->name, dr->name, mr_rule_val(dr, k) ? "an empty" : "no",
                k, what);
    return false;
}

/* ---- kinds ---------------------------------------------------------------------- */

static rule_src src_at(loader *L, const mr_rule *r, const draft *dr, const char *k)
{
    return (rule_src){.d = rules_loader_diag(L), .r = r, .line = mr_rule_line(dr, k) ? mr_rule_line(dr, k) : dr->line};
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
    int count = !!mr_rule_val(dr, "pattern") + !!mr_rule_val(dr, "match") +
                !!mr_rule_val(dr, "statement");
    if (count == 1)
        return mr_rule_val(dr, "pattern") ? "pattern"
               : mr_rule_val(dr, "match") ? "match"
                                          : "statement";
    mr_rule_error(L, dr->line,
                "[block %s] %s; block rules take exactly one of pattern (SQL with ?), "
                "match (regex) or statement + where", dr->name,
                count ? "has more than one of pattern, match and statement" : "says nothing to block");
    return NULL;
}

static bool only_with_match(loader *L, const draft *dr, const char *k)
{
    if (!mr_rule_val(dr, k) || mr_rule_val(dr, "match"))
        return true;
    mr_rule_error(L, mr_rule_line(dr, k), "%s in [block %s] only applies with match",
                k, dr->name);
    return false;
}

static bool finish_block(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    const char *sel = block_selector(L, dr);
    bool ok = mr_rule_need(L, dr, "message", "block rules need the message the client gets") &&
              sel;
    ok &= parse_code(L, dr, &r->err_code);
    ok &= parse_sqlstate(L, dr, r->sqlstate);
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

/* ---- queue ---------------------------------------------------------------------- */

/* A duration above zero (base/duration.h: the grammar settings use too). */
bool mr_rule_duration(const char *v, uint64_t *ms)
{
    return mr_parse_duration(v, ms) && *ms > 0;
}

/* A table or column name as mysqld accepts it: 1 to 64 characters. */
bool mr_rule_name(loader *L, const draft *dr, const char *k, char **out)
{
    *out = NULL;
    const char *v = mr_rule_val(dr, k);
    if (!v)
        return true;
    if (!v[0] || strlen(v) > 64 || strchr(v, '`')) {
        mr_rule_bad_value(L, dr, k, "a name of 1 to 64 characters, unquoted, without backticks");
        return false;
    }
    *out = mr_rule_strdup(L, v);
    return *out != NULL;
}

/* table = t or schema.t; the schema comes from there or from `schema`. */
bool mr_rule_table(loader *L, const draft *dr, char **schema, char **table)
{
    const char *v = mr_rule_val(dr, "table");
    const char *dot = strchr(v, '.');
    const char *sch = mr_rule_val(dr, "schema");
    size_t sn = dot ? (size_t)(dot - v) : 0;
    bool ok = !dot || (sn > 0 && sn <= 64 && dot[1] && !strchr(dot + 1, '.'));
    ok = ok && strlen(dot ? dot + 1 : v) <= 64 && !strchr(v, '`');
    if (!ok) {
        mr_rule_bad_value(L, dr, "table", "a table name, or schema.table, unquoted");
        return false;
    }
    if (!dot && !sch) {
        mr_rule_error(L, mr_rule_line(dr, "table"), "[%s %s] needs the table's schema, "
                    "which the proxy's own connection has no default for: write table = "
                    "shop.%s, or schema = shop", dr->kind->name, dr->name, v);
        return false;
    }
    if (dot && sch && (strlen(sch) != sn || strncmp(sch, v, sn) != 0)) {
        mr_rule_error(L, mr_rule_line(dr, "table"), "[%s %s]: table %s is not in schema "
                    "%s given by the schema key", dr->kind->name, dr->name, v, sch);
        return false;
    }
    *schema = dot ? strndup(v, sn) : mr_rule_strdup(L, sch);
    *table = mr_rule_strdup(L, dot ? dot + 1 : v);
    if (!*schema)
        mr_rule_oom(L);
    return *schema && *table;
}

static bool queue_table(loader *L, const draft *dr, mr_queue_def *q)
{
    return mr_rule_table(L, dr, &q->schema, &q->table);
}

/* `release` replaces the column keys: refuses any of them given with it
 * (timeout stays, for the `reap` template). */
static bool release_alone(loader *L, const draft *dr)
{
    static const char *const cols[] = {"owner_column", "status_column", "claimed_value",
                                  "unclaimed_value", "unclaimed_owner", "claimed_at_column"};
    bool ok = true;
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        if (mr_rule_val(dr, cols[i])) {
            mr_rule_error(L, mr_rule_line(dr, cols[i]), "%s in [queue %s] does not apply "
                        "with release, which replaces the column keys (a reaper then needs "
                        "reap)", cols[i], dr->name);
            ok = false;
        }
    if (mr_rule_val(dr, "timeout") && !mr_rule_val(dr, "reap")) {
        mr_rule_error(L, mr_rule_line(dr, "timeout"), "timeout in [queue %s] needs reap: "
                    "with release, only the reap template can tell a claim's age", dr->name);
        ok = false;
    }
    return ok;
}

/* Is `tpl`, filled in, exactly one statement that lexes? */
static bool one_statement(char *filled)
{
    sql_span sp[2];
    size_t count = 0;
    sql_rc rc = filled ? sql_split(filled, strlen(filled), 0, sp, 2, &count) : SQL_ERR;
    free(filled);
    return rc == SQL_OK && count == 1;
}

/* The template: one statement once {owner} is filled in. */
static bool queue_release(loader *L, const draft *dr, mr_queue_def *q)
{
    const char *v = mr_rule_val(dr, "release");
    if (!strstr(v, "{owner}")) {
        mr_rule_bad_value(L, dr, "release", "one SQL statement using {owner} for the backend "
                  "connection id, like UPDATE jobs SET worker = NULL WHERE worker = {owner}");
        return false;
    }
    if (!one_statement(mr_queue_fill_release(v, 1))) {
        mr_rule_bad_value(L, dr, "release", "exactly one SQL statement that lexes (with {owner} "
                  "standing for a number)");
        return false;
    }
    q->release = mr_rule_strdup(L, v);
    return q->release != NULL;
}

/* The reaper's template: {live} and {cutoff}, one statement once filled in. */
static bool queue_reap(loader *L, const draft *dr, mr_queue_def *q)
{
    const char *v = mr_rule_val(dr, "reap");
    if (!v)
        return true;
    if (!strstr(v, "{live}") || !strstr(v, "{cutoff}")) {
        mr_rule_bad_value(L, dr, "reap", "one SQL statement using {live} for the list of live "
                  "connection ids and {cutoff} for the claim time limit, like UPDATE jobs SET "
                  "worker = NULL WHERE worker NOT IN ({live}) AND locked_at < {cutoff}");
        return false;
    }
    static const uint64_t sample[] = {1, 2};
    if (!one_statement(mr_queue_fill_reap(v, sample, 2, "2000-01-01 00:00:00.000000"))) {
        mr_rule_bad_value(L, dr, "reap", "exactly one SQL statement that lexes (with {live} standing "
                  "for a list of numbers and {cutoff} for a time)");
        return false;
    }
    if (mr_rule_val(dr, "timeout") && !mr_rule_duration(mr_rule_val(dr, "timeout"), &q->timeout_ms)) {
        mr_rule_bad_value(L, dr, "timeout", "a duration above zero, like 90s, 10m or 1h");
        return false;
    }
    q->reap = mr_rule_strdup(L, v);
    return q->reap != NULL;
}

/* owner_column, status_column and both values: the release the proxy builds. */
static bool queue_columns(loader *L, const draft *dr, mr_queue_def *q)
{
    const char *what = "queue rules need owner_column, status_column, claimed_value and "
                       "unclaimed_value, or a release statement";
    if (mr_rule_val(dr, "reap")) {
        mr_rule_error(L, mr_rule_line(dr, "reap"), "reap in [queue %s] applies only with "
                    "release; the column form has its own reaper (claimed_at_column)", dr->name);
        return false;
    }
    bool ok = mr_rule_need(L, dr, "owner_column", what);
    ok &= mr_rule_need(L, dr, "status_column", what);
    ok &= mr_rule_need(L, dr, "claimed_value", what);
    ok &= mr_rule_need(L, dr, "unclaimed_value", what);
    ok &= mr_rule_name(L, dr, "owner_column", &q->owner_column);
    ok &= mr_rule_name(L, dr, "status_column", &q->status_column);
    ok &= mr_rule_name(L, dr, "claimed_at_column", &q->claimed_at_column);
    if (mr_rule_val(dr, "timeout") && !mr_rule_duration(mr_rule_val(dr, "timeout"), &q->timeout_ms)) {
        mr_rule_bad_value(L, dr, "timeout", "a duration above zero, like 90s, 10m or 1h");
        ok = false;
    }
    if (mr_rule_val(dr, "timeout") && !mr_rule_val(dr, "claimed_at_column")) {
        mr_rule_error(L, mr_rule_line(dr, "timeout"), "timeout in [queue %s] needs "
                    "claimed_at_column: a claim's age is read from it", dr->name);
        ok = false;
    }
    if (!ok)
        return false;
    q->claimed_value = mr_rule_strdup(L, mr_rule_val(dr, "claimed_value"));
    q->unclaimed_value = mr_rule_strdup(L, mr_rule_val(dr, "unclaimed_value"));
    q->unclaimed_owner = mr_rule_strdup(L, mr_rule_val(dr, "unclaimed_owner") ? mr_rule_val(dr, "unclaimed_owner") : "0");
    return q->claimed_value && q->unclaimed_value && q->unclaimed_owner;
}

bool mr_queue_rule_parse(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    (void)im;
    mr_queue_def *q = calloc(1, sizeof *q);
    if (!q) {
        mr_rule_oom(L);
        return false;
    }
    r->queue = q;
    q->timeout_ms = 600000;
    bool ok = mr_rule_need(L, dr, "table", "queue rules need the table used as a queue");
    ok &= mr_rule_bool(L, dr, "skip_locked", false, &q->skip_locked);
    ok &= mr_rule_bool(L, dr, "claim_read_committed", false, &q->claim_read_committed);
    ok = ok && queue_table(L, dr, q);
    if (!ok)
        return false;
    if (mr_rule_val(dr, "release"))
        ok = release_alone(L, dr) && queue_release(L, dr, q) && queue_reap(L, dr, q);
    else
        ok = queue_columns(L, dr, q);
    if (!ok)
        return false;
    char text[160];
    snprintf(text, sizeof text, "queue %s.%s", q->schema, q->table);
    r->pattern = mr_rule_strdup(L, text);
    return r->pattern != NULL;
}

/* ---- delayed -------------------------------------------------------------------- */

#define DELAYED_MAX_NAMES 16 /* key and counter columns per rule */

static bool name_ok(const char *v, size_t n)
{
    return n > 0 && n <= 64 && !memchr(v, '`', n);
}

/* A comma list of column names, each once (compared as mysqld does: any case). */
bool mr_rule_names(loader *L, const draft *dr, const char *k, char ***out, size_t *n)
{
    const char *v = mr_rule_val(dr, k);
    char **list = calloc(DELAYED_MAX_NAMES, sizeof *list);
    *out = list;
    *n = 0;
    if (!list) {
        mr_rule_oom(L);
        return false;
    }
    for (;;) {
        v += strspn(v, " \t");
        size_t len = strcspn(v, ",");
        while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
            len--;
        bool dup = false;
        for (size_t i = 0; i < *n; i++)
            dup |= strlen(list[i]) == len && strncasecmp(list[i], v, len) == 0;
        if (!name_ok(v, len) || dup || *n == DELAYED_MAX_NAMES) {
            mr_rule_bad_value(L, dr, k, "a comma list of up to 16 different column names, unquoted");
            return false;
        }
        if (!(list[(*n)++] = strndup(v, len))) {
            mr_rule_oom(L);
            return false;
        }
        v += strcspn(v, ",");
        if (!*v)
            return true;
        v++;
    }
}

bool mr_rule_count(loader *L, const draft *dr, const char *k, uint64_t dflt, uint64_t max,
                        uint64_t *out)
{
    const char *v = mr_rule_val(dr, k);
    *out = dflt;
    if (!v)
        return true;
    uint64_t n = 0;
    size_t i = 0;
    for (; v[i] >= '0' && v[i] <= '9' && n <= max; i++)
        n = n * 10 + (uint64_t)(v[i] - '0');
    if (i == 0 || v[i] || n < 1 || n > max) {
        char what[64];
        snprintf(what, sizeof what, "a whole number from 1 to %llu", (unsigned long long)max);
        mr_rule_bad_value(L, dr, k, what);
        return false;
    }
    *out = n;
    return true;
}

/* staging_table (default <table>_delayed) and staging_engine (default InnoDB). */
static bool staging_engine_ok(loader *L, const draft *dr)
{
    const char *e = mr_rule_val(dr, "staging_engine") ? mr_rule_val(dr, "staging_engine") : "InnoDB";
    bool eok = *e && strlen(e) <= 64;
    for (size_t i = 0; eok && e[i]; i++)
        eok = isalnum((unsigned char)e[i]) || e[i] == '_';
    if (!eok)
        mr_rule_bad_value(L, dr, "staging_engine", "an engine name, like InnoDB");
    return eok;
}

static bool delayed_staging(loader *L, const draft *dr, mr_delayed_def *d)
{
    bool ok = mr_rule_name(L, dr, "staging_table", &d->staging_table);
    const char *e = mr_rule_val(dr, "staging_engine") ? mr_rule_val(dr, "staging_engine") : "InnoDB";
    ok &= staging_engine_ok(L, dr);
    if (ok && !d->staging_table) {
        char name[80];
        snprintf(name, sizeof name, "%s_delayed", d->table);
        if (strlen(name) > 64) {
            mr_rule_error(L, mr_rule_line(dr, "table"), "[delayed %s]: %s is longer than "
                          "64 characters; give staging_table", dr->name, name);
            return false;
        }
        d->staging_table = mr_rule_strdup(L, name);
    }
    d->staging_engine = ok ? mr_rule_strdup(L, e) : NULL;
    return ok && d->staging_table && d->staging_engine;
}

/* missing = ignore | insert; mode = staged | memory. */
static bool delayed_modes(loader *L, const draft *dr, mr_delayed_def *d)
{
    bool ok = true;
    const char *m = mr_rule_val(dr, "missing");
    d->missing = MR_DELAYED_MISSING_IGNORE;
    if (m && strcasecmp(m, "insert") == 0) {
        d->missing = MR_DELAYED_MISSING_INSERT;
    } else if (m && strcasecmp(m, "ignore") != 0) {
        mr_rule_bad_value(L, dr, "missing", "ignore or insert");
        ok = false;
    }
    const char *mode = mr_rule_val(dr, "mode");
    d->mode = MR_DELAYED_STAGED;
    if (mode && strcasecmp(mode, "memory") == 0) {
        d->mode = MR_DELAYED_MEMORY;
    } else if (mode && strcasecmp(mode, "staged") != 0) {
        mr_rule_bad_value(L, dr, "mode", "staged or memory");
        ok = false;
    }
    if (mr_rule_val(dr, "memory_max_keys") && d->mode != MR_DELAYED_MEMORY) {
        mr_rule_error(L, mr_rule_line(dr, "memory_max_keys"), "[delayed %s]: "
                      "memory_max_keys needs mode = memory", dr->name);
        ok = false;
    }
    ok &= mr_rule_count(L, dr, "memory_max_keys", 1000000, 100000000, &d->memory_max_keys);
    if (mr_rule_val(dr, "flush_early"))
        ok &= mr_rule_count(L, dr, "flush_early", 0, 100000000, &d->flush_early);
    if (ok && d->flush_early && d->mode == MR_DELAYED_STAGED &&
        !(d->staged_rows = calloc(1, sizeof *d->staged_rows))) {
        mr_rule_oom(L);
        ok = false;
    }
    return ok;
}

/* bucket_column = col and bucket = day | hour (default day): col is a key
 * column the statements do not give; the proxy fills it. It needs `key`
 * (a primary key read from the schema would hold it) and no other role. */
static bool delayed_bucket(loader *L, const draft *dr, mr_delayed_def *d)
{
    const char *b = mr_rule_val(dr, "bucket");
    if (!mr_rule_val(dr, "bucket_column")) {
        if (!b)
            return true;
        mr_rule_error(L, mr_rule_line(dr, "bucket"), "[delayed %s]: bucket needs "
                      "bucket_column", dr->name);
        return false;
    }
    d->bucket = MR_BUCKET_DAY;
    if (b && strcasecmp(b, "hour") == 0) {
        d->bucket = MR_BUCKET_HOUR;
    } else if (b && strcasecmp(b, "day") != 0) {
        mr_rule_bad_value(L, dr, "bucket", "day or hour");
        return false;
    }
    if (!mr_rule_name(L, dr, "bucket_column", &d->bucket_column) || !d->bucket_column)
        return false;
    if (!d->nkeys) {
        mr_rule_error(L, mr_rule_line(dr, "bucket_column"), "[delayed %s]: bucket_column "
                      "needs key (the key columns the statements give)", dr->name);
        return false;
    }
    char *const *lists[] = {d->keys, d->columns, d->set_columns};
    size_t counts[] = {d->nkeys, d->ncolumns, d->nset_columns};
    for (size_t l = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++)
            if (strcasecmp(lists[l][i], d->bucket_column) == 0) {
                mr_rule_error(L, mr_rule_line(dr, "bucket_column"), "[delayed %s]: %s is "
                              "the bucket column, so it may not be in key, columns or "
                              "set_columns", dr->name, d->bucket_column);
                return false;
            }
    return true;
}

/* Staged rows carry each set column as `<col>_set` plus a bit of `set_mask`
 * (BIGINT UNSIGNED): at most 64 of them, each name short enough for the
 * suffix within MySQL's 64-character column names. */
static bool staged_set_columns_ok(loader *L, const draft *dr, const mr_delayed_def *d)
{
    if (d->nset_columns > 64) {
        mr_rule_error(L, mr_rule_line(dr, "set_columns"), "[delayed %s]: at most 64 "
                      "set_columns in mode = staged", dr->name);
        return false;
    }
    for (size_t i = 0; i < d->nset_columns; i++)
        if (strlen(d->set_columns[i]) > 60) {
            mr_rule_error(L, mr_rule_line(dr, "set_columns"), "[delayed %s]: %s: a "
                          "set_columns name may have at most 60 characters in mode = staged "
                          "(the staging table adds _set)", dr->name, d->set_columns[i]);
            return false;
        }
    return true;
}

/* No column is both a key and a counter, and the staging table is not the table. */
static bool delayed_consistent(loader *L, const draft *dr, const mr_delayed_def *d)
{
    for (size_t i = 0; i < d->ncolumns; i++)
        for (size_t j = 0; j < d->nkeys; j++)
            if (strcasecmp(d->columns[i], d->keys[j]) == 0) {
                mr_rule_error(L, mr_rule_line(dr, "columns"), "[delayed %s]: %s is both a "
                              "key column and a counter column", dr->name, d->columns[i]);
                return false;
            }
    for (size_t i = 0; i < d->nset_columns; i++)
        for (size_t j = 0; j < d->nkeys; j++)
            if (strcasecmp(d->set_columns[i], d->keys[j]) == 0) {
                mr_rule_error(L, mr_rule_line(dr, "set_columns"), "[delayed %s]: %s is both "
                              "a key column and in set_columns", dr->name, d->set_columns[i]);
                return false;
            }
    if (d->mode == MR_DELAYED_STAGED && !staged_set_columns_ok(L, dr, d))
        return false;
    if (strcmp(d->staging_table, d->table) == 0) {
        mr_rule_error(L, mr_rule_line(dr, "staging_table"), "[delayed %s]: staging_table "
                      "must not be the table itself", dr->name);
        return false;
    }
    return true;
}

/* flush_interval (default 1 s) and flush_rows (default 10000). */
static bool delayed_flush_settings(loader *L, const draft *dr, mr_delayed_def *d)
{
    bool ok = true;
    d->flush_interval_ms = 1000;
    if (mr_rule_val(dr, "flush_interval") &&
        !mr_rule_duration(mr_rule_val(dr, "flush_interval"), &d->flush_interval_ms)) {
        mr_rule_bad_value(L, dr, "flush_interval", "a duration above zero, like 500ms, 1s or 1m");
        ok = false;
    }
    return mr_rule_count(L, dr, "flush_rows", 10000, 1000000, &d->flush_rows) && ok;
}

/* ---- delayed default rule -------------------------------------------------------- */

/* `table = s.*` or `*`: a default rule, whose tables' rules are derived. */
static bool is_default_table(const char *v)
{
    size_t n = v ? strlen(v) : 0;
    return n && v[n - 1] == '*' && (n == 1 || v[n - 2] == '.');
}

/* Keys a default rule may not give: its tables' rules are derived from the
 * schema, and while one is being derived its statements go to the server as
 * plain UPDATEs, which cannot insert a missing row. */
static bool default_keys_absent(loader *L, const draft *dr)
{
    static const struct {
        const char *k;
        const char *why;
    } no[] = {
        {"key", "the key is the table's primary key"},
        {"columns", "the counter columns are the table's integer and DECIMAL columns"},
        {"set_columns", "derived rules have no set_columns"},
        {"bucket_column", "derived rules have no bucket"},
        {"bucket", "derived rules have no bucket"},
        {"memory_max_keys", "a default rule is staged only"},
    };
    bool ok = true;
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (mr_rule_val(dr, no[i].k)) {
            mr_rule_error(L, mr_rule_line(dr, no[i].k), "[delayed %s]: a default rule "
                          "(table = %s) may not give %s: the table's rule is derived from the "
                          "schema (%s)", dr->name, mr_rule_val(dr, "table"), no[i].k,
                          no[i].why);
            ok = false;
        }
    const char *m = mr_rule_val(dr, "mode"), *miss = mr_rule_val(dr, "missing");
    if (m && strcasecmp(m, "memory") == 0) {
        mr_rule_error(L, mr_rule_line(dr, "mode"), "[delayed %s]: a default rule is staged "
                      "only (mode = memory needs its columns written in the rule)",
                      dr->name);
        ok = false;
    }
    if (miss && strcasecmp(miss, "insert") == 0) {
        mr_rule_error(L, mr_rule_line(dr, "missing"), "[delayed %s]: a default rule may not "
                      "give missing = insert: while a table's rule is being derived its "
                      "statements are sent as plain UPDATEs, which cannot insert a missing row",
                      dr->name);
        ok = false;
    }
    return ok;
}

/* The schema part of `s.*` ("*" for any), unique among default rules. */
static bool default_schema(loader *L, const draft *dr, mr_delayed_def *d)
{
    const char *v = mr_rule_val(dr, "table");
    size_t n = strlen(v) > 1 ? strlen(v) - 2 : 0;
    if ((strlen(v) > 1 && (n == 0 || n > 64)) || strchr(v, '`') || memchr(v, '.', n) ||
        memchr(v, '*', n)) {
        mr_rule_bad_value(L, dr, "table", "schema.* or * for a default rule");
        return false;
    }
    if (mr_rule_val(dr, "schema") && (n != strlen(mr_rule_val(dr, "schema")) ||
                              strncmp(mr_rule_val(dr, "schema"), v, n) != 0)) {
        mr_rule_error(L, mr_rule_line(dr, "table"), "[delayed %s]: write table = %s.*, "
                      "not the schema key, for a default rule of one schema", dr->name,
                      mr_rule_val(dr, "schema"));
        return false;
    }
    d->schema = n ? strndup(v, n) : mr_rule_strdup(L, "*");
    d->table = mr_rule_strdup(L, "*");
    if (!d->schema)
        mr_rule_oom(L);
    const mr_rule *rules;
    size_t nrules = mr_rule_loaded(L, &rules);
    for (size_t i = 0; d->schema && i < nrules; i++) {
        const mr_delayed_def *o = rules[i].delayed;
        /* o->schema is NULL on a default rule refused for its table */
        if (rules[i].kind == MR_RULE_DELAYED && o && o->derive && o->schema &&
            strcmp(o->schema, d->schema) == 0) {
            mr_rule_error(L, mr_rule_line(dr, "table"), "[delayed %s]: rule %s (%s:%d) is "
                          "already the default rule for %s; at most one default rule per schema",
                          dr->name, rules[i].name, rules[i].file, rules[i].line,
                          mr_rule_val(dr, "table"));
            return false;
        }
    }
    return d->schema && d->table;
}

/* staging_table: a pattern holding {table} once (default {table}_delayed). */
static bool default_staging(loader *L, const draft *dr, mr_delayed_def *d)
{
    const char *v = mr_rule_val(dr, "staging_table") ? mr_rule_val(dr, "staging_table") : "{table}_delayed";
    const char *at = strstr(v, "{table}");
    if (!at || strstr(at + 1, "{table}") || strlen(v) > 64 || strchr(v, '`') ||
        strchr(v, '.') || strcmp(v, "{table}") == 0) {
        mr_rule_bad_value(L, dr, "staging_table", "a name holding {table} once, like {table}_delayed");
        return false;
    }
    d->staging_table = mr_rule_strdup(L, v);
    return d->staging_table != NULL;
}

static bool finish_delayed_default(loader *L, const draft *dr, mr_rule *r, mr_delayed_def *d)
{
    d->derive = true;
    bool ok = default_keys_absent(L, dr) && delayed_modes(L, dr, d) && default_schema(L, dr, d);
    ok = ok && default_staging(L, dr, d) && staging_engine_ok(L, dr);
    if (ok)
        ok = (d->staging_engine = mr_rule_strdup(L, mr_rule_val(dr, "staging_engine") ? mr_rule_val(dr, "staging_engine")
                                                                       : "InnoDB")) != NULL;
    if (!ok)
        return false;
    char text[200];
    snprintf(text, sizeof text, "delayed default %s.* -> %s, derived from the schema at run time",
             d->schema, d->staging_table);
    r->pattern = mr_rule_strdup(L, text);
    return r->pattern != NULL;
}

bool mr_delayed_rule_parse(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    (void)im;
    mr_delayed_def *d = calloc(1, sizeof *d);
    if (!d) {
        mr_rule_oom(L);
        return false;
    }
    r->delayed = d;
    bool ok = mr_rule_need(L, dr, "table", "delayed rules need the table whose counters are delayed");
    if (ok && is_default_table(mr_rule_val(dr, "table"))) {
        ok = delayed_flush_settings(L, dr, d);
        return finish_delayed_default(L, dr, r, d) && ok;
    }
    ok &= mr_rule_need(L, dr, "columns", "delayed rules need columns, the counter columns UPDATE "
               "DELAYED may add to");
    ok &= delayed_flush_settings(L, dr, d);
    ok &= delayed_modes(L, dr, d);
    ok = ok && mr_rule_table(L, dr, &d->schema, &d->table);
    /* without key: the table's primary key, from the schema cache (workers) and,
     * staged, information_schema (the flusher); a memory table learns it from
     * the workers (delayed/mem_keys.h) */
    ok = ok && (!mr_rule_val(dr, "key") || mr_rule_names(L, dr, "key", &d->keys, &d->nkeys));
    ok = ok && mr_rule_names(L, dr, "columns", &d->columns, &d->ncolumns);
    if (ok && mr_rule_val(dr, "set_columns"))
        ok = mr_rule_names(L, dr, "set_columns", &d->set_columns, &d->nset_columns);
    ok = ok && delayed_staging(L, dr, d) && delayed_consistent(L, dr, d) &&
         delayed_bucket(L, dr, d);
    if (!ok)
        return false;
    char text[160];
    snprintf(text, sizeof text, "delayed %s.%s -> %s", d->schema, d->table, d->staging_table);
    r->pattern = mr_rule_strdup(L, text);
    return r->pattern != NULL;
}

/* ---- paginate ------------------------------------------------------------------- */

/* table = *, t or schema.t (a bare t is that table in any schema). */
static bool paginate_table(loader *L, const draft *dr, mr_paginate_def *p)
{
    const char *v = mr_rule_val(dr, "table");
    if (strcmp(v, "*") == 0)
        return true;
    const char *dot = strchr(v, '.');
    const char *t = dot ? dot + 1 : v;
    size_t sn = dot ? (size_t)(dot - v) : 0;
    bool ok = (!dot || (sn > 0 && sn <= 64)) && *t && strlen(t) <= 64 && !strchr(t, '.') &&
              !strchr(v, '`') && !strchr(t, '*');
    if (!ok) {
        mr_rule_bad_value(L, dr, "table", "*, a table name, or schema.table, unquoted");
        return false;
    }
    p->schema = dot ? strndup(v, sn) : NULL;
    p->table = mr_rule_strdup(L, t);
    if (dot && !p->schema)
        mr_rule_oom(L);
    return p->table && (!dot || p->schema);
}

/* strategy = deferred_join | keyset | auto. */
static bool paginate_strategy(loader *L, const draft *dr, mr_paginate_def *p)
{
    static const struct { const char *name; mr_paginate_strategy s; } names[] = {
        {"deferred_join", MR_PAGINATE_DEFERRED_JOIN},
        {"keyset", MR_PAGINATE_KEYSET},
        {"auto", MR_PAGINATE_AUTO},
    };
    const char *v = mr_rule_val(dr, "strategy");
    p->strategy = MR_PAGINATE_DEFERRED_JOIN;
    for (size_t i = 0; v && i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(v, names[i].name) == 0)
            p->strategy = names[i].s;
    if (!v || strcasecmp(v, "deferred_join") == 0 || p->strategy != MR_PAGINATE_DEFERRED_JOIN)
        return true;
    mr_rule_bad_value(L, dr, "strategy", "deferred_join, keyset or auto");
    return false;
}

/* max_bookmarks and bookmark_ttl: the keyset store's bounds for this rule. */
static bool paginate_bookmarks(loader *L, const draft *dr, mr_paginate_def *p)
{
    bool ok = mr_rule_count(L, dr, "max_bookmarks", 10000, 10000000, &p->max_bookmarks);
    p->bookmark_ttl_ms = 60000;
    if (mr_rule_val(dr, "bookmark_ttl") &&
        (!mr_rule_duration(mr_rule_val(dr, "bookmark_ttl"), &p->bookmark_ttl_ms) ||
         p->bookmark_ttl_ms == 0)) {
        mr_rule_bad_value(L, dr, "bookmark_ttl", "a duration above zero, like 30s, 5m or 1h");
        ok = false;
    }
    return ok;
}

/* max_offset = 0 (no limit) or a whole number. */
static bool paginate_max_offset(loader *L, const draft *dr, mr_paginate_def *p)
{
    const char *v = mr_rule_val(dr, "max_offset");
    p->max_offset = 0;
    if (!v || strcmp(v, "0") == 0)
        return true;
    return mr_rule_count(L, dr, "max_offset", 0, UINT64_MAX / 10, &p->max_offset);
}

bool mr_paginate_rule_parse(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    (void)im;
    mr_paginate_def *p = calloc(1, sizeof *p);
    if (!p) {
        mr_rule_oom(L);
        return false;
    }
    r->paginate = p;
    r->err_code = MR_PAGINATE_ERR_CODE;
    memcpy(r->sqlstate, MR_PAGINATE_SQLSTATE, sizeof r->sqlstate);
    bool ok = mr_rule_need(L, dr, "table", "paginate rules need the table (or *) whose pages they take");
    ok &= mr_rule_count(L, dr, "threshold", 1000, UINT64_MAX / 10, &p->threshold);
    ok &= paginate_strategy(L, dr, p);
    ok &= paginate_max_offset(L, dr, p);
    ok &= paginate_bookmarks(L, dr, p);
    ok = ok && paginate_table(L, dr, p);
    /* without key: the table's primary (or unique NOT NULL) key from the schema cache */
    ok = ok && (!mr_rule_val(dr, "key") || mr_rule_names(L, dr, "key", &p->keys, &p->nkeys));
    if (!ok)
        return false;
    if (mr_rule_val(dr, "message") && !(r->message = mr_rule_strdup(L, mr_rule_val(dr, "message"))))
        return false;
    char text[200];
    static const char *const strategy[] = {"deferred_join", "keyset", "auto"};
    snprintf(text, sizeof text, "paginate %s%s%s from offset %llu, %s%s%s", p->schema ?
             p->schema : "", p->schema ? "." : "", p->table ? p->table : "*",
             (unsigned long long)p->threshold, strategy[p->strategy],
             p->max_offset ? ", max_offset set" : "", p->nkeys ? "" : ", key from the schema");
    r->pattern = mr_rule_strdup(L, text);
    return r->pattern != NULL;
}

/* ---- sections ------------------------------------------------------------------ */

static void finish_draft(loader *L)
{
    if (!L->have_cur)
        return;
    draft *dr = &L->cur;
    const mr_rule_kind *kd = dr->kind;
    mr_rule r = {.line = dr->line, .kind = kd->type, .entry = kd, .err_code = 1148,
                 .sqlstate = "42000"};
    rule_impl im = {.how = kd->apply ? HOW_KIND : HOW_DIGEST, .next = NO_RULE};
    r.name = dr->name; /* shared with the draft until the draft is cleared */
    r.file = mr_rule_strdup(L, L->file);
    if (r.file) {
        parse_common(L, dr, &r);
        kd->parse(L, dr, &r, &im);
    }
    dr->name = NULL;
    if (!r.file || !push_rule(L, &r, &im)) {
        mr_rule_oom(L);
        rule_free(&r);
        rules_impl_free(&im);
    }
    draft_clear(dr);
    L->have_cur = false;
}

static bool valid_name(const char *s)
{
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("_-.", *s))
            return false;
    return true;
}

static const mr_rule_kind *find_kind(const loader *L, const char *w, size_t n)
{
    for (size_t k = 0; L->kinds && L->kinds[k]; k++)
        if (strlen(L->kinds[k]->name) == n && strncmp(L->kinds[k]->name, w, n) == 0)
            return L->kinds[k];
    return NULL;
}

/* "rewrite, regex, block, ...": the words of the kinds, in table order. */
static void kind_list(const loader *L, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t k = 0; L->kinds && L->kinds[k] && o < cap; k++)
        o += (size_t)snprintf(out + o, cap - o, "%s%s", k ? ", " : "", L->kinds[k]->name);
}

/* "[kind name]": checks both parts; false leaves the section's keys unread. */
static bool parse_header(loader *L, const char *sec, int line, const mr_rule_kind **kind,
                         const char **name)
{
    size_t kn = strcspn(sec, " \t");
    const char *nm = sec + kn + strspn(sec + kn, " \t");
    *kind = find_kind(L, sec, kn);
    *name = nm;
    if (!*kind) {
        char known[256];
        kind_list(L, known, sizeof known);
        mr_rule_error(L, line, "unknown rule kind '%.*s' in [%s]; known kinds: %s", (int)kn, sec,
                      sec, known);
        return false;
    }
    if (!*nm || !valid_name(nm)) {
        mr_rule_error(L, line, "[%s] needs one rule name after the kind, made of "
                    "letters, digits, _ - and . (like [%s no_star_orders])", sec,
                    (*kind)->name);
        return false;
    }
    uint32_t prev = names_find(L, nm);
    if (prev != NO_RULE) {
        const mr_rule *p = &L->rules[prev];
        mr_rule_error(L, line, "rule name '%s' is already used by [%s %s] at %s:%d; "
                    "names must be unique across all rule files", nm,
                    p->entry->name, p->name, p->file, p->line);
        return false;
    }
    return true;
}

static int on_section(void *ctx, const char *sec, int line)
{
    loader *L = ctx;
    finish_draft(L);
    const mr_rule_kind *kind;
    const char *name;
    L->skip_keys = !parse_header(L, sec, line, &kind, &name);
    if (L->skip_keys)
        return 0;
    L->cur.kind = kind;
    L->cur.line = line;
    L->cur.name = mr_rule_strdup(L, name);
    L->have_cur = L->cur.name != NULL;
    return 0;
}

static void unknown_key(loader *L, const char *key, int line)
{
    const draft *dr = &L->cur;
    char list[512];
    size_t o = 0;
    const char *k;
    for (size_t i = 0; (k = key_at(dr->kind, i)) != NULL && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", k);
    mr_rule_error(L, line, "unknown key '%s' in [%s %s]; %s rules take: %s", key,
                dr->kind->name, dr->name, dr->kind->name, list);
}

static int on_pair(void *ctx, const char *section, const char *key, const char *value, int line)
{
    loader *L = ctx;
    if (L->skip_keys || !L->have_cur)
        return 0;
    draft *dr = &L->cur;
    int k = key_index(dr, key);
    if (k < 0 || k >= MR_RULE_MAX_KEYS) {
        unknown_key(L, key, line);
    } else if (dr->val[k]) {
        mr_rule_error(L, line, "%s given twice in [%s %s] (first at line %d)", key,
                      dr->kind->name, dr->name, dr->vline[k]);
    } else {
        dr->val[k] = mr_rule_strdup(L, value);
        dr->vline[k] = line;
    }
    (void)section;
    return 0;
}

static void on_error(void *ctx, int line, const char *msg)
{
    loader *L = ctx;
    mr_rule_error(L, line, "%s", msg);
}

/* ---- handing over --------------------------------------------------------------- */

void rules_free_rules(mr_rule *rules, rule_impl *impl, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        rule_free(&rules[i]);
        rules_impl_free(&impl[i]);
    }
    free(rules);
    free(impl);
}

rules_loader *rules_loader_new(mr_diag *d, const mr_rule_kinds *kinds)
{
    loader *L = calloc(1, sizeof *L);
    if (!L) {
        mr_diag_error(d, "rules", 0, "out of memory while loading rules");
        return NULL;
    }
    L->d = d;
    L->kinds = kinds;
    L->errors_before = d->errors;
    return L;
}

void rules_loader_add(rules_loader *L, const char *file, const char *text, size_t len)
{
    static const mr_ini_callbacks cb = {on_section, on_pair, on_error};
    L->file = file;
    L->skip_keys = false;
    /* callbacks report their own errors; the count returned adds nothing */
    (void)mr_ini_parse(text, len, &cb, L);
    finish_draft(L);
}

bool rules_loader_take(rules_loader *L, mr_rule **rules, rule_impl **impl, size_t *n)
{
    bool ok = L->d->errors == L->errors_before && !L->oom;
    *rules = ok ? L->rules : NULL;
    *impl = ok ? L->impl : NULL;
    *n = ok ? L->n : 0;
    if (!ok)
        rules_free_rules(L->rules, L->impl, L->n);
    free(L->names);
    free(L);
    return ok;
}

/* ---- the kinds matched by pattern ------------------------------------------------ */

static const char *const rewrite_keys[] = {"pattern", "replacement", NULL};
static const char *const regex_keys[] = {"match", "replace", "caseless", "global", "require",
                                         NULL};
static const char *const block_keys[] = {"pattern", "match", "caseless", "require", "statement",
                                         "where", "message", "code", "sqlstate", NULL};

const mr_rule_kind mr_rewrite_kind = {
    .name = "rewrite", .type = MR_RULE_REWRITE, .keys = rewrite_keys, .parse = finish_rewrite,
};
const mr_rule_kind mr_regex_kind = {
    .name = "regex", .type = MR_RULE_REGEX, .keys = regex_keys, .parse = finish_regex,
};
const mr_rule_kind mr_block_kind = {
    .name = "block", .type = MR_RULE_BLOCK, .keys = block_keys, .parse = finish_block,
};
