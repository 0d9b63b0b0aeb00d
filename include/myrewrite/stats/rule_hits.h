/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats/rule_hits.h - rule hit counts that outlive a rules reload. A rule set
 * counts its hits per worker shard (rules/rules.h); when the last reference to a
 * set is dropped, its counts are folded into a table kept by rule kind and
 * name, and the totals below add that table to the set in force. So
 * SHOW RULES and /metrics count a rule's hits since the process started,
 * across reloads, as long as it keeps its name.
 *
 * Threads: any. The table is under a mutex taken when a set is folded
 * (once per reload) and for each row read (console and metrics only).
 */
#ifndef MYREWRITE_RULE_HITS_H
#define MYREWRITE_RULE_HITS_H

#include <stddef.h>
#include <stdint.h>

#include "myrewrite/rules/rules.h"

/* Folds the counts of a set nobody uses any more into the table. */
void mr_rule_hits_fold(const mr_ruleset *rs);
/* Rule i of rs in force: its hits, and its latest hit (unix seconds, 0 =
 * never), over this set and every earlier set it was in. */
uint64_t mr_rule_hits_total(const mr_ruleset *rs, size_t i);
uint64_t mr_rule_hits_last(const mr_ruleset *rs, size_t i);

#endif
