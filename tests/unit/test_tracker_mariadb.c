/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_tracker_mariadb.c - unit tests for proto/tracker.c under MariaDB's
 * protocol extensions: progress reports inside a response, the answers to
 * COM_STMT_BULK_EXECUTE, result sets that leave their column definitions
 * out (MARIADB_CLIENT_CACHE_METADATA). Packets are built by hand and fed as
 * the session feeds them (the first min(len, MR_TRACK_PREFIX) bytes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/proto/tracker.h"
#include "tracker_packets.h"

static void start(mr_tracker *t, bool deprecate_eof, uint32_t mariadb_caps, mr_expect expect)
{
    mr_tracker_init(t, deprecate_eof);
    mr_tracker_set_mariadb(t, mariadb_caps);
    mr_tracker_begin(t, expect);
}

static mr_track_result send_ok(mr_tracker *t, uint64_t affected, uint64_t id, uint16_t status)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0x00);
    mr_buf_put_lenenc(&b, affected);
    mr_buf_put_lenenc(&b, id);
    mr_buf_put_u16(&b, status);
    mr_buf_put_u16(&b, 0);
    return feed_buf(t, &b);
}

static mr_track_result send_binary_row(mr_tracker *t, uint32_t v)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0x00);
    mr_buf_put_u8(&b, 0x00);
    mr_buf_put_u32(&b, v);
    return feed_buf(t, &b);
}

static mr_track_result send_err(mr_tracker *t, uint16_t code)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0xff);
    mr_buf_put_u16(&b, code);
    mr_buf_put(&b, "#HY000", 6);
    mr_buf_put_str(&b, "failed");
    return feed_buf(t, &b);
}

/* A progress report as mariadbd sends it: 0xFF, code 0xFFFF, one block
 * (stage, max stage, progress in 1/1000 %) and the stage's name. */
static mr_track_result send_progress(mr_tracker *t, uint8_t stage, uint32_t permille)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0xff);
    mr_buf_put_u16(&b, 0xffff);
    mr_buf_put_u8(&b, 1);
    mr_buf_put_u8(&b, stage);
    mr_buf_put_u8(&b, 2);
    mr_buf_put_u24(&b, permille);
    mr_buf_put_lenenc_str(&b, "copy to tmp table", 17);
    return feed_buf(t, &b);
}

/* ---- progress reports ---- */

