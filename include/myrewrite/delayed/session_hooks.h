/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/session_hooks.h - the delayed feature's hooks in a client session
 * (feature/feature.h), listed in session/core/features.c.
 */
#ifndef MYREWRITE_DELAYED_SESSION_HOOKS_H
#define MYREWRITE_DELAYED_SESSION_HOOKS_H

#include "myrewrite/feature/feature.h"

extern const mr_feature mr_delayed_feature;
/* Group commit (delayed/session/session_group.c): last in the table, after every
 * other feature's statement hook has let the statement pass. */
extern const mr_feature mr_delayed_group_feature;

#endif
