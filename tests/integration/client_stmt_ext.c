/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prepared statements, continued: OUT parameters of a CALL
 * (SERVER_PS_OUT_PARAMS), a 20 MiB parameter sent with COM_STMT_SEND_LONG_DATA,
 * and MariaDB's direct execution and bulk (array) execution.
 */
#include "client_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Walks every result of an executed statement into the digest. */
int dg_stmt_results(struct ctx *c, MYSQL *m, MYSQL_STMT *s)
{
    int st, idx = 0;
    do {
        if (mysql_stmt_field_count(s) > 0) {
            int out = (m->server_status & SERVER_PS_OUT_PARAMS) != 0;
            sb_printf(&c->dg, "#%d out_params=%d ", idx, out);
            if (dg_stmt_rows(c, s, 0))
                return -1;
        } else {
            sb_printf(&c->dg, "#%d ok affected=%llu ", idx, mysql_stmt_affected_rows(s));
        }
        sb_add(&c->dg, "\n", 1);
        idx++;
        st = mysql_stmt_next_result(s);
    } while (st == 0);
    return st > 0 ? fail_st(c, s, "stmt_next_result") : 0;
}

static int call_out(struct ctx *c, MYSQL *m, MYSQL_STMT *s, int x, const char *z_in)
{
    int y = -1;
    char z[32];
    unsigned long zlen = (unsigned long)strlen(z_in);
    MYSQL_BIND b[3];
    snprintf(z, sizeof z, "%s", z_in);
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_LONG;
    b[0].buffer = &x;
    b[1].buffer_type = MYSQL_TYPE_LONG;
    b[1].buffer = &y;
    b[2].buffer_type = MYSQL_TYPE_STRING;
    b[2].buffer = z;
    b[2].buffer_length = sizeof z;
    b[2].length = &zlen;
    if (mysql_stmt_bind_param(s, b) || mysql_stmt_execute(s))
        return fail_st(c, s, "CALL execute");
    return dg_stmt_results(c, m, s);
}

static int chk_out_params(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    MYSQL_STMT *s = m ? stmt_prepare(c, m, "CALL mct_out(?, ?, ?)") : NULL;
    int rc = s ? 0 : -1;
    rc = rc ? rc : call_out(c, m, s, 21, "hi");
    if (rc == 0 && !strstr(c->dg.p, "out_params=1 "))
        rc = fail(c, "no result set flagged SERVER_PS_OUT_PARAMS: %s", c->dg.p);
    if (rc == 0 && !strstr(c->dg.p, "R|42|3:hi!rows=1;"))
        rc = fail(c, "OUT parameters came back wrong: %s", c->dg.p);
    rc = rc ? rc : call_out(c, m, s, -4, "");
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    if (s)
        mysql_stmt_close(s);
    if (m)
        mysql_close(m);
    return rc;
}

/* ---- 20 MiB parameter in chunks ------------------------------------------ */

#define LONG_DATA_SIZE (20UL * 1024UL * 1024UL)

static unsigned char *make_pattern(size_t n)
{
    unsigned char *p = malloc(n);
    uint32_t x = 0x12345678u;
    for (size_t i = 0; p && i < n; i++) {
        /* xorshift: every byte value, zeros included, appears. */
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)x;
    }
    return p;
}

static int send_chunks(struct ctx *c, MYSQL_STMT *s, const unsigned char *p, size_t n)
{
    /* Uneven chunk sizes so chunk and packet boundaries never line up. */
    static const size_t sizes[] = {1000003, 65543, 4194304, 1, 777777};
    size_t off = 0;
    for (int i = 0; off < n; i++) {
        size_t len = sizes[i % 5];
        if (len > n - off)
            len = n - off;
        if (mysql_stmt_send_long_data(s, 2, (const char *)p + off, (unsigned long)len))
            return fail_st(c, s, "send_long_data");
        off += len;
    }
    return 0;
}

