/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CLIENT_DEPRECATE_EOF on and off, spoken over a plain socket.
 *
 * libmariadb (Connector/C 3.x) never sets CLIENT_DEPRECATE_EOF: the flag is
 * not even defined in its headers and there is no option or client-flag
 * trick that makes it send it, so every libmariadb-based check in this
 * program runs with EOF packets.  To cover both framings this file performs
 * the handshake itself (as the password-less user "nopw", which needs no
 * scramble) with the flag set or clear, sends each command and records
 * every response packet byte for byte.  The proxy's packets must be
 * identical to the server's, except for values that are legitimately
 * per-connection (statement ids) or time-dependent (COM_STATISTICS text).
 */
#include "client_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define CAP_DEPRECATE_EOF (1UL << 24) /* not defined by libmariadb */

enum {
    COM_QUIT_ = 1,
    COM_INIT_DB_ = 2,
    COM_QUERY_ = 3,
    COM_FIELD_LIST_ = 4,
    COM_STATISTICS_ = 9,
    COM_PROCESS_KILL_ = 12,
    COM_DEBUG_ = 13,
    COM_PING_ = 14,
    COM_STMT_PREPARE_ = 22,
    COM_STMT_EXECUTE_ = 23,
    COM_STMT_SEND_LONG_DATA_ = 24,
    COM_STMT_CLOSE_ = 25,
    COM_STMT_RESET_ = 26,
    COM_SET_OPTION_ = 27,
    COM_STMT_FETCH_ = 28,
    COM_RESET_CONNECTION_ = 31
};

/* How the response to a command is framed. */
enum reply {
    R_SINGLE,
    R_RESULT,
    R_PREPARE,
    R_FIELDS,
    R_ROWS,
    R_NONE,
    R_CLOSED,
    R_OPAQUE,
    R_ERRCODE
};

struct raw {
    struct ctx *c;
    int fd;
    int deprecate_eof;
    unsigned char seq;
    unsigned char pkt[65536];
    size_t len;
    uint32_t stmt_id;
    int eof5;  /* 0xFE packets of EOF size seen */
    int fe_ok; /* 0xFE packets of OK size seen */
};

/* ---- socket I/O ----------------------------------------------------------- */

static int io_full(struct raw *r, void *buf, size_t n, int writing)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t k = writing ? send(r->fd, p, n, MSG_NOSIGNAL) : recv(r->fd, p, n, 0);
        if (k == 0)
            return 1;
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return fail(r->c, "socket %s: %s", writing ? "write" : "read", strerror(errno));
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Reads one packet into r->pkt; 1 means the peer closed the connection. */
static int rd(struct raw *r)
{
    unsigned char h[4];
    int st = io_full(r, h, 4, 0);
    if (st)
        return st;
    r->len = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16;
    if (h[3] != r->seq)
        return fail(r->c, "packet sequence id %u, expected %u", h[3], r->seq);
    r->seq++;
    if (r->len > sizeof r->pkt)
        return fail(r->c, "unexpectedly large packet (%zu bytes)", r->len);
    if (io_full(r, r->pkt, r->len, 0))
        return fail(r->c, "connection closed inside a packet");
    return 0;
}

static int wr(struct raw *r, const void *payload, size_t n)
{
    /* Header and payload in one send: split writes stall on Nagle + delayed ACK. */
    unsigned char b[4 + 1024];
    if (n > sizeof b - 4)
        return fail(r->c, "packet too large for the raw client (%zu bytes)", n);
    b[0] = (unsigned char)n;
    b[1] = (unsigned char)(n >> 8);
    b[2] = (unsigned char)(n >> 16);
    b[3] = r->seq++;
    memcpy(b + 4, payload, n);
    return io_full(r, b, n + 4, 1) ? -1 : 0;
}

