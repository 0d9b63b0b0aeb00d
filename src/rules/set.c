/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/set.c - the life of a rule set: reading the rules directory in
 * file-name order, assembling the set with its lookup tables and per-shard
 * hit counters, the accessors, and freeing.
 *
 * Pure, any thread. Owns the rule set; once built it is immutable except
 * for the counters, each shard of which one worker writes.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rules/rules_impl.h"

/* Counters by shard, each shard starting on its own cache line so that
 * two workers never write the same line. */
static bool alloc_counters(mr_ruleset *rs)
{
    const size_t per_line = 64 / sizeof(mr_counter);
    rs->stride = (rs->n + per_line - 1) / per_line * per_line;
    if (rs->stride == 0)
        rs->stride = per_line;
    size_t bytes = rs->shards * rs->stride * sizeof(mr_counter);
    rs->hits = aligned_alloc(64, bytes);
    rs->last = aligned_alloc(64, bytes);
    if (!rs->hits || !rs->last)
        return false;
    memset(rs->hits, 0, bytes);
    memset(rs->last, 0, bytes);
    return true;
}

/* The kinds that take statements over before any rule are looked up once
 * here, not on every statement. */
static mr_ruleset *new_set(const mr_rule_kinds *kinds, unsigned shards)
{
    mr_ruleset *rs = calloc(1, sizeof *rs);
    if (!rs)
        return NULL;
    rs->shards = shards ? shards : 1;
    rs->kinds = kinds;
    size_t n = 0;
    for (size_t k = 0; kinds && kinds[k] && n < MR_RULE_KIND_MAX; k++)
        if (kinds[k]->take)
            rs->takers[n++] = kinds[k];
    return rs;
}

/* The loader's rules as a rule set, or NULL after any error. */
static mr_ruleset *finish_set(rules_loader *L, const mr_rule_kinds *kinds, unsigned shards,
                              mr_diag *d)
{
    mr_rule *rules;
    rule_impl *impl;
    size_t n;
    if (!rules_loader_take(L, &rules, &impl, &n))
        return NULL;
    mr_ruleset *rs = new_set(kinds, shards);
    if (!rs) {
        rules_free_rules(rules, impl, n);
        mr_diag_error(d, "rules", 0, "out of memory while loading rules");
        return NULL;
    }
    rs->rules = rules;
    rs->impl = impl;
    rs->n = n;
    if (!alloc_counters(rs) || !rules_build_tables(rs)) {
        mr_diag_error(d, "rules", 0, "out of memory while loading rules");
        mr_ruleset_free(rs);
        return NULL;
    }
    return rs;
}

mr_ruleset *mr_rules_empty(const mr_rule_kinds *kinds, unsigned shards)
{
    mr_ruleset *rs = new_set(kinds, shards);
    if (rs && !alloc_counters(rs)) {
        mr_ruleset_free(rs);
        return NULL;
    }
    return rs;
}

mr_ruleset *mr_rules_load_string(const char *text, const char *name, const mr_rule_kinds *kinds,
                                 unsigned shards, mr_diag *d)
{
    mr_diag quiet = {NULL, 0};
    d = d ? d : &quiet;
    rules_loader *L = rules_loader_new(d, kinds);
    if (!L)
        return NULL;
    rules_loader_add(L, name, text, strlen(text));
    return finish_set(L, kinds, shards, d);
}

