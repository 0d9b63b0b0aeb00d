/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pool_set.c - the pool's hash set (pool/set.c) against a plain list:
 * random adds, finds and removes, with hashes drawn from a few values so
 * probe runs collide and wrap around the table, and entries of one key
 * added twice; after each step every entry in the list is found and none
 * removed is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/pool/set.h"

typedef struct item {
    uint32_t key;
    uint64_t hash;
    bool in;
} item;

static bool same_item(const void *entry, const void *key) { return entry == key; }

static uint32_t rnd_state = 7;
static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return rnd_state >> 8;
}

static void check_all(const mr_pool_set *s, item *items, size_t n)
{
    uint32_t in = 0;
    for (size_t i = 0; i < n; i++) {
        void *got = mr_pool_set_find(s, items[i].hash, same_item, &items[i]);
        assert_ptr_equal(got, items[i].in ? &items[i] : NULL);
        in += items[i].in;
    }
    assert_int_equal(s->n, in);
}

static void against_a_list(void **state)
{
    (void)state;
    enum { N = 600 };
    static item items[N];
    for (uint32_t round = 0; round < 4; round++) {
        mr_pool_set s;
        mr_pool_set_init(&s);
        for (size_t i = 0; i < N; i++) /* few hashes: long, wrapping probe runs */
            items[i] =
                (item){.key = (uint32_t)i, .hash = round < 2 ? rnd() % 37 : rnd(), .in = false};
        for (int step = 0; step < 4000; step++) {
            item *it = &items[rnd() % N];
            if (!it->in && rnd() % 3) {
                assert_true(mr_pool_set_add(&s, it->hash, it));
                it->in = true;
            } else {
                mr_pool_set_remove(&s, it->hash, it); /* also when not in: nothing */
                it->in = false;
            }
            if (step % 97 == 0)
                check_all(&s, items, N);
        }
        check_all(&s, items, N);
        mr_pool_set_free(&s);
    }
}

static bool same_key(const void *entry, const void *key)
{
    return ((const item *)entry)->key == *(const uint32_t *)key;
}

static void duplicates_and_empty(void **state)
{
    (void)state;
    mr_pool_set s;
    mr_pool_set_init(&s);
    uint32_t k = 5;
    assert_null(mr_pool_set_find(&s, 1, same_key, &k));
    item a = {.key = 5, .hash = 1}, b = {.key = 5, .hash = 1};
    mr_pool_set_remove(&s, 1, &a); /* empty: nothing */
    assert_true(mr_pool_set_add(&s, 1, &a));
    assert_true(mr_pool_set_add(&s, 1, &b));
    assert_ptr_equal(mr_pool_set_find(&s, 1, same_key, &k), &a);
    mr_pool_set_remove(&s, 1, &a);
    assert_ptr_equal(mr_pool_set_find(&s, 1, same_key, &k), &b);
    assert_null(mr_pool_set_find(&s, 2, same_key, &k));
    mr_pool_set_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(against_a_list),
        cmocka_unit_test(duplicates_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
