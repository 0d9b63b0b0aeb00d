/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/codec.c - MySQL/MariaDB protocol readers and builders (see proto/codec.h).
 * Pure, any thread; owns nothing beyond the mr_buf it is handed.
 */
#include "myrewrite/proto/codec.h"

#include <string.h>

mr_rc mr_pkt_header_read(const uint8_t *p, size_t n, mr_pkt_header *h)
{
    if (n < MR_PKT_HEADER)
        return MR_NEED_MORE;
    h->len = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
    h->seq = p[3];
    return MR_OK;
}

/* A short read is need-more: the caller decides whether more bytes can
 * come (a prefix of a packet) or the payload is malformed (a whole one). */
static mr_rc need(mr_reader *r, size_t k) { return r->n - r->pos >= k ? MR_OK : MR_NEED_MORE; }

static uint64_t le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

mr_rc mr_read_u8(mr_reader *r, uint8_t *v)
{
    if (need(r, 1))
        return MR_NEED_MORE;
    *v = r->p[r->pos++];
    return MR_OK;
}

mr_rc mr_read_u16(mr_reader *r, uint16_t *v)
{
    if (need(r, 2))
        return MR_NEED_MORE;
    *v = (uint16_t)le(r->p + r->pos, 2);
    r->pos += 2;
    return MR_OK;
}

mr_rc mr_read_u32(mr_reader *r, uint32_t *v)
{
    if (need(r, 4))
        return MR_NEED_MORE;
    *v = (uint32_t)le(r->p + r->pos, 4);
    r->pos += 4;
    return MR_OK;
}

mr_rc mr_read_lenenc(mr_reader *r, uint64_t *v)
{
    if (need(r, 1))
        return MR_NEED_MORE;
    uint8_t first = r->p[r->pos];
    int extra;
    switch (first) {
    case 0xfc: extra = 2; break;
    case 0xfd: extra = 3; break;
    case 0xfe: extra = 8; break;
    case 0xfb: /* NULL marker: not an integer */
    case 0xff: /* error marker */ return MR_MALFORMED;
    default:
        *v = first;
        r->pos++;
        return MR_OK;
    }
    if (need(r, 1 + (size_t)extra))
        return MR_NEED_MORE;
    *v = le(r->p + r->pos + 1, extra);
    r->pos += 1 + (size_t)extra;
    return MR_OK;
}

mr_rc mr_read_skip(mr_reader *r, size_t k)
{
    if (need(r, k))
        return MR_NEED_MORE;
    r->pos += k;
    return MR_OK;
}

mr_rc mr_read_cstr(mr_reader *r, const char **s, size_t *len)
{
    const uint8_t *start = r->p + r->pos;
    const uint8_t *nul = memchr(start, 0, r->n - r->pos);
    if (!nul)
        return MR_NEED_MORE;
    *s = (const char *)start;
    *len = (size_t)(nul - start);
    r->pos += *len + 1;
    return MR_OK;
}

mr_rc mr_read_lenenc_str(mr_reader *r, const uint8_t **s, size_t *len)
{
    uint64_t n;
    if (mr_read_lenenc(r, &n) != MR_OK || n > r->n - r->pos)
        return MR_MALFORMED;
    *s = r->p + r->pos;
    *len = (size_t)n;
    r->pos += (size_t)n;
    return MR_OK;
}

mr_rc mr_ok_parse(const uint8_t *p, size_t n, mr_ok *ok)
{
    mr_reader r = {p, n, 0};
    uint8_t hdr;
    mr_rc rc;
    if ((rc = mr_read_u8(&r, &hdr)))
        return rc;
    if (hdr != 0x00 && hdr != 0xfe)
        return MR_MALFORMED;
    memset(ok, 0, sizeof(*ok));
    if ((rc = mr_read_lenenc(&r, &ok->affected_rows)) ||
        (rc = mr_read_lenenc(&r, &ok->last_insert_id)) || (rc = mr_read_u16(&r, &ok->status)) ||
        (rc = mr_read_u16(&r, &ok->warnings)))
        return rc;
    return MR_OK;
}

