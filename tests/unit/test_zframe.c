/*
 * test_zframe.c - unit tests for net/zframe.c: frame headers, a round
 * trip through deflate and inflate, what is stored rather than compressed,
 * and the frames inflate must refuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "myrewrite/net/zframe.h"

static void test_header(void **state)
{
    (void)state;
    uint8_t h[MR_ZFRAME_HEADER];
    mr_zframe f = {.len = 0x123456, .seq = 7, .ulen = 0xfedcba}, g;
    mr_zframe_header_write(h, &f);
    const uint8_t want[] = {0x56, 0x34, 0x12, 7, 0xba, 0xdc, 0xfe};
    assert_memory_equal(h, want, sizeof(want));
    mr_zframe_header_read(h, &g);
    assert_int_equal(g.len, f.len);
    assert_int_equal(g.seq, 7);
    assert_int_equal(g.ulen, f.ulen);
}

static void test_round_trip(void **state)
{
    (void)state;
    size_t n = 100000;
    uint8_t *src = malloc(n), *packed = malloc(mr_zframe_bound(n)), *back = malloc(n);
    for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)("row 12345, name-xyz\n"[i % 20]);
    size_t len = mr_zframe_deflate(src, n, packed, 1);
    assert_true(len > 0 && len < n / 4);
    mr_zframe f = {.len = (uint32_t)len, .ulen = (uint32_t)n};
    assert_true(mr_zframe_inflate(&f, packed, back));
    assert_memory_equal(src, back, n);
    free(src);
    free(packed);
    free(back);
}

/* Short and incompressible payloads are stored: deflate says 0. */
static void test_stored(void **state)
{
    (void)state;
    uint8_t small[MR_ZFRAME_MIN_COMPRESS - 1], noise[4096], out[8192];
    memset(small, 'a', sizeof(small));
    assert_int_equal(mr_zframe_deflate(small, sizeof(small), out, 6), 0);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof(noise); i++) { /* xorshift: no repeats to find */
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        noise[i] = (uint8_t)x;
    }
    assert_true(mr_zframe_bound(sizeof(noise)) <= sizeof(out));
    assert_int_equal(mr_zframe_deflate(noise, sizeof(noise), out, 6), 0);
}

static void test_refused(void **state)
{
    (void)state;
    uint8_t plain[300], packed[400], back[600];
    memset(plain, 'q', sizeof(plain));
    uLongf len = sizeof(packed);
    assert_int_equal(compress2(packed, &len, plain, sizeof(plain), 6), Z_OK);
    /* declared longer or shorter than it inflates to */
    mr_zframe longer = {.len = (uint32_t)len, .ulen = 500};
    mr_zframe shorter = {.len = (uint32_t)len, .ulen = 200};
    assert_false(mr_zframe_inflate(&longer, packed, back));
    assert_false(mr_zframe_inflate(&shorter, packed, back));
    /* garbage, and a stream cut short */
    uint8_t garbage[64];
    memset(garbage, 0x13, sizeof(garbage));
    mr_zframe g = {.len = sizeof(garbage), .ulen = 100};
    assert_false(mr_zframe_inflate(&g, garbage, back));
    mr_zframe cut = {.len = (uint32_t)len - 4, .ulen = sizeof(plain)};
    assert_false(mr_zframe_inflate(&cut, packed, back));
    mr_zframe whole = {.len = (uint32_t)len, .ulen = sizeof(plain)};
    assert_true(mr_zframe_inflate(&whole, packed, back));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_stored),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
