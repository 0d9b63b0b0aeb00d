/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_codec.c - unit tests for base/buf.c and proto/codec.c: framing, primitive
 * readers, OK/EOF/ERR packets, greetings and handshake responses.
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

/* ---- helpers ---- */

static mr_reader reader_of(const mr_buf *b)
{
    mr_reader r = {b->data, b->len, 0};
    return r;
}

static void put_zeros(mr_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mr_buf_put_u8(b, 0);
}

static void put_cstr(mr_buf *b, const char *s)
{
    mr_buf_put_str(b, s);
    mr_buf_put_u8(b, 0);
}

static const uint8_t scramble20[20] = {0x3a, 0x51, 0x2f, 0x6d, 0x25, 0x7e, 0x44, 0x5b, 0x28, 0x61,
                                       0x4c, 0x33, 0x77, 0x2c, 0x5d, 0x49, 0x6b, 0x40, 0x3f, 0x62};

/* A protocol-10 greeting with PLUGIN_AUTH and SECURE_CONNECTION layouts.
 * `ext_caps` goes into the last 4 of the 10 reserved bytes (MariaDB). */
typedef struct greeting_spec {
    const char *version;
    uint32_t thread_id;
    uint32_t caps;
    uint32_t ext_caps;
    uint8_t charset;
    uint16_t status;
    const char *plugin;
} greeting_spec;

static void build_greeting(mr_buf *b, const greeting_spec *s)
{
    mr_buf_put_u8(b, 10);
    put_cstr(b, s->version);
    mr_buf_put_u32(b, s->thread_id);
    mr_buf_put(b, scramble20, 8);
    mr_buf_put_u8(b, 0); /* filler */
    mr_buf_put_u16(b, (uint16_t)(s->caps & 0xffff));
    mr_buf_put_u8(b, s->charset);
    mr_buf_put_u16(b, s->status);
    mr_buf_put_u16(b, (uint16_t)(s->caps >> 16));
    mr_buf_put_u8(b, 21); /* auth-plugin-data length: 20 + NUL */
    put_zeros(b, 6);
    mr_buf_put_u32(b, s->ext_caps);
    mr_buf_put(b, scramble20 + 8, 12);
    mr_buf_put_u8(b, 0);
    put_cstr(b, s->plugin);
}

/* MariaDB 10.11: CLIENT_LONG_PASSWORD (CLIENT_MYSQL) cleared, SSL, COMPRESS,
 * progress and SSL_VERIFY set so that masking has something to do. */
#define MARIADB_CAPS 0x61fffffeu
#define MARIADB_EXT_CAPS 0x0000001du /* progress, bulk, extended + cached metadata */
static const greeting_spec mariadb_1011 = {
    "5.5.5-10.11.19-MariaDB", 0x00001234, MARIADB_CAPS, MARIADB_EXT_CAPS, 45, MR_STATUS_AUTOCOMMIT,
    "mysql_native_password",
};

/* MySQL 8.0: every lower bit including CLIENT_LONG_PASSWORD, reserved zeros. */
#define MYSQL8_CAPS 0xdfffffffu
static const greeting_spec mysql_80 = {
    "8.0.36", 0x0000002a, MYSQL8_CAPS, 0, 255, MR_STATUS_AUTOCOMMIT, "caching_sha2_password",
};

/* Offsets of the capability fields for a given server version string. */
static size_t caps_lo_off_for(const char *version) { return 1 + strlen(version) + 1 + 4 + 8 + 1; }

/* HandshakeResponse41 with PLUGIN_AUTH_LENENC, CONNECT_WITH_DB and PLUGIN_AUTH. */
static void build_handshake_response(mr_buf *b, uint32_t caps, uint32_t ext_caps)
{
    mr_buf_put_u32(b, caps);
    mr_buf_put_u32(b, 16u * 1024 * 1024);
    mr_buf_put_u8(b, 45);
    put_zeros(b, 19);
    mr_buf_put_u32(b, ext_caps);
    put_cstr(b, "app");
    mr_buf_put_lenenc_str(b, scramble20, 20);
    if (caps & MR_CAP_CONNECT_WITH_DB)
        put_cstr(b, "shop");
    if (caps & MR_CAP_PLUGIN_AUTH)
        put_cstr(b, "mysql_native_password");
}

#define CLIENT_CAPS                                                                                \
    (MR_CAP_LONG_PASSWORD | MR_CAP_CONNECT_WITH_DB | MR_CAP_PROTOCOL_41 | MR_CAP_TRANSACTIONS |    \
     MR_CAP_SECURE_CONNECTION | MR_CAP_MULTI_STATEMENTS | MR_CAP_MULTI_RESULTS |                   \
     MR_CAP_PLUGIN_AUTH | MR_CAP_PLUGIN_AUTH_LENENC)

/* ---- mr_buf ---- */

static void buf_integers_are_little_endian(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0x01);
    mr_buf_put_u16(&b, 0x0302);
    mr_buf_put_u24(&b, 0x060504);
    mr_buf_put_u32(&b, 0x0a090807);
    mr_buf_put_u64(&b, 0x1211100f0e0d0c0bull);
    static const uint8_t want[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};
    assert_int_equal(b.len, sizeof(want));
    assert_memory_equal(b.data, want, sizeof(want));
    assert_false(b.failed);
    mr_buf_free(&b);
}

static void buf_grows_past_initial_capacity(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    for (int i = 0; i < 10000; i++)
        mr_buf_put_u8(&b, (uint8_t)i);
    assert_int_equal(b.len, 10000);
    assert_true(b.cap >= 10000);
    for (int i = 0; i < 10000; i++)
        assert_int_equal(b.data[i], (uint8_t)i);
    mr_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
}

static void buf_reset_keeps_memory_and_clears_length(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "hello");
    uint8_t *data = b.data;
    mr_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_ptr_equal(b.data, data);
    mr_buf_put_str(&b, "hi");
    assert_memory_equal(b.data, "hi", 2);
    mr_buf_free(&b);
}

static void buf_failed_flag_is_sticky(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "ab");
    b.failed = true;
    mr_buf_put_str(&b, "cd");
    assert_int_equal(b.len, 2);
    mr_buf_reset(&b);
    assert_false(b.failed);
    mr_buf_free(&b);
}

