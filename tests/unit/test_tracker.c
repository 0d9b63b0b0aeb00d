/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_tracker.c - unit tests for proto/tracker.c: every response shape is a
 * sequence of server packets built by hand and fed the way the session
 * feeds them (the first min(len, MR_TRACK_PREFIX) bytes of each payload).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/proto/tracker.h"

#define SESSION_STATE_CHANGED 0x4000 /* SERVER_SESSION_STATE_CHANGED */

/* MySQL field types used in column definitions. */
#define TYPE_LONG 0x03
#define TYPE_VAR_STRING 0xfd

/* ---- feeding ---- */

static mr_track_result feed_payload(mr_tracker *t, const uint8_t *p, size_t len)
{
    size_t n = len < MR_TRACK_PREFIX ? len : MR_TRACK_PREFIX;
    return mr_tracker_feed(t, p, n, (uint32_t)len);
}

/* Feeds a built payload and releases it. */
static mr_track_result feed_buf(mr_tracker *t, mr_buf *b)
{
    assert_false(b->failed);
    mr_track_result r = feed_payload(t, b->data, b->len);
    mr_buf_free(b);
    return r;
}

static mr_track_result send_bytes(mr_tracker *t, const void *p, size_t n)
{
    return feed_payload(t, p, n);
}

static void start(mr_tracker *t, bool deprecate_eof, mr_expect expect)
{
    mr_tracker_init(t, deprecate_eof);
    mr_tracker_begin(t, expect);
}

/* ---- server packets ---- */

static mr_track_result send_ok(mr_tracker *t, uint64_t affected, uint64_t insert_id,
                               uint16_t status)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0x00);
    mr_buf_put_lenenc(&b, affected);
    mr_buf_put_lenenc(&b, insert_id);
    mr_buf_put_u16(&b, status);
    mr_buf_put_u16(&b, 0);
    return feed_buf(t, &b);
}

/* The OK (0xFE header) that ends a result set under DEPRECATE_EOF, MySQL 8
 * style: info string and a session-state block (a system variable change). */
static mr_track_result send_ok_fe(mr_tracker *t, uint16_t status)
{
    mr_buf var, st, b;
    mr_buf_init(&var);
    mr_buf_init(&st);
    mr_buf_init(&b);
    mr_buf_put_lenenc_str(&var, "character_set_client", 20);
    mr_buf_put_lenenc_str(&var, "utf8mb4", 7);
    mr_buf_put_u8(&st, 0x00); /* SESSION_TRACK_SYSTEM_VARIABLES */
    mr_buf_put_lenenc_str(&st, var.data, var.len);
    mr_buf_put_u8(&b, 0xfe);
    mr_buf_put_lenenc(&b, 0);
    mr_buf_put_lenenc(&b, 0);
    mr_buf_put_u16(&b, status | SESSION_STATE_CHANGED);
    mr_buf_put_u16(&b, 0);
    mr_buf_put_lenenc_str(&b, "", 0);
    mr_buf_put_lenenc_str(&b, st.data, st.len);
    assert_true(b.len > MR_TRACK_PREFIX); /* the tracker sees only a prefix */
    mr_buf_free(&var);
    mr_buf_free(&st);
    return feed_buf(t, &b);
}

static mr_track_result send_eof(mr_tracker *t, uint16_t status)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0xfe);
    mr_buf_put_u16(&b, 0); /* warnings */
    mr_buf_put_u16(&b, status);
    return feed_buf(t, &b);
}

static mr_track_result send_err(mr_tracker *t, uint16_t code, const char *sqlstate, const char *msg)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0xff);
    mr_buf_put_u16(&b, code);
    mr_buf_put_u8(&b, '#');
    mr_buf_put(&b, sqlstate, 5);
    mr_buf_put_str(&b, msg);
    return feed_buf(t, &b);
}

static mr_track_result send_column_count(mr_tracker *t, uint64_t count)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_lenenc(&b, count);
    return feed_buf(t, &b);
}

/* Protocol::ColumnDefinition41. */
static mr_track_result send_column_def(mr_tracker *t, const char *name, uint8_t type)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_lenenc_str(&b, "def", 3);
    mr_buf_put_lenenc_str(&b, "shop", 4);
    mr_buf_put_lenenc_str(&b, "orders", 6);
    mr_buf_put_lenenc_str(&b, "orders", 6);
    mr_buf_put_lenenc_str(&b, name, strlen(name));
    mr_buf_put_lenenc_str(&b, name, strlen(name));
    mr_buf_put_lenenc(&b, 0x0c);
    mr_buf_put_u16(&b, 45); /* utf8mb4_general_ci */
    mr_buf_put_u32(&b, 11); /* column length */
    mr_buf_put_u8(&b, type);
    mr_buf_put_u16(&b, 0x0001); /* NOT_NULL */
    mr_buf_put_u8(&b, 0);       /* decimals */
    mr_buf_put_u16(&b, 0);      /* filler */
    return feed_buf(t, &b);
}

/* A text-protocol row with one or two columns (NULL pointers are SQL NULL). */
static mr_track_result send_text_row(mr_tracker *t, const char *a, const char *b2)
{
    mr_buf b;
    mr_buf_init(&b);
    const char *vals[2] = {a, b2};
    for (int i = 0; i < 2; i++) {
        if (i == 1 && !b2)
            break;
        if (vals[i])
            mr_buf_put_lenenc_str(&b, vals[i], strlen(vals[i]));
        else
            mr_buf_put_u8(&b, 0xfb);
    }
    return feed_buf(t, &b);
}

/* A binary-protocol row of one INT column. */
static mr_track_result send_binary_row(mr_tracker *t, uint32_t v)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0x00);
    mr_buf_put_u8(&b, 0x00); /* NULL bitmap: (1 + 7 + 2) / 8 bytes */
    mr_buf_put_u32(&b, v);
    return feed_buf(t, &b);
}

