/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/codec.h - the MySQL/MariaDB client/server protocol as a pure layer.
 *
 * Pure, any thread: bytes in, structs or bytes out; no sockets, no globals.
 * Readers return MR_OK, MR_NEED_MORE (the bytes so far are a valid prefix)
 * or MR_MALFORMED (no amount of further bytes makes them valid).
 */
#ifndef MYREWRITE_CODEC_H
#define MYREWRITE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"

typedef enum mr_rc {
    MR_OK = 0,
    MR_NEED_MORE,
    MR_MALFORMED,
} mr_rc;

/* Packet framing: 3-byte little-endian length, 1-byte sequence id. */
#define MR_PKT_HEADER 4
#define MR_PKT_MAX_PAYLOAD 0xffffffu /* a payload this long continues in the next packet */

/* Capability flags (the ones the proxy reads or masks). */
#define MR_CAP_LONG_PASSWORD (1u << 0) /* MariaDB servers clear it to announce extended caps */
#define MR_CAP_CONNECT_WITH_DB (1u << 3)
#define MR_CAP_COMPRESS (1u << 5)
#define MR_CAP_LOCAL_FILES (1u << 7)
#define MR_CAP_PROTOCOL_41 (1u << 9)
#define MR_CAP_SSL (1u << 11)
#define MR_CAP_TRANSACTIONS (1u << 13)
#define MR_CAP_SECURE_CONNECTION (1u << 15)
#define MR_CAP_MULTI_STATEMENTS (1u << 16)
#define MR_CAP_MULTI_RESULTS (1u << 17)
#define MR_CAP_PS_MULTI_RESULTS (1u << 18)
#define MR_CAP_PLUGIN_AUTH (1u << 19)
#define MR_CAP_CONNECT_ATTRS (1u << 20)
#define MR_CAP_PLUGIN_AUTH_LENENC (1u << 21)
#define MR_CAP_SESSION_TRACK (1u << 23)
#define MR_CAP_DEPRECATE_EOF (1u << 24)
#define MR_CAP_OPTIONAL_RESULTSET_METADATA (1u << 25)
#define MR_CAP_ZSTD_COMPRESSION (1u << 26)
#define MR_CAP_QUERY_ATTRIBUTES (1u << 27)
#define MR_CAP_MARIADB_PROGRESS_OLD (1u << 29)
#define MR_CAP_SSL_VERIFY_SERVER_CERT (1u << 30)

/*
 * Capabilities the proxy does not relay as they are. TLS and compression
 * (zlib, zstd) end at the proxy, which offers them again on the client's
 * leg (session/conn/backend_side.c) when it has them, and asks the server for
 * them on the backend leg as backend_tls and backend_compress say; it only
 * parses the response formats it knows; the old MariaDB progress flag adds
 * unsolicited progress packets inside responses.
 * QUERY_ATTRIBUTES (the COM_QUERY attribute block, proto/query_attrs.h) and
 * OPTIONAL_RESULTSET_METADATA (proto/tracker.h) are relayed when the
 * server offers them (MySQL 8).
 */
#define MR_CAP_MASKED                                                                              \
    (MR_CAP_SSL | MR_CAP_COMPRESS | MR_CAP_ZSTD_COMPRESSION | MR_CAP_MARIADB_PROGRESS_OLD |        \
     MR_CAP_SSL_VERIFY_SERVER_CERT)
/* MariaDB extended capabilities (upper 32 bits of the 64, as the greeting's
 * and the HandshakeResponse's last reserved 4 bytes carry them). */
#define MR_MARIADB_CAP_PROGRESS (1u << 0)          /* 0xFF 0xFFFF progress packets */
#define MR_MARIADB_CAP_COM_MULTI (1u << 1)         /* obsolete COM_MULTI */
#define MR_MARIADB_CAP_BULK (1u << 2)              /* COM_STMT_BULK_EXECUTE */
#define MR_MARIADB_CAP_EXTENDED_METADATA (1u << 3) /* a type-info string in column definitions */
#define MR_MARIADB_CAP_CACHE_METADATA (1u << 4)    /* result sets may leave out their columns */
#define MR_MARIADB_CAP_BULK_UNIT_RESULTS (1u << 5) /* a bulk execute answers a result per row */
/* The extended capabilities the proxy relays; the greeting hides the others
 * and a HandshakeResponse that asks for one has it cleared (doc/protocol.md,
 * "Capability mask"). */
