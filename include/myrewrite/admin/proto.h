/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/proto.h - the wire side of the admin console: the greeting the
 * proxy itself sends, the client's login packet, mysql_native_password
 * verification, the auth switch request, and text result sets.
 *
 * Pure, any thread: bytes in, structs or packets (header included) out;
 * no sockets, no globals. The caller owns every mr_buf.
 */
#ifndef MYREWRITE_ADMIN_PROTO_H
#define MYREWRITE_ADMIN_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/proto/codec.h"

#define MR_ADMIN_SCRAMBLE_LEN 20
#define MR_ADMIN_NATIVE_PLUGIN "mysql_native_password"

/* What the console announces: protocol 4.1 with plugin auth and connect
 * attributes; no TLS, no compression, no DEPRECATE_EOF, no multi-statements. */
#define MR_ADMIN_CAPS                                                                              \
    (MR_CAP_LONG_PASSWORD | MR_CAP_CONNECT_WITH_DB | MR_CAP_PROTOCOL_41 | MR_CAP_TRANSACTIONS |    \
     MR_CAP_SECURE_CONNECTION | MR_CAP_PLUGIN_AUTH | MR_CAP_CONNECT_ATTRS |                        \
     MR_CAP_PLUGIN_AUTH_LENENC)

#define MR_ADMIN_CHARSET 33 /* utf8_general_ci */
#define MR_ER_ACCESS_DENIED 1045

/* Turns random bytes into a scramble clients accept: 7-bit, no NUL, no '$'. */
void mr_admin_scramble_fix(uint8_t scramble[MR_ADMIN_SCRAMBLE_LEN]);

/* Appends the protocol-10 greeting (sequence id 0). */
void mr_admin_greeting_build(mr_buf *b, const char *server_version, uint32_t conn_id,
                             const uint8_t scramble[MR_ADMIN_SCRAMBLE_LEN]);

/* Appends an auth switch request to mysql_native_password with `scramble`. */
void mr_admin_auth_switch_build(mr_buf *b, uint8_t seq,
                                const uint8_t scramble[MR_ADMIN_SCRAMBLE_LEN]);

/* The client's HandshakeResponse41; every pointer points into the payload. */
typedef struct mr_admin_login {
    uint32_t caps;
    bool ssl_request; /* a bare SSLRequest: the client wants TLS */
    const char *user;
    size_t user_len;
    const uint8_t *auth; /* the auth response as sent */
    size_t auth_len;
    const char *plugin; /* NULL when the client named none */
    size_t plugin_len;
} mr_admin_login;

/* Parses a whole HandshakeResponse41 payload. */
mr_rc mr_admin_login_parse(const uint8_t *p, size_t n, mr_admin_login *l);

/* The answer a client that knows `password` computes for `scramble`:
 * SHA1(pw) XOR SHA1(scramble || SHA1(SHA1(pw))). */
void mr_admin_native_token(const char *password, const uint8_t scramble[MR_ADMIN_SCRAMBLE_LEN],
                           uint8_t out[20]);
/* True when `answer` is that token; compared in constant time. An empty
 * password never verifies (the console requires one). */
bool mr_admin_native_check(const char *password, const uint8_t scramble[MR_ADMIN_SCRAMBLE_LEN],
                           const uint8_t *answer, size_t len);

/* ---- text result sets (no DEPRECATE_EOF: column definitions, EOF, rows, EOF) ---- */

typedef enum mr_col_type {
    MR_COL_TEXT,    /* VAR_STRING, utf8 */
    MR_COL_INT,     /* LONGLONG, unsigned */
    MR_COL_DECIMAL, /* NEWDECIMAL with 3 decimals */
} mr_col_type;

typedef struct mr_col {
    const char *name;
    mr_col_type type;
} mr_col;

typedef struct mr_resultset {
    mr_buf *b;
    uint8_t seq; /* sequence id of the next packet */
    unsigned ncols;
    uint64_t rows;
} mr_resultset;

/* Appends the column count, the column definitions and the EOF after them;
 * `seq` is the first packet's sequence id (1 in answer to a command). */
void mr_rs_begin(mr_resultset *rs, mr_buf *b, uint8_t seq, const mr_col *cols, unsigned ncols);
/* Appends one row of `ncols` values; a NULL value is SQL NULL. */
void mr_rs_row(mr_resultset *rs, const char *const *values);
/* Appends the EOF that ends the rows. */
void mr_rs_end(mr_resultset *rs);

#endif
