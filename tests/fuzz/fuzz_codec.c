/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_codec.c - packet framing and the codec's readers (proto/codec.c).
 *
 * Feeds: the input cut into packets by their 4-byte headers (the last one
 * may be short, as on a socket); each payload goes to every reader a peer
 * can reach: greeting, HandshakeResponse41 / SSLRequest, COM_CHANGE_USER,
 * OK, EOF, ERR, a COM_QUERY argument's query-attribute block, and the
 * lenenc and string primitives.
 * Checks beyond no crash: a header's length fits 24 bits; every pointer a
 * reader returns lies inside the payload; a masked greeting still parses
 * with the same version and no masked capability left; an OK or ERR that
 * parses, built again by the codec's own builder, parses to the same
 * values; a query-attribute block that reads lies inside the payload, and
 * the COM_QUERY built again from it and the text after it is the payload;
 * a command framed by mr_command_build is read back whole.
 */
#include <string.h>

#include "fuzz.h"
#include "myrewrite/base/buf.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/proto/query_attrs.h"

static void greeting(const uint8_t *p, size_t n)
{
    mr_greeting g;
    if (mr_greeting_parse(p, n, &g) != MR_OK)
        return;
    FUZZ_CHECK(fuzz_within(g.server_version, g.server_version_len, p, n));
    FUZZ_CHECK(g.caps_lo_off + 2 <= n && (!g.caps_hi_off || g.caps_hi_off + 2 <= n));
    FUZZ_CHECK(!g.mariadb || !g.ext_caps_off || g.ext_caps_off + 4 <= n);
    uint8_t *copy = malloc(n);
    memcpy(copy, p, n);
    mr_greeting_mask(copy, &g);
    mr_greeting m;
    FUZZ_CHECK(mr_greeting_parse(copy, n, &m) == MR_OK);
    FUZZ_CHECK(m.server_version_len == g.server_version_len && !(m.caps & MR_CAP_MASKED));
    FUZZ_CHECK(!m.mariadb || !(m.mariadb_ext_caps & MR_MARIADB_EXT_CAP_MASKED));
    free(copy);
}

static void handshake(const uint8_t *p, size_t n)
{
    mr_handshake_response hr;
    if (mr_handshake_response_parse(p, n, &hr) != MR_OK)
        return;
    FUZZ_CHECK(!hr.user || fuzz_within(hr.user, hr.user_len, p, n));
    FUZZ_CHECK(!hr.db || fuzz_within(hr.db, hr.db_len, p, n));
    FUZZ_CHECK(!hr.ssl_request || n == 32);
    const char *user, *db;
    size_t user_len, db_len;
    int charset;
    if (mr_change_user_parse(p, n, hr.caps, &user, &user_len, &db, &db_len, &charset) == MR_OK) {
        FUZZ_CHECK(fuzz_within(user, user_len, p, n) && fuzz_within(db, db_len, p, n));
        FUZZ_CHECK(charset >= -1 && charset <= 0xffff);
    }
}

static void ok_err_eof(const uint8_t *p, size_t n)
{
    mr_ok ok, again;
    mr_buf b;
    mr_buf_init(&b);
    if (mr_ok_parse(p, n, &ok) == MR_OK) {
        mr_ok_build(&b, 1, ok.affected_rows, ok.last_insert_id, ok.status, ok.warnings);
        FUZZ_CHECK(!b.failed && mr_ok_parse(b.data + 4, b.len - 4, &again) == MR_OK);
        FUZZ_CHECK(ok.affected_rows == again.affected_rows && ok.status == again.status);
        FUZZ_CHECK(ok.last_insert_id == again.last_insert_id && ok.warnings == again.warnings);
    }
    mr_eof_parse(p, n, &ok);
    mr_err err, err2;
    if (mr_err_parse(p, n, &err) == MR_OK) {
        FUZZ_CHECK(!err.msg_len || fuzz_within(err.msg, err.msg_len, p, n));
        FUZZ_CHECK(strlen(err.sqlstate) <= 5);
        mr_buf_reset(&b);
        char msg[64];
        size_t k = err.msg_len < sizeof msg - 1 ? err.msg_len : sizeof msg - 1;
        memcpy(msg, err.msg, k);
        msg[k] = 0;
        mr_err_build(&b, 1, err.code, err.sqlstate[0] ? err.sqlstate : "HY000", msg);
        FUZZ_CHECK(!b.failed && mr_err_parse(b.data + 4, b.len - 4, &err2) == MR_OK);
        FUZZ_CHECK(err2.code == err.code);
    }
    mr_buf_free(&b);
}

static void query_attrs(const uint8_t *p, size_t n)
{
    uint8_t *copy = malloc(n ? n : 1); /* exactly n bytes: a read past them is caught */
    memcpy(copy, p, n);
    mr_query_attrs a;
    const char *why;
    if (mr_query_attrs_read(copy, n, &a, &why) != MR_OK) {
        FUZZ_CHECK(why != NULL);
        free(copy);
        return;
    }
    FUZZ_CHECK(a.len >= 2 && a.len <= n && (a.count > 0 || a.len <= 18));
    mr_buf b;
    mr_buf_init(&b);
    mr_command_build2(&b, MR_COM_QUERY, copy, a.len, copy + a.len, n - a.len);
    FUZZ_CHECK(!b.failed && b.len == n + 5 && memcmp(b.data + 5, p, n) == 0);
    mr_buf_free(&b);
    free(copy);
}

static void primitives(const uint8_t *p, size_t n)
{
    mr_reader r = {p, n, 0};
    for (;;) {
        uint64_t v;
        const char *s;
        size_t len;
        if (mr_read_lenenc(&r, &v) != MR_OK || mr_read_cstr(&r, &s, &len) != MR_OK)
            break;
        FUZZ_CHECK(r.pos <= n && fuzz_within(s, len, p, n));
    }
    FUZZ_CHECK(r.pos <= n);
}

static void command_roundtrip(const uint8_t *p, size_t n)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_command_build(&b, MR_COM_QUERY, p, n);
    mr_pkt_header h;
    FUZZ_CHECK(!b.failed && mr_pkt_header_read(b.data, b.len, &h) == MR_OK);
    FUZZ_CHECK(h.seq == 0 && h.len == n + 1 && b.len == n + 5);
    FUZZ_CHECK(b.data[4] == MR_COM_QUERY && (n == 0 || memcmp(b.data + 5, p, n) == 0));
    mr_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t pos = 0;
    while (pos < size) {
        mr_pkt_header h;
        if (mr_pkt_header_read(data + pos, size - pos, &h) != MR_OK)
            break;
        FUZZ_CHECK(h.len <= MR_PKT_MAX_PAYLOAD);
        pos += MR_PKT_HEADER;
        size_t n = h.len < size - pos ? h.len : size - pos;
        const uint8_t *p = data + pos;
        greeting(p, n);
        handshake(p, n);
        ok_err_eof(p, n);
        query_attrs(p, n);
        primitives(p, n);
        pos += n;
    }
    command_roundtrip(data, size);
    return 0;
}
