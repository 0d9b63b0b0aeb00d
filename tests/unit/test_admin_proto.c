/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_admin_proto.c - unit tests for the admin console's pure parts:
 * admin/proto.c (greeting, login packet, native password check, auth
 * switch, result sets) and admin/cmd.c (command recognition, digest merge).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/admin/cmd.h"
#include "myrewrite/admin/proto.h"
#include "myrewrite/base/buf.h"
#include "myrewrite/proto/codec.h"

/* ---- helpers ---- */

static const uint8_t scramble_1_20[20] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                          11, 12, 13, 14, 15, 16, 17, 18, 19, 20};

/* The token for password "secret" and scramble 1..20, computed independently
 * (python: sha1(pw) XOR sha1(scramble + sha1(sha1(pw)))). */
static const uint8_t secret_token[20] = {0xb3, 0x2b, 0xb3, 0xa5, 0x83, 0xe1, 0x34,
                                         0x0c, 0x0a, 0x11, 0x08, 0xd5, 0x8b, 0x1b,
                                         0xe4, 0x97, 0x81, 0xad, 0x8c, 0x2f};

/* Splits a buffer of whole packets; returns the payload of packet i. */
typedef struct pkt {
    const uint8_t *p;
    size_t n;
    uint8_t seq;
} pkt;

static size_t split(const mr_buf *b, pkt *out, size_t max)
{
    size_t at = 0, k = 0;
    while (at < b->len) {
        mr_pkt_header h;
        assert_int_equal(mr_pkt_header_read(b->data + at, b->len - at, &h), MR_OK);
        assert_true(at + MR_PKT_HEADER + h.len <= b->len);
        assert_true(k < max);
        out[k].p = b->data + at + MR_PKT_HEADER;
        out[k].n = h.len;
        out[k].seq = h.seq;
        k++;
        at += MR_PKT_HEADER + h.len;
    }
    return k;
}

static void put_cstr(mr_buf *b, const char *s)
{
    mr_buf_put_str(b, s);
    mr_buf_put_u8(b, 0);
}

/* A HandshakeResponse41 head: caps, max packet, charset, 23 reserved bytes. */
static void put_login_head(mr_buf *b, uint32_t caps)
{
    mr_buf_put_u32(b, caps);
    mr_buf_put_u32(b, 1 << 24);
    mr_buf_put_u8(b, 45);
    for (int i = 0; i < 23; i++)
        mr_buf_put_u8(b, 0);
}

static char *lenenc_str(mr_reader *r)
{
    uint64_t n;
    assert_int_equal(mr_read_lenenc(r, &n), MR_OK);
    assert_true(r->pos + n <= r->n);
    char *s = malloc(n + 1);
    memcpy(s, r->p + r->pos, n);
    s[n] = '\0';
    r->pos += n;
    return s;
}

/* ---- greeting ---- */

static void greeting_parses_and_announces_native_password(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_admin_greeting_build(&b, "5.7.0-test", 42, scramble_1_20);
    assert_false(b.failed);
    pkt p[2];
    assert_int_equal(split(&b, p, 2), 1);
    assert_int_equal(p[0].seq, 0);
    mr_greeting g;
    assert_int_equal(mr_greeting_parse(p[0].p, p[0].n, &g), MR_OK);
    assert_int_equal(g.protocol, 10);
    assert_int_equal(g.server_version_len, strlen("5.7.0-test"));
    assert_memory_equal(g.server_version, "5.7.0-test", g.server_version_len);
    assert_int_equal(g.thread_id, 42);
    assert_int_equal(g.caps, MR_ADMIN_CAPS);
    assert_int_equal(g.caps & (MR_CAP_SSL | MR_CAP_COMPRESS | MR_CAP_DEPRECATE_EOF), 0);
    assert_true(g.caps & MR_CAP_PLUGIN_AUTH);
    assert_false(g.mariadb);
    assert_int_equal(g.charset, MR_ADMIN_CHARSET);
    assert_int_equal(g.status, MR_STATUS_AUTOCOMMIT);
    /* scramble part 1 after the thread id, part 2 after the reserved bytes */
    size_t v = 1 + g.server_version_len + 1;
    assert_memory_equal(p[0].p + v + 4, scramble_1_20, 8);
    size_t part2 = g.ext_caps_off + 4;
    assert_int_equal(p[0].p[g.caps_hi_off + 2], 21); /* auth data length */
    assert_memory_equal(p[0].p + part2, scramble_1_20 + 8, 12);
    assert_int_equal(p[0].p[part2 + 12], 0);
    const char *plugin = (const char *)p[0].p + part2 + 13;
    assert_string_equal(plugin, "mysql_native_password");
    assert_int_equal(part2 + 13 + strlen(plugin) + 1, p[0].n);
    mr_buf_free(&b);
}

