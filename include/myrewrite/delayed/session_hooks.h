/*
 * delayed/session_hooks.h - the delayed feature's hooks in a client session
 * (feature/feature.h), listed in session/features.c.
 */
#ifndef MYREWRITE_DELAYED_SESSION_HOOKS_H
#define MYREWRITE_DELAYED_SESSION_HOOKS_H

#include "myrewrite/feature/feature.h"

extern const mr_feature mr_delayed_feature;

#endif