static bool read_file(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    bool ok = buf && !ferror(f);
    fclose(f);
    if (!ok) {
        free(buf);
        return false;
    }
    *text = buf;
    *len = n;
    return true;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.rules names in dir, sorted; hidden files (editor leftovers) skipped. */
static char **list_rules(const char *dir, size_t *count)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return NULL;
    char **v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    bool ok = true;
    while (ok && (e = readdir(dp)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len <= 6 || strcmp(e->d_name + len - 6, ".rules") != 0)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nv = realloc(v, cap * sizeof *nv);
            ok = nv != NULL;
            v = nv ? nv : v;
        }
        if (ok && (v[n] = strdup(e->d_name)) != NULL)
            n++;
        else
            ok = false;
    }
    closedir(dp);
    if (!ok) {
        for (size_t i = 0; i < n; i++)
            free(v[i]);
        free(v);
        errno = ENOMEM;
        return NULL;
    }
    if (n)
        qsort(v, n, sizeof *v, cmp_names);
    *count = n;
    return v ? v : calloc(1, sizeof *v);
}

static void load_one(rules_loader *L, mr_diag *d, const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    bool slash = dl > 0 && dir[dl - 1] == '/';
    size_t plen = dl + 1 + strlen(name) + 1;
    char *path = malloc(plen);
    if (!path) {
        mr_diag_error(d, name, 0, "out of memory while loading rules");
        return;
    }
    snprintf(path, plen, "%s%s%s", dir, slash ? "" : "/", name);
    char *text;
    size_t len;
    if (read_file(path, &text, &len)) {
        rules_loader_add(L, path, text, len);
        free(text);
    } else {
        mr_diag_error(d, path, 0, "cannot read rule file: %s", strerror(errno));
    }
    free(path);
}

mr_ruleset *mr_rules_load_dir(const char *dir, const mr_rule_kinds *kinds, unsigned shards,
                              mr_diag *d)
{
    mr_diag quiet = {NULL, 0};
    d = d ? d : &quiet;
    size_t count = 0;
    char **names = list_rules(dir, &count);
    if (!names) {
        mr_diag_error(d, dir, 0, "cannot open the rules directory: %s", strerror(errno));
        return NULL;
    }
    rules_loader *L = rules_loader_new(d, kinds);
    for (size_t i = 0; i < count; i++) {
        if (L)
            load_one(L, d, dir, names[i]);
        free(names[i]);
    }
    free(names);
    return L ? finish_set(L, kinds, shards, d) : NULL;
}

void mr_ruleset_free(mr_ruleset *rs)
{
    if (!rs)
        return;
    rules_free_rules(rs->rules, rs->impl, rs->n);
    free(rs->hits);
    free(rs->last);
    free(rs->dtab);
    free(rs->wtab);
    free(rs->always);
    free(rs);
}

const mr_rule_kinds *mr_ruleset_kinds(const mr_ruleset *rs) { return rs ? rs->kinds : NULL; }

bool mr_ruleset_has_type(const mr_ruleset *rs, mr_rule_type t)
{
    return rs && (rs->types >> t) & 1;
}

bool mr_ruleset_has_queue(const mr_ruleset *rs) { return mr_ruleset_has_type(rs, MR_RULE_QUEUE); }

bool mr_ruleset_has_delayed(const mr_ruleset *rs)
{
    return mr_ruleset_has_type(rs, MR_RULE_DELAYED);
}

size_t mr_ruleset_count(const mr_ruleset *rs) { return rs ? rs->n : 0; }

const mr_rule *mr_ruleset_rule(const mr_ruleset *rs, size_t i)
{
    return rs && i < rs->n ? &rs->rules[i] : NULL;
}

uint64_t mr_ruleset_hits(const mr_ruleset *rs, size_t i)
{
    uint64_t sum = 0;
    if (!rs || i >= rs->n)
        return 0;
    for (unsigned s = 0; s < rs->shards; s++)
        sum += mr_stat_get(&rs->hits[s * rs->stride + i]);
    return sum;
}

uint64_t mr_ruleset_last_hit(const mr_ruleset *rs, size_t i)
{
    uint64_t latest = 0;
    if (!rs || i >= rs->n)
        return 0;
    for (unsigned s = 0; s < rs->shards; s++) {
        uint64_t t = mr_stat_get(&rs->last[s * rs->stride + i]);
        if (t > latest)
            latest = t;
    }
    return latest;
}
