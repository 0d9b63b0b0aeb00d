/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ok_view.c - a client's view of an all-trackers OK
 * (proto/ok_view.h): packets mariadbd 10.11 sent on a connection with every
 * tracker on and on direct connections with a client's own settings
 * (ok_view_vectors.h, captured by gen_ok_view_vectors.py), then packets
 * built by hand for what a capture does not reach, the settings reader and
 * the replay list.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/proto/ok_view.h"
#include "myrewrite/proto/session_track.h"

#define TRACK (MR_CAP_PROTOCOL_41 | MR_CAP_SESSION_TRACK)
#define NOTRACK MR_CAP_PROTOCOL_41

typedef struct ok_vector {
    const char *label;
    char kind;           /* 'o' an OK, 'e' an EOF (mr_eof_for_client) */
    uint32_t caps;       /* the direct client's */
    const char *want[4]; /* its session_track_system_variables, _schema, _state_change,
                            _transaction_info after the statement */
    const char *all;     /* the OK on the all-trackers connection */
    size_t all_len;
    const char *direct; /* the OK on the direct connection */
    size_t direct_len;
    bool order_free; /* the system variables came in another order */
} ok_vector;

#include "ok_view_vectors.h"

static const char *const track_vars[4] = {"session_track_system_variables", "session_track_schema",
                                          "session_track_state_change",
                                          "session_track_transaction_info"};

static void want_of(const ok_vector *v, mr_track_want *w)
{
    mr_track_want_defaults(w);
    for (int i = 0; i < 4; i++)
        assert_true(mr_track_want_set(w, track_vars[i], strlen(track_vars[i]), v->want[i],
                                      strlen(v->want[i])));
}

/* The client's view of p/n as bytes: the packet itself when not rewritten. */
static void view(const uint8_t *p, size_t n, uint32_t caps, const mr_track_want *w, mr_buf *out)
{
    bool rewritten = true;
    assert_int_equal(mr_ok_for_client(p, n, caps, w, out, &rewritten), MR_OK);
    assert_false(out->failed);
    if (!rewritten) {
        assert_int_equal(out->len, 0);
        mr_buf_put(out, p, n);
    }
}

static int cmp_entry(const void *a, const void *b)
{
    const mr_buf *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->data, y->data, n);
    return c ? c : (int)x->len - (int)y->len;
}

/* p with its system-variable entries sorted (they are the block's first
 * entries: mariadbd writes its trackers in a fixed order). */
static void sorted(const uint8_t *p, size_t n, uint32_t caps, mr_buf *out)
{
    const uint8_t *state;
    size_t len;
    assert_int_equal(mr_ok_session_state(p, n, caps, &state, &len), MR_OK);
    if (len == 0) {
        mr_buf_put(out, p, n);
        return;
    }
    mr_buf entries[64];
    size_t count = 0, at = 0, vars_end = 0;
    mr_sst_iter it;
    mr_sst_entry e;
    mr_sst_iter_init(&it, state, len);
    while (mr_sst_next(&it, &e) == MR_OK && e.type == MR_SST_SYSTEM_VARIABLES) {
        assert_true(count < 64);
        mr_buf_init(&entries[count]);
        mr_buf_put(&entries[count++], state + at, it.pos - at);
        at = vars_end = it.pos;
    }
    qsort(entries, count, sizeof(entries[0]), cmp_entry);
    size_t head = (size_t)(state - p);
    mr_buf_put(out, p, head);
    for (size_t i = 0; i < count; i++) {
        mr_buf_put(out, entries[i].data, entries[i].len);
        mr_buf_free(&entries[i]);
    }
    mr_buf_put(out, state + vars_end, n - head - vars_end);
}