static mr_track_result send_prepare_ok(mr_tracker *t, uint32_t stmt_id, uint16_t columns,
                                       uint16_t params)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0x00);
    mr_buf_put_u32(&b, stmt_id);
    mr_buf_put_u16(&b, columns);
    mr_buf_put_u16(&b, params);
    mr_buf_put_u8(&b, 0x00); /* reserved */
    mr_buf_put_u16(&b, 0);   /* warnings */
    return feed_buf(t, &b);
}

static mr_track_result send_auth_switch(mr_tracker *t, const char *plugin, size_t data_len)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0xfe);
    mr_buf_put_str(&b, plugin);
    mr_buf_put_u8(&b, 0);
    for (size_t i = 0; i < data_len; i++)
        mr_buf_put_u8(&b, (uint8_t)(0x21 + i * 7 % 90));
    if (strcmp(plugin, "mysql_native_password") == 0)
        mr_buf_put_u8(&b, 0);
    return feed_buf(t, &b);
}

/* Sends `n` column definitions, each of which must leave the response open. */
static void columns_more(mr_tracker *t, int n)
{
    char name[16];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "c%d", i);
        assert_int_equal(send_column_def(t, name, TYPE_VAR_STRING), MR_TRACK_MORE);
    }
}

static void text_rows_more(mr_tracker *t, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(send_text_row(t, "42", "widget"), MR_TRACK_MORE);
}

static void binary_rows_more(mr_tracker *t, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(send_binary_row(t, (uint32_t)i), MR_TRACK_MORE);
}

/* ---- COM_QUERY ---- */

static void query_ok_is_done(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_ok(&t, 3, 17, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_int_equal(t.state, MR_TS_IDLE);
    assert_false(t.ended_with_err);
    assert_int_equal(t.last_ok.affected_rows, 3);
    assert_int_equal(t.last_ok.last_insert_id, 17);
    assert_int_equal(t.status, MR_STATUS_AUTOCOMMIT);
}

static void query_err_is_done(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_err(&t, 1064, "42000", "You have an error in your SQL syntax"),
                     MR_TRACK_DONE);
    assert_true(t.ended_with_err);
    assert_int_equal(t.state, MR_TS_IDLE);
}

static void query_ok_with_more_results_then_result_set(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_ok(&t, 1, 0, MR_STATUS_AUTOCOMMIT | MR_STATUS_MORE_RESULTS),
                     MR_TRACK_MORE);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MORE);
    assert_int_equal(send_text_row(&t, "1", NULL), MR_TRACK_MORE);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_int_equal(t.status, MR_STATUS_AUTOCOMMIT);
}

static void query_text_result_set_with_eofs(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 2), MR_TRACK_MORE);
    assert_int_equal(t.remaining, 2);
    columns_more(&t, 2);
    assert_int_equal(t.state, MR_TS_COLUMNS_EOF);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MORE);
    assert_int_equal(t.state, MR_TS_ROWS);
    text_rows_more(&t, 3);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_IN_TRANS), MR_TRACK_DONE);
    assert_int_equal(t.status, MR_STATUS_AUTOCOMMIT | MR_STATUS_IN_TRANS);
    assert_false(t.ended_with_err);
}

static void query_text_result_set_without_rows(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MORE);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void query_deprecate_eof_ends_with_fe_ok(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 2), MR_TRACK_MORE);
    columns_more(&t, 2);
    assert_int_equal(t.state, MR_TS_ROWS); /* no EOF after the definitions */
    text_rows_more(&t, 2);
    assert_int_equal(send_ok_fe(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_int_equal(t.status, MR_STATUS_AUTOCOMMIT | SESSION_STATE_CHANGED);
}

static void query_deprecate_eof_without_rows(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_ok_fe(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void query_deprecate_eof_accepts_short_eof_terminator(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    text_rows_more(&t, 1);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_int_equal(t.status, MR_STATUS_AUTOCOMMIT);
}

/* A row whose first column is a string of 2^24 + 5 bytes: its length is
 * encoded as 0xFE + 8 bytes, so the payload starts with 0xFE, and it is so
 * long that the first packet carries the maximum payload of 0xFFFFFF. */
static mr_track_result send_huge_row_head(mr_tracker *t)
{
    uint8_t head[MR_TRACK_PREFIX];
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_lenenc(&b, 0x1000005);
    assert_int_equal(b.data[0], 0xfe);
    memset(head, 'x', sizeof(head));
    memcpy(head, b.data, b.len);
    mr_buf_free(&b);
    return mr_tracker_feed(t, head, sizeof(head), MR_PKT_MAX_PAYLOAD);
}

static void query_huge_row_starting_with_fe_is_a_row_deprecate_eof(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_huge_row_head(&t), MR_TRACK_MORE);
    assert_int_equal(t.state, MR_TS_ROWS);
    assert_int_equal(send_huge_row_head(&t), MR_TRACK_MORE);
    assert_int_equal(send_ok_fe(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void query_huge_row_starting_with_fe_is_a_row_with_eofs(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MORE);
    assert_int_equal(send_huge_row_head(&t), MR_TRACK_MORE);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

/* A 9-byte row "0xFE + 8-byte length" is not an EOF (EOFs are < 9 bytes). */
static void query_nine_byte_fe_row_is_a_row_with_eofs(void **state)
{
    (void)state;
    static const uint8_t row[] = {0xfe, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00};
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MORE);
    assert_int_equal(send_bytes(&t, row, sizeof(row)), MR_TRACK_MORE);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void query_null_first_column_row_is_a_row(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 2), MR_TRACK_MORE);
    columns_more(&t, 2);
    assert_int_equal(send_text_row(&t, NULL, "x"), MR_TRACK_MORE); /* starts with 0xFB */
    assert_int_equal(send_text_row(&t, "", "x"), MR_TRACK_MORE);   /* starts with 0x00 */
    assert_int_equal(send_ok_fe(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void query_251_columns(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 251), MR_TRACK_MORE); /* 0xFC 0xFB 0x00 */
    assert_int_equal(t.remaining, 251);
    columns_more(&t, 251);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MORE);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

/* CALL p(): two result sets, then the OK for the CALL itself. */
static void query_two_result_sets_then_final_ok(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    for (int rs = 0; rs < 2; rs++) {
        assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
        columns_more(&t, 1);
        assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MORE);
        text_rows_more(&t, 2);
        assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_MORE_RESULTS),
                         MR_TRACK_MORE);
        assert_int_equal(t.state, MR_TS_FIRST);
    }
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_int_equal(t.state, MR_TS_IDLE);
}

static void query_two_result_sets_then_final_ok_deprecate_eof(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_RESULT);
    for (int rs = 0; rs < 2; rs++) {
        assert_int_equal(send_column_count(&t, 2), MR_TRACK_MORE);
        columns_more(&t, 2);
        text_rows_more(&t, 1);
        assert_int_equal(send_ok_fe(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_MORE_RESULTS),
                         MR_TRACK_MORE);
    }
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

/* "SELECT 1; SELECT 2": the second result set's EOF ends the response. */
static void query_multi_statement_two_result_sets(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MORE);
    text_rows_more(&t, 1);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_MORE_RESULTS), MR_TRACK_MORE);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MORE);
    text_rows_more(&t, 1);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void query_multi_statement_error_in_second(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_ok(&t, 1, 0, MR_STATUS_AUTOCOMMIT | MR_STATUS_MORE_RESULTS),
                     MR_TRACK_MORE);
    assert_int_equal(send_err(&t, 1146, "42S02", "Table 'shop.nope' doesn't exist"), MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

static void query_err_in_middle_of_rows(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 2), MR_TRACK_MORE);
    columns_more(&t, 2);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MORE);
    text_rows_more(&t, 2);
    assert_int_equal(send_err(&t, 1317, "70100", "Query execution was interrupted"), MR_TRACK_DONE);
    assert_true(t.ended_with_err);
    assert_int_equal(t.state, MR_TS_IDLE);
}

