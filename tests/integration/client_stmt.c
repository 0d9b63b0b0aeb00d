/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Prepared statements over the binary protocol: COM_STMT_PREPARE, EXECUTE,
 * SEND_LONG_DATA, RESET and CLOSE, CALL with OUT parameters, and the
 * MariaDB additions (direct execution, bulk array execution).
 */
#include "client_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- generic result binding ---------------------------------------------- */

static enum enum_field_types bind_type(enum enum_field_types t)
{
    switch (t) {
    case MYSQL_TYPE_TINY:
    case MYSQL_TYPE_SHORT:
    case MYSQL_TYPE_INT24:
    case MYSQL_TYPE_LONG:
    case MYSQL_TYPE_LONGLONG:
    case MYSQL_TYPE_YEAR: return MYSQL_TYPE_LONGLONG;
    case MYSQL_TYPE_FLOAT:
    case MYSQL_TYPE_DOUBLE:
    case MYSQL_TYPE_DATE:
    case MYSQL_TYPE_TIME:
    case MYSQL_TYPE_DATETIME:
    case MYSQL_TYPE_TIMESTAMP: return t;
    default:
        /* Strings, decimals, bits, blobs, geometry: raw bytes. */
        return MYSQL_TYPE_STRING;
    }
}

int sr_init(struct ctx *c, struct stmt_rows *r, MYSQL_STMT *s)
{
    memset(r, 0, sizeof *r);
    r->s = s;
    r->meta = mysql_stmt_result_metadata(s);
    if (!r->meta)
        return fail_st(c, s, "result_metadata");
    r->n = mysql_num_fields(r->meta);
    r->f = mysql_fetch_fields(r->meta);
    r->b = calloc(r->n, sizeof *r->b);
    r->v = calloc(r->n, sizeof *r->v);
    for (unsigned i = 0; i < r->n; i++) {
        MYSQL_BIND *b = &r->b[i];
        b->buffer_type = bind_type(r->f[i].type);
        b->is_unsigned = (r->f[i].flags & UNSIGNED_FLAG) != 0;
        b->length = &r->v[i].len;
        b->is_null = &r->v[i].is_null;
        b->error = &r->v[i].error;
        if (b->buffer_type != MYSQL_TYPE_STRING) {
            b->buffer = &r->v[i].v;
            b->buffer_length = sizeof r->v[i].v;
        }
    }
    if (mysql_stmt_bind_result(s, r->b))
        return fail_st(c, s, "bind_result");
    return 0;
}

void sr_free(struct stmt_rows *r)
{
    for (unsigned i = 0; r->v && i < r->n; i++)
        free(r->v[i].str);
    free(r->b);
    free(r->v);
    if (r->meta)
        mysql_free_result(r->meta);
    memset(r, 0, sizeof *r);
}

/* Variable-length columns are bound with no buffer; pull each one now. */
static int sr_fetch_var(struct ctx *c, struct stmt_rows *r, unsigned i)
{
    struct colval *v = &r->v[i];
    free(v->str);
    v->str = malloc(v->len + 1);
    if (!v->str)
        return fail(c, "out of memory for a %lu byte column", v->len);
    MYSQL_BIND b;
    unsigned long got = 0;
    memset(&b, 0, sizeof b);
    b.buffer_type = MYSQL_TYPE_STRING;
    b.buffer = v->str;
    b.buffer_length = v->len + 1;
    b.length = &got;
    if (mysql_stmt_fetch_column(r->s, &b, i, 0))
        return fail_st(c, r->s, "fetch_column");
    v->str[v->len] = '\0';
    return 0;
}

static void dg_value(struct sbuf *out, const struct stmt_rows *r, unsigned i)
{
    const struct colval *v = &r->v[i];
    const MYSQL_TIME *t = &v->v.t;
    if (v->is_null) {
        sb_add(out, "|N", 2);
        return;
    }
    switch (r->b[i].buffer_type) {
    case MYSQL_TYPE_LONGLONG:
        if (r->b[i].is_unsigned)
            sb_printf(out, "|%llu", (unsigned long long)v->v.ll);
        else
            sb_printf(out, "|%lld", v->v.ll);
        break;
    case MYSQL_TYPE_FLOAT: sb_printf(out, "|%.9g", (double)v->v.f); break;
    case MYSQL_TYPE_DOUBLE: sb_printf(out, "|%.17g", v->v.d); break;
    case MYSQL_TYPE_STRING:
        sb_printf(out, "|%lu:", v->len);
        sb_add(out, v->str, v->len);
        break;
    default:
        sb_printf(out, "|%s%04u-%02u-%02u %02u:%02u:%02u.%06lu/%d", t->neg ? "-" : "", t->year,
                  t->month, t->day, t->hour, t->minute, t->second, t->second_part,
                  (int)t->time_type);
    }
}

