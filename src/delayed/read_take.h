/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/read_take.h - read_pending's point reads on the statement side
 * (delayed/read_take.c), as delayed/statement.c calls them. Private to
 * delayed/; pure, the caller's worker thread.
 */
#ifndef MYREWRITE_DELAYED_READ_TAKE_H
#define MYREWRITE_DELAYED_READ_TAKE_H

#include "myrewrite/rules/kind.h"

/* A SELECT that may be a point read of a rule with read_pending; MR_TAKE_NONE
 * for every other statement. */
mr_take_step mr_delayed_read_take(mr_rule_run *R, mr_rule_stmt *S);

#endif
