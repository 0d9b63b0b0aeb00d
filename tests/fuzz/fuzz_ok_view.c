/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_ok_view.c - a client's view of an all-trackers OK
 * (proto/ok_view.h), for any packet, capabilities and settings.
 *
 * Feeds: byte 0 the client: bit 0 CLIENT_SESSION_TRACK, bits 1-2
 * session_track_transaction_info (3 is refused and leaves the default),
 * bit 3 session_track_schema, bit 4 session_track_state_change; byte 1 the
 * length L of a session_track_system_variables value in the next L bytes
 * (a value the reader refuses leaves the default list); the rest is the
 * OK packet's payload.
 * Checks beyond no crash: a refused packet leaves the output untouched; the
 * view parses as an OK with the packet's header byte, counts, warnings and
 * info text; a client without CLIENT_SESSION_TRACK gets no
 * SERVER_SESSION_STATE_CHANGED and no state; every entry left is one the
 * client's settings produce, in the packet's order; the view of the view
 * is itself (nothing more to take out).
 */
#include <string.h>

#include "fuzz.h"
#include "myrewrite/proto/ok_view.h"
#include "myrewrite/proto/session_track.h"

#define ALL_ON (MR_CAP_PROTOCOL_41 | MR_CAP_SESSION_TRACK)

/* The rule of proto/ok_view.c's own wanted(), stated again on purpose: the
 * property below checks the view against it, not against the code it tests. */
static bool wanted(const mr_track_want *w, const mr_sst_entry *e)
{
    switch (e->type) {
    case MR_SST_SYSTEM_VARIABLES: return mr_track_want_var(w, e->name, e->name_len);
    case MR_SST_SCHEMA: return w->schema;
    case MR_SST_STATE_CHANGE: return w->state_change;
    case MR_SST_TRANSACTION_STATE: return w->trx_info >= MR_TRX_TRACK_STATE;
    case MR_SST_TRANSACTION_CHARACTERISTICS: return w->trx_info == MR_TRX_TRACK_CHARACTERISTICS;
    default: return true;
    }
}

/* The info text after the warnings (NULL, 0 when there is none); returns
 * where the warnings end. */
static size_t info_of(const uint8_t *p, size_t n, const uint8_t **info, size_t *len)
{
    mr_reader r = {p, n, 0};
    uint64_t skip;
    *info = NULL;
    *len = 0;
    (void)mr_read_skip(&r, 1);
    (void)mr_read_lenenc(&r, &skip);
    (void)mr_read_lenenc(&r, &skip);
    (void)mr_read_skip(&r, 4);
    size_t head = r.pos;
    if (r.pos < n)
        FUZZ_CHECK(mr_read_lenenc_str(&r, info, len) == MR_OK);
    return head;
}

/* Every entry of the view's block is wanted and is, byte for byte, an
 * entry of the packet's block, in the same order. */
static void check_entries(const uint8_t *in, size_t in_n, const uint8_t *v, size_t v_n,
                          const mr_track_want *w)
{
    const uint8_t *s, *t;
    size_t s_n, t_n;
    FUZZ_CHECK(mr_ok_session_state(in, in_n, ALL_ON, &s, &s_n) == MR_OK);
    FUZZ_CHECK(mr_ok_session_state(v, v_n, ALL_ON, &t, &t_n) == MR_OK);
    mr_sst_iter a, b;
    mr_sst_entry ea, eb;
    mr_sst_iter_init(&a, s, s_n);
    mr_sst_iter_init(&b, t, t_n);
    for (size_t bt = 0; mr_sst_next(&b, &eb) == MR_OK; bt = b.pos) {
        FUZZ_CHECK(wanted(w, &eb));
        size_t len = b.pos - bt, at = a.pos;
        bool found = false;
        while (!found && mr_sst_next(&a, &ea) == MR_OK) {
            found = a.pos - at == len && memcmp(s + at, t + bt, len) == 0;
            at = a.pos;
        }
        FUZZ_CHECK(found);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || (size_t)data[1] > size - 2)
        return 0;
    uint8_t opt = data[0];
    uint32_t caps = MR_CAP_PROTOCOL_41 | ((opt & 1) ? MR_CAP_SESSION_TRACK : 0);
    mr_track_want w;
    mr_track_want_defaults(&w);
    const char trx[] = {(char)('0' + ((opt >> 1) & 3))};
    (void)mr_track_want_set(&w, "session_track_transaction_info", 30, trx, 1);
    w.schema = (opt & 8) != 0;
    w.state_change = (opt & 16) != 0;
    (void)mr_track_want_set(&w, "session_track_system_variables", 30, (const char *)data + 2,
                            data[1]);
    const uint8_t *p = data + 2 + data[1];
    size_t n = size - 2 - data[1];

    mr_buf out;
    mr_buf_init(&out);
    bool rewritten = true;
    if (mr_ok_for_client(p, n, caps, &w, &out, &rewritten) != MR_OK) {
        FUZZ_CHECK(!rewritten && out.len == 0 && out.data == NULL);
        return 0;
    }
    FUZZ_CHECK(!out.failed && rewritten == (out.len > 0));
    const uint8_t *v = rewritten ? out.data : p;
    size_t vn = rewritten ? out.len : n;
    mr_ok a, b;
    FUZZ_CHECK(mr_ok_parse(p, n, &a) == MR_OK && mr_ok_parse(v, vn, &b) == MR_OK);
    FUZZ_CHECK(v[0] == p[0] && a.affected_rows == b.affected_rows &&
               a.last_insert_id == b.last_insert_id && a.warnings == b.warnings);
    FUZZ_CHECK((a.status & ~MR_STATUS_SESSION_STATE_CHANGED) ==
               (b.status & ~MR_STATUS_SESSION_STATE_CHANGED));
    const uint8_t *ia, *ib;
    size_t ia_n, ib_n;
    info_of(p, n, &ia, &ia_n);
    size_t head = info_of(v, vn, &ib, &ib_n);
    FUZZ_CHECK(ia_n == ib_n && (ia_n == 0 || memcmp(ia, ib, ia_n) == 0));
    if (!(caps & MR_CAP_SESSION_TRACK)) {
        FUZZ_CHECK(!(b.status & MR_STATUS_SESSION_STATE_CHANGED));
        /* nothing but a non-empty info, unless the packet came so (mariadbd
         * writes no empty info without state: relayed as it is) */
        FUZZ_CHECK(ib_n > 0 || vn == head || !rewritten);
    } else {
        check_entries(p, n, v, vn, &w);
    }
    /* the view is a fixed point */
    mr_buf again;
    mr_buf_init(&again);
    bool twice = true;
    FUZZ_CHECK(mr_ok_for_client(v, vn, caps, &w, &again, &twice) == MR_OK && !twice);
    mr_buf_free(&again);
    mr_buf_free(&out);
    return 0;
}