static void scramble_fix_gives_7bit_without_nul_or_dollar(void **state)
{
    (void)state;
    uint8_t s[20];
    for (int round = 0; round < 13; round++) {
        for (int i = 0; i < 20; i++)
            s[i] = (uint8_t)(round * 20 + i);
        mr_admin_scramble_fix(s);
        for (int i = 0; i < 20; i++) {
            assert_true(s[i] > 0 && s[i] < 0x80);
            assert_true(s[i] != '$');
        }
    }
}

/* ---- native password ---- */

static void native_token_matches_known_value(void **state)
{
    (void)state;
    uint8_t tok[20];
    mr_admin_native_token("secret", scramble_1_20, tok);
    assert_memory_equal(tok, secret_token, 20);
}

static void native_check_accepts_only_the_right_answer(void **state)
{
    (void)state;
    uint8_t wrong[20];
    assert_true(mr_admin_native_check("secret", scramble_1_20, secret_token, 20));
    memcpy(wrong, secret_token, 20);
    wrong[19] ^= 1;
    assert_false(mr_admin_native_check("secret", scramble_1_20, wrong, 20));
    assert_false(mr_admin_native_check("Secret", scramble_1_20, secret_token, 20));
    assert_false(mr_admin_native_check("secret", scramble_1_20, secret_token, 19));
    assert_false(mr_admin_native_check("secret", scramble_1_20, secret_token, 0));
    uint8_t other[20];
    memcpy(other, scramble_1_20, 20);
    other[0] = 99;
    assert_false(mr_admin_native_check("secret", other, secret_token, 20));
}

static void native_check_refuses_empty_password(void **state)
{
    (void)state;
    uint8_t tok[20];
    mr_admin_native_token("", scramble_1_20, tok);
    assert_false(mr_admin_native_check("", scramble_1_20, tok, 20));
    assert_false(mr_admin_native_check("", scramble_1_20, NULL, 0));
}

/* ---- login packet ---- */

static void login_lenenc_auth_with_db_and_plugin(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    uint32_t caps = MR_CAP_PROTOCOL_41 | MR_CAP_SECURE_CONNECTION | MR_CAP_PLUGIN_AUTH |
                    MR_CAP_PLUGIN_AUTH_LENENC | MR_CAP_CONNECT_WITH_DB;
    put_login_head(&b, caps);
    put_cstr(&b, "admin");
    mr_buf_put_lenenc_str(&b, secret_token, 20);
    put_cstr(&b, "somedb");
    put_cstr(&b, "caching_sha2_password");
    mr_admin_login l;
    assert_int_equal(mr_admin_login_parse(b.data, b.len, &l), MR_OK);
    assert_false(l.ssl_request);
    assert_int_equal(l.user_len, 5);
    assert_memory_equal(l.user, "admin", 5);
    assert_int_equal(l.auth_len, 20);
    assert_memory_equal(l.auth, secret_token, 20);
    assert_non_null(l.plugin);
    assert_int_equal(l.plugin_len, strlen("caching_sha2_password"));
    assert_memory_equal(l.plugin, "caching_sha2_password", l.plugin_len);
    mr_buf_free(&b);
}

