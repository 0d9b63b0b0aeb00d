/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_stmt_rewrite.c - statement commands for another server statement id
 * (proto/stmt_rewrite.c): the id replaced in each command that names one,
 * kept types put into an execute (and a bulk execute) that binds none, and
 * not into one that binds its own; types for another count or form are
 * refused; a prepare-OK's head; a payload over 16 MiB split again. The
 * property: for random executes (classic and with query attributes), the
 * execute sent without types, rewritten with the types of an earlier one,
 * is byte for byte the execute that binds them, and the execute decoder
 * (proto/stmt_execute.c) reads the same values from it as from that one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/proto/stmt_execute.h"
#include "myrewrite/proto/stmt_rewrite.h"

/* The payload of the one packet in b (asserts there is exactly one). */
static const uint8_t *one_packet(const mr_buf *b, size_t *n)
{
    mr_pkt_header h;
    assert_false(b->failed);
    assert_int_equal(mr_pkt_header_read(b->data, b->len, &h), MR_OK);
    assert_int_equal(h.seq, 0);
    assert_int_equal(b->len, MR_PKT_HEADER + (size_t)h.len);
    *n = h.len;
    return b->data + MR_PKT_HEADER;
}

/* An execute of statement id: TINY 5, VAR_STRING "hey", NULL LONG. */
static void exec3(mr_buf *b, uint32_t id, bool bind)
{
    mr_buf_put_u8(b, MR_COM_STMT_EXECUTE);
    mr_buf_put_u32(b, id);
    mr_buf_put_u8(b, 0);
    mr_buf_put_u32(b, 1);
    mr_buf_put_u8(b, 0x04); /* the third is NULL */
    mr_buf_put_u8(b, bind);
    if (bind) {
        const uint8_t t[] = {MR_TYPE_TINY, 0, MR_TYPE_VAR_STRING, 0, MR_TYPE_LONG, 0};
        mr_buf_put(b, t, sizeof t);
    }
    mr_buf_put_u8(b, 5);
    mr_buf_put_lenenc_str(b, "hey", 3);
}

static void ids(void **state)
{
    (void)state;
    uint8_t p[] = {MR_COM_STMT_RESET, 1, 2, 3, 4};
    assert_int_equal(mr_stmt_id_get(p), 0x04030201u);
    mr_stmt_id_set(p, 0xa1b2c3d4u);
    assert_int_equal(mr_stmt_id_get(p), 0xa1b2c3d4u);
    assert_int_equal(p[1], 0xd4);
    assert_int_equal(p[0], MR_COM_STMT_RESET);
    const uint8_t named[] = {MR_COM_STMT_EXECUTE, MR_COM_STMT_SEND_LONG_DATA,
                             MR_COM_STMT_CLOSE,   MR_COM_STMT_RESET,
                             MR_COM_STMT_FETCH,   MR_COM_STMT_BULK_EXECUTE};
    for (size_t i = 0; i < sizeof named; i++)
        assert_true(mr_stmt_cmd_names_id(named[i]));
    assert_false(mr_stmt_cmd_names_id(MR_COM_STMT_PREPARE));
    assert_false(mr_stmt_cmd_names_id(MR_COM_QUERY));
}

static void prepare_ok(void **state)
{
    (void)state;
    const uint8_t full[] = {0, 7, 0, 0, 0, 3, 0, 2, 0, 0, 1, 0};
    mr_prepare_ok ok;
    assert_int_equal(mr_prepare_ok_parse(full, sizeof full, &ok), MR_OK);
    assert_int_equal(ok.stmt_id, 7);
    assert_int_equal(ok.columns, 3);
    assert_int_equal(ok.params, 2);
    assert_int_equal(ok.warnings, 1);
    assert_int_equal(mr_prepare_ok_parse(full, 9, &ok), MR_OK); /* no warnings sent */
    assert_int_equal(ok.warnings, 0);
    assert_int_equal(mr_prepare_ok_parse(full, 8, &ok), MR_NEED_MORE);
    const uint8_t err[] = {0xff, 0x28, 0x04, '#', '4', '2', '0', '0', '0', 'x'};
    assert_int_equal(mr_prepare_ok_parse(err, sizeof err, &ok), MR_MALFORMED);
    mr_buf b;
    mr_buf_init(&b);
    mr_stmt_prepare_build(&b, "SELECT ?", 8);
    size_t n;
    const uint8_t *p = one_packet(&b, &n);
    assert_int_equal(n, 9);
    assert_int_equal(p[0], MR_COM_STMT_PREPARE);
    assert_memory_equal(p + 1, "SELECT ?", 8);
    mr_buf_free(&b);
}