static void query_err_in_middle_of_rows_deprecate_eof(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 2), MR_TRACK_MORE);
    columns_more(&t, 2);
    text_rows_more(&t, 2);
    assert_int_equal(send_err(&t, 3024, "HY000",
                              "Query execution was interrupted, maximum "
                              "statement execution time exceeded"),
                     MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

static void query_err_instead_of_column_eof(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_err(&t, 1317, "70100", "Query execution was interrupted"), MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

static void query_column_eof_status_does_not_end_response(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    /* Only COM_STMT_EXECUTE opens cursors; a text result set goes on. */
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_CURSOR_EXISTS), MR_TRACK_MORE);
    text_rows_more(&t, 1);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

/* ---- LOCAL INFILE ---- */

static mr_track_result send_infile_request(mr_tracker *t, const char *file)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0xfb);
    mr_buf_put_str(&b, file);
    return feed_buf(t, &b);
}

static void infile_request_then_ok(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_infile_request(&t, "/tmp/orders.csv"), MR_TRACK_CLIENT_NEXT);
    assert_int_equal(t.state, MR_TS_INFILE);
    mr_tracker_infile_done(&t);
    assert_int_equal(t.state, MR_TS_FIRST);
    assert_int_equal(send_ok(&t, 1000, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_int_equal(t.last_ok.affected_rows, 1000);
}

static void infile_request_then_err(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_RESULT);
    assert_int_equal(send_infile_request(&t, "data.csv"), MR_TRACK_CLIENT_NEXT);
    mr_tracker_infile_done(&t);
    assert_int_equal(send_err(&t, 1261, "01000", "Row 1 doesn't contain data for all columns"),
                     MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

static void infile_then_more_results(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_infile_request(&t, "a.csv"), MR_TRACK_CLIENT_NEXT);
    mr_tracker_infile_done(&t);
    assert_int_equal(send_ok(&t, 2, 0, MR_STATUS_AUTOCOMMIT | MR_STATUS_MORE_RESULTS),
                     MR_TRACK_MORE);
    assert_int_equal(send_infile_request(&t, "b.csv"), MR_TRACK_CLIENT_NEXT);
    mr_tracker_infile_done(&t);
    assert_int_equal(send_ok(&t, 3, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

/* A prepared LOAD DATA LOCAL: mariadbd asks for the file in the answer to
 * COM_STMT_EXECUTE (and to a bulk execute) as it does after COM_QUERY. */
static void infile_request_after_execute(void **state)
{
    (void)state;
    mr_tracker t;
    for (int eof = 0; eof < 2; eof++) {
        start(&t, eof, MR_EXPECT_EXECUTE);
        assert_int_equal(send_infile_request(&t, "/tmp/orders.csv"), MR_TRACK_CLIENT_NEXT);
        assert_int_equal(t.state, MR_TS_INFILE);
        mr_tracker_infile_done(&t);
        assert_int_equal(send_ok(&t, 7, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
        assert_int_equal(t.last_ok.affected_rows, 7);
    }
    start(&t, false, MR_EXPECT_EXECUTE);
    assert_int_equal(send_infile_request(&t, "/nonexistent"), MR_TRACK_CLIENT_NEXT);
    mr_tracker_infile_done(&t);
    assert_int_equal(send_err(&t, 2, "HY000", "File not found"), MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

/* A prepare runs nothing: a request for a file cannot be its answer. */
static void infile_request_only_where_a_statement_runs(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_PREPARE);
    assert_int_equal(send_infile_request(&t, "a.csv"), MR_TRACK_MALFORMED);
}

static void infile_server_packet_while_client_sends_is_malformed(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_infile_request(&t, "/tmp/orders.csv"), MR_TRACK_CLIENT_NEXT);
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_MALFORMED);
}

static void infile_done_outside_infile_changes_nothing(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    mr_tracker_infile_done(&t);
    assert_int_equal(t.state, MR_TS_COLUMNS);
    mr_tracker_init(&t, false);
    mr_tracker_infile_done(&t);
    assert_int_equal(t.state, MR_TS_IDLE);
}

/* ---- COM_STMT_PREPARE ---- */

static void prepare_params_and_columns_with_eofs(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_PREPARE);
    assert_int_equal(send_prepare_ok(&t, 7, 3, 2), MR_TRACK_MORE);
    assert_int_equal(t.stmt_id, 7);
    assert_int_equal(t.prep_columns, 3);
    assert_int_equal(t.state, MR_TS_PREP_PARAMS);
    columns_more(&t, 2);
    assert_int_equal(t.state, MR_TS_PREP_PARAMS_EOF);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MORE);
    assert_int_equal(t.state, MR_TS_PREP_COLUMNS);
    columns_more(&t, 3);
    assert_int_equal(t.state, MR_TS_PREP_COLUMNS_EOF);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_int_equal(t.state, MR_TS_IDLE);
}

static void prepare_params_and_columns_deprecate_eof(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_PREPARE);
    assert_int_equal(send_prepare_ok(&t, 0x01020304, 2, 2), MR_TRACK_MORE);
    assert_int_equal(t.stmt_id, 0x01020304);
    columns_more(&t, 2);
    assert_int_equal(t.state, MR_TS_PREP_COLUMNS);
    columns_more(&t, 1);
    assert_int_equal(send_column_def(&t, "last", TYPE_LONG), MR_TRACK_DONE);
}

static void prepare_without_params_or_columns(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_PREPARE);
    assert_int_equal(send_prepare_ok(&t, 1, 0, 0), MR_TRACK_DONE);
    start(&t, true, MR_EXPECT_PREPARE);
    assert_int_equal(send_prepare_ok(&t, 2, 0, 0), MR_TRACK_DONE);
}

static void prepare_only_params_with_eof(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_PREPARE); /* INSERT INTO t VALUES (?, ?) */
    assert_int_equal(send_prepare_ok(&t, 3, 0, 2), MR_TRACK_MORE);
    columns_more(&t, 2);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void prepare_only_params_deprecate_eof(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_PREPARE);
    assert_int_equal(send_prepare_ok(&t, 3, 0, 2), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_column_def(&t, "?", TYPE_LONG), MR_TRACK_DONE);
}

