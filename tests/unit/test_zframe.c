/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_zframe.c - unit tests for net/zframe.c: frame headers, a round
 * trip through deflate and inflate (zlib and zstd), what is stored rather
 * than compressed, and the frames inflate must refuse (either algorithm).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>
#include <zstd.h>

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

static void round_trip(mr_zalgo a, int level)
{
    size_t n = 100000;
    uint8_t *src = malloc(n), *packed = malloc(mr_zframe_bound(a, n)), *back = malloc(n);
    for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)("row 12345, name-xyz\n"[i % 20]);
    size_t len = mr_zframe_deflate(a, src, n, packed, level);
    assert_true(len > 0 && len < n / 4);
    mr_zframe f = {.len = (uint32_t)len, .ulen = (uint32_t)n};
    assert_true(mr_zframe_inflate(a, &f, packed, back));
    assert_memory_equal(src, back, n);
    /* the other algorithm does not read it */
    assert_false(
        mr_zframe_inflate(a == MR_ZALGO_ZLIB ? MR_ZALGO_ZSTD : MR_ZALGO_ZLIB, &f, packed, back));
    free(src);
    free(packed);
    free(back);
}

static void test_round_trip(void **state)
{
    (void)state;
    round_trip(MR_ZALGO_ZLIB, 1);
}

/* A zstd frame at the lowest, the default and the highest level a client
 * may ask for. */
static void test_round_trip_zstd(void **state)
{
    (void)state;
    round_trip(MR_ZALGO_ZSTD, MR_ZSTD_LEVEL_MIN);
    round_trip(MR_ZALGO_ZSTD, 3);
    round_trip(MR_ZALGO_ZSTD, MR_ZSTD_LEVEL_MAX);
}

/* Short and incompressible payloads are stored: deflate says 0. */
static void test_stored(void **state)
{
    (void)state;
    uint8_t small[MR_ZFRAME_MIN_COMPRESS - 1], noise[4096], out[8192];
    memset(small, 'a', sizeof(small));
    assert_int_equal(mr_zframe_deflate(MR_ZALGO_ZLIB, small, sizeof(small), out, 6), 0);
    assert_int_equal(mr_zframe_deflate(MR_ZALGO_ZSTD, small, sizeof(small), out, 3), 0);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof(noise); i++) { /* xorshift: no repeats to find */
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        noise[i] = (uint8_t)x;
    }
    assert_true(mr_zframe_bound(MR_ZALGO_ZLIB, sizeof(noise)) <= sizeof(out));
    assert_true(mr_zframe_bound(MR_ZALGO_ZSTD, sizeof(noise)) <= sizeof(out));
    assert_int_equal(mr_zframe_deflate(MR_ZALGO_ZLIB, noise, sizeof(noise), out, 6), 0);
    assert_int_equal(mr_zframe_deflate(MR_ZALGO_ZSTD, noise, sizeof(noise), out, 3), 0);
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
    assert_false(mr_zframe_inflate(MR_ZALGO_ZLIB, &longer, packed, back));
    assert_false(mr_zframe_inflate(MR_ZALGO_ZLIB, &shorter, packed, back));
    /* garbage, and a stream cut short */
    uint8_t garbage[64];
    memset(garbage, 0x13, sizeof(garbage));
    mr_zframe g = {.len = sizeof(garbage), .ulen = 100};
    assert_false(mr_zframe_inflate(MR_ZALGO_ZLIB, &g, garbage, back));
    mr_zframe cut = {.len = (uint32_t)len - 4, .ulen = sizeof(plain)};
    assert_false(mr_zframe_inflate(MR_ZALGO_ZLIB, &cut, packed, back));
    mr_zframe whole = {.len = (uint32_t)len, .ulen = sizeof(plain)};
    assert_true(mr_zframe_inflate(MR_ZALGO_ZLIB, &whole, packed, back));
}

/* zstd frames inflate to exactly the declared size, or are refused:
 * declared longer or shorter, garbage, cut short, and a frame whose own
 * header says a larger content than the frame header (dst has no more
 * room than that). */
static void test_refused_zstd(void **state)
{
    (void)state;
    uint8_t plain[300], packed[400], back[600];
    memset(plain, 'q', sizeof(plain));
    size_t len = ZSTD_compress(packed, sizeof(packed), plain, sizeof(plain), 3);
    assert_false(ZSTD_isError(len));
    mr_zframe longer = {.len = (uint32_t)len, .ulen = 500};
    mr_zframe shorter = {.len = (uint32_t)len, .ulen = 200};
    assert_false(mr_zframe_inflate(MR_ZALGO_ZSTD, &longer, packed, back));
    assert_false(mr_zframe_inflate(MR_ZALGO_ZSTD, &shorter, packed, back));
    uint8_t garbage[64];
    memset(garbage, 0x13, sizeof(garbage));
    mr_zframe g = {.len = sizeof(garbage), .ulen = 100};
    assert_false(mr_zframe_inflate(MR_ZALGO_ZSTD, &g, garbage, back));
    mr_zframe cut = {.len = (uint32_t)len - 4, .ulen = sizeof(plain)};
    assert_false(mr_zframe_inflate(MR_ZALGO_ZSTD, &cut, packed, back));
    /* two zstd frames back to back: more than one frame's worth */
    memcpy(packed + len, packed, len);
    mr_zframe two = {.len = (uint32_t)(2 * len), .ulen = sizeof(plain)};
    assert_false(mr_zframe_inflate(MR_ZALGO_ZSTD, &two, packed, back));
    mr_zframe whole = {.len = (uint32_t)len, .ulen = sizeof(plain)};
    assert_true(mr_zframe_inflate(MR_ZALGO_ZSTD, &whole, packed, back));
    assert_memory_equal(plain, back, sizeof(plain));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header),          cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_round_trip_zstd), cmocka_unit_test(test_stored),
        cmocka_unit_test(test_refused),         cmocka_unit_test(test_refused_zstd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