static void login_one_byte_auth_without_plugin(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    put_login_head(&b, MR_CAP_PROTOCOL_41 | MR_CAP_SECURE_CONNECTION);
    put_cstr(&b, "root");
    mr_buf_put_u8(&b, 20);
    mr_buf_put(&b, secret_token, 20);
    mr_admin_login l;
    assert_int_equal(mr_admin_login_parse(b.data, b.len, &l), MR_OK);
    assert_memory_equal(l.user, "root", 4);
    assert_int_equal(l.auth_len, 20);
    assert_null(l.plugin);
    mr_buf_free(&b);
}

static void login_ssl_request_and_malformed(void **state)
{
    (void)state;
    mr_buf b;
    mr_admin_login l;
    mr_buf_init(&b);
    put_login_head(&b, MR_CAP_PROTOCOL_41 | MR_CAP_SSL);
    assert_int_equal(mr_admin_login_parse(b.data, b.len, &l), MR_OK);
    assert_true(l.ssl_request);
    mr_buf_reset(&b);
    put_login_head(&b, MR_CAP_PROTOCOL_41);
    assert_int_equal(mr_admin_login_parse(b.data, b.len, &l), MR_MALFORMED); /* no user */
    mr_buf_put_str(&b, "unterminated");
    assert_int_equal(mr_admin_login_parse(b.data, b.len, &l), MR_MALFORMED);
    mr_buf_reset(&b);
    put_login_head(&b, MR_CAP_PROTOCOL_41 | MR_CAP_SECURE_CONNECTION);
    put_cstr(&b, "admin");
    mr_buf_put_u8(&b, 20); /* claims 20 bytes, has 3 */
    mr_buf_put(&b, "abc", 3);
    assert_int_equal(mr_admin_login_parse(b.data, b.len, &l), MR_MALFORMED);
    mr_buf_reset(&b);
    put_login_head(&b, MR_CAP_SECURE_CONNECTION); /* pre-4.1 */
    put_cstr(&b, "admin");
    mr_buf_put_u8(&b, 0);
    assert_int_equal(mr_admin_login_parse(b.data, b.len, &l), MR_MALFORMED);
    assert_int_equal(mr_admin_login_parse(b.data, 10, &l), MR_MALFORMED);
    mr_buf_free(&b);
}

static void auth_switch_layout(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_admin_auth_switch_build(&b, 2, scramble_1_20);
    pkt p[1];
    assert_int_equal(split(&b, p, 1), 1);
    assert_int_equal(p[0].seq, 2);
    assert_int_equal(p[0].p[0], 0xfe);
    assert_string_equal((const char *)p[0].p + 1, "mysql_native_password");
    size_t at = 1 + strlen("mysql_native_password") + 1;
    assert_memory_equal(p[0].p + at, scramble_1_20, 20);
    assert_int_equal(p[0].p[at + 20], 0);
    assert_int_equal(p[0].n, at + 21);
    mr_buf_free(&b);
}

/* ---- result sets ---- */

static void check_column(const pkt *p, const char *name, uint8_t type, uint16_t charset)
{
    mr_reader r = {p->p, p->n, 0};
    const char *want[6] = {"def", "", "", "", name, name};
    for (int i = 0; i < 6; i++) {
        char *s = lenenc_str(&r);
        assert_string_equal(s, want[i]);
        free(s);
    }
    uint64_t fixed;
    uint16_t cs;
    uint32_t len;
    uint8_t t;
    assert_int_equal(mr_read_lenenc(&r, &fixed), MR_OK);
    assert_int_equal(fixed, 0x0c);
    assert_int_equal(mr_read_u16(&r, &cs), MR_OK);
    assert_int_equal(cs, charset);
    assert_int_equal(mr_read_u32(&r, &len), MR_OK);
    assert_int_equal(mr_read_u8(&r, &t), MR_OK);
    assert_int_equal(t, type);
    assert_int_equal(r.n - r.pos, 2 + 1 + 2); /* flags, decimals, filler */
}

static void check_eof(const pkt *p)
{
    mr_ok eof;
    assert_int_equal(p->n, 5);
    assert_int_equal(mr_eof_parse(p->p, p->n, &eof), MR_OK);
    assert_int_equal(eof.status, MR_STATUS_AUTOCOMMIT);
}

