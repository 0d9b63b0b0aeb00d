/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_session_track.c - the session state of OK packets
 * (proto/session_track.h), on packets mariadbd 10.11 sent: each tracker
 * type, the tracked values kept, OKs without state, and malformed blocks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/proto/session_track.h"

#define CAPS (MR_CAP_SESSION_TRACK | MR_CAP_PROTOCOL_41)

/* Bytes of a hex string into buf; returns the count. */
static size_t unhex(const char *h, uint8_t *buf)
{
    size_t n = 0;
    for (; h[0] && h[1]; h += 2) {
        unsigned v = 0;
        for (int i = 0; i < 2; i++)
            v = v * 16 + (unsigned)(h[i] <= '9' ? h[i] - '0' : h[i] - 'a' + 10);
        buf[n++] = (uint8_t)v;
    }
    return n;
}

/* Applies the session state of the OK packet `hex` to st. */
static void apply_ok(mr_session_state *st, const char *hex)
{
    uint8_t p[256];
    size_t n = unhex(hex, p);
    const uint8_t *state;
    size_t len;
    assert_int_equal(mr_ok_session_state(p, n, CAPS, &state, &len), MR_OK);
    assert_true(len > 0);
    assert_int_equal(mr_sst_apply(st, state, len), MR_OK);
}

/* SET sql_mode='ANSI_QUOTES'; SET NAMES gbk: two OKs, a variable each. */
static void test_system_variables(void **state)
{
    (void)state;
    mr_session_state st = {0};
    apply_ok(&st, "0000000ac00000001a00150873716c5f6d6f64650b414e53495f51554f544553020131");
    assert_true(st.sql_mode_v.known);
    assert_string_equal(st.sql_mode, "ANSI_QUOTES");
    assert_int_equal(st.state_changes, 1);
    assert_false(st.charset_client_v.known);
    apply_ok(&st, "00000002c00000001e0019146368617261637465725f7365745f636c69656e740367626b020131");
    assert_string_equal(st.charset_client, "gbk");
    assert_int_equal(st.state_changes, 2);
    assert_true(mr_sql_mode_has(st.sql_mode, st.sql_mode_v.len, "ansi_quotes"));
    assert_false(mr_sql_mode_has(st.sql_mode, st.sql_mode_v.len, "ANSI"));
    assert_true(
        mr_sql_mode_has("STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES", 40, "NO_BACKSLASH_ESCAPES"));
    assert_false(mr_sql_mode_has("NO_BACKSLASH_ESCAPESX", 21, "NO_BACKSLASH_ESCAPES"));
}

/* USE test; START TRANSACTION READ ONLY; COMMIT. */
static void test_schema_and_transaction(void **state)
{
    (void)state;
    mr_session_state st = {0};
    apply_ok(&st, "00000002c00000000a01050474657374020131");
    assert_string_equal(st.schema, "test");
    apply_ok(&st, "00000003e00000002a050908545f5f5f5f5f5f5f041d1c5354415254205452414e5341435449"
                  "4f4e2052454144204f4e4c593b");
    assert_string_equal(st.trx_state, "T_______");
    assert_string_equal(st.trx_characteristics, "START TRANSACTION READ ONLY;");
    apply_ok(&st, "00000002c00000000e0509085f5f5f5f5f5f5f5f040100");
    assert_string_equal(st.trx_state, "________");
    assert_true(st.trx_characteristics_v.known);
    assert_int_equal(st.trx_characteristics_v.len, 0);
}

