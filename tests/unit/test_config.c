/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config.c - unit tests for base/config.c: defaults, value parsing per key
 * type, addresses, `file:line: message` diagnostics and file loading.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "myrewrite/base/config.h"

/* ---- fixture: a config, a diagnostics capture and a temp file ---- */

typedef struct fixture {
    mr_config c;
    mr_diag d;
    char *out;
    size_t out_len;
    char path[256];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return -1;
    mr_config_defaults(&f->c);
    f->d.out = open_memstream(&f->out, &f->out_len);
    if (!f->d.out)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    mr_config_free(&f->c);
    fclose(f->d.out);
    free(f->out);
    if (f->path[0])
        unlink(f->path);
    free(f);
    return 0;
}

/* Everything reported so far. */
static const char *diag_text(fixture *f)
{
    fflush(f->d.out);
    return f->out ? f->out : "";
}

static void write_temp(fixture *f, const char *text)
{
    const char *dir = getenv("TMPDIR");
    snprintf(f->path, sizeof(f->path), "%s/mr_config_XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(f->path);
    assert_true(fd >= 0);
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
}

static bool set(fixture *f, const char *key, const char *value)
{
    return mr_config_set(&f->c, key, value, "test.ini", 1, &f->d);
}

/* ---- defaults ---- */

static void defaults(void **state)
{
    fixture *f = *state;
    const mr_config *c = &f->c;
    assert_string_equal(c->backend, "127.0.0.1:3306");
    assert_int_equal(c->connect_timeout_ms, 5000);
    assert_int_equal(c->handshake_timeout_ms, 10000);
    assert_string_equal(c->listen, "127.0.0.1:6033");
    assert_string_equal(c->log_level, "info");
    assert_int_equal(c->max_connections, 1000);
    assert_int_equal(c->max_packet_size, 1024u * 1024 * 1024);
    assert_int_equal(c->relay_buffer, 256u * 1024);
    assert_string_equal(c->rules_dir, "rules");
    assert_int_equal(c->shutdown_timeout_ms, 10000);
    assert_string_equal(c->socket, "");
    assert_int_equal(c->workers, 0);
    assert_int_equal(f->d.errors, 0);
}

static void free_clears_strings(void **state)
{
    (void)state;
    mr_config c;
    mr_config_defaults(&c);
    mr_config_free(&c);
    assert_null(c.backend);
    assert_null(c.listen);
    assert_null(c.log_level);
    assert_null(c.rules_dir);
    assert_null(c.socket);
    mr_config_free(&c); /* a second free is harmless */
}

/* ---- sizes ---- */

static void size_values(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *text;
        uint64_t bytes;
    } ok[] = {
        {"4096", 4096},
        {"0", 0},
        {"64K", 64u * 1024},
        {"64k", 64u * 1024},
        {"64KB", 64u * 1024},
        {"16M", 16u * 1024 * 1024},
        {"16mb", 16u * 1024 * 1024},
        {"1G", 1024u * 1024 * 1024},
        {"17179869183G", 17179869183ull << 30},
        {"18446744073709551615", UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_true(set(f, "relay_buffer", ok[i].text));
        assert_int_equal(f->c.relay_buffer, ok[i].bytes);
    }
    assert_int_equal(f->d.errors, 0);
}

static void size_invalid_values(void **state)
{
    fixture *f = *state;
    static const char *const bad[] = {
        "",
        "abc",
        "-1",
        "1T",
        "64KiB",
        "64Kb2",
        "1.5M",
        "K",
        "16 M",
        "0x10",
        "17179869184G",         /* overflows 64 bits once shifted */
        "18446744073709551616", /* overflows before the suffix */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (set(f, "max_packet_size", bad[i]))
            fail_msg("max_packet_size = '%s' was accepted", bad[i]);
        assert_int_equal(f->c.max_packet_size, 1024u * 1024 * 1024); /* unchanged */
    }
    assert_int_equal(f->d.errors, (int)(sizeof(bad) / sizeof(bad[0])));
}

/* ---- durations ---- */

static void duration_values(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *text;
        uint64_t ms;
    } ok[] = {
        {"10", 10000}, {"10s", 10000}, {"250ms", 250}, {"2m", 120000},  {"1.5s", 1500},
        {"0", 0},      {"0.25", 250},  {"1.5ms", 2},   {"1h", 3600000}, {"0.5h", 1800000},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_true(set(f, "connect_timeout", ok[i].text));
        assert_int_equal(f->c.connect_timeout_ms, ok[i].ms);
    }
    assert_int_equal(f->d.errors, 0);
}

