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

#include "myrewrite/session/reload.h"
#include "session/core/session_impl.h"

const mr_feature *const ss_features[] = {
    &mr_delayed_feature,
    &mr_paginate_feature,
    &mr_queue_feature,
    &mr_delayed_group_feature,
};
const unsigned ss_nfeatures = sizeof ss_features / sizeof ss_features[0];

/* One loop per hook: each call is checked against the hook's own type. */
void mr_features_start(const mr_proxy *p)
{
    for (unsigned i = 0; i < ss_nfeatures; i++)
        if (ss_features[i]->start)
            ss_features[i]->start(p);
}

void mr_features_before_listen(const mr_proxy *p)
{
    for (unsigned i = 0; i < ss_nfeatures; i++)
        if (ss_features[i]->before_listen)
            ss_features[i]->before_listen(p);
}

void mr_features_drain(const mr_proxy *p)
{
    for (unsigned i = 0; i < ss_nfeatures; i++)
        if (ss_features[i]->drain)
            ss_features[i]->drain(p);
}

/* In reverse: a feature stops before the ones it was started after. */
void mr_features_stop(const mr_proxy *p)
{
    for (unsigned i = ss_nfeatures; i-- > 0;)
        if (ss_features[i]->stop)
            ss_features[i]->stop(p);
}

void mr_features_explain_ports(mr_stmt_ctx *ctx)
{
    for (unsigned i = 0; i < ss_nfeatures; i++)
        if (ss_features[i]->explain_ports)
            ss_features[i]->explain_ports(ctx);
}

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