static void progress_before_ok_keeps_the_response_open(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_MARIADB_CAP_PROGRESS, MR_EXPECT_RESULT);
    assert_int_equal(send_progress(&t, 1, 1000), MR_TRACK_MORE);
    assert_int_equal(send_progress(&t, 2, 50000), MR_TRACK_MORE);
    assert_false(t.ended_with_err);
    assert_int_equal(send_ok(&t, 400, 0, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_false(t.ended_with_err);
    assert_int_equal(t.last_ok.affected_rows, 400);
}

static void progress_between_results_and_before_err(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, MR_MARIADB_CAP_PROGRESS, MR_EXPECT_RESULT);
    assert_int_equal(send_ok(&t, 1, 0, MR_STATUS_MORE_RESULTS), MR_TRACK_MORE);
    assert_int_equal(send_progress(&t, 1, 10), MR_TRACK_MORE);
    assert_int_equal(send_err(&t, 1062), MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

/* Without the capability the server sends none; a packet that looks like
 * one is an ERR and ends the response, as before. */
static void progress_without_the_capability_is_an_err(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, 0, MR_EXPECT_RESULT);
    assert_int_equal(send_progress(&t, 1, 10), MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

static void progress_in_one_packet_response(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_MARIADB_CAP_PROGRESS, MR_EXPECT_ONE);
    assert_int_equal(send_progress(&t, 1, 10), MR_TRACK_MORE);
    assert_int_equal(send_ok(&t, 0, 0, 0), MR_TRACK_DONE);
}

/* An idle tracker takes nothing, progress report or not. */
static void progress_when_nothing_was_asked_is_malformed(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_MARIADB_CAP_PROGRESS, MR_EXPECT_NONE);
    assert_int_equal(send_progress(&t, 1, 10), MR_TRACK_MALFORMED);
}

/* ---- COM_STMT_BULK_EXECUTE ---- */

static void bulk_execute_is_answered_like_an_execute(void **state)
{
    (void)state;
    assert_int_equal(mr_expect_for_command(MR_COM_STMT_BULK_EXECUTE), MR_EXPECT_EXECUTE);
    assert_string_equal(mr_command_name(MR_COM_STMT_BULK_EXECUTE), "COM_STMT_BULK_EXECUTE");
}

/* One OK for all the rows: affected rows and the first id. */
static void bulk_ok_for_all_rows(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_MARIADB_CAP_BULK, mr_expect_for_command(MR_COM_STMT_BULK_EXECUTE));
    assert_int_equal(send_ok(&t, 50, 1000, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
    assert_int_equal(t.last_ok.affected_rows, 50);
    assert_int_equal(t.last_ok.last_insert_id, 1000);
}

static mr_track_result send_column_count(mr_tracker *t, uint64_t n) { return send_count(t, n, -1); }

/* INSERT ... RETURNING: one binary result set with a row per inserted row. */
static void bulk_returning_result_set(void **state)
{
    (void)state;
    for (int deprecate_eof = 0; deprecate_eof < 2; deprecate_eof++) {
        mr_tracker t;
        start(&t, deprecate_eof, MR_MARIADB_CAP_BULK,
              mr_expect_for_command(MR_COM_STMT_BULK_EXECUTE));
        assert_int_equal(send_column_count(&t, 1), MR_TRACK_MORE);
        assert_int_equal(send_column_def(&t), MR_TRACK_MORE);
        if (!deprecate_eof)
            assert_int_equal(send_eof(&t, 0), MR_TRACK_MORE);
        for (uint32_t i = 0; i < 3; i++)
            assert_int_equal(send_binary_row(&t, 1000 + i), MR_TRACK_MORE);
        assert_int_equal(send_eof(&t, MR_STATUS_AUTOCOMMIT), MR_TRACK_DONE);
        assert_false(t.ended_with_err);
    }
}

/* A row that fails (a duplicate key) ends the response with its ERR. */
static void bulk_err_ends_it(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_MARIADB_CAP_BULK, mr_expect_for_command(MR_COM_STMT_BULK_EXECUTE));
    assert_int_equal(send_err(&t, 1062), MR_TRACK_DONE);
    assert_true(t.ended_with_err);
}

/* ---- MARIADB_CLIENT_CACHE_METADATA ---- */

/* As mariadbd answers an execute whose columns the prepare sent: count 2,
 * "metadata follows" 0, then (without DEPRECATE_EOF) the EOF, the rows. */
static void cached_metadata_execute_without_definitions(void **state)
{
    (void)state;
    for (int dep = 0; dep < 2; dep++) {
        mr_tracker t;
        start(&t, dep, MR_MARIADB_CAP_CACHE_METADATA, MR_EXPECT_EXECUTE);
        assert_int_equal(send_count(&t, 2, 0), MR_TRACK_MORE);
        if (!dep)
            assert_int_equal(send_eof(&t, 0), MR_TRACK_MORE);
        assert_int_equal(send_binary_row(&t, 1), MR_TRACK_MORE);
        assert_int_equal(send_binary_row(&t, 2), MR_TRACK_MORE);
        assert_int_equal(dep ? send_fe_ok(&t, 0) : send_eof(&t, 0), MR_TRACK_DONE);
        assert_false(t.ended_with_err);
    }
}

/* "metadata follows" 1 (every text result set): the definitions come. */
static void cached_metadata_follows_one_sends_definitions(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_MARIADB_CAP_CACHE_METADATA, MR_EXPECT_RESULT);
    assert_int_equal(send_count(&t, 1, 1), MR_TRACK_MORE);
    assert_int_equal(t.state, MR_TS_COLUMNS);
    assert_int_equal(send_column_def(&t), MR_TRACK_MORE);
    assert_int_equal(send_eof(&t, 0), MR_TRACK_MORE);
    assert_int_equal(send_eof(&t, 0), MR_TRACK_DONE);
}

/* A cursor opened on an execute without definitions ends at the EOF. */
static void cached_metadata_cursor(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_MARIADB_CAP_CACHE_METADATA, MR_EXPECT_EXECUTE);
    assert_int_equal(send_count(&t, 3, 0), MR_TRACK_MORE);
    assert_int_equal(send_eof(&t, MR_STATUS_CURSOR_EXISTS), MR_TRACK_DONE);
}

/* The byte is missing or is neither 0 nor 1; or present without the
 * capability: not a column count. */
static void cached_metadata_bad_count_packets_are_malformed(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, MR_MARIADB_CAP_CACHE_METADATA, MR_EXPECT_EXECUTE);
    assert_int_equal(send_count(&t, 2, -1), MR_TRACK_MALFORMED);
    start(&t, false, MR_MARIADB_CAP_CACHE_METADATA, MR_EXPECT_EXECUTE);
    assert_int_equal(send_count(&t, 2, 2), MR_TRACK_MALFORMED);
    start(&t, false, 0, MR_EXPECT_EXECUTE);
    assert_int_equal(send_count(&t, 2, 0), MR_TRACK_MALFORMED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(progress_before_ok_keeps_the_response_open),
        cmocka_unit_test(progress_between_results_and_before_err),
        cmocka_unit_test(progress_without_the_capability_is_an_err),
        cmocka_unit_test(progress_in_one_packet_response),
        cmocka_unit_test(progress_when_nothing_was_asked_is_malformed),
        cmocka_unit_test(bulk_execute_is_answered_like_an_execute),
        cmocka_unit_test(bulk_ok_for_all_rows),
        cmocka_unit_test(bulk_returning_result_set),
        cmocka_unit_test(bulk_err_ends_it),
        cmocka_unit_test(cached_metadata_execute_without_definitions),
        cmocka_unit_test(cached_metadata_follows_one_sends_definitions),
        cmocka_unit_test(cached_metadata_cursor),
        cmocka_unit_test(cached_metadata_bad_count_packets_are_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