static void duration_invalid_values(void **state)
{
    fixture *f = *state;
    static const char *const bad[] = {"", "abc", "-1", "-1s", "10 s", "ms", "5sec", "10S", "1e400"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (set(f, "shutdown_timeout", bad[i]))
            fail_msg("shutdown_timeout = '%s' was accepted", bad[i]);
        assert_int_equal(f->c.shutdown_timeout_ms, 10000);
    }
}

/*
 * Regression (base/config.c, parse_duration, fixed): strtod accepts "inf", "nan" and huge
 * values such as "1e30"; they pass the checks and are converted to
 * uint64_t, which is undefined behaviour for values out of range.
 */
static void duration_rejects_inf_nan_and_huge(void **state)
{
    fixture *f = *state;
    static const char *const bad[] = {"inf", "nan", "infinity", "1e30", "1e17m"};
    int accepted = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        f->c.handshake_timeout_ms = 7;
        if (set(f, "handshake_timeout", bad[i])) {
            print_message("handshake_timeout = '%s' was accepted as %llu ms\n", bad[i],
                          (unsigned long long)f->c.handshake_timeout_ms);
            accepted++;
        }
    }
    assert_int_equal(accepted, 0);
}

/* ---- counts ---- */

static void count_values(void **state)
{
    fixture *f = *state;
    assert_true(set(f, "workers", "0"));
    assert_int_equal(f->c.workers, 0);
    assert_true(set(f, "workers", "16"));
    assert_int_equal(f->c.workers, 16);
    assert_true(set(f, "max_connections", "18446744073709551615"));
    assert_int_equal(f->c.max_connections, UINT64_MAX);
}

static void count_invalid_values(void **state)
{
    fixture *f = *state;
    static const char *const bad[] = {"",    "-1",  "1.5",  "abc",
                                      "10k", "12 ", "0x10", "18446744073709551616"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (set(f, "max_connections", bad[i]))
            fail_msg("max_connections = '%s' was accepted", bad[i]);
        assert_int_equal(f->c.max_connections, 1000);
    }
}

/*
 * Regression (base/config.c, parse_count and parse_size, fixed): the '-' check looks only at
 * the first character, but strtoull skips leading white space first, so
 * " -1" (reachable through --set / command-line values, which are not
 * trimmed) is accepted and wraps to 18446744073709551615.
 */
static void count_rejects_negative_after_space(void **state)
{
    fixture *f = *state;
    assert_false(mr_config_set(&f->c, "max_connections", " -1", "--set", 0, &f->d));
    assert_int_equal(f->c.max_connections, 1000);
    assert_false(mr_config_set(&f->c, "relay_buffer", " -1", "--set", 0, &f->d));
    assert_int_equal(f->c.relay_buffer, 256u * 1024);
}

/* ---- log level and strings ---- */

static void log_level_values(void **state)
{
    fixture *f = *state;
    static const char *const ok[] = {"debug", "info", "warn", "error"};
    for (size_t i = 0; i < 4; i++) {
        assert_true(set(f, "log_level", ok[i]));
        assert_string_equal(f->c.log_level, ok[i]);
    }
    static const char *const bad[] = {"", "INFO", "verbose", "warning", "info "};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_false(set(f, "log_level", bad[i]));
        assert_string_equal(f->c.log_level, "error");
    }
}

