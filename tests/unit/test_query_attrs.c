/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_query_attrs.c - the query-attribute block of a COM_QUERY under
 * CLIENT_QUERY_ATTRIBUTES (proto/query_attrs.c), on packets built by hand
 * as MySQL 8's client library sends them: no attributes, attributes of
 * several types and a NULL one, counts written in the longer lenenc forms,
 * every cut of a block, the refusals (parameter-set count, unbound types,
 * a server-side type); and the COM_QUERY built again with the block in
 * front of another text (mr_command_build2), split at 16 MiB as one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/proto/query_attrs.h"

static const char SQL[] = "SELECT * FROM t WHERE id = 1";

/* The argument of a COM_QUERY (after its command byte): three attributes
 * (a VARCHAR "trace" = "abc", a LONGLONG "n" = 42, a NULL STRING "z"),
 * then SQL. */
static void three_attrs(mr_buf *b, bool long_count)
{
    mr_buf_init(b);
    if (long_count) { /* 3 written as 0xfc 03 00: valid, if unusual */
        mr_buf_put_u8(b, 0xfc);
        mr_buf_put_u16(b, 3);
    } else {
        mr_buf_put_lenenc(b, 3);
    }
    mr_buf_put_lenenc(b, 1); /* parameter-set count */
    mr_buf_put_u8(b, 0x04);  /* null bitmap: the third */
    mr_buf_put_u8(b, 1);     /* new-params-bound */
    mr_buf_put_u16(b, 15);   /* VARCHAR */
    mr_buf_put_lenenc_str(b, "trace", 5);
    mr_buf_put_u16(b, 8); /* LONGLONG */
    mr_buf_put_lenenc_str(b, "n", 1);
    mr_buf_put_u16(b, 254); /* STRING */
    mr_buf_put_lenenc_str(b, "z", 1);
    mr_buf_put_lenenc_str(b, "abc", 3);
    uint8_t n[8] = {42};
    mr_buf_put(b, n, 8);
}

static void no_attributes(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put(&b, MR_QUERY_ATTRS_NONE, MR_QUERY_ATTRS_NONE_LEN);
    mr_buf_put(&b, SQL, sizeof SQL - 1);
    mr_query_attrs a;
    const char *why;
    assert_int_equal(mr_query_attrs_read(b.data, b.len, &a, &why), MR_OK);
    assert_null(why);
    assert_int_equal(a.count, 0);
    assert_int_equal(a.len, 2);
    assert_memory_equal(b.data + a.len, SQL, sizeof SQL - 1);
    mr_buf_free(&b);
}

static void typed_and_null_attributes(void **state)
{
    (void)state;
    for (int form = 0; form < 2; form++) {
        mr_buf b;
        three_attrs(&b, form == 1);
        size_t block = b.len;
        mr_buf_put(&b, SQL, sizeof SQL - 1);
        mr_query_attrs a;
        const char *why;
        assert_int_equal(mr_query_attrs_read(b.data, b.len, &a, &why), MR_OK);
        assert_int_equal(a.count, 3);
        assert_int_equal(a.len, block); /* the text the rules see starts right after */
        assert_memory_equal(b.data + a.len, SQL, sizeof SQL - 1);
        mr_buf_free(&b);
    }
}

/* The block alone: the text may be empty. Any shorter piece of it is cut. */
static void every_cut_is_malformed(void **state)
{
    (void)state;
    mr_buf b;
    three_attrs(&b, false);
    mr_query_attrs a;
    const char *why;
    assert_int_equal(mr_query_attrs_read(b.data, b.len, &a, &why), MR_OK);
    assert_int_equal(a.len, b.len);
    for (size_t n = 0; n < b.len; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees any read past them */
        memcpy(copy, b.data, n);
        assert_int_equal(mr_query_attrs_read(copy, n, &a, &why), MR_MALFORMED);
        assert_non_null(why);
        free(copy);
    }
    mr_buf_free(&b);
}