static int insert_long(struct ctx *c, MYSQL *m, const unsigned char *p)
{
    MYSQL_STMT *s = stmt_prepare(c, m, "INSERT INTO mct_ld VALUES (?, ?, ?)");
    if (!s)
        return -1;
    int id = 1;
    unsigned long taglen = 3;
    MYSQL_BIND b[3];
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_LONG;
    b[0].buffer = &id;
    b[1].buffer_type = MYSQL_TYPE_STRING;
    b[1].buffer = "tag";
    b[1].length = &taglen;
    b[2].buffer_type = MYSQL_TYPE_LONG_BLOB;
    int rc = mysql_stmt_bind_param(s, b) ? fail_st(c, s, "bind_param") : 0;
    rc = rc ? rc : send_chunks(c, s, p, LONG_DATA_SIZE);
    if (rc == 0 && mysql_stmt_execute(s))
        rc = fail_st(c, s, "execute after long data");
    if (rc == 0)
        sb_printf(&c->dg, "affected=%llu;", mysql_stmt_affected_rows(s));
    mysql_stmt_close(s);
    return rc;
}

/* Reads the blob back as one binary-protocol row larger than 16 MiB. */
static int read_long(struct ctx *c, MYSQL *m, uint32_t want_crc)
{
    MYSQL_STMT *s = stmt_prepare(c, m, "SELECT b FROM mct_ld WHERE id = 1");
    struct stmt_rows r = {0};
    struct sbuf scratch = {0};
    if (!s)
        return -1;
    int rc = mysql_stmt_execute(s) ? fail_st(c, s, "execute") : 0;
    rc = rc ? rc : sr_init(c, &r, s);
    if (rc == 0 && sr_fetch(c, &r, &scratch) != 1)
        rc = fail(c, "no row: %s", c->err);
    if (rc == 0 && (r.v[0].len != LONG_DATA_SIZE ||
                    crc32_calc(0, (unsigned char *)r.v[0].str, r.v[0].len) != want_crc))
        rc = fail(c, "blob read back wrong: %lu bytes", r.v[0].len);
    sr_free(&r);
    sb_free(&scratch);
    mysql_stmt_close(s);
    return rc;
}

static int chk_long_data(struct ctx *c)
{
    unsigned char *p = make_pattern(LONG_DATA_SIZE);
    MYSQL *m = p ? db_open(c, NULL) : NULL;
    if (!m) {
        free(p);
        return p ? -1 : fail(c, "out of memory");
    }
    uint32_t crc = crc32_calc(0, p, LONG_DATA_SIZE);
    char got[64], want[64];
    snprintf(want, sizeof want, "%lu %u", LONG_DATA_SIZE, (unsigned)crc);
    int rc = q_exec(c, m, "CREATE TEMPORARY TABLE mct_ld (id INT, tag CHAR(3), b LONGBLOB)");
    rc = rc ? rc : insert_long(c, m, p);
    rc =
        rc ? rc
           : q_scalar(c, m, "SELECT CONCAT(LENGTH(b), ' ', CRC32(b)) FROM mct_ld", got, sizeof got);
    if (rc == 0 && strcmp(got, want) != 0)
        rc = fail(c, "server stored length/crc %s, sent %s", got, want);
    sb_printf(&c->dg, "stored=%s;", rc ? "?" : got);
    rc = rc ? rc : read_long(c, m, crc);
    mysql_close(m);
    free(p);
    return rc;
}

/* ---- MariaDB direct and bulk execution ------------------------------------ */

static int direct_exec(struct ctx *c, MYSQL_STMT *s, const char *sql, int *param)
{
    unsigned int count = 1;
    MYSQL_BIND b;
    memset(&b, 0, sizeof b);
    b.buffer_type = MYSQL_TYPE_LONG;
    b.buffer = param;
    /* Parameters must be bound before the statement text is known. */
    if (mysql_stmt_attr_set(s, STMT_ATTR_PREBIND_PARAMS, &count) || mysql_stmt_bind_param(s, &b))
        return fail_st(c, s, "prebind");
    if (mariadb_stmt_execute_direct(s, sql, (size_t)-1) != 0) {
        sb_printf(&c->dg, "direct error %u;", mysql_stmt_errno(s));
        return 0;
    }
    return dg_stmt_rows(c, s, 0);
}

static int chk_execute_direct(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    int rc = m ? 0 : -1;
    int v = 14;
    static const char *const sqls[] = {"SELECT ? * 3 AS v", "SELEC ? bad", "SELECT ? - 1"};
    for (int i = 0; rc == 0 && i < 3; i++) {
        MYSQL_STMT *s = mysql_stmt_init(m);
        rc = direct_exec(c, s, sqls[i], &v);
        mysql_stmt_close(s);
        /* A failed pipelined prepare must leave no stray reply behind. */
        rc = rc ? rc : q_exec(c, m, "SELECT 1");
    }
    if (rc == 0 && !strstr(c->dg.p, "R|42rows=1;"))
        rc = fail(c, "execute_direct gave %s", c->dg.p);
    if (m)
        mysql_close(m);
    return rc;
}

