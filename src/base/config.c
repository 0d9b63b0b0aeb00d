/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/config.c - settings table, INI loading and validation (see base/config.h).
 * Main thread at start-up; owns the strings inside mr_config.
 */
#include "myrewrite/base/config.h"
#include "myrewrite/base/duration.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/base/ini.h"

typedef enum key_type {
    T_STRING,
    T_COUNT,
    T_SIZE,
    T_DURATION,
    T_ADDR,
    T_LOGLEVEL,
    T_TCP_OPT,     /* "" (off) or a TCP host:port */
    T_UNREADABLE,  /* auto, pass or block */
    T_TLSVER,      /* TLSv1.2 or TLSv1.3 */
    T_BACKEND_TLS, /* off, prefer, require, verify_ca, verify_identity */
    T_BOOL,        /* yes or no, into a bool */
    T_COMPRESSION, /* no, zlib, zstd or yes (both), into MR_COMPRESS_* bits */
    T_IO,          /* epoll, or io_uring when built with it */
    T_ZSTD_LEVEL,  /* a whole number 1-22 (zstd's levels), into a uint64_t */
    T_POOL,        /* session, transaction or statement */
} key_type;

/* zstd's levels, as net/zframe.h's MR_ZSTD_LEVEL_MIN/MAX (base cannot include net). */
#define ZSTD_LEVEL_LO 1
#define ZSTD_LEVEL_HI 22

/* Key types whose field is a char * owned by the config. */
static bool is_text(key_type t)
{
    return t == T_STRING || t == T_ADDR || t == T_LOGLEVEL || t == T_TCP_OPT || t == T_UNREADABLE ||
           t == T_TLSVER || t == T_BACKEND_TLS || t == T_IO || t == T_POOL;
}

typedef struct key_def {
    const char *name;
    key_type type;
    size_t offset;
    const char *def;
    const char *help;
} key_def;

#define K(field) offsetof(mr_config, field)

/* Alphabetical; doc/configuration.md's reference is generated from it
 * (`myrewrite --config-reference`; the ctest `docs` compares them). */