static void test_captured(void **state)
{
    (void)state;
    size_t rewritten = 0, order_free = 0, eofs = 0;
    for (size_t i = 0; i < sizeof(ok_vectors) / sizeof(ok_vectors[0]); i++) {
        const ok_vector *v = &ok_vectors[i];
        mr_track_want w;
        mr_buf got, a, b;
        want_of(v, &w);
        mr_buf_init(&got);
        if (v->kind == 'e') {
            mr_buf_put(&got, v->all, v->all_len);
            eofs += mr_eof_for_client(got.data, got.len, v->caps, &w);
        } else {
            view((const uint8_t *)v->all, v->all_len, v->caps, &w, &got);
        }
        mr_buf_init(&a);
        mr_buf_init(&b);
        if (v->order_free) {
            sorted(got.data, got.len, v->caps, &a);
            sorted((const uint8_t *)v->direct, v->direct_len, v->caps, &b);
            order_free++;
        } else {
            mr_buf_put(&a, got.data, got.len);
            mr_buf_put(&b, v->direct, v->direct_len);
        }
        if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
            fail_msg("%s: the view differs from the direct server's OK", v->label);
        rewritten += v->all_len != v->direct_len || memcmp(v->all, v->direct, v->all_len) != 0;
        mr_buf_free(&got);
        mr_buf_free(&a);
        mr_buf_free(&b);
    }
    /* The capture exercises the filter: most vectors differ, some are kept
     * as they are, a few only by the variables' order. */
    assert_true(rewritten > 50);
    assert_true(order_free > 0);
    assert_true(eofs > 0);
}

/* Built by hand: the flag kept only for a client whose transaction tracker
 * is on; no other packet is touched. */
static void test_eof(void **state)
{
    (void)state;
    mr_track_want w;
    mr_track_want_defaults(&w);
    uint8_t eof[5] = {0xfe, 0x01, 0x00, 0x03, 0x40};
    assert_false(mr_eof_for_client(eof, 4, TRACK, &w));
    assert_true(mr_eof_for_client(eof, 5, TRACK, &w));
    assert_memory_equal(eof, "\xfe\x01\x00\x03\x00", 5);
    assert_false(mr_eof_for_client(eof, 5, TRACK, &w));
    eof[4] = 0x40;
    w.trx_info = MR_TRX_TRACK_STATE;
    assert_false(mr_eof_for_client(eof, 5, TRACK, &w));
    assert_true(mr_eof_for_client(eof, 5, NOTRACK, &w));
    uint8_t ok[9] = {0xfe, 0, 0, 0x02, 0x40, 0, 0, 0, 0};
    assert_false(mr_eof_for_client(ok, 9, NOTRACK, &w)); /* an OK: mr_ok_for_client's */
}

/* ---- packets built by hand ---- */

static void put_ok(mr_buf *b, uint8_t head, uint16_t status, const char *info, const uint8_t *st,
                   size_t st_len)
{
    mr_buf_put_u8(b, head);
    mr_buf_put_lenenc(b, 3);
    mr_buf_put_lenenc(b, 0);
    mr_buf_put_u16(b, status);
    mr_buf_put_u16(b, 1);
    if (info)
        mr_buf_put_lenenc_str(b, info, strlen(info));
    if (st)
        mr_buf_put_lenenc_str(b, st, st_len);
}

static void put_var(mr_buf *b, const char *name, const char *value)
{
    size_t n = strlen(name), v = strlen(value);
    mr_buf_put_u8(b, MR_SST_SYSTEM_VARIABLES);
    mr_buf_put_lenenc(b, 1 + n + (v < 251 ? 1 : 3) + v);
    mr_buf_put_lenenc_str(b, name, n);
    mr_buf_put_lenenc_str(b, value, v);
}

static void put_str_entry(mr_buf *b, uint8_t type, const char *value)
{
    size_t v = strlen(value);
    mr_buf_put_u8(b, type);
    mr_buf_put_lenenc(b, (v < 251 ? 1 : 3) + v);
    mr_buf_put_lenenc_str(b, value, v);
}

static void put_state_change(mr_buf *b) { mr_buf_put(b, "\x02\x01\x31", 3); }

static void expect_view(const mr_buf *in, uint32_t caps, const mr_track_want *w, const mr_buf *want)
{
    mr_buf got;
    mr_buf_init(&got);
    view(in->data, in->len, caps, w, &got);
    assert_int_equal(got.len, want->len);
    assert_memory_equal(got.data, want->data, got.len);
    mr_buf_free(&got);
}