mr_rc mr_eof_parse(const uint8_t *p, size_t n, mr_ok *eof)
{
    if (n < 1)
        return MR_NEED_MORE;
    if (p[0] != 0xfe)
        return MR_MALFORMED;
    memset(eof, 0, sizeof(*eof));
    /* A pre-4.1 EOF is the lone 0xFE byte. */
    if (n >= 5) {
        eof->warnings = (uint16_t)le(p + 1, 2);
        eof->status = (uint16_t)le(p + 3, 2);
    }
    return MR_OK;
}

mr_rc mr_err_parse(const uint8_t *p, size_t n, mr_err *err)
{
    mr_reader r = {p, n, 0};
    uint8_t hdr;
    if (mr_read_u8(&r, &hdr) || hdr != 0xff || mr_read_u16(&r, &err->code))
        return MR_MALFORMED;
    memcpy(err->sqlstate, "HY000", 6);
    if (r.pos < n && p[r.pos] == '#' && n - r.pos >= 6) {
        memcpy(err->sqlstate, p + r.pos + 1, 5);
        r.pos += 6;
    }
    err->msg = (const char *)p + r.pos;
    err->msg_len = n - r.pos;
    return MR_OK;
}

/* Writes a 4-byte header for a payload of `len` bytes that follows. */
static void put_header(mr_buf *b, uint32_t len, uint8_t seq)
{
    mr_buf_put_u24(b, len);
    mr_buf_put_u8(b, seq);
}

void mr_err_build(mr_buf *b, uint8_t seq, uint16_t code, const char *sqlstate, const char *msg)
{
    size_t msg_len = strlen(msg);
    if (msg_len > 512) /* servers cap messages; so do we */
        msg_len = 512;
    put_header(b, (uint32_t)(1 + 2 + 6 + msg_len), seq);
    mr_buf_put_u8(b, 0xff);
    mr_buf_put_u16(b, code);
    mr_buf_put_u8(b, '#');
    mr_buf_put(b, sqlstate, 5);
    mr_buf_put(b, msg, msg_len);
}

/* v as a length-encoded integer at p; its bytes. */
static size_t put_lenenc_at(uint8_t *p, uint64_t v)
{
    if (v < 251) {
        p[0] = (uint8_t)v;
        return 1;
    }
    size_t n = v < (1u << 16) ? 2 : v < (1u << 24) ? 3 : 8;
    p[0] = n == 2 ? 0xfc : n == 3 ? 0xfd : 0xfe;
    for (size_t i = 0; i < n; i++)
        p[1 + i] = (uint8_t)(v >> (8 * i));
    return 1 + n;
}

void mr_ok_build(mr_buf *b, uint8_t seq, uint64_t affected, uint64_t insert_id, uint16_t status,
                 uint16_t warnings)
{
    /* built in place, one put: the proxy answers every grouped statement so */
    uint8_t p[4 + 1 + 9 + 9 + 2 + 2];
    size_t n = 4;
    p[n++] = 0x00;
    n += put_lenenc_at(p + n, affected);
    n += put_lenenc_at(p + n, insert_id);
    p[n++] = (uint8_t)status;
    p[n++] = (uint8_t)(status >> 8);
    p[n++] = (uint8_t)warnings;
    p[n++] = (uint8_t)(warnings >> 8);
    uint32_t body = (uint32_t)(n - 4);
    p[0] = (uint8_t)body;
    p[1] = (uint8_t)(body >> 8);
    p[2] = (uint8_t)(body >> 16);
    p[3] = seq;
    mr_buf_put(b, p, n);
}

/* In a greeting a truncated field means the whole payload is malformed. */
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        if ((expr) != MR_OK)                                                                       \
            return MR_MALFORMED;                                                                   \
    } while (0)

