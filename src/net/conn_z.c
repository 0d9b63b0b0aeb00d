/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/conn_z.c - the compressed protocol (CLIENT_COMPRESS, zlib, or
 * CLIENT_ZSTD_COMPRESSION_ALGORITHM, zstd) on a conn.
 *
 * Once started, what the socket (or TLS) layer reads goes to z->raw_in and
 * is taken apart here into c->in; what the session writes to c->out is put
 * into frames (net/zframe.h) in z->raw_out on each flush. The frames'
 * sequence ids are a numbering of their own: a command's first frame
 * starts it again, and each frame either side sends takes the next one, so
 * the proxy's reply continues from the client's last frame. Where the
 * proxy is the client (the backend leg) it starts each command's frames
 * at 0 itself (mr_conn_z_command); the server's replies and the LOCAL
 * INFILE data sent back inside a command go on from there.
 *
 * Memory: a frame holds at most 16 MB - 1 either way. The input is inflated
 * one whole frame at a time, into exactly the size its header declares, and
 * only while c->in holds less than in_limit (the session's relay_buffer),
 * so a small frame that inflates to a lot cannot fill memory: frames left
 * over are taken from the loop (mr_conn_z_ready) as the session reads on.
 */
#include "net/conn_impl.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>

#include "myrewrite/net/zframe.h"

/* Output is framed in pieces of this size, so one big flush does not make
 * one huge allocation. */
#define OUT_PIECE (256u * 1024)

struct mr_conn_z {
    struct evbuffer *raw_in;  /* frames read, not yet taken apart */
    struct evbuffer *raw_out; /* frames to send */
    size_t in_limit;          /* inflate no more while c->in holds this much */
    uint8_t seq;              /* the next frame's sequence id */
    bool restart;             /* the next frame sent starts a command: seq 0 */
    mr_zalgo algo;
    int level;
};

bool mr_conn_start_compress(mr_conn *c, mr_zalgo algo, int level, size_t in_limit)
{
    if (!mr_conn_fold(c)) /* fresh bytes are frames too */
        return false;
    mr_conn_z *z = calloc(1, sizeof(*z));
    if (!z || !(z->raw_in = evbuffer_new()) || !(z->raw_out = evbuffer_new())) {
        if (z && z->raw_in)
            evbuffer_free(z->raw_in);
        free(z);
        return false;
    }
    z->algo = algo;
    z->level = level;
    z->in_limit = in_limit;
    /* What is queued was written before compression began (the login's OK)
     * and goes out as it is; what the client sent after its login is
     * already frames. */
    evbuffer_add_buffer(z->raw_out, c->out);
    evbuffer_add_buffer(z->raw_in, c->in);
    c->wire_in = z->raw_in;
    c->wire_out = z->raw_out;
    c->z = z;
    return true;
}

bool mr_conn_compressed(const mr_conn *c) { return c->z != NULL; }

void mr_conn_z_free(mr_conn *c)
{
    evbuffer_free(c->z->raw_in);
    evbuffer_free(c->z->raw_out);
    free(c->z);
    c->z = NULL;
}

/* The frame heading raw_in, whole (header taken off), into c->in. */
static bool take_frame(mr_conn *c, const mr_zframe *f)
{
    mr_conn_z *z = c->z;
    evbuffer_drain(z->raw_in, MR_ZFRAME_HEADER);
    if (f->ulen == 0) { /* stored */
        evbuffer_remove_buffer(z->raw_in, c->in, f->len);
        return true;
    }
    if (f->len == 0) { /* nothing inflates to ulen; evbuffer_pullup(0) would say NULL */
        c->err = EPROTO;
        return false;
    }
    const uint8_t *src = evbuffer_pullup(z->raw_in, f->len);
    struct evbuffer_iovec vec;
    if (!src || evbuffer_reserve_space(c->in, f->ulen, &vec, 1) != 1 || vec.iov_len < f->ulen) {
        c->err = ENOMEM;
        return false;
    }
    bool inflated = mr_zframe_inflate(z->algo, f, src, vec.iov_base);
    evbuffer_drain(z->raw_in, f->len);
    vec.iov_len = f->ulen;
    evbuffer_commit_space(c->in, &vec, inflated ? 1 : 0);
    if (!inflated)
        c->err = EPROTO; /* corrupt, or not the size it said */
    return inflated;
}

/* A whole frame heads raw_in; its header in f. */
static bool whole_frame(const mr_conn_z *z, mr_zframe *f)
{
    uint8_t h[MR_ZFRAME_HEADER];
    if (evbuffer_copyout(z->raw_in, h, sizeof(h)) != sizeof(h))
        return false;
    mr_zframe_header_read(h, f);
    return evbuffer_get_length(z->raw_in) >= MR_ZFRAME_HEADER + (size_t)f->len;
}

bool mr_conn_z_ready(mr_conn *c)
{
    mr_zframe f;
    return evbuffer_get_length(c->in) < c->z->in_limit && whole_frame(c->z, &f);
}

bool mr_conn_z_inflate(mr_conn *c)
{
    mr_conn_z *z = c->z;
    mr_zframe f;
    while (evbuffer_get_length(c->in) < z->in_limit && whole_frame(z, &f)) {
        if (!take_frame(c, &f))
            return false;
        z->seq = (uint8_t)(f.seq + 1);
    }
    return true;
}

/* Frames n bytes from the head of c->out: compressed when that pays. */
static bool put_frame(mr_conn *c, size_t n)
{
    mr_conn_z *z = c->z;
    const uint8_t *src = evbuffer_pullup(c->out, (ev_ssize_t)n);
    size_t room = MR_ZFRAME_HEADER + mr_zframe_bound(z->algo, n);
    struct evbuffer_iovec vec;
    if (!src || evbuffer_reserve_space(z->raw_out, room, &vec, 1) != 1 || vec.iov_len < room)
        return false;
    uint8_t *dst = vec.iov_base;
    if (z->restart)
        z->seq = 0;
    z->restart = false;
    mr_zframe f = {.seq = z->seq++};
    size_t packed = mr_zframe_deflate(z->algo, src, n, dst + MR_ZFRAME_HEADER, z->level);
    if (packed) {
        f.len = (uint32_t)packed;
        f.ulen = (uint32_t)n;
        evbuffer_drain(c->out, n);
    } else { /* stored: the header here, the bytes moved behind it */
        f.len = (uint32_t)n;
    }
    mr_zframe_header_write(dst, &f);
    vec.iov_len = MR_ZFRAME_HEADER + packed;
    evbuffer_commit_space(z->raw_out, &vec, 1);
    if (!f.ulen)
        evbuffer_remove_buffer(c->out, z->raw_out, n);
    return true;
}

bool mr_conn_z_deflate(mr_conn *c)
{
    size_t left;
    while ((left = evbuffer_get_length(c->out)) > 0)
        if (!put_frame(c, left < OUT_PIECE ? left : OUT_PIECE)) {
            c->err = ENOMEM;
            return false;
        }
    return true;
}

void mr_conn_z_command(mr_conn *c)
{
    if (!c->z)
        return;
    mr_conn_flush(c); /* what came before keeps the numbering it had */
    c->z->restart = true;
}
