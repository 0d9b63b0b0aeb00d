/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_tracker_metadata.c - unit tests for proto/tracker.c under MySQL 8's
 * CLIENT_OPTIONAL_RESULTSET_METADATA: every column count carries a
 * metadata_follows byte, and so does a prepare-OK (at byte 12, after the
 * warning count); under `SET resultset_metadata = NONE` it is 0 and no
 * definitions follow, only the EOFs without DEPRECATE_EOF. Packets are built
 * by hand as mysqld 8 sends them and fed as the session feeds them.
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

static void start(mr_tracker *t, bool deprecate_eof, bool optional, mr_expect expect)
{
    mr_tracker_init(t, deprecate_eof);
    mr_tracker_set_optional_metadata(t, optional);
    mr_tracker_begin(t, expect);
}

static mr_track_result send_text_row(mr_tracker *t, const char *v)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_lenenc_str(&b, v, strlen(v));
    return feed_buf(t, &b);
}

/* COM_STMT_PREPARE_OK: 0x00, id, columns, params, filler, warnings, and
 * metadata_follows when follows >= 0. */
static mr_track_result send_prepare_ok(mr_tracker *t, uint16_t cols, uint16_t params, int follows)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0x00);
    mr_buf_put_u32(&b, 7);
    mr_buf_put_u16(&b, cols);
    mr_buf_put_u16(&b, params);
    mr_buf_put_u8(&b, 0);
    mr_buf_put_u16(&b, 0);
    if (follows >= 0)
        mr_buf_put_u8(&b, (uint8_t)follows);
    return feed_buf(t, &b);
}

/* resultset_metadata = FULL: the byte is 1 and the definitions come. */
static void full_metadata_text_result(void **state)
{
    (void)state;
    for (int dep = 0; dep < 2; dep++) {
        mr_tracker t;
        start(&t, dep, true, MR_EXPECT_RESULT);
        assert_int_equal(send_count(&t, 1, 1), MR_TRACK_MORE);
        assert_int_equal(t.state, MR_TS_COLUMNS);
        assert_int_equal(send_column_def(&t), MR_TRACK_MORE);
        if (!dep)
            assert_int_equal(send_eof(&t, 0), MR_TRACK_MORE);
        assert_int_equal(send_text_row(&t, "1"), MR_TRACK_MORE);
        assert_int_equal(dep ? send_fe_ok(&t, MR_STATUS_AUTOCOMMIT)
                             : send_eof(&t, MR_STATUS_AUTOCOMMIT),
                         MR_TRACK_DONE);
        assert_false(t.ended_with_err);
    }
}

/* resultset_metadata = NONE: the byte is 0; the rows come next (after the
 * EOF without DEPRECATE_EOF), in text and binary results alike. */
static void no_metadata_results(void **state)
{
    (void)state;
    mr_expect kinds[] = {MR_EXPECT_RESULT, MR_EXPECT_EXECUTE};
    for (int k = 0; k < 2; k++)
        for (int dep = 0; dep < 2; dep++) {
            mr_tracker t;
            start(&t, dep, true, kinds[k]);
            assert_int_equal(send_count(&t, 3, 0), MR_TRACK_MORE);
            assert_int_equal(t.state, dep ? MR_TS_ROWS : MR_TS_COLUMNS_EOF);
            if (!dep)
                assert_int_equal(send_eof(&t, 0), MR_TRACK_MORE);
            assert_int_equal(send_text_row(&t, "x"), MR_TRACK_MORE);
            assert_int_equal(send_text_row(&t, "y"), MR_TRACK_MORE);
            assert_int_equal(dep ? send_fe_ok(&t, 0) : send_eof(&t, 0), MR_TRACK_DONE);
            assert_false(t.ended_with_err);
        }
}

/* Two result sets of a multi-statement, the first without definitions. */
static void no_metadata_then_more_results(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, true, true, MR_EXPECT_RESULT);
    assert_int_equal(send_count(&t, 1, 0), MR_TRACK_MORE);
    assert_int_equal(send_text_row(&t, "1"), MR_TRACK_MORE);
    assert_int_equal(send_fe_ok(&t, MR_STATUS_MORE_RESULTS), MR_TRACK_MORE);
    assert_int_equal(send_count(&t, 1, 0), MR_TRACK_MORE);
    assert_int_equal(send_text_row(&t, "2"), MR_TRACK_MORE);
    assert_int_equal(send_fe_ok(&t, 0), MR_TRACK_DONE);
}

