/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_tracker.c - the response tracker (proto/tracker.c) fed whole
 * response streams.
 *
 * Feeds: byte 0 picks CLIENT_DEPRECATE_EOF (bit 7), MySQL 8's
 * CLIENT_OPTIONAL_RESULTSET_METADATA (bit 6), MariaDB's
 * MARIADB_CLIENT_PROGRESS (bit 4) and MARIADB_CLIENT_CACHE_METADATA (bit
 * 5), and the expected response (bits 0-3, mod the mr_expect kinds); the
 * remaining bytes are
 * server packets, 4-byte header then payload, fed one by one the way the
 * session feeds them (the first min(len, MR_TRACK_PREFIX) bytes, as soon as
 * they are there; the last packet may be cut short). When a response ends,
 * the next byte picks the expectation of the next pipelined command; after
 * LOCAL INFILE the client's data is taken as sent.
 * Checks beyond no crash: the state after each result agrees with it (DONE:
 * idle; MORE: not idle; CLIENT_NEXT: waiting for the infile data), an
 * ERR-ended response ended on a 0xFF packet, a progress report (with the
 * capability) never ends a response, nothing is accepted when no
 * response is pending, and a second tracker fed each payload whole (when it
 * is in the input) gives the same results: the prefix is enough.
 */
#include "fuzz.h"
#include "myrewrite/proto/tracker.h"

#define EXPECT_KINDS (MR_EXPECT_AUTH + 1)

static void begin(mr_tracker *a, mr_tracker *b, uint8_t pick)
{
    mr_expect e = (mr_expect)((pick & 0x0f) % EXPECT_KINDS);
    mr_tracker_begin(a, e);
    mr_tracker_begin(b, e);
}

static void check_state(const mr_tracker *t, mr_track_result r, const uint8_t *p, size_t n)
{
    FUZZ_CHECK(t->state < MR_TS_MAX);
    switch (r) {
    case MR_TRACK_DONE:
        FUZZ_CHECK(t->state == MR_TS_IDLE);
        FUZZ_CHECK(!t->ended_with_err || (n > 0 && p[0] == 0xff));
        break;
    case MR_TRACK_MORE: FUZZ_CHECK(t->state != MR_TS_IDLE); break;
    case MR_TRACK_CLIENT_NEXT: FUZZ_CHECK(t->state == MR_TS_INFILE); break;
    case MR_TRACK_MALFORMED: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    mr_tracker pre, whole;
    mr_tracker_init(&pre, data[0] & 0x80);
    mr_tracker_init(&whole, data[0] & 0x80);
    uint32_t mariadb = ((data[0] & 0x10) ? MR_MARIADB_CAP_PROGRESS : 0) |
                       ((data[0] & 0x20) ? MR_MARIADB_CAP_CACHE_METADATA : 0);
    mr_tracker_set_mariadb(&pre, mariadb);
    mr_tracker_set_mariadb(&whole, mariadb);
    mr_tracker_set_optional_metadata(&pre, (data[0] & 0x40) != 0);
    mr_tracker_set_optional_metadata(&whole, (data[0] & 0x40) != 0);
    begin(&pre, &whole, data[0]);
    size_t pos = 1;
    while (pos + MR_PKT_HEADER <= size) {
        mr_pkt_header h;
        FUZZ_CHECK(mr_pkt_header_read(data + pos, size - pos, &h) == MR_OK);
        pos += MR_PKT_HEADER;
        size_t have = size - pos;
        size_t n = h.len < MR_TRACK_PREFIX ? h.len : MR_TRACK_PREFIX;
        if (have < n)
            break; /* the session waits for the prefix */
        const uint8_t *p = data + pos;
        bool idle = pre.state == MR_TS_IDLE;
        bool progress = (mariadb & MR_MARIADB_CAP_PROGRESS) && !idle && pre.state != MR_TS_AUTH &&
                        mr_is_progress(p, n);
        mr_track_result r = mr_tracker_feed(&pre, p, n, h.len);
        check_state(&pre, r, p, n);
        FUZZ_CHECK(!idle || r == MR_TRACK_MALFORMED);
        FUZZ_CHECK(!progress || r == MR_TRACK_MORE);
        if (have >= h.len)
            FUZZ_CHECK(mr_tracker_feed(&whole, p, h.len, h.len) == r);
        if (r == MR_TRACK_MALFORMED || have < h.len)
            break;
        pos += h.len;
        if (r == MR_TRACK_CLIENT_NEXT) {
            mr_tracker_infile_done(&pre);
            mr_tracker_infile_done(&whole);
        } else if (r == MR_TRACK_DONE && pos < size) {
            begin(&pre, &whole, data[pos++]);
        }
    }
    return 0;
}