static void resultset_packets_in_order(void **state)
{
    (void)state;
    static const mr_col cols[] = {{"name", MR_COL_TEXT}, {"hits", MR_COL_INT}};
    mr_buf b;
    mr_resultset rs;
    mr_buf_init(&b);
    mr_rs_begin(&rs, &b, 1, cols, 2);
    const char *r1[] = {"ünï", "12"};
    const char *r2[] = {NULL, ""};
    mr_rs_row(&rs, r1);
    mr_rs_row(&rs, r2);
    mr_rs_end(&rs);
    assert_false(b.failed);
    assert_int_equal(rs.rows, 2);
    pkt p[8];
    assert_int_equal(split(&b, p, 8), 7);
    for (int i = 0; i < 7; i++)
        assert_int_equal(p[i].seq, i + 1);
    assert_int_equal(p[0].n, 1);
    assert_int_equal(p[0].p[0], 2);
    check_column(&p[1], "name", 0xfd, MR_ADMIN_CHARSET);
    check_column(&p[2], "hits", 0x08, 63);
    check_eof(&p[3]);
    mr_reader r = {p[4].p, p[4].n, 0};
    char *s = lenenc_str(&r);
    assert_string_equal(s, "ünï");
    free(s);
    s = lenenc_str(&r);
    assert_string_equal(s, "12");
    free(s);
    assert_int_equal(r.pos, r.n);
    assert_int_equal(p[5].n, 2);
    assert_int_equal(p[5].p[0], 0xfb); /* NULL */
    assert_int_equal(p[5].p[1], 0);    /* empty string */
    check_eof(&p[6]);
    mr_buf_free(&b);
}

static void resultset_without_rows_and_seq_wrap(void **state)
{
    (void)state;
    static const mr_col col = {"x", MR_COL_DECIMAL};
    mr_buf b;
    mr_resultset rs;
    mr_buf_init(&b);
    mr_rs_begin(&rs, &b, 250, &col, 1);
    for (int i = 0; i < 10; i++) {
        const char *v = "1.500";
        mr_rs_row(&rs, &v);
    }
    mr_rs_end(&rs);
    pkt p[20];
    size_t n = split(&b, p, 20);
    assert_int_equal(n, 1 + 1 + 1 + 10 + 1);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(p[i].seq, (uint8_t)(250 + i));
    check_column(&p[1], "x", 0xf6, 63);
    mr_buf_free(&b);
}

/* ---- commands ---- */

static mr_admin_cmd parse(const char *sql, char *arg_out, size_t cap)
{
    mr_buf arg;
    mr_buf_init(&arg);
    mr_admin_cmd c = mr_admin_cmd_parse(sql, strlen(sql), &arg);
    if (arg_out) {
        arg_out[0] = '\0';
        if (arg.data)
            snprintf(arg_out, cap, "%s", (const char *)arg.data);
    }
    mr_buf_free(&arg);
    return c;
}

static void commands_case_space_and_semicolons(void **state)
{
    (void)state;
    assert_int_equal(parse("SHOW RULES", NULL, 0), MR_ADM_SHOW_RULES);
    assert_int_equal(parse("show rules;", NULL, 0), MR_ADM_SHOW_RULES);
    assert_int_equal(parse("  Show\t\n Rules  ; ;", NULL, 0), MR_ADM_SHOW_RULES);
    assert_int_equal(parse("SHOW VERSION", NULL, 0), MR_ADM_SHOW_VERSION);
    assert_int_equal(parse("show config", NULL, 0), MR_ADM_SHOW_CONFIG);
    assert_int_equal(parse("show digests", NULL, 0), MR_ADM_SHOW_DIGESTS);
    assert_int_equal(parse("show stats", NULL, 0), MR_ADM_SHOW_STATS);
    assert_int_equal(parse("show backends", NULL, 0), MR_ADM_SHOW_BACKENDS);
    assert_int_equal(parse("show queues", NULL, 0), MR_ADM_SHOW_QUEUES);
    assert_int_equal(parse("show clients", NULL, 0), MR_ADM_SHOW_CLIENTS);
    assert_int_equal(parse("show delayed", NULL, 0), MR_ADM_SHOW_DELAYED);
    assert_int_equal(parse("show pagination", NULL, 0), MR_ADM_SHOW_PAGINATION);
    assert_int_equal(parse("reload rules", NULL, 0), MR_ADM_RELOAD_RULES);
    assert_int_equal(parse("select @@version_comment limit 1", NULL, 0), MR_ADM_VERSION_COMMENT);
    assert_int_equal(parse("SET NAMES utf8mb4", NULL, 0), MR_ADM_SET);
    assert_int_equal(parse("set autocommit=0", NULL, 0), MR_ADM_SET);
    assert_int_equal(parse("  ; ", NULL, 0), MR_ADM_EMPTY);
    assert_int_equal(parse("", NULL, 0), MR_ADM_EMPTY);
}