static int raw_open(struct raw *r, struct ctx *c, int deprecate_eof)
{
    struct sockaddr_in sa;
    struct timeval tv = {10, 0};
    int one = 1;
    memset(r, 0, sizeof *r);
    r->fd = -1;
    r->c = c;
    r->deprecate_eof = deprecate_eof;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)c->port);
    if (inet_pton(AF_INET, g_cfg.host, &sa.sin_addr) != 1)
        return fail(c, "MR_HOST must be an IPv4 address for the raw checks");
    r->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (r->fd < 0)
        return fail(c, "socket: %s", strerror(errno));
    /* A response that never comes must fail the check, not hang it. */
    setsockopt(r->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(r->fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        return fail(c, "connect: %s", strerror(errno));
    return 0;
}

/* ---- packet helpers -------------------------------------------------------- */

static uint64_t lenenc(const unsigned char **p)
{
    const unsigned char *q = *p;
    uint64_t v = 0;
    int n = q[0] == 0xfc ? 2 : q[0] == 0xfd ? 3 : q[0] == 0xfe ? 8 : 0;
    if (n == 0) {
        *p = q + 1;
        return q[0];
    }
    for (int i = 0; i < n; i++)
        v |= (uint64_t)q[1 + i] << (8 * i);
    *p = q + 1 + n;
    return v;
}

/* Server status flags of an EOF or OK packet in r->pkt. */
static unsigned status_of(const struct raw *r)
{
    const unsigned char *p = r->pkt + 1;
    if (r->pkt[0] == 0xfe && r->len < 7)
        return (unsigned)p[2] | (unsigned)p[3] << 8;
    lenenc(&p);
    lenenc(&p);
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static int is_terminator(const struct raw *r)
{
    if (r->pkt[0] != 0xfe)
        return 0;
    return r->deprecate_eof ? r->len < 0xffffff : r->len < 9;
}

/* Appends the packet to the digest and tallies its framing. */
static void record(struct raw *r, const char *what)
{
    sb_printf(&r->c->dg, " %s%u:", what, (unsigned)(r->seq - 1));
    for (size_t i = 0; i < r->len; i++)
        sb_printf(&r->c->dg, "%02x", r->pkt[i]);
    if (r->pkt[0] == 0xfe && r->len == 5)
        r->eof5++;
    else if (r->pkt[0] == 0xfe && r->len >= 7 && r->len < 9)
        r->fe_ok++;
}

static int rd_rec(struct raw *r, const char *what)
{
    int st = rd(r);
    if (st == 1)
        return fail(r->c, "connection closed while reading %s", what);
    if (st == 0)
        record(r, what);
    return st;
}

/* ---- response readers ------------------------------------------------------ */

static int read_defs(struct raw *r, uint64_t n, const char *what)
{
    for (uint64_t i = 0; i < n; i++)
        if (rd_rec(r, what))
            return -1;
    if (n > 0 && !r->deprecate_eof) {
        if (rd_rec(r, "eof") || r->pkt[0] != 0xfe)
            return fail(r->c, "no EOF after %s definitions", what);
    }
    return 0;
}

/* Rows up to the terminator; returns the terminator's status or -1. */
static int read_rows(struct raw *r)
{
    for (;;) {
        if (rd_rec(r, "row"))
            return -1;
        if (r->pkt[0] == 0xff)
            return 0;
        if (is_terminator(r))
            return (int)status_of(r);
    }
}

static int read_result(struct raw *r)
{
    for (;;) {
        if (rd_rec(r, "hdr"))
            return -1;
        if (r->pkt[0] == 0xff)
            return 0;
        unsigned status;
        if (r->pkt[0] == 0x00) {
            status = status_of(r);
        } else {
            const unsigned char *p = r->pkt;
            if (read_defs(r, lenenc(&p), "col"))
                return -1;
            /* An opened cursor ends the response right after the metadata. */
            if (!r->deprecate_eof && (status_of(r) & SERVER_STATUS_CURSOR_EXISTS))
                return 0;
            int st = read_rows(r);
            if (st < 0)
                return -1;
            status = (unsigned)st;
        }
        if (!(status & SERVER_MORE_RESULTS_EXIST))
            return 0;
    }
}

static int read_prepare(struct raw *r)
{
    if (rd(r))
        return fail(r->c, "no reply to COM_STMT_PREPARE");
    if (r->pkt[0] == 0xff) {
        record(r, "err");
        return 0;
    }
    if (r->pkt[0] != 0x00 || r->len < 12)
        return fail(r->c, "bad COM_STMT_PREPARE reply");
    r->stmt_id = (uint32_t)r->pkt[1] | (uint32_t)r->pkt[2] << 8 | (uint32_t)r->pkt[3] << 16 |
                 (uint32_t)r->pkt[4] << 24;
    unsigned cols = (unsigned)r->pkt[5] | (unsigned)r->pkt[6] << 8;
    unsigned params = (unsigned)r->pkt[7] | (unsigned)r->pkt[8] << 8;
    /* The statement id is per connection and may be renumbered: mask it. */
    memset(r->pkt + 1, 0, 4);
    record(r, "prep");
    if (read_defs(r, params, "param"))
        return -1;
    return read_defs(r, cols, "col");
}

static int read_reply(struct raw *r, enum reply kind)
{
    switch (kind) {
    case R_SINGLE: return rd_rec(r, "reply");
    case R_OPAQUE:
        if (rd(r))
            return fail(r->c, "no reply");
        sb_printf(&r->c->dg, " opaque:%s", r->len > 8 ? "text" : "short");
        return 0;
    case R_ERRCODE:
        /* Keep code and SQLSTATE; the message names the statement id. */
        if (rd(r) || r->pkt[0] != 0xff || r->len < 9)
            return fail(r->c, "expected an ERR packet");
        r->len = 9;
        record(r, "err");
        return 0;
    case R_RESULT: return read_result(r);
    case R_PREPARE: return read_prepare(r);
    case R_FIELDS: return read_rows(r) < 0 ? -1 : 0;
    case R_ROWS: return read_rows(r) < 0 ? -1 : 0;
    case R_CLOSED: return rd(r) == 1 ? 0 : fail(r->c, "connection still open after COM_QUIT");
    default: return 0;
    }
}

static int command(struct raw *r, int cmd, const void *arg, size_t n, enum reply kind)
{
    unsigned char buf[512];
    if (n + 1 > sizeof buf)
        return fail(r->c, "command argument too long");
    buf[0] = (unsigned char)cmd;
    memcpy(buf + 1, arg, n);
    r->seq = 0;
    sb_printf(&r->c->dg, "\ncmd %d", cmd);
    if (wr(r, buf, n + 1))
        return fail(r->c, "sending command %d failed", cmd);
    return read_reply(r, kind);
}

static int query(struct raw *r, const char *sql)
{
    return command(r, COM_QUERY_, sql, strlen(sql), R_RESULT);
}

/* ---- handshake -------------------------------------------------------------- */

static uint32_t greeting_caps(struct raw *r)
{
    /* protocol(1) version\0 id(4) scramble(8) filler(1) caps_lo(2) cs(1) st(2) caps_hi(2) */
    const unsigned char *p = memchr(r->pkt + 1, 0, r->len - 1);
    if (!p || (size_t)(p - r->pkt) + 19 > r->len)
        return 0;
    p += 1 + 4 + 8 + 1;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 24;
}

static size_t put_str(unsigned char *p, const char *s)
{
    size_t n = strlen(s) + 1;
    memcpy(p, s, n);
    return n;
}

static int send_login(struct raw *r, uint32_t server_caps)
{
    uint32_t want = CLIENT_MYSQL | CLIENT_LONG_FLAG | CLIENT_CONNECT_WITH_DB | CLIENT_PROTOCOL_41 |
                    CLIENT_TRANSACTIONS | CLIENT_SECURE_CONNECTION | CLIENT_MULTI_RESULTS |
                    CLIENT_PS_MULTI_RESULTS | CLIENT_PLUGIN_AUTH;
    if (r->deprecate_eof)
        want |= CAP_DEPRECATE_EOF;
    if (r->deprecate_eof && !(server_caps & CAP_DEPRECATE_EOF))
        return fail(r->c, "server greeting does not offer CLIENT_DEPRECATE_EOF (caps 0x%08x)",
                    (unsigned)server_caps);
    /* CLIENT_MYSQL is kept: it marks a client without MariaDB extensions. */
    uint32_t caps = (want & server_caps) | CLIENT_MYSQL;
    unsigned char b[128];
    size_t n = 0;
    for (int i = 0; i < 4; i++)
        b[n++] = (unsigned char)(caps >> (8 * i));
    memcpy(b + n, "\0\0\0\1", 4); /* max packet 16 MiB */
    n += 4;
    b[n++] = 45; /* utf8mb4_general_ci */
    memset(b + n, 0, 23);
    n += 23;
    n += put_str(b + n, "nopw");
    b[n++] = 0; /* empty auth response */
    n += put_str(b + n, g_cfg.db);
    n += put_str(b + n, "mysql_native_password");
    return wr(r, b, n);
}

static int login(struct raw *r)
{
    r->seq = 0;
    if (rd(r))
        return fail(r->c, "no server greeting");
    if (r->pkt[0] != 10)
        return fail(r->c, "greeting is not protocol 10 (first byte 0x%02x)", r->pkt[0]);
    if (send_login(r, greeting_caps(r)))
        return -1;
    for (int round = 0; round < 3; round++) {
        if (rd(r))
            return fail(r->c, "no reply to the handshake response");
        if (r->pkt[0] == 0x00) {
            record(r, "login");
            return 0;
        }
        if (r->pkt[0] != 0xfe)
            break;
        /* Auth switch: an empty password answers with an empty packet. */
        if (wr(r, "", 0))
            return -1;
    }
    return fail(r->c, "login as nopw failed: first byte 0x%02x, %.*s", r->pkt[0],
                (int)(r->len > 9 ? r->len - 9 : 0), (const char *)r->pkt + 9);
}

/* ---- the scripted session ----------------------------------------------------- */

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static int script_text(struct raw *r)
{
    static const unsigned char opt_on[2] = {0, 0}, opt_off[2] = {1, 0};
    static const char fields[] = "mct_rows\0";
    int rc = query(r, "SELECT 1 AS a, NULL AS b, 'xyz' AS c");
    rc = rc ? rc : query(r, "SELECT id, v FROM mct_rows WHERE id < 0");
    rc = rc ? rc : query(r, "DO 1");
    rc = rc ? rc : query(r, "SELEKT 1");
    rc = rc ? rc : query(r, "CALL mct_two()");
    rc = rc ? rc : command(r, COM_INIT_DB_, g_cfg.db, strlen(g_cfg.db), R_SINGLE);
    rc = rc ? rc : command(r, COM_FIELD_LIST_, fields, sizeof fields - 1, R_FIELDS);
    rc = rc ? rc : command(r, COM_PING_, "", 0, R_SINGLE);
    rc = rc ? rc : command(r, COM_STATISTICS_, "", 0, R_OPAQUE);
    rc = rc ? rc : command(r, COM_SET_OPTION_, opt_on, 2, R_SINGLE);
    rc = rc ? rc : query(r, "SELECT 1; SELECT 'two'");
    rc = rc ? rc : command(r, COM_SET_OPTION_, opt_off, 2, R_SINGLE);
    rc = rc ? rc : command(r, COM_DEBUG_, "", 0, R_SINGLE);
    return rc;
}

/*
 * COM_PROCESS_KILL proper (libmariadb's mysql_kill() sends "KILL n" as a
 * COM_QUERY instead): kill a second connection, then an unknown id.
 */
static int process_kill(struct raw *r)
{
    unsigned char id[4];
    long long victim_id = 0;
    MYSQL *victim = db_open(r->c, NULL);
    int rc = victim ? q_int(r->c, victim, "SELECT CONNECTION_ID()", &victim_id) : -1;
    put_u32(id, (uint32_t)victim_id);
    rc = rc ? rc : command(r, COM_PROCESS_KILL_, id, 4, R_SINGLE);
    if (rc == 0 && mysql_query(victim, "SELECT 1") == 0)
        rc = fail(r->c, "connection killed with COM_PROCESS_KILL still answers");
    put_u32(id, 0x7ffffff0u);
    rc = rc ? rc : command(r, COM_PROCESS_KILL_, id, 4, R_SINGLE);
    if (victim)
        mysql_close(victim);
    return rc;
}

/* COM_STMT_EXECUTE with one INT parameter (new-params-bound, type LONG). */
static int execute(struct raw *r, int cursor, int32_t param)
{
    unsigned char b[20];
    put_u32(b, r->stmt_id);
    b[4] = (unsigned char)(cursor ? CURSOR_TYPE_READ_ONLY : 0);
    put_u32(b + 5, 1);
    b[9] = 0;  /* NULL bitmap */
    b[10] = 1; /* types follow */
    b[11] = MYSQL_TYPE_LONG;
    b[12] = 0;
    put_u32(b + 13, (uint32_t)param);
    return command(r, COM_STMT_EXECUTE_, b, 17, R_RESULT);
}

static int stmt_cmd(struct raw *r, int cmd, uint32_t extra, int extra_len, enum reply kind)
{
    unsigned char b[8];
    put_u32(b, r->stmt_id);
    put_u32(b + 4, extra);
    return command(r, cmd, b, 4 + (size_t)extra_len, kind);
}

static int script_stmt(struct raw *r)
{
    static const char sql[] = "SELECT id, v FROM mct_rows WHERE id <= ? ORDER BY id";
    unsigned char ld[7];
    int rc = command(r, COM_STMT_PREPARE_, sql, sizeof sql - 1, R_PREPARE);
    rc = rc ? rc : execute(r, 0, 3);
    rc = rc ? rc : execute(r, 1, 5);
    rc = rc ? rc : stmt_cmd(r, COM_STMT_FETCH_, 2, 4, R_ROWS);
    rc = rc ? rc : stmt_cmd(r, COM_STMT_FETCH_, 10, 4, R_ROWS);
    put_u32(ld, r->stmt_id);
    memcpy(ld + 4,
           "\0\0"
           "7",
           3);
    /* Long data has no reply; COM_STMT_RESET discards it and answers OK. */
    rc = rc ? rc : command(r, COM_STMT_SEND_LONG_DATA_, ld, sizeof ld, R_NONE);
    rc = rc ? rc : stmt_cmd(r, COM_STMT_RESET_, 0, 0, R_SINGLE);
    rc = rc ? rc : execute(r, 0, 2);
    rc = rc ? rc : stmt_cmd(r, COM_STMT_CLOSE_, 0, 0, R_NONE);
    rc = rc ? rc : command(r, COM_PING_, "", 0, R_SINGLE);
    rc = rc ? rc : stmt_cmd(r, COM_STMT_FETCH_, 1, 4, R_ERRCODE);
    rc = rc ? rc : query(r, "SELECT 'after close'");
    return rc;
}

static int check_framing(struct raw *r)
{
    if (r->deprecate_eof && r->eof5)
        return fail(r->c, "%d EOF packets sent although CLIENT_DEPRECATE_EOF was negotiated",
                    r->eof5);
    if (r->deprecate_eof && !r->fe_ok)
        return fail(r->c, "no 0xFE-OK terminators seen with CLIENT_DEPRECATE_EOF");
    if (!r->deprecate_eof && r->fe_ok)
        return fail(r->c, "%d 0xFE OK packets sent without CLIENT_DEPRECATE_EOF", r->fe_ok);
    if (!r->deprecate_eof && !r->eof5)
        return fail(r->c, "no EOF packets seen without CLIENT_DEPRECATE_EOF");
    return 0;
}

static int raw_session(struct ctx *c, int deprecate_eof)
{
    struct raw r;
    int rc = raw_open(&r, c, deprecate_eof);
    rc = rc ? rc : login(&r);
    rc = rc ? rc : script_text(&r);
    rc = rc ? rc : script_stmt(&r);
    rc = rc ? rc : process_kill(&r);
    rc = rc ? rc : command(&r, COM_RESET_CONNECTION_, "", 0, R_SINGLE);
    rc = rc ? rc : check_framing(&r);
    rc = rc ? rc : command(&r, COM_QUIT_, "", 0, R_CLOSED);
    if (r.fd >= 0)
        close(r.fd);
    return rc;
}

static int chk_deprecate_eof_on(struct ctx *c) { return raw_session(c, 1); }

static int chk_deprecate_eof_off(struct ctx *c) { return raw_session(c, 0); }

void run_raw_checks(void)
{
    check_compare("raw_protocol_deprecate_eof_on", chk_deprecate_eof_on);
    check_compare("raw_protocol_deprecate_eof_off", chk_deprecate_eof_off);
}