static void prepare_only_columns_with_eof(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_PREPARE); /* SELECT a, b FROM t */
    assert_int_equal(send_prepare_ok(&t, 4, 2, 0), MR_TRACK_MORE);
    assert_int_equal(t.state, MR_TS_PREP_COLUMNS);
    columns_more(&t, 2);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void prepare_only_columns_deprecate_eof(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_PREPARE);
    assert_int_equal(send_prepare_ok(&t, 4, 2, 0), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_column_def(&t, "b", TYPE_LONG), MR_TRACK_DONE);
}

static void prepare_err(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_PREPARE);
    assert_int_equal(send_err(&t, 1064, "42000", "You have an error in your SQL syntax"),
                     MR_TRACK_DONE);
    assert_true(t.ended_with_err);
    assert_int_equal(t.state, MR_TS_IDLE);
}

static void prepare_truncated_ok_is_malformed(void **state)
{
    (void)state;
    static const uint8_t short_ok[] = {0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01};
    mr_tracker t;
    start(&t, false, MR_EXPECT_PREPARE);
    assert_int_equal(send_bytes(&t, short_ok, sizeof(short_ok)), MR_TRACK_MALFORMED);
}

static void prepare_ok_with_wrong_header_is_malformed(void **state)
{
    (void)state;
    static const uint8_t bad[] = {0x01, 0x01, 0x00, 0x00, 0x00, 0x01,
                                  0x00, 0x01, 0x00, 0x00, 0x00, 0x00};
    mr_tracker t;
    start(&t, false, MR_EXPECT_PREPARE);
    assert_int_equal(send_bytes(&t, bad, sizeof(bad)), MR_TRACK_MALFORMED);
}

static void prepare_missing_param_eof_is_malformed(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_PREPARE);
    assert_int_equal(send_prepare_ok(&t, 5, 1, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    /* a column definition where the EOF after the parameters belongs */
    assert_int_equal(send_column_def(&t, "a", TYPE_LONG), MR_TRACK_MALFORMED);
}

static void prepare_missing_column_eof_is_malformed(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_PREPARE);
    assert_int_equal(send_prepare_ok(&t, 5, 1, 0), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_MALFORMED);
}

/* ---- COM_STMT_EXECUTE ---- */

static void execute_ok(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_EXECUTE);
    assert_int_equal(send_ok(&t, 1, 99, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_int_equal(t.last_ok.last_insert_id, 99);
}

static void execute_binary_result_set_with_eofs(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_EXECUTE);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MORE);
    binary_rows_more(&t, 3);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void execute_binary_result_set_deprecate_eof(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_EXECUTE);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    binary_rows_more(&t, 3);
    assert_int_equal(send_ok_fe(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void execute_cursor_eof_is_done(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_EXECUTE);
    assert_int_equal(send_column_count(&t, 2), MR_TRACK_MORE);
    columns_more(&t, 2);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_CURSOR_EXISTS), MR_TRACK_DONE);
    assert_int_equal(t.status & MR_STATUS_CURSOR_EXISTS, MR_STATUS_CURSOR_EXISTS);
    assert_int_equal(t.state, MR_TS_IDLE);
}

static void execute_cursor_deprecate_eof_fe_ok_is_done(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_EXECUTE);
    assert_int_equal(send_column_count(&t, 2), MR_TRACK_MORE);
    columns_more(&t, 2);
    assert_int_equal(send_ok_fe(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_CURSOR_EXISTS), MR_TRACK_DONE);
    assert_true(t.status & MR_STATUS_CURSOR_EXISTS);
}