static void buf_put_empty_is_a_no_op(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put(&b, "", 0);
    mr_buf_put_str(&b, "");
    assert_int_equal(b.len, 0);
    assert_null(b.data);
    mr_buf_free(&b);
}

/* ---- packet header ---- */

static void header_needs_four_bytes(void **state)
{
    (void)state;
    static const uint8_t bytes[4] = {0x01, 0x00, 0x00, 0x00};
    mr_pkt_header h = {0, 0};
    for (size_t n = 0; n < 4; n++)
        assert_int_equal(mr_pkt_header_read(bytes, n, &h), MR_NEED_MORE);
    assert_int_equal(mr_pkt_header_read(bytes, 4, &h), MR_OK);
    assert_int_equal(h.len, 1);
    assert_int_equal(h.seq, 0);
}

static void header_decodes_24bit_length_and_sequence(void **state)
{
    (void)state;
    static const uint8_t max[] = {0xff, 0xff, 0xff, 0xfe, 0x99};
    static const uint8_t mixed[] = {0x03, 0x02, 0x01, 0x07};
    mr_pkt_header h;
    assert_int_equal(mr_pkt_header_read(max, sizeof(max), &h), MR_OK);
    assert_int_equal(h.len, MR_PKT_MAX_PAYLOAD);
    assert_int_equal(h.seq, 0xfe);
    assert_int_equal(mr_pkt_header_read(mixed, sizeof(mixed), &h), MR_OK);
    assert_int_equal(h.len, 0x010203);
    assert_int_equal(h.seq, 7);
}

/* ---- primitive readers ---- */

static void read_fixed_integers_need_more_when_short(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {0x11, 0x22, 0x33};
    mr_reader r = {bytes, sizeof(bytes), 0};
    uint8_t v8;
    uint16_t v16;
    uint32_t v32;
    assert_int_equal(mr_read_u32(&r, &v32), MR_NEED_MORE);
    assert_int_equal(r.pos, 0);
    assert_int_equal(mr_read_u16(&r, &v16), MR_OK);
    assert_int_equal(v16, 0x2211);
    assert_int_equal(mr_read_u16(&r, &v16), MR_NEED_MORE);
    assert_int_equal(mr_read_u8(&r, &v8), MR_OK);
    assert_int_equal(v8, 0x33);
    assert_int_equal(mr_read_u8(&r, &v8), MR_NEED_MORE);
    assert_int_equal(r.pos, 3);
}

static void read_u32_is_little_endian(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {0x78, 0x56, 0x34, 0x12};
    mr_reader r = {bytes, sizeof(bytes), 0};
    uint32_t v;
    assert_int_equal(mr_read_u32(&r, &v), MR_OK);
    assert_int_equal(v, 0x12345678);
}

static void read_skip_checks_bounds(void **state)
{
    (void)state;
    static const uint8_t bytes[5] = {0};
    mr_reader r = {bytes, sizeof(bytes), 0};
    assert_int_equal(mr_read_skip(&r, 6), MR_NEED_MORE);
    assert_int_equal(r.pos, 0);
    assert_int_equal(mr_read_skip(&r, 5), MR_OK);
    assert_int_equal(r.pos, 5);
    assert_int_equal(mr_read_skip(&r, 0), MR_OK);
}

static void read_cstr_finds_terminator(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {'r', 'o', 'o', 't', 0, 'x', 'y'};
    mr_reader r = {bytes, sizeof(bytes), 0};
    const char *s;
    size_t len;
    assert_int_equal(mr_read_cstr(&r, &s, &len), MR_OK);
    assert_int_equal(len, 4);
    assert_memory_equal(s, "root", 4);
    assert_int_equal(r.pos, 5);
    assert_int_equal(mr_read_cstr(&r, &s, &len), MR_NEED_MORE); /* "xy" has no NUL */
    assert_int_equal(r.pos, 5);
}

static void read_cstr_accepts_empty_string(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {0};
    mr_reader r = {bytes, sizeof(bytes), 0};
    const char *s;
    size_t len = 99;
    assert_int_equal(mr_read_cstr(&r, &s, &len), MR_OK);
    assert_int_equal(len, 0);
    assert_int_equal(r.pos, 1);
    assert_int_equal(mr_read_cstr(&r, &s, &len), MR_NEED_MORE); /* at the end */
}

/* ---- length-encoded integers ---- */

typedef struct lenenc_case {
    uint64_t value;
    size_t encoded_len;
    uint8_t first;
} lenenc_case;

static const lenenc_case lenenc_cases[] = {
    {0, 1, 0x00},       {250, 1, 0xfa},      {251, 3, 0xfc},       {0xffff, 3, 0xfc},
    {0x10000, 4, 0xfd}, {0xffffff, 4, 0xfd}, {0x1000000, 9, 0xfe}, {UINT64_MAX, 9, 0xfe},
};

static void lenenc_put_uses_shortest_form_at_boundaries(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(lenenc_cases) / sizeof(lenenc_cases[0]); i++) {
        const lenenc_case *c = &lenenc_cases[i];
        mr_buf b;
        mr_buf_init(&b);
        mr_buf_put_lenenc(&b, c->value);
        assert_int_equal(b.len, c->encoded_len);
        assert_int_equal(b.data[0], c->first);
        mr_buf_free(&b);
    }
}

static void lenenc_put_writes_exact_bytes(void **state)
{
    (void)state;
    static const uint8_t v251[] = {0xfc, 0xfb, 0x00};
    static const uint8_t v65536[] = {0xfd, 0x00, 0x00, 0x01};
    static const uint8_t v16m[] = {0xfe, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00};
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_lenenc(&b, 251);
    assert_memory_equal(b.data, v251, sizeof(v251));
    mr_buf_reset(&b);
    mr_buf_put_lenenc(&b, 0x10000);
    assert_memory_equal(b.data, v65536, sizeof(v65536));
    mr_buf_reset(&b);
    mr_buf_put_lenenc(&b, 0x1000000);
    assert_memory_equal(b.data, v16m, sizeof(v16m));
    mr_buf_free(&b);
}

static void lenenc_round_trips_at_boundaries(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(lenenc_cases) / sizeof(lenenc_cases[0]); i++) {
        mr_buf b;
        mr_buf_init(&b);
        mr_buf_put_lenenc(&b, lenenc_cases[i].value);
        mr_reader r = reader_of(&b);
        uint64_t v = 0;
        assert_int_equal(mr_read_lenenc(&r, &v), MR_OK);
        assert_int_equal(v, lenenc_cases[i].value);
        assert_int_equal(r.pos, b.len);
        mr_buf_free(&b);
    }
}