mr_rc mr_greeting_parse(const uint8_t *p, size_t n, mr_greeting *g)
{
    mr_reader r = {p, n, 0};
    uint16_t lo = 0, hi = 0;
    memset(g, 0, sizeof(*g));
    TRY(mr_read_u8(&r, &g->protocol));
    if (g->protocol != 10)
        return MR_MALFORMED;
    TRY(mr_read_cstr(&r, &g->server_version, &g->server_version_len));
    TRY(mr_read_u32(&r, &g->thread_id));
    TRY(mr_read_skip(&r, 8 + 1)); /* scramble part 1, filler */
    g->caps_lo_off = r.pos;
    TRY(mr_read_u16(&r, &lo));
    g->caps = lo;
    if (r.pos == n)
        return MR_OK; /* a minimal greeting ends here */
    TRY(mr_read_u8(&r, &g->charset));
    TRY(mr_read_u16(&r, &g->status));
    g->caps_hi_off = r.pos;
    TRY(mr_read_u16(&r, &hi));
    g->caps |= (uint32_t)hi << 16;
    TRY(mr_read_skip(&r, 1 + 6)); /* scramble length, reserved */
    g->ext_caps_off = r.pos;
    TRY(mr_read_u32(&r, &g->mariadb_ext_caps));
    g->mariadb = !(g->caps & MR_CAP_LONG_PASSWORD);
    if (!g->mariadb)
        g->mariadb_ext_caps = 0; /* reserved zeros on MySQL */
    return MR_OK;
}

