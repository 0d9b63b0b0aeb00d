/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/rule_load.c - [paginate NAME] sections to paginate rules: checks
 * every key of the section (rules/README.md, "paginate") and fills the
 * rule's mr_paginate_def (paginate/rule.h).
 *
 * Pure, any thread (in practice the main thread, while rules load).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/paginate/rule.h"

typedef mr_rule_draft draft;
typedef mr_rule_loader loader;

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
    static const struct {
        const char *name;
        mr_paginate_strategy s;
    } names[] = {
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

bool mr_paginate_rule_parse(loader *L, const draft *dr, mr_rule *r, struct rule_impl *im)
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
    bool ok =
        mr_rule_need(L, dr, "table", "paginate rules need the table (or *) whose pages they take");
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
    snprintf(text, sizeof text, "paginate %s%s%s from offset %llu, %s%s%s",
             p->schema ? p->schema : "", p->schema ? "." : "", p->table ? p->table : "*",
             (unsigned long long)p->threshold, strategy[p->strategy],
             p->max_offset ? ", max_offset set" : "", p->nkeys ? "" : ", key from the schema");
    r->pattern = mr_rule_strdup(L, text);
    return r->pattern != NULL;
}
