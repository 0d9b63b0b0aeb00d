/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/session_hooks.h - the paginate feature's hooks in a client session
 * (feature/feature.h), listed in session/core/features.c.
 */
#ifndef MYREWRITE_PAGINATE_SESSION_HOOKS_H
#define MYREWRITE_PAGINATE_SESSION_HOOKS_H

#include "myrewrite/feature/feature.h"

extern const mr_feature mr_paginate_feature;

#endif