static void lenenc_truncated_prefix_needs_more(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(lenenc_cases) / sizeof(lenenc_cases[0]); i++) {
        mr_buf b;
        mr_buf_init(&b);
        mr_buf_put_lenenc(&b, lenenc_cases[i].value);
        for (size_t n = 0; n < b.len; n++) {
            mr_reader r = {b.data, n, 0};
            uint64_t v = 0;
            assert_int_equal(mr_read_lenenc(&r, &v), MR_NEED_MORE);
            assert_int_equal(r.pos, 0);
        }
        mr_buf_free(&b);
    }
}

static void lenenc_null_and_error_markers_are_malformed(void **state)
{
    (void)state;
    static const uint8_t fb[] = {0xfb, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    static const uint8_t ff[] = {0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    uint64_t v;
    for (size_t n = 1; n <= sizeof(fb); n++) {
        mr_reader r1 = {fb, n, 0};
        mr_reader r2 = {ff, n, 0};
        assert_int_equal(mr_read_lenenc(&r1, &v), MR_MALFORMED);
        assert_int_equal(mr_read_lenenc(&r2, &v), MR_MALFORMED);
    }
}

static void lenenc_reads_non_minimal_encoding(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {0xfc, 0x05, 0x00};
    mr_reader r = {bytes, sizeof(bytes), 0};
    uint64_t v;
    assert_int_equal(mr_read_lenenc(&r, &v), MR_OK);
    assert_int_equal(v, 5);
}

static void lenenc_str_round_trips(void **state)
{
    (void)state;
    char big[300];
    memset(big, 'q', sizeof(big));
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_lenenc_str(&b, "abc", 3);
    mr_buf_put_lenenc_str(&b, big, sizeof(big));
    mr_buf_put_lenenc_str(&b, "", 0);
    assert_int_equal(b.len, 1 + 3 + 3 + 300 + 1);
    mr_reader r = reader_of(&b);
    uint64_t len;
    assert_int_equal(mr_read_lenenc(&r, &len), MR_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(b.data + r.pos, "abc", 3);
    assert_int_equal(mr_read_skip(&r, 3), MR_OK);
    assert_int_equal(mr_read_lenenc(&r, &len), MR_OK);
    assert_int_equal(len, 300);
    assert_memory_equal(b.data + r.pos, big, 300);
    assert_int_equal(mr_read_skip(&r, 300), MR_OK);
    assert_int_equal(mr_read_lenenc(&r, &len), MR_OK);
    assert_int_equal(len, 0);
    assert_int_equal(r.pos, b.len);
    mr_buf_free(&b);
}

/* ---- OK / EOF ---- */

static void ok_parse_reads_all_fields(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0x00);
    mr_buf_put_lenenc(&b, 3);
    mr_buf_put_lenenc(&b, 70000);
    mr_buf_put_u16(&b, MR_STATUS_AUTOCOMMIT | MR_STATUS_IN_TRANS);
    mr_buf_put_u16(&b, 2);
    mr_ok ok;
    assert_int_equal(mr_ok_parse(b.data, b.len, &ok), MR_OK);
    assert_int_equal(ok.affected_rows, 3);
    assert_int_equal(ok.last_insert_id, 70000);
    assert_int_equal(ok.status, MR_STATUS_AUTOCOMMIT | MR_STATUS_IN_TRANS);
    assert_int_equal(ok.warnings, 2);
    mr_buf_free(&b);
}

/* OK with CLIENT_SESSION_TRACK: info string plus session-state changes. */
static void ok_parse_ignores_session_track_data(void **state)
{
    (void)state;
    mr_buf st, b;
    mr_buf_init(&st);
    mr_buf_init(&b);
    /* SESSION_TRACK_SCHEMA (1): lenenc data = lenenc schema name */
    mr_buf_put_u8(&st, 0x01);
    mr_buf_put_lenenc(&st, 5);
    mr_buf_put_lenenc_str(&st, "shop", 4);
    mr_buf_put_u8(&b, 0x00);
    mr_buf_put_lenenc(&b, 0);
    mr_buf_put_lenenc(&b, 0);
    mr_buf_put_u16(&b, MR_STATUS_AUTOCOMMIT | 0x4000); /* SESSION_STATE_CHANGED */
    mr_buf_put_u16(&b, 0);
    mr_buf_put_lenenc_str(&b, "", 0);
    mr_buf_put_lenenc_str(&b, st.data, st.len);
    mr_ok ok;
    assert_int_equal(mr_ok_parse(b.data, b.len, &ok), MR_OK);
    assert_int_equal(ok.status, MR_STATUS_AUTOCOMMIT | 0x4000);
    assert_int_equal(ok.affected_rows, 0);
    mr_buf_free(&st);
    mr_buf_free(&b);
}

static void ok_parse_accepts_fe_header(void **state)
{
    (void)state;
    static const uint8_t fe_ok[] = {0xfe, 0x00, 0x00, 0x22, 0x00, 0x01, 0x00};
    mr_ok ok;
    assert_int_equal(mr_ok_parse(fe_ok, sizeof(fe_ok), &ok), MR_OK);
    assert_int_equal(ok.status, 0x0022);
    assert_int_equal(ok.warnings, 1);
}

static void ok_parse_rejects_other_headers(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {0x01, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00};
    uint8_t copy[sizeof(bytes)];
    mr_ok ok;
    assert_int_equal(mr_ok_parse(bytes, sizeof(bytes), &ok), MR_MALFORMED);
    memcpy(copy, bytes, sizeof(copy));
    copy[0] = 0xff;
    assert_int_equal(mr_ok_parse(copy, sizeof(copy), &ok), MR_MALFORMED);
}

static void ok_parse_truncated_needs_more(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00};
    mr_ok ok;
    for (size_t n = 0; n < sizeof(bytes); n++)
        assert_int_equal(mr_ok_parse(bytes, n, &ok), MR_NEED_MORE);
    assert_int_equal(mr_ok_parse(bytes, sizeof(bytes), &ok), MR_OK);
}

static void ok_parse_null_marker_is_malformed(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {0x00, 0xfb, 0x00, 0x02, 0x00, 0x00, 0x00};
    mr_ok ok;
    assert_int_equal(mr_ok_parse(bytes, sizeof(bytes), &ok), MR_MALFORMED);
}

/* Two 9-byte integers make the longest OK head: 1 + 9 + 9 + 2 + 2 bytes. */
static void ok_parse_longest_head_is_23_bytes(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0x00);
    mr_buf_put_lenenc(&b, UINT64_MAX);
    mr_buf_put_lenenc(&b, UINT64_MAX - 1);
    mr_buf_put_u16(&b, 0x1234);
    mr_buf_put_u16(&b, 0x5678);
    mr_buf_put_str(&b, "Rows matched: 1  Changed: 1  Warnings: 0");
    mr_ok ok;
    assert_int_equal(mr_ok_parse(b.data, 22, &ok), MR_NEED_MORE);
    assert_int_equal(mr_ok_parse(b.data, 23, &ok), MR_OK);
    assert_int_equal(ok.affected_rows, UINT64_MAX);
    assert_int_equal(ok.last_insert_id, UINT64_MAX - 1);
    assert_int_equal(ok.status, 0x1234);
    assert_int_equal(ok.warnings, 0x5678);
    mr_buf_free(&b);
}

