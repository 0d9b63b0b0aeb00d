/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_rule_hits.c - hit counts folded from a replaced rule set into the
 * next one by rule kind and name (stats/rule_hits.h).
 */
#include "test_rules.h"

#include "myrewrite/stats/rule_hits.h"

static void hit(const mr_ruleset *rs, const char *sql, unsigned times)
{
    for (unsigned k = 0; k < times; k++) {
        mr_rules_scratch *s = mr_rules_scratch_new();
        mr_match_result res = result_new();
        apply_ctx(rs, sql, &(mr_stmt_ctx){0}, s, &res);
        result_free(&res);
        mr_rules_scratch_free(s);
    }
}

/* Index of the rule called name in rs. */
static size_t at(const mr_ruleset *rs, const char *name)
{
    for (size_t i = 0; i < mr_ruleset_count(rs); i++)
        if (strcmp(mr_ruleset_rule(rs, i)->name, name) == 0)
            return i;
    fail_msg("no rule %s", name);
    return 0;
}

static void folded_by_name(void **state)
{
    (void)state;
    mr_ruleset *old = load_ok("[rewrite a]\npattern = SELECT 1\nreplacement = SELECT 2\n"
                              "[block b]\npattern = DELETE FROM t\nmessage = no\n");
    hit(old, "SELECT 1", 3);
    hit(old, "DELETE FROM t", 2);
    assert_int_equal(mr_rule_hits_total(old, at(old, "a")), 3); /* nothing folded yet */
    uint64_t last_a = mr_ruleset_last_hit(old, at(old, "a"));
    assert_true(last_a > 0);
    mr_rule_hits_fold(old);
    mr_ruleset_free(old);
    /* a keeps its name and kind; b is now a rewrite (another rule); c is new */
    mr_ruleset *cur =
        load_ok("[rewrite a]\npattern = SELECT 1\nreplacement = SELECT 3\n"
                "[rewrite b]\npattern = DELETE FROM t\nreplacement = DELETE FROM u\n"
                "[rewrite c]\npattern = SELECT x FROM c\nreplacement = SELECT y FROM c\n");
    assert_int_equal(mr_rule_hits_total(cur, at(cur, "a")), 3);
    assert_int_equal(mr_rule_hits_last(cur, at(cur, "a")), last_a);
    assert_int_equal(mr_rule_hits_total(cur, at(cur, "b")), 0);
    assert_int_equal(mr_rule_hits_last(cur, at(cur, "b")), 0);
    hit(cur, "SELECT 1", 1);
    hit(cur, "SELECT x FROM c", 4);
    assert_int_equal(mr_rule_hits_total(cur, at(cur, "a")), 4);
    assert_int_equal(mr_rule_hits_total(cur, at(cur, "c")), 4);
    mr_rule_hits_fold(cur); /* a third set sees both sets' hits */
    mr_ruleset_free(cur);
    mr_ruleset *next = load_ok("[rewrite a]\npattern = SELECT 1\nreplacement = SELECT 2\n");
    assert_int_equal(mr_rule_hits_total(next, 0), 4);
    mr_ruleset_free(next);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(folded_by_name)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