static void test_no_state_kept(void **state)
{
    (void)state;
    mr_track_want w;
    mr_track_want_defaults(&w);
    mr_buf in, out;
    mr_buf_init(&in);
    mr_buf_init(&out);
    put_ok(&in, 0x00, 0x0002, "Rows matched: 1  Changed: 1  Warnings: 0", NULL, 0);
    bool rw = true;
    assert_int_equal(mr_ok_for_client(in.data, in.len, NOTRACK, &w, &out, &rw), MR_OK);
    assert_false(rw);
    assert_int_equal(mr_ok_for_client(in.data, in.len, TRACK, &w, &out, &rw), MR_OK);
    assert_false(rw);
    assert_null(out.data);
    mr_buf_free(&in);
}

static void test_info_kept_without_capability(void **state)
{
    (void)state;
    mr_track_want w;
    mr_track_want_defaults(&w);
    mr_buf st, in, want;
    mr_buf_init(&st);
    mr_buf_init(&in);
    mr_buf_init(&want);
    put_var(&st, "time_zone", "+01:00");
    put_state_change(&st);
    put_ok(&in, 0xfe, 0x4002, "Rows matched: 1", st.data, st.len);
    put_ok(&want, 0xfe, 0x0002, "Rows matched: 1", NULL, 0);
    expect_view(&in, NOTRACK, &w, &want);
    /* with the capability: time_zone is in the default list, "1" is not wanted */
    mr_buf_reset(&st);
    mr_buf_reset(&want);
    put_var(&st, "time_zone", "+01:00");
    put_ok(&want, 0xfe, 0x4002, "Rows matched: 1", st.data, st.len);
    expect_view(&in, TRACK, &w, &want);
    /* nothing left and no info: the info string goes too */
    mr_buf_reset(&in);
    mr_buf_reset(&st);
    mr_buf_reset(&want);
    put_var(&st, "sql_mode", "");
    put_state_change(&st);
    put_ok(&in, 0x00, 0x4002, "", st.data, st.len);
    put_ok(&want, 0x00, 0x0002, NULL, NULL, 0);
    expect_view(&in, TRACK, &w, &want);
    expect_view(&in, NOTRACK, &w, &want);
    mr_buf_free(&st);
    mr_buf_free(&in);
    mr_buf_free(&want);
}

/* At STATE the transaction tracker fires on a change of characteristics
 * alone and writes nothing: the flag and an empty block remain. */
static void test_trx_state_level(void **state)
{
    (void)state;
    mr_track_want w;
    mr_track_want_defaults(&w);
    assert_true(mr_track_want_set(&w, "session_track_transaction_info", 30, "STATE", 5));
    mr_buf st, in, want;
    mr_buf_init(&st);
    mr_buf_init(&in);
    mr_buf_init(&want);
    put_str_entry(&st, MR_SST_TRANSACTION_CHARACTERISTICS,
                  "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;");
    put_ok(&in, 0x00, 0x4002, "", st.data, st.len);
    put_ok(&want, 0x00, 0x4002, "", (const uint8_t *)"", 0);
    expect_view(&in, TRACK, &w, &want);
    /* at OFF the tracker is off: a plain OK */
    w.trx_info = MR_TRX_TRACK_OFF;
    mr_buf_reset(&want);
    put_ok(&want, 0x00, 0x0002, NULL, NULL, 0);
    expect_view(&in, TRACK, &w, &want);
    /* an empty block (the transaction tracker fired with nothing to say) */
    mr_buf_reset(&in);
    put_ok(&in, 0x00, 0x4002, "", (const uint8_t *)"", 0);
    expect_view(&in, TRACK, &w, &want);
    w.trx_info = MR_TRX_TRACK_STATE;
    expect_view(&in, TRACK, &w, &in);
    mr_buf_free(&st);
    mr_buf_free(&in);
    mr_buf_free(&want);
}