/* A cursor opened on an execute without definitions ends at its EOF. */
static void no_metadata_cursor(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, true, MR_EXPECT_EXECUTE);
    assert_int_equal(send_count(&t, 2, 0), MR_TRACK_MORE);
    assert_int_equal(send_eof(&t, MR_STATUS_CURSOR_EXISTS), MR_TRACK_DONE);
}

/* The byte is missing or neither 0 nor 1: not a column count; and
 * without the capability there is no byte (the count alone is one). */
static void bad_counts(void **state)
{
    (void)state;
    mr_tracker t;
    start(&t, false, true, MR_EXPECT_RESULT);
    assert_int_equal(send_count(&t, 2, -1), MR_TRACK_MALFORMED);
    start(&t, false, true, MR_EXPECT_RESULT);
    assert_int_equal(send_count(&t, 2, 2), MR_TRACK_MALFORMED);
    start(&t, false, false, MR_EXPECT_RESULT);
    assert_int_equal(send_count(&t, 2, 0), MR_TRACK_MALFORMED);
    start(&t, false, false, MR_EXPECT_RESULT);
    assert_int_equal(send_count(&t, 2, -1), MR_TRACK_MORE);
    assert_int_equal(t.state, MR_TS_COLUMNS);
}

/* A prepare-OK with metadata_follows 0: no parameter or column
 * definitions; their EOFs still come without DEPRECATE_EOF. */
static void prepare_without_metadata(void **state)
{
    (void)state;
    for (int dep = 0; dep < 2; dep++) {
        mr_tracker t;
        start(&t, dep, true, MR_EXPECT_PREPARE);
        assert_int_equal(send_prepare_ok(&t, 3, 2, 0), dep ? MR_TRACK_DONE : MR_TRACK_MORE);
        if (!dep) {
            assert_int_equal(send_eof(&t, 0), MR_TRACK_MORE); /* after the parameters */
            assert_int_equal(send_eof(&t, 0), MR_TRACK_DONE); /* after the columns */
        }
        assert_int_equal(t.stmt_id, 7);
        /* only columns, or only parameters */
        start(&t, dep, true, MR_EXPECT_PREPARE);
        assert_int_equal(send_prepare_ok(&t, 1, 0, 0), dep ? MR_TRACK_DONE : MR_TRACK_MORE);
        if (!dep)
            assert_int_equal(send_eof(&t, 0), MR_TRACK_DONE);
        start(&t, dep, true, MR_EXPECT_PREPARE);
        assert_int_equal(send_prepare_ok(&t, 0, 1, 0), dep ? MR_TRACK_DONE : MR_TRACK_MORE);
        if (!dep)
            assert_int_equal(send_eof(&t, 0), MR_TRACK_DONE);
        start(&t, dep, true, MR_EXPECT_PREPARE);
        assert_int_equal(send_prepare_ok(&t, 0, 0, 0), MR_TRACK_DONE);
    }
}

/* metadata_follows 1, a prepare-OK of 12 bytes (no byte: an older server's
 * form), and a byte of 2. */
static void prepare_with_metadata(void **state)
{
    (void)state;
    for (int follows = 1; follows >= -1; follows -= 2) {
        mr_tracker t;
        start(&t, true, true, MR_EXPECT_PREPARE);
        assert_int_equal(send_prepare_ok(&t, 1, 1, follows), MR_TRACK_MORE);
        assert_int_equal(send_column_def(&t), MR_TRACK_MORE); /* the parameter */
        assert_int_equal(send_column_def(&t), MR_TRACK_DONE); /* the column */
    }
    mr_tracker t;
    start(&t, true, true, MR_EXPECT_PREPARE);
    assert_int_equal(send_prepare_ok(&t, 1, 1, 2), MR_TRACK_MALFORMED);
    /* without the capability a byte there is ignored, as it always was */
    start(&t, true, false, MR_EXPECT_PREPARE);
    assert_int_equal(send_prepare_ok(&t, 1, 0, 0), MR_TRACK_MORE);
    assert_int_equal(send_column_def(&t), MR_TRACK_DONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_metadata_text_result),
        cmocka_unit_test(no_metadata_results),
        cmocka_unit_test(no_metadata_then_more_results),
        cmocka_unit_test(no_metadata_cursor),
        cmocka_unit_test(bad_counts),
        cmocka_unit_test(prepare_without_metadata),
        cmocka_unit_test(prepare_with_metadata),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