#define MR_MARIADB_EXT_CAP_RELAYED                                                                 \
    (MR_MARIADB_CAP_PROGRESS | MR_MARIADB_CAP_BULK | MR_MARIADB_CAP_EXTENDED_METADATA |            \
     MR_MARIADB_CAP_CACHE_METADATA)
#define MR_MARIADB_EXT_CAP_MASKED (~(uint32_t)MR_MARIADB_EXT_CAP_RELAYED)

/* A MariaDB progress report: an ERR header with code 0xFFFF, sent inside a
 * response (not ending it) to a client that negotiated
 * MR_MARIADB_CAP_PROGRESS; `n` bytes of its payload at p. */
static inline bool mr_is_progress(const uint8_t *p, size_t n)
{
    return n >= 3 && p[0] == 0xff && p[1] == 0xff && p[2] == 0xff;
}

/* Server status flags. */
#define MR_STATUS_IN_TRANS 0x0001
#define MR_STATUS_AUTOCOMMIT 0x0002
#define MR_STATUS_MORE_RESULTS 0x0008
#define MR_STATUS_CURSOR_EXISTS 0x0040
#define MR_STATUS_LAST_ROW_SENT 0x0080
#define MR_STATUS_NO_BACKSLASH_ESCAPES 0x0200
#define MR_STATUS_PS_OUT_PARAMS 0x1000

/* Command bytes. */
enum mr_command {
    MR_COM_SLEEP = 0x00,
    MR_COM_QUIT = 0x01,
    MR_COM_INIT_DB = 0x02,
    MR_COM_QUERY = 0x03,
    MR_COM_FIELD_LIST = 0x04,
    MR_COM_CREATE_DB = 0x05,
    MR_COM_DROP_DB = 0x06,
    MR_COM_REFRESH = 0x07,
    MR_COM_SHUTDOWN = 0x08,
    MR_COM_STATISTICS = 0x09,
    MR_COM_PROCESS_INFO = 0x0a,
    MR_COM_CONNECT = 0x0b,
    MR_COM_PROCESS_KILL = 0x0c,
    MR_COM_DEBUG = 0x0d,
    MR_COM_PING = 0x0e,
    MR_COM_TIME = 0x0f,
    MR_COM_DELAYED_INSERT = 0x10,
    MR_COM_CHANGE_USER = 0x11,
    MR_COM_BINLOG_DUMP = 0x12,
    MR_COM_TABLE_DUMP = 0x13,
    MR_COM_CONNECT_OUT = 0x14,
    MR_COM_REGISTER_SLAVE = 0x15,
    MR_COM_STMT_PREPARE = 0x16,
    MR_COM_STMT_EXECUTE = 0x17,
    MR_COM_STMT_SEND_LONG_DATA = 0x18,
    MR_COM_STMT_CLOSE = 0x19,
    MR_COM_STMT_RESET = 0x1a,
    MR_COM_SET_OPTION = 0x1b,
    MR_COM_STMT_FETCH = 0x1c,
    MR_COM_DAEMON = 0x1d,
    MR_COM_BINLOG_DUMP_GTID = 0x1e,
    MR_COM_RESET_CONNECTION = 0x1f,
    MR_COM_STMT_BULK_EXECUTE = 0xfa,
};

