/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/load_keys.c - the value readers every kind shares (rules/kind.h):
 * yes/no, whole numbers, durations, names, name lists and `table = s.t`, each
 * reporting a bad value as `key = 'value' in [kind name]: expected ...`.
 *
 * Pure, any thread (in practice the main thread, while rules load).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/base/duration.h"
#include "myrewrite/rules/kind.h"

typedef mr_rule_draft draft;
typedef mr_rule_loader loader;

void mr_rule_names_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

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

bool mr_rule_need(loader *L, const draft *dr, const char *k, const char *what)
{
    if (mr_rule_val(dr, k) && mr_rule_val(dr, k)[0])
        return true;
    mr_rule_error(L, mr_rule_val(dr, k) ? mr_rule_line(dr, k) : dr->line, "[%s %s] has %s %s; %s",
                  dr->kind->name, dr->name, mr_rule_val(dr, k) ? "an empty" : "no", k, what);
    return false;
}

/* A duration above zero (base/duration.h: the grammar settings use too). */
bool mr_rule_duration(const char *v, uint64_t *ms) { return mr_parse_duration(v, ms) && *ms > 0; }

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
        mr_rule_error(L, mr_rule_line(dr, "table"),
                      "[%s %s] needs the table's schema, "
                      "which the proxy's own connection has no default for: write table = "
                      "shop.%s, or schema = shop",
                      dr->kind->name, dr->name, v);
        return false;
    }
    if (dot && sch && (strlen(sch) != sn || strncmp(sch, v, sn) != 0)) {
        mr_rule_error(L, mr_rule_line(dr, "table"),
                      "[%s %s]: table %s is not in schema "
                      "%s given by the schema key",
                      dr->kind->name, dr->name, v, sch);
        return false;
    }
    *schema = dot ? strndup(v, sn) : mr_rule_strdup(L, sch);
    *table = mr_rule_strdup(L, dot ? dot + 1 : v);
    if (!*schema)
        mr_rule_oom(L);
    return *schema && *table;
}

static bool name_ok(const char *v, size_t n) { return n > 0 && n <= 64 && !memchr(v, '`', n); }

/* A comma list of column names, each once (compared as mysqld does: any case). */
bool mr_rule_names(loader *L, const draft *dr, const char *k, char ***out, size_t *n)
{
    const char *v = mr_rule_val(dr, k);
    char **list = calloc(MR_RULE_MAX_NAMES, sizeof *list);
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
        if (!name_ok(v, len) || dup || *n == MR_RULE_MAX_NAMES) {
            mr_rule_bad_value(L, dr, k,
                              "a comma list of up to 16 different column names, unquoted");
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