/* The TLS choices take their listed words only, and keep the last good one. */
static void tls_choice_values(void **state)
{
    fixture *f = *state;
    assert_false(f->c.require_tls);
    assert_string_equal(f->c.tls_min_version, "TLSv1.2");
    assert_string_equal(f->c.backend_tls, "off");
    assert_true(set(f, "require_tls", "yes"));
    assert_false(set(f, "require_tls", "maybe"));
    assert_true(f->c.require_tls);
    assert_true(set(f, "tls_min_version", "TLSv1.3"));
    assert_false(set(f, "tls_min_version", "TLSv1.1"));
    assert_false(set(f, "tls_min_version", "tlsv1.2"));
    assert_string_equal(f->c.tls_min_version, "TLSv1.3");
    static const char *const modes[] = {"off", "prefer", "require", "verify_ca", "verify_identity"};
    for (size_t i = 0; i < 5; i++) {
        assert_true(set(f, "backend_tls", modes[i]));
        assert_string_equal(f->c.backend_tls, modes[i]);
    }
    assert_false(set(f, "backend_tls", "on"));
    assert_false(set(f, "backend_tls", "VERIFY_CA"));
    assert_string_equal(f->c.backend_tls, "verify_identity");
}

static void bool_values(void **state)
{
    fixture *f = *state;
    assert_false(f->c.http_insecure);
    static const char *const yes[] = {"yes", "true", "on", "1"}, *const no[] = {"no", "false",
                                                                                "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        assert_true(set(f, "http_insecure", yes[i]));
        assert_true(f->c.http_insecure);
        assert_true(set(f, "http_insecure", no[i]));
        assert_false(f->c.http_insecure);
    }
    static const char *const bad[] = {"", "YES", "maybe", "yes ", "2"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(set(f, "http_insecure", bad[i]));
}

/* compression: which protocols; yes (and its synonyms) is both, as before
 * zstd existed it was zlib alone; backend_compress is a plain yes/no. */
static void compression_values(void **state)
{
    fixture *f = *state;
    assert_int_equal(f->c.compression, MR_COMPRESS_ZLIB | MR_COMPRESS_ZSTD);
    assert_false(f->c.backend_compress);
    static const struct {
        const char *v;
        unsigned bits;
    } ok[] = {{"no", 0},
              {"off", 0},
              {"zlib", MR_COMPRESS_ZLIB},
              {"zstd", MR_COMPRESS_ZSTD},
              {"yes", MR_COMPRESS_ZLIB | MR_COMPRESS_ZSTD},
              {"1", MR_COMPRESS_ZLIB | MR_COMPRESS_ZSTD}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_true(set(f, "compression", ok[i].v));
        assert_int_equal(f->c.compression, ok[i].bits);
    }
    static const char *const bad[] = {"", "ZSTD", "lz4", "zlib,zstd", "both"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(set(f, "compression", bad[i]));
    assert_true(set(f, "backend_compress", "yes"));
    assert_true(f->c.backend_compress);
    assert_false(set(f, "backend_compress", "zlib"));
}

/* zstd_max_level: zstd's own default, and only zstd's levels 1-22. */
static void zstd_max_level_values(void **state)
{
    fixture *f = *state;
    assert_int_equal(f->c.zstd_max_level, 3);
    assert_true(set(f, "zstd_max_level", "1"));
    assert_int_equal(f->c.zstd_max_level, 1);
    assert_true(set(f, "zstd_max_level", "22"));
    assert_int_equal(f->c.zstd_max_level, 22);
    static const char *const bad[] = {"0", "23", "-1", "", "3.5", " 3", "max", "99999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(set(f, "zstd_max_level", bad[i]));
    assert_int_equal(f->c.zstd_max_level, 22); /* a refused value leaves the one before */
}

static void own_connection_idle_is_a_duration(void **state)
{
    fixture *f = *state;
    assert_int_equal(f->c.own_connection_idle_ms, 60000);
    assert_true(set(f, "own_connection_idle", "2s"));
    assert_int_equal(f->c.own_connection_idle_ms, 2000);
    assert_true(set(f, "own_connection_idle", "1.5m"));
    assert_int_equal(f->c.own_connection_idle_ms, 90000);
    assert_false(set(f, "own_connection_idle", "soon"));
}

/* The timeouts between the proxy and the backend, and their defaults. */
static void backend_timeouts_are_durations(void **state)
{
    fixture *f = *state;
    assert_int_equal(f->c.backend_read_timeout_ms, 0);
    assert_int_equal(f->c.backend_keepalive_ms, 30000);
    assert_int_equal(f->c.own_connection_timeout_ms, 30000);
    assert_true(set(f, "backend_read_timeout", "2s"));
    assert_int_equal(f->c.backend_read_timeout_ms, 2000);
    assert_true(set(f, "backend_keepalive", "0"));
    assert_int_equal(f->c.backend_keepalive_ms, 0);
    assert_true(set(f, "own_connection_timeout", "1s"));
    assert_int_equal(f->c.own_connection_timeout_ms, 1000);
    assert_false(set(f, "backend_read_timeout", "never"));
}

/* The config as mr_config_dump writes it (the caller frees it). */
static char *dump_text(fixture *f)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    mr_config_dump(&f->c, out);
    fclose(out);
    return text;
}

static void token_is_not_dumped(void **state)
{
    fixture *f = *state;
    assert_true(set(f, "http_token", "very-secret"));
    assert_true(set(f, "http_insecure", "yes"));
    char *text = dump_text(f);
    assert_null(strstr(text, "very-secret"));
    assert_non_null(strstr(text, "http_token = (set, not shown)\n"));
    assert_non_null(strstr(text, "http_insecure = yes\n"));
    free(text);
}

static void string_values_are_copied(void **state)
{
    fixture *f = *state;
    char value[] = "/etc/myrewrite/rules.d";
    assert_true(set(f, "rules_dir", value));
    value[0] = 'X';
    assert_string_equal(f->c.rules_dir, "/etc/myrewrite/rules.d");
    assert_true(set(f, "socket", "/run/myrewrite.sock"));
    assert_string_equal(f->c.socket, "/run/myrewrite.sock");
    assert_true(set(f, "socket", ""));
    assert_string_equal(f->c.socket, "");
}

/* ---- addresses ---- */

static void addr_host_port(void **state)
{
    (void)state;
    mr_addr a;
    assert_true(mr_addr_parse("127.0.0.1:6033", &a));
    assert_false(a.is_unix);
    assert_string_equal(a.host, "127.0.0.1");
    assert_string_equal(a.port, "6033");
    assert_true(mr_addr_parse("db.internal.example:3306", &a));
    assert_string_equal(a.host, "db.internal.example");
    assert_string_equal(a.port, "3306");
    assert_true(mr_addr_parse("0.0.0.0:1", &a));
    assert_string_equal(a.port, "1");
    assert_true(mr_addr_parse("h:65535", &a));
    assert_string_equal(a.port, "65535");
}

static void addr_ipv6_in_brackets(void **state)
{
    (void)state;
    mr_addr a;
    assert_true(mr_addr_parse("[::1]:6033", &a));
    assert_false(a.is_unix);
    assert_string_equal(a.host, "::1");
    assert_string_equal(a.port, "6033");
    assert_true(mr_addr_parse("[fe80::1%eth0]:3306", &a));
    assert_string_equal(a.host, "fe80::1%eth0");
}

static void addr_unix_path(void **state)
{
    (void)state;
    mr_addr a;
    assert_true(mr_addr_parse("/tmp/x.sock", &a));
    assert_true(a.is_unix);
    assert_string_equal(a.path, "/tmp/x.sock");
    assert_string_equal(a.host, "");
    assert_true(mr_addr_parse("/var/run/mysqld/mysqld.sock", &a));
    assert_string_equal(a.path, "/var/run/mysqld/mysqld.sock");
}

static void addr_unix_path_length_limit(void **state)
{
    (void)state;
    char path[120];
    mr_addr a;
    memset(path, 'p', sizeof(path));
    path[0] = '/';
    path[107] = '\0'; /* 107 characters + NUL fit sun_path */
    assert_true(mr_addr_parse(path, &a));
    assert_int_equal(strlen(a.path), 107);
    path[107] = 'p';
    path[108] = '\0';
    assert_false(mr_addr_parse(path, &a));
}

static void addr_invalid(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "host:0", "host:65536", "host:abc", "host:",         "host",    ":3306",    "",
        "[::1]",  "[::1:3306",  "[]:3306",  "relative.sock", "host:-1", "host:1.5", "host:99999999",
    };
    mr_addr a;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (mr_addr_parse(bad[i], &a))
            fail_msg("'%s' was accepted", bad[i]);
    }
}