/* A compound statement (BEGIN NOT ATOMIC FOR r IN (SELECT ...) DO SELECT
 * ...; END FOR; END, or an sql_mode=ORACLE block with an OPEN cursor) run
 * with COM_STMT_EXECUTE: each result set from inside the block carries
 * CURSOR_EXISTS in its column EOF, for the block's own cursor, and MORE_RESULTS.
 * No cursor was opened for the client: the rows follow. Taken from MariaDB
 * 10.11 (status 0x006a). */
static void execute_compound_with_sp_cursor_sends_rows(void **state)
{
    (void)state;
    const uint16_t inside = MR_STATUS_AUTOCOMMIT | MR_STATUS_MORE_RESULTS |
                            MR_STATUS_CURSOR_EXISTS | 0x0020 /* NO_INDEX_USED */;
    mr_tracker t;
    start(&t, false, MR_EXPECT_EXECUTE);
    for (int set = 0; set < 2; set++) {
        assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
        columns_more(&t, 1);
        assert_int_equal(send_eof(&t, inside), MR_TRACK_MORE);
        assert_int_equal(t.state, MR_TS_ROWS);
        binary_rows_more(&t, 1);
        assert_int_equal(send_eof(&t, inside), MR_TRACK_MORE);
    }
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT | 0x0020), MR_TRACK_DONE);
    assert_false(t.ended_with_err);
}

/* The same block under DEPRECATE_EOF: no column EOF, the 0xFE OK ends each set. */
static void execute_compound_with_sp_cursor_deprecate_eof(void **state)
{
    (void)state;
    const uint16_t inside = MR_STATUS_AUTOCOMMIT | MR_STATUS_MORE_RESULTS | MR_STATUS_CURSOR_EXISTS;
    mr_tracker t;
    start(&t, true, MR_EXPECT_EXECUTE);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    binary_rows_more(&t, 1);
    assert_int_equal(send_ok_fe(&t, inside), MR_TRACK_MORE);
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

/* CALL with OUT parameters: the parameter row set, then the final OK. */
static void execute_out_params_then_ok(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_EXECUTE);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(
        send_eof(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_PS_OUT_PARAMS | MR_STATUS_MORE_RESULTS),
        MR_TRACK_MORE);
    binary_rows_more(&t, 1);
    assert_int_equal(
        send_eof(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_PS_OUT_PARAMS | MR_STATUS_MORE_RESULTS),
        MR_TRACK_MORE);
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void execute_err(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_EXECUTE);
    assert_int_equal(send_err(&t, 1243, "HY000", "Unknown prepared statement handler"),
                     MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

/* ---- COM_STMT_FETCH ---- */

static void fetch_rows_then_last_row_sent(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_FETCH);
    assert_int_equal(t.state, MR_TS_ROWS);
    binary_rows_more(&t, 5);
    assert_int_equal(
        send_eof(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_CURSOR_EXISTS | MR_STATUS_LAST_ROW_SENT),
        MR_TRACK_DONE);
    assert_true(t.status & MR_STATUS_LAST_ROW_SENT);
}

static void fetch_rows_with_cursor_still_open(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_FETCH);
    binary_rows_more(&t, 2);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_CURSOR_EXISTS), MR_TRACK_DONE);
    assert_false(t.status & MR_STATUS_LAST_ROW_SENT);
}

static void fetch_deprecate_eof_ends_with_fe_ok(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_FETCH);
    binary_rows_more(&t, 2);
    assert_int_equal(send_ok_fe(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_LAST_ROW_SENT), MR_TRACK_DONE);
}

static void fetch_more_results_flag_does_not_continue(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_FETCH);
    binary_rows_more(&t, 1);
    assert_int_equal(
        send_eof(&t, MR_STATUS_AUTOCOMMIT | MR_STATUS_MORE_RESULTS | MR_STATUS_LAST_ROW_SENT),
        MR_TRACK_DONE);
    assert_int_equal(t.state, MR_TS_IDLE);
}