static void eof_parse_reads_warnings_then_status(void **state)
{
    (void)state;
    static const uint8_t eof[] = {0xfe, 0x03, 0x00, 0x0a, 0x00};
    mr_ok e;
    assert_int_equal(mr_eof_parse(eof, sizeof(eof), &e), MR_OK);
    assert_int_equal(e.warnings, 3);
    assert_int_equal(e.status, MR_STATUS_AUTOCOMMIT | MR_STATUS_MORE_RESULTS);
    assert_int_equal(e.affected_rows, 0);
}

static void eof_parse_accepts_lone_fe(void **state)
{
    (void)state;
    static const uint8_t eof[] = {0xfe};
    mr_ok e;
    assert_int_equal(mr_eof_parse(eof, sizeof(eof), &e), MR_OK);
    assert_int_equal(e.status, 0);
    assert_int_equal(e.warnings, 0);
}

static void eof_parse_rejects_non_fe_and_needs_a_byte(void **state)
{
    (void)state;
    static const uint8_t ok[] = {0x00, 0x00, 0x00, 0x02, 0x00};
    mr_ok e;
    assert_int_equal(mr_eof_parse(ok, 0, &e), MR_NEED_MORE);
    assert_int_equal(mr_eof_parse(ok, sizeof(ok), &e), MR_MALFORMED);
}

/* ---- ERR ---- */

static void err_parse_with_sqlstate(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0xff);
    mr_buf_put_u16(&b, 1146);
    mr_buf_put_str(&b, "#42S02Table 'shop.nope' doesn't exist");
    mr_err e;
    assert_int_equal(mr_err_parse(b.data, b.len, &e), MR_OK);
    assert_int_equal(e.code, 1146);
    assert_string_equal(e.sqlstate, "42S02");
    assert_int_equal(e.msg_len, strlen("Table 'shop.nope' doesn't exist"));
    assert_memory_equal(e.msg, "Table 'shop.nope' doesn't exist", e.msg_len);
    mr_buf_free(&b);
}

static void err_parse_without_sqlstate_defaults_to_hy000(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0xff);
    mr_buf_put_u16(&b, 1040);
    mr_buf_put_str(&b, "Too many connections");
    mr_err e;
    assert_int_equal(mr_err_parse(b.data, b.len, &e), MR_OK);
    assert_int_equal(e.code, 1040);
    assert_string_equal(e.sqlstate, "HY000");
    assert_int_equal(e.msg_len, 20);
    assert_memory_equal(e.msg, "Too many connections", 20);
    mr_buf_free(&b);
}

static void err_parse_empty_message(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {0xff, 0x15, 0x04, '#', '2', '8', '0', '0', '0'};
    mr_err e;
    assert_int_equal(mr_err_parse(bytes, sizeof(bytes), &e), MR_OK);
    assert_int_equal(e.code, 1045);
    assert_string_equal(e.sqlstate, "28000");
    assert_int_equal(e.msg_len, 0);
}

static void err_parse_short_hash_is_message_text(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {0xff, 0x15, 0x04, '#', 'a', 'b'};
    mr_err e;
    assert_int_equal(mr_err_parse(bytes, sizeof(bytes), &e), MR_OK);
    assert_string_equal(e.sqlstate, "HY000");
    assert_int_equal(e.msg_len, 3);
    assert_memory_equal(e.msg, "#ab", 3);
}

static void err_parse_rejects_bad_header_or_missing_code(void **state)
{
    (void)state;
    static const uint8_t not_err[] = {0x00, 0x15, 0x04};
    static const uint8_t short_err[] = {0xff, 0x15};
    mr_err e;
    assert_int_equal(mr_err_parse(not_err, sizeof(not_err), &e), MR_MALFORMED);
    assert_int_equal(mr_err_parse(short_err, sizeof(short_err), &e), MR_MALFORMED);
    assert_int_equal(mr_err_parse(short_err, 0, &e), MR_MALFORMED);
}

static void err_build_parses_back(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_err_build(&b, 2, MR_ER_CON_COUNT, "08004", "Too many connections");
    assert_false(b.failed);
    mr_pkt_header h;
    assert_int_equal(mr_pkt_header_read(b.data, b.len, &h), MR_OK);
    assert_int_equal(h.seq, 2);
    assert_int_equal(h.len, b.len - MR_PKT_HEADER);
    assert_int_equal(h.len, 1 + 2 + 6 + 20);
    mr_err e;
    assert_int_equal(mr_err_parse(b.data + MR_PKT_HEADER, h.len, &e), MR_OK);
    assert_int_equal(e.code, MR_ER_CON_COUNT);
    assert_string_equal(e.sqlstate, "08004");
    assert_int_equal(e.msg_len, 20);
    assert_memory_equal(e.msg, "Too many connections", 20);
    mr_buf_free(&b);
}