/* Field type codes of the protocol (column definitions, execute parameters). */
enum mr_field_type {
    MR_TYPE_DECIMAL = 0,
    MR_TYPE_TINY = 1,
    MR_TYPE_SHORT = 2,
    MR_TYPE_LONG = 3,
    MR_TYPE_FLOAT = 4,
    MR_TYPE_DOUBLE = 5,
    MR_TYPE_TIMESTAMP = 7,
    MR_TYPE_LONGLONG = 8,
    MR_TYPE_INT24 = 9,
    MR_TYPE_DATE = 10,
    MR_TYPE_TIME = 11,
    MR_TYPE_DATETIME = 12,
    MR_TYPE_YEAR = 13,
    MR_TYPE_NEWDATE = 14,
    MR_TYPE_VARCHAR = 15,
    MR_TYPE_BIT = 16,
    MR_TYPE_TIMESTAMP2 = 17,
    MR_TYPE_DATETIME2 = 18,
    MR_TYPE_TIME2 = 19,
    MR_TYPE_JSON = 245,
    MR_TYPE_NEWDECIMAL = 246,
    MR_TYPE_TINY_BLOB = 249,
    MR_TYPE_MEDIUM_BLOB = 250,
    MR_TYPE_LONG_BLOB = 251,
    MR_TYPE_BLOB = 252,
    MR_TYPE_VAR_STRING = 253,
    MR_TYPE_STRING = 254,
};

/* Error codes the proxy itself sends. */
#define MR_ER_CON_COUNT 1040    /* too many connections */
#define MR_ER_HOST_BLOCKED 1129 /* ER_HOST_IS_BLOCKED: too many failed attempts */
#define MR_ER_NET_PACKET_TOO_LARGE 1153
#define MR_ER_UNKNOWN_COM 1047
#define MR_ER_MALFORMED_PACKET 1835
#define MR_ER_HANDSHAKE 1043            /* bad handshake / handshake timeout */
#define MR_ER_PACKETS_OUT_OF_ORDER 1156 /* ER_NET_PACKETS_OUT_OF_ORDER */
/* Codes 2000-2999 belong to client libraries: Connector/C rejects a server
 * ERR carrying one as a malformed packet. The proxy's own failures use
 * server codes with SQLSTATE 08S01, which drivers class as connection
 * errors and retry. */
#define MR_ER_BACKEND_UNAVAILABLE 1053 /* ER_SERVER_SHUTDOWN: the backend cannot be reached */
#define MR_ER_BACKEND_LOST 1158        /* ER_NET_READ_ERROR: backend lost during a statement */
#define MR_ER_WRONG_ARGUMENTS 1210
#define MR_ER_NOT_SUPPORTED 1235
#define MR_ER_OUT_OF_MEMORY 1037
#define MR_ER_NOT_SUPPORTED_AUTH_MODE 1251
#define MR_ER_SECURE_TRANSPORT_REQUIRED 3159 /* 08004: TLS is required */
#define MR_ER_TLS_RELOAD 3889 /* MySQL's code for a TLS library error on RELOAD TLS */

/* ---- framing and primitive readers ---- */

typedef struct mr_pkt_header {
    uint32_t len; /* payload length */
    uint8_t seq;
} mr_pkt_header;

/* Reads a 4-byte header; MR_NEED_MORE when fewer than 4 bytes are given. */
mr_rc mr_pkt_header_read(const uint8_t *p, size_t n, mr_pkt_header *h);

/* A bounded cursor over one payload (or a prefix of it). */
typedef struct mr_reader {
    const uint8_t *p;
    size_t n; /* bytes available */
    size_t pos;
} mr_reader;

mr_rc mr_read_u8(mr_reader *r, uint8_t *v);
mr_rc mr_read_u16(mr_reader *r, uint16_t *v);
mr_rc mr_read_u32(mr_reader *r, uint32_t *v);
mr_rc mr_read_lenenc(mr_reader *r, uint64_t *v);
mr_rc mr_read_skip(mr_reader *r, size_t n);
/* A length-encoded string as a view into the buffer; MR_MALFORMED when its
 * length or its bytes do not fit in what is given. */
mr_rc mr_read_lenenc_str(mr_reader *r, const uint8_t **s, size_t *len);
/* A NUL-terminated string; *s points into the buffer. */
mr_rc mr_read_cstr(mr_reader *r, const char **s, size_t *len);

/* ---- generic response packets ---- */

typedef struct mr_ok {
    uint64_t affected_rows;
    uint64_t last_insert_id;
    uint16_t status;
    uint16_t warnings;
} mr_ok;

