/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/load.c - the text of rule files to rules: reads the INI sections,
 * finds each header's kind in the table it was given (rules/kind.h), keeps
 * the keys that kind takes, reads the keys every kind takes, and hands the
 * section to the kind's parse. Every problem in every file is reported, as
 * file:line: what is wrong and what is accepted.
 *
 * Pure, any thread (in practice the main thread, at start and on reload).
 * Owns the rules being read until rules_loader_take hands them over.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/base/ini.h"
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
    bool skip_keys;  /* the section header was bad: its keys are not checked */
    uint32_t *names; /* open-addressing set of rule indexes, by name */
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

mr_diag *rules_loader_diag(loader *L) { return L->d; }

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

static uint64_t name_hash(const char *s) { return sql_hash64(s, strlen(s)); }

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
        mr_rule_bad_value(L, dr, "log_sample",
                          "a whole number from 1 (log every match) to 1000000000");
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

/* ---- sections ------------------------------------------------------------------ */

static void finish_draft(loader *L)
{
    if (!L->have_cur)
        return;
    draft *dr = &L->cur;
    const mr_rule_kind *kd = dr->kind;
    mr_rule r = {
        .line = dr->line, .kind = kd->type, .entry = kd, .err_code = 1148, .sqlstate = "42000"};
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
        mr_rule_error(L, line,
                      "[%s] needs one rule name after the kind, made of "
                      "letters, digits, _ - and . (like [%s no_star_orders])",
                      sec, (*kind)->name);
        return false;
    }
    uint32_t prev = names_find(L, nm);
    if (prev != NO_RULE) {
        const mr_rule *p = &L->rules[prev];
        mr_rule_error(L, line,
                      "rule name '%s' is already used by [%s %s] at %s:%d; "
                      "names must be unique across all rule files",
                      nm, p->entry->name, p->name, p->file, p->line);
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
    mr_rule_error(L, line, "unknown key '%s' in [%s %s]; %s rules take: %s", key, dr->kind->name,
                  dr->name, dr->kind->name, list);
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
        mr_rule_error(L, line, "%s given twice in [%s %s] (first at line %d)", key, dr->kind->name,
                      dr->name, dr->vline[k]);
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
