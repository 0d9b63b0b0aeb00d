/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_schema_cache.c - the schema cache's bookkeeping without a server (its
 * loader keeps failing to connect to a closed port, so nothing ever loads):
 * a miss answers "not loaded yet" at once and counts; the entry bound evicts
 * the least recently used entry but never one held by DDL; DDL holds a table
 * unknown until its end; texts without DDL take no hold; DDL the proxy
 * cannot attribute to tables drops everything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/base/log.h"
#include "myrewrite/schema/cache.h"

static mr_config cfg;

static int setup(void **state)
{
    (void)state;
    mr_log_set_level(MR_LOG_ERROR); /* the loader's failed connects are expected */
    mr_config_defaults(&cfg);
    assert_true(mr_config_set(&cfg, "proxy_user", "nobody", "test", 0, NULL));
    assert_true(mr_config_set(&cfg, "schema_cache_max_tables", "3", "test", 0, NULL));
    mr_schema_cache_start(&cfg, "127.0.0.1:1");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mr_schema_cache_stop();
    mr_config_free(&cfg);
    return 0;
}

static uint64_t stat(const mr_counter *c) { return atomic_load_explicit(c, memory_order_relaxed); }

static void expect_unknown(const char *table, const char *why)
{
    mr_row_key k;
    memset(&k, 0x55, sizeof k);
    assert_int_equal(mr_schema_cache_row_key("a", table, &k), MR_KEY_UNKNOWN);
    assert_int_equal(k.status, MR_KEY_UNKNOWN);
    if (!strstr(k.why, why))
        fail_msg("%s: wanted '%s' in '%s'", table, why, k.why);
}

static void misses_and_bound(void **state)
{
    (void)state;
    const mr_schema_cache_stats *st = mr_schema_cache_stats_get();
    uint64_t misses = stat(&st->misses), evictions = stat(&st->evictions);
    expect_unknown("t1", "the schema of a.t1 is not loaded yet");
    assert_int_equal(stat(&st->misses), misses + 1);
    expect_unknown("t2", "not loaded yet");
    expect_unknown("t3", "not loaded yet");
    assert_int_equal(stat(&st->evictions), evictions);
    expect_unknown("t4", "not loaded yet"); /* a fourth table: t1 goes */
    assert_int_equal(stat(&st->evictions), evictions + 1);
    expect_unknown("t2", "not loaded yet"); /* t2 becomes the most recent */
    expect_unknown("t5", "not loaded yet"); /* so t3 goes, not t2 */
    assert_int_equal(stat(&st->evictions), evictions + 2);
}

static void ddl_holds(void **state)
{
    (void)state;
    const mr_schema_cache_stats *st = mr_schema_cache_stats_get();
    assert_int_equal(mr_schema_cache_ddl_begin("SELECT 1", 8, 0, "a"), 0);
    const char *q = "SELECT 'x;y' FROM t; UPDATE t SET a = 1;";
    assert_int_equal(mr_schema_cache_ddl_begin(q, strlen(q), 0, "a"), 0);
    uint64_t inv = stat(&st->invalidations);
    const char *alter = "/* c */ ALTER TABLE t9 ADD COLUMN x INT";
    uint64_t h = mr_schema_cache_ddl_begin(alter, strlen(alter), 0, "a");
    assert_true(h != 0);
    assert_int_equal(stat(&st->invalidations), inv + 1);
    expect_unknown("t9", "DDL on a.t9 is in flight");
    mr_schema_cache_ddl_end(h);
    expect_unknown("t9", "not loaded yet");
    /* the DDL may come after other statements of the text */
    const char *multi = "SELECT 1; DROP TABLE a.t8";
    h = mr_schema_cache_ddl_begin(multi, strlen(multi), 0, NULL);
    assert_true(h != 0);
    expect_unknown("t8", "DDL on a.t8 is in flight");
    mr_schema_cache_ddl_end(h);
    mr_schema_cache_ddl_end(h); /* a second end is harmless */
    expect_unknown("t8", "not loaded yet");
}

static void held_entries_stay(void **state)
{
    (void)state;
    /* two holds of a bound of 3: new tables share the one slot left */
    const char *sql = "RENAME TABLE h1 TO h2";
    uint64_t h = mr_schema_cache_ddl_begin(sql, strlen(sql), 0, "a");
    assert_true(h != 0);
    expect_unknown("h1", "DDL on a.h1 is in flight");
    expect_unknown("h2", "DDL on a.h2 is in flight");
    expect_unknown("other", "not loaded yet");
    expect_unknown("other2", "not loaded yet"); /* evicts `other`, never a held one */
    expect_unknown("h1", "in flight");
    expect_unknown("h2", "in flight");
    /* a third hold fills the bound: then a new table cannot be taken */
    const char *drop = "DROP TABLE h3";
    uint64_t h3 = mr_schema_cache_ddl_begin(drop, strlen(drop), 0, "a");
    assert_true(h3 != 0);
    expect_unknown("other3", "the schema cache cannot take a.other3");
    mr_schema_cache_ddl_end(h3);
    mr_schema_cache_ddl_end(h);
    expect_unknown("h1", "not loaded yet");
    expect_unknown("other3", "not loaded yet");
}

static void unattributed_ddl(void **state)
{
    (void)state;
    const mr_schema_cache_stats *st = mr_schema_cache_stats_get();
    expect_unknown("z1", "not loaded yet");
    uint64_t inv = stat(&st->invalidations);
    const char *sql = "DROP DATABASE a";
    uint64_t h = mr_schema_cache_ddl_begin(sql, strlen(sql), 0, "a");
    assert_true(h != 0);
    assert_true(stat(&st->invalidations) >= inv + 1); /* every entry went */
    mr_schema_cache_ddl_end(h);
    /* an unqualified table with no default schema cannot be attributed either */
    inv = stat(&st->invalidations);
    const char *alter = "ALTER TABLE t ADD x INT";
    h = mr_schema_cache_ddl_begin(alter, strlen(alter), 0, NULL);
    assert_true(h != 0);
    assert_true(stat(&st->invalidations) > inv);
    mr_schema_cache_ddl_end(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(misses_and_bound),
        cmocka_unit_test(ddl_holds),
        cmocka_unit_test(held_entries_stay),
        cmocka_unit_test(unattributed_ddl),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
