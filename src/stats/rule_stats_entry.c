/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats/rule_stats_entry.c - making and freeing one entry of stats/rule_stats.h: the
 * part with no global state, so that the derived-rule registry (a pure
 * layer) can own the entries of the tables it derives.
 */
#include <stdlib.h>
#include <string.h>

#include "myrewrite/stats/rule_stats.h"

static char *dup_opt(const char *s, bool *ok)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    *ok = *ok && d;
    return d;
}

bool mr_rule_stats_init(mr_rule_stats *e, mr_rule_type kind, const char *name, const char *table,
                        const char *staging)
{
    bool ok = true;
    e->kind = kind;
    e->name = dup_opt(name, &ok);
    e->table = dup_opt(table, &ok);
    e->staging = dup_opt(staging, &ok);
    if (!ok) {
        free(e->name);
        free(e->table);
        free(e->staging);
        memset(e, 0, sizeof *e);
    }
    return ok;
}

mr_rule_stats *mr_rule_stats_new(mr_rule_type kind, const char *name, const char *table,
                                 const char *staging)
{
    mr_rule_stats *e = calloc(1, sizeof *e);
    if (e && !mr_rule_stats_init(e, kind, name, table, staging)) {
        free(e);
        return NULL;
    }
    return e;
}

void mr_rule_stats_free(mr_rule_stats *e)
{
    if (!e)
        return;
    free(e->name);
    free(e->table);
    free(e->staging);
    free(e);
}
