/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_keyset.c - keyset bookmarks from a page's response: column
 * definitions and rows read by the page watch (paginate/keyset_watch.c),
 * and the row's text values re-made as SQL literals
 * (paginate/keyset_value.c).
 *
 * Feeds: byte 0 says how many of the packets are column definitions (the
 * rest are rows); bytes 1-3 are a type and a character set given straight
 * to mr_keyset_literal with the remaining bytes as the value; the remaining
 * bytes are also server packets (4-byte header, payload) of a page whose
 * listing orders by `id` and `name` of table `t`.
 * Checks beyond no crash: every literal made is exactly one SQL literal
 * (a number with an optional minus, a quoted string, or a hex string with
 * or without an introducer) that lexes cleanly under every sql_mode; the
 * bookmark the watch records holds one such literal per listing column.
 */
#include <string.h>

#include "fuzz.h"
#include "myrewrite/paginate/bookmarks.h"
#include "myrewrite/paginate/keyset.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/proto/tracker.h"

/* One literal under flags: [-] NUMBER, STRING or HEX, and nothing else. */
static bool one_literal(const char *s, size_t n, unsigned flags)
{
    sql_token t[3];
    size_t count;
    if (sql_lex(s, n, flags, t, 3, &count) != SQL_OK)
        return false;
    size_t i = 0;
    if (count == 2 && t[0].kind == SQL_TOK_OP && t[0].id == SQL_OP_MINUS)
        i = 1;
    if (count != i + 1)
        return false;
    unsigned k = t[i].kind;
    return k == SQL_TOK_NUMBER || (i == 0 && (k == SQL_TOK_STRING || k == SQL_TOK_HEX));
}

static void check_literal(const char *s, size_t n)
{
    /* the seek runs under the session's sql_mode, whatever it is */
    FUZZ_CHECK(one_literal(s, n, 0));
    FUZZ_CHECK(one_literal(s, n, SQL_LEX_NO_BACKSLASH_ESCAPES | SQL_LEX_ANSI_QUOTES));
}

static uint64_t gen(uint64_t table_hash) { return 1; }
static void put(uint64_t listing, uint64_t table_hash, uint64_t g, uint64_t pos, const char *values,
                size_t len, uint64_t ttl_ms, uint64_t max_bookmarks, uint64_t now_ms)
{
    FUZZ_CHECK(mr_keyset_value_count(values, len) == 2);
    const char *nul = memchr(values, 0, len);
    FUZZ_CHECK(nul);
    check_literal(values, (size_t)(nul - values));
    check_literal(nul + 1, len - (size_t)(nul + 1 - values));
}
static void refuse(uint64_t listing, uint64_t table_hash, uint64_t g, uint64_t ttl_ms,
                   uint64_t now_ms)
{
}
static const mr_bookmark_port port = {.gen = gen, .put = put, .refuse = refuse};

static void watch(const uint8_t *data, size_t size, unsigned ncoldefs)
{
    mr_keyset_note note;
    memset(&note, 0, sizeof note);
    note.watch = true;
    strcpy(note.listing.table, "t");
    note.listing.ncols = 2;
    strcpy(note.listing.cols[0].name, "id");
    strcpy(note.listing.cols[1].name, "name");
    mr_keyset_watch w;
    memset(&w, 0, sizeof w);
    mr_keyset_watch_begin(&w, &note, &port);
    size_t pos = 0;
    for (unsigned k = 0; pos + MR_PKT_HEADER <= size; k++) {
        mr_pkt_header h;
        mr_pkt_header_read(data + pos, size - pos, &h);
        pos += MR_PKT_HEADER;
        size_t n = h.len < size - pos ? h.len : size - pos;
        mr_keyset_watch_packet(&w, k < ncoldefs ? MR_TS_COLUMNS : MR_TS_ROWS, data + pos, n);
        pos += n;
    }
    mr_keyset_watch_end(&w, true, 1000);
    mr_keyset_watch_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    mr_buf out;
    mr_buf_init(&out);
    uint16_t charset = (uint16_t)(data[2] | data[3] << 8);
    if (mr_keyset_literal(&out, data[1], charset, data + 4, size - 4))
        check_literal((const char *)out.data, out.len);
    mr_buf_free(&out);
    watch(data + 4, size - 4, data[0] % 16);
    return 0;
}
