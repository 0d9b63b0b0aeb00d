/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_zframe.c - frames of the compressed protocol (net/zframe.c), as a
 * client would send them: a stream of 7-byte headers and payloads, the
 * last one possibly cut short. Each payload is read as zlib and as zstd
 * (the seeds hold frames of both).
 * Checks beyond no crash: a frame that inflates gives exactly the size its
 * header says, and compressing that again with mr_zframe_deflate (same
 * algorithm) and inflating the result gives the same bytes back.
 */
#include <string.h>

#include "fuzz.h"
#include "myrewrite/net/zframe.h"

/* Bigger declared sizes are legal, but would only make the run slow. */
#define FUZZ_ULEN_MAX (1u << 20)

static void round_trip(mr_zalgo a, const uint8_t *plain, size_t n)
{
    uint8_t *packed = malloc(mr_zframe_bound(a, n)), *back = malloc(n ? n : 1);
    FUZZ_CHECK(packed && back);
    size_t len = mr_zframe_deflate(a, plain, n, packed, 1);
    if (len) {
        FUZZ_CHECK(len < n);
        mr_zframe f = {.len = (uint32_t)len, .ulen = (uint32_t)n};
        FUZZ_CHECK(mr_zframe_inflate(a, &f, packed, back));
        FUZZ_CHECK(memcmp(plain, back, n) == 0);
    }
    free(packed);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t pos = 0;
    while (size - pos >= MR_ZFRAME_HEADER) {
        mr_zframe f;
        mr_zframe_header_read(data + pos, &f);
        pos += MR_ZFRAME_HEADER;
        if (size - pos < f.len)
            break; /* the rest of the frame has not come */
        const uint8_t *payload = data + pos;
        pos += f.len;
        if (f.ulen == 0) {
            round_trip(MR_ZALGO_ZLIB, payload, f.len);
            round_trip(MR_ZALGO_ZSTD, payload, f.len);
            continue;
        }
        if (f.ulen > FUZZ_ULEN_MAX)
            continue;
        uint8_t *out = malloc(f.ulen);
        FUZZ_CHECK(out);
        if (mr_zframe_inflate(MR_ZALGO_ZLIB, &f, payload, out))
            round_trip(MR_ZALGO_ZLIB, out, f.ulen);
        if (mr_zframe_inflate(MR_ZALGO_ZSTD, &f, payload, out))
            round_trip(MR_ZALGO_ZSTD, out, f.ulen);
        free(out);
    }
    return 0;
}