static const key_def keys[] = {
    {"admin_listen", T_TCP_OPT, K(admin_listen), "127.0.0.1:6034",
     "loopback TCP address of the admin console (MySQL protocol); empty: off"},
    {"admin_login_timeout", T_DURATION, K(admin_login_timeout_ms), "3s",
     "how long a console connection may take to log in; at most 8 may be logging in at once "
     "(a newer one closes the oldest), apart from the 32 logged in"},
    {"admin_password", T_STRING, K(admin_password), "",
     "admin console password; the console does not start without one"},
    {"admin_user", T_STRING, K(admin_user), "admin", "admin console user name"},
    {"backend", T_ADDR, K(backend), "127.0.0.1:3306",
     "the mysqld to relay to: host:port, [ipv6]:port or /path/to/mysqld.sock"},
    {"backend_compress", T_BOOL, K(backend_compress), "no",
     "yes: the backend leg speaks the compressed protocol (zlib) when the server's greeting "
     "offers it, whatever the client's leg speaks, and the proxy's own connections ask for it "
     "too (MYSQL_OPT_COMPRESS); no: the backend leg is plain"},
    {"backend_keepalive", T_DURATION, K(backend_keepalive_ms), "30s",
     "TCP keepalive on the sessions' backend connections: probes after this long without "
     "traffic, 3 of them a third of it apart, and unacknowledged data given up after as long "
     "(TCP_USER_TIMEOUT), so a backend host that vanished ends its sessions (their client "
     "connections close as the server's would; during a login: ERR 1158); 0: off"},
    {"backend_read_timeout", T_DURATION, K(backend_read_timeout_ms), "0",
     "while a session waits for the backend's answer to a command, the longest the backend "
     "may send nothing before the client gets ERR 1158 (08S01) and the session is closed; "
     "0: no limit (a long silent query is not cut)"},
    {"backend_tls", T_BACKEND_TLS, K(backend_tls), "off",
     "TLS toward the backend: off, prefer (when the server offers it), require, verify_ca "
     "(backend_tls_ca signed its certificate), verify_identity (and it names the backend host); "
     "a client that came over TLS gets prefer at least"},
    {"backend_tls_ca", T_STRING, K(backend_tls_ca), "",
     "PEM file of the CAs the backend's certificate must chain to (verify_ca, verify_identity)"},
    {"backend_tls_cert", T_STRING, K(backend_tls_cert), "",
     "PEM certificate (chain) the proxy shows the backend over TLS, for every session and its "
     "own connections; with backend_tls_key"},
    {"backend_tls_key", T_STRING, K(backend_tls_key), "", "PEM private key of backend_tls_cert"},
    {"compression", T_COMPRESSION, K(compression), "yes",
     "the compressed protocols the greeting offers clients: zlib (CLIENT_COMPRESS, when the "
     "server's greeting offers it), zstd (CLIENT_ZSTD_COMPRESSION_ALGORITHM, MySQL 8 clients), "
     "yes (both) or no; the proxy ends it on the client's leg (see backend_compress)"},
    {"connect_timeout", T_DURATION, K(connect_timeout_ms), "5s",
     "how long connecting to the backend and reading its greeting may take"},
    {"delayed_park_timeout", T_DURATION, K(delayed_park_timeout_ms), "5s",
     "how long a DELAYED statement whose rule names no key waits for the schema cache to "
     "read its table's key before it is refused; 0: refused at once with \"retry\". Also "
     "how long a start waits for the flusher to create missing staging tables before it "
     "listens, and how long a group-commit batch waits for a staging table not created yet"},
    {"handshake_timeout", T_DURATION, K(handshake_timeout_ms), "10s",
     "how long a client may take to finish authentication"},
    {"http_listen", T_TCP_OPT, K(http_listen), "",
     "TCP address of the HTTP endpoint (/metrics, /health, /ready), e.g. 127.0.0.1:9104; "
     "empty: off"},
    {"http_insecure", T_BOOL, K(http_insecure), "no",
     "yes: serve http_listen on an address other than loopback without http_token (anyone "
     "who reaches it reads /metrics)"},
    {"http_max_connections", T_COUNT, K(http_max_connections), "64",
     "connections the HTTP endpoint holds at once (at least 1); past it a client gets 503 "
     "and is closed, so idle sockets cannot take the proxy's descriptors"},
    {"http_timeout", T_DURATION, K(http_timeout_ms), "10s",
     "an HTTP connection that takes longer than this to send a request's headers, or stays "
     "idle this long between two requests, is closed"},
    {"http_token", T_STRING, K(http_token), "",
     "when set, /metrics answers only requests with the header 'Authorization: Bearer "
     "<token>' (401 otherwise); /health and /ready stay open; empty: no token"},
    {"io", T_IO, K(io), "epoll",
     "how the workers read and write their sockets: epoll, or io_uring (one ring per worker: "
     "multishot receives into provided buffers, each connection's output sent once per loop "
     "turn; TLS connections stay on epoll); a kernel that refuses io_uring at start leaves "
     "that worker on epoll, with a warning"},
    {"listen", T_ADDR, K(listen), "127.0.0.1:6033", "TCP address clients connect to"},
    {"log_level", T_LOGLEVEL, K(log_level), "info", "debug, info, warn or error"},
    {"max_connections", T_COUNT, K(max_connections), "1000",
     "client connections beyond this get ERR 1040 and are closed"},
    {"max_packet_size", T_SIZE, K(max_packet_size), "1G",
     "largest client command payload (all 16 MiB pieces together); larger ones get ERR 1153"},
    {"own_connection_idle", T_DURATION, K(own_connection_idle_ms), "60s",
     "a connection of the proxy's own (proxy_user) that had no work for this long is closed; "
     "it opens again at the next job"},
    {"own_connection_timeout", T_DURATION, K(own_connection_timeout_ms), "30s",
     "read and write timeout of the proxy's own connections (whole seconds, at least 1): a "
     "backend that does not answer a flush or release statement for this long counts as "
     "gone, and the connection is made again"},
    {"pool", T_POOL, K(pool), "session",
     "how client sessions use server connections: session (each client keeps the server "
     "connection it logged in on, as a direct client would) or transaction (a session "
     "borrows a pooled connection for each transaction or autocommit statement and gives it "
     "back, with its state replayed on the next one; state that cannot be replayed pins the "
     "session, see SHOW POOLS) or statement (as transaction, but a statement whose words would "
     "pin the session, such as BEGIN, LOCK TABLES or SET @x, is refused with an ERR)"},
    {"pool_idle_timeout", T_DURATION, K(pool_idle_timeout_ms), "10m",
     "pool = transaction: an idle pooled connection unused this long is closed, keeping "
     "pool_min_idle of each pool; 0: never"},
    {"pool_max_lifetime", T_DURATION, K(pool_max_lifetime_ms), "1h",
     "pool = transaction: a pooled connection this old is closed when it next comes back "
     "idle; 0: no limit"},
    {"pool_long_data_max", T_SIZE, K(pool_long_data_max), "1M",
     "pool = transaction: bytes of COM_STMT_SEND_LONG_DATA one session keeps to send again on "
     "whichever server connection runs the execute; past it the session is pinned (reason "
     "prepared) to one connection until that statement's execute, reset or close"},
    {"pool_max_wait", T_DURATION, K(pool_max_wait_ms), "5s",
     "pool = transaction: how long a session waits for a server connection of its pool "
     "(sessions wait in arrival order) before its command gets ERR 1040"},
    {"pool_min_idle", T_COUNT, K(pool_min_idle), "0",
     "pool = transaction: idle connections of each pool that pool_idle_timeout leaves open"},
    {"pool_size", T_COUNT, K(pool_size), "20",
     "pool = transaction: the most server connections the proxy holds for one user (logins "
     "included), shared out among the worker threads (each gets pool_size / workers, at "
     "least 1)"},
    {"pool_stmt_cache", T_COUNT, K(pool_stmt_cache), "256",
     "pool = transaction: prepared statements each pooled server connection keeps (shared "
     "by the sessions that borrow it); the least recently used is closed beyond it"},
    {"proxy_password", T_STRING, K(proxy_password), "",
     "password of the proxy's own account (keep the file unreadable to others)"},
    {"proxy_user", T_STRING, K(proxy_user), "",
     "the proxy's own account on the backend, used by background work (queue release); "
     "empty: none"},
    {"relay_buffer", T_SIZE, K(relay_buffer), "256K",
     "bytes queued toward a slow peer before the proxy stops reading the other side"},
    {"require_tls", T_BOOL, K(require_tls), "no",
     "yes: a client that does not start TLS gets ERR 3159 and is closed (needs tls_cert)"},
    {"rules_dir", T_STRING, K(rules_dir), "rules", "directory of *.rules files"},
    {"schema_cache_max_tables", T_COUNT, K(schema_cache_max_tables), "10000",
     "tables whose keys the schema cache keeps; the least recently used go first"},
    {"schema_cache_ttl", T_DURATION, K(schema_cache_ttl_ms), "60s",
     "how long a table's keys read from information_schema are used before a reload "
     "(DDL through the proxy reloads at once)"},
    {"shutdown_timeout", T_DURATION, K(shutdown_timeout_ms), "10s",
     "on SIGTERM, how long in-flight statements may run before connections are closed"},
    {"socket", T_STRING, K(socket), "", "unix socket clients may also connect to (empty: none)"},
    {"tls_ca", T_STRING, K(tls_ca), "",
     "PEM file of the CAs client certificates must chain to; set: clients must show one"},
    {"tls_cert", T_STRING, K(tls_cert), "",
     "PEM certificate (chain) the proxy shows clients; set: the greeting offers TLS"},
    {"tls_ciphers", T_STRING, K(tls_ciphers), "",
     "OpenSSL cipher list for TLSv1.2 toward clients; empty: OpenSSL's default"},
    {"tls_ciphersuites", T_STRING, K(tls_ciphersuites), "",
     "OpenSSL TLSv1.3 cipher suites toward clients; empty: OpenSSL's default"},
    {"tls_key", T_STRING, K(tls_key), "", "PEM private key of tls_cert"},
    {"tls_min_version", T_TLSVER, K(tls_min_version), "TLSv1.2",
     "oldest TLS version clients may use: TLSv1.2 or TLSv1.3"},
    {"unreadable", T_UNREADABLE, K(unreadable), "auto",
     "a statement the proxy cannot read (its rules cannot examine it): pass relays it as "
     "written, block answers ERR 1148; auto blocks once any block rule is in force, else passes"},
    {"workers", T_COUNT, K(workers), "0", "worker threads; 0 means one per CPU core"},
    {"zstd_max_level", T_ZSTD_LEVEL, K(zstd_max_level), "3",
     "the highest zstd level (1-22) the proxy compresses a zstd client's replies at: a client "
     "that asks for more gets this one (levels 19-22 cost the proxy much CPU; 3 is zstd's "
     "default, and MySQL 8's when the client names none)"},
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const key_def *find_key(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

/* "4096", "64K", "16M", "1G" -> bytes. */
static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    if (!isdigit((unsigned char)*s))
        return false; /* strtoull would skip spaces and accept a sign */
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno)
        return false;
    int shift = 0;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    default: return false;
    }
    if (*end && end[1] && !(toupper((unsigned char)end[1]) == 'B' && !end[2]))
        return false;
    if (v > (UINT64_MAX >> shift))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

