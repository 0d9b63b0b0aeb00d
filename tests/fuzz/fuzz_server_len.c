/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_server_len.c - the unreadable-statement strip: sql_server_len, the
 * length of a COM_QUERY text as MariaDB reads it (the server's own
 * trailing NUL dropped) that the session applies before the rules.
 *
 * Feeds: the input as a COM_QUERY text.
 * Checks beyond no crash: the length is at most the text's; when shorter,
 * what it cuts is one NUL and then only blanks and ';'; the text with one
 * more NUL after it reads as the text itself.
 */
#include <string.h>

#include "fuzz.h"

static bool trailing(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || c == ';' || c == 0xA0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    size_t r = sql_server_len(s, size);
    FUZZ_CHECK(r <= size);
    if (r < size) {
        FUZZ_CHECK(data[r] == 0);
        for (size_t i = r + 1; i < size; i++)
            FUZZ_CHECK(trailing(data[i]));
    }
    char *more = malloc(size + 1);
    memcpy(more, data, size);
    more[size] = 0;
    FUZZ_CHECK(sql_server_len(more, size + 1) == size);
    free(more);
    return 0;
}