static void addr_host_length_limit(void **state)
{
    (void)state;
    char s[300];
    mr_addr a;
    memset(s, 'h', 255);
    strcpy(s + 255, ":80");
    assert_true(mr_addr_parse(s, &a));
    assert_int_equal(strlen(a.host), 255);
    memset(s, 'h', 256);
    strcpy(s + 256, ":80");
    assert_false(mr_addr_parse(s, &a));
}

static void addr_keys_validate(void **state)
{
    fixture *f = *state;
    assert_true(set(f, "backend", "/var/run/mysqld/mysqld.sock"));
    assert_string_equal(f->c.backend, "/var/run/mysqld/mysqld.sock");
    assert_true(set(f, "listen", "[::1]:6033"));
    assert_string_equal(f->c.listen, "[::1]:6033");
    assert_false(set(f, "listen", "0.0.0.0:0"));
    assert_false(set(f, "backend", "db:65536"));
    assert_false(set(f, "backend", "db:abc"));
    assert_string_equal(f->c.listen, "[::1]:6033");
    assert_string_equal(f->c.backend, "/var/run/mysqld/mysqld.sock");
    assert_int_equal(f->d.errors, 3);
}

/* ---- diagnostics ---- */

static void unknown_key_diagnostic(void **state)
{
    fixture *f = *state;
    assert_false(mr_config_set(&f->c, "max_conections", "5", "/etc/myrewrite.ini", 7, &f->d));
    assert_int_equal(f->d.errors, 1);
    assert_string_equal(diag_text(f), "/etc/myrewrite.ini:7: unknown key 'max_conections' "
                                      "(see myrewrite --config-reference)\n");
}

