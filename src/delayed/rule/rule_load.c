/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/rule/rule_load.c - [delayed NAME] sections to delayed rules: checks
 * every key of the section (rules/README.md, "delayed"), for a table's rule
 * and for a default rule (`table = s.*`), and fills the rule's
 * mr_delayed_def (delayed/rule.h).
 *
 * Pure, any thread (in practice the main thread, while rules load).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/base/duration.h"
#include "myrewrite/delayed/rule.h"

typedef mr_rule_draft draft;
typedef mr_rule_loader loader;

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

/* staging_table (default <table>_delayed) and staging_engine (default InnoDB). */
static bool staging_engine_ok(loader *L, const draft *dr)
{
    const char *e =
        mr_rule_val(dr, "staging_engine") ? mr_rule_val(dr, "staging_engine") : "InnoDB";
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
    const char *e =
        mr_rule_val(dr, "staging_engine") ? mr_rule_val(dr, "staging_engine") : "InnoDB";
    ok &= staging_engine_ok(L, dr);
    if (ok && !d->staging_table) {
        char name[80];
        snprintf(name, sizeof name, "%s_delayed", d->table);
        if (strlen(name) > 64) {
            mr_rule_error(L, mr_rule_line(dr, "table"),
                          "[delayed %s]: %s is longer than "
                          "64 characters; give staging_table",
                          dr->name, name);
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
        mr_rule_error(L, mr_rule_line(dr, "memory_max_keys"),
                      "[delayed %s]: "
                      "memory_max_keys needs mode = memory",
                      dr->name);
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
        mr_rule_error(L, mr_rule_line(dr, "bucket"),
                      "[delayed %s]: bucket needs "
                      "bucket_column",
                      dr->name);
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
        mr_rule_error(L, mr_rule_line(dr, "bucket_column"),
                      "[delayed %s]: bucket_column "
                      "needs key (the key columns the statements give)",
                      dr->name);
        return false;
    }
    char *const *lists[] = {d->keys, d->columns, d->set_columns};
    size_t counts[] = {d->nkeys, d->ncolumns, d->nset_columns};
    for (size_t l = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++)
            if (strcasecmp(lists[l][i], d->bucket_column) == 0) {
                mr_rule_error(L, mr_rule_line(dr, "bucket_column"),
                              "[delayed %s]: %s is "
                              "the bucket column, so it may not be in key, columns or "
                              "set_columns",
                              dr->name, d->bucket_column);
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
        mr_rule_error(L, mr_rule_line(dr, "set_columns"),
                      "[delayed %s]: at most 64 "
                      "set_columns in mode = staged",
                      dr->name);
        return false;
    }
    for (size_t i = 0; i < d->nset_columns; i++)
        if (strlen(d->set_columns[i]) > 60) {
            mr_rule_error(L, mr_rule_line(dr, "set_columns"),
                          "[delayed %s]: %s: a "
                          "set_columns name may have at most 60 characters in mode = staged "
                          "(the staging table adds _set)",
                          dr->name, d->set_columns[i]);
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
                mr_rule_error(L, mr_rule_line(dr, "columns"),
                              "[delayed %s]: %s is both a "
                              "key column and a counter column",
                              dr->name, d->columns[i]);
                return false;
            }
    for (size_t i = 0; i < d->nset_columns; i++)
        for (size_t j = 0; j < d->nkeys; j++)
            if (strcasecmp(d->set_columns[i], d->keys[j]) == 0) {
                mr_rule_error(L, mr_rule_line(dr, "set_columns"),
                              "[delayed %s]: %s is both "
                              "a key column and in set_columns",
                              dr->name, d->set_columns[i]);
                return false;
            }
    if (d->mode == MR_DELAYED_STAGED && !staged_set_columns_ok(L, dr, d))
        return false;
    if (strcmp(d->staging_table, d->table) == 0) {
        mr_rule_error(L, mr_rule_line(dr, "staging_table"),
                      "[delayed %s]: staging_table "
                      "must not be the table itself",
                      dr->name);
        return false;
    }
    return true;
}

/* group_commit (default no: the staging row is then written by the proxy's
 * account, not the client's, which a DBA opts into) and its bounds: a
 * batch waits at most group_commit_wait (default 200us, 0 to 1s) for
 * more, holds at most group_commit_rows staging rows (default 1000)
 * and group_commit_bytes of VALUES (default 1 MiB, 1 KiB to 64 MiB: below
 * max_allowed_packet), and is cut when it has not committed within
 * group_commit_timeout (default 10s, 10ms to 1h). Staged mode only. */
static bool delayed_group_settings(loader *L, const draft *dr, mr_delayed_def *d)
{
    bool ok = mr_rule_bool(L, dr, "group_commit", false, &d->group_commit);
    const char *wait = mr_rule_val(dr, "group_commit_wait");
    d->group_wait_us = 200;
    if (wait && (!mr_parse_duration_us(wait, &d->group_wait_us) || d->group_wait_us > 1000000)) {
        mr_rule_bad_value(L, dr, "group_commit_wait", "a duration from 0 to 1s, like 200us or 1ms");
        ok = false;
    }
    const char *limit = mr_rule_val(dr, "group_commit_timeout");
    d->group_timeout_ms = 10000;
    if (limit && (!mr_parse_duration(limit, &d->group_timeout_ms) || d->group_timeout_ms < 10 ||
                  d->group_timeout_ms > 3600000)) {
        mr_rule_bad_value(L, dr, "group_commit_timeout",
                          "a duration from 10ms to 1h, like 10s or 500ms");
        ok = false;
    }
    ok &= mr_rule_count(L, dr, "group_commit_rows", 1000, 100000, &d->group_rows);
    ok &= mr_rule_count(L, dr, "group_commit_bytes", 1u << 20, 64u << 20, &d->group_bytes);
    if (ok && d->group_bytes < 1024) {
        mr_rule_bad_value(L, dr, "group_commit_bytes", "a whole number from 1024 to 67108864");
        ok = false;
    }
    if (ok && d->group_commit && d->mode == MR_DELAYED_MEMORY) {
        mr_rule_error(L, mr_rule_line(dr, "group_commit"),
                      "[delayed %s]: group_commit is for "
                      "mode = staged (memory mode answers at once, without a commit)",
                      dr->name);
        ok = false;
    }
    return ok;
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
        {"read_pending", "point reads are rewritten for a table's own rule, whose key and "
                         "counters are written in it"},
    };
    bool ok = true;
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (mr_rule_val(dr, no[i].k)) {
            mr_rule_error(L, mr_rule_line(dr, no[i].k),
                          "[delayed %s]: a default rule "
                          "(table = %s) may not give %s: the table's rule is derived from the "
                          "schema (%s)",
                          dr->name, mr_rule_val(dr, "table"), no[i].k, no[i].why);
            ok = false;
        }
    const char *m = mr_rule_val(dr, "mode"), *miss = mr_rule_val(dr, "missing");
    if (m && strcasecmp(m, "memory") == 0) {
        mr_rule_error(L, mr_rule_line(dr, "mode"),
                      "[delayed %s]: a default rule is staged "
                      "only (mode = memory needs its columns written in the rule)",
                      dr->name);
        ok = false;
    }
    if (miss && strcasecmp(miss, "insert") == 0) {
        mr_rule_error(L, mr_rule_line(dr, "missing"),
                      "[delayed %s]: a default rule may not "
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
    if (mr_rule_val(dr, "schema") &&
        (n != strlen(mr_rule_val(dr, "schema")) || strncmp(mr_rule_val(dr, "schema"), v, n) != 0)) {
        mr_rule_error(L, mr_rule_line(dr, "table"),
                      "[delayed %s]: write table = %s.*, "
                      "not the schema key, for a default rule of one schema",
                      dr->name, mr_rule_val(dr, "schema"));
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
            mr_rule_error(L, mr_rule_line(dr, "table"),
                          "[delayed %s]: rule %s (%s:%d) is "
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
    const char *v =
        mr_rule_val(dr, "staging_table") ? mr_rule_val(dr, "staging_table") : "{table}_delayed";
    const char *at = strstr(v, "{table}");
    if (!at || strstr(at + 1, "{table}") || strlen(v) > 64 || strchr(v, '`') || strchr(v, '.') ||
        strcmp(v, "{table}") == 0) {
        mr_rule_bad_value(L, dr, "staging_table",
                          "a name holding {table} once, like {table}_delayed");
        return false;
    }
    d->staging_table = mr_rule_strdup(L, v);
    return d->staging_table != NULL;
}

static bool finish_delayed_default(loader *L, const draft *dr, mr_rule *r, mr_delayed_def *d)
{
    d->derive = true;
    bool ok = default_keys_absent(L, dr) && delayed_modes(L, dr, d) &&
              delayed_group_settings(L, dr, d) && default_schema(L, dr, d);
    ok = ok && default_staging(L, dr, d) && staging_engine_ok(L, dr);
    if (ok)
        ok = (d->staging_engine = mr_rule_strdup(L, mr_rule_val(dr, "staging_engine")
                                                        ? mr_rule_val(dr, "staging_engine")
                                                        : "InnoDB")) != NULL;
    if (!ok)
        return false;
    char text[200];
    snprintf(text, sizeof text, "delayed default %s.* -> %s, derived from the schema at run time",
             d->schema, d->staging_table);
    r->pattern = mr_rule_strdup(L, text);
    return r->pattern != NULL;
}

bool mr_delayed_rule_parse(loader *L, const draft *dr, mr_rule *r, struct rule_impl *im)
{
    (void)im;
    mr_delayed_def *d = calloc(1, sizeof *d);
    if (!d) {
        mr_rule_oom(L);
        return false;
    }
    r->delayed = d;
    bool ok =
        mr_rule_need(L, dr, "table", "delayed rules need the table whose counters are delayed");
    if (ok && is_default_table(mr_rule_val(dr, "table"))) {
        ok = delayed_flush_settings(L, dr, d);
        return finish_delayed_default(L, dr, r, d) && ok;
    }
    ok &= mr_rule_need(L, dr, "columns",
                       "delayed rules need columns, the counter columns UPDATE "
                       "DELAYED may add to");
    ok &= delayed_flush_settings(L, dr, d);
    ok &= delayed_modes(L, dr, d);
    ok = ok && delayed_group_settings(L, dr, d);
    ok = ok && mr_rule_bool(L, dr, "read_pending", false, &d->read_pending);
    ok = ok && mr_rule_table(L, dr, &d->schema, &d->table);
    /* without key: the table's primary key, from the schema cache (workers) and,
     * staged, information_schema (the flusher); a memory table learns it from
     * the workers (delayed/mem_keys.h) */
    ok = ok && (!mr_rule_val(dr, "key") || mr_rule_names(L, dr, "key", &d->keys, &d->nkeys));
    ok = ok && mr_rule_names(L, dr, "columns", &d->columns, &d->ncolumns);
    if (ok && mr_rule_val(dr, "set_columns"))
        ok = mr_rule_names(L, dr, "set_columns", &d->set_columns, &d->nset_columns);
    ok =
        ok && delayed_staging(L, dr, d) && delayed_consistent(L, dr, d) && delayed_bucket(L, dr, d);
    if (!ok)
        return false;
    char text[160];
    snprintf(text, sizeof text, "delayed %s.%s -> %s", d->schema, d->table, d->staging_table);
    r->pattern = mr_rule_strdup(L, text);
    return r->pattern != NULL;
}
