/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_conn_z.c - a hostile peer's compressed-protocol stream into a conn
 * (net/conn_z.c): frames read from the socket in pieces, reassembled and
 * inflated into the conn's input under its in_limit, left-over frames
 * taken as the reader reads on.
 *
 * Input (fuzz_conn.h): byte 0 options, byte 1 k, byte 2 the piece size,
 * then the stream. Options: bit 0 zstd (else zlib); bits 1-3 in_limit, 16
 * << 2n bytes (16 B to 256 KiB); bit 4: the first k bytes were read by the
 * plain conn before compression started (the login's last read: they are
 * frames too); bits 5-6 the reader, as the session may read: 0 takes all
 * at each read callback, 1 takes at most READ_SOME bytes of it, 2 pauses
 * reading and takes it all between loop turns; after each turn the reader
 * turns reading on again, as the session's set_reading does.
 * Checks beyond no crash or leak: the conn comes to an end once the peer
 * has shut its side (no hang); the bytes it delivered are exactly those a
 * reference decoding of the same frames with net/zframe.h gives; it ends
 * in MR_CONN_ERROR (EPROTO) exactly when a whole frame is corrupt, with
 * what the frames before it carry delivered, else in MR_CONN_EOF with
 * every whole frame's bytes delivered.
 */
#include <string.h>

#include "fuzz_conn.h"
#include "myrewrite/net/zframe.h"
#include "net/conn_impl.h"

#define READ_SOME 1000
#define TURNS_AFTER 64 /* loop turns allowed beyond the pieces and frames */

typedef struct seen {
    bool z;          /* compression has started */
    int reader;      /* bits 5-6 of the options */
    size_t plain_in; /* bytes the plain conn read before compression */
    uint8_t *got;    /* what the reader took */
    size_t len, cap;
    int events;
} seen;

static void take(seen *s, mr_conn *c, size_t most)
{
    struct evbuffer *in = mr_conn_input(c);
    size_t n = evbuffer_get_length(in);
    if (n > most)
        n = most;
    if (n == 0)
        return;
    if (s->len + n > s->cap) {
        s->cap = (s->len + n) * 2;
        s->got = realloc(s->got, s->cap);
        FUZZ_CHECK(s->got);
    }
    FUZZ_CHECK(evbuffer_remove(in, s->got + s->len, n) == (int)n);
    s->len += n;
}

static void on_read(mr_conn *c, void *arg)
{
    seen *s = arg;
    if (!s->z) {
        s->plain_in = mr_conn_input_length(c); /* left in the input: they become frames */
        return;
    }
    if (s->reader == 2)
        mr_conn_read_enable(c, false);
    else
        take(s, c, s->reader == 1 ? READ_SOME : SIZE_MAX);
}

static void on_event(mr_conn *c, int what, void *arg)
{
    (void)c;
    ((seen *)arg)->events |= what;
}

static const mr_conn_callbacks callbacks = {.read = on_read, .event = on_event};

/* The reference: what the stream's whole frames carry, joined, up to the
 * first corrupt one (*corrupt then true). */
static uint8_t *reference(const uint8_t *p, size_t n, mr_zalgo a, size_t *len, bool *corrupt)
{
    uint8_t *out = NULL;
    size_t pos = 0;
    *len = 0;
    *corrupt = false;
    while (n - pos >= MR_ZFRAME_HEADER) {
        mr_zframe f;
        mr_zframe_header_read(p + pos, &f);
        if (n - pos - MR_ZFRAME_HEADER < f.len)
            break; /* the last frame, cut short */
        pos += MR_ZFRAME_HEADER;
        size_t add = f.ulen ? f.ulen : f.len;
        out = realloc(out, *len + add + 1);
        FUZZ_CHECK(out);
        if (!f.ulen)
            memcpy(out + *len, p + pos, f.len);
        else if (!mr_zframe_inflate(a, &f, p + pos, out + *len)) {
            *corrupt = true;
            break;
        }
        *len += add;
        pos += f.len;
    }
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FUZZ_CONN_HEAD)
        return 0;
    uint8_t opt = data[0];
    mr_zalgo algo = opt & 1 ? MR_ZALGO_ZSTD : MR_ZALGO_ZLIB;
    size_t in_limit = (size_t)16 << (2 * ((opt >> 1) & 7));
    seen s = {.reader = (opt >> 5) & 3};
    if (s.reader == 3)
        s.reader = 0;
    fuzz_peer p;
    mr_conn *c = fuzz_conn_open(&p, &callbacks, &s);
    p.data = data + FUZZ_CONN_HEAD;
    p.left = size - FUZZ_CONN_HEAD;
    p.piece = data[2];
    size_t ref_len;
    bool corrupt;
    uint8_t *ref = reference(p.data, p.left, algo, &ref_len, &corrupt);
    mr_conn_read_enable(c, true);
    if (opt & 16)
        fuzz_send_plain_first(&p, c, &s.plain_in, data[1] < p.left ? data[1] : p.left);
    s.z = true;
    FUZZ_CHECK(mr_conn_start_compress(c, algo, 1, in_limit));

    size_t turns = TURNS_AFTER + (p.piece ? p.left / p.piece : 0) + p.left / MR_ZFRAME_HEADER +
                   ref_len / (s.reader == 1 ? READ_SOME : in_limit);
    bool ended = false;
    for (size_t i = 0; i < turns && !ended; i++) {
        fuzz_turn(&p);
        if (s.events & MR_CONN_ERROR)
            break;
        if (s.reader == 2 || (s.events & MR_CONN_EOF))
            take(&s, c, SIZE_MAX); /* between turns, and after the end: the rest */
        /* the end: EOF, and only a cut frame (if any) is left unread */
        ended = (s.events & MR_CONN_EOF) && !mr_conn_z_ready(c);
        s.events &= ~MR_CONN_EOF;
        mr_conn_read_enable(c, true);
    }
    FUZZ_CHECK(ended || (s.events & MR_CONN_ERROR)); /* no hang */
    if (s.events & MR_CONN_ERROR) {
        FUZZ_CHECK(corrupt && mr_conn_errno(c) == EPROTO);
        take(&s, c, SIZE_MAX); /* inflated in the same read as the corrupt frame */
    } else {
        FUZZ_CHECK(!corrupt);
    }
    FUZZ_CHECK(s.len == ref_len && (ref_len == 0 || memcmp(s.got, ref, ref_len) == 0));
    free(ref);
    free(s.got);
    fuzz_conn_close(&p, c);
    return 0;
}