static void fetch_err(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_FETCH);
    assert_int_equal(send_err(&t, 1421, "HY000", "The statement (1) has no open cursor."),
                     MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

/* ---- COM_FIELD_LIST ---- */

static void field_list_definitions_then_eof(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_FIELD_LIST);
    assert_int_equal(t.state, MR_TS_FIELDS);
    columns_more(&t, 4);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void field_list_deprecate_eof_ends_with_fe_ok(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_EXPECT_FIELD_LIST);
    columns_more(&t, 2);
    assert_int_equal(send_ok_fe(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void field_list_empty_table_is_just_eof(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_FIELD_LIST);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void field_list_err(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_FIELD_LIST);
    assert_int_equal(send_err(&t, 1146, "42S02", "Table 'shop.nope' doesn't exist"), MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

/* ---- single-packet commands ---- */

static void statistics_string_is_done(void **state)
{
    (void)state;
    static const char stats[] = "Uptime: 3600  Threads: 2  Questions: 17  Slow queries: 0  "
                                "Opens: 33  Open tables: 26  Queries per second avg: 0.004";
    mr_tracker t;
    start(&t, false, mr_expect_for_command(MR_COM_STATISTICS));
    assert_int_equal(t.state, MR_TS_ONE);
    assert_int_equal(send_bytes(&t, stats, sizeof(stats) - 1), MR_TRACK_DONE);
    assert_int_equal(t.state, MR_TS_IDLE);
}

static void ping_ok_is_done(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, mr_expect_for_command(MR_COM_PING));
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void set_option_eof_is_done(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, mr_expect_for_command(MR_COM_SET_OPTION));
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void init_db_err_is_done(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, mr_expect_for_command(MR_COM_INIT_DB));
    assert_int_equal(send_err(&t, 1049, "42000", "Unknown database 'nope'"), MR_TRACK_DONE);
    assert_int_equal(t.state, MR_TS_IDLE);
}

/*
 * Regression (proto/tracker.c, mr_tracker_feed, case MR_TS_ONE, fixed): a single-packet response
 * is not inspected, so an ERR does not set `ended_with_err`.
 */
static void one_err_sets_ended_with_err(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, mr_expect_for_command(MR_COM_INIT_DB));
    assert_int_equal(send_err(&t, 1049, "42000", "Unknown database 'nope'"), MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

/*
 * Regression (proto/tracker.c, mr_tracker_feed, case MR_TS_ONE, fixed): the OK answering a
 * single-packet command (COM_RESET_CONNECTION here) does not update
 * `status` / `last_ok`, so the tracker keeps the stale IN_TRANS status.
 */
static void one_ok_updates_status(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT); /* BEGIN */
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT | MR_STATUS_IN_TRANS), MR_TRACK_DONE);
    mr_tracker_begin(&t, mr_expect_for_command(MR_COM_RESET_CONNECTION));
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_int_equal(t.status, MR_STATUS_AUTOCOMMIT);
}

/* ---- authentication (handshake and COM_CHANGE_USER) ---- */

static void auth_caching_sha2_fast_path(void **state)
{
    (void)state;
    static const uint8_t fast_auth_ok[] = {0x01, 0x03};
    mr_tracker t;
    start(&t, true, MR_EXPECT_AUTH);
    assert_int_equal(send_bytes(&t, fast_auth_ok, sizeof(fast_auth_ok)), MR_TRACK_MORE);
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_false(t.ended_with_err);
    assert_int_equal(t.status, MR_STATUS_AUTOCOMMIT);
}

static void auth_caching_sha2_full_path(void **state)
{
    (void)state;
    static const uint8_t perform_full_auth[] = {0x01, 0x04};
    static const char pem[] = "-----BEGIN PUBLIC KEY-----\n"
                              "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
                              "-----END PUBLIC KEY-----\n";
    mr_tracker t;
    start(&t, true, MR_EXPECT_AUTH);
    assert_int_equal(send_bytes(&t, perform_full_auth, sizeof(perform_full_auth)), MR_TRACK_MORE);
    /* the client asks for the public key (0x02); the server sends it */
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0x01);
    mr_buf_put_str(&b, pem);
    assert_int_equal(feed_buf(&t, &b), MR_TRACK_MORE);
    /* the client sends the RSA-encrypted password */
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_false(t.ended_with_err);
}

static void auth_switch_then_ok(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_AUTH);
    assert_int_equal(send_auth_switch(&t, "mysql_native_password", 20), MR_TRACK_MORE);
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
}

static void auth_mariadb_ed25519_switch(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, mr_expect_for_command(MR_COM_CHANGE_USER));
    assert_int_equal(t.state, MR_TS_AUTH);
    assert_int_equal(send_auth_switch(&t, "client_ed25519", 32), MR_TRACK_MORE);
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_false(t.ended_with_err);
}

static void auth_err(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_AUTH);
    assert_int_equal(send_err(&t, 1045, "28000",
                              "Access denied for user 'app'@'10.0.0.9' "
                              "(using password: YES)"),
                     MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

static void auth_switch_then_err(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_AUTH);
    assert_int_equal(send_auth_switch(&t, "mysql_native_password", 20), MR_TRACK_MORE);
    assert_int_equal(send_err(&t, 1045, "28000", "Access denied"), MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

static void begin_clears_ended_with_err(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_err(&t, 1064, "42000", "syntax"), MR_TRACK_DONE);
    assert_true(t.ended_with_err);
    mr_tracker_begin(&t, MR_EXPECT_RESULT);
    assert_false(t.ended_with_err);
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_false(t.ended_with_err);
}

/* ---- malformed and unsolicited packets ---- */

static void idle_packet_is_malformed(void **state)
{
    (void)state;
    mr_tracker t;
    mr_tracker_init(&t, false);
    assert_int_equal(t.state, MR_TS_IDLE);
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_MALFORMED);
    assert_int_equal(send_err(&t, 1927, "70100", "Connection was killed"), MR_TRACK_MALFORMED);
}

static void packet_after_done_is_malformed(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_MALFORMED);
}

static void packet_after_no_reply_command_is_malformed(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, mr_expect_for_command(MR_COM_STMT_CLOSE));
    assert_int_equal(t.state, MR_TS_IDLE);
    assert_int_equal(send_ok(&t, 0, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_MALFORMED);
}

static void column_count_with_trailing_bytes_is_malformed(void **state)
{
    (void)state;
    static const uint8_t bad[] = {0x02, 0x00};
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_bytes(&t, bad, sizeof(bad)), MR_TRACK_MALFORMED);
}

static void column_count_truncated_lenenc_is_malformed(void **state)
{
    (void)state;
    static const uint8_t bad[] = {0xfc, 0x01};
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_bytes(&t, bad, sizeof(bad)), MR_TRACK_MALFORMED);
}

static void column_count_zero_is_malformed(void **state)
{
    (void)state;
    static const uint8_t zero[] = {0xfc, 0x00, 0x00};
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_bytes(&t, zero, sizeof(zero)), MR_TRACK_MALFORMED);
}

static void column_count_fe_headed_is_malformed(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_MALFORMED);
}

static void empty_first_packet_is_malformed(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(mr_tracker_feed(&t, NULL, 0, 0), MR_TRACK_MALFORMED);
}

static void malformed_ok_is_malformed(void **state)
{
    (void)state;
    static const uint8_t bad_ok[] = {0x00, 0xfb, 0x00, 0x02, 0x00, 0x00, 0x00};
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_bytes(&t, bad_ok, sizeof(bad_ok)), MR_TRACK_MALFORMED);
}