static void err_build_caps_message_at_512_bytes(void **state)
{
    (void)state;
    char msg[1001];
    memset(msg, 'm', 1000);
    msg[1000] = '\0';
    mr_buf b;
    mr_buf_init(&b);
    mr_err_build(&b, 1, MR_ER_NET_PACKET_TOO_LARGE, "08S01", msg);
    mr_pkt_header h;
    assert_int_equal(mr_pkt_header_read(b.data, b.len, &h), MR_OK);
    assert_int_equal(h.len, 9 + 512);
    assert_int_equal(b.len, MR_PKT_HEADER + h.len);
    mr_err e;
    assert_int_equal(mr_err_parse(b.data + MR_PKT_HEADER, h.len, &e), MR_OK);
    assert_int_equal(e.msg_len, 512);
    mr_buf_free(&b);
}

static void err_build_appends_after_existing_bytes(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "xyz");
    mr_err_build(&b, 0, MR_ER_UNKNOWN_COM, "08S01", "Unknown command");
    assert_memory_equal(b.data, "xyz", 3);
    mr_pkt_header h;
    assert_int_equal(mr_pkt_header_read(b.data + 3, b.len - 3, &h), MR_OK);
    assert_int_equal(h.len, b.len - 3 - MR_PKT_HEADER);
    assert_int_equal(b.data[3 + MR_PKT_HEADER], 0xff);
    mr_buf_free(&b);
}

static void ok_build_parses_back(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_ok_build(&b, 7, 5, 300, MR_STATUS_AUTOCOMMIT, 1);
    mr_pkt_header h;
    assert_int_equal(mr_pkt_header_read(b.data, b.len, &h), MR_OK);
    assert_int_equal(h.seq, 7);
    assert_int_equal(h.len, b.len - MR_PKT_HEADER);
    assert_int_equal(h.len, 1 + 1 + 3 + 2 + 2);
    mr_ok ok;
    assert_int_equal(mr_ok_parse(b.data + MR_PKT_HEADER, h.len, &ok), MR_OK);
    assert_int_equal(ok.affected_rows, 5);
    assert_int_equal(ok.last_insert_id, 300);
    assert_int_equal(ok.status, MR_STATUS_AUTOCOMMIT);
    assert_int_equal(ok.warnings, 1);
    mr_buf_free(&b);
}

static void ok_build_with_huge_values_parses_back(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_ok_build(&b, 255, UINT64_MAX, 0x1000000, 0xffff, 0xffff);
    mr_pkt_header h;
    assert_int_equal(mr_pkt_header_read(b.data, b.len, &h), MR_OK);
    assert_int_equal(h.seq, 255);
    assert_int_equal(h.len, 1 + 9 + 9 + 2 + 2);
    assert_int_equal(b.len, MR_PKT_HEADER + h.len);
    mr_ok ok;
    assert_int_equal(mr_ok_parse(b.data + MR_PKT_HEADER, h.len, &ok), MR_OK);
    assert_int_equal(ok.affected_rows, UINT64_MAX);
    assert_int_equal(ok.last_insert_id, 0x1000000);
    assert_int_equal(ok.status, 0xffff);
    assert_int_equal(ok.warnings, 0xffff);
    mr_buf_free(&b);
}

/* ---- greeting ---- */

static void greeting_parses_mariadb_1011(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    build_greeting(&b, &mariadb_1011);
    mr_greeting g;
    assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_OK);
    assert_int_equal(g.protocol, 10);
    assert_int_equal(g.server_version_len, strlen("5.5.5-10.11.19-MariaDB"));
    assert_memory_equal(g.server_version, "5.5.5-10.11.19-MariaDB", g.server_version_len);
    assert_int_equal(g.thread_id, 0x1234);
    assert_int_equal(g.caps, MARIADB_CAPS);
    assert_false(g.caps & MR_CAP_LONG_PASSWORD);
    assert_true(g.mariadb);
    assert_int_equal(g.mariadb_ext_caps, MARIADB_EXT_CAPS);
    assert_int_equal(g.charset, 45);
    assert_int_equal(g.status, MR_STATUS_AUTOCOMMIT);
    size_t lo = caps_lo_off_for(mariadb_1011.version);
    assert_int_equal(g.caps_lo_off, lo);
    assert_int_equal(g.caps_hi_off, lo + 5);
    assert_int_equal(g.ext_caps_off, lo + 5 + 2 + 1 + 6);
    mr_buf_free(&b);
}

static void greeting_offsets_point_at_the_fields(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    build_greeting(&b, &mariadb_1011);
    mr_greeting g;
    assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_OK);
    mr_reader r = {b.data, b.len, g.caps_lo_off};
    uint16_t lo, hi;
    uint32_t ext;
    assert_int_equal(mr_read_u16(&r, &lo), MR_OK);
    r.pos = g.caps_hi_off;
    assert_int_equal(mr_read_u16(&r, &hi), MR_OK);
    r.pos = g.ext_caps_off;
    assert_int_equal(mr_read_u32(&r, &ext), MR_OK);
    assert_int_equal(lo, MARIADB_CAPS & 0xffff);
    assert_int_equal(hi, MARIADB_CAPS >> 16);
    assert_int_equal(ext, MARIADB_EXT_CAPS);
    mr_buf_free(&b);
}

static void greeting_parses_mysql_80(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    build_greeting(&b, &mysql_80);
    mr_greeting g;
    assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_OK);
    assert_int_equal(g.server_version_len, 6);
    assert_memory_equal(g.server_version, "8.0.36", 6);
    assert_int_equal(g.thread_id, 42);
    assert_int_equal(g.caps, MYSQL8_CAPS);
    assert_true(g.caps & MR_CAP_LONG_PASSWORD);
    assert_false(g.mariadb);
    assert_int_equal(g.mariadb_ext_caps, 0);
    assert_int_equal(g.charset, 255);
    mr_buf_free(&b);
}

/* MySQL keeps the reserved bytes; nonzero garbage there is not MariaDB caps. */
static void greeting_mysql_ignores_reserved_bytes(void **state)
{
    (void)state;
    greeting_spec s = mysql_80;
    s.ext_caps = 0xdeadbeef;
    mr_buf b;
    mr_buf_init(&b);
    build_greeting(&b, &s);
    mr_greeting g;
    assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_OK);
    assert_false(g.mariadb);
    assert_int_equal(g.mariadb_ext_caps, 0);
    mr_buf_free(&b);
}

