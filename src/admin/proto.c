/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/proto.c - the admin console's packets (see admin/proto.h).
 * Pure, any thread; owns nothing beyond the mr_buf it is handed.
 */
#include "myrewrite/admin/proto.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <string.h>

/* Reserves a packet header; the payload follows; packet_end() fills it in. */
static size_t packet_begin(mr_buf *b, uint8_t seq)
{
    size_t at = b->len;
    mr_buf_put_u24(b, 0);
    mr_buf_put_u8(b, seq);
    return at;
}

static void packet_end(mr_buf *b, size_t at)
{
    if (b->failed)
        return;
    size_t len = b->len - at - MR_PKT_HEADER;
    if (len >= MR_PKT_MAX_PAYLOAD) { /* console answers never need continuation packets */
        b->failed = true;
        return;
    }
    b->data[at] = (uint8_t)len;
    b->data[at + 1] = (uint8_t)(len >> 8);
    b->data[at + 2] = (uint8_t)(len >> 16);
}

static void put_cstr(mr_buf *b, const char *s)
{
    mr_buf_put_str(b, s);
    mr_buf_put_u8(b, 0);
}

void mr_admin_scramble_fix(uint8_t scramble[MR_ADMIN_SCRAMBLE_LEN])
{
    for (int i = 0; i < MR_ADMIN_SCRAMBLE_LEN; i++) {
        uint8_t c = scramble[i] & 0x7f;
        if (c == 0 || c == '$')
            c++;
        scramble[i] = c;
    }
}

void mr_admin_greeting_build(mr_buf *b, const char *server_version, uint32_t conn_id,
                             const uint8_t scramble[MR_ADMIN_SCRAMBLE_LEN])
{
    uint32_t caps = MR_ADMIN_CAPS;
    size_t at = packet_begin(b, 0);
    mr_buf_put_u8(b, 10);
    put_cstr(b, server_version);
    mr_buf_put_u32(b, conn_id);
    mr_buf_put(b, scramble, 8);
    mr_buf_put_u8(b, 0);
    mr_buf_put_u16(b, (uint16_t)(caps & 0xffff));
    mr_buf_put_u8(b, MR_ADMIN_CHARSET);
    mr_buf_put_u16(b, MR_STATUS_AUTOCOMMIT);
    mr_buf_put_u16(b, (uint16_t)(caps >> 16));
    mr_buf_put_u8(b, MR_ADMIN_SCRAMBLE_LEN + 1);
    for (int i = 0; i < 10; i++)
        mr_buf_put_u8(b, 0); /* reserved (LONG_PASSWORD set: no MariaDB extended caps) */
    mr_buf_put(b, scramble + 8, MR_ADMIN_SCRAMBLE_LEN - 8);
    mr_buf_put_u8(b, 0);
    put_cstr(b, MR_ADMIN_NATIVE_PLUGIN);
    packet_end(b, at);
}

void mr_admin_auth_switch_build(mr_buf *b, uint8_t seq,
                                const uint8_t scramble[MR_ADMIN_SCRAMBLE_LEN])
{
    size_t at = packet_begin(b, seq);
    mr_buf_put_u8(b, 0xfe);
    put_cstr(b, MR_ADMIN_NATIVE_PLUGIN);
    mr_buf_put(b, scramble, MR_ADMIN_SCRAMBLE_LEN);
    mr_buf_put_u8(b, 0);
    packet_end(b, at);
}

/* The auth response in whichever encoding the client's capabilities select. */
static mr_rc read_auth(mr_reader *r, uint32_t caps, mr_admin_login *l)
{
    uint64_t len;
    if (caps & MR_CAP_PLUGIN_AUTH_LENENC) {
        if (mr_read_lenenc(r, &len) != MR_OK)
            return MR_MALFORMED;
    } else if (caps & MR_CAP_SECURE_CONNECTION) {
        uint8_t n8;
        if (mr_read_u8(r, &n8) != MR_OK)
            return MR_MALFORMED;
        len = n8;
    } else {
        const char *s;
        size_t n;
        if (mr_read_cstr(r, &s, &n) != MR_OK)
            return MR_MALFORMED;
        l->auth = (const uint8_t *)s;
        l->auth_len = n;
        return MR_OK;
    }
    if (len > r->n - r->pos)
        return MR_MALFORMED;
    l->auth = r->p + r->pos;
    l->auth_len = (size_t)len;
    r->pos += (size_t)len;
    return MR_OK;
}

/* Schema and plugin name, each present only when its capability is set. */
static mr_rc read_tail(mr_reader *r, uint32_t caps, mr_admin_login *l)
{
    const char *s;
    size_t n;
    if ((caps & MR_CAP_CONNECT_WITH_DB) && r->pos < r->n && mr_read_cstr(r, &s, &n) != MR_OK)
        return MR_MALFORMED;
    if ((caps & MR_CAP_PLUGIN_AUTH) && r->pos < r->n) {
        if (mr_read_cstr(r, &s, &n) != MR_OK)
            return MR_MALFORMED;
        l->plugin = s;
        l->plugin_len = n;
    }
    return MR_OK; /* connect attributes, if any, are not read */
}