/* A block of 251 bytes or more has a 3-byte length; cut below that, 1. */
static void test_long_block(void **state)
{
    (void)state;
    mr_track_want w;
    mr_track_want_defaults(&w);
    char sql_mode[300];
    memset(sql_mode, 'A', sizeof sql_mode - 1);
    sql_mode[sizeof sql_mode - 1] = '\0';
    mr_buf st, in, want;
    mr_buf_init(&st);
    mr_buf_init(&in);
    mr_buf_init(&want);
    put_var(&st, "sql_mode", sql_mode);
    put_var(&st, "autocommit", "OFF");
    put_state_change(&st);
    put_ok(&in, 0x00, 0x4000, "", st.data, st.len);
    mr_buf_reset(&st);
    put_var(&st, "autocommit", "OFF");
    put_ok(&want, 0x00, 0x4000, "", st.data, st.len);
    expect_view(&in, TRACK, &w, &want);
    /* and the other way: sql_mode kept, a 3-byte length again */
    assert_true(mr_track_want_set(&w, "session_track_system_variables", 30, "sql_mode", 8));
    mr_buf_reset(&st);
    mr_buf_reset(&want);
    put_var(&st, "sql_mode", sql_mode);
    put_ok(&want, 0x00, 0x4000, "", st.data, st.len);
    expect_view(&in, TRACK, &w, &want);
    mr_buf_free(&st);
    mr_buf_free(&in);
    mr_buf_free(&want);
}

static void test_unknown_types_kept(void **state)
{
    (void)state;
    mr_track_want w;
    mr_track_want_defaults(&w);
    w.schema = false;
    mr_buf st, in, want;
    mr_buf_init(&st);
    mr_buf_init(&in);
    mr_buf_init(&want);
    put_str_entry(&st, MR_SST_SCHEMA, "shop");
    mr_buf_put(&st, "\x03\x03\x00\x01x", 5); /* GTIDs: encoding 0, "x" */
    mr_buf_put(&st, "\x09\x02zz", 4);        /* a type this code does not know */
    put_ok(&in, 0x00, 0x4002, "", st.data, st.len);
    mr_buf_reset(&st);
    mr_buf_put(&st, "\x03\x03\x00\x01x", 5);
    mr_buf_put(&st, "\x09\x02zz", 4);
    put_ok(&want, 0x00, 0x4002, "", st.data, st.len);
    expect_view(&in, TRACK, &w, &want);
    mr_buf_free(&st);
    mr_buf_free(&in);
    mr_buf_free(&want);
}

static void expect_malformed(const uint8_t *p, size_t n)
{
    mr_track_want w;
    mr_track_want_defaults(&w);
    mr_buf out;
    mr_buf_init(&out);
    bool rw = true;
    assert_int_equal(mr_ok_for_client(p, n, TRACK, &w, &out, &rw), MR_MALFORMED);
    assert_false(rw);
    assert_int_equal(out.len, 0);
}

static void test_malformed(void **state)
{
    (void)state;
    mr_buf st, in;
    mr_buf_init(&st);
    mr_buf_init(&in);
    put_var(&st, "sql_mode", "");
    put_ok(&in, 0x00, 0x4002, "", st.data, st.len);
    for (size_t n = 0; n < in.len; n++)
        expect_malformed(in.data, n); /* every prefix */
    mr_buf_put_u8(&in, 0);
    expect_malformed(in.data, in.len); /* a byte after the block */
    expect_malformed((const uint8_t *)"\xff\x00\x00\x02\x00\x00\x00", 7);
    /* an entry longer than the block */
    expect_malformed((const uint8_t *)"\x00\x00\x00\x02\x40\x00\x00\x00\x03\x00\x05\x01", 12);
    mr_buf_free(&st);
    mr_buf_free(&in);
}

/* ---- the settings (what mariadbd 10.11 accepts and refuses, measured) ---- */

static bool set(mr_track_want *w, const char *name, const char *value)
{
    return mr_track_want_set(w, name, strlen(name), value, strlen(value));
}

static bool tracks(const mr_track_want *w, const char *name)
{
    return mr_track_want_var(w, (const uint8_t *)name, strlen(name));
}

