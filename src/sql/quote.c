/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sql/quote.c - names and string literals in SQL the proxy builds (see
 * sql/quote.h).
 *
 * Pure, any thread.
 */
#include "myrewrite/sql/quote.h"

#include <stdio.h>
#include <string.h>

static bool refuse(char *why, size_t whylen, const char *msg)
{
    if (why && whylen)
        snprintf(why, whylen, "%s", msg);
    return false;
}

bool mr_sql_ident_ok(const char *name, size_t n, char *why, size_t whylen)
{
    if (n == 0)
        return refuse(why, whylen, "an empty name");
    if (memchr(name, '\0', n))
        return refuse(why, whylen, "a name with a NUL byte (MariaDB takes none)");
    size_t chars = 0;
    for (size_t i = 0; i < n; i++)
        chars += ((unsigned char)name[i] & 0xC0) != 0x80; /* UTF-8 lead bytes */
    if (chars > MR_SQL_IDENT_MAX)
        return refuse(why, whylen, "a name over 64 characters (MariaDB's limit)");
    if (name[n - 1] == ' ')
        return refuse(why, whylen, "a name ending in a space (MariaDB takes none)");
    return true;
}

void mr_sql_put_ident_n(mr_buf *b, const char *name, size_t n)
{
    if (!mr_sql_ident_ok(name, n, NULL, 0)) {
        b->failed = true;
        return;
    }
    mr_buf_put(b, "`", 1);
    for (size_t i = 0; i < n;) { /* the runs between backticks whole: every statement
                                    staged writes a few names */
        const char *q = memchr(name + i, '`', n - i);
        size_t run = q ? (size_t)(q - (name + i)) : n - i;
        mr_buf_put(b, name + i, run);
        i += run;
        if (q) {
            mr_buf_put(b, "``", 2);
            i++;
        }
    }
    mr_buf_put(b, "`", 1);
}

void mr_sql_put_ident(mr_buf *b, const char *name) { mr_sql_put_ident_n(b, name, strlen(name)); }

void mr_sql_put_ident_suffixed(mr_buf *b, const char *name, const char *suffix)
{
    char whole[4 * MR_SQL_IDENT_MAX + 1]; /* the longest name in UTF-8 bytes */
    size_t n = strlen(name), m = strlen(suffix);
    if (n + m >= sizeof whole) {
        b->failed = true;
        return;
    }
    memcpy(whole, name, n);
    memcpy(whole + n, suffix, m);
    mr_sql_put_ident_n(b, whole, n + m);
}

void mr_sql_put_literal_n(mr_buf *b, const char *s, size_t n)
{
    mr_buf_put(b, "'", 1);
    for (size_t i = 0; i < n; i++) {
        const char *esc = NULL;
        switch (s[i]) {
        case '\0': esc = "\\0"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\032': esc = "\\Z"; break;
        case '\'': esc = "\\'"; break;
        case '\\': esc = "\\\\"; break;
        default: break;
        }
        if (esc)
            mr_buf_put(b, esc, 2);
        else
            mr_buf_put(b, &s[i], 1);
    }
    mr_buf_put(b, "'", 1);
}

void mr_sql_put_literal(mr_buf *b, const char *s) { mr_sql_put_literal_n(b, s, strlen(s)); }
