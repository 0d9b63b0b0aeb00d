/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/fuzz/fuzz_rules.h - the small fixed rule set the rule-matching
 * and DELAYED targets apply to fuzzed statements: one rule of each kind
 * that changes statements (rewrite, regex, block, a block with
 * dynamic = refuse for the default schema shop, paginate with the
 * deferred join and with keyset, delayed staged and in memory, queue).
 */
#ifndef MYREWRITE_FUZZ_RULES_H
#define MYREWRITE_FUZZ_RULES_H

#include "fuzz.h"
#include "myrewrite/core/rule_kinds.h"
#include "myrewrite/rules/rules.h"

static const char fuzz_rules_text[] =
    "[rewrite cols]\n"
    "pattern = SELECT * FROM orders WHERE customer_id = ?\n"
    "replacement = SELECT id, status FROM orders WHERE customer_id = ? AND 1 = 1\n"
    "[rewrite in_list]\n"
    "pattern = SELECT a FROM t WHERE b IN (?) AND c = ?\n"
    "replacement = SELECT a FROM t FORCE INDEX (b) WHERE b IN (?) AND c = ?\n"
    "[regex cap]\n"
    "match = ^SELECT (.+) FROM report_rows WHERE (.+)$\n"
    "replace = SELECT $1 FROM report_rows WHERE $2 LIMIT 10000\n"
    "[block no_where]\n"
    "statement = delete, update\n"
    "where = missing\n"
    "message = DELETE and UPDATE need a WHERE clause\n"
    "[block keep_orders]\n"
    "pattern = DROP TABLE orders\n"
    "message = orders stay\n"
    "dynamic = refuse\n"
    "schema = shop\n"
    "[paginate lines]\n"
    "table = shop.lines\n"
    "key = order_id, line_no\n"
    "threshold = 50\n"
    "max_offset = 100000\n"
    "[paginate seek]\n"
    "table = shop.events\n"
    "key = id\n"
    "strategy = keyset\n"
    "threshold = 10\n"
    "[delayed counters]\n"
    "table = shop.counters\n"
    "key = id\n"
    "columns = hits, misses\n"
    "set_columns = note\n"
    "[delayed daily]\n"
    "table = shop.daily\n"
    "key = page, lang\n"
    "columns = views\n"
    "bucket_column = day\n"
    "[delayed mem]\n"
    "table = shop.mem\n"
    "key = a, b\n"
    "columns = n, m\n"
    "set_columns = title\n"
    "mode = memory\n"
    "[queue jobs]\n"
    "table = shop.jobs\n"
    "owner_column = owner\n"
    "status_column = status\n"
    "claimed_value = claimed\n"
    "unclaimed_value = free\n";

/* The set, loaded once; a load error is a broken target, not a finding. */
static inline const mr_ruleset *fuzz_rules(void)
{
    static mr_ruleset *rs;
    if (!rs) {
        mr_diag d = {stderr, 0};
        rs = mr_rules_load_string(fuzz_rules_text, "fuzz.rules", mr_rule_kinds_all, 1, &d);
        FUZZ_CHECK(rs && d.errors == 0);
    }
    return rs;
}

#endif