/* OK (0x00) or, with DEPRECATE_EOF, the 0xFE OK that ends a result set.
 * Reads only up to the warnings; a prefix of >= 23 bytes always suffices. */
mr_rc mr_ok_parse(const uint8_t *p, size_t n, mr_ok *ok);
/* EOF packet (0xFE, payload < 9 bytes): warnings and status. */
mr_rc mr_eof_parse(const uint8_t *p, size_t n, mr_ok *eof);

typedef struct mr_err {
    uint16_t code;
    char sqlstate[6];
    const char *msg; /* points into the payload, not NUL-terminated */
    size_t msg_len;
} mr_err;

mr_rc mr_err_parse(const uint8_t *p, size_t n, mr_err *err);

/* Appends a whole ERR packet (header included) with the given sequence id. */
void mr_err_build(mr_buf *b, uint8_t seq, uint16_t code, const char *sqlstate, const char *msg);
/* Appends a whole OK packet (header included). */
void mr_ok_build(mr_buf *b, uint8_t seq, uint64_t affected, uint64_t insert_id, uint16_t status,
                 uint16_t warnings);

/* ---- connection phase ---- */

typedef struct mr_greeting {
    uint8_t protocol;           /* 10 */
    const char *server_version; /* points into the payload */
    size_t server_version_len;
    uint32_t thread_id;        /* backend connection id */
    uint32_t caps;             /* lower 32 bits */
    uint32_t mariadb_ext_caps; /* upper 32 bits on MariaDB, else 0 */
    uint8_t charset;
    uint16_t status;
    size_t caps_lo_off, caps_hi_off, ext_caps_off; /* payload offsets, for masking */
    bool mariadb;                                  /* the server announced MariaDB extended caps */
} mr_greeting;

/* Parses a protocol-10 greeting (whole payload). An ERR greeting (0xFF) is
 * MR_MALFORMED here; the caller checks payload[0] first. */
mr_rc mr_greeting_parse(const uint8_t *p, size_t n, mr_greeting *g);
/* Clears the masked capability bits in a greeting payload in place. */
void mr_greeting_mask(uint8_t *p, const mr_greeting *g);
/* The same, then sets `offer` (the proxy's own: MR_CAP_SSL when it has a
 * certificate for clients). */
void mr_greeting_mask_offer(uint8_t *p, const mr_greeting *g, uint32_t offer);

typedef struct mr_handshake_response {
    uint32_t caps;
    uint32_t mariadb_ext_caps;
    uint32_t max_packet;
    uint8_t charset;
    bool ssl_request; /* a 32-byte SSLRequest, not a full response */
    const char *user; /* into the payload; NULL when not present in the bytes given */
    size_t user_len;
    const char *db; /* CONNECT_WITH_DB schema, or NULL */
    size_t db_len;
    /* CLIENT_ZSTD_COMPRESSION_ALGORITHM: the level byte after the connect
     * attributes, and its offset in the payload; -1 when not there. */
    int zstd_level;
    size_t zstd_level_at;
} mr_handshake_response;

/* Parses HandshakeResponse41 (or an SSLRequest): the fixed head always, the
 * user and schema when the bytes given reach them, and the zstd level when
 * the client's capabilities say it follows and the bytes reach it. */
mr_rc mr_handshake_response_parse(const uint8_t *p, size_t n, mr_handshake_response *hr);

/* Parses the user, schema and collation id (-1 when the packet has none)
 * of a whole COM_CHANGE_USER payload. */
mr_rc mr_change_user_parse(const uint8_t *p, size_t n, uint32_t caps, const char **user,
                           size_t *user_len, const char **db, size_t *db_len, int *charset);

/* Appends a command as packets (header included), splitting payloads of
 * 16 MiB and more as the protocol requires. */
void mr_command_build(mr_buf *b, uint8_t command, const void *arg, size_t len);
/* The same with an argument in two pieces, head then arg: a COM_QUERY's
 * query-attribute block before its text (proto/query_attrs.h). */
void mr_command_build2(mr_buf *b, uint8_t command, const void *head, size_t head_len,
                       const void *arg, size_t len);

#endif