static void greeting_minimal_ends_after_lower_caps(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    build_greeting(&b, &mysql_80);
    size_t n = caps_lo_off_for(mysql_80.version) + 2;
    mr_greeting g;
    assert_int_equal(mr_greeting_parse(b.data, n, &g), MR_OK);
    assert_int_equal(g.caps, MYSQL8_CAPS & 0xffff);
    assert_int_equal(g.caps_hi_off, 0);
    assert_int_equal(g.ext_caps_off, 0);
    assert_false(g.mariadb);
    mr_buf_free(&b);
}

static void greeting_truncated_is_malformed(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    build_greeting(&b, &mariadb_1011);
    mr_greeting g;
    assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_OK);
    size_t minimal = g.caps_lo_off + 2;
    size_t head_end = g.ext_caps_off + 4;
    for (size_t n = 0; n < head_end; n++) {
        if (n == minimal)
            continue;
        assert_int_equal(mr_greeting_parse(b.data, n, &g), MR_MALFORMED);
    }
    mr_buf_free(&b);
}

static void greeting_other_protocol_or_err_is_malformed(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    build_greeting(&b, &mysql_80);
    mr_greeting g;
    b.data[0] = 9;
    assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_MALFORMED);
    mr_buf_reset(&b);
    mr_buf_put_u8(&b, 0xff);
    mr_buf_put_u16(&b, 1130);
    mr_buf_put_str(&b, "Host '10.0.0.9' is not allowed to connect to this MySQL server");
    assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_MALFORMED);
    mr_buf_free(&b);
}

static void greeting_version_without_nul_is_malformed(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {10, '8', '.', '0', '.', '3', '6'};
    mr_greeting g;
    assert_int_equal(mr_greeting_parse(bytes, sizeof(bytes), &g), MR_MALFORMED);
}

static uint32_t read_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t read_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* Masks a copy of `s` and checks that only the capability fields changed. */
static void check_mask(const greeting_spec *s, uint32_t want_ext)
{
    mr_buf b;
    mr_buf_init(&b);
    build_greeting(&b, s);
    mr_greeting g;
    assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_OK);
    uint8_t *orig = malloc(b.len);
    assert_non_null(orig);
    memcpy(orig, b.data, b.len);
    mr_greeting_mask(b.data, &g);

    uint32_t want = s->caps & ~(uint32_t)MR_CAP_MASKED;
    assert_int_equal(read_le16(b.data + g.caps_lo_off), want & 0xffff);
    assert_int_equal(read_le16(b.data + g.caps_hi_off), want >> 16);
    assert_int_equal(read_le32(b.data + g.ext_caps_off), want_ext);
    for (size_t i = 0; i < b.len; i++) {
        bool in_caps = (i >= g.caps_lo_off && i < g.caps_lo_off + 2) ||
                       (i >= g.caps_hi_off && i < g.caps_hi_off + 2) ||
                       (i >= g.ext_caps_off && i < g.ext_caps_off + 4);
        if (!in_caps)
            assert_int_equal(b.data[i], orig[i]);
    }
    /* The masked greeting still parses, with no masked bit left. */
    mr_greeting again;
    assert_int_equal(mr_greeting_parse(b.data, b.len, &again), MR_OK);
    assert_int_equal(again.caps, want);
    assert_int_equal(again.caps & MR_CAP_MASKED, 0);
    free(orig);
    mr_buf_free(&b);
}

/* The extended capabilities the proxy relays stay; the others go. */
static void greeting_mask_mariadb_clears_masked_and_ext_caps(void **state)
{
    (void)state;
    check_mask(&mariadb_1011, mariadb_1011.ext_caps & MR_MARIADB_EXT_CAP_RELAYED);
}

static void greeting_mask_mysql_keeps_reserved_zeros(void **state)
{
    (void)state;
    check_mask(&mysql_80, 0);
}

/* MySQL 8's query attributes and optional result-set metadata are relayed
 * when the server offers them (the session reads both). */
static void greeting_mask_keeps_mysql8_layout_bits(void **state)
{
    (void)state;
    greeting_spec s = mysql_80;
    s.caps |= MR_CAP_QUERY_ATTRIBUTES | MR_CAP_OPTIONAL_RESULTSET_METADATA;
    check_mask(&s, 0);
    mr_buf b;
    mr_buf_init(&b);
    build_greeting(&b, &s);
    mr_greeting g;
    assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_OK);
    mr_greeting_mask(b.data, &g);
    assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_OK);
    assert_true(g.caps & MR_CAP_QUERY_ATTRIBUTES);
    assert_true(g.caps & MR_CAP_OPTIONAL_RESULTSET_METADATA);
    mr_buf_free(&b);
}

static void greeting_mask_keeps_unmasked_bits(void **state)
{
    (void)state;
    greeting_spec s = mysql_80;
    s.caps = MR_CAP_MASKED | MR_CAP_PROTOCOL_41 | MR_CAP_DEPRECATE_EOF | MR_CAP_LONG_PASSWORD;
    mr_buf b;
    mr_buf_init(&b);
    build_greeting(&b, &s);
    mr_greeting g;
    assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_OK);
    mr_greeting_mask(b.data, &g);
    assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_OK);
    assert_int_equal(g.caps, MR_CAP_PROTOCOL_41 | MR_CAP_DEPRECATE_EOF | MR_CAP_LONG_PASSWORD);
    mr_buf_free(&b);
}

/* With a certificate for clients the proxy offers CLIENT_SSL itself, whether
 * the server offered it or not; the other masked bits stay cleared. */
static void greeting_mask_offer_sets_ssl(void **state)
{
    (void)state;
    for (int server_ssl = 0; server_ssl < 2; server_ssl++) {
        greeting_spec s = mysql_80;
        s.caps = MR_CAP_PROTOCOL_41 | MR_CAP_COMPRESS | MR_CAP_SSL_VERIFY_SERVER_CERT |
                 (server_ssl ? MR_CAP_SSL : 0);
        mr_buf b;
        mr_buf_init(&b);
        build_greeting(&b, &s);
        mr_greeting g;
        assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_OK);
        mr_greeting_mask_offer(b.data, &g, MR_CAP_SSL);
        assert_int_equal(mr_greeting_parse(b.data, b.len, &g), MR_OK);
        assert_int_equal(g.caps, MR_CAP_PROTOCOL_41 | MR_CAP_SSL);
        mr_buf_free(&b);
    }
}

