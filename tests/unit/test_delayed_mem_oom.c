/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_delayed_mem_oom.c - a memory-mode statement over several keys is
 * taken whole or not at all when the proxy runs out of memory part way
 * (delayed/mem/mem.c): each allocation mr_dmem_apply makes is failed in turn,
 * and after every ERR the map holds exactly what it held before, so the
 * client's retry counts each key once; also for a statement of more keys
 * than fit the batch's array on the stack (the array allocated too).
 *
 * The allocation failures come from the linker: this program alone is
 * linked with --wrap=malloc and --wrap=calloc (tests/unit/CMakeLists.txt),
 * so the proxy itself carries no hook.
 */
#include "test_rules.h"

#include "delayed/mem/mem_impl.h"
#include "myrewrite/delayed/mem.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);

static unsigned fail_in; /* 0: off; k: the k-th allocation from now fails */
static unsigned seen;    /* allocations while armed */

static bool fails_now(void)
{
    if (!fail_in)
        return false;
    seen++;
    return --fail_in == 0;
}

void *__wrap_malloc(size_t n) { return fails_now() ? NULL : __real_malloc(n); }

void *__wrap_calloc(size_t n, size_t size) { return fails_now() ? NULL : __real_calloc(n, size); }

static const char RULES[] = "[delayed counters]\n"
                            "table = test.counters\n"
                            "key = id\n"
                            "columns = hits\n"
                            "set_columns = note\n"
                            "mode = memory\n";
static const mr_stmt_ctx CTX = {.schema = "test"};

/* hits and note of key `id` in the shard, as "hits/note" ("-" when absent). */
static const char *held(struct mr_dmem_table *t, const char *id)
{
    static char out[64];
    dm_map m = {0};
    dm_swap_shard(0, &m); /* look at the shard's map, then put it back */
    char key[16];
    uint32_t len = (uint32_t)strlen(id);
    memcpy(key, &len, 4);
    memcpy(key + 4, id, len);
    const dm_entry *e = dm_find(&m, t, key, 4 + len, dm_hash(t, key, 4 + len));
    if (!e)
        snprintf(out, sizeof out, "-");
    else
        snprintf(out, sizeof out, "%lld/%.*s", (long long)e->v[0].n, (int)e->v[1].len,
                 e->v[1].text ? e->v[1].text : "");
    dm_swap_shard(0, &m);
    return out;
}

static int apply(const mr_ruleset *rs, struct mr_dmem_table *t, const char *sql, unsigned fail_at)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, &CTX, s, &res);
    assert_int_equal(res.action, MR_ACT_DELAYED_MEMORY);
    ((mr_delayed_def *)(uintptr_t)res.dmem->def)->mem = t;
    uint64_t affected = 0;
    char err[300] = "";
    seen = 0;
    fail_in = fail_at;
    int rc = mr_dmem_apply(0, res.dmem, &affected, err, sizeof err);
    fail_in = 0;
    if (rc != 0)
        assert_non_null(strstr(err, "out of memory; nothing of this statement was taken"));
    result_free(&res);
    mr_rules_scratch_free(s);
    return rc;
}

static void all_or_nothing(void **state)
{
    (void)state;
    static const char SQL[] = "UPDATE DELAYED counters SET hits = hits + 1, note = 'n' "
                              "WHERE id IN (1, 2, 3, 2)";
    mr_ruleset *rs = load_ok(RULES);
    assert_true(mr_dmem_init(1));
    struct mr_dmem_table t = {.def = *mr_ruleset_rule(rs, 0)->delayed};
    t.ncols = mr_dmem_columns(&t.def);
    assert_int_equal(t.ncols, 2);
    /* key 1 held already: the batch adds to it, and makes keys 2 and 3 */
    assert_int_equal(apply(rs, &t, "UPDATE DELAYED counters SET hits = hits + 5 WHERE id = 1", 0),
                     0);
    unsigned failed = 0;
    for (unsigned at = 1;; at++) {
        int rc = apply(rs, &t, SQL, at);
        if (rc == 0) {
            assert_true(seen < at); /* every allocation of the statement succeeded */
            break;
        }
        failed++;
        /* the ERR left the shard as it was: nothing to count twice on a retry */
        assert_string_equal(held(&t, "1"), "5/");
        assert_string_equal(held(&t, "2"), "-");
        assert_string_equal(held(&t, "3"), "-");
        assert_int_equal(atomic_load(&t.nkeys), 1);
    }
    assert_true(failed >= 3); /* entries for keys 2 and 3, and the note's copies */
    assert_string_equal(held(&t, "1"), "6/n");
    assert_string_equal(held(&t, "2"), "2/n");
    assert_string_equal(held(&t, "3"), "1/n");
    assert_int_equal(atomic_load(&t.nkeys), 3);
    /* more keys than fit the batch's array on the stack: it is allocated too */
    char big[400] = "UPDATE DELAYED counters SET hits = hits + 1 WHERE id IN (1";
    for (int k = 10; k < 40; k++)
        snprintf(big + strlen(big), sizeof big - strlen(big), ", %d", k);
    strcat(big, ")");
    failed = 0;
    for (unsigned at = 1;; at++) {
        if (apply(rs, &t, big, at) == 0)
            break;
        failed++;
        assert_string_equal(held(&t, "1"), "6/n");
        assert_string_equal(held(&t, "10"), "-");
        assert_string_equal(held(&t, "39"), "-");
        assert_int_equal(atomic_load(&t.nkeys), 3);
    }
    assert_true(failed >= 31); /* the array, then 30 entries */
    assert_string_equal(held(&t, "1"), "7/n");
    assert_string_equal(held(&t, "10"), "1/");
    assert_string_equal(held(&t, "39"), "1/");
    assert_int_equal(atomic_load(&t.nkeys), 33);
    dm_map m = {0};
    dm_swap_shard(0, &m);
    dm_map_free(&m);
    mr_dmem_stop(0);
    mr_ruleset_free(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_or_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
