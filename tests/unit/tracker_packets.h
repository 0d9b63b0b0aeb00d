/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracker_packets.h - server packets built by hand for the response-tracker
 * unit tests (test_tracker_*.c), each fed to the tracker as the session
 * feeds it: the first MR_TRACK_PREFIX bytes and the payload's length.
 * Include after cmocka.h.
 */
#ifndef MYREWRITE_TEST_TRACKER_PACKETS_H
#define MYREWRITE_TEST_TRACKER_PACKETS_H

#include <stdint.h>
#include <string.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/proto/tracker.h"

static inline mr_track_result feed_buf(mr_tracker *t, mr_buf *b)
{
    assert_false(b->failed);
    size_t n = b->len < MR_TRACK_PREFIX ? b->len : MR_TRACK_PREFIX;
    mr_track_result r = mr_tracker_feed(t, b->data, n, (uint32_t)b->len);
    mr_buf_free(b);
    return r;
}

/* A column count; then the metadata_follows byte when follows >= 0
 * (MariaDB's CACHE_METADATA, MySQL 8's OPTIONAL_RESULTSET_METADATA). */
static inline mr_track_result send_count(mr_tracker *t, uint64_t n, int follows)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_lenenc(&b, n);
    if (follows >= 0)
        mr_buf_put_u8(&b, (uint8_t)follows);
    return feed_buf(t, &b);
}

static inline mr_track_result send_eof(mr_tracker *t, uint16_t status)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0xfe);
    mr_buf_put_u16(&b, 0);
    mr_buf_put_u16(&b, status);
    return feed_buf(t, &b);
}

/* The OK (header 0xFE) that ends rows under DEPRECATE_EOF. */
static inline mr_track_result send_fe_ok(mr_tracker *t, uint16_t status)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_u8(&b, 0xfe);
    mr_buf_put_lenenc(&b, 0);
    mr_buf_put_lenenc(&b, 0);
    mr_buf_put_u16(&b, status);
    mr_buf_put_u16(&b, 0);
    return feed_buf(t, &b);
}

/* The definition of an INT column test.t.id. */
static inline mr_track_result send_column_def(mr_tracker *t)
{
    mr_buf b;
    mr_buf_init(&b);
    static const char *const f[6] = {"def", "test", "t", "t", "id", "id"};
    for (int i = 0; i < 6; i++)
        mr_buf_put_lenenc_str(&b, f[i], strlen(f[i]));
    mr_buf_put_lenenc(&b, 0x0c);
    mr_buf_put_u16(&b, 63);
    mr_buf_put_u32(&b, 11);
    mr_buf_put_u8(&b, 0x03);
    mr_buf_put_u16(&b, 0x0001);
    mr_buf_put_u8(&b, 0);
    mr_buf_put_u16(&b, 0);
    return feed_buf(t, &b);
}

#endif
