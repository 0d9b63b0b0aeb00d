/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/kind_list.h - every kind of rule the proxy knows, in one list: the
 * only place a kind is registered. X(TAG, entry) per kind, in the order
 * "known kinds: ..." lists them: TAG makes its mr_rule_type tag
 * (MR_RULE_<TAG>, rules/rules.h), entry names its `const mr_rule_kind`
 * (rules/kind.h), defined in the kind's folder; core/rule_kinds.c builds
 * the table from the same list, so a tag is always its entry's index.
 *
 * The rules layer reads only the tags from here; the entries are named,
 * not declared, so it still includes nothing of the kinds above it.
 */
#ifndef MYREWRITE_RULES_KIND_LIST_H
#define MYREWRITE_RULES_KIND_LIST_H

#define MR_RULE_KIND_LIST(X)                                                                       \
    X(REWRITE, mr_rewrite_kind)                                                                    \
    X(REGEX, mr_regex_kind)                                                                        \
    X(BLOCK, mr_block_kind)                                                                        \
    X(QUEUE, mr_queue_kind)                                                                        \
    X(DELAYED, mr_delayed_kind)                                                                    \
    X(PAGINATE, mr_paginate_kind)

#endif