mr_rc mr_admin_login_parse(const uint8_t *p, size_t n, mr_admin_login *l)
{
    mr_reader r = {p, n, 0};
    memset(l, 0, sizeof(*l));
    if (n < 32 || mr_read_u32(&r, &l->caps) != MR_OK || !(l->caps & MR_CAP_PROTOCOL_41))
        return MR_MALFORMED;
    r.pos = 32; /* max packet, charset, 23 reserved bytes */
    if (n == 32) {
        l->ssl_request = (l->caps & MR_CAP_SSL) != 0;
        return l->ssl_request ? MR_OK : MR_MALFORMED;
    }
    if (mr_read_cstr(&r, &l->user, &l->user_len) != MR_OK)
        return MR_MALFORMED;
    if (read_auth(&r, l->caps, l) != MR_OK)
        return MR_MALFORMED;
    return read_tail(&r, l->caps, l);
}

void mr_admin_native_token(const char *password, const uint8_t scramble[MR_ADMIN_SCRAMBLE_LEN],
                           uint8_t out[20])
{
    uint8_t stage1[SHA_DIGEST_LENGTH], stage2[SHA_DIGEST_LENGTH], mix[SHA_DIGEST_LENGTH];
    uint8_t joined[MR_ADMIN_SCRAMBLE_LEN + SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)password, strlen(password), stage1);
    SHA1(stage1, sizeof(stage1), stage2);
    memcpy(joined, scramble, MR_ADMIN_SCRAMBLE_LEN);
    memcpy(joined + MR_ADMIN_SCRAMBLE_LEN, stage2, sizeof(stage2));
    SHA1(joined, sizeof(joined), mix);
    for (int i = 0; i < SHA_DIGEST_LENGTH; i++)
        out[i] = stage1[i] ^ mix[i];
    OPENSSL_cleanse(stage1, sizeof(stage1));
}

bool mr_admin_native_check(const char *password, const uint8_t scramble[MR_ADMIN_SCRAMBLE_LEN],
                           const uint8_t *answer, size_t len)
{
    uint8_t want[SHA_DIGEST_LENGTH];
    if (!password[0] || len != SHA_DIGEST_LENGTH)
        return false;
    mr_admin_native_token(password, scramble, want);
    bool same = CRYPTO_memcmp(want, answer, SHA_DIGEST_LENGTH) == 0;
    OPENSSL_cleanse(want, sizeof(want));
    return same;
}

/* ---- result sets ---- */

#define FLAG_UNSIGNED 0x0020
#define FLAG_BINARY 0x0080
#define FLAG_NUM 0x8000
#define CHARSET_BINARY 63

static void put_eof(mr_resultset *rs)
{
    size_t at = packet_begin(rs->b, rs->seq++);
    mr_buf_put_u8(rs->b, 0xfe);
    mr_buf_put_u16(rs->b, 0); /* warnings */
    mr_buf_put_u16(rs->b, MR_STATUS_AUTOCOMMIT);
    packet_end(rs->b, at);
}

static void put_column(mr_resultset *rs, const mr_col *col)
{
    bool text = col->type == MR_COL_TEXT;
    mr_buf *b = rs->b;
    size_t at = packet_begin(b, rs->seq++);
    mr_buf_put_lenenc_str(b, "def", 3);
    mr_buf_put_lenenc_str(b, "", 0); /* schema */
    mr_buf_put_lenenc_str(b, "", 0); /* table */
    mr_buf_put_lenenc_str(b, "", 0); /* org_table */
    mr_buf_put_lenenc_str(b, col->name, strlen(col->name));
    mr_buf_put_lenenc_str(b, col->name, strlen(col->name));
    mr_buf_put_lenenc(b, 0x0c);
    mr_buf_put_u16(b, text ? MR_ADMIN_CHARSET : CHARSET_BINARY);
    mr_buf_put_u32(b, text ? 3072 : 21); /* display length */
    mr_buf_put_u8(b, text                      ? MR_TYPE_VAR_STRING
                     : col->type == MR_COL_INT ? MR_TYPE_LONGLONG
                                               : MR_TYPE_NEWDECIMAL);
    mr_buf_put_u16(b, text ? 0 : FLAG_UNSIGNED | FLAG_BINARY | FLAG_NUM);
    mr_buf_put_u8(b, col->type == MR_COL_DECIMAL ? 3 : 0);
    mr_buf_put_u16(b, 0); /* filler */
    packet_end(b, at);
}

void mr_rs_begin(mr_resultset *rs, mr_buf *b, uint8_t seq, const mr_col *cols, unsigned ncols)
{
    rs->b = b;
    rs->seq = seq;
    rs->ncols = ncols;
    rs->rows = 0;
    size_t at = packet_begin(b, rs->seq++);
    mr_buf_put_lenenc(b, ncols);
    packet_end(b, at);
    for (unsigned i = 0; i < ncols; i++)
        put_column(rs, &cols[i]);
    put_eof(rs);
}

void mr_rs_row(mr_resultset *rs, const char *const *values)
{
    size_t at = packet_begin(rs->b, rs->seq++);
    for (unsigned i = 0; i < rs->ncols; i++) {
        if (values[i])
            mr_buf_put_lenenc_str(rs->b, values[i], strlen(values[i]));
        else
            mr_buf_put_u8(rs->b, 0xfb);
    }
    packet_end(rs->b, at);
    rs->rows++;
}

void mr_rs_end(mr_resultset *rs) { put_eof(rs); }
