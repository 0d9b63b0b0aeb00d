/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core/rule_kinds.h - the kinds of rule the proxy knows: the table handed to
 * the rule loader (rules/kind.h), assembled here, above every kind's folder,
 * so that the rules layer below knows none of them.
 *
 * Pure, any thread: a const table.
 */
#ifndef MYREWRITE_CORE_RULE_KINDS_H
#define MYREWRITE_CORE_RULE_KINDS_H

#include "myrewrite/rules/rules.h"

/* rewrite, regex, block, queue, delayed, paginate; NULL-terminated. The
 * order is the one "known kinds: ..." lists. */
extern mr_rule_kinds mr_rule_kinds_all[];

#endif
