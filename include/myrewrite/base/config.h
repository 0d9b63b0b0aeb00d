/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/config.h - the proxy's settings: one table of keys, an INI loader and
 * command-line overrides.
 *
 * Loaded on the main thread at start; the resulting mr_config is read-only
 * afterwards and may be read by every thread.
 */
#ifndef MYREWRITE_CONFIG_H
#define MYREWRITE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "myrewrite/base/diag.h"

/* The compressed protocols the `compression` key lets clients use. */
#define MR_COMPRESS_ZLIB 1u
#define MR_COMPRESS_ZSTD 2u

typedef struct mr_config {
    char *admin_listen;              /* host:port of the admin console; "" = off */
    uint64_t admin_login_timeout_ms; /* a console connection logs in within this */
    char *admin_password;            /* "" = the console does not start */
    char *admin_user;
    char *backend;                    /* host:port or /path/to/mysqld.sock */
    uint64_t backend_keepalive_ms;    /* TCP keepalive of the sessions' backend sockets; 0 = off */
    uint64_t backend_read_timeout_ms; /* longest silence of the backend while a session waits
                                         for its answer; 0 = no limit */
    char *backend_tls;                /* off, prefer, require, verify_ca, verify_identity */
    char *backend_tls_ca;             /* "" = no CA file (verify_* need one) */
    char *backend_tls_cert;           /* "" = the proxy shows the backend no certificate */
    char *backend_tls_key;
    bool backend_compress; /* the backend leg speaks the compressed protocol (zlib) */
    unsigned compression;  /* MR_COMPRESS_* bits: what clients may ask for */
    uint64_t connect_timeout_ms;
    uint64_t
        delayed_park_timeout_ms; /* a keyless DELAYED statement waits this long for its
                                    table's key (session/stmt/park_stmt.c); 0 = refused at once */
    uint64_t handshake_timeout_ms;
    char *http_listen;             /* host:port of /metrics, /health, /ready; "" = off */
    bool http_insecure;            /* a non-loopback http_listen without http_token is allowed */
    uint64_t http_max_connections; /* HTTP connections at once; past it 503 */
    uint64_t http_timeout_ms;      /* to read a request's headers, and idle between two */
    char *http_token;              /* "" = /metrics needs no bearer token */
    char *io;                      /* "epoll" or "io_uring" (net/uring.h) */
    char *listen;                  /* host:port */
    char *log_level;
    uint64_t max_connections;
    uint64_t max_packet_size;
    uint64_t own_connection_idle_ms;    /* an own connection idle this long is closed */
    uint64_t own_connection_timeout_ms; /* read/write timeout of an own connection */
    char *pool;                         /* "session", "transaction" or "statement" (pool/pool.h) */
    uint64_t pool_idle_timeout_ms;      /* an idle pooled connection is closed after it */
    uint64_t pool_max_lifetime_ms;      /* a pooled connection this old is not reused */
    uint64_t pool_long_data_max;        /* long data a session keeps to send again */
    uint64_t pool_max_wait_ms;          /* a session waits this long for a connection */
    uint64_t pool_min_idle;             /* idle connections the idle timeout leaves */
    uint64_t pool_size;                 /* server connections per user (all workers) */
    uint64_t pool_stmt_cache;           /* prepared statements a pooled connection keeps */
    char *proxy_password;               /* the proxy's own account (flusher, janitor) */
    char *proxy_user;                   /* "" = no own connection: features needing it are off */
    uint64_t relay_buffer;
    bool require_tls; /* plaintext clients are refused (needs tls_cert) */
    char *rules_dir;
    uint64_t schema_cache_max_tables; /* entries of the schema cache */
    uint64_t schema_cache_ttl_ms;     /* age at which a table's keys are read again */
    uint64_t shutdown_timeout_ms;
    char *socket;           /* unix socket path, "" = none */
    char *tls_ca;           /* "" = client certificates are not asked for */
    char *tls_cert;         /* "" = no TLS toward clients */
    char *tls_ciphers;      /* TLSv1.2 cipher list; "" = OpenSSL's default */
    char *tls_ciphersuites; /* TLSv1.3 suites; "" = OpenSSL's default */
    char *tls_key;
    char *tls_min_version;   /* "TLSv1.2" or "TLSv1.3" */
    char *unreadable;        /* "auto", "pass" or "block" (mr_unreadable_policy) */
    uint64_t workers;        /* 0 = one per core */
    uint64_t zstd_max_level; /* 1-22: a zstd client's replies are compressed at no higher level */
} mr_config;

void mr_config_defaults(mr_config *c);
void mr_config_free(mr_config *c);
/* Reads an INI file ([myrewrite] section); returns false on any error. */
bool mr_config_load(mr_config *c, const char *path, mr_diag *d);
/* Sets one key as if it stood in the file; `origin` names the source. */
bool mr_config_set(mr_config *c, const char *key, const char *value, const char *origin, int line,
                   mr_diag *d);
/* Writes the key reference (name, default, meaning) as a Markdown table. */
void mr_config_reference(FILE *out);
/* Writes the effective settings as an INI file. */
void mr_config_dump(const mr_config *c, FILE *out);

/* A parsed listen/backend address: either host+port or a unix path. */
typedef struct mr_addr {
    char host[256];
    char port[8];
    char path[108];
    bool is_unix;
} mr_addr;

bool mr_addr_parse(const char *s, mr_addr *a);

#endif