int sr_fetch(struct ctx *c, struct stmt_rows *r, struct sbuf *out)
{
    int st = mysql_stmt_fetch(r->s);
    if (st == MYSQL_NO_DATA)
        return 0;
    if (st != 0 && st != MYSQL_DATA_TRUNCATED)
        return fail_st(c, r->s, "stmt_fetch");
    sb_add(out, "R", 1);
    for (unsigned i = 0; i < r->n; i++) {
        if (r->b[i].buffer_type == MYSQL_TYPE_STRING && !r->v[i].is_null && sr_fetch_var(c, r, i))
            return -1;
        dg_value(out, r, i);
    }
    return 1;
}

int dg_stmt_rows(struct ctx *c, MYSQL_STMT *s, unsigned long max_rows)
{
    struct stmt_rows r = {0};
    if (sr_init(c, &r, s)) {
        sr_free(&r);
        return -1;
    }
    dg_fields(&c->dg, r.f, r.n);
    unsigned long rows = 0;
    int st = 1;
    while ((max_rows == 0 || rows < max_rows) && (st = sr_fetch(c, &r, &c->dg)) == 1)
        rows++;
    sr_free(&r);
    if (st < 0)
        return -1;
    sb_printf(&c->dg, "rows=%lu;", rows);
    return 0;
}

MYSQL_STMT *stmt_prepare(struct ctx *c, MYSQL *m, const char *sql)
{
    MYSQL_STMT *s = mysql_stmt_init(m);
    if (!s) {
        fail_my(c, m, "stmt_init");
        return NULL;
    }
    if (mysql_stmt_prepare(s, sql, (unsigned long)strlen(sql)) != 0) {
        fail(c, "prepare '%.80s': error %u %s", sql, mysql_stmt_errno(s), mysql_stmt_error(s));
        mysql_stmt_close(s);
        return NULL;
    }
    return s;
}

/* ---- parameters of several types ----------------------------------------- */

struct pset {
    long long ll;
    my_bool ll_null;
    unsigned long long ull;
    double d;
    const char *s;
    const char *blob;
    unsigned long blen;
    MYSQL_TIME t;
};

struct pbind {
    MYSQL_BIND b[7];
    unsigned long slen;
    unsigned long blen;
    my_bool yes;
};

static void bind_pset(struct pbind *pb, struct pset *p)
{
    memset(pb, 0, sizeof *pb);
    pb->slen = (unsigned long)strlen(p->s);
    pb->blen = p->blen;
    pb->yes = 1;
    pb->b[0].buffer_type = MYSQL_TYPE_LONGLONG;
    pb->b[0].buffer = &p->ll;
    pb->b[0].is_null = &p->ll_null;
    pb->b[1].buffer_type = MYSQL_TYPE_LONGLONG;
    pb->b[1].buffer = &p->ull;
    pb->b[1].is_unsigned = 1;
    pb->b[2].buffer_type = MYSQL_TYPE_DOUBLE;
    pb->b[2].buffer = &p->d;
    pb->b[3].buffer_type = MYSQL_TYPE_STRING;
    pb->b[3].buffer = (void *)p->s;
    pb->b[3].length = &pb->slen;
    pb->b[4].buffer_type = MYSQL_TYPE_BLOB;
    pb->b[4].buffer = (void *)p->blob;
    pb->b[4].length = &pb->blen;
    pb->b[5].buffer_type = MYSQL_TYPE_DATETIME;
    pb->b[5].buffer = &p->t;
    pb->b[6].buffer_type = MYSQL_TYPE_NULL;
}

