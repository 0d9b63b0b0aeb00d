/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/buf.c - growable byte builder with a sticky failure flag (see base/buf.h).
 * Pure, any thread; owns only the memory of each mr_buf.
 */
#include "myrewrite/base/buf.h"

#include <stdlib.h>
#include <string.h>

void mr_buf_init(mr_buf *b) { memset(b, 0, sizeof(*b)); }

void mr_buf_free(mr_buf *b)
{
    free(b->data);
    mr_buf_init(b);
}

void mr_buf_reset(mr_buf *b)
{
    b->len = 0;
    b->failed = false;
}

static bool reserve(mr_buf *b, size_t extra)
{
    if (b->failed)
        return false;
    if (extra <= b->cap - b->len)
        return true;
    size_t want = b->cap ? b->cap : 64;
    while (want - b->len < extra) {
        if (want > SIZE_MAX / 2) {
            b->failed = true;
            return false;
        }
        want *= 2;
    }
    uint8_t *p = realloc(b->data, want);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = want;
    return true;
}

void mr_buf_put(mr_buf *b, const void *p, size_t n)
{
    if (n == 0 || !reserve(b, n))
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void mr_buf_put_u8(mr_buf *b, uint8_t v) { mr_buf_put(b, &v, 1); }

/* The protocol is little-endian regardless of the host. */
static void put_le(mr_buf *b, uint64_t v, int bytes)
{
    uint8_t tmp[8];
    for (int i = 0; i < bytes; i++)
        tmp[i] = (uint8_t)(v >> (8 * i));
    mr_buf_put(b, tmp, (size_t)bytes);
}

void mr_buf_put_u16(mr_buf *b, uint16_t v) { put_le(b, v, 2); }
void mr_buf_put_u24(mr_buf *b, uint32_t v) { put_le(b, v, 3); }
void mr_buf_put_u32(mr_buf *b, uint32_t v) { put_le(b, v, 4); }
void mr_buf_put_u64(mr_buf *b, uint64_t v) { put_le(b, v, 8); }
void mr_buf_put_str(mr_buf *b, const char *s) { mr_buf_put(b, s, strlen(s)); }

void mr_buf_put_lenenc(mr_buf *b, uint64_t v)
{
    if (v < 251) {
        mr_buf_put_u8(b, (uint8_t)v);
    } else if (v < (1u << 16)) {
        mr_buf_put_u8(b, 0xfc);
        put_le(b, v, 2);
    } else if (v < (1u << 24)) {
        mr_buf_put_u8(b, 0xfd);
        put_le(b, v, 3);
    } else {
        mr_buf_put_u8(b, 0xfe);
        put_le(b, v, 8);
    }
}

void mr_buf_put_lenenc_str(mr_buf *b, const void *p, size_t n)
{
    mr_buf_put_lenenc(b, n);
    mr_buf_put(b, p, n);
}