static void refusals(void **state)
{
    (void)state;
    mr_query_attrs a;
    const char *why;
    /* one attribute, parameter-set count 2 */
    const uint8_t sets[] = {1, 2, 0, 1, 1, 0, 0, 7};
    assert_int_equal(mr_query_attrs_read(sets, sizeof sets, &a, &why), MR_MALFORMED);
    assert_non_null(strstr(why, "parameter-set count"));
    /* new-params-bound 0: the values could not be read */
    const uint8_t unbound[] = {1, 1, 0, 0, 7, 'S'};
    assert_int_equal(mr_query_attrs_read(unbound, sizeof unbound, &a, &why), MR_MALFORMED);
    assert_non_null(strstr(why, "new-params-bound"));
    /* type 17 (TIMESTAMP2) is the server's own */
    const uint8_t server_type[] = {1, 1, 0, 1, 17, 0, 0, 4, 1, 2, 3, 4};
    assert_int_equal(mr_query_attrs_read(server_type, sizeof server_type, &a, &why), MR_MALFORMED);
    assert_non_null(strstr(why, "type"));
    /* a count no packet of this size can hold */
    const uint8_t huge[] = {0xfe, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0xff};
    assert_int_equal(mr_query_attrs_read(huge, sizeof huge, &a, &why), MR_MALFORMED);
    /* a NULL attribute needs no value; TIME (11) has a length byte */
    const uint8_t ok[] = {2, 1, 0x01, 1, 6, 0, 1, 'a', 11, 0, 0, 8, 0, 0, 0, 0, 0, 1, 2, 3, 'X'};
    assert_int_equal(mr_query_attrs_read(ok, sizeof ok, &a, &why), MR_OK);
    assert_int_equal(a.len, sizeof ok - 1);
}

/* The rewritten COM_QUERY keeps the client's block in front of its text. */
static void rebuilt_with_the_block(void **state)
{
    (void)state;
    mr_buf attrs, out;
    three_attrs(&attrs, false);
    mr_buf_init(&out);
    const char text[] = "SELECT 2";
    mr_command_build2(&out, MR_COM_QUERY, attrs.data, attrs.len, text, sizeof text - 1);
    assert_false(out.failed);
    size_t payload = 1 + attrs.len + sizeof text - 1;
    assert_int_equal(out.len, MR_PKT_HEADER + payload);
    assert_int_equal(out.data[0] | out.data[1] << 8 | out.data[2] << 16, payload);
    assert_int_equal(out.data[3], 0);
    assert_int_equal(out.data[4], MR_COM_QUERY);
    assert_memory_equal(out.data + 5, attrs.data, attrs.len);
    mr_query_attrs a;
    const char *why;
    assert_int_equal(mr_query_attrs_read(out.data + 5, payload - 1, &a, &why), MR_OK);
    assert_memory_equal(out.data + 5 + a.len, text, sizeof text - 1);
    mr_buf_free(&attrs);
    mr_buf_free(&out);
}

/* Across the 16 MiB packet boundary the pieces come out as one argument
 * would: the same bytes as mr_command_build of head and text joined. */
static void rebuilt_across_packets(void **state)
{
    (void)state;
    size_t head_len[] = {2, MR_PKT_MAX_PAYLOAD - 1, MR_PKT_MAX_PAYLOAD, MR_PKT_MAX_PAYLOAD + 5};
    size_t text_len = MR_PKT_MAX_PAYLOAD - 3;
    for (size_t i = 0; i < sizeof head_len / sizeof head_len[0]; i++) {
        size_t hn = head_len[i];
        uint8_t *joined = malloc(hn + text_len);
        assert_non_null(joined);
        for (size_t k = 0; k < hn + text_len; k++)
            joined[k] = (uint8_t)(k * 7 + (k >= hn));
        mr_buf one, two;
        mr_buf_init(&one);
        mr_buf_init(&two);
        mr_command_build(&one, MR_COM_QUERY, joined, hn + text_len);
        mr_command_build2(&two, MR_COM_QUERY, joined, hn, joined + hn, text_len);
        assert_false(one.failed || two.failed);
        assert_int_equal(one.len, two.len);
        assert_memory_equal(one.data, two.data, one.len);
        mr_buf_free(&one);
        mr_buf_free(&two);
        free(joined);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_attributes),          cmocka_unit_test(typed_and_null_attributes),
        cmocka_unit_test(every_cut_is_malformed), cmocka_unit_test(refusals),
        cmocka_unit_test(rebuilt_with_the_block), cmocka_unit_test(rebuilt_across_packets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