static void commands_unknown(void **state)
{
    (void)state;
    assert_int_equal(parse("SHOW RULESX", NULL, 0), MR_ADM_UNKNOWN);
    assert_int_equal(parse("SHOW", NULL, 0), MR_ADM_UNKNOWN);
    assert_int_equal(parse("SHOW RULES now", NULL, 0), MR_ADM_UNKNOWN);
    assert_int_equal(parse("SHOWRULES", NULL, 0), MR_ADM_UNKNOWN);
    assert_int_equal(parse("SETTINGS", NULL, 0), MR_ADM_UNKNOWN);
    assert_int_equal(parse("SELECT 1", NULL, 0), MR_ADM_UNKNOWN);
    assert_int_equal(parse("select @@version_comments", NULL, 0), MR_ADM_UNKNOWN);
    assert_int_equal(parse("SHOW RULES; SHOW STATS", NULL, 0), MR_ADM_UNKNOWN);
    assert_non_null(strstr(mr_admin_cmd_list(), "EXPLAIN REWRITE"));
    assert_non_null(strstr(mr_admin_cmd_list(), "RELOAD RULES"));
}

static void explain_rewrite_unquotes_its_argument(void **state)
{
    (void)state;
    char arg[200];
    assert_int_equal(parse("EXPLAIN REWRITE 'SELECT 1'", arg, sizeof(arg)), MR_ADM_EXPLAIN_REWRITE);
    assert_string_equal(arg, "SELECT 1");
    assert_int_equal(
        parse("explain  rewrite 'select ''a'' from t where x = \\'b\\'';", arg, sizeof(arg)),
        MR_ADM_EXPLAIN_REWRITE);
    assert_string_equal(arg, "select 'a' from t where x = 'b'");
    assert_int_equal(parse("EXPLAIN REWRITE \"a\\tb \\\\ 'c'\"", arg, sizeof(arg)),
                     MR_ADM_EXPLAIN_REWRITE);
    assert_string_equal(arg, "a\tb \\ 'c'");
    assert_int_equal(parse("EXPLAIN REWRITE 'x;'", arg, sizeof(arg)), MR_ADM_EXPLAIN_REWRITE);
    assert_string_equal(arg, "x;");
    assert_int_equal(parse("EXPLAIN REWRITE 'unterminated", arg, sizeof(arg)), MR_ADM_BAD_ARGUMENT);
    assert_int_equal(parse("EXPLAIN REWRITE 'a' junk", arg, sizeof(arg)), MR_ADM_BAD_ARGUMENT);
    assert_int_equal(parse("EXPLAIN REWRITE SELECT 1", arg, sizeof(arg)), MR_ADM_BAD_ARGUMENT);
    assert_int_equal(parse("EXPLAIN REWRITE", arg, sizeof(arg)), MR_ADM_BAD_ARGUMENT);
}

static void flush_delayed_takes_optional_table(void **state)
{
    (void)state;
    char arg[64];
    assert_int_equal(parse("FLUSH DELAYED", arg, sizeof(arg)), MR_ADM_FLUSH_DELAYED);
    assert_string_equal(arg, "");
    assert_int_equal(parse("flush delayed app.hits ;", arg, sizeof(arg)), MR_ADM_FLUSH_DELAYED);
    assert_string_equal(arg, "app.hits");
}

