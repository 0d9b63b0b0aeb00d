/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/buf.h - growable byte builder with a sticky failure flag.
 *
 * Pure, any thread. Writers append without checking each call; the first
 * allocation failure (or an explicit limit) sets `failed` and later appends
 * are ignored, so the caller checks once at the end.
 */
#ifndef MYREWRITE_BUF_H
#define MYREWRITE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_buf {
    uint8_t *data; /* owned; NULL until the first append */
    size_t len;
    size_t cap;
    bool failed;
} mr_buf;

void mr_buf_init(mr_buf *b);
void mr_buf_free(mr_buf *b);
void mr_buf_reset(mr_buf *b);

void mr_buf_put(mr_buf *b, const void *p, size_t n);
void mr_buf_put_u8(mr_buf *b, uint8_t v);
void mr_buf_put_u16(mr_buf *b, uint16_t v);
void mr_buf_put_u24(mr_buf *b, uint32_t v);
void mr_buf_put_u32(mr_buf *b, uint32_t v);
void mr_buf_put_u64(mr_buf *b, uint64_t v);
void mr_buf_put_str(mr_buf *b, const char *s);
/* MySQL length-encoded integer and string. */
void mr_buf_put_lenenc(mr_buf *b, uint64_t v);
void mr_buf_put_lenenc_str(mr_buf *b, const void *p, size_t n);

#endif
