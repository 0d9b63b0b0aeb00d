/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/stmt_long_data.c - the COM_STMT_SEND_LONG_DATA pieces of a statement
 * since its last execute (pool/stmt_map.h): kept whole, each after its
 * length (the limit counts both), so they go again, with another statement id, to whichever
 * connection runs the execute. The session's limit bounds them all.
 */
#include <string.h>

#include "myrewrite/pool/stmt_map.h"

bool mr_stmt_long_data_add(mr_stmt_map *m, mr_stmt *st, const uint8_t *p, size_t n)
{
    if (st->long_data_over)
        return false;
    if (n > UINT32_MAX || m->long_data_limit - m->long_data_bytes < 4 + n) {
        st->long_data_over = true;
        return false;
    }
    size_t before = st->long_data.len;
    mr_buf_put_u32(&st->long_data, (uint32_t)n);
    mr_buf_put(&st->long_data, p, n);
    if (st->long_data.failed) { /* the pieces before are whole: they stay */
        st->long_data.len = before;
        st->long_data.failed = false;
        st->long_data_over = true;
        return false;
    }
    m->long_data_bytes += 4 + n;
    return true;
}

const char *mr_stmt_long_data_build(const mr_stmt *st, mr_buf *out, uint32_t id)
{
    if (!st->long_data.len)
        return NULL;
    const uint8_t *p = st->long_data.data, *end = p + st->long_data.len;
    while (p < end) {
        uint32_t n =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        const char *bad = mr_stmt_cmd_rewrite(out, p + 4, n, id);
        if (bad)
            return bad;
        p += 4 + (size_t)n;
    }
    return NULL;
}

void mr_stmt_long_data_drop(mr_stmt_map *m, mr_stmt *st)
{
    m->long_data_bytes -= st->long_data.len;
    mr_buf_free(&st->long_data);
}

void mr_stmt_long_data_reset(mr_stmt_map *m, mr_stmt *st)
{
    mr_stmt_long_data_drop(m, st);
    st->long_data_over = false;
}
