/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared pieces of mr_client_test: configuration, check reporting, digests
 * and small libmariadb helpers.
 *
 * Most checks are written once as a function that runs against one port and
 * records what it observed into a digest.  The runner executes it against the
 * direct server port and against the proxy port and compares the digests, so
 * a proxy that changes any byte the client can see is caught without each
 * check spelling out every expected value.
 */
#ifndef MR_CLIENT_COMMON_H
#define MR_CLIENT_COMMON_H

/* usleep, mkstemp, clock_gettime under -std=c11; must precede system headers. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <mysql.h>

struct mr_cfg {
    const char *host;
    const char *user;
    const char *password;
    const char *db;
    unsigned proxy_port;
    unsigned direct_port;
    /* MR_TLS_CA_DIRECT / MR_TLS_CA_PROXY: connect to that side over TLS, verifying its
     * certificate against this CA file (NULL: plaintext). */
    const char *tls_ca_direct;
    const char *tls_ca_proxy;
};

extern struct mr_cfg g_cfg;

/* Growable byte buffer; the digests are built from these. */
struct sbuf {
    char *p;
    size_t len;
    size_t cap;
};

void sb_add(struct sbuf *b, const void *data, size_t n);
void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_free(struct sbuf *b);

/* One run of a check against one port. */
struct ctx {
    unsigned port;
    const char *side; /* "direct" or "proxy" */
    struct sbuf dg;
    char err[1024];
};

typedef int (*check_fn)(struct ctx *c);

/* Run fn on the direct port and on the proxy port, compare digests. */
void check_compare(const char *name, check_fn fn);
/* Run fn on the proxy port only (fn checks its own expectations). */
void check_proxy(const char *name, check_fn fn);
void report(int ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Record a failure reason in c; always returns -1. */
int fail(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int fail_my(struct ctx *c, MYSQL *m, const char *what);
int fail_st(struct ctx *c, MYSQL_STMT *s, const char *what);

struct conn_opts {
    const char *user;     /* NULL: g_cfg.user */
    const char *password; /* NULL: g_cfg.password; "" for none */
    const char *db;       /* NULL: g_cfg.db */
    unsigned long flags;  /* extra CLIENT_* flags */
    int local_infile;     /* 1 on, -1 off, 0 library default */
};

MYSQL *db_init(void);
int db_connect(MYSQL *m, unsigned port, const struct conn_opts *o);
/* db_init + db_connect; on failure fills c->err and returns NULL. */
MYSQL *db_open(struct ctx *c, const struct conn_opts *o);

/* Run sql and discard every result it produces. */
int q_exec(struct ctx *c, MYSQL *m, const char *sql);
/* Run sql and copy the first column of the first row ("NULL" for NULL). */
int q_scalar(struct ctx *c, MYSQL *m, const char *sql, char *out, size_t outlen);
int q_int(struct ctx *c, MYSQL *m, const char *sql, long long *out);

void dg_fields(struct sbuf *dg, MYSQL_FIELD *f, unsigned n);
/* Metadata and all rows of a text-protocol result (store or use). */
int dg_result(struct ctx *c, MYSQL *m, MYSQL_RES *res);
/* Every result of the statement(s) just sent with mysql_real_query. */
int dg_all_results(struct ctx *c, MYSQL *m);

/* Result binding for prepared statements, one slot per column. */
struct colval {
    union {
        long long ll;
        float f;
        double d;
        MYSQL_TIME t;
    } v;
    char *str; /* variable-length columns, fetched per row */
    unsigned long len;
    my_bool is_null;
    my_bool error;
};

struct stmt_rows {
    MYSQL_STMT *s;
    MYSQL_RES *meta;
    MYSQL_FIELD *f;
    unsigned n;
    MYSQL_BIND *b;
    struct colval *v;
};

/* Bind every column of the executed statement s with its native type. */
int sr_init(struct ctx *c, struct stmt_rows *r, MYSQL_STMT *s);
/* Fetch one row and append it to out: 1 row, 0 end of data, -1 error. */
int sr_fetch(struct ctx *c, struct stmt_rows *r, struct sbuf *out);
void sr_free(struct stmt_rows *r);
/* Metadata and up to max_rows rows (0: all) of the executed statement. */
int dg_stmt_rows(struct ctx *c, MYSQL_STMT *s, unsigned long max_rows);
MYSQL_STMT *stmt_prepare(struct ctx *c, MYSQL *m, const char *sql);
/* Every result of the executed statement s (OUT parameters flagged). */
int dg_stmt_results(struct ctx *c, MYSQL *m, MYSQL_STMT *s);

uint32_t crc32_calc(uint32_t crc, const unsigned char *p, size_t n);
double now_sec(void);

/* Checks, grouped by file. */
void run_auth_checks(void);
void run_query_checks(void);
void run_command_checks(void);
void run_stmt_checks(void);
void run_stmt_ext_checks(void);
void run_cursor_checks(void);
void run_big_checks(void);
void run_load_checks(void);
void run_concurrency_checks(void);
void run_raw_checks(void);
void run_mariadb_ext_checks(void);
void run_progress_load_checks(void);
void run_session_cycle_checks(void);

#endif