static void exec_types_put_in(void **state)
{
    (void)state;
    mr_buf bound, bare, out;
    mr_buf_init(&bound);
    mr_buf_init(&bare);
    mr_buf_init(&out);
    exec3(&bound, 11, true);
    exec3(&bare, 11, false);
    mr_stmt_types t;
    assert_null(mr_stmt_exec_types(bound.data, bound.len, 3, 0, &t));
    assert_int_equal(t.len, 6);
    assert_int_equal(t.count, 3);
    assert_false(t.named);
    bool put = true;
    /* it binds its own: only the id changes */
    assert_null(mr_stmt_exec_rewrite(&out, bound.data, bound.len, 99, 3, 0, &t, &put));
    assert_false(put);
    size_t n;
    const uint8_t *p = one_packet(&out, &n);
    assert_int_equal(n, bound.len);
    assert_int_equal(mr_stmt_id_get(p), 99);
    assert_memory_equal(p + 5, bound.data + 5, n - 5);
    /* it binds none: the kept ones go in, flag 1 */
    mr_buf_reset(&out);
    assert_null(mr_stmt_exec_rewrite(&out, bare.data, bare.len, 11, 3, 0, &t, &put));
    assert_true(put);
    p = one_packet(&out, &n);
    assert_int_equal(n, bound.len);
    assert_memory_equal(p, bound.data, n);
    /* no types kept: it goes as sent (the server answers as it would direct) */
    mr_buf_reset(&out);
    assert_null(mr_stmt_exec_rewrite(&out, bare.data, bare.len, 12, 3, 0, NULL, &put));
    assert_false(put);
    p = one_packet(&out, &n);
    assert_int_equal(n, bare.len);
    assert_memory_equal(p + 5, bare.data + 5, n - 5);
    mr_buf_free(&bound);
    mr_buf_free(&bare);
    mr_buf_free(&out);
}

static void exec_refused(void **state)
{
    (void)state;
    mr_buf bound, bare, out;
    mr_buf_init(&bound);
    mr_buf_init(&bare);
    mr_buf_init(&out);
    exec3(&bound, 1, true);
    exec3(&bare, 1, false);
    mr_stmt_types t;
    bool put = true;
    assert_null(mr_stmt_exec_types(bound.data, bound.len, 3, 0, &t));
    t.count = 4; /* kept for another number of values */
    assert_non_null(mr_stmt_exec_rewrite(&out, bare.data, bare.len, 2, 3, 0, &t, &put));
    t.count = 3;
    t.named = true; /* kept from an execute with query attributes */
    assert_non_null(mr_stmt_exec_rewrite(&out, bare.data, bare.len, 2, 3, 0, &t, &put));
    assert_false(put);
    assert_int_equal(out.len, 0);
    t.named = false;
    t.len = 4; /* a block that is not 3 types (found by fuzz_stmt_rewrite) */
    assert_non_null(mr_stmt_exec_rewrite(&out, bare.data, bare.len, 2, 3, 0, &t, &put));
    t.len = 6;
    /* with query attributes, each type's name must be whole */
    const uint8_t q[] = {MR_COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 9, 0, 0, 0};
    const uint8_t cut[] = {MR_TYPE_LONG, 0, 5, 'a'}, whole[] = {MR_TYPE_LONG, 0, 1, 'a'};
    mr_stmt_types qt = {.p = cut, .len = sizeof cut, .count = 1, .named = true};
    assert_non_null(mr_stmt_exec_rewrite(&out, q, sizeof q, 2, 1, MR_EXEC_QATTRS, &qt, &put));
    assert_int_equal(out.len, 0);
    qt.p = whole;
    assert_null(mr_stmt_exec_rewrite(&out, q, sizeof q, 2, 1, MR_EXEC_QATTRS, &qt, &put));
    assert_true(put);
    mr_buf_reset(&out);
    t.named = false;
    bare.data[11] = 2; /* a flag the server reads as "types follow" */
    assert_non_null(mr_stmt_exec_rewrite(&out, bare.data, bare.len, 2, 3, 0, &t, &put));
    assert_non_null(mr_stmt_exec_types(bare.data, bare.len, 3, 0, &t));
    assert_non_null(mr_stmt_exec_rewrite(&out, bare.data, 9, 2, 3, 0, NULL, &put));
    assert_non_null(mr_stmt_exec_rewrite(&out, bound.data, 12, 2, 3, 0, NULL, &put));
    bound.data[0] = MR_COM_STMT_FETCH;
    assert_non_null(mr_stmt_exec_rewrite(&out, bound.data, bound.len, 2, 3, 0, NULL, &put));
    assert_int_equal(out.len, 0);
    mr_buf_free(&bound);
    mr_buf_free(&bare);
    mr_buf_free(&out);
}

