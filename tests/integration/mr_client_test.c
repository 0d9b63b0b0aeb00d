/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mr_client_test: drives every client command of the MySQL/MariaDB protocol
 * through the proxy with libmariadb and compares what the client sees with a
 * direct connection to the same server.
 *
 * Environment: MR_HOST, MR_PROXY_PORT, MR_DIRECT_PORT, MR_USER, MR_PASSWORD,
 * MR_DB; optional MR_ONLY (run only checks whose name contains it),
 * MR_DUMP_DIGESTS (print both digests of every compared check to stderr),
 * MR_TEST_TIMEOUT (watchdog seconds, default 240), MR_TLS_CA_DIRECT and
 * MR_TLS_CA_PROXY (connect to that side over TLS, verifying its certificate
 * with this CA file).  Output is one
 * "ok - name" / "not ok - name: reason" line per check and a closing
 * "mr_client_test: N passed, N failed" line.
 */
#include "client_common.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct mr_cfg g_cfg;

static int g_passed;
static int g_failed;

/* ---- byte buffers -------------------------------------------------------- */

void sb_add(struct sbuf *b, const void *data, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            fputs("mr_client_test: out of memory\n", stderr);
            exit(2);
        }
        b->p = p;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    sb_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void sb_free(struct sbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- reporting ----------------------------------------------------------- */

void report(int ok, const char *name, const char *fmt, ...)
{
    if (ok) {
        g_passed++;
        printf("ok - %s\n", name);
    } else {
        char why[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        g_failed++;
        printf("not ok - %s: %s\n", name, why);
    }
    fflush(stdout);
}

int fail(struct ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return -1;
}

int fail_my(struct ctx *c, MYSQL *m, const char *what)
{
    return fail(c, "%s: error %u (%s) %s", what, mysql_errno(m), mysql_sqlstate(m), mysql_error(m));
}

int fail_st(struct ctx *c, MYSQL_STMT *s, const char *what)
{
    return fail(c, "%s: error %u (%s) %s", what, mysql_stmt_errno(s), mysql_stmt_sqlstate(s),
                mysql_stmt_error(s));
}

/* Printable excerpt of a digest around offset, for mismatch messages. */
static void excerpt(const struct sbuf *b, size_t off, char *out, size_t outlen)
{
    size_t start = off > 40 ? off - 40 : 0;
    size_t o = 0;
    for (size_t i = start; i < b->len && i < start + 120 && o + 5 < outlen; i++) {
        unsigned char ch = (unsigned char)b->p[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\\')
            out[o++] = (char)ch;
        else
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", ch);
    }
    out[o] = '\0';
}

static void compare_digests(const char *name, const struct sbuf *d, const struct sbuf *p)
{
    size_t n = d->len < p->len ? d->len : p->len;
    size_t off = 0;
    while (off < n && d->p[off] == p->p[off])
        off++;
    if (off == n && d->len == p->len) {
        report(1, name, "%s", "");
        return;
    }
    char ed[1024], ep[1024];
    excerpt(d, off, ed, sizeof ed);
    excerpt(p, off, ep, sizeof ep);
    report(0, name,
           "proxy differs from direct at digest byte %zu (lengths %zu/%zu): "
           "direct [...%s] proxy [...%s]",
           off, d->len, p->len, ed, ep);
}

static int run_one(struct ctx *c, check_fn fn, unsigned port, const char *side)
{
    memset(c, 0, sizeof *c);
    c->port = port;
    c->side = side;
    return fn(c);
}

/* MR_ONLY=substring runs just the matching checks, for reproducing one. */
static int selected(const char *name)
{
    const char *only = getenv("MR_ONLY");
    return !only || !*only || strstr(name, only) != NULL;
}

void check_compare(const char *name, check_fn fn)
{
    struct ctx d, p;
    if (!selected(name))
        return;
    int rd = run_one(&d, fn, g_cfg.direct_port, "direct");
    int rp = run_one(&p, fn, g_cfg.proxy_port, "proxy");
    if (getenv("MR_DUMP_DIGESTS"))
        fprintf(stderr, "== %s\n-- direct:\n%s\n-- proxy:\n%s\n", name, d.dg.p ? d.dg.p : "",
                p.dg.p ? p.dg.p : "");
    if (rd != 0)
        report(0, name, "direct (test or server problem): %s", d.err);
    else if (rp != 0)
        report(0, name, "proxy: %s", p.err);
    else
        compare_digests(name, &d.dg, &p.dg);
    sb_free(&d.dg);
    sb_free(&p.dg);
}

void check_proxy(const char *name, check_fn fn)
{
    struct ctx p;
    if (!selected(name))
        return;
    int rp = run_one(&p, fn, g_cfg.proxy_port, "proxy");
    if (rp != 0)
        report(0, name, "proxy: %s", p.err);
    else
        report(1, name, "%s", "");
    sb_free(&p.dg);
}

/* ---- connections and queries -------------------------------------------- */

MYSQL *db_init(void)
{
    MYSQL *m = mysql_init(NULL);
    if (!m)
        return NULL;
    unsigned int timeout = 30;
    unsigned int proto = MYSQL_PROTOCOL_TCP;
    unsigned long maxpkt = 1024UL * 1024UL * 1024UL;
    /* Timeouts turn a stalled proxy into a failed check instead of a hang. */
    mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &timeout);
    mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &timeout);
    mysql_options(m, MYSQL_OPT_PROTOCOL, &proto);
    mysql_options(m, MYSQL_OPT_MAX_ALLOWED_PACKET, &maxpkt);
    return m;
}

int db_connect(MYSQL *m, unsigned port, const struct conn_opts *o)
{
    static const struct conn_opts defaults;
    if (!o)
        o = &defaults;
    const char *user = o->user ? o->user : g_cfg.user;
    const char *pw = o->password ? o->password : g_cfg.password;
    const char *db = o->db ? o->db : g_cfg.db;
    if (o->local_infile) {
        unsigned int on = o->local_infile > 0;
        mysql_options(m, MYSQL_OPT_LOCAL_INFILE, &on);
    }
    const char *ca = port == g_cfg.direct_port ? g_cfg.tls_ca_direct : g_cfg.tls_ca_proxy;
    if (ca) {
        my_bool verify = 1;
        mysql_options(m, MYSQL_OPT_SSL_CA, ca);
        mysql_options(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
    }
    if (!mysql_real_connect(m, g_cfg.host, user, pw, db, port, NULL,
                            o->flags | CLIENT_MULTI_RESULTS))
        return -1;
    if (ca && !mysql_get_ssl_cipher(m)) {
        /* Asked for TLS and logged in without it: every check would pass in plaintext. */
        fprintf(stderr, "mr_client_test: connection to port %u is not over TLS\n", port);
        return -1;
    }
    return 0;
}

MYSQL *db_open(struct ctx *c, const struct conn_opts *o)
{
    MYSQL *m = db_init();
    if (!m) {
        fail(c, "mysql_init failed");
        return NULL;
    }
    if (db_connect(m, c->port, o) != 0) {
        if (mysql_errno(m) == 0)
            fail(c, "connect: logged in, but not over TLS as asked");
        else
            fail_my(c, m, "connect");
        mysql_close(m);
        return NULL;
    }
    return m;
}

int q_exec(struct ctx *c, MYSQL *m, const char *sql)
{
    if (mysql_real_query(m, sql, strlen(sql)) != 0)
        return fail(c, "query '%.80s': error %u %s", sql, mysql_errno(m), mysql_error(m));
    int st;
    do {
        MYSQL_RES *res = mysql_store_result(m);
        if (res)
            mysql_free_result(res);
        else if (mysql_field_count(m) != 0)
            return fail_my(c, m, "store_result");
        st = mysql_next_result(m);
        if (st > 0)
            return fail(c, "query '%.80s': next result error %u %s", sql, mysql_errno(m),
                        mysql_error(m));
    } while (st == 0);
    return 0;
}

int q_scalar(struct ctx *c, MYSQL *m, const char *sql, char *out, size_t outlen)
{
    if (mysql_real_query(m, sql, strlen(sql)) != 0)
        return fail(c, "query '%.80s': error %u %s", sql, mysql_errno(m), mysql_error(m));
    MYSQL_RES *res = mysql_store_result(m);
    if (!res)
        return fail(c, "query '%.80s' returned no result set (errno %u)", sql, mysql_errno(m));
    MYSQL_ROW row = mysql_fetch_row(res);
    int rc = 0;
    if (!row)
        rc = fail(c, "query '%.80s' returned no row", sql);
    else
        snprintf(out, outlen, "%s", row[0] ? row[0] : "NULL");
    mysql_free_result(res);
    return rc;
}

int q_int(struct ctx *c, MYSQL *m, const char *sql, long long *out)
{
    char buf[64];
    if (q_scalar(c, m, sql, buf, sizeof buf) != 0)
        return -1;
    *out = strtoll(buf, NULL, 10);
    return 0;
}

/* ---- digests -------------------------------------------------------------- */

void dg_fields(struct sbuf *dg, MYSQL_FIELD *f, unsigned n)
{
    /* max_length is left out: it is 0 for mysql_use_result by design. */
    for (unsigned i = 0; i < n; i++)
        sb_printf(dg, "F[%s|%s|%s|%s|%s|t%d|l%lu|f%u|d%u|c%u]", f[i].name,
                  f[i].org_name ? f[i].org_name : "", f[i].table,
                  f[i].org_table ? f[i].org_table : "", f[i].db ? f[i].db : "", (int)f[i].type,
                  f[i].length, f[i].flags, f[i].decimals, f[i].charsetnr);
}

int dg_result(struct ctx *c, MYSQL *m, MYSQL_RES *res)
{
    unsigned n = mysql_num_fields(res);
    dg_fields(&c->dg, mysql_fetch_fields(res), n);
    MYSQL_ROW row;
    unsigned long rows = 0;
    while ((row = mysql_fetch_row(res)) != NULL) {
        unsigned long *len = mysql_fetch_lengths(res);
        sb_add(&c->dg, "R", 1);
        for (unsigned i = 0; i < n; i++) {
            if (!row[i]) {
                sb_add(&c->dg, "|N", 2);
                continue;
            }
            sb_printf(&c->dg, "|%lu:", len[i]);
            sb_add(&c->dg, row[i], len[i]);
        }
        rows++;
    }
    if (mysql_errno(m))
        return fail_my(c, m, "fetch_row");
    sb_printf(&c->dg, "rows=%lu;", rows);
    return 0;
}

int dg_all_results(struct ctx *c, MYSQL *m)
{
    int st, idx = 0;
    do {
        MYSQL_RES *res = mysql_store_result(m);
        sb_printf(&c->dg, "#%d fc=%u ", idx++, mysql_field_count(m));
        if (res) {
            int rc = dg_result(c, m, res);
            mysql_free_result(res);
            if (rc)
                return rc;
        } else if (mysql_field_count(m) != 0) {
            return fail_my(c, m, "store_result");
        } else {
            sb_printf(&c->dg, "affected=%llu ", (unsigned long long)mysql_affected_rows(m));
        }
        sb_printf(&c->dg, "warn=%u more=%d\n", mysql_warning_count(m),
                  mysql_more_results(m) ? 1 : 0);
        st = mysql_next_result(m);
    } while (st == 0);
    if (st > 0)
        sb_printf(&c->dg, "error %u %s\n", mysql_errno(m), mysql_sqlstate(m));
    return 0;
}

/* ---- small utilities ------------------------------------------------------ */

uint32_t crc32_calc(uint32_t crc, const unsigned char *p, size_t n)
{
    /* Bitwise CRC-32 (IEEE, reflected); matches the server's CRC32(). */
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- fixtures ------------------------------------------------------------- */

static const char *const k_setup[] = {
    "DROP TABLE IF EXISTS mct_types, mct_rows",
    "CREATE TABLE mct_types (id INT PRIMARY KEY, ti TINYINT, si SMALLINT UNSIGNED,"
    " mi MEDIUMINT, i INT, bi BIGINT UNSIGNED, f FLOAT, dbl DOUBLE, dc DECIMAL(20,6),"
    " dt DATE, tm TIME(3), dtm DATETIME(6), ts TIMESTAMP NULL, yr YEAR, ch CHAR(10),"
    " vc VARCHAR(100), tx TEXT, bl BLOB, bn BINARY(4), vb VARBINARY(16),"
    " en ENUM('a','b','c'), st SET('x','y','z'), bt BIT(10), js JSON, pt POINT NULL,"
    " u8 VARCHAR(20) CHARACTER SET utf8mb4) DEFAULT CHARSET=latin1",
    "INSERT INTO mct_types VALUES"
    " (1, 7, 300, -5000, 123456, 9000000000, 1.5, 2.25, 12345.678901, '2024-02-29',"
    "  '12:34:56.789', '2024-02-29 01:02:03.456789', '2024-03-01 10:00:00', 2024,"
    "  'char', 'varchar value', 'some text', x'000102fffe00', x'41420043', x'00ff',"
    "  'b', 'x,z', b'1010101010', '{\"k\": [1, 2, null]}', POINT(1.5, -2), 'h\xc3\xa9llo'),"
    " (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    "  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),"
    " (3, -128, 65535, -8388608, -2147483648, 18446744073709551615, -3.4e38, 1e308,"
    "  -99999999999999.999999, '1000-01-01', '-838:59:59.000', '9999-12-31 23:59:59.999999',"
    "  '2038-01-19 03:14:07', 2155, '', '', '', x'', x'00000000', x'', 'c', 'x,y,z',"
    "  b'1111111111', '[]', POINT(0, 0), '\xf0\x9f\x98\x80')",
    "CREATE TABLE mct_rows (id INT PRIMARY KEY, v VARCHAR(64), d DOUBLE, n INT NULL)",
    "INSERT INTO mct_rows WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s"
    " WHERE i < 1000) SELECT i, CONCAT('row-', i, REPEAT('.', i % 40)), i / 7,"
    " IF(i % 3 = 0, NULL, i * 11) FROM s",
    "DROP PROCEDURE IF EXISTS mct_two",
    "CREATE PROCEDURE mct_two() BEGIN SELECT 1 AS a, 'one' AS b;"
    " SELECT id, v FROM mct_rows WHERE id <= 3 ORDER BY id; END",
    "DROP PROCEDURE IF EXISTS mct_out",
    "CREATE PROCEDURE mct_out(IN x INT, OUT y INT, INOUT z VARCHAR(32))"
    " BEGIN SET y = x * 2; SET z = CONCAT(z, '!'); SELECT x AS echoed; END",
    "DROP PROCEDURE IF EXISTS mct_open_cursor",
    "CREATE PROCEDURE mct_open_cursor() BEGIN DECLARE c CURSOR FOR SELECT id FROM mct_rows;"
    " OPEN c; SELECT id, v FROM mct_rows WHERE id <= 2 ORDER BY id; CLOSE c; END",
};

static const char *const k_teardown[] = {
    "DROP TABLE IF EXISTS mct_types, mct_rows",
    "DROP PROCEDURE IF EXISTS mct_two",
    "DROP PROCEDURE IF EXISTS mct_out",
    "DROP PROCEDURE IF EXISTS mct_open_cursor",
};

static int run_sql_list(const char *const *sql, size_t n)
{
    struct ctx c;
    memset(&c, 0, sizeof c);
    c.port = g_cfg.direct_port;
    MYSQL *m = db_open(&c, NULL);
    int rc = m ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = q_exec(&c, m, sql[i]);
    if (rc)
        fprintf(stderr, "mr_client_test: fixture: %s\n", c.err);
    if (m)
        mysql_close(m);
    sb_free(&c.dg);
    return rc;
}

/* ---- main ----------------------------------------------------------------- */

static unsigned env_port(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    long p = strtol(v, NULL, 10);
    return (p > 0 && p < 65536) ? (unsigned)p : 0;
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return (v && *v) ? v : dflt;
}

static void on_alarm(int sig)
{
    /* A proxy that stalls must not hang the suite; only async-safe calls here. */
    static const char msg[] = "not ok - watchdog: test program exceeded its time limit\n"
                              "mr_client_test: 0 passed, 1 failed\n";
    (void)sig;
    ssize_t w = write(STDOUT_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

int main(void)
{
    g_cfg.host = env_or("MR_HOST", "127.0.0.1");
    g_cfg.user = env_or("MR_USER", "app");
    g_cfg.password = env_or("MR_PASSWORD", "apppw");
    g_cfg.db = env_or("MR_DB", "test");
    g_cfg.proxy_port = env_port("MR_PROXY_PORT");
    g_cfg.direct_port = env_port("MR_DIRECT_PORT");
    g_cfg.tls_ca_direct = env_or("MR_TLS_CA_DIRECT", NULL);
    g_cfg.tls_ca_proxy = env_or("MR_TLS_CA_PROXY", NULL);
    if (!g_cfg.proxy_port || !g_cfg.direct_port) {
        fputs("mr_client_test: set MR_PROXY_PORT and MR_DIRECT_PORT\n", stderr);
        return 2;
    }
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);
    alarm((unsigned)strtoul(env_or("MR_TEST_TIMEOUT", "240"), NULL, 10));
    if (mysql_library_init(0, NULL, NULL) != 0) {
        fputs("mr_client_test: mysql_library_init failed\n", stderr);
        return 2;
    }
    if (run_sql_list(k_setup, sizeof k_setup / sizeof k_setup[0]) != 0)
        return 2;
    double t0 = now_sec();
    run_auth_checks();
    run_session_cycle_checks();
    run_query_checks();
    run_command_checks();
    run_stmt_checks();
    run_stmt_ext_checks();
    run_cursor_checks();
    run_load_checks();
    run_big_checks();
    run_concurrency_checks();
    run_raw_checks();
    run_mariadb_ext_checks();
    run_progress_load_checks();
    run_sql_list(k_teardown, sizeof k_teardown / sizeof k_teardown[0]);
    mysql_library_end();
    printf("# elapsed %.1f s\n", now_sec() - t0);
    printf("mr_client_test: %d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
