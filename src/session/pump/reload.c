/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pump/reload.c - rule loading at start and atomic swap on reload (see session/reload.h).
 * Main thread only.
 */
#include "myrewrite/session/reload.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "myrewrite/base/log.h"
#include "myrewrite/schema/cache.h"
#include "myrewrite/session/worker.h"

mr_ruleset *mr_rules_load_configured(const mr_config *cfg, const mr_rule_kinds *kinds,
                                     unsigned shards, mr_diag *d)
{
    struct stat st;
    if (stat(cfg->rules_dir, &st) != 0 && strcmp(cfg->rules_dir, "rules") == 0) {
        mr_warn(0, "no rules directory '%s' here; running with no rules", cfg->rules_dir);
        return mr_rules_empty(kinds, shards);
    }
    return mr_rules_load_dir(cfg->rules_dir, kinds, shards, d);
}

/* Logs each diagnostic line on its own. */
static void log_lines(const char *text)
{
    while (*text) {
        const char *nl = strchr(text, '\n');
        int n = nl ? (int)(nl - text) : (int)strlen(text);
        mr_error(0, "rules: %.*s", n, text);
        text += n + (nl ? 1 : 0);
    }
}

struct mr_shared_rules *mr_rules_publish_initial(mr_proxy *p, mr_ruleset *set)
{
    mr_shared_rules *shared = mr_shared_rules_new(set, p->nworkers + 1);
    if (shared)
        p->rules = shared; /* before any other thread exists: no lock needed */
    return shared;
}

mr_shared_rules *mr_rules_current(mr_proxy *p)
{
    pthread_mutex_lock(&p->rules_lock);
    mr_shared_rules *r = p->rules;
    if (r)
        atomic_fetch_add(&r->refs, 1);
    pthread_mutex_unlock(&p->rules_lock);
    return r;
}

/* Replaces the proxy's own reference; the workers get theirs separately. */
static void set_current(mr_proxy *p, mr_shared_rules *shared)
{
    pthread_mutex_lock(&p->rules_lock);
    mr_shared_rules *old = p->rules;
    p->rules = shared;
    pthread_mutex_unlock(&p->rules_lock);
    mr_shared_rules_release(old);
}

static int reload_locked(mr_proxy *p, FILE *errors);

/* Written under reload_lock, read by the console and /metrics. */
static mr_counter reloads_ok, reloads_failed;

mr_reload_counts mr_rules_reload_counts(void)
{
    return (mr_reload_counts){mr_stat_get(&reloads_ok), mr_stat_get(&reloads_failed)};
}

int mr_rules_reload(mr_proxy *p, FILE *errors)
{
    pthread_mutex_lock(&p->reload_lock);
    int n = reload_locked(p, errors);
    mr_stat_add(n == 0 ? &reloads_ok : &reloads_failed, 1);
    pthread_mutex_unlock(&p->reload_lock);
    return n;
}

static int reload_locked(mr_proxy *p, FILE *errors)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    mr_diag d = {.out = mem};
    mr_ruleset *set = mr_rules_load_configured(p->cfg, p->rule_kinds, p->nworkers, &d);
    if (mem)
        fclose(mem);
    if (!set || d.errors) {
        log_lines(text ? text : "");
        mr_error(0, "rules reload failed with %d error%s; the previous rules stay in force",
                 d.errors, d.errors == 1 ? "" : "s");
        if (errors && text)
            fputs(text, errors);
        mr_ruleset_free(set);
        free(text);
        return d.errors ? d.errors : 1;
    }
    free(text);
    mr_shared_rules *shared = mr_shared_rules_new(set, p->nworkers + 1);
    if (!shared) {
        mr_ruleset_free(set);
        return 1;
    }
    mr_features_prepare(p, set); /* delayed's def->mem: before any other thread sees the set */
    set_current(p, shared);
    mr_features_configure(p, set);
    mr_schema_cache_rules_changed(); /* tables the old rules read are not kept fresh */
    mr_schema_cache_preload(set);    /* keys the new rules need, before their statements */
    for (unsigned i = 0; i < p->nworkers; i++)
        mr_worker_set_rules(&p->workers[i], shared);
    mr_info(0, "rules reloaded from %s: %zu rules", p->cfg->rules_dir, mr_ruleset_count(set));
    return 0;
}