#define BULK_ROWS 100

struct bulk_data {
    int ids[BULK_ROWS];
    char text[BULK_ROWS][24];
    char *ptrs[BULK_ROWS];
    char ind[BULK_ROWS];
};

static void bulk_fill(struct bulk_data *d)
{
    for (int i = 0; i < BULK_ROWS; i++) {
        d->ids[i] = i + 1;
        snprintf(d->text[i], sizeof d->text[i], "bulk-%d", i + 1);
        d->ptrs[i] = d->text[i];
        /* Every seventh string is sent as NULL through the indicator array. */
        d->ind[i] = (char)(i % 7 == 0 ? STMT_INDICATOR_NULL : STMT_INDICATOR_NTS);
    }
}

static int bulk_offered(MYSQL *m)
{
    unsigned long ext = 0; /* the upper 32 capability bits, unshifted */
    mariadb_get_infov(m, MARIADB_CONNECTION_EXTENDED_SERVER_CAPABILITIES, &ext);
    return ((unsigned long long)ext << 32 & MARIADB_CLIENT_STMT_BULK_OPERATIONS) != 0;
}

/* One COM_STMT_BULK_EXECUTE carrying all rows (column-wise arrays). */
static int bulk_array(struct ctx *c, MYSQL_STMT *s, struct bulk_data *d)
{
    unsigned int size = BULK_ROWS;
    MYSQL_BIND b[2];
    memset(b, 0, sizeof b);
    b[0].buffer_type = MYSQL_TYPE_LONG;
    b[0].buffer = d->ids;
    b[1].buffer_type = MYSQL_TYPE_STRING;
    b[1].buffer = d->ptrs;
    b[1].u.indicator = d->ind;
    if (mysql_stmt_attr_set(s, STMT_ATTR_ARRAY_SIZE, &size) || mysql_stmt_bind_param(s, b) ||
        mysql_stmt_execute(s))
        return fail_st(c, s, "bulk execute");
    sb_printf(&c->dg, "bulk affected=%llu;", mysql_stmt_affected_rows(s));
    return 0;
}

/* The proxy relays MARIADB_CLIENT_STMT_BULK_OPERATIONS: both sides must
 * offer it, so the rows go as one COM_STMT_BULK_EXECUTE. */
static int bulk_insert(struct ctx *c, MYSQL *m)
{
    static struct bulk_data d;
    bulk_fill(&d);
    if (!bulk_offered(m))
        return fail(c, "MARIADB_CLIENT_STMT_BULK_OPERATIONS not offered");
    MYSQL_STMT *s = stmt_prepare(c, m, "INSERT INTO mct_bulk VALUES (?, ?)");
    if (!s)
        return -1;
    int rc = bulk_array(c, s, &d);
    mysql_stmt_close(s);
    return rc;
}

static int chk_bulk(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    char got[256];
    int rc = q_exec(c, m, "CREATE TEMPORARY TABLE mct_bulk (id INT, s VARCHAR(16))");
    rc = rc ? rc : bulk_insert(c, m);
    rc = rc ? rc
            : q_scalar(c, m,
                       "SELECT CONCAT_WS(',', COUNT(*), SUM(id), SUM(s IS NULL),"
                       " MD5(GROUP_CONCAT(s ORDER BY id))) FROM mct_bulk",
                       got, sizeof got);
    if (rc == 0)
        sb_printf(&c->dg, "table=%s;", got);
    if (rc == 0 && strncmp(got, "100,5050,15,", 12) != 0)
        rc = fail(c, "bulk insert stored %s", got);
    mysql_close(m);
    return rc;
}

void run_stmt_ext_checks(void)
{
    check_compare("ps_call_out_params", chk_out_params);
    check_compare("ps_send_long_data_20mib", chk_long_data);
    check_compare("ps_mariadb_execute_direct", chk_execute_direct);
    check_compare("ps_mariadb_bulk_execute", chk_bulk);
}