static bool parse_count(const char *s, uint64_t *out)
{
    char *end;
    if (!isdigit((unsigned char)*s))
        return false; /* strtoull would skip spaces and accept a sign */
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end || errno)
        return false;
    *out = v;
    return true;
}

bool mr_addr_parse(const char *s, mr_addr *a)
{
    memset(a, 0, sizeof(*a));
    if (s[0] == '/') {
        if (strlen(s) >= sizeof(a->path))
            return false;
        strcpy(a->path, s);
        a->is_unix = true;
        return true;
    }
    const char *colon = strrchr(s, ':');
    if (!colon || !colon[1] || strlen(colon + 1) >= sizeof(a->port))
        return false;
    const char *hs = s, *he = colon;
    if (*hs == '[') { /* [::1]:6033 */
        if (he[-1] != ']')
            return false;
        hs++;
        he--;
    }
    if (he <= hs || (size_t)(he - hs) >= sizeof(a->host))
        return false;
    uint64_t port;
    if (!parse_count(colon + 1, &port) || port == 0 || port > 65535)
        return false;
    memcpy(a->host, hs, (size_t)(he - hs));
    strcpy(a->port, colon + 1);
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    if (!strcmp(s, "yes") || !strcmp(s, "true") || !strcmp(s, "on") || !strcmp(s, "1"))
        *out = true;
    else if (!strcmp(s, "no") || !strcmp(s, "false") || !strcmp(s, "off") || !strcmp(s, "0"))
        *out = false;
    else
        return false;
    return true;
}