/* The echoed values must be exactly the ones sent. */
static int verify_echo(struct ctx *c, const struct stmt_rows *r, const struct pset *p)
{
    const struct colval *v = r->v;
    if (v[0].is_null != p->ll_null || (!p->ll_null && v[0].v.ll != p->ll))
        return fail(c, "integer parameter came back wrong");
    if ((unsigned long long)v[1].v.ll != p->ull)
        return fail(c, "unsigned parameter came back as %llu", (unsigned long long)v[1].v.ll);
    if (v[2].v.d != p->d)
        return fail(c, "double parameter came back as %.17g", v[2].v.d);
    if (v[3].len != strlen(p->s) || memcmp(v[3].str, p->s, v[3].len) != 0)
        return fail(c, "string parameter came back wrong");
    if (v[4].len != p->blen || memcmp(v[4].str, p->blob, p->blen) != 0)
        return fail(c, "blob parameter came back wrong (%lu bytes)", v[4].len);
    if (v[5].v.t.year != p->t.year || v[5].v.t.second_part != p->t.second_part)
        return fail(c, "datetime parameter came back wrong");
    if (!v[6].is_null)
        return fail(c, "NULL parameter came back non-NULL");
    return 0;
}

static int exec_pset(struct ctx *c, MYSQL_STMT *s, struct pset *p)
{
    struct pbind pb;
    struct stmt_rows r = {0};
    bind_pset(&pb, p);
    if (mysql_stmt_bind_param(s, pb.b) || mysql_stmt_execute(s))
        return fail_st(c, s, "bind/execute");
    if (sr_init(c, &r, s)) {
        sr_free(&r);
        return -1;
    }
    dg_fields(&c->dg, r.f, r.n);
    int rc = sr_fetch(c, &r, &c->dg) == 1 ? 0 : fail(c, "no row returned");
    rc = rc ? rc : verify_echo(c, &r, p);
    if (rc == 0 && sr_fetch(c, &r, &c->dg) != 0)
        rc = fail(c, "more than one row returned");
    sr_free(&r);
    return rc;
}

static int chk_param_types(struct ctx *c)
{
    struct pset sets[3] = {
        {-5,
         0,
         18446744073709551615ULL,
         3.25,
         "hello",
         "a\0b\xff",
         4,
         {2021, 12, 31, 23, 59, 58, 123456, 0, MYSQL_TIMESTAMP_DATETIME}},
        {0, 1, 0, -0.5, "", "", 0, {1970, 1, 2, 0, 0, 0, 0, 0, MYSQL_TIMESTAMP_DATETIME}},
        {-9223372036854775807LL - 1,
         0,
         42,
         1e-300,
         "\xc3\xa9t\xc3\xa9",
         "\0\0\0",
         3,
         {9999, 12, 31, 23, 59, 59, 999999, 0, MYSQL_TIMESTAMP_DATETIME}},
    };
    MYSQL *m = db_open(c, NULL);
    MYSQL_STMT *s = m ? stmt_prepare(c, m, "SELECT ?, ?, ?, ?, ?, ?, ?") : NULL;
    int rc = s ? 0 : -1;
    /* Re-executing the same handle also covers metadata caching on the wire. */
    for (int i = 0; rc == 0 && i < 3; i++)
        rc = exec_pset(c, s, &sets[i]);
    if (s)
        mysql_stmt_close(s);
    if (m)
        mysql_close(m);
    return rc;
}

static int exec_dg(struct ctx *c, MYSQL_STMT *s, unsigned long max_rows)
{
    if (mysql_stmt_execute(s))
        return fail_st(c, s, "execute");
    return dg_stmt_rows(c, s, max_rows);
}

static int chk_binary_types(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    MYSQL_STMT *s = m ? stmt_prepare(c, m, "SELECT * FROM mct_types ORDER BY id") : NULL;
    int rc = s ? exec_dg(c, s, 0) : -1;
    if (rc == 0 && mysql_stmt_execute(s) == 0 && mysql_stmt_store_result(s) == 0) {
        sb_printf(&c->dg, "stored=%llu;", mysql_stmt_num_rows(s));
        rc = dg_stmt_rows(c, s, 0);
    } else if (rc == 0) {
        rc = fail_st(c, s, "execute + store_result");
    }
    if (s)
        mysql_stmt_close(s);
    if (m)
        mysql_close(m);
    return rc;
}

static int bind_range(struct ctx *c, MYSQL_STMT *s, int *lo_hi)
{
    MYSQL_BIND b[2];
    memset(b, 0, sizeof b);
    for (int i = 0; i < 2; i++) {
        b[i].buffer_type = MYSQL_TYPE_LONG;
        b[i].buffer = &lo_hi[i];
    }
    return mysql_stmt_bind_param(s, b) ? fail_st(c, s, "bind_param") : 0;
}

