/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/zframe.c - frames of the compressed protocol, zlib and zstd (see
 * net/zframe.h).
 */
#include "myrewrite/net/zframe.h"

#include <zlib.h>
#include <zstd.h>

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

bool mr_zframe_inflate(mr_zalgo a, const mr_zframe *f, const uint8_t *src, uint8_t *dst)
{
    if (a == MR_ZALGO_ZSTD) {
        /* Into a flat buffer of the declared size: zstd keeps no window of
         * its own then, whatever the frame's header asks for. */
        size_t out = ZSTD_decompress(dst, f->ulen, src, f->len);
        return !ZSTD_isError(out) && out == f->ulen;
    }
    uLongf out = f->ulen;
    int rc = uncompress(dst, &out, src, f->len);
    return rc == Z_OK && out == f->ulen;
}

size_t mr_zframe_bound(mr_zalgo a, size_t n)
{
    return a == MR_ZALGO_ZSTD ? ZSTD_compressBound(n) : compressBound((uLong)n);
}

static size_t zstd_deflate(const uint8_t *src, size_t n, uint8_t *dst, int level)
{
    size_t out = ZSTD_compress(dst, ZSTD_compressBound(n), src, n, level);
    return ZSTD_isError(out) ? 0 : out;
}

size_t mr_zframe_deflate(mr_zalgo a, const uint8_t *src, size_t n, uint8_t *dst, int level)
{
    if (n < MR_ZFRAME_MIN_COMPRESS || n > MR_ZFRAME_MAX)
        return 0;
    size_t packed;
    if (a == MR_ZALGO_ZSTD) {
        packed = zstd_deflate(src, n, dst, level);
    } else {
        uLongf out = compressBound((uLong)n);
        packed = compress2(dst, &out, src, (uLong)n, level) == Z_OK ? out : 0;
    }
    return packed < n ? packed : 0;
}