static void other_commands(void **state)
{
    (void)state;
    mr_buf out;
    mr_buf_init(&out);
    const uint8_t long_data[] = {MR_COM_STMT_SEND_LONG_DATA, 1, 0, 0, 0, 2, 0, 'a', 'b'};
    const uint8_t fetch[] = {MR_COM_STMT_FETCH, 1, 0, 0, 0, 10, 0, 0, 0};
    const uint8_t close_[] = {MR_COM_STMT_CLOSE, 1, 0, 0, 0};
    const struct {
        const uint8_t *p;
        size_t n;
    } cmds[] = {{long_data, sizeof long_data}, {fetch, sizeof fetch}, {close_, sizeof close_}};
    for (size_t i = 0; i < 3; i++) {
        mr_buf_reset(&out);
        assert_null(mr_stmt_cmd_rewrite(&out, cmds[i].p, cmds[i].n, 0x01020304));
        size_t n;
        const uint8_t *p = one_packet(&out, &n);
        assert_int_equal(n, cmds[i].n);
        assert_int_equal(p[0], cmds[i].p[0]);
        assert_int_equal(mr_stmt_id_get(p), 0x01020304);
        assert_memory_equal(p + 5, cmds[i].p + 5, n - 5);
    }
    const uint8_t query[] = {MR_COM_QUERY, 'S', 'E', 'L', 'E'};
    assert_non_null(mr_stmt_cmd_rewrite(&out, query, sizeof query, 1));
    assert_non_null(mr_stmt_cmd_rewrite(&out, close_, 4, 1));
    mr_buf_free(&out);
}

/* A bulk execute of a 2-parameter statement, two rows, with or without types. */
static void bulk2(mr_buf *b, bool types, uint16_t flags)
{
    mr_buf_put_u8(b, MR_COM_STMT_BULK_EXECUTE);
    mr_buf_put_u32(b, 5);
    mr_buf_put_u16(b, (uint16_t)(flags | (types ? MR_BULK_SEND_TYPES : 0)));
    if (types) {
        const uint8_t t[] = {MR_TYPE_LONG, 0, MR_TYPE_VAR_STRING, 0};
        mr_buf_put(b, t, sizeof t);
    }
    for (int row = 0; row < 2; row++) {
        mr_buf_put_u8(b, 0);
        mr_buf_put_u32(b, (uint32_t)row);
        mr_buf_put_u8(b, 1); /* NULL */
    }
}

static void bulk(void **state)
{
    (void)state;
    mr_buf typed, bare, out;
    mr_buf_init(&typed);
    mr_buf_init(&bare);
    mr_buf_init(&out);
    bulk2(&typed, true, 64);
    bulk2(&bare, false, 64);
    mr_stmt_types t, none;
    assert_null(mr_stmt_bulk_types(typed.data, typed.len, 2, &t));
    assert_int_equal(t.len, 4);
    assert_null(mr_stmt_bulk_types(bare.data, bare.len, 2, &none));
    assert_int_equal(none.len, 0);
    assert_non_null(mr_stmt_bulk_types(typed.data, 9, 2, &t)); /* types cut short */
    assert_null(mr_stmt_bulk_types(typed.data, typed.len, 2, &t));
    bool put = false;
    assert_null(mr_stmt_bulk_rewrite(&out, bare.data, bare.len, 5, 2, &t, &put));
    assert_true(put);
    size_t n;
    const uint8_t *p = one_packet(&out, &n);
    assert_int_equal(n, typed.len);
    assert_memory_equal(p, typed.data, n); /* flags 64|128, the types, the rows */
    mr_buf_reset(&out);
    assert_null(mr_stmt_bulk_rewrite(&out, typed.data, typed.len, 6, 2, &t, &put));
    assert_false(put);
    p = one_packet(&out, &n);
    assert_int_equal(mr_stmt_id_get(p), 6);
    assert_memory_equal(p + 5, typed.data + 5, n - 5);
    t.named = true;
    assert_non_null(mr_stmt_bulk_rewrite(&out, bare.data, bare.len, 5, 2, &t, &put));
    t.named = false;
    t.count = 3;
    assert_non_null(mr_stmt_bulk_rewrite(&out, bare.data, bare.len, 5, 2, &t, &put));
    assert_non_null(mr_stmt_bulk_rewrite(&out, bare.data, 6, 5, 2, &t, &put));
    mr_buf_free(&typed);
    mr_buf_free(&bare);
    mr_buf_free(&out);
}

