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
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/base/duration.h"
#include "myrewrite/base/ini.h"
#include "myrewrite/queue/release_sql.h"
#include "myrewrite/sql/digest.h"
#include "myrewrite/sql/stmt.h"
#include "rules/rules_impl.h"

const char *const rules_kind_names[MR_RULE_KIND_MAX] = {"rewrite", "regex", "block", "queue",
                                                           "delayed", "paginate"};

/* ---- keys ------------------------------------------------------------------ */

typedef enum key_id {
    K_PATTERN, K_REPLACEMENT, K_MATCH, K_REPLACE, K_CASELESS, K_GLOBAL, K_REQUIRE,
    K_STATEMENT, K_WHERE, K_MESSAGE, K_CODE, K_SQLSTATE,
    K_TABLE, K_OWNER_COLUMN, K_STATUS_COLUMN, K_CLAIMED_VALUE, K_UNCLAIMED_VALUE,
    K_UNCLAIMED_OWNER, K_CLAIMED_AT_COLUMN, K_TIMEOUT, K_RELEASE, K_REAP, K_SKIP_LOCKED,
    K_CLAIM_READ_COMMITTED, K_KEY, K_COLUMNS, K_STAGING_TABLE, K_STAGING_ENGINE,
    K_FLUSH_INTERVAL, K_FLUSH_ROWS, K_MISSING, K_MODE, K_SET_COLUMNS,
    K_MEMORY_MAX_KEYS, K_FLUSH_EARLY, K_BUCKET_COLUMN, K_BUCKET, K_THRESHOLD, K_STRATEGY, K_MAX_OFFSET,
    K_MAX_BOOKMARKS, K_BOOKMARK_TTL, K_ENABLED, K_CONTINUE, K_LOG_ONLY, K_LOG, K_LOG_SAMPLE,
    K_USER, K_SCHEMA,
    K_MAX
} key_id;

static const char *const key_names[K_MAX] = {
    "pattern", "replacement", "match", "replace", "caseless", "global", "require",
    "statement", "where", "message", "code", "sqlstate",
    "table", "owner_column", "status_column", "claimed_value", "unclaimed_value",
    "unclaimed_owner", "claimed_at_column", "timeout", "release", "reap", "skip_locked",
    "claim_read_committed",
    "key", "columns", "staging_table", "staging_engine", "flush_interval", "flush_rows",
    "missing", "mode", "set_columns", "memory_max_keys", "flush_early", "bucket_column", "bucket",
    "threshold", "strategy", "max_offset", "max_bookmarks", "bookmark_ttl",
    "enabled", "continue", "log_only", "log", "log_sample", "user", "schema",
};

#define COMMON_KEYS K_ENABLED, K_CONTINUE, K_LOG_ONLY, K_LOG, K_LOG_SAMPLE, K_USER, K_SCHEMA

/* A rule section being read: raw values and the line of each. */
typedef struct draft {
    mr_rule_type kind;
    char *name;
    int line;
    char *val[K_MAX];
    int vline[K_MAX];
} draft;

typedef struct rules_loader loader;

/* The kind table: header word, accepted keys (in the order error messages
 * list them) and the function that checks and compiles a finished section.
 * New kinds are added here. */
typedef struct kind_def {
    key_id keys[K_MAX];
    size_t nkeys;
    bool (*finish)(loader *L, const draft *dr, mr_rule *r, rule_impl *im);
} kind_def;

static bool finish_rewrite(loader *L, const draft *dr, mr_rule *r, rule_impl *im);
static bool finish_regex(loader *L, const draft *dr, mr_rule *r, rule_impl *im);
static bool finish_block(loader *L, const draft *dr, mr_rule *r, rule_impl *im);
static bool finish_queue(loader *L, const draft *dr, mr_rule *r, rule_impl *im);
static bool finish_delayed(loader *L, const draft *dr, mr_rule *r, rule_impl *im);
static bool finish_paginate(loader *L, const draft *dr, mr_rule *r, rule_impl *im);

static const kind_def kinds[MR_RULE_KIND_MAX] = {
    [MR_RULE_REWRITE] = {{K_PATTERN, K_REPLACEMENT, COMMON_KEYS}, 9, finish_rewrite},
    [MR_RULE_REGEX] = {{K_MATCH, K_REPLACE, K_CASELESS, K_GLOBAL, K_REQUIRE, COMMON_KEYS}, 12,
                       finish_regex},
    [MR_RULE_BLOCK] = {{K_PATTERN, K_MATCH, K_CASELESS, K_REQUIRE, K_STATEMENT, K_WHERE,
                        K_MESSAGE, K_CODE, K_SQLSTATE, COMMON_KEYS}, 16, finish_block},
    [MR_RULE_QUEUE] = {{K_TABLE, K_OWNER_COLUMN, K_STATUS_COLUMN, K_CLAIMED_VALUE,
                        K_UNCLAIMED_VALUE, K_UNCLAIMED_OWNER, K_CLAIMED_AT_COLUMN, K_TIMEOUT,
                        K_RELEASE, K_REAP, K_SKIP_LOCKED, K_CLAIM_READ_COMMITTED, COMMON_KEYS},
                       19, finish_queue},
    [MR_RULE_DELAYED] = {{K_TABLE, K_KEY, K_COLUMNS, K_STAGING_TABLE, K_STAGING_ENGINE,
                          K_FLUSH_INTERVAL, K_FLUSH_ROWS, K_MISSING, K_MODE, K_SET_COLUMNS,
                          K_MEMORY_MAX_KEYS, K_FLUSH_EARLY, K_BUCKET_COLUMN, K_BUCKET,
                          COMMON_KEYS}, 21,
                         finish_delayed},
    [MR_RULE_PAGINATE] = {{K_TABLE, K_KEY, K_THRESHOLD, K_STRATEGY, K_MAX_OFFSET, K_MESSAGE,
                           K_MAX_BOOKMARKS, K_BOOKMARK_TTL, COMMON_KEYS}, 15, finish_paginate},
};

/* ---- the loader --------------------------------------------------------------- */

