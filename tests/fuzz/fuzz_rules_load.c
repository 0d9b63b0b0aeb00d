/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_rules_load.c - the rule-file loader (rules/load.c, rules/compile.c
 * and the INI reader under them), from a buffer as `myrewrite --check`
 * and the tests load a string: no file is read.
 *
 * Feeds: the input as the text of one rules file.
 * Checks beyond no crash: the loader returns a set exactly when it
 * reported no error; every rule of a set has a name and a known kind, and
 * the kinds' settings are there (queue, delayed, paginate); loading the
 * same text again gives the same count; a few statements meet the loaded
 * set without harm.
 */
#include <string.h>

#include "fuzz.h"
#include "myrewrite/core/rule_kinds.h"
#include "myrewrite/rules/rules.h"

static const char *const statements[] = {
    "SELECT * FROM orders WHERE customer_id = 7",
    "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 3",
    "SELECT * FROM t ORDER BY id LIMIT 100000, 10",
    "DELETE FROM t",
};

static void check_set(const mr_ruleset *rs)
{
    for (size_t i = 0; i < mr_ruleset_count(rs); i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        FUZZ_CHECK(r && r->name && r->kind < MR_RULE_KIND_MAX);
        FUZZ_CHECK(r->kind != MR_RULE_QUEUE || r->queue);
        FUZZ_CHECK(r->kind != MR_RULE_DELAYED || r->delayed);
        FUZZ_CHECK(r->kind != MR_RULE_PAGINATE || r->paginate);
    }
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_stmt_ctx ctx = {.schema = "test", .skip_locked = true};
    for (size_t i = 0; i < sizeof statements / sizeof statements[0]; i++) {
        mr_match_result res;
        memset(&res, 0, sizeof res);
        mr_buf_init(&res.text);
        mr_buf_init(&res.would_be);
        mr_rules_apply(rs, statements[i], strlen(statements[i]), &ctx, s, &res);
        FUZZ_CHECK(res.action <= MR_ACT_DELAYED_MEMORY);
        mr_buf_free(&res.text);
        mr_buf_free(&res.would_be);
    }
    mr_rules_scratch_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    mr_diag d = {NULL, 0};
    mr_ruleset *rs = mr_rules_load_string(text, "fuzz.rules", mr_rule_kinds_all, 2, &d);
    FUZZ_CHECK((rs != NULL) == (d.errors == 0));
    if (rs) {
        check_set(rs);
        mr_diag d2 = {NULL, 0};
        mr_ruleset *again = mr_rules_load_string(text, "fuzz.rules", mr_rule_kinds_all, 2, &d2);
        FUZZ_CHECK(again && mr_ruleset_count(again) == mr_ruleset_count(rs));
        mr_ruleset_free(again);
    }
    mr_ruleset_free(rs);
    free(text);
    return 0;
}