static void test_want_set(void **state)
{
    (void)state;
    mr_track_want w;
    mr_track_want_defaults(&w);
    assert_true(tracks(&w, "time_zone") && tracks(&w, "AUTOCOMMIT"));
    assert_false(tracks(&w, "sql_mode") || tracks(&w, "time") || tracks(&w, "time_zone_x"));
    assert_true(set(&w, "SESSION_TRACK_SYSTEM_VARIABLES", " Time_Zone ,\tsql_mode "));
    assert_true(tracks(&w, "sql_mode") && tracks(&w, "time_zone"));
    assert_false(tracks(&w, "autocommit") || w.all_vars);
    assert_int_equal(w.vars_len, 18);
    assert_memory_equal(w.vars, "time_zone,sql_mode", 18);
    assert_true(set(&w, "session_track_system_variables", "autocommit, *"));
    assert_true(w.all_vars && tracks(&w, "anything"));
    assert_true(set(&w, "session_track_system_variables", ""));
    assert_false(w.all_vars || tracks(&w, "autocommit"));
    /* what mariadbd refuses, and the bound: the settings stay */
    mr_track_want before = w;
    assert_false(set(&w, "session_track_system_variables", "*,autocommit"));
    assert_false(set(&w, "session_track_system_variables", "autocommit,"));
    assert_false(set(&w, "session_track_system_variables", "autocommit,,time_zone"));
    assert_false(set(&w, "session_track_system_variables", " "));
    assert_false(set(&w, "session_track_system_variables", "*, "));
    static char big[MR_TRACK_VARS_MAX + 2];
    memset(big, 'a', sizeof big - 1);
    assert_false(set(&w, "session_track_system_variables", big));
    big[MR_TRACK_VARS_MAX] = '\0';
    assert_true(memcmp(&w, &before, sizeof w) == 0);
    assert_true(set(&w, "session_track_system_variables", big)); /* exactly the bound */
    assert_int_equal(w.vars_len, MR_TRACK_VARS_MAX);
    /* the others */
    assert_true(set(&w, "session_track_schema", "off") && !w.schema);
    assert_true(set(&w, "session_track_schema", "1") && w.schema);
    assert_true(set(&w, "session_track_state_change", "TRUE") && w.state_change);
    assert_false(set(&w, "session_track_state_change", "maybe"));
    assert_true(w.state_change);
    assert_true(set(&w, "session_track_transaction_info", "characteristics"));
    assert_int_equal(w.trx_info, MR_TRX_TRACK_CHARACTERISTICS);
    assert_true(set(&w, "session_track_transaction_info", "1"));
    assert_int_equal(w.trx_info, MR_TRX_TRACK_STATE);
    assert_false(set(&w, "session_track_transaction_info", "3"));
    assert_false(set(&w, "time_zone", "+01:00"));
}

/* The entries mariadbd sent for SET session_track_schema=OFF and
 * SET session_track_system_variables='*' on a '*' connection. */
static void test_want_apply(void **state)
{
    (void)state;
    mr_track_want w;
    mr_track_want_defaults(&w);
    mr_buf st;
    mr_buf_init(&st);
    put_var(&st, "session_track_schema", "OFF");
    put_var(&st, "time_zone", "+01:00");
    put_var(&st, "session_track_system_variables", "*");
    put_state_change(&st);
    assert_true(mr_track_want_apply(&w, st.data, st.len));
    assert_false(w.schema);
    assert_true(w.all_vars);
    put_var(&st, "session_track_transaction_info", "SOMETIMES");
    assert_false(mr_track_want_apply(&w, st.data, st.len));
    assert_int_equal(w.trx_info, MR_TRX_TRACK_OFF);
    assert_false(mr_track_want_apply(&w, st.data, st.len - 1));
    mr_buf_free(&st);
}

static bool replayable(const char *name)
{
    return mr_sst_var_replayable((const uint8_t *)name, strlen(name));
}

static void test_replayable(void **state)
{
    (void)state;
    assert_true(replayable("time_zone") && replayable("sql_mode") && replayable("autocommit"));
    assert_true(replayable("character_set_client") && replayable("tx_isolation"));
    assert_false(replayable("session_track_system_variables"));
    assert_false(replayable("SESSION_TRACK_SCHEMA"));
    assert_false(replayable("session_track_state_change"));
    assert_false(replayable("session_track_transaction_info"));
    assert_false(replayable("insert_id") || replayable("last_insert_id"));
    assert_false(replayable("rand_seed1") || replayable("rand_seed2"));
    assert_true(replayable("timestamp") && replayable("tx_read_only"));
    assert_true(replayable("session_track"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_captured),
        cmocka_unit_test(test_eof),
        cmocka_unit_test(test_no_state_kept),
        cmocka_unit_test(test_info_kept_without_capability),
        cmocka_unit_test(test_trx_state_level),
        cmocka_unit_test(test_long_block),
        cmocka_unit_test(test_unknown_types_kept),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_want_set),
        cmocka_unit_test(test_want_apply),
        cmocka_unit_test(test_replayable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
