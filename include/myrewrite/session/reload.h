/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/reload.h - loading the rule files at start and swapping them on SIGHUP.
 *
 * Main thread (file I/O never runs on a worker). A reload parses every file
 * into a complete new rule set; only when all of it is valid is it handed
 * to the workers, each of which switches between two statements. On any
 * error the old rules stay in force and every error is logged.
 */
#ifndef MYREWRITE_RELOAD_H
#define MYREWRITE_RELOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "myrewrite/base/config.h"
#include "myrewrite/base/proxy.h"
#include "myrewrite/rules/rules.h"

/* Loads cfg->rules_dir with these kinds. A missing directory is an error
 * unless it is the default one, which then counts as empty. Errors go to `d`. */
mr_ruleset *mr_rules_load_configured(const mr_config *cfg, const mr_rule_kinds *kinds,
                                     unsigned shards, mr_diag *d);

/* Each feature's rules_prepare (a set about to be in force, before any
 * worker sees it), then its configure (the set is in force), in the order of
 * the session's feature table (session/core/features.c). Main thread. */
void mr_features_prepare(const mr_proxy *p, const mr_ruleset *rs);
void mr_features_configure(const mr_proxy *p, const mr_ruleset *rs);
/* The features' process hooks (feature/feature.h: start, before_listen,
 * drain; stop in reverse table order). Main thread (core/main.c). */
void mr_features_start(const mr_proxy *p);
void mr_features_before_listen(const mr_proxy *p);
void mr_features_drain(const mr_proxy *p);
void mr_features_stop(const mr_proxy *p);
/* The features' ports for --explain's statement side (explain_ports). */
void mr_features_explain_ports(mr_stmt_ctx *ctx);

/* Reloads and, on success, publishes to every worker. Returns the number of
 * errors; when `errors` is given, the diagnostics are written there too.
 * Any thread but a worker (it reads files); reloads are serialized. */
int mr_rules_reload(mr_proxy *p, FILE *errors);

/* Reloads so far (SIGHUP and RELOAD RULES) that swapped a new set in, and
 * those that failed and kept the old one. Any thread. */
typedef struct mr_reload_counts {
    uint64_t ok, failed;
} mr_reload_counts;
mr_reload_counts mr_rules_reload_counts(void);

/* Makes `set` the one in force at start: one reference for each worker plus
 * one for the proxy. NULL when out of memory. */
struct mr_shared_rules *mr_rules_publish_initial(mr_proxy *p, mr_ruleset *set);

/* The set in force, with a reference for the caller, who releases it with
 * mr_shared_rules_release(). Any thread. */
struct mr_shared_rules *mr_rules_current(mr_proxy *p);

#endif
