/*
 * net/zframe.c - frames of the compressed protocol (see net/zframe.h).
 */
#include "myrewrite/net/zframe.h"

#include <zlib.h>

static uint32_t get3(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16; }

static void put3(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
}

void mr_zframe_header_read(const uint8_t h[MR_ZFRAME_HEADER], mr_zframe *f)
{
    f->len = get3(h);
    f->seq = h[3];
    f->ulen = get3(h + 4);
}

void mr_zframe_header_write(uint8_t h[MR_ZFRAME_HEADER], const mr_zframe *f)
{
    put3(h, f->len);
    h[3] = f->seq;
    put3(h + 4, f->ulen);
}

bool mr_zframe_inflate(const mr_zframe *f, const uint8_t *src, uint8_t *dst)
{
    uLongf out = f->ulen;
    int rc = uncompress(dst, &out, src, f->len);
    return rc == Z_OK && out == f->ulen;
}

size_t mr_zframe_bound(size_t n) { return compressBound((uLong)n); }

size_t mr_zframe_deflate(const uint8_t *src, size_t n, uint8_t *dst, int level)
{
    if (n < MR_ZFRAME_MIN_COMPRESS || n > MR_ZFRAME_MAX)
        return 0;
    uLongf out = compressBound((uLong)n);
    if (compress2(dst, &out, src, (uLong)n, level) != Z_OK || out >= n)
        return 0;
    return out;
}
