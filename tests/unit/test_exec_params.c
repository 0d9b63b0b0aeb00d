/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_exec_params.c - decoding COM_STMT_EXECUTE parameters from hand-built
 * packets: types bound and reused, NULLs, integers of each width and sign,
 * strings, doubles and dates written out, only the leading ones when asked,
 * and packets cut short; under CLIENT_QUERY_ATTRIBUTES (MySQL 8) the
 * parameter count, the names after the types and the attributes after the
 * statement's parameters, and the layout the prepared-statement guard uses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/proto/stmt_execute.h"

typedef struct pkt {
    uint8_t b[256];
    size_t n;
} pkt;

static void put(pkt *p, const void *v, size_t n)
{
    memcpy(p->b + p->n, v, n);
    p->n += n;
}

static void put1(pkt *p, uint8_t v) { put(p, &v, 1); }

/* Three parameters: LONGLONG -7, VAR_STRING "abc", and a NULL TINY. */
static pkt three(bool bind_types)
{
    pkt p = {.n = 0};
    put1(&p, 0x04); /* null bitmap: the third */
    put1(&p, bind_types ? 1 : 0);
    if (bind_types) {
        const uint8_t types[] = {8, 0, 253, 0, 1, 0};
        put(&p, types, sizeof types);
    }
    int64_t v = -7;
    put(&p, &v, 8); /* little-endian hosts, as the decoder */
    put1(&p, 3);
    put(&p, "abc", 3);
    return p;
}

static void bound_and_reused(void **state)
{
    (void)state;
    uint8_t types[6];
    bool have = false;
    mr_exec_param v[3];
    char bufs[3][32];
    pkt p = three(false);
    assert_string_equal(mr_exec_params_read(p.b, p.n, 3, 3, types, &have, v, bufs, 0),
                        "COM_STMT_EXECUTE bound no parameter types");
    p = three(true);
    assert_null(mr_exec_params_read(p.b, p.n, 3, 3, types, &have, v, bufs, 0));
    assert_true(have);
    assert_int_equal(v[0].kind, MR_EXEC_PARAM_INT);
    assert_int_equal(v[0].n, -7);
    assert_int_equal(v[1].kind, MR_EXEC_PARAM_TEXT);
    assert_int_equal(v[1].len, 3);
    assert_memory_equal(v[1].p, "abc", 3);
    assert_int_equal(v[2].kind, MR_EXEC_PARAM_NULL);
    p = three(false); /* the types of the execute before */
    memset(v, 0xff, sizeof v);
    assert_null(mr_exec_params_read(p.b, p.n, 3, 3, types, &have, v, bufs, 0));
    assert_int_equal(v[0].n, -7);
    assert_int_equal(v[2].kind, MR_EXEC_PARAM_NULL);
}

static void leading_only_and_short(void **state)
{
    (void)state;
    uint8_t types[6];
    bool have = false;
    mr_exec_param v[3];
    char bufs[3][32];
    pkt p = three(true);
    /* the first alone: the rest is not read, so a cut after it does not matter */
    assert_null(mr_exec_params_read(p.b, p.n - 4, 3, 1, types, &have, v, bufs, 0));
    assert_int_equal(v[0].n, -7);
    assert_non_null(mr_exec_params_read(p.b, p.n - 4, 3, 3, types, &have, v, bufs, 0));
    assert_non_null(mr_exec_params_read(p.b, 1, 3, 1, types, &have, v, bufs, 0));
    assert_non_null(mr_exec_params_read(p.b, 5, 3, 1, types, &have, v, bufs, 0));
}