/* Every entry of a block, in order, with its parts. */
static void test_iterator(void **state)
{
    (void)state;
    uint8_t p[256];
    size_t n = unhex("0000000ac00000001a00150873716c5f6d6f64650b414e53495f51554f544553020131", p);
    const uint8_t *s;
    size_t len;
    assert_int_equal(mr_ok_session_state(p, n, CAPS, &s, &len), MR_OK);
    mr_sst_iter it;
    mr_sst_entry e;
    mr_sst_iter_init(&it, s, len);
    assert_int_equal(mr_sst_next(&it, &e), MR_OK);
    assert_int_equal(e.type, MR_SST_SYSTEM_VARIABLES);
    assert_int_equal(e.name_len, 8);
    assert_memory_equal(e.name, "sql_mode", 8);
    assert_int_equal(e.value_len, 11);
    assert_int_equal(mr_sst_next(&it, &e), MR_OK);
    assert_int_equal(e.type, MR_SST_STATE_CHANGE);
    assert_memory_equal(e.value, "1", 1);
    assert_int_equal(mr_sst_next(&it, &e), MR_NEED_MORE);
    /* a GTID entry: encoding byte, then the set; an unknown type is given raw */
    const uint8_t gtid[] = {3, 7, 0, 5, '0', '-', '1', '-', '5', 9, 2, 'x', 'y'};
    mr_sst_iter_init(&it, gtid, sizeof gtid);
    assert_int_equal(mr_sst_next(&it, &e), MR_OK);
    assert_int_equal(e.type, MR_SST_GTIDS);
    assert_int_equal(e.value_len, 5);
    assert_memory_equal(e.value, "0-1-5", 5);
    assert_int_equal(mr_sst_next(&it, &e), MR_OK);
    assert_int_equal(e.type, 9);
    assert_int_equal(e.value_len, 2);
    mr_session_state st = {0};
    assert_int_equal(mr_sst_apply(&st, gtid, sizeof gtid), MR_OK);
    assert_string_equal(st.gtids, "0-1-5");
    assert_int_equal(st.unknown, 1);
}

/* OKs without state: no capability, no flag, nothing after the warnings. */
static void test_no_state(void **state)
{
    (void)state;
    uint8_t p[256];
    const uint8_t *s;
    size_t len;
    size_t n = unhex("00000002000000", p);
    assert_int_equal(mr_ok_session_state(p, n, CAPS, &s, &len), MR_OK);
    assert_int_equal(len, 0);
    /* the flag set, but the client did not negotiate tracking: the rest is info */
    n = unhex("00000002c00000000a01050474657374020131", p);
    assert_int_equal(mr_ok_session_state(p, n, MR_CAP_PROTOCOL_41, &s, &len), MR_OK);
    assert_int_equal(len, 0);
    /* with tracking and an info text but no flag */
    n = unhex("000000020000000268690000", p);
    assert_int_equal(mr_ok_session_state(p, n, CAPS, &s, &len), MR_OK);
    assert_int_equal(len, 0);
    /* not an OK */
    n = unhex("ff1500", p);
    assert_int_equal(mr_ok_session_state(p, n, CAPS, &s, &len), MR_MALFORMED);
}

static void test_malformed(void **state)
{
    (void)state;
    uint8_t p[256];
    const uint8_t *s;
    size_t len;
    /* the state's length runs past the packet */
    size_t n = unhex("00000002c00000000a0105047465", p);
    assert_int_equal(mr_ok_session_state(p, n, CAPS, &s, &len), MR_MALFORMED);
    /* entries that do not fit their blocks: walked up to there */
    const uint8_t bad[][6] = {
        {0, 3, 9, 'a', 'b', 0}, /* a variable name longer than the block */
        {1, 9, 4, 't', 0, 0},   /* a block longer than the state */
        {5, 3, 1, 'x', 'y', 0}, /* a value shorter than its block */
        {3, 0, 0, 0, 0, 0},     /* a GTID entry without its encoding byte */
    };
    static const size_t lens[] = {5, 4, 5, 2};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        mr_session_state st = {0};
        assert_int_equal(mr_sst_apply(&st, bad[i], lens[i]), MR_MALFORMED);
    }
    /* a value longer than its buffer is kept cut, and says so */
    uint8_t big[8 + MR_SST_NAME_MAX + 8];
    size_t k = 0;
    big[k++] = MR_SST_SCHEMA;
    big[k++] = MR_SST_NAME_MAX + 2;
    big[k++] = MR_SST_NAME_MAX + 1;
    memset(big + k, 's', MR_SST_NAME_MAX + 1);
    k += MR_SST_NAME_MAX + 1;
    mr_session_state st = {0};
    assert_int_equal(mr_sst_apply(&st, big, k), MR_OK);
    assert_true(st.schema_v.truncated);
    assert_int_equal(strlen(st.schema), MR_SST_NAME_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_system_variables), cmocka_unit_test(test_schema_and_transaction),
        cmocka_unit_test(test_iterator),         cmocka_unit_test(test_no_state),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