static bool parse_zstd_level(const char *s, uint64_t *out)
{
    uint64_t v;
    if (!parse_count(s, &v) || v < ZSTD_LEVEL_LO || v > ZSTD_LEVEL_HI)
        return false;
    *out = v;
    return true;
}

static bool parse_compression(const char *s, unsigned *out)
{
    bool on;
    if (parse_bool(s, &on))
        *out = on ? MR_COMPRESS_ZLIB | MR_COMPRESS_ZSTD : 0;
    else if (!strcmp(s, "zlib"))
        *out = MR_COMPRESS_ZLIB;
    else if (!strcmp(s, "zstd"))
        *out = MR_COMPRESS_ZSTD;
    else
        return false;
    return true;
}

static const char *compression_name(unsigned bits)
{
    static const char *const names[] = {"no", "zlib", "zstd", "yes"};
    return names[bits & (MR_COMPRESS_ZLIB | MR_COMPRESS_ZSTD)];
}

static const char *expected_form(key_type t)
{
    switch (t) {
    case T_COUNT: return "a whole number";
    case T_SIZE: return "a size such as 4096, 64K, 16M or 1G";
    case T_DURATION: return MR_DURATION_FORMS;
    case T_ADDR: return "host:port, [ipv6]:port or an absolute unix socket path";
    case T_LOGLEVEL: return "one of debug, info, warn, error";
    case T_TCP_OPT: return "host:port or [ipv6]:port, or nothing to turn it off";
    case T_UNREADABLE: return "one of auto, pass, block";
    case T_TLSVER: return "TLSv1.2 or TLSv1.3";
    case T_BACKEND_TLS: return "one of off, prefer, require, verify_ca, verify_identity";
    case T_BOOL: return "yes or no";
    case T_COMPRESSION: return "one of no, zlib, zstd, yes (zlib and zstd)";
    case T_IO: return "epoll or io_uring";
    case T_ZSTD_LEVEL: return "a whole number from 1 to 22 (zstd's levels)";
    case T_POOL: return "one of session, transaction, statement";
    default: return "text";
    }
}