static void invalid_value_diagnostic(void **state)
{
    fixture *f = *state;
    assert_false(mr_config_set(&f->c, "workers", "many", "a.ini", 3, &f->d));
    assert_false(mr_config_set(&f->c, "relay_buffer", "1T", "a.ini", 4, &f->d));
    assert_false(mr_config_set(&f->c, "listen", "x:0", "a.ini", 5, &f->d));
    assert_false(mr_config_set(&f->c, "zstd_max_level", "23", "a.ini", 6, &f->d));
    assert_string_equal(diag_text(f),
                        "a.ini:3: workers = 'many': expected a whole number\n"
                        "a.ini:4: relay_buffer = '1T': expected a size such as 4096, 64K, 16M "
                        "or 1G\n"
                        "a.ini:5: listen = 'x:0': expected host:port, [ipv6]:port or an "
                        "absolute unix socket path\n"
                        "a.ini:6: zstd_max_level = '23': expected a whole number from 1 to 22 "
                        "(zstd's levels)\n");
}

static void diagnostic_without_line(void **state)
{
    fixture *f = *state;
    assert_false(mr_config_set(&f->c, "log_level", "loud", "--set", 0, &f->d));
    assert_string_equal(diag_text(f),
                        "--set: log_level = 'loud': expected one of debug, info, warn, error\n");
}

static void diag_error_formats_and_counts(void **state)
{
    fixture *f = *state;
    mr_diag_error(&f->d, "x.ini", 12, "bad %s #%d", "thing", 2);
    assert_int_equal(f->d.errors, 1);
    assert_string_equal(diag_text(f), "x.ini:12: bad thing #2\n");
    mr_diag quiet = {NULL, 0};
    mr_diag_error(&quiet, "x.ini", 1, "unseen");
    assert_int_equal(quiet.errors, 1);
}

/* ---- loading files ---- */

static void load_valid_file(void **state)
{
    fixture *f = *state;
    write_temp(f, "# proxy settings\n"
                  "[myrewrite]\n"
                  "listen = 0.0.0.0:6033\n"
                  "backend = [::1]:3307\n"
                  "workers = 4\n"
                  "max_packet_size = 64M\n"
                  "connect_timeout = 250ms\n"
                  "log_level = debug\n"
                  "socket = /tmp/x.sock\n");
    assert_true(mr_config_load(&f->c, f->path, &f->d));
    assert_int_equal(f->d.errors, 0);
    assert_string_equal(diag_text(f), "");
    assert_string_equal(f->c.listen, "0.0.0.0:6033");
    assert_string_equal(f->c.backend, "[::1]:3307");
    assert_int_equal(f->c.workers, 4);
    assert_int_equal(f->c.max_packet_size, 64u * 1024 * 1024);
    assert_int_equal(f->c.connect_timeout_ms, 250);
    assert_string_equal(f->c.log_level, "debug");
    assert_string_equal(f->c.socket, "/tmp/x.sock");
    assert_int_equal(f->c.max_connections, 1000); /* untouched keys keep defaults */
}

