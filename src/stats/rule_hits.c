/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats/rule_hits.c - hit counts kept across rule reloads (stats/rule_hits.h): a
 * growing array of (kind, name, hits, last hit), searched linearly; it
 * holds one entry per rule name ever loaded.
 */
#include "myrewrite/stats/rule_hits.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct carried {
    mr_rule_type kind;
    char *name;
    uint64_t hits;
    uint64_t last;
} carried;

static struct {
    pthread_mutex_t lock;
    carried *v;
    size_t n, cap;
} C = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The entry of rule r; created when `add` (NULL when out of memory). */
static carried *entry(const mr_rule *r, bool add)
{
    for (size_t k = 0; k < C.n; k++)
        if (C.v[k].kind == r->kind && strcmp(C.v[k].name, r->name) == 0)
            return &C.v[k];
    if (!add)
        return NULL;
    if (C.n == C.cap) {
        size_t cap = C.cap ? 2 * C.cap : 32;
        carried *grown = realloc(C.v, cap * sizeof *grown);
        if (!grown)
            return NULL;
        C.v = grown;
        C.cap = cap;
    }
    char *name = strdup(r->name);
    if (!name)
        return NULL;
    C.v[C.n] = (carried){.kind = r->kind, .name = name};
    return &C.v[C.n++];
}

void mr_rule_hits_fold(const mr_ruleset *rs)
{
    pthread_mutex_lock(&C.lock);
    for (size_t i = 0; i < mr_ruleset_count(rs); i++) {
        uint64_t hits = mr_ruleset_hits(rs, i), last = mr_ruleset_last_hit(rs, i);
        carried *c = hits ? entry(mr_ruleset_rule(rs, i), true) : NULL;
        if (!c)
            continue; /* nothing to keep, or no memory to keep it */
        c->hits += hits;
        if (last > c->last)
            c->last = last;
    }
    pthread_mutex_unlock(&C.lock);
}

/* What earlier sets counted for rule i of rs: hits and latest hit. */
static void carried_of(const mr_ruleset *rs, size_t i, uint64_t *hits, uint64_t *last)
{
    const mr_rule *r = mr_ruleset_rule(rs, i);
    *hits = *last = 0;
    if (!r)
        return;
    pthread_mutex_lock(&C.lock);
    const carried *c = entry(r, false);
    if (c)
        *hits = c->hits, *last = c->last;
    pthread_mutex_unlock(&C.lock);
}

uint64_t mr_rule_hits_total(const mr_ruleset *rs, size_t i)
{
    uint64_t hits, last;
    carried_of(rs, i, &hits, &last);
    return hits + mr_ruleset_hits(rs, i);
}

uint64_t mr_rule_hits_last(const mr_ruleset *rs, size_t i)
{
    uint64_t hits, last;
    carried_of(rs, i, &hits, &last);
    uint64_t now = mr_ruleset_last_hit(rs, i);
    return now > last ? now : last;
}
