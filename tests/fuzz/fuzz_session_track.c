/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_session_track.c - the session state of OK packets
 * (proto/session_track.h), as a server (or whatever answers in its place)
 * sends them.
 *
 * Feeds: byte 0 bit 0 says whether the connection negotiated
 * CLIENT_SESSION_TRACK; the rest is an OK packet's payload.
 * Checks beyond no crash: the state block lies inside the packet; every
 * entry's name and value lie inside the block; the walk ends (at the end or
 * at the first entry that does not fit); applying the block keeps every
 * value NUL-terminated at its recorded length, within its buffer; applying
 * it twice gives the same values.
 */
#include <string.h>

#include "fuzz.h"
#include "myrewrite/proto/session_track.h"

static void check_value(const char *buf, size_t cap, const mr_sst_value *v)
{
    FUZZ_CHECK(v->len <= cap && buf[v->len] == '\0');
}

static void check_state(const mr_session_state *st)
{
    check_value(st->schema, sizeof st->schema - 1, &st->schema_v);
    check_value(st->sql_mode, sizeof st->sql_mode - 1, &st->sql_mode_v);
    check_value(st->charset_client, sizeof st->charset_client - 1, &st->charset_client_v);
    check_value(st->gtids, sizeof st->gtids - 1, &st->gtids_v);
    check_value(st->trx_characteristics, sizeof st->trx_characteristics - 1,
                &st->trx_characteristics_v);
    check_value(st->trx_state, sizeof st->trx_state - 1, &st->trx_state_v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint32_t caps = MR_CAP_PROTOCOL_41 | ((data[0] & 1) ? MR_CAP_SESSION_TRACK : 0);
    const uint8_t *p = data + 1, *state;
    size_t n = size - 1, len;
    if (mr_ok_session_state(p, n, caps, &state, &len) != MR_OK)
        return 0;
    FUZZ_CHECK(len == 0 || fuzz_within(state, len, p, n));
    mr_sst_iter it;
    mr_sst_entry e;
    mr_rc rc;
    size_t entries = 0;
    mr_sst_iter_init(&it, state, len);
    while ((rc = mr_sst_next(&it, &e)) == MR_OK) {
        FUZZ_CHECK(++entries <= len);
        FUZZ_CHECK(!e.name_len || fuzz_within(e.name, e.name_len, state, len));
        FUZZ_CHECK(!e.value_len || fuzz_within(e.value, e.value_len, state, len));
    }
    FUZZ_CHECK(mr_sst_next(&it, &e) == MR_NEED_MORE);
    static mr_session_state a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    mr_rc ra = mr_sst_apply(&a, state, len);
    FUZZ_CHECK(ra == (rc == MR_MALFORMED ? MR_MALFORMED : MR_OK));
    check_state(&a);
    mr_sst_apply(&b, state, len);
    FUZZ_CHECK(memcmp(&a, &b, sizeof a) == 0);
    return 0;
}