static void show_delayed_rejected_takes_optional_table(void **state)
{
    (void)state;
    char arg[64];
    assert_int_equal(parse("SHOW DELAYED", arg, sizeof(arg)), MR_ADM_SHOW_DELAYED);
    assert_int_equal(parse("show delayed rejected", arg, sizeof(arg)),
                     MR_ADM_SHOW_DELAYED_REJECTED);
    assert_string_equal(arg, "");
    assert_int_equal(parse("SHOW DELAYED REJECTED app.hits;", arg, sizeof(arg)),
                     MR_ADM_SHOW_DELAYED_REJECTED);
    assert_string_equal(arg, "app.hits");
}

/* ---- digest merge ---- */

static mr_admin_digest dig(uint64_t hash, uint64_t count, uint64_t total, uint64_t max)
{
    mr_admin_digest d;
    memset(&d, 0, sizeof(d));
    d.hash = hash;
    snprintf(d.text, sizeof(d.text), "digest %llu", (unsigned long long)hash);
    d.count = count;
    d.total_us = total;
    d.max_us = max;
    d.rewritten = hash == 7 ? 1 : 0;
    d.blocked = count;
    return d;
}

static void digests_merge_by_hash_and_sort_by_total(void **state)
{
    (void)state;
    mr_admin_digest rows[] = {dig(7, 2, 100, 60), dig(9, 1, 500, 500), dig(7, 3, 450, 200),
                              dig(0, 1, 10, 10),  dig(3, 4, 550, 300), dig(9, 1, 20, 20)};
    size_t n = mr_admin_digests_merge(rows, 6, 100);
    assert_int_equal(n, 4);
    /* 7: 550 us over 5 (ties with 3 on total; more statements first), then 3, 9, 0 */
    assert_int_equal(rows[0].hash, 7);
    assert_int_equal(rows[0].count, 5);
    assert_int_equal(rows[0].total_us, 550);
    assert_int_equal(rows[0].max_us, 200);
    assert_int_equal(rows[0].rewritten, 2);
    assert_int_equal(rows[0].blocked, 5);
    assert_string_equal(rows[0].text, "digest 7");
    assert_int_equal(rows[1].hash, 3);
    assert_int_equal(rows[2].hash, 9);
    assert_int_equal(rows[2].total_us, 520);
    assert_int_equal(rows[2].max_us, 500);
    assert_int_equal(rows[3].hash, 0);
}

static void digests_merge_limit_and_empty(void **state)
{
    (void)state;
    mr_admin_digest rows[] = {dig(1, 1, 1, 1), dig(2, 1, 2, 2), dig(3, 1, 3, 3)};
    assert_int_equal(mr_admin_digests_merge(rows, 3, 2), 2);
    assert_int_equal(rows[0].hash, 3);
    assert_int_equal(rows[1].hash, 2);
    assert_int_equal(mr_admin_digests_merge(NULL, 0, 100), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(greeting_parses_and_announces_native_password),
        cmocka_unit_test(scramble_fix_gives_7bit_without_nul_or_dollar),
        cmocka_unit_test(native_token_matches_known_value),
        cmocka_unit_test(native_check_accepts_only_the_right_answer),
        cmocka_unit_test(native_check_refuses_empty_password),
        cmocka_unit_test(login_lenenc_auth_with_db_and_plugin),
        cmocka_unit_test(login_one_byte_auth_without_plugin),
        cmocka_unit_test(login_ssl_request_and_malformed),
        cmocka_unit_test(auth_switch_layout),
        cmocka_unit_test(resultset_packets_in_order),
        cmocka_unit_test(resultset_without_rows_and_seq_wrap),
        cmocka_unit_test(commands_case_space_and_semicolons),
        cmocka_unit_test(commands_unknown),
        cmocka_unit_test(explain_rewrite_unquotes_its_argument),
        cmocka_unit_test(flush_delayed_takes_optional_table),
        cmocka_unit_test(show_delayed_rejected_takes_optional_table),
        cmocka_unit_test(digests_merge_by_hash_and_sort_by_total),
        cmocka_unit_test(digests_merge_limit_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