struct rules_loader {
    mr_diag *d;
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

static void oom(loader *L)
{
    if (!L->oom)
        mr_diag_error(L->d, L->file, 0, "out of memory while loading rules");
    L->oom = true;
}

static char *dup_str(loader *L, const char *s)
{
    char *p = strdup(s);
    if (!p)
        oom(L);
    return p;
}

static void draft_clear(draft *dr)
{
    free(dr->name);
    for (int k = 0; k < K_MAX; k++)
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

static void queue_def_free(mr_queue_def *q)
{
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

static void names_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static void delayed_def_free(mr_delayed_def *d)
{
    if (!d)
        return;
    free(d->schema);
    free(d->table);
    names_free(d->keys, d->nkeys);
    names_free(d->columns, d->ncolumns);
    names_free(d->set_columns, d->nset_columns);
    free(d->bucket_column);
    free(d->staged_rows);
    free(d->staging_table);
    free(d->staging_engine);
    free(d);
}

static void paginate_def_free(mr_paginate_def *p)
{
    if (!p)
        return;
    free(p->schema);
    free(p->table);
    names_free(p->keys, p->nkeys);
    free(p);
}

static void rule_free(mr_rule *r)
{
    queue_def_free((mr_queue_def *)r->queue);
    delayed_def_free((mr_delayed_def *)r->delayed);
    paginate_def_free((mr_paginate_def *)r->paginate);
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

static void bad_value(loader *L, const draft *dr, key_id k, const char *expected)
{
    mr_diag_error(L->d, L->file, dr->vline[k], "%s = '%s' in [%s %s]: expected %s", key_names[k],
                dr->val[k], rules_kind_names[dr->kind], dr->name, expected);
}

static bool parse_bool(loader *L, const draft *dr, key_id k, bool dflt, bool *out)
{
    const char *v = dr->val[k];
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
    bad_value(L, dr, k, "yes or no");
    return false;
}

static bool parse_log(loader *L, const draft *dr, mr_rule_log *out)
{
    static const char *const names[] = {"off", "digest", "full"};
    const char *v = dr->val[K_LOG];
    *out = MR_RULE_LOG_OFF;
    if (!v)
        return true;
    for (int i = 0; i < 3; i++)
        if (strcasecmp(v, names[i]) == 0) {
            *out = (mr_rule_log)i;
            return true;
        }
    bad_value(L, dr, K_LOG, "off, digest or full");
    return false;
}

/* `log_sample = N`: log one match in N (counted per worker thread); only
 * meaningful for a rule that logs. */
static bool parse_log_sample(loader *L, const draft *dr, const mr_rule *r, uint32_t *out)
{
    const char *v = dr->val[K_LOG_SAMPLE];
    *out = 1;
    if (!v)
        return true;
    unsigned long long n = 0;
    size_t i = 0;
    for (; v[i] >= '0' && v[i] <= '9' && n <= 1000000000ull; i++)
        n = n * 10 + (unsigned long long)(v[i] - '0');
    if (i == 0 || v[i] || n < 1 || n > 1000000000ull) {
        bad_value(L, dr, K_LOG_SAMPLE, "a whole number from 1 (log every match) to 1000000000");
        return false;
    }
    if (r->log == MR_RULE_LOG_OFF && !r->log_only) {
        mr_diag_error(L->d, L->file, dr->vline[K_LOG_SAMPLE],
                      "log_sample in [%s %s] needs log = digest or log = full (or log_only = yes): "
                      "the rule logs nothing to sample",
                      rules_kind_names[dr->kind], dr->name);
        return false;
    }
    *out = (uint32_t)n;
    return true;
}

static bool parse_filter(loader *L, const draft *dr, key_id k, char **out)
{
    *out = NULL;
    if (!dr->val[k])
        return true;
    if (!dr->val[k][0]) {
        bad_value(L, dr, k, "a name (leave the key out to match any)");
        return false;
    }
    *out = dup_str(L, dr->val[k]);
    return *out != NULL;
}

static bool parse_code(loader *L, const draft *dr, uint16_t *out)
{
    const char *v = dr->val[K_CODE];
    *out = 1148;
    if (!v)
        return true;
    unsigned long n = 0;
    size_t i = 0;
    for (; v[i] >= '0' && v[i] <= '9' && n <= 65535; i++)
        n = n * 10 + (unsigned long)(v[i] - '0');
    if (i == 0 || v[i] || n < 1 || n > 65535) {
        bad_value(L, dr, K_CODE, "an error number from 1 to 65535");
        return false;
    }
    *out = (uint16_t)n;
    return true;
}

static bool parse_sqlstate(loader *L, const draft *dr, char out[6])
{
    const char *v = dr->val[K_SQLSTATE];
    memcpy(out, "42000", 6);
    if (!v)
        return true;
    bool ok = strlen(v) == 5;
    for (size_t i = 0; ok && i < 5; i++)
        ok = (v[i] >= '0' && v[i] <= '9') || (v[i] >= 'A' && v[i] <= 'Z');
    if (!ok) {
        bad_value(L, dr, K_SQLSTATE, "5 digits or capital letters, like 42000 or HY000");
        return false;
    }
    memcpy(out, v, 6);
    return true;
}

/* `require`: none, or one word; *out stays NULL for none. */
static bool parse_require(loader *L, const draft *dr, char **out, bool *given)
{
    const char *v = dr->val[K_REQUIRE];
    *out = NULL;
    *given = v != NULL;
    if (!v || strcasecmp(v, "none") == 0)
        return true;
    size_t n = strlen(v);
    bool ok = n > 0;
    for (size_t i = 0; ok && i < n; i++)
        ok = isalnum((unsigned char)v[i]) || v[i] == '_';
    if (!ok) {
        bad_value(L, dr, K_REQUIRE,
                  "none, or one word of letters, digits and _ that every matching statement holds");
        return false;
    }
    *out = dup_str(L, v);
    for (size_t i = 0; *out && i < n; i++)
        (*out)[i] = (char)tolower((unsigned char)(*out)[i]);
    return *out != NULL;
}

/* `&=`, not `&&`: every bad value is reported, not only the first. */
static bool parse_common(loader *L, const draft *dr, mr_rule *r)
{
    bool ok = parse_bool(L, dr, K_ENABLED, true, &r->enabled);
    ok &= parse_bool(L, dr, K_CONTINUE, false, &r->cont);
    ok &= parse_bool(L, dr, K_LOG_ONLY, false, &r->log_only);
    ok &= parse_log(L, dr, &r->log);
    ok &= parse_log_sample(L, dr, r, &r->log_sample);
    ok &= parse_filter(L, dr, K_USER, &r->user);
    ok &= parse_filter(L, dr, K_SCHEMA, &r->schema);
    return ok;
}

static bool need(loader *L, const draft *dr, key_id k, const char *what)
{
    if (dr->val[k] && dr->val[k][0])
        return true;
    mr_diag_error(L->d, L->file, dr->val[k] ? dr->vline[k] : dr->line, "[%s %s] has %s %s; %s",
                rules_kind_names[dr->kind], dr->name, dr->val[k] ? "an empty" : "no",
                key_names[k], what);
    return false;
}

/* ---- kinds ---------------------------------------------------------------------- */

static rule_src src_at(loader *L, const mr_rule *r, const draft *dr, key_id k)
{
    return (rule_src){.d = L->d, .r = r, .line = dr->vline[k] ? dr->vline[k] : dr->line};
}

static bool finish_rewrite(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    const char *what = "rewrite rules need pattern and replacement";
    bool ok = need(L, dr, K_PATTERN, what);
    ok &= need(L, dr, K_REPLACEMENT, what);
    if (!ok)
        return false;
    rule_src at = src_at(L, r, dr, K_PATTERN);
    if (!rules_compile_pattern(&at, dr->val[K_PATTERN], im))
        return false;
    at = src_at(L, r, dr, K_REPLACEMENT);
    if (!rules_compile_replacement(&at, dr->val[K_REPLACEMENT], im))
        return false;
    r->pattern = dup_str(L, dr->val[K_PATTERN]);
    r->replacement = dup_str(L, dr->val[K_REPLACEMENT]);
    return r->pattern && r->replacement;
}

/* match, caseless and require, shared by regex and block rules. */
static bool compile_match(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    bool caseless, given;
    bool ok = parse_bool(L, dr, K_CASELESS, true, &caseless);
    ok &= parse_require(L, dr, &im->require, &given);
    rule_src at = src_at(L, r, dr, K_MATCH);
    if (!ok || !rules_compile_regex(&at, dr->val[K_MATCH], caseless, im))
        return false;
    if (!given) {
        im->require = rules_derive_word(dr->val[K_MATCH], strlen(dr->val[K_MATCH]));
        im->require_derived = im->require != NULL;
    }
    r->pattern = dup_str(L, dr->val[K_MATCH]);
    return r->pattern != NULL;
}

static bool finish_regex(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    const char *what = "regex rules need match and replace";
    bool ok = need(L, dr, K_MATCH, what);
    ok &= need(L, dr, K_REPLACE, what);
    ok &= parse_bool(L, dr, K_GLOBAL, false, &im->global);
    if (!ok || !compile_match(L, dr, r, im))
        return false;
    rule_src at = src_at(L, r, dr, K_REPLACE);
    if (!rules_compile_regex_replace(&at, dr->val[K_REPLACE], im))
        return false;
    r->replacement = dup_str(L, dr->val[K_REPLACE]);
    return r->replacement != NULL;
}

/* statement = delete, update (any of them, separated by commas or spaces) */
static bool parse_statement(loader *L, const draft *dr, unsigned *mask)
{
    const char *v = dr->val[K_STATEMENT];
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
        bad_value(L, dr, K_STATEMENT, "delete, update, or both separated by a comma");
        return false;
    }
    return true;
}

static bool block_by_statement(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    if (!dr->val[K_WHERE]) {
        mr_diag_error(L->d, L->file, dr->vline[K_STATEMENT],
                    "[block %s] has statement but no where; write where = missing", dr->name);
        return false;
    }
    bool ok = parse_statement(L, dr, &im->stmt_mask);
    if (strcasecmp(dr->val[K_WHERE], "missing") != 0) {
        bad_value(L, dr, K_WHERE, "missing (the only condition so far)");
        ok = false;
    }
    if (!ok)
        return false;
    im->how = HOW_NO_WHERE;
    char text[128];
    snprintf(text, sizeof text, "statement = %s, where = missing", dr->val[K_STATEMENT]);
    r->pattern = dup_str(L, text);
    return r->pattern != NULL;
}

/* Exactly one of pattern / match / statement says what a block catches. */
static int block_selector(loader *L, const draft *dr)
{
    int count = !!dr->val[K_PATTERN] + !!dr->val[K_MATCH] + !!dr->val[K_STATEMENT];
    if (count == 1)
        return dr->val[K_PATTERN] ? K_PATTERN : dr->val[K_MATCH] ? K_MATCH : K_STATEMENT;
    mr_diag_error(L->d, L->file, dr->line,
                "[block %s] %s; block rules take exactly one of pattern (SQL with ?), "
                "match (regex) or statement + where", dr->name,
                count ? "has more than one of pattern, match and statement" : "says nothing to block");
    return -1;
}

static bool only_with_match(loader *L, const draft *dr, key_id k)
{
    if (!dr->val[k] || dr->val[K_MATCH])
        return true;
    mr_diag_error(L->d, L->file, dr->vline[k], "%s in [block %s] only applies with match",
                key_names[k], dr->name);
    return false;
}

static bool finish_block(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    int sel = block_selector(L, dr);
    bool ok = need(L, dr, K_MESSAGE, "block rules need the message the client gets") && sel >= 0;
    ok &= parse_code(L, dr, &r->err_code);
    ok &= parse_sqlstate(L, dr, r->sqlstate);
    ok &= only_with_match(L, dr, K_CASELESS);
    ok &= only_with_match(L, dr, K_REQUIRE);
    if (dr->val[K_WHERE] && !dr->val[K_STATEMENT]) {
        mr_diag_error(L->d, L->file, dr->vline[K_WHERE],
                    "where in [block %s] only applies with statement = delete|update", dr->name);
        ok = false;
    }
    if (!ok)
        return false;
    r->message = dup_str(L, dr->val[K_MESSAGE]);
    if (sel == K_MATCH)
        return compile_match(L, dr, r, im) && r->message;
    if (sel == K_STATEMENT)
        return block_by_statement(L, dr, r, im) && r->message;
    rule_src at = src_at(L, r, dr, K_PATTERN);
    if (!rules_compile_pattern(&at, dr->val[K_PATTERN], im))
        return false;
    r->pattern = dup_str(L, dr->val[K_PATTERN]);
    return r->pattern && r->message;
}

/* ---- queue ---------------------------------------------------------------------- */

/* A duration above zero (base/duration.h: the grammar settings use too). */
static bool parse_duration_value(const char *v, uint64_t *ms)
{
    return mr_parse_duration(v, ms) && *ms > 0;
}

/* A table or column name as mysqld accepts it: 1 to 64 characters. */
static bool name_value(loader *L, const draft *dr, key_id k, char **out)
{
    *out = NULL;
    const char *v = dr->val[k];
    if (!v)
        return true;
    if (!v[0] || strlen(v) > 64 || strchr(v, '`')) {
        bad_value(L, dr, k, "a name of 1 to 64 characters, unquoted, without backticks");
        return false;
    }
    *out = dup_str(L, v);
    return *out != NULL;
}

/* table = t or schema.t; the schema comes from there or from `schema`. */
static bool table_value(loader *L, const draft *dr, char **schema, char **table)
{
    const char *v = dr->val[K_TABLE];
    const char *dot = strchr(v, '.');
    const char *sch = dr->val[K_SCHEMA];
    size_t sn = dot ? (size_t)(dot - v) : 0;
    bool ok = !dot || (sn > 0 && sn <= 64 && dot[1] && !strchr(dot + 1, '.'));
    ok = ok && strlen(dot ? dot + 1 : v) <= 64 && !strchr(v, '`');
    if (!ok) {
        bad_value(L, dr, K_TABLE, "a table name, or schema.table, unquoted");
        return false;
    }
    if (!dot && !sch) {
        mr_diag_error(L->d, L->file, dr->vline[K_TABLE], "[%s %s] needs the table's schema, "
                    "which the proxy's own connection has no default for: write table = "
                    "shop.%s, or schema = shop", rules_kind_names[dr->kind], dr->name, v);
        return false;
    }
    if (dot && sch && (strlen(sch) != sn || strncmp(sch, v, sn) != 0)) {
        mr_diag_error(L->d, L->file, dr->vline[K_TABLE], "[%s %s]: table %s is not in schema "
                    "%s given by the schema key", rules_kind_names[dr->kind], dr->name, v, sch);
        return false;
    }
    *schema = dot ? strndup(v, sn) : dup_str(L, sch);
    *table = dup_str(L, dot ? dot + 1 : v);
    if (!*schema)
        oom(L);
    return *schema && *table;
}

static bool queue_table(loader *L, const draft *dr, mr_queue_def *q)
{
    return table_value(L, dr, &q->schema, &q->table);
}

/* `release` replaces the column keys: refuses any of them given with it
 * (timeout stays, for the `reap` template). */
static bool release_alone(loader *L, const draft *dr)
{
    static const key_id cols[] = {K_OWNER_COLUMN, K_STATUS_COLUMN, K_CLAIMED_VALUE,
                                  K_UNCLAIMED_VALUE, K_UNCLAIMED_OWNER, K_CLAIMED_AT_COLUMN};
    bool ok = true;
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        if (dr->val[cols[i]]) {
            mr_diag_error(L->d, L->file, dr->vline[cols[i]], "%s in [queue %s] does not apply "
                        "with release, which replaces the column keys (a reaper then needs "
                        "reap)", key_names[cols[i]], dr->name);
            ok = false;
        }
    if (dr->val[K_TIMEOUT] && !dr->val[K_REAP]) {
        mr_diag_error(L->d, L->file, dr->vline[K_TIMEOUT], "timeout in [queue %s] needs reap: "
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
    const char *v = dr->val[K_RELEASE];
    if (!strstr(v, "{owner}")) {
        bad_value(L, dr, K_RELEASE, "one SQL statement using {owner} for the backend "
                  "connection id, like UPDATE jobs SET worker = NULL WHERE worker = {owner}");
        return false;
    }
    if (!one_statement(mr_queue_fill_release(v, 1))) {
        bad_value(L, dr, K_RELEASE, "exactly one SQL statement that lexes (with {owner} "
                  "standing for a number)");
        return false;
    }
    q->release = dup_str(L, v);
    return q->release != NULL;
}

/* The reaper's template: {live} and {cutoff}, one statement once filled in. */
static bool queue_reap(loader *L, const draft *dr, mr_queue_def *q)
{
    const char *v = dr->val[K_REAP];
    if (!v)
        return true;
    if (!strstr(v, "{live}") || !strstr(v, "{cutoff}")) {
        bad_value(L, dr, K_REAP, "one SQL statement using {live} for the list of live "
                  "connection ids and {cutoff} for the claim time limit, like UPDATE jobs SET "
                  "worker = NULL WHERE worker NOT IN ({live}) AND locked_at < {cutoff}");
        return false;
    }
    static const uint64_t sample[] = {1, 2};
    if (!one_statement(mr_queue_fill_reap(v, sample, 2, "2000-01-01 00:00:00.000000"))) {
        bad_value(L, dr, K_REAP, "exactly one SQL statement that lexes (with {live} standing "
                  "for a list of numbers and {cutoff} for a time)");
        return false;
    }
    if (dr->val[K_TIMEOUT] && !parse_duration_value(dr->val[K_TIMEOUT], &q->timeout_ms)) {
        bad_value(L, dr, K_TIMEOUT, "a duration above zero, like 90s, 10m or 1h");
        return false;
    }
    q->reap = dup_str(L, v);
    return q->reap != NULL;
}

/* owner_column, status_column and both values: the release the proxy builds. */
static bool queue_columns(loader *L, const draft *dr, mr_queue_def *q)
{
    const char *what = "queue rules need owner_column, status_column, claimed_value and "
                       "unclaimed_value, or a release statement";
    if (dr->val[K_REAP]) {
        mr_diag_error(L->d, L->file, dr->vline[K_REAP], "reap in [queue %s] applies only with "
                    "release; the column form has its own reaper (claimed_at_column)", dr->name);
        return false;
    }
    bool ok = need(L, dr, K_OWNER_COLUMN, what);
    ok &= need(L, dr, K_STATUS_COLUMN, what);
    ok &= need(L, dr, K_CLAIMED_VALUE, what);
    ok &= need(L, dr, K_UNCLAIMED_VALUE, what);
    ok &= name_value(L, dr, K_OWNER_COLUMN, &q->owner_column);
    ok &= name_value(L, dr, K_STATUS_COLUMN, &q->status_column);
    ok &= name_value(L, dr, K_CLAIMED_AT_COLUMN, &q->claimed_at_column);
    if (dr->val[K_TIMEOUT] && !parse_duration_value(dr->val[K_TIMEOUT], &q->timeout_ms)) {
        bad_value(L, dr, K_TIMEOUT, "a duration above zero, like 90s, 10m or 1h");
        ok = false;
    }
    if (dr->val[K_TIMEOUT] && !dr->val[K_CLAIMED_AT_COLUMN]) {
        mr_diag_error(L->d, L->file, dr->vline[K_TIMEOUT], "timeout in [queue %s] needs "
                    "claimed_at_column: a claim's age is read from it", dr->name);
        ok = false;
    }
    if (!ok)
        return false;
    q->claimed_value = dup_str(L, dr->val[K_CLAIMED_VALUE]);
    q->unclaimed_value = dup_str(L, dr->val[K_UNCLAIMED_VALUE]);
    q->unclaimed_owner = dup_str(L, dr->val[K_UNCLAIMED_OWNER] ? dr->val[K_UNCLAIMED_OWNER] : "0");
    return q->claimed_value && q->unclaimed_value && q->unclaimed_owner;
}

static bool finish_queue(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    mr_queue_def *q = calloc(1, sizeof *q);
    if (!q) {
        oom(L);
        return false;
    }
    r->queue = q;
    q->timeout_ms = 600000;
    im->how = HOW_QUEUE;
    bool ok = need(L, dr, K_TABLE, "queue rules need the table used as a queue");
    ok &= parse_bool(L, dr, K_SKIP_LOCKED, false, &q->skip_locked);
    ok &= parse_bool(L, dr, K_CLAIM_READ_COMMITTED, false, &q->claim_read_committed);
    ok = ok && queue_table(L, dr, q);
    if (!ok)
        return false;
    if (dr->val[K_RELEASE])
        ok = release_alone(L, dr) && queue_release(L, dr, q) && queue_reap(L, dr, q);
    else
        ok = queue_columns(L, dr, q);
    if (!ok)
        return false;
    char text[160];
    snprintf(text, sizeof text, "queue %s.%s", q->schema, q->table);
    r->pattern = dup_str(L, text);
    return r->pattern != NULL;
}

/* ---- delayed -------------------------------------------------------------------- */

#define DELAYED_MAX_NAMES 16 /* key and counter columns per rule */

static bool name_ok(const char *v, size_t n)
{
    return n > 0 && n <= 64 && !memchr(v, '`', n);
}

/* A comma list of column names, each once (compared as mysqld does: any case). */
static bool name_list(loader *L, const draft *dr, key_id k, char ***out, size_t *n)
{
    const char *v = dr->val[k];
    char **list = calloc(DELAYED_MAX_NAMES, sizeof *list);
    *out = list;
    *n = 0;
    if (!list) {
        oom(L);
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
            bad_value(L, dr, k, "a comma list of up to 16 different column names, unquoted");
            return false;
        }
        if (!(list[(*n)++] = strndup(v, len))) {
            oom(L);
            return false;
        }
        v += strcspn(v, ",");
        if (!*v)
            return true;
        v++;
    }
}

static bool parse_count(loader *L, const draft *dr, key_id k, uint64_t dflt, uint64_t max,
                        uint64_t *out)
{
    const char *v = dr->val[k];
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
        bad_value(L, dr, k, what);
        return false;
    }
    *out = n;
    return true;
}

/* staging_table (default <table>_delayed) and staging_engine (default InnoDB). */
static bool staging_engine_ok(loader *L, const draft *dr)
{
    const char *e = dr->val[K_STAGING_ENGINE] ? dr->val[K_STAGING_ENGINE] : "InnoDB";
    bool eok = *e && strlen(e) <= 64;
    for (size_t i = 0; eok && e[i]; i++)
        eok = isalnum((unsigned char)e[i]) || e[i] == '_';
    if (!eok)
        bad_value(L, dr, K_STAGING_ENGINE, "an engine name, like InnoDB");
    return eok;
}

static bool delayed_staging(loader *L, const draft *dr, mr_delayed_def *d)
{
    bool ok = name_value(L, dr, K_STAGING_TABLE, &d->staging_table);
    const char *e = dr->val[K_STAGING_ENGINE] ? dr->val[K_STAGING_ENGINE] : "InnoDB";
    ok &= staging_engine_ok(L, dr);
    if (ok && !d->staging_table) {
        char name[80];
        snprintf(name, sizeof name, "%s_delayed", d->table);
        if (strlen(name) > 64) {
            mr_diag_error(L->d, L->file, dr->vline[K_TABLE], "[delayed %s]: %s is longer than "
                          "64 characters; give staging_table", dr->name, name);
            return false;
        }
        d->staging_table = dup_str(L, name);
    }
    d->staging_engine = ok ? dup_str(L, e) : NULL;
    return ok && d->staging_table && d->staging_engine;
}

/* missing = ignore | insert; mode = staged | memory. */
static bool delayed_modes(loader *L, const draft *dr, mr_delayed_def *d)
{
    bool ok = true;
    const char *m = dr->val[K_MISSING];
    d->missing = MR_DELAYED_MISSING_IGNORE;
    if (m && strcasecmp(m, "insert") == 0) {
        d->missing = MR_DELAYED_MISSING_INSERT;
    } else if (m && strcasecmp(m, "ignore") != 0) {
        bad_value(L, dr, K_MISSING, "ignore or insert");
        ok = false;
    }
    const char *mode = dr->val[K_MODE];
    d->mode = MR_DELAYED_STAGED;
    if (mode && strcasecmp(mode, "memory") == 0) {
        d->mode = MR_DELAYED_MEMORY;
    } else if (mode && strcasecmp(mode, "staged") != 0) {
        bad_value(L, dr, K_MODE, "staged or memory");
        ok = false;
    }
    if (dr->val[K_MEMORY_MAX_KEYS] && d->mode != MR_DELAYED_MEMORY) {
        mr_diag_error(L->d, L->file, dr->vline[K_MEMORY_MAX_KEYS], "[delayed %s]: "
                      "memory_max_keys needs mode = memory", dr->name);
        ok = false;
    }
    ok &= parse_count(L, dr, K_MEMORY_MAX_KEYS, 1000000, 100000000, &d->memory_max_keys);
    if (dr->val[K_FLUSH_EARLY])
        ok &= parse_count(L, dr, K_FLUSH_EARLY, 0, 100000000, &d->flush_early);
    if (ok && d->flush_early && d->mode == MR_DELAYED_STAGED &&
        !(d->staged_rows = calloc(1, sizeof *d->staged_rows))) {
        oom(L);
        ok = false;
    }
    return ok;
}

/* bucket_column = col and bucket = day | hour (default day): col is a key
 * column the statements do not give; the proxy fills it. It needs `key`
 * (a primary key read from the schema would hold it) and no other role. */
static bool delayed_bucket(loader *L, const draft *dr, mr_delayed_def *d)
{
    const char *b = dr->val[K_BUCKET];
    if (!dr->val[K_BUCKET_COLUMN]) {
        if (!b)
            return true;
        mr_diag_error(L->d, L->file, dr->vline[K_BUCKET], "[delayed %s]: bucket needs "
                      "bucket_column", dr->name);
        return false;
    }
    d->bucket = MR_BUCKET_DAY;
    if (b && strcasecmp(b, "hour") == 0) {
        d->bucket = MR_BUCKET_HOUR;
    } else if (b && strcasecmp(b, "day") != 0) {
        bad_value(L, dr, K_BUCKET, "day or hour");
        return false;
    }
    if (!name_value(L, dr, K_BUCKET_COLUMN, &d->bucket_column) || !d->bucket_column)
        return false;
    if (!d->nkeys) {
        mr_diag_error(L->d, L->file, dr->vline[K_BUCKET_COLUMN], "[delayed %s]: bucket_column "
                      "needs key (the key columns the statements give)", dr->name);
        return false;
    }
    char *const *lists[] = {d->keys, d->columns, d->set_columns};
    size_t counts[] = {d->nkeys, d->ncolumns, d->nset_columns};
    for (size_t l = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++)
            if (strcasecmp(lists[l][i], d->bucket_column) == 0) {
                mr_diag_error(L->d, L->file, dr->vline[K_BUCKET_COLUMN], "[delayed %s]: %s is "
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
        mr_diag_error(L->d, L->file, dr->vline[K_SET_COLUMNS], "[delayed %s]: at most 64 "
                      "set_columns in mode = staged", dr->name);
        return false;
    }
    for (size_t i = 0; i < d->nset_columns; i++)
        if (strlen(d->set_columns[i]) > 60) {
            mr_diag_error(L->d, L->file, dr->vline[K_SET_COLUMNS], "[delayed %s]: %s: a "
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
                mr_diag_error(L->d, L->file, dr->vline[K_COLUMNS], "[delayed %s]: %s is both a "
                              "key column and a counter column", dr->name, d->columns[i]);
                return false;
            }
    for (size_t i = 0; i < d->nset_columns; i++)
        for (size_t j = 0; j < d->nkeys; j++)
            if (strcasecmp(d->set_columns[i], d->keys[j]) == 0) {
                mr_diag_error(L->d, L->file, dr->vline[K_SET_COLUMNS], "[delayed %s]: %s is both "
                              "a key column and in set_columns", dr->name, d->set_columns[i]);
                return false;
            }
    if (d->mode == MR_DELAYED_STAGED && !staged_set_columns_ok(L, dr, d))
        return false;
    if (strcmp(d->staging_table, d->table) == 0) {
        mr_diag_error(L->d, L->file, dr->vline[K_STAGING_TABLE], "[delayed %s]: staging_table "
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
    if (dr->val[K_FLUSH_INTERVAL] &&
        !parse_duration_value(dr->val[K_FLUSH_INTERVAL], &d->flush_interval_ms)) {
        bad_value(L, dr, K_FLUSH_INTERVAL, "a duration above zero, like 500ms, 1s or 1m");
        ok = false;
    }
    return parse_count(L, dr, K_FLUSH_ROWS, 10000, 1000000, &d->flush_rows) && ok;
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
        key_id k;
        const char *why;
    } no[] = {
        {K_KEY, "the key is the table's primary key"},
        {K_COLUMNS, "the counter columns are the table's integer and DECIMAL columns"},
        {K_SET_COLUMNS, "derived rules have no set_columns"},
        {K_BUCKET_COLUMN, "derived rules have no bucket"},
        {K_BUCKET, "derived rules have no bucket"},
        {K_MEMORY_MAX_KEYS, "a default rule is staged only"},
    };
    bool ok = true;
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (dr->val[no[i].k]) {
            mr_diag_error(L->d, L->file, dr->vline[no[i].k], "[delayed %s]: a default rule "
                          "(table = %s) may not give %s: the table's rule is derived from the "
                          "schema (%s)", dr->name, dr->val[K_TABLE], key_names[no[i].k],
                          no[i].why);
            ok = false;
        }
    const char *m = dr->val[K_MODE], *miss = dr->val[K_MISSING];
    if (m && strcasecmp(m, "memory") == 0) {
        mr_diag_error(L->d, L->file, dr->vline[K_MODE], "[delayed %s]: a default rule is staged "
                      "only (mode = memory needs its columns written in the rule)",
                      dr->name);
        ok = false;
    }
    if (miss && strcasecmp(miss, "insert") == 0) {
        mr_diag_error(L->d, L->file, dr->vline[K_MISSING], "[delayed %s]: a default rule may not "
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
    const char *v = dr->val[K_TABLE];
    size_t n = strlen(v) > 1 ? strlen(v) - 2 : 0;
    if ((strlen(v) > 1 && (n == 0 || n > 64)) || strchr(v, '`') || memchr(v, '.', n) ||
        memchr(v, '*', n)) {
        bad_value(L, dr, K_TABLE, "schema.* or * for a default rule");
        return false;
    }
    if (dr->val[K_SCHEMA] && (n != strlen(dr->val[K_SCHEMA]) ||
                              strncmp(dr->val[K_SCHEMA], v, n) != 0)) {
        mr_diag_error(L->d, L->file, dr->vline[K_TABLE], "[delayed %s]: write table = %s.*, "
                      "not the schema key, for a default rule of one schema", dr->name,
                      dr->val[K_SCHEMA]);
        return false;
    }
    d->schema = n ? strndup(v, n) : dup_str(L, "*");
    d->table = dup_str(L, "*");
    if (!d->schema)
        oom(L);
    for (size_t i = 0; d->schema && i < L->n; i++) {
        const mr_delayed_def *o = L->rules[i].delayed;
        /* o->schema is NULL on a default rule refused for its table */
        if (L->rules[i].kind == MR_RULE_DELAYED && o && o->derive && o->schema &&
            strcmp(o->schema, d->schema) == 0) {
            mr_diag_error(L->d, L->file, dr->vline[K_TABLE], "[delayed %s]: rule %s (%s:%d) is "
                          "already the default rule for %s; at most one default rule per schema",
                          dr->name, L->rules[i].name, L->rules[i].file, L->rules[i].line,
                          dr->val[K_TABLE]);
            return false;
        }
    }
    return d->schema && d->table;
}

/* staging_table: a pattern holding {table} once (default {table}_delayed). */
static bool default_staging(loader *L, const draft *dr, mr_delayed_def *d)
{
    const char *v = dr->val[K_STAGING_TABLE] ? dr->val[K_STAGING_TABLE] : "{table}_delayed";
    const char *at = strstr(v, "{table}");
    if (!at || strstr(at + 1, "{table}") || strlen(v) > 64 || strchr(v, '`') ||
        strchr(v, '.') || strcmp(v, "{table}") == 0) {
        bad_value(L, dr, K_STAGING_TABLE, "a name holding {table} once, like {table}_delayed");
        return false;
    }
    d->staging_table = dup_str(L, v);
    return d->staging_table != NULL;
}

static bool finish_delayed_default(loader *L, const draft *dr, mr_rule *r, mr_delayed_def *d)
{
    d->derive = true;
    bool ok = default_keys_absent(L, dr) && delayed_modes(L, dr, d) && default_schema(L, dr, d);
    ok = ok && default_staging(L, dr, d) && staging_engine_ok(L, dr);
    if (ok)
        ok = (d->staging_engine = dup_str(L, dr->val[K_STAGING_ENGINE] ? dr->val[K_STAGING_ENGINE]
                                                                       : "InnoDB")) != NULL;
    if (!ok)
        return false;
    char text[200];
    snprintf(text, sizeof text, "delayed default %s.* -> %s, derived from the schema at run time",
             d->schema, d->staging_table);
    r->pattern = dup_str(L, text);
    return r->pattern != NULL;
}

static bool finish_delayed(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    mr_delayed_def *d = calloc(1, sizeof *d);
    if (!d) {
        oom(L);
        return false;
    }
    r->delayed = d;
    im->how = HOW_DELAYED;
    bool ok = need(L, dr, K_TABLE, "delayed rules need the table whose counters are delayed");
    if (ok && is_default_table(dr->val[K_TABLE])) {
        ok = delayed_flush_settings(L, dr, d);
        return finish_delayed_default(L, dr, r, d) && ok;
    }
    ok &= need(L, dr, K_COLUMNS, "delayed rules need columns, the counter columns UPDATE "
               "DELAYED may add to");
    ok &= delayed_flush_settings(L, dr, d);
    ok &= delayed_modes(L, dr, d);
    ok = ok && table_value(L, dr, &d->schema, &d->table);
    /* without key: the table's primary key, from the schema cache (workers) and,
     * staged, information_schema (the flusher); a memory table learns it from
     * the workers (delayed/mem_keys.h) */
    ok = ok && (!dr->val[K_KEY] || name_list(L, dr, K_KEY, &d->keys, &d->nkeys));
    ok = ok && name_list(L, dr, K_COLUMNS, &d->columns, &d->ncolumns);
    if (ok && dr->val[K_SET_COLUMNS])
        ok = name_list(L, dr, K_SET_COLUMNS, &d->set_columns, &d->nset_columns);
    ok = ok && delayed_staging(L, dr, d) && delayed_consistent(L, dr, d) &&
         delayed_bucket(L, dr, d);
    if (!ok)
        return false;
    char text[160];
    snprintf(text, sizeof text, "delayed %s.%s -> %s", d->schema, d->table, d->staging_table);
    r->pattern = dup_str(L, text);
    return r->pattern != NULL;
}

/* ---- paginate ------------------------------------------------------------------- */

/* table = *, t or schema.t (a bare t is that table in any schema). */
static bool paginate_table(loader *L, const draft *dr, mr_paginate_def *p)
{
    const char *v = dr->val[K_TABLE];
    if (strcmp(v, "*") == 0)
        return true;
    const char *dot = strchr(v, '.');
    const char *t = dot ? dot + 1 : v;
    size_t sn = dot ? (size_t)(dot - v) : 0;
    bool ok = (!dot || (sn > 0 && sn <= 64)) && *t && strlen(t) <= 64 && !strchr(t, '.') &&
              !strchr(v, '`') && !strchr(t, '*');
    if (!ok) {
        bad_value(L, dr, K_TABLE, "*, a table name, or schema.table, unquoted");
        return false;
    }
    p->schema = dot ? strndup(v, sn) : NULL;
    p->table = dup_str(L, t);
    if (dot && !p->schema)
        oom(L);
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
    const char *v = dr->val[K_STRATEGY];
    p->strategy = MR_PAGINATE_DEFERRED_JOIN;
    for (size_t i = 0; v && i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(v, names[i].name) == 0)
            p->strategy = names[i].s;
    if (!v || strcasecmp(v, "deferred_join") == 0 || p->strategy != MR_PAGINATE_DEFERRED_JOIN)
        return true;
    bad_value(L, dr, K_STRATEGY, "deferred_join, keyset or auto");
    return false;
}

/* max_bookmarks and bookmark_ttl: the keyset store's bounds for this rule. */
static bool paginate_bookmarks(loader *L, const draft *dr, mr_paginate_def *p)
{
    bool ok = parse_count(L, dr, K_MAX_BOOKMARKS, 10000, 10000000, &p->max_bookmarks);
    p->bookmark_ttl_ms = 60000;
    if (dr->val[K_BOOKMARK_TTL] &&
        (!parse_duration_value(dr->val[K_BOOKMARK_TTL], &p->bookmark_ttl_ms) ||
         p->bookmark_ttl_ms == 0)) {
        bad_value(L, dr, K_BOOKMARK_TTL, "a duration above zero, like 30s, 5m or 1h");
        ok = false;
    }
    return ok;
}

/* max_offset = 0 (no limit) or a whole number. */
static bool paginate_max_offset(loader *L, const draft *dr, mr_paginate_def *p)
{
    const char *v = dr->val[K_MAX_OFFSET];
    p->max_offset = 0;
    if (!v || strcmp(v, "0") == 0)
        return true;
    return parse_count(L, dr, K_MAX_OFFSET, 0, UINT64_MAX / 10, &p->max_offset);
}

static bool finish_paginate(loader *L, const draft *dr, mr_rule *r, rule_impl *im)
{
    mr_paginate_def *p = calloc(1, sizeof *p);
    if (!p) {
        oom(L);
        return false;
    }
    r->paginate = p;
    r->err_code = MR_PAGINATE_ERR_CODE;
    memcpy(r->sqlstate, MR_PAGINATE_SQLSTATE, sizeof r->sqlstate);
    im->how = HOW_PAGINATE;
    bool ok = need(L, dr, K_TABLE, "paginate rules need the table (or *) whose pages they take");
    ok &= parse_count(L, dr, K_THRESHOLD, 1000, UINT64_MAX / 10, &p->threshold);
    ok &= paginate_strategy(L, dr, p);
    ok &= paginate_max_offset(L, dr, p);
    ok &= paginate_bookmarks(L, dr, p);
    ok = ok && paginate_table(L, dr, p);
    /* without key: the table's primary (or unique NOT NULL) key from the schema cache */
    ok = ok && (!dr->val[K_KEY] || name_list(L, dr, K_KEY, &p->keys, &p->nkeys));
    if (!ok)
        return false;
    if (dr->val[K_MESSAGE] && !(r->message = dup_str(L, dr->val[K_MESSAGE])))
        return false;
    char text[200];
    static const char *const strategy[] = {"deferred_join", "keyset", "auto"};
    snprintf(text, sizeof text, "paginate %s%s%s from offset %llu, %s%s%s", p->schema ?
             p->schema : "", p->schema ? "." : "", p->table ? p->table : "*",
             (unsigned long long)p->threshold, strategy[p->strategy],
             p->max_offset ? ", max_offset set" : "", p->nkeys ? "" : ", key from the schema");
    r->pattern = dup_str(L, text);
    return r->pattern != NULL;
}

/* ---- sections ------------------------------------------------------------------ */

static void finish_draft(loader *L)
{
    if (!L->have_cur)
        return;
    draft *dr = &L->cur;
    mr_rule r = {.line = dr->line, .kind = dr->kind, .err_code = 1148, .sqlstate = "42000"};
    rule_impl im = {.how = HOW_DIGEST, .next = NO_RULE};
    r.name = dr->name; /* shared with the draft until the draft is cleared */
    r.file = dup_str(L, L->file);
    if (r.file) {
        parse_common(L, dr, &r);
        kinds[dr->kind].finish(L, dr, &r, &im);
    }
    dr->name = NULL;
    if (!r.file || !push_rule(L, &r, &im)) {
        oom(L);
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

static int find_kind(const char *w, size_t n)
{
    for (int k = 0; k < MR_RULE_KIND_MAX; k++)
        if (strlen(rules_kind_names[k]) == n && strncmp(rules_kind_names[k], w, n) == 0)
            return k;
    return -1;
}

/* "[kind name]": checks both parts; false leaves the section's keys unread. */
static bool parse_header(loader *L, const char *sec, int line, int *kind, const char **name)
{
    size_t kn = strcspn(sec, " \t");
    const char *nm = sec + kn + strspn(sec + kn, " \t");
    *kind = find_kind(sec, kn);
    *name = nm;
    if (*kind < 0) {
        mr_diag_error(L->d, L->file, line, "unknown rule kind '%.*s' in [%s]; known kinds: "
                    "rewrite, regex, block, queue, delayed, paginate", (int)kn, sec, sec);
        return false;
    }
    if (!*nm || !valid_name(nm)) {
        mr_diag_error(L->d, L->file, line, "[%s] needs one rule name after the kind, made of "
                    "letters, digits, _ - and . (like [%s no_star_orders])", sec,
                    rules_kind_names[*kind]);
        return false;
    }
    uint32_t prev = names_find(L, nm);
    if (prev != NO_RULE) {
        const mr_rule *p = &L->rules[prev];
        mr_diag_error(L->d, L->file, line, "rule name '%s' is already used by [%s %s] at %s:%d; "
                    "names must be unique across all rule files", nm,
                    rules_kind_names[p->kind], p->name, p->file, p->line);
        return false;
    }
    return true;
}

static int on_section(void *ctx, const char *sec, int line)
{
    loader *L = ctx;
    finish_draft(L);
    int kind;
    const char *name;
    L->skip_keys = !parse_header(L, sec, line, &kind, &name);
    if (L->skip_keys)
        return 0;
    L->cur.kind = (mr_rule_type)kind;
    L->cur.line = line;
    L->cur.name = dup_str(L, name);
    L->have_cur = L->cur.name != NULL;
    return 0;
}

static void unknown_key(loader *L, const char *key, int line)
{
    const draft *dr = &L->cur;
    const kind_def *kd = &kinds[dr->kind];
    char list[512];
    size_t o = 0;
    for (size_t i = 0; i < kd->nkeys && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "",
                              key_names[kd->keys[i]]);
    mr_diag_error(L->d, L->file, line, "unknown key '%s' in [%s %s]; %s rules take: %s", key,
                rules_kind_names[dr->kind], dr->name, rules_kind_names[dr->kind], list);
}

static int on_pair(void *ctx, const char *section, const char *key, const char *value, int line)
{
    loader *L = ctx;
    if (L->skip_keys || !L->have_cur)
        return 0;
    draft *dr = &L->cur;
    const kind_def *kd = &kinds[dr->kind];
    for (size_t i = 0; i < kd->nkeys; i++) {
        key_id k = kd->keys[i];
        if (strcmp(key_names[k], key) != 0)
            continue;
        if (dr->val[k]) {
            mr_diag_error(L->d, L->file, line, "%s given twice in [%s %s] (first at line %d)", key,
                        rules_kind_names[dr->kind], dr->name, dr->vline[k]);
            return 0;
        }
        dr->val[k] = dup_str(L, value);
        dr->vline[k] = line;
        return 0;
    }
    unknown_key(L, key, line);
    (void)section;
    return 0;
}

static void on_error(void *ctx, int line, const char *msg)
{
    loader *L = ctx;
    mr_diag_error(L->d, L->file, line, "%s", msg);
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

rules_loader *rules_loader_new(mr_diag *d)
{
    loader *L = calloc(1, sizeof *L);
    if (!L) {
        mr_diag_error(d, "rules", 0, "out of memory while loading rules");
        return NULL;
    }
    L->d = d;
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
