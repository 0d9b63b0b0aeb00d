/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/server_version.c - reads a greeting's version string (see
 * proto/server_version.h): "8.0.36", or MariaDB's "5.5.5-10.6.4-MariaDB".
 *
 * Pure, any thread.
 */
#include "myrewrite/proto/server_version.h"

#include <stdint.h>
#include <string.h>

/* Reads "A.B.C" at s; false unless at least A.B are there. */
static int read_version(const char *s, size_t len, unsigned v[3])
{
    size_t i = 0;
    for (int part = 0; part < 3; part++) {
        size_t start = i;
        unsigned long n = 0;
        for (; i < len && s[i] >= '0' && s[i] <= '9' && n < 100000; i++)
            n = n * 10 + (unsigned long)(s[i] - '0');
        if (i == start)
            return part >= 2;
        v[part] = (unsigned)n;
        if (part < 2 && (i >= len || s[i] != '.'))
            return part >= 1;
        i++;
    }
    return 1;
}

static int contains(const char *s, size_t len, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= len; i++)
        if (memcmp(s + i, word, w) == 0)
            return 1;
    return 0;
}

bool mr_server_has_skip_locked(const char *version, size_t len)
{
    if (!version)
        return false;
    bool maria = contains(version, len, "MariaDB");
    /* MariaDB 10.x and later announce themselves as "5.5.5-10.6.4-MariaDB" */
    if (maria && len > 6 && memcmp(version, "5.5.5-", 6) == 0) {
        version += 6;
        len -= 6;
    }
    unsigned v[3] = {0, 0, 0};
    if (!read_version(version, len, v))
        return false;
    uint64_t n = (uint64_t)v[0] * 1000000 + (uint64_t)v[1] * 1000 + v[2];
    return maria ? n >= 10006000 : n >= 8000001;
}
