/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/session_hooks.h - the queue feature's hooks in a client session
 * (feature/feature.h), listed in session/core/features.c.
 */
#ifndef MYREWRITE_QUEUE_SESSION_HOOKS_H
#define MYREWRITE_QUEUE_SESSION_HOOKS_H

#include "myrewrite/feature/feature.h"

extern const mr_feature mr_queue_feature;

#endif
