/* SPDX-License-Identifier: Apache-2.0 */
/*
 * core/rule_kinds.c - the table of rule kinds (core/rule_kinds.h), built
 * from the one list of kinds, rules/kind_list.h: entry i is the kind whose
 * mr_rule_type tag is i. A new kind is a folder with its entry (its keys,
 * parse and apply: rules/kind.h) and one line in that list.
 *
 * The entries are declared here from the list, so this file names no
 * kind's header: each is defined in its folder.
 *
 * Pure, any thread: a const table.
 */
#include "myrewrite/core/rule_kinds.h"

#include "myrewrite/rules/kind.h"

#define DECLARE(tag, entry) extern const mr_rule_kind entry;
MR_RULE_KIND_LIST(DECLARE)
#undef DECLARE

#define ENTRY(tag, entry) [MR_RULE_##tag] = &entry,
mr_rule_kinds mr_rule_kinds_all[] = {MR_RULE_KIND_LIST(ENTRY)[MR_RULE_KIND_MAX] = NULL};
#undef ENTRY