static void greeting_mask_minimal_touches_only_lower_caps(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    build_greeting(&b, &mysql_80);
    size_t n = caps_lo_off_for(mysql_80.version) + 2;
    mr_greeting g;
    assert_int_equal(mr_greeting_parse(b.data, n, &g), MR_OK);
    uint8_t *orig = malloc(b.len);
    assert_non_null(orig);
    memcpy(orig, b.data, b.len);
    mr_greeting_mask(b.data, &g);
    assert_int_equal(read_le16(b.data + g.caps_lo_off), (MYSQL8_CAPS & ~MR_CAP_MASKED) & 0xffff);
    assert_memory_equal(b.data, orig, g.caps_lo_off);
    assert_memory_equal(b.data + n, orig + n, b.len - n);
    free(orig);
    mr_buf_free(&b);
}

/* ---- handshake response ---- */

static void handshake_response_full_41(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    build_handshake_response(&b, CLIENT_CAPS, 0);
    mr_handshake_response hr;
    assert_int_equal(mr_handshake_response_parse(b.data, b.len, &hr), MR_OK);
    assert_int_equal(hr.caps, CLIENT_CAPS);
    assert_int_equal(hr.max_packet, 16u * 1024 * 1024);
    assert_int_equal(hr.charset, 45);
    assert_int_equal(hr.mariadb_ext_caps, 0);
    assert_false(hr.ssl_request);
    mr_buf_free(&b);
}

/* CLIENT_ZSTD_COMPRESSION_ALGORITHM: the level byte after the connect
 * attributes is found, with its offset; absent without the bit or when the
 * packet ends before it. */
static void handshake_response_zstd_level(void **state)
{
    (void)state;
    const uint32_t caps = CLIENT_CAPS | MR_CAP_CONNECT_ATTRS | MR_CAP_ZSTD_COMPRESSION;
    mr_buf b;
    mr_buf_init(&b);
    build_handshake_response(&b, caps, 0);
    mr_buf_put_lenenc_str(&b, "\x04_pid\x02\x31\x32", 8); /* one attribute: _pid = 12 */
    size_t at = b.len;
    mr_buf_put_u8(&b, 19);
    mr_handshake_response hr;
    assert_int_equal(mr_handshake_response_parse(b.data, b.len, &hr), MR_OK);
    assert_int_equal(hr.zstd_level, 19);
    assert_int_equal(hr.zstd_level_at, at);
    assert_int_equal(hr.db_len, 4);
    assert_int_equal(mr_handshake_response_parse(b.data, b.len - 1, &hr), MR_OK);
    assert_int_equal(hr.zstd_level, -1); /* the byte is missing */
    b.data[3] &= (uint8_t) ~(MR_CAP_ZSTD_COMPRESSION >> 24);
    assert_int_equal(mr_handshake_response_parse(b.data, b.len, &hr), MR_OK);
    assert_int_equal(hr.zstd_level, -1); /* not asked for: the byte is not read */
    mr_buf_free(&b);
}

static void handshake_response_ssl_request(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u32(&b, CLIENT_CAPS | MR_CAP_SSL);
    mr_buf_put_u32(&b, 0x40000000);
    mr_buf_put_u8(&b, 255);
    put_zeros(&b, 23);
    assert_int_equal(b.len, 32);
    mr_handshake_response hr;
    assert_int_equal(mr_handshake_response_parse(b.data, b.len, &hr), MR_OK);
    assert_true(hr.ssl_request);
    assert_true(hr.caps & MR_CAP_SSL);
    assert_int_equal(hr.max_packet, 0x40000000);
    assert_int_equal(hr.charset, 255);
    mr_buf_free(&b);
}

static void handshake_response_32_bytes_without_ssl_is_not_ssl_request(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u32(&b, CLIENT_CAPS);
    mr_buf_put_u32(&b, 0x40000000);
    mr_buf_put_u8(&b, 33);
    put_zeros(&b, 23);
    mr_handshake_response hr;
    assert_int_equal(mr_handshake_response_parse(b.data, b.len, &hr), MR_OK);
    assert_false(hr.ssl_request);
    mr_buf_free(&b);
}

static void handshake_response_full_with_ssl_cap_is_not_ssl_request(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    build_handshake_response(&b, CLIENT_CAPS | MR_CAP_SSL, 0);
    mr_handshake_response hr;
    assert_int_equal(mr_handshake_response_parse(b.data, b.len, &hr), MR_OK);
    assert_false(hr.ssl_request);
    mr_buf_free(&b);
}

/* Protocol 3.20 (pre-4.1): 2-byte caps, 3-byte max packet, user, scramble. */
static void handshake_response_pre41_is_malformed(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u16(&b, MR_CAP_LONG_PASSWORD | MR_CAP_CONNECT_WITH_DB);
    mr_buf_put_u24(&b, 0xffffff);
    put_cstr(&b, "app");
    mr_buf_put(&b, scramble20, 8);
    mr_handshake_response hr;
    assert_int_equal(mr_handshake_response_parse(b.data, b.len, &hr), MR_MALFORMED);
    mr_buf_free(&b);
}

static void handshake_response_long_without_protocol41_is_malformed(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    build_handshake_response(&b, CLIENT_CAPS & ~(uint32_t)MR_CAP_PROTOCOL_41, 0);
    assert_true(b.len > 32);
    mr_handshake_response hr;
    assert_int_equal(mr_handshake_response_parse(b.data, b.len, &hr), MR_MALFORMED);
    mr_buf_free(&b);
}

static void handshake_response_shorter_than_32_is_malformed(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    build_handshake_response(&b, CLIENT_CAPS | MR_CAP_SSL, 0);
    mr_handshake_response hr;
    for (size_t n = 0; n < 32; n++)
        assert_int_equal(mr_handshake_response_parse(b.data, n, &hr), MR_MALFORMED);
    mr_buf_free(&b);
}

static void handshake_response_mariadb_ext_caps_in_filler(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    uint32_t caps = CLIENT_CAPS & ~(uint32_t)MR_CAP_LONG_PASSWORD;
    build_handshake_response(&b, caps, 0x00000005);
    mr_handshake_response hr;
    assert_int_equal(mr_handshake_response_parse(b.data, b.len, &hr), MR_OK);
    assert_int_equal(hr.caps, caps);
    assert_int_equal(hr.mariadb_ext_caps, 5);
    mr_buf_free(&b);
}