static void row_where_column_eof_belongs_is_malformed(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_text_row(&t, "1", NULL), MR_TRACK_MALFORMED);
}

static void long_fe_packet_where_column_eof_belongs_is_malformed(void **state)
{
    (void)state;
    static const uint8_t fe9[] = {0xfe, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00};
    mr_tracker t;
    start(&t, false, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_bytes(&t, fe9, sizeof(fe9)), MR_TRACK_MALFORMED);
}

static void malformed_fe_ok_terminator_is_malformed(void **state)
{
    (void)state;
    static const uint8_t bad[] = {0xfe, 0xfb, 0x00, 0x02, 0x00, 0x00, 0x00};
    mr_tracker t;
    start(&t, true, MR_EXPECT_RESULT);
    assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
    columns_more(&t, 1);
    assert_int_equal(send_bytes(&t, bad, sizeof(bad)), MR_TRACK_MALFORMED);
}

/* ---- command table ---- */

static mr_expect expected_for(unsigned cmd)
{
    switch (cmd) {
    case MR_COM_QUIT:
    case MR_COM_STMT_SEND_LONG_DATA:
    case MR_COM_STMT_CLOSE: return MR_EXPECT_NONE;
    case MR_COM_INIT_DB:
    case MR_COM_CREATE_DB:
    case MR_COM_DROP_DB:
    case MR_COM_REFRESH:
    case MR_COM_SHUTDOWN:
    case MR_COM_STATISTICS:
    case MR_COM_PROCESS_KILL:
    case MR_COM_DEBUG:
    case MR_COM_PING:
    case MR_COM_STMT_RESET:
    case MR_COM_SET_OPTION:
    case MR_COM_RESET_CONNECTION: return MR_EXPECT_ONE;
    case MR_COM_QUERY:
    case MR_COM_PROCESS_INFO: return MR_EXPECT_RESULT;
    case MR_COM_FIELD_LIST: return MR_EXPECT_FIELD_LIST;
    case MR_COM_CHANGE_USER: return MR_EXPECT_AUTH;
    case MR_COM_STMT_PREPARE: return MR_EXPECT_PREPARE;
    case MR_COM_STMT_EXECUTE:
    case MR_COM_STMT_BULK_EXECUTE: return MR_EXPECT_EXECUTE;
    case MR_COM_STMT_FETCH: return MR_EXPECT_FETCH;
    default: return MR_EXPECT_UNSUPPORTED;
    }
}

static void expect_for_every_command_byte(void **state)
{
    (void)state;
    for (unsigned cmd = 0; cmd < 256; cmd++) {
        if (mr_expect_for_command((uint8_t)cmd) != expected_for(cmd))
            fail_msg("command 0x%02x: expect %d, want %d", cmd,
                     (int)mr_expect_for_command((uint8_t)cmd), (int)expected_for(cmd));
    }
}

static void command_names(void **state)
{
    (void)state;
    static const char *const names[0x20] = {
        [0x00] = "COM_SLEEP",
        [0x01] = "COM_QUIT",
        [0x02] = "COM_INIT_DB",
        [0x03] = "COM_QUERY",
        [0x04] = "COM_FIELD_LIST",
        [0x05] = "COM_CREATE_DB",
        [0x06] = "COM_DROP_DB",
        [0x07] = "COM_REFRESH",
        [0x08] = "COM_SHUTDOWN",
        [0x09] = "COM_STATISTICS",
        [0x0a] = "COM_PROCESS_INFO",
        [0x0b] = "COM_CONNECT",
        [0x0c] = "COM_PROCESS_KILL",
        [0x0d] = "COM_DEBUG",
        [0x0e] = "COM_PING",
        [0x0f] = "COM_TIME",
        [0x10] = "COM_DELAYED_INSERT",
        [0x11] = "COM_CHANGE_USER",
        [0x12] = "COM_BINLOG_DUMP",
        [0x13] = "COM_TABLE_DUMP",
        [0x14] = "COM_CONNECT_OUT",
        [0x15] = "COM_REGISTER_SLAVE",
        [0x16] = "COM_STMT_PREPARE",
        [0x17] = "COM_STMT_EXECUTE",
        [0x18] = "COM_STMT_SEND_LONG_DATA",
        [0x19] = "COM_STMT_CLOSE",
        [0x1a] = "COM_STMT_RESET",
        [0x1b] = "COM_SET_OPTION",
        [0x1c] = "COM_STMT_FETCH",
        [0x1d] = "COM_DAEMON",
        [0x1e] = "COM_BINLOG_DUMP_GTID",
        [0x1f] = "COM_RESET_CONNECTION",
    };
    for (unsigned cmd = 0; cmd < 256; cmd++) {
        const char *want = cmd < 0x20                        ? names[cmd]
                           : cmd == MR_COM_STMT_BULK_EXECUTE ? "COM_STMT_BULK_EXECUTE"
                                                             : "unknown command";
        assert_string_equal(mr_command_name((uint8_t)cmd), want);
    }
}