/* ---- the property: rewritten without types == sent with them ---- */

static uint32_t rnd_state = 12345;
static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return rnd_state >> 8;
}

static const uint8_t TYPES[] = {MR_TYPE_TINY,     MR_TYPE_SHORT,    MR_TYPE_LONG,
                                MR_TYPE_LONGLONG, MR_TYPE_DOUBLE,   MR_TYPE_VAR_STRING,
                                MR_TYPE_BLOB,     MR_TYPE_DATETIME, MR_TYPE_NEWDECIMAL};

static void put_value(mr_buf *b, uint8_t type)
{
    static const uint8_t width[] = {[MR_TYPE_TINY] = 1,
                                    [MR_TYPE_SHORT] = 2,
                                    [MR_TYPE_LONG] = 4,
                                    [MR_TYPE_LONGLONG] = 8,
                                    [MR_TYPE_DOUBLE] = 8};
    if (type == MR_TYPE_DATETIME) {
        const uint8_t d[] = {7, 0xe8, 0x07, 2, 29, 13, 14, 15};
        mr_buf_put(b, d, sizeof d);
    } else if (type < sizeof width && width[type]) {
        for (unsigned i = 0; i < width[type]; i++)
            mr_buf_put_u8(b, (uint8_t)rnd());
        if (type == MR_TYPE_DOUBLE) { /* a finite double: its text is compared */
            b->data[b->len - 1] = 0x40;
        }
    } else {
        char s[300];
        size_t len = rnd() % (sizeof s);
        for (size_t i = 0; i < len; i++)
            s[i] = (char)('0' + rnd() % 10);
        mr_buf_put_lenenc_str(b, s, len);
    }
}

/* A random execute of nparams parameters (plus attrs query attributes
 * when named), binding its types or not; the same random values for the
 * same seed. */
static void random_exec(mr_buf *b, uint32_t seed, unsigned nparams, unsigned attrs, bool named,
                        bool bind)
{
    rnd_state = seed;
    unsigned count = nparams + attrs;
    uint8_t types[2 * 80], nulls[10] = {0};
    for (unsigned i = 0; i < count; i++) {
        types[2 * i] = TYPES[rnd() % sizeof TYPES];
        types[2 * i + 1] = (rnd() & 1) ? 0x80 : 0;
        if (rnd() % 5 == 0)
            nulls[i / 8] |= (uint8_t)(1u << (i % 8));
    }
    mr_buf_put_u8(b, MR_COM_STMT_EXECUTE);
    mr_buf_put_u32(b, seed);
    mr_buf_put_u8(b, named ? MR_EXEC_PARAMETER_COUNT_AVAILABLE : 0);
    mr_buf_put_u32(b, 1);
    if (named)
        mr_buf_put_lenenc(b, count);
    mr_buf_put(b, nulls, (count + 7) / 8);
    mr_buf_put_u8(b, bind);
    for (unsigned i = 0; bind && i < count; i++) {
        mr_buf_put(b, types + 2 * i, 2);
        if (named)
            mr_buf_put_lenenc_str(b, i < nparams ? "" : "attr", i < nparams ? 0 : 4);
    }
    for (unsigned i = 0; i < count; i++)
        if (!(nulls[i / 8] & (1u << (i % 8))))
            put_value(b, types[2 * i]);
}

static void same_values(const uint8_t *a, size_t an, const uint8_t *b, size_t bn, unsigned nparams,
                        unsigned form)
{
    mr_exec_param va[80], vb[80];
    char ba[80][32], bb[80][32];
    uint8_t ta[160], tb[160];
    bool ha = false, hb = false;
    assert_null(mr_exec_params_read(a + MR_EXEC_HEADER, an - MR_EXEC_HEADER, nparams, nparams, ta,
                                    &ha, va, ba, form));
    assert_null(mr_exec_params_read(b + MR_EXEC_HEADER, bn - MR_EXEC_HEADER, nparams, nparams, tb,
                                    &hb, vb, bb, form));
    assert_memory_equal(ta, tb, 2 * nparams);
    for (unsigned i = 0; i < nparams; i++) {
        assert_int_equal(va[i].kind, vb[i].kind);
        if (va[i].kind == MR_EXEC_PARAM_INT)
            assert_int_equal(va[i].n, vb[i].n);
        if (va[i].kind == MR_EXEC_PARAM_TEXT) {
            assert_int_equal(va[i].len, vb[i].len);
            assert_memory_equal(va[i].p, vb[i].p, va[i].len);
        }
    }
}