static void put_le_at(uint8_t *p, uint32_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void mr_greeting_mask(uint8_t *p, const mr_greeting *g) { mr_greeting_mask_offer(p, g, 0); }

void mr_greeting_mask_offer(uint8_t *p, const mr_greeting *g, uint32_t offer)
{
    uint32_t caps = (g->caps & ~(uint32_t)MR_CAP_MASKED) | offer;
    put_le_at(p + g->caps_lo_off, caps & 0xffff, 2);
    if (g->caps_hi_off)
        put_le_at(p + g->caps_hi_off, caps >> 16, 2);
    if (g->mariadb && g->ext_caps_off)
        put_le_at(p + g->ext_caps_off, g->mariadb_ext_caps & ~(uint32_t)MR_MARIADB_EXT_CAP_MASKED,
                  4);
}

/* The auth response of HandshakeResponse41, in whichever of its three
 * encodings the capabilities select. */
static mr_rc skip_auth_response(mr_reader *r, uint32_t caps)
{
    if (caps & MR_CAP_PLUGIN_AUTH_LENENC) {
        uint64_t len;
        if (mr_read_lenenc(r, &len) != MR_OK)
            return MR_MALFORMED;
        return mr_read_skip(r, (size_t)len);
    }
    if (caps & MR_CAP_SECURE_CONNECTION) {
        uint8_t len;
        if (mr_read_u8(r, &len) != MR_OK)
            return MR_MALFORMED;
        return mr_read_skip(r, len);
    }
    const char *s;
    size_t n;
    return mr_read_cstr(r, &s, &n);
}

/* After the auth response: the schema, the plugin name, the connect
 * attributes and the zstd level, each as far as the bytes reach. */
static void read_response_tail(mr_reader *r, mr_handshake_response *hr)
{
    const char *s;
    size_t len;
    uint64_t attrs;
    uint8_t level;
    if ((hr->caps & MR_CAP_CONNECT_WITH_DB) && mr_read_cstr(r, &s, &len) == MR_OK) {
        hr->db = s;
        hr->db_len = len;
    } else if (hr->caps & MR_CAP_CONNECT_WITH_DB) {
        return;
    }
    if ((hr->caps & MR_CAP_PLUGIN_AUTH) && mr_read_cstr(r, &s, &len) != MR_OK)
        return;
    if ((hr->caps & MR_CAP_CONNECT_ATTRS) &&
        (mr_read_lenenc(r, &attrs) != MR_OK || mr_read_skip(r, (size_t)attrs) != MR_OK))
        return;
    size_t at = r->pos;
    if ((hr->caps & MR_CAP_ZSTD_COMPRESSION) && mr_read_u8(r, &level) == MR_OK) {
        hr->zstd_level = level;
        hr->zstd_level_at = at;
    }
}

mr_rc mr_handshake_response_parse(const uint8_t *p, size_t n, mr_handshake_response *hr)
{
    mr_reader r = {p, n, 0};
    memset(hr, 0, sizeof(*hr));
    hr->zstd_level = -1;
    if (n < 32)
        return MR_MALFORMED; /* pre-4.1 responses are not supported */
    TRY(mr_read_u32(&r, &hr->caps));
    if (!(hr->caps & MR_CAP_PROTOCOL_41))
        return MR_MALFORMED;
    TRY(mr_read_u32(&r, &hr->max_packet));
    TRY(mr_read_u8(&r, &hr->charset));
    TRY(mr_read_skip(&r, 19));
    TRY(mr_read_u32(&r, &hr->mariadb_ext_caps));
    if (hr->caps & MR_CAP_LONG_PASSWORD)
        hr->mariadb_ext_caps = 0;
    hr->ssl_request = (n == 32 && (hr->caps & MR_CAP_SSL));
    if (mr_read_cstr(&r, &hr->user, &hr->user_len) != MR_OK) {
        hr->user = NULL; /* not in the bytes given */
        return MR_OK;
    }
    if (skip_auth_response(&r, hr->caps) == MR_OK)
        read_response_tail(&r, hr);
    return MR_OK;
}

mr_rc mr_change_user_parse(const uint8_t *p, size_t n, uint32_t caps, const char **user,
                           size_t *user_len, const char **db, size_t *db_len, int *charset)
{
    mr_reader r = {p, n, 0};
    uint8_t cmd;
    uint16_t cs;
    *charset = -1;
    TRY(mr_read_u8(&r, &cmd));
    TRY(mr_read_cstr(&r, user, user_len));
    /* COM_CHANGE_USER carries a 1-byte auth length under SECURE_CONNECTION. */
    TRY(skip_auth_response(&r, caps & ~(uint32_t)MR_CAP_PLUGIN_AUTH_LENENC));
    TRY(mr_read_cstr(&r, db, db_len));
    if ((caps & MR_CAP_PROTOCOL_41) && mr_read_u16(&r, &cs) == MR_OK)
        *charset = cs; /* optional: absent in old clients' packets */
    return MR_OK;
}

void mr_command_build(mr_buf *b, uint8_t command, const void *arg, size_t len)
{
    mr_command_build2(b, command, NULL, 0, arg, len);
}

/* Bytes [from, to) of the payload command + head + arg. */
static void put_span(mr_buf *b, uint8_t command, const uint8_t *h, size_t hn, const uint8_t *a,
                     size_t from, size_t to)
{
    if (from == 0 && to > 0) {
        mr_buf_put_u8(b, command);
        from = 1;
    }
    size_t h_end = 1 + hn;
    if (from < h_end && from < to) {
        size_t k = (to < h_end ? to : h_end) - from;
        mr_buf_put(b, h + from - 1, k);
        from += k;
    }
    if (from < to)
        mr_buf_put(b, a + from - h_end, to - from);
}

void mr_command_build2(mr_buf *b, uint8_t command, const void *head, size_t head_len,
                       const void *arg, size_t len)
{
    size_t total = 1 + head_len + len, off = 0; /* payload = command byte + argument */
    uint8_t seq = 0;
    for (;;) {
        size_t chunk = total - off < MR_PKT_MAX_PAYLOAD ? total - off : MR_PKT_MAX_PAYLOAD;
        put_header(b, (uint32_t)chunk, seq++);
        put_span(b, command, head, head_len, arg, off, off + chunk);
        off += chunk;
        if (chunk < MR_PKT_MAX_PAYLOAD)
            return; /* a full-size piece is followed by another, maybe empty */
    }
}