static void begin_sets_initial_state_per_expectation(void **state)
{
    (void)state;
    static const struct {
        mr_expect expect;
        mr_track_state state;
    } cases[] = {
        {MR_EXPECT_UNSUPPORTED, MR_TS_IDLE},  {MR_EXPECT_NONE, MR_TS_IDLE},
        {MR_EXPECT_ONE, MR_TS_ONE},           {MR_EXPECT_RESULT, MR_TS_FIRST},
        {MR_EXPECT_EXECUTE, MR_TS_FIRST},     {MR_EXPECT_FETCH, MR_TS_ROWS},
        {MR_EXPECT_FIELD_LIST, MR_TS_FIELDS}, {MR_EXPECT_PREPARE, MR_TS_FIRST},
        {MR_EXPECT_AUTH, MR_TS_AUTH},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mr_tracker t;
        start(&t, false, cases[i].expect);
        assert_int_equal(t.state, cases[i].state);
        assert_int_equal(t.expect, cases[i].expect);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(query_ok_is_done),
        cmocka_unit_test(query_err_is_done),
        cmocka_unit_test(query_ok_with_more_results_then_result_set),
        cmocka_unit_test(query_text_result_set_with_eofs),
        cmocka_unit_test(query_text_result_set_without_rows),
        cmocka_unit_test(query_deprecate_eof_ends_with_fe_ok),
        cmocka_unit_test(query_deprecate_eof_without_rows),
        cmocka_unit_test(query_deprecate_eof_accepts_short_eof_terminator),
        cmocka_unit_test(query_huge_row_starting_with_fe_is_a_row_deprecate_eof),
        cmocka_unit_test(query_huge_row_starting_with_fe_is_a_row_with_eofs),
        cmocka_unit_test(query_nine_byte_fe_row_is_a_row_with_eofs),
        cmocka_unit_test(query_null_first_column_row_is_a_row),
        cmocka_unit_test(query_251_columns),
        cmocka_unit_test(query_two_result_sets_then_final_ok),
        cmocka_unit_test(query_two_result_sets_then_final_ok_deprecate_eof),
        cmocka_unit_test(query_multi_statement_two_result_sets),
        cmocka_unit_test(query_multi_statement_error_in_second),
        cmocka_unit_test(query_err_in_middle_of_rows),
        cmocka_unit_test(query_err_in_middle_of_rows_deprecate_eof),
        cmocka_unit_test(query_err_instead_of_column_eof),
        cmocka_unit_test(query_column_eof_status_does_not_end_response),
        cmocka_unit_test(infile_request_then_ok),
        cmocka_unit_test(infile_request_then_err),
        cmocka_unit_test(infile_then_more_results),
        cmocka_unit_test(infile_request_after_execute),
        cmocka_unit_test(infile_request_only_where_a_statement_runs),
        cmocka_unit_test(infile_server_packet_while_client_sends_is_malformed),
        cmocka_unit_test(infile_done_outside_infile_changes_nothing),
        cmocka_unit_test(prepare_params_and_columns_with_eofs),
        cmocka_unit_test(prepare_params_and_columns_deprecate_eof),
        cmocka_unit_test(prepare_without_params_or_columns),
        cmocka_unit_test(prepare_only_params_with_eof),
        cmocka_unit_test(prepare_only_params_deprecate_eof),
        cmocka_unit_test(prepare_only_columns_with_eof),
        cmocka_unit_test(prepare_only_columns_deprecate_eof),
        cmocka_unit_test(prepare_err),
        cmocka_unit_test(prepare_truncated_ok_is_malformed),
        cmocka_unit_test(prepare_ok_with_wrong_header_is_malformed),
        cmocka_unit_test(prepare_missing_param_eof_is_malformed),
        cmocka_unit_test(prepare_missing_column_eof_is_malformed),
        cmocka_unit_test(execute_ok),
        cmocka_unit_test(execute_binary_result_set_with_eofs),
        cmocka_unit_test(execute_binary_result_set_deprecate_eof),
        cmocka_unit_test(execute_cursor_eof_is_done),
        cmocka_unit_test(execute_cursor_deprecate_eof_fe_ok_is_done),
        cmocka_unit_test(execute_compound_with_sp_cursor_sends_rows),
        cmocka_unit_test(execute_compound_with_sp_cursor_deprecate_eof),
        cmocka_unit_test(execute_out_params_then_ok),
        cmocka_unit_test(execute_err),
        cmocka_unit_test(fetch_rows_then_last_row_sent),
        cmocka_unit_test(fetch_rows_with_cursor_still_open),
        cmocka_unit_test(fetch_deprecate_eof_ends_with_fe_ok),
        cmocka_unit_test(fetch_more_results_flag_does_not_continue),
        cmocka_unit_test(fetch_err),
        cmocka_unit_test(field_list_definitions_then_eof),
        cmocka_unit_test(field_list_deprecate_eof_ends_with_fe_ok),
        cmocka_unit_test(field_list_empty_table_is_just_eof),
        cmocka_unit_test(field_list_err),
        cmocka_unit_test(statistics_string_is_done),
        cmocka_unit_test(ping_ok_is_done),
        cmocka_unit_test(set_option_eof_is_done),
        cmocka_unit_test(init_db_err_is_done),
        cmocka_unit_test(one_err_sets_ended_with_err),
        cmocka_unit_test(one_ok_updates_status),
        cmocka_unit_test(auth_caching_sha2_fast_path),
        cmocka_unit_test(auth_caching_sha2_full_path),
        cmocka_unit_test(auth_switch_then_ok),
        cmocka_unit_test(auth_mariadb_ed25519_switch),
        cmocka_unit_test(auth_err),
        cmocka_unit_test(auth_switch_then_err),
        cmocka_unit_test(begin_clears_ended_with_err),
        cmocka_unit_test(idle_packet_is_malformed),
        cmocka_unit_test(packet_after_done_is_malformed),
        cmocka_unit_test(packet_after_no_reply_command_is_malformed),
        cmocka_unit_test(column_count_with_trailing_bytes_is_malformed),
        cmocka_unit_test(column_count_truncated_lenenc_is_malformed),
        cmocka_unit_test(column_count_zero_is_malformed),
        cmocka_unit_test(column_count_fe_headed_is_malformed),
        cmocka_unit_test(empty_first_packet_is_malformed),
        cmocka_unit_test(malformed_ok_is_malformed),
        cmocka_unit_test(row_where_column_eof_belongs_is_malformed),
        cmocka_unit_test(long_fe_packet_where_column_eof_belongs_is_malformed),
        cmocka_unit_test(malformed_fe_ok_terminator_is_malformed),
        cmocka_unit_test(expect_for_every_command_byte),
        cmocka_unit_test(command_names),
        cmocka_unit_test(begin_sets_initial_state_per_expectation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
