/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_pool_hints.c - pool/hints.c on a client's text: the words that pin
 * (mr_pool_hints_read, mr_pool_opens), whether a prepare reads ROW_COUNT()
 * or FOUND_ROWS() (mr_pool_reads_counts), and the session's own values put
 * into the text (mr_pool_own_values), executable comments' bodies too.
 *
 * Feeds: byte 0's low bits are the lexer flags (NO_BACKSLASH_ESCAPES,
 * ANSI_QUOTES, SKIP_COMMENTS), bits 4-6 its multibyte rule; the rest is
 * the text.
 * Checks beyond no crash: a text that lexes cleanly gives one that does
 * (the server gets it); a text with a value put in reads
 * the counts or CONNECTION_ID(); the same text gives the same output.
 */
#include <string.h>

#include "fuzz.h"
#include "myrewrite/pool/hints.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mb = ((data[0] >> 4) & 7) % (SQL_LEX_MB_COUNT + 1);
    unsigned flags = (data[0] & 7) | mb << 4;
    const char *sql = (const char *)data + 1;
    size_t n = size - 1;
    mr_pool_hints h;
    mr_pool_hints_read(sql, n, flags, true, &h);
    (void)mr_pool_opens(sql, n, flags);
    bool counts = mr_pool_reads_counts(sql, n, flags);
    mr_pool_own own = {.connection_id = 4242,
                       .row_count_known = true,
                       .row_count = -1,
                       .found_rows_known = true,
                       .found_rows = 18446744073709551615u};
    mr_buf a, b;
    mr_buf_init(&a);
    mr_buf_init(&b);
    bool put = mr_pool_own_values(sql, n, flags, &own, &a);
    FUZZ_CHECK(put == mr_pool_own_values(sql, n, flags, &own, &b));
    if (put && !a.failed && !b.failed) {
        FUZZ_CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
        if (fuzz_lexes(sql, n, flags))
            FUZZ_CHECK(fuzz_lexes((const char *)a.data, a.len, flags));
    }
    own.counts_only = true;
    mr_buf_free(&b);
    mr_buf_init(&b);
    FUZZ_CHECK(counts == mr_pool_own_values(sql, n, flags, &own, &b));
    mr_buf_free(&a);
    mr_buf_free(&b);
    return 0;
}