static bool valid_value(const key_def *k, const char *value, void *field)
{
    mr_addr addr;
    switch (k->type) {
    case T_COUNT: return parse_count(value, field);
    case T_SIZE: return parse_size(value, field);
    case T_DURATION: return mr_parse_duration(value, field);
    case T_ADDR: return mr_addr_parse(value, &addr);
    case T_TCP_OPT: return !value[0] || (mr_addr_parse(value, &addr) && !addr.is_unix);
    case T_UNREADABLE:
        return !strcmp(value, "auto") || !strcmp(value, "pass") || !strcmp(value, "block");
    case T_TLSVER: return !strcmp(value, "TLSv1.2") || !strcmp(value, "TLSv1.3");
    case T_POOL:
        return !strcmp(value, "session") || !strcmp(value, "transaction") ||
               !strcmp(value, "statement");
    case T_BACKEND_TLS:
        return !strcmp(value, "off") || !strcmp(value, "prefer") || !strcmp(value, "require") ||
               !strcmp(value, "verify_ca") || !strcmp(value, "verify_identity");
    case T_BOOL: return parse_bool(value, field);
    case T_COMPRESSION: return parse_compression(value, field);
    case T_ZSTD_LEVEL: return parse_zstd_level(value, field);
    case T_IO: return !strcmp(value, "epoll") || !strcmp(value, "io_uring");
    case T_LOGLEVEL:
        return !strcmp(value, "debug") || !strcmp(value, "info") || !strcmp(value, "warn") ||
               !strcmp(value, "error");
    default: return true;
    }
}

bool mr_config_set(mr_config *c, const char *key, const char *value, const char *origin, int line,
                   mr_diag *d)
{
    const key_def *k = find_key(key);
    if (!k) {
        mr_diag_error(d, origin, line, "unknown key '%s' (see myrewrite --config-reference)", key);
        return false;
    }
    void *field = (char *)c + k->offset;
    if (!valid_value(k, value, field)) {
        mr_diag_error(d, origin, line, "%s = '%s': expected %s", key, value,
                      expected_form(k->type));
        return false;
    }
#ifndef MYREWRITE_HAVE_URING
    if (k->type == T_IO && !strcmp(value, "io_uring")) {
        mr_diag_error(d, origin, line,
                      "io = 'io_uring': this myrewrite was built without io_uring (liburing "
                      "was not found, or MYREWRITE_IO_URING=OFF); use io = epoll");
        return false;
    }
#endif
    if (is_text(k->type)) {
        char **s = field;
        free(*s);
        *s = strdup(value);
    }
    return true;
}

