/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/core/features.c - the features a session runs, in the order their
 * hooks run (feature/feature.h). Adding a feature adds its folder, which
 * defines its `const mr_feature`, and one entry here.
 *
 * The order matters where two features could act on one statement:
 * delayed comes first (FLUSH DELAYED before anything reads the text, a
 * memory-mode DELAYED answered before the keyset watch notes it as a
 * write), as the session called them before the table; group commit last
 * (a statement joins a batch only once every other hook let it pass).
 */
#include "myrewrite/delayed/session_hooks.h"
#include "myrewrite/paginate/session_hooks.h"
#include "myrewrite/queue/session_hooks.h"
#include <stddef.h>

#include "myrewrite/session/reload.h"
#include "session/core/session_impl.h"

const mr_feature *const ss_features[] = {
    &mr_delayed_feature,
    &mr_paginate_feature,
    &mr_queue_feature,
    &mr_delayed_group_feature,
};
const unsigned ss_nfeatures = sizeof ss_features / sizeof ss_features[0];

typedef void (*proxy_hook)(const mr_proxy *p);

/* The hook at offset `at` of each entry, in table order or in reverse. */
static void run_proxy_hook(size_t at, bool reverse, const mr_proxy *p)
{
    for (unsigned k = 0; k < ss_nfeatures; k++) {
        const mr_feature *f = ss_features[reverse ? ss_nfeatures - 1 - k : k];
        proxy_hook h = *(const proxy_hook *)(const void *)((const char *)f + at);
        if (h)
            h(p);
    }
}

void mr_features_start(const mr_proxy *p) { run_proxy_hook(offsetof(mr_feature, start), false, p); }
void mr_features_before_listen(const mr_proxy *p)
{
    run_proxy_hook(offsetof(mr_feature, before_listen), false, p);
}
void mr_features_drain(const mr_proxy *p) { run_proxy_hook(offsetof(mr_feature, drain), false, p); }
void mr_features_stop(const mr_proxy *p) { run_proxy_hook(offsetof(mr_feature, stop), true, p); }

void mr_features_prepare(const mr_proxy *p, const mr_ruleset *rs)
{
    for (unsigned i = 0; i < ss_nfeatures; i++)
        if (ss_features[i]->rules_prepare)
            ss_features[i]->rules_prepare(p, rs);
}

void mr_features_configure(const mr_proxy *p, const mr_ruleset *rs)
{
    for (unsigned i = 0; i < ss_nfeatures; i++)
        if (ss_features[i]->configure)
            ss_features[i]->configure(p, rs);
}

_Static_assert(sizeof ss_features / sizeof ss_features[0] <= MR_FEATURES_MAX,
               "MR_FEATURES_MAX (feature/feature.h) is the number of state slots a session has");