static void load_reports_every_error_with_its_line(void **state)
{
    fixture *f = *state;
    write_temp(f, "stray = 1\n"                  /* 1: key outside a section */
                  "[myrewrite]\n"                /* 2 */
                  "workers = abc\n"              /* 3: bad count */
                  "max_connections = 50\n"       /* 4: fine */
                  "bogus = 1\n"                  /* 5: unknown key */
                  "[other]\n"                    /* 6: unknown section */
                  "anything = goes\n"            /* 7: ignored */
                  "[myrewrite]\n"                /* 8 */
                  "listen = host:0\n"            /* 9: bad port */
                  "connect_timeout = 1.5s\n"     /* 10: fine */
                  "no equals here\n"             /* 11: syntax */
                  "relay_buffer = 64K\n"         /* 12: fine */
                  "[broken\n"                    /* 13: syntax */
                  "shutdown_timeout = forever\n" /* 14: bad duration */
                  "  and more\n");               /* 15: continues line 14 */
    assert_false(mr_config_load(&f->c, f->path, &f->d));
    assert_int_equal(f->d.errors, 8);
    char want[4096];
    snprintf(want, sizeof(want),
             "%1$s:1: key outside any [section]\n"
             "%1$s:3: workers = 'abc': expected a whole number\n"
             "%1$s:5: unknown key 'bogus' (see myrewrite --config-reference)\n"
             "%1$s:6: unknown section [other]; settings go under [myrewrite]\n"
             "%1$s:9: listen = 'host:0': expected host:port, [ipv6]:port or an absolute unix "
             "socket path\n"
             "%1$s:11: expected 'key = value', '[section]' or a comment\n"
             "%1$s:13: section header must look like [name] with nothing after the ]\n"
             "%1$s:14: shutdown_timeout = 'forever and more': expected a duration such as "
             "250ms, 10, 1.5s, 2m or 1h\n",
             f->path);
    /* keys after the broken header still count as [myrewrite] ones */
    assert_string_equal(diag_text(f), want);
    assert_int_equal(f->c.max_connections, 50);
    assert_int_equal(f->c.connect_timeout_ms, 1500);
    assert_int_equal(f->c.relay_buffer, 64u * 1024);
    assert_int_equal(f->c.workers, 0);
}

static void load_missing_file(void **state)
{
    fixture *f = *state;
    assert_false(mr_config_load(&f->c, "/nonexistent/dir/myrewrite.ini", &f->d));
    assert_int_equal(f->d.errors, 1);
    assert_string_equal(diag_text(f),
                        "/nonexistent/dir/myrewrite.ini: cannot open: No such file or directory\n");
}

static void load_empty_file_keeps_defaults(void **state)
{
    fixture *f = *state;
    write_temp(f, "");
    assert_true(mr_config_load(&f->c, f->path, &f->d));
    assert_int_equal(f->d.errors, 0);
    assert_string_equal(f->c.listen, "127.0.0.1:6033");
}

static void load_crlf_file(void **state)
{
    fixture *f = *state;
    write_temp(f, "\xef\xbb\xbf[myrewrite]\r\nlisten = 127.0.0.1:7000\r\nlog_level = warn\r\n");
    assert_true(mr_config_load(&f->c, f->path, &f->d));
    assert_string_equal(diag_text(f), "");
    assert_string_equal(f->c.listen, "127.0.0.1:7000");
    assert_string_equal(f->c.log_level, "warn");
}

static void load_returns_false_only_for_new_errors(void **state)
{
    fixture *f = *state;
    mr_diag_error(&f->d, "earlier", 0, "an earlier problem");
    write_temp(f, "[myrewrite]\nworkers = 2\n");
    assert_true(mr_config_load(&f->c, f->path, &f->d));
    assert_int_equal(f->d.errors, 1);
    assert_int_equal(f->c.workers, 2);
}