static void handshake_response_mysql_client_ignores_filler(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    build_handshake_response(&b, CLIENT_CAPS, 0x00000005);
    mr_handshake_response hr;
    assert_int_equal(mr_handshake_response_parse(b.data, b.len, &hr), MR_OK);
    assert_int_equal(hr.mariadb_ext_caps, 0);
    mr_buf_free(&b);
}

/* COM_CHANGE_USER: user, 1-byte auth length, schema, then an optional collation id. */
static void change_user_reads_the_collation(void **state)
{
    (void)state;
    uint32_t caps = MR_CAP_PROTOCOL_41 | MR_CAP_SECURE_CONNECTION;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, MR_COM_CHANGE_USER);
    put_cstr(&b, "app");
    mr_buf_put_u8(&b, 3);
    mr_buf_put(&b, "abc", 3);
    put_cstr(&b, "shop");
    size_t without_charset = b.len;
    mr_buf_put_u16(&b, 1052); /* gbk_chinese_nopad_ci: all 16 bits count */
    put_cstr(&b, "mysql_native_password");
    const char *user, *db;
    size_t ul, dl;
    int charset;
    assert_int_equal(mr_change_user_parse(b.data, b.len, caps, &user, &ul, &db, &dl, &charset),
                     MR_OK);
    assert_int_equal(ul, 3);
    assert_memory_equal(db, "shop", 4);
    assert_int_equal(charset, 1052);
    assert_int_equal(
        mr_change_user_parse(b.data, without_charset, caps, &user, &ul, &db, &dl, &charset), MR_OK);
    assert_int_equal(charset, -1);
    mr_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buf_integers_are_little_endian),
        cmocka_unit_test(buf_grows_past_initial_capacity),
        cmocka_unit_test(buf_reset_keeps_memory_and_clears_length),
        cmocka_unit_test(buf_failed_flag_is_sticky),
        cmocka_unit_test(buf_put_empty_is_a_no_op),
        cmocka_unit_test(header_needs_four_bytes),
        cmocka_unit_test(header_decodes_24bit_length_and_sequence),
        cmocka_unit_test(read_fixed_integers_need_more_when_short),
        cmocka_unit_test(read_u32_is_little_endian),
        cmocka_unit_test(read_skip_checks_bounds),
        cmocka_unit_test(read_cstr_finds_terminator),
        cmocka_unit_test(read_cstr_accepts_empty_string),
        cmocka_unit_test(lenenc_put_uses_shortest_form_at_boundaries),
        cmocka_unit_test(lenenc_put_writes_exact_bytes),
        cmocka_unit_test(lenenc_round_trips_at_boundaries),
        cmocka_unit_test(lenenc_truncated_prefix_needs_more),
        cmocka_unit_test(lenenc_null_and_error_markers_are_malformed),
        cmocka_unit_test(lenenc_reads_non_minimal_encoding),
        cmocka_unit_test(lenenc_str_round_trips),
        cmocka_unit_test(ok_parse_reads_all_fields),
        cmocka_unit_test(ok_parse_ignores_session_track_data),
        cmocka_unit_test(ok_parse_accepts_fe_header),
        cmocka_unit_test(ok_parse_rejects_other_headers),
        cmocka_unit_test(ok_parse_truncated_needs_more),
        cmocka_unit_test(ok_parse_null_marker_is_malformed),
        cmocka_unit_test(ok_parse_longest_head_is_23_bytes),
        cmocka_unit_test(eof_parse_reads_warnings_then_status),
        cmocka_unit_test(eof_parse_accepts_lone_fe),
        cmocka_unit_test(eof_parse_rejects_non_fe_and_needs_a_byte),
        cmocka_unit_test(err_parse_with_sqlstate),
        cmocka_unit_test(err_parse_without_sqlstate_defaults_to_hy000),
        cmocka_unit_test(err_parse_empty_message),
        cmocka_unit_test(err_parse_short_hash_is_message_text),
        cmocka_unit_test(err_parse_rejects_bad_header_or_missing_code),
        cmocka_unit_test(err_build_parses_back),
        cmocka_unit_test(err_build_caps_message_at_512_bytes),
        cmocka_unit_test(err_build_appends_after_existing_bytes),
        cmocka_unit_test(ok_build_parses_back),
        cmocka_unit_test(ok_build_with_huge_values_parses_back),
        cmocka_unit_test(greeting_parses_mariadb_1011),
        cmocka_unit_test(greeting_offsets_point_at_the_fields),
        cmocka_unit_test(greeting_parses_mysql_80),
        cmocka_unit_test(greeting_mysql_ignores_reserved_bytes),
        cmocka_unit_test(greeting_minimal_ends_after_lower_caps),
        cmocka_unit_test(greeting_truncated_is_malformed),
        cmocka_unit_test(greeting_other_protocol_or_err_is_malformed),
        cmocka_unit_test(greeting_version_without_nul_is_malformed),
        cmocka_unit_test(greeting_mask_mariadb_clears_masked_and_ext_caps),
        cmocka_unit_test(greeting_mask_mysql_keeps_reserved_zeros),
        cmocka_unit_test(greeting_mask_keeps_mysql8_layout_bits),
        cmocka_unit_test(greeting_mask_keeps_unmasked_bits),
        cmocka_unit_test(greeting_mask_offer_sets_ssl),
        cmocka_unit_test(greeting_mask_minimal_touches_only_lower_caps),
        cmocka_unit_test(handshake_response_full_41),
        cmocka_unit_test(handshake_response_zstd_level),
        cmocka_unit_test(handshake_response_ssl_request),
        cmocka_unit_test(handshake_response_32_bytes_without_ssl_is_not_ssl_request),
        cmocka_unit_test(handshake_response_full_with_ssl_cap_is_not_ssl_request),
        cmocka_unit_test(handshake_response_pre41_is_malformed),
        cmocka_unit_test(handshake_response_long_without_protocol41_is_malformed),
        cmocka_unit_test(handshake_response_shorter_than_32_is_malformed),
        cmocka_unit_test(handshake_response_mariadb_ext_caps_in_filler),
        cmocka_unit_test(handshake_response_mysql_client_ignores_filler),
        cmocka_unit_test(change_user_reads_the_collation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
