/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/zframe.h - frames of the compressed protocol (CLIENT_COMPRESS: zlib;
 * CLIENT_ZSTD_COMPRESSION_ALGORITHM: zstd).
 *
 * A frame is a 7-byte header (3 bytes of payload length, a sequence id, 3
 * bytes of uncompressed length: 0 when the payload is stored as it is)
 * and the payload: one zlib stream, or one zstd frame, each made and read
 * on its own (no dictionary or window carried from frame to frame). What
 * the frames carry, joined, is the ordinary packet stream. Pure: byte
 * arrays in, byte arrays out.
 */
#ifndef MYREWRITE_ZFRAME_H
#define MYREWRITE_ZFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MR_ZFRAME_HEADER 7
#define MR_ZFRAME_MAX 0xffffffu /* the most either length can say */
/* Below this a payload is stored: neither algorithm would make it smaller. */
#define MR_ZFRAME_MIN_COMPRESS 50
/* The zstd levels a client may ask for (MySQL's range). */
#define MR_ZSTD_LEVEL_MIN 1
#define MR_ZSTD_LEVEL_MAX 22

typedef enum mr_zalgo { MR_ZALGO_ZLIB, MR_ZALGO_ZSTD } mr_zalgo;

typedef struct mr_zframe {
    uint32_t len;  /* payload bytes after the header */
    uint32_t ulen; /* what they inflate to; 0: stored */
    uint8_t seq;
} mr_zframe;

void mr_zframe_header_read(const uint8_t h[MR_ZFRAME_HEADER], mr_zframe *f);
void mr_zframe_header_write(uint8_t h[MR_ZFRAME_HEADER], const mr_zframe *f);

/* Inflates a compressed frame's f->len payload bytes into dst, which has
 * room for f->ulen and no more is written. False when the payload is
 * corrupt or inflates to another size than the header says. */
bool mr_zframe_inflate(mr_zalgo a, const mr_zframe *f, const uint8_t *src, uint8_t *dst);

/* The room mr_zframe_deflate needs for n bytes. */
size_t mr_zframe_bound(mr_zalgo a, size_t n);
/* Compresses n (<= MR_ZFRAME_MAX) bytes into dst (mr_zframe_bound(n)
 * bytes) at `level` (zlib 0-9, zstd MR_ZSTD_LEVEL_MIN-MAX); the compressed
 * length, or 0 when storing them is as small (under MR_ZFRAME_MIN_COMPRESS,
 * or incompressible). */
size_t mr_zframe_deflate(mr_zalgo a, const uint8_t *src, size_t n, uint8_t *dst, int level);

#endif
