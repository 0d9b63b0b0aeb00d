/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packet boundaries: the protocol splits payloads at 0xFFFFFF bytes, and a
 * payload of exactly 0xFFFFFF is followed by an empty packet.  Queries and
 * result rows are sized so their payloads land on and around those limits.
 */
#include "client_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PKT 0xFFFFFFUL

static const char k_qprefix[] = "SELECT CRC32('";
static const char k_qsuffix[] = "')";

/*
 * Sends a COM_QUERY whose payload (command byte + SQL text) is exactly
 * `payload` bytes.  The literal cycles through letters so a lost, doubled or
 * shifted byte at a packet seam changes the CRC the server computes.
 */
static int query_of_payload(struct ctx *c, MYSQL *m, size_t payload)
{
    size_t pre = sizeof k_qprefix - 1, suf = sizeof k_qsuffix - 1;
    size_t textlen = payload - 1;
    size_t n = textlen - pre - suf;
    char *sql = malloc(textlen);
    if (!sql)
        return fail(c, "out of memory");
    memcpy(sql, k_qprefix, pre);
    for (size_t i = 0; i < n; i++)
        sql[pre + i] = (char)('a' + i % 26);
    memcpy(sql + pre + n, k_qsuffix, suf);
    uint32_t want = crc32_calc(0, (unsigned char *)sql + pre, n);
    int rc = 0;
    char got[32];
    if (mysql_real_query(m, sql, (unsigned long)textlen) != 0) {
        rc = fail(c, "COM_QUERY payload %zu: error %u %s", payload, mysql_errno(m), mysql_error(m));
    } else {
        MYSQL_RES *res = mysql_store_result(m);
        MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
        snprintf(got, sizeof got, "%s", row && row[0] ? row[0] : "(none)");
        if (res)
            mysql_free_result(res);
        if (strtoul(got, NULL, 10) != want)
            rc = fail(c, "COM_QUERY payload %zu: server CRC %s, expected %u", payload, got,
                      (unsigned)want);
    }
    sb_printf(&c->dg, "payload %zu: %s;", payload, rc ? "bad" : got);
    free(sql);
    return rc;
}

static int chk_query_payloads(struct ctx *c)
{
    static const size_t sizes[] = {MAX_PKT - 1, MAX_PKT, MAX_PKT + 1, 2 * MAX_PKT, 2 * MAX_PKT + 1};
    MYSQL *m = db_open(c, NULL);
    int rc = m ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < sizeof sizes / sizeof sizes[0]; i++) {
        rc = query_of_payload(c, m, sizes[i]);
        /* The command after a split packet must start on a clean boundary. */
        rc = rc ? rc : q_exec(c, m, "SELECT 1");
    }
    if (m)
        mysql_close(m);
    return rc;
}

static int check_repeat(struct ctx *c, const char *p, unsigned long len, unsigned long want,
                        const char *what)
{
    if (len != want)
        return fail(c, "%s: got %lu bytes, expected %lu", what, len, want);
    for (unsigned long i = 0; i < len; i++)
        if (p[i] != (char)('0' + i % 10))
            return fail(c, "%s: byte %lu is 0x%02x", what, i, (unsigned char)p[i]);
    return 0;
}

/*
 * Text row with one string column: payload = 4-byte length prefix + data,
 * so data of 0xFFFFFF - 4 bytes makes the row payload exactly 0xFFFFFF.
 */
static int text_row(struct ctx *c, MYSQL *m, unsigned long n)
{
    char sql[96], what[64];
    snprintf(sql, sizeof sql, "SELECT LEFT(REPEAT('0123456789', %lu), %lu) AS r", n / 10 + 1, n);
    snprintf(what, sizeof what, "text row of %lu bytes", n);
    if (mysql_query(m, sql) != 0)
        return fail_my(c, m, what);
    MYSQL_RES *res = mysql_store_result(m);
    MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
    int rc =
        row ? check_repeat(c, row[0], mysql_fetch_lengths(res)[0], n, what) : fail_my(c, m, what);
    if (res)
        mysql_free_result(res);
    sb_printf(&c->dg, "%s: %s;", what, rc ? "bad" : "ok");
    return rc;
}

/* Binary row: 0x00 header + 1 byte NULL bitmap + 4-byte length + data. */
static int binary_row(struct ctx *c, MYSQL_STMT *s, unsigned long n)
{
    char what[64];
    long long arg = (long long)n;
    MYSQL_BIND b[2];
    struct stmt_rows r = {0};
    struct sbuf scratch = {0};
    memset(b, 0, sizeof b);
    for (int i = 0; i < 2; i++) {
        b[i].buffer_type = MYSQL_TYPE_LONGLONG;
        b[i].buffer = &arg;
    }
    snprintf(what, sizeof what, "binary row of %lu bytes", n);
    int rc = (mysql_stmt_bind_param(s, b) || mysql_stmt_execute(s)) ? fail_st(c, s, what) : 0;
    rc = rc ? rc : sr_init(c, &r, s);
    if (rc == 0 && sr_fetch(c, &r, &scratch) != 1)
        rc = fail(c, "%s: no row (%s)", what, c->err);
    rc = rc ? rc : check_repeat(c, r.v[0].str, r.v[0].len, n, what);
    if (rc == 0 && sr_fetch(c, &r, &scratch) != 0)
        rc = fail(c, "%s: extra row", what);
    sr_free(&r);
    sb_free(&scratch);
    sb_printf(&c->dg, "%s: %s;", what, rc ? "bad" : "ok");
    return rc;
}

static int chk_big_rows(struct ctx *c)
{
    static const unsigned long text_sizes[] = {MAX_PKT - 5, MAX_PKT - 4, MAX_PKT - 3, 20000000};
    static const unsigned long bin_sizes[] = {MAX_PKT - 7, MAX_PKT - 6, MAX_PKT - 5, 20000000};
    MYSQL *m = db_open(c, NULL);
    int rc = m ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < 4; i++)
        rc = text_row(c, m, text_sizes[i]);
    MYSQL_STMT *s = rc ? NULL
                       : stmt_prepare(c, m,
                                      "SELECT LEFT(REPEAT('0123456789',"
                                      " ? DIV 10 + 1), ?) AS r");
    if (rc == 0 && !s)
        rc = -1;
    for (size_t i = 0; rc == 0 && i < 4; i++)
        rc = binary_row(c, s, bin_sizes[i]);
    if (s)
        mysql_stmt_close(s);
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    if (m)
        mysql_close(m);
    return rc;
}

void run_big_checks(void)
{
    check_compare("com_query_payload_boundaries", chk_query_payloads);
    check_compare("result_rows_at_and_over_16mib", chk_big_rows);
}