static void property_one(uint32_t seed, bool named)
{
    rnd_state = seed ^ 0x9e3779b9u;
    unsigned nparams = 1 + rnd() % 70, attrs = named ? rnd() % 4 : 0;
    mr_buf bound, bare, out;
    mr_buf_init(&bound);
    mr_buf_init(&bare);
    mr_buf_init(&out);
    random_exec(&bound, seed, nparams, attrs, named, true);
    random_exec(&bare, seed, nparams, attrs, named, false);
    unsigned form = mr_exec_form(named, bound.data);
    mr_stmt_types t;
    assert_null(mr_stmt_exec_types(bound.data, bound.len, nparams, form, &t));
    assert_int_equal(t.count, nparams + attrs);
    bool put = false;
    assert_null(mr_stmt_exec_rewrite(&out, bare.data, bare.len, seed, nparams, form, &t, &put));
    assert_true(put);
    size_t n;
    const uint8_t *p = one_packet(&out, &n);
    assert_int_equal(n, bound.len);
    assert_memory_equal(p, bound.data, n);
    same_values(p, n, bound.data, bound.len, nparams, form);
    /* the id alone, on the one that binds them */
    mr_buf_reset(&out);
    assert_null(mr_stmt_exec_rewrite(&out, bound.data, bound.len, ~seed, nparams, form, &t, &put));
    assert_false(put);
    p = one_packet(&out, &n);
    assert_int_equal(mr_stmt_id_get(p), ~seed);
    same_values(p, n, bound.data, bound.len, nparams, form);
    mr_buf_free(&bound);
    mr_buf_free(&bare);
    mr_buf_free(&out);
}

static void property_rewrite_then_decode(void **state)
{
    (void)state;
    for (uint32_t seed = 1; seed <= 400; seed++)
        property_one(seed, false);
    for (uint32_t seed = 1; seed <= 400; seed++)
        property_one(seed, true);
}

/* An execute of 16 MiB and more leaves in two packets, as the client's did. */
static void over_16_mib(void **state)
{
    (void)state;
    mr_buf big, out;
    mr_buf_init(&big);
    mr_buf_init(&out);
    size_t vlen = MR_PKT_MAX_PAYLOAD + 100;
    uint8_t *s = malloc(vlen);
    assert_non_null(s);
    memset(s, 'x', vlen);
    mr_buf_put_u8(&big, MR_COM_STMT_EXECUTE);
    mr_buf_put_u32(&big, 1);
    mr_buf_put_u8(&big, 0);
    mr_buf_put_u32(&big, 1);
    mr_buf_put_u8(&big, 0); /* no NULL */
    mr_buf_put_u8(&big, 0); /* no types */
    mr_buf_put_lenenc_str(&big, s, vlen);
    free(s);
    const uint8_t tb[] = {MR_TYPE_BLOB, 0};
    mr_stmt_types t = {.p = tb, .len = 2, .count = 1};
    bool put = false;
    assert_null(mr_stmt_exec_rewrite(&out, big.data, big.len, 77, 1, 0, &t, &put));
    assert_true(put);
    mr_pkt_header h1, h2;
    assert_int_equal(mr_pkt_header_read(out.data, out.len, &h1), MR_OK);
    assert_int_equal(h1.len, MR_PKT_MAX_PAYLOAD);
    const uint8_t *second = out.data + MR_PKT_HEADER + h1.len;
    assert_int_equal(mr_pkt_header_read(second, 4, &h2), MR_OK);
    assert_int_equal(h2.seq, 1);
    assert_int_equal((size_t)h1.len + h2.len, big.len + 2);
    assert_int_equal(out.len, 2 * MR_PKT_HEADER + big.len + 2);
    assert_int_equal(mr_stmt_id_get(out.data + MR_PKT_HEADER), 77);
    assert_int_equal(out.data[MR_PKT_HEADER + 11], 1);
    assert_memory_equal(out.data + MR_PKT_HEADER + 12, tb, 2);
    mr_buf_free(&big);
    mr_buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids),
        cmocka_unit_test(prepare_ok),
        cmocka_unit_test(exec_types_put_in),
        cmocka_unit_test(exec_refused),
        cmocka_unit_test(other_commands),
        cmocka_unit_test(bulk),
        cmocka_unit_test(property_rewrite_then_decode),
        cmocka_unit_test(over_16_mib),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