static void widths_and_text(void **state)
{
    (void)state;
    uint8_t types[10];
    bool have = false;
    mr_exec_param v[5];
    char bufs[5][32];
    pkt p = {.n = 0};
    put1(&p, 0);
    put1(&p, 1);
    /* TINY signed, SHORT unsigned, LONG signed, LONGLONG unsigned > INT64_MAX, DOUBLE */
    const uint8_t t[] = {1, 0, 2, 0x80, 3, 0, 8, 0x80, 5, 0};
    put(&p, t, sizeof t);
    put1(&p, 0xfe);                 /* -2 */
    put(&p, "\xff\xff", 2);         /* 65535 */
    put(&p, "\x00\x00\x00\x80", 4); /* INT32_MIN */
    put(&p, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
    double d = 2.5;
    put(&p, &d, 8);
    assert_null(mr_exec_params_read(p.b, p.n, 5, 5, types, &have, v, bufs, 0));
    assert_int_equal(v[0].n, -2);
    assert_int_equal(v[1].n, 65535);
    assert_int_equal(v[2].n, INT32_MIN);
    assert_int_equal(v[3].kind, MR_EXEC_PARAM_TEXT);
    assert_memory_equal(v[3].p, "18446744073709551615", v[3].len);
    assert_int_equal(v[4].kind, MR_EXEC_PARAM_TEXT);
    assert_memory_equal(v[4].p, "2.5", v[4].len);
}

/* A date's fields come from the client as bytes: out of range they would
 * write more than the 32-byte buffer holds ("65535-255-255 255:255:255.
 * 4294967295"), so such a date is refused. The largest valid one fits. */
static void dates_out_of_range_are_refused(void **state)
{
    (void)state;
    uint8_t types[2];
    bool have = false;
    mr_exec_param v[1];
    char bufs[1][32];
    pkt p = {.n = 0};
    put1(&p, 0);
    put1(&p, 1);
    put(&p, "\x0c\x00", 2); /* DATETIME */
    put1(&p, 11);
    put(&p, "\xff\xff\xff\xff\xff\xff\xff", 7); /* year 65535, 255 for the rest */
    put(&p, "\xff\xff\xff\xff", 4);             /* microseconds 4294967295 */
    assert_non_null(mr_exec_params_read(p.b, p.n, 1, 1, types, &have, v, bufs, 0));
    pkt q = {.n = 0};
    put1(&q, 0);
    put1(&q, 1);
    put(&q, "\x0c\x00", 2);
    put1(&q, 11);
    put(&q, "\x0f\x27\x0c\x1f\x17\x3b\x3b", 7); /* 9999-12-31 23:59:59 */
    put(&q, "\x3f\x42\x0f\x00", 4);             /* .999999 */
    assert_null(mr_exec_params_read(q.b, q.n, 1, 1, types, &have, v, bufs, 0));
    assert_int_equal(v[0].kind, MR_EXEC_PARAM_TEXT);
    assert_int_equal(v[0].len, 26);
    assert_memory_equal(v[0].p, "9999-12-31 23:59:59.999999", 26);
}

/* The execute of a statement with 2 `?` (LONGLONG -7, VAR_STRING "abc")
 * and one query attribute ("trace" = "xyz") under CLIENT_QUERY_ATTRIBUTES:
 * a count of 3, names after the types. The flags byte is p.b[0] here (the
 * form is built from a payload, whose flags are at 5). */
static pkt with_attribute(bool bind_types)
{
    pkt p = {.n = 0};
    put1(&p, 3);    /* parameter_count */
    put1(&p, 0x00); /* null bitmap */
    put1(&p, bind_types ? 1 : 0);
    if (bind_types) {
        put(&p, "\x08\x00\x00", 3);      /* LONGLONG, no name */
        put(&p, "\xfd\x00\x00", 3);      /* VAR_STRING, no name */
        put(&p, "\xfd\x00\x05trace", 8); /* the attribute */
    }
    int64_t v = -7;
    put(&p, &v, 8);
    put(&p,
        "\x03"
        "abc",
        4);
    put(&p,
        "\x03"
        "xyz",
        4);
    return p;
}

static unsigned qform(uint8_t flags)
{
    uint8_t payload[MR_EXEC_HEADER] = {0x17, 1, 0, 0, 0, flags, 1, 0, 0, 0};
    return mr_exec_form(true, payload);
}

static void query_attributes_after_the_parameters(void **state)
{
    (void)state;
    uint8_t types[4];
    bool have = false;
    mr_exec_param v[2];
    char bufs[2][32];
    pkt p = with_attribute(true);
    assert_null(mr_exec_params_read(p.b, p.n, 2, 2, types, &have, v, bufs, qform(0)));
    assert_int_equal(v[0].kind, MR_EXEC_PARAM_INT);
    assert_int_equal(v[0].n, -7);
    assert_int_equal(v[1].kind, MR_EXEC_PARAM_TEXT);
    assert_memory_equal(v[1].p, "abc", 3);
    assert_memory_equal(types, "\x08\x00\xfd\x00", 4); /* the statement's types, names left */
    p = with_attribute(false);                         /* types of the execute before */
    memset(v, 0, sizeof v);
    assert_null(mr_exec_params_read(p.b, p.n, 2, 2, types, &have, v, bufs, qform(0)));
    assert_int_equal(v[0].n, -7);
    assert_memory_equal(v[1].p, "abc", 3);
    /* read in the classic form, the count is taken for the bitmap: not -7 */
    p = with_attribute(true);
    have = false;
    const char *e = mr_exec_params_read(p.b, p.n, 2, 2, types, &have, v, bufs, 0);
    assert_true(e != NULL || v[0].kind != MR_EXEC_PARAM_INT || v[0].n != -7);
}

static void query_attribute_layout(void **state)
{
    (void)state;
    mr_exec_layout lay;
    pkt p = with_attribute(true);
    assert_null(mr_exec_layout_read(p.b, p.n, 2, qform(0), &lay));
    assert_int_equal(lay.count, 3);
    assert_int_equal(lay.nulls, 1);
    assert_int_equal(lay.flag, 2);
    assert_int_equal(lay.types, 3);
    assert_int_equal(lay.types_len, 14);
    assert_int_equal(lay.values, 17);
    p = with_attribute(false);
    assert_null(mr_exec_layout_read(p.b, p.n, 2, qform(0), &lay));
    assert_int_equal(lay.types_len, 0);
    assert_int_equal(lay.values, 3);
    /* the classic form: the bitmap first, as the guard has always read it */
    pkt c = three(true);
    assert_null(mr_exec_layout_read(c.b, c.n, 3, 0, &lay));
    assert_int_equal(lay.count, 3);
    assert_int_equal(lay.nulls, 0);
    assert_int_equal(lay.flag, 1);
    assert_int_equal(lay.types_len, 6);
    /* fewer values than the statement has `?` */
    pkt few = {.n = 0};
    put(&few, "\x01\x00\x01\x08\x00\x00", 6);
    assert_non_null(mr_exec_layout_read(few.b, few.n, 2, qform(0), &lay));
    /* no `?`: a count only when PARAMETER_COUNT_AVAILABLE says so */
    pkt attr_only = {.n = 0};
    put(&attr_only, "\x01\x00\x01\xfd\x00\x01k\x01v", 9);
    assert_null(mr_exec_layout_read(attr_only.b, attr_only.n, 0, qform(0), &lay));
    assert_int_equal(lay.count, 0);
    assert_null(mr_exec_layout_read(attr_only.b, attr_only.n, 0,
                                    qform(MR_EXEC_PARAMETER_COUNT_AVAILABLE), &lay));
    assert_int_equal(lay.count, 1);
    assert_int_equal(lay.values, 7);
    /* cut anywhere in the types: refused */
    for (size_t n = 0; n < 7; n++)
        assert_non_null(
            mr_exec_layout_read(attr_only.b, n, 0, qform(MR_EXEC_PARAMETER_COUNT_AVAILABLE), &lay));
}

static void value_lengths(void **state)
{
    (void)state;
    size_t len;
    const uint8_t eight[8] = {0};
    assert_true(mr_exec_value_len(1, eight, 8, &len) && len == 1);
    assert_true(mr_exec_value_len(13, eight, 8, &len) && len == 2);
    assert_true(mr_exec_value_len(4, eight, 8, &len) && len == 4);
    assert_true(mr_exec_value_len(5, eight, 8, &len) && len == 8);
    assert_false(mr_exec_value_len(8, eight, 7, &len));
    assert_true(mr_exec_value_len(6, eight, 0, &len) && len == 0);
    const uint8_t time[] = {8, 1, 0, 0, 0, 2, 3, 4, 5};
    assert_true(mr_exec_value_len(11, time, sizeof time, &len) && len == 9);
    assert_false(mr_exec_value_len(11, time, sizeof time - 1, &len));
    const uint8_t str[] = {0xfc, 2, 0, 'h', 'i'};
    assert_true(mr_exec_value_len(253, str, sizeof str, &len) && len == 5);
    assert_true(mr_exec_value_len(255, str, sizeof str, &len) && len == 5); /* GEOMETRY */
    assert_false(mr_exec_value_len(253, str, 4, &len));
    assert_false(mr_exec_value_len(17, str, sizeof str, &len)); /* TIMESTAMP2: server-side */
}

/* The LIMIT offset the guard reads: integers as MariaDB reads them, digits
 * only for texts, nothing else. */
static void limit_values(void **state)
{
    (void)state;
    uint64_t off = 7;
    mr_exec_param v = {.kind = MR_EXEC_PARAM_INT, .n = -1};
    assert_null(mr_exec_limit_value(1, &v, &off));
    assert_true(off == UINT64_MAX);                     /* -1 is read as unsigned */
    assert_non_null(mr_exec_limit_value(9, &v, &off));  /* INT24 */
    assert_non_null(mr_exec_limit_value(13, &v, &off)); /* YEAR */
    v = (mr_exec_param){.kind = MR_EXEC_PARAM_NULL};
    assert_null(mr_exec_limit_value(8, &v, &off));
    assert_true(off == 0);
    static const struct {
        uint8_t type;
        const char *text;
        bool read;
        uint64_t off;
    } texts[] = {
        {253, "900", true, 900},
        {253, "0900", true, 900},
        {254, "18446744073709551615", true, UINT64_MAX},
        {252, "18446744073709551616", true, UINT64_MAX},
        {246, "99999999999999999999999", true, UINT64_MAX},
        {8, "18446744073709551615", true, UINT64_MAX}, /* unsigned LONGLONG written out */
        {5, "90", true, 90},                           /* a whole DOUBLE written out */
        {253, " 900", false, 0},
        {253, "+900", false, 0},
        {253, "900.0", false, 0},
        {246, "900.5", false, 0},
        {253, "1e3", false, 0},
        {253, "", false, 0},
        {253, "-0", false, 0},
        {5, "90.5", false, 0},
        {5, "1.0000000000000000e+30", false, 0},
        {12, "2024-01-02 03:04:05", false, 0},
        {10, "2024-01-02", false, 0},
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        v = (mr_exec_param){
            .kind = MR_EXEC_PARAM_TEXT, .p = texts[i].text, .len = (uint32_t)strlen(texts[i].text)};
        off = 7;
        const char *why = mr_exec_limit_value(texts[i].type, &v, &off);
        assert_true((why == NULL) == texts[i].read);
        if (texts[i].read)
            assert_true(off == texts[i].off);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bound_and_reused),
        cmocka_unit_test(leading_only_and_short),
        cmocka_unit_test(widths_and_text),
        cmocka_unit_test(dates_out_of_range_are_refused),
        cmocka_unit_test(query_attributes_after_the_parameters),
        cmocka_unit_test(query_attribute_layout),
        cmocka_unit_test(value_lengths),
        cmocka_unit_test(limit_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