void mr_config_defaults(mr_config *c)
{
    mr_diag quiet = {0};
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < NKEYS; i++)
        mr_config_set(c, keys[i].name, keys[i].def, "defaults", 0, &quiet);
}

void mr_config_free(mr_config *c)
{
    for (size_t i = 0; i < NKEYS; i++) {
        if (is_text(keys[i].type)) {
            char **s = (char **)((char *)c + keys[i].offset);
            free(*s);
            *s = NULL;
        }
    }
}

typedef struct load_ctx {
    mr_config *c;
    const char *path;
    mr_diag *d;
} load_ctx;

static int on_section(void *ctx, const char *name, int line)
{
    load_ctx *l = ctx;
    if (strcmp(name, "myrewrite") != 0) {
        mr_diag_error(l->d, l->path, line, "unknown section [%s]; settings go under [myrewrite]",
                      name);
        return 1;
    }
    return 0;
}

static int on_pair(void *ctx, const char *section, const char *key, const char *value, int line)
{
    load_ctx *l = ctx;
    if (strcmp(section, "myrewrite") != 0)
        return 0; /* already reported at the section header */
    return mr_config_set(l->c, key, value, l->path, line, l->d) ? 0 : 1;
}

static void on_error(void *ctx, int line, const char *msg)
{
    load_ctx *l = ctx;
    mr_diag_error(l->d, l->path, line, "%s", msg);
}

static char *read_file(const char *path, size_t *len, mr_diag *d)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        mr_diag_error(d, path, 0, "cannot open: %s", strerror(errno));
        return NULL;
    }
    char *data = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (cap - n < 4096) {
            char *p = realloc(data, cap = cap * 2 + 4096);
            if (!p) {
                free(data);
                fclose(f);
                mr_diag_error(d, path, 0, "out of memory");
                return NULL;
            }
            data = p;
        }
        got = fread(data + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(data);
        mr_diag_error(d, path, 0, "read error");
        return NULL;
    }
    *len = n;
    return data;
}

bool mr_config_load(mr_config *c, const char *path, mr_diag *d)
{
    int before = d->errors;
    size_t len;
    char *text = read_file(path, &len, d);
    if (!text)
        return false;
    load_ctx l = {c, path, d};
    mr_ini_callbacks cb = {on_section, on_pair, on_error};
    mr_ini_parse(text, len, &cb, &l);
    free(text);
    return d->errors == before;
}

void mr_config_reference(FILE *out)
{
    fprintf(out, "| key | default | meaning |\n|---|---|---|\n");
    for (size_t i = 0; i < NKEYS; i++)
        fprintf(out, "| `%s` | `%s` | %s |\n", keys[i].name, keys[i].def, keys[i].help);
}

void mr_config_dump(const mr_config *c, FILE *out)
{
    fprintf(out, "[myrewrite]\n");
    for (size_t i = 0; i < NKEYS; i++) {
        const void *field = (const char *)c + keys[i].offset;
        switch (keys[i].type) {
        case T_COUNT:
        case T_SIZE:
        case T_ZSTD_LEVEL:
            fprintf(out, "%s = %llu\n", keys[i].name, (unsigned long long)*(const uint64_t *)field);
            break;
        case T_DURATION:
            fprintf(out, "%s = %llums\n", keys[i].name,
                    (unsigned long long)*(const uint64_t *)field);
            break;
        case T_BOOL:
            fprintf(out, "%s = %s\n", keys[i].name, *(const bool *)field ? "yes" : "no");
            break;
        case T_COMPRESSION:
            fprintf(out, "%s = %s\n", keys[i].name, compression_name(*(const unsigned *)field));
            break;
        default: {
            const char *v = *(char *const *)field;
            bool secret =
                (strstr(keys[i].name, "password") || strstr(keys[i].name, "token")) && v[0];
            fprintf(out, "%s = %s\n", keys[i].name, secret ? "(set, not shown)" : v);
        }
        }
    }
}