/* COM_STMT_RESET drops unread rows and buffered long data. */
static int reset_long_data(struct ctx *c, MYSQL *m)
{
    MYSQL_STMT *s = stmt_prepare(c, m, "SELECT CONCAT('<', ?, '>')");
    if (!s)
        return -1;
    MYSQL_BIND b;
    unsigned long len = 3;
    memset(&b, 0, sizeof b);
    b.buffer_type = MYSQL_TYPE_STRING;
    b.buffer = "xyz";
    b.length = &len;
    int rc = mysql_stmt_bind_param(s, &b) ? fail_st(c, s, "bind_param") : 0;
    if (rc == 0 && mysql_stmt_send_long_data(s, 0, "discarded", 9))
        rc = fail_st(c, s, "send_long_data");
    if (rc == 0 && mysql_stmt_reset(s))
        rc = fail_st(c, s, "reset");
    rc = rc ? rc : exec_dg(c, s, 0);
    if (rc == 0 && !strstr(c->dg.p, "<xyz>"))
        rc = fail(c, "long data survived mysql_stmt_reset");
    mysql_stmt_close(s);
    return rc;
}

static int chk_reset(struct ctx *c)
{
    int ranges[3][2] = {{1, 5}, {10, 12}, {1000, 2000}};
    MYSQL *m = db_open(c, NULL);
    MYSQL_STMT *s = m ? stmt_prepare(c, m,
                                     "SELECT id, v, d, n FROM mct_rows"
                                     " WHERE id BETWEEN ? AND ? ORDER BY id")
                      : NULL;
    int rc = s ? 0 : -1;
    rc = rc ? rc : bind_range(c, s, ranges[0]);
    rc = rc ? rc : exec_dg(c, s, 2);
    if (rc == 0 && mysql_stmt_reset(s))
        rc = fail_st(c, s, "reset with rows pending");
    for (int i = 1; rc == 0 && i < 3; i++) {
        rc = bind_range(c, s, ranges[i]);
        rc = rc ? rc : exec_dg(c, s, 0);
    }
    rc = rc ? rc : reset_long_data(c, m);
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    if (s)
        mysql_stmt_close(s);
    if (m)
        mysql_close(m);
    return rc;
}

static int chk_close_then_new(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = 0;
    /* Close one statement with unread rows, then many in a row. */
    MYSQL_STMT *s = stmt_prepare(c, m, "SELECT id FROM mct_rows ORDER BY id");
    if (!s || mysql_stmt_execute(s))
        rc = s ? fail_st(c, s, "execute") : -1;
    if (s)
        mysql_stmt_close(s);
    for (int i = 0; rc == 0 && i < 50; i++) {
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT %d + 1 AS v", i);
        s = stmt_prepare(c, m, sql);
        rc = s ? exec_dg(c, s, 0) : -1;
        if (s)
            mysql_stmt_close(s);
    }
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    mysql_close(m);
    return rc;
}

static int dg_prepare_error(struct ctx *c, MYSQL_STMT *s, const char *sql)
{
    if (mysql_stmt_prepare(s, sql, (unsigned long)strlen(sql)) == 0)
        return fail(c, "prepare of '%s' succeeded", sql);
    sb_printf(&c->dg, "prepare error %u %s;", mysql_stmt_errno(s), mysql_stmt_sqlstate(s));
    return 0;
}

static int chk_prepare_error(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    MYSQL_STMT *s = m ? mysql_stmt_init(m) : NULL;
    int rc = s ? 0 : -1;
    rc = rc ? rc : dg_prepare_error(c, s, "SELEC bad ? syntax");
    rc = rc ? rc : dg_prepare_error(c, s, "SELECT * FROM mct_no_such_table WHERE a = ?");
    rc = rc ? rc : q_exec(c, m, "SELECT 'connection still fine'");
    /* The same handle can be prepared again with valid SQL. */
    if (rc == 0 && mysql_stmt_prepare(s, "SELECT 2 AS two", 15))
        rc = fail_st(c, s, "re-prepare");
    rc = rc ? rc : exec_dg(c, s, 0);
    if (s)
        mysql_stmt_close(s);
    if (m)
        mysql_close(m);
    return rc;
}

void run_stmt_checks(void)
{
    check_compare("ps_param_types_reexecute", chk_param_types);
    check_compare("ps_binary_result_types", chk_binary_types);
    check_compare("ps_reset", chk_reset);
    check_compare("ps_close_then_new_statements", chk_close_then_new);
    check_compare("ps_prepare_error_keeps_connection", chk_prepare_error);
}
