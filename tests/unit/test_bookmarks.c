/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_bookmarks.c - the keyset bookmark store: nearest bookmark at or
 * before an offset, TTL, the LRU bound per stripe, write generations,
 * refusals, replacement of a position, and the gauge.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/paginate/bookmarks.h"

#define TTL 1000
#define MAX 1000

/* Listings 0..127 share stripe 0 (the stripe is picked from bits 7 and up). */
static void put(uint64_t listing, uint64_t table, uint64_t pos, const char *v, uint64_t now)
{
    mr_bookmarks_put(listing, table, mr_bookmarks_gen(table), pos, v, strlen(v) + 1, TTL, MAX, now);
}

static mr_bookmark_find find(uint64_t listing, uint64_t table, uint64_t off, uint64_t now,
                             uint64_t *pos, char *v)
{
    size_t len = 0;
    memset(v, 0, 64);
    return mr_bookmarks_find(listing, table, off, now, pos, v, 64, &len);
}

static int reset(void **state)
{
    (void)state;
    mr_bookmarks_clear();
    return 0;
}

static void nearest_at_or_before(void **state)
{
    (void)state;
    uint64_t pos = 0;
    char v[64];
    put(5, 9, 20, "20", 0);
    put(5, 9, 60, "60", 0);
    put(5, 9, 40, "40", 0);
    put(6, 9, 50, "other listing", 0);
    assert_int_equal(mr_keyset_bookmarks(), 4);
    assert_int_equal(find(5, 9, 59, 1, &pos, v), MR_BOOKMARK_FOUND);
    assert_int_equal(pos, 40);
    assert_string_equal(v, "40");
    assert_int_equal(find(5, 9, 60, 1, &pos, v), MR_BOOKMARK_FOUND);
    assert_int_equal(pos, 60);
    assert_int_equal(find(5, 9, 1000000, 1, &pos, v), MR_BOOKMARK_FOUND);
    assert_int_equal(pos, 60);
    assert_int_equal(find(5, 9, 19, 1, &pos, v), MR_BOOKMARK_NONE);
    assert_int_equal(find(5, 8, 60, 1, &pos, v), MR_BOOKMARK_NONE); /* another table */
    assert_int_equal(find(7, 9, 60, 1, &pos, v), MR_BOOKMARK_NONE);
}

static void same_position_is_replaced(void **state)
{
    (void)state;
    uint64_t pos = 0;
    char v[64];
    put(5, 9, 20, "old", 0);
    put(5, 9, 20, "new", 0);
    assert_int_equal(mr_keyset_bookmarks(), 1);
    assert_int_equal(find(5, 9, 20, 1, &pos, v), MR_BOOKMARK_FOUND);
    assert_string_equal(v, "new");
}

static void ttl_expires(void **state)
{
    (void)state;
    uint64_t pos = 0;
    char v[64];
    put(5, 9, 20, "20", 100);
    assert_int_equal(find(5, 9, 20, 100 + TTL - 1, &pos, v), MR_BOOKMARK_FOUND);
    assert_int_equal(find(5, 9, 20, 100 + TTL, &pos, v), MR_BOOKMARK_NONE);
    assert_int_equal(mr_keyset_bookmarks(), 0); /* dropped when found expired */
}

static void writes_drop_the_table(void **state)
{
    (void)state;
    uint64_t pos = 0;
    char v[64];
    put(5, 9, 20, "20", 0);
    put(6, 10, 20, "20", 0);
    mr_bookmarks_note_write(9);
    assert_int_equal(find(5, 9, 20, 1, &pos, v), MR_BOOKMARK_NONE);
    assert_int_equal(find(6, 10, 20, 1, &pos, v), MR_BOOKMARK_FOUND);
    mr_bookmarks_note_write_all();
    assert_int_equal(find(6, 10, 20, 1, &pos, v), MR_BOOKMARK_NONE);
    /* a page read while a write passed is not recorded */
    uint64_t gen = mr_bookmarks_gen(9);
    mr_bookmarks_note_write(9);
    mr_bookmarks_put(5, 9, gen, 40, "40", 3, TTL, MAX, 0);
    assert_int_equal(find(5, 9, 40, 1, &pos, v), MR_BOOKMARK_NONE);
    assert_int_equal(mr_keyset_bookmarks(), 0);
}

static void bounded_lru(void **state)
{
    (void)state;
    uint64_t pos = 0;
    char v[64];
    /* max 32 over 16 stripes: 2 per stripe; listings 1, 2, 3 share stripe 0 */
    mr_bookmarks_put(1, 9, mr_bookmarks_gen(9), 10, "a", 2, TTL, 32, 0);
    mr_bookmarks_put(2, 9, mr_bookmarks_gen(9), 10, "b", 2, TTL, 32, 0);
    assert_int_equal(find(1, 9, 10, 1, &pos, v), MR_BOOKMARK_FOUND); /* 1 is now the newer */
    mr_bookmarks_put(3, 9, mr_bookmarks_gen(9), 10, "c", 2, TTL, 32, 0);
    assert_int_equal(mr_keyset_bookmarks(), 2);
    assert_int_equal(find(2, 9, 10, 1, &pos, v), MR_BOOKMARK_NONE);
    assert_int_equal(find(1, 9, 10, 1, &pos, v), MR_BOOKMARK_FOUND);
    assert_int_equal(find(3, 9, 10, 1, &pos, v), MR_BOOKMARK_FOUND);
    /* another stripe keeps its own */
    mr_bookmarks_put(1000, 9, mr_bookmarks_gen(9), 10, "d", 2, TTL, 32, 0);
    assert_int_equal(mr_keyset_bookmarks(), 3);
}

static void refusal(void **state)
{
    (void)state;
    uint64_t pos = 0;
    char v[64];
    put(5, 9, 20, "20", 0);
    mr_bookmarks_refuse(5, 9, mr_bookmarks_gen(9), TTL, 0);
    assert_int_equal(mr_keyset_bookmarks(), 1);
    assert_int_equal(find(5, 9, 20, 1, &pos, v), MR_BOOKMARK_REFUSED);
    assert_int_equal(find(5, 9, 20, TTL, &pos, v), MR_BOOKMARK_NONE);
}

static void values_larger_than_the_callers_buffer(void **state)
{
    (void)state;
    uint64_t pos = 0;
    char big[100], v[64];
    memset(big, 'x', sizeof big);
    mr_bookmarks_put(5, 9, mr_bookmarks_gen(9), 20, big, sizeof big, TTL, MAX, 0);
    put(5, 9, 10, "10", 0);
    assert_int_equal(find(5, 9, 30, 1, &pos, v), MR_BOOKMARK_FOUND);
    assert_int_equal(pos, 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(nearest_at_or_before, reset),
        cmocka_unit_test_setup(same_position_is_replaced, reset),
        cmocka_unit_test_setup(ttl_expires, reset),
        cmocka_unit_test_setup(writes_drop_the_table, reset),
        cmocka_unit_test_setup(bounded_lru, reset),
        cmocka_unit_test_setup(refusal, reset),
        cmocka_unit_test_setup(values_larger_than_the_callers_buffer, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