/* ---- reference and dump ---- */

static void reference_lists_every_key_in_order(void **state)
{
    (void)state;
    static const char *const keys[] = {
        "backend",         "connect_timeout", "handshake_timeout", "listen",    "log_level",
        "max_connections", "max_packet_size", "relay_buffer",      "rules_dir", "shutdown_timeout",
        "socket",          "workers",
    };
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    mr_config_reference(out);
    fclose(out);
    assert_true(strncmp(text, "| key | default | meaning |\n|---|---|---|\n", 42) == 0);
    const char *at = text;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        char cell[64];
        snprintf(cell, sizeof(cell), "| `%s` |", keys[i]);
        const char *p = strstr(text, cell);
        if (!p)
            fail_msg("key %s missing from the reference", keys[i]);
        assert_true(p > at); /* alphabetical order */
        at = p;
    }
    free(text);
}

static void dump_round_trips_through_load(void **state)
{
    fixture *f = *state;
    assert_true(set(f, "listen", "[::1]:6034"));
    assert_true(set(f, "backend", "/run/mysqld.sock"));
    assert_true(set(f, "workers", "3"));
    assert_true(set(f, "relay_buffer", "1M"));
    assert_true(set(f, "connect_timeout", "1.5s"));
    assert_true(set(f, "log_level", "warn"));
    char *text = dump_text(f);
    assert_non_null(strstr(text, "[myrewrite]\n"));
    assert_non_null(strstr(text, "connect_timeout = 1500ms\n"));
    assert_non_null(strstr(text, "relay_buffer = 1048576\n"));
    assert_non_null(strstr(text, "socket = \n"));
    write_temp(f, text);
    free(text);

    mr_config c2;
    mr_config_defaults(&c2);
    assert_true(mr_config_load(&c2, f->path, &f->d));
    assert_string_equal(diag_text(f), "");
    assert_string_equal(c2.listen, f->c.listen);
    assert_string_equal(c2.backend, f->c.backend);
    assert_string_equal(c2.log_level, f->c.log_level);
    assert_string_equal(c2.rules_dir, f->c.rules_dir);
    assert_string_equal(c2.socket, f->c.socket);
    assert_int_equal(c2.workers, 3);
    assert_int_equal(c2.relay_buffer, 1024u * 1024);
    assert_int_equal(c2.connect_timeout_ms, 1500);
    assert_int_equal(c2.handshake_timeout_ms, f->c.handshake_timeout_ms);
    assert_int_equal(c2.shutdown_timeout_ms, f->c.shutdown_timeout_ms);
    assert_int_equal(c2.max_packet_size, f->c.max_packet_size);
    assert_int_equal(c2.max_connections, f->c.max_connections);
    mr_config_free(&c2);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(defaults),
        cmocka_unit_test(free_clears_strings),
        T(size_values),
        T(size_invalid_values),
        T(duration_values),
        T(duration_invalid_values),
        T(duration_rejects_inf_nan_and_huge),
        T(count_values),
        T(count_invalid_values),
        T(count_rejects_negative_after_space),
        T(log_level_values),
        T(tls_choice_values),
        T(string_values_are_copied),
        T(bool_values),
        T(compression_values),
        T(zstd_max_level_values),
        T(own_connection_idle_is_a_duration),
        T(backend_timeouts_are_durations),
        T(token_is_not_dumped),
        cmocka_unit_test(addr_host_port),
        cmocka_unit_test(addr_ipv6_in_brackets),
        cmocka_unit_test(addr_unix_path),
        cmocka_unit_test(addr_unix_path_length_limit),
        cmocka_unit_test(addr_invalid),
        cmocka_unit_test(addr_host_length_limit),
        T(addr_keys_validate),
        T(unknown_key_diagnostic),
        T(invalid_value_diagnostic),
        T(diagnostic_without_line),
        T(diag_error_formats_and_counts),
        T(load_valid_file),
        T(load_reports_every_error_with_its_line),
        T(load_missing_file),
        T(load_empty_file_keeps_defaults),
        T(load_crlf_file),
        T(load_returns_false_only_for_new_errors),
        cmocka_unit_test(reference_lists_every_key_in_order),
        T(dump_round_trips_through_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
