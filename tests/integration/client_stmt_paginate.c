/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client_stmt_paginate.c - prepared deep pages through a proxy with paginate
 * rules (run by t_schema.py, which starts that proxy): `LIMIT ?, ?` and
 * `LIMIT ? OFFSET ?` with parameters in the select list and the WHERE too,
 * prepared once and executed at many offsets, through the proxy and direct;
 * every execution must return the same rows in the same order.
 *
 *   mr_stmt_paginate HOST DIRECT_PORT PROXY_PORT USER PASSWORD DB
 *   mr_stmt_paginate --bench HOST PORT USER PASSWORD DB   (timings, not a test)
 *
 * The table ps_items (created by t_schema.py) has 20,000 rows; every ORDER
 * BY here is total (name is unique), so the pages are comparable.
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NCOLS_MAX 8

static int failures;

static void report(int ok, const char *what, const char *detail)
{
    printf("%s - %s\n", ok ? "ok" : "not ok", what);
    if (!ok) {
        failures++;
        if (detail)
            printf("   %s\n", detail);
    }
    fflush(stdout);
}

static MYSQL *open_db(char **a, unsigned port)
{
    MYSQL *m = mysql_init(NULL);
    if (!m || !mysql_real_connect(m, a[0], a[1], a[2], a[3], port, NULL, 0)) {
        fprintf(stderr, "connect to port %u: %s\n", port, m ? mysql_error(m) : "no memory");
        exit(1);
    }
    return m;
}

/* Executes s with integer parameters p[0..np) and appends every row, as
 * text, to out (a "|" between columns, "\n" after a row). 0 on success. */
static int run(MYSQL_STMT *s, const long long *p, unsigned np, char *out, size_t cap)
{
    MYSQL_BIND in[8], res[NCOLS_MAX];
    char val[NCOLS_MAX][64];
    unsigned long len[NCOLS_MAX];
    my_bool isnull[NCOLS_MAX];
    memset(in, 0, sizeof in);
    for (unsigned i = 0; i < np; i++) {
        in[i].buffer_type = MYSQL_TYPE_LONGLONG;
        in[i].buffer = (void *)&p[i];
    }
    if (mysql_stmt_bind_param(s, in) || mysql_stmt_execute(s))
        return -1;
    unsigned nc = mysql_stmt_field_count(s);
    if (nc > NCOLS_MAX)
        return -1;
    memset(res, 0, sizeof res);
    for (unsigned i = 0; i < nc; i++) {
        res[i].buffer_type = MYSQL_TYPE_STRING;
        res[i].buffer = val[i];
        res[i].buffer_length = sizeof val[i];
        res[i].length = &len[i];
        res[i].is_null = &isnull[i];
    }
    if (mysql_stmt_bind_result(s, res) || mysql_stmt_store_result(s))
        return -1;
    size_t at = strlen(out);
    while (mysql_stmt_fetch(s) == 0)
        for (unsigned i = 0; i < nc; i++)
            at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, "%.*s%c",
                                   isnull[i] ? 4 : (int)len[i], isnull[i] ? "NULL" : val[i],
                                   i + 1 < nc ? '|' : '\n');
    mysql_stmt_free_result(s);
    return at < cap ? 0 : -1;
}

typedef struct shape {
    const char *sql;
    unsigned np; /* parameters before the two LIMIT ones */
    long long pre[2];
    int offset_first; /* LIMIT ?, ? (offset, count); else LIMIT ? OFFSET ? (count, offset) */
} shape;

static const shape SHAPES[] = {
    {"SELECT * FROM ps_items ORDER BY id LIMIT ?, ?", 0, {0, 0}, 1},
    {"SELECT id, v * ? AS w, name FROM ps_items WHERE v <> ? ORDER BY v DESC, name LIMIT ?, ?",
     2,
     {3, 4},
     1},
    {"SELECT p.name, p.v FROM ps_items p WHERE p.v BETWEEN ? AND ? ORDER BY p.v, p.name DESC "
     "LIMIT ? OFFSET ?",
     2,
     {2, 9},
     0},
};

static const long long OFFSETS[] = {0,    1,     7,     99,    100,   1000,
                                    5000, 12345, 19990, 19999, 20000, 25000};

static int compare_shape(MYSQL *d, MYSQL *p, const shape *sh, char *bd, char *bp, size_t cap)
{
    MYSQL_STMT *sd = mysql_stmt_init(d), *sp = mysql_stmt_init(p);
    char what[300];
    int bad = 0;
    if (mysql_stmt_prepare(sd, sh->sql, strlen(sh->sql)) ||
        mysql_stmt_prepare(sp, sh->sql, strlen(sh->sql))) {
        snprintf(what, sizeof what, "prepare %s", sh->sql);
        report(0, what, mysql_stmt_error(mysql_stmt_errno(sp) ? sp : sd));
        return -1;
    }
    snprintf(what, sizeof what, "the proxy's prepared statement takes %u parameters: %s",
             sh->np + 2, sh->sql);
    report(mysql_stmt_param_count(sp) == sh->np + 2, what, NULL);
    for (size_t k = 0; k < sizeof OFFSETS / sizeof OFFSETS[0]; k++) {
        for (long long n = 1; n <= 25; n += 12) {
            long long prm[4] = {sh->pre[0], sh->pre[1], 0, 0};
            prm[sh->np] = sh->offset_first ? OFFSETS[k] : n;
            prm[sh->np + 1] = sh->offset_first ? n : OFFSETS[k];
            bd[0] = bp[0] = '\0';
            int rd = run(sd, prm, sh->np + 2, bd, cap), rp = run(sp, prm, sh->np + 2, bp, cap);
            if (rd || rp || strcmp(bd, bp) != 0) {
                if (!bad++)
                    fprintf(stderr,
                            "offset %lld n %lld: direct rc %d (%s) proxy rc %d (%s)\n"
                            "direct:\n%.400s\nproxy:\n%.400s\n",
                            OFFSETS[k], n, rd, mysql_stmt_error(sd), rp, mysql_stmt_error(sp), bd,
                            bp);
            }
        }
    }
    snprintf(what, sizeof what, "same rows at %zu offsets, through the proxy and direct: %s",
             sizeof OFFSETS / sizeof OFFSETS[0], sh->sql);
    report(!bad, what, bad ? "see stderr" : NULL);
    mysql_stmt_close(sd);
    mysql_stmt_close(sp);
    return 0;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median µs of `reps` executions of sql at offset off, 20 rows. */
static double median(MYSQL *m, const char *sql, long long off, int reps)
{
    MYSQL_STMT *s = mysql_stmt_init(m);
    static char buf[1 << 16];
    double t[1000];
    if (mysql_stmt_prepare(s, sql, strlen(sql))) {
        fprintf(stderr, "%s\n", mysql_stmt_error(s));
        exit(1);
    }
    long long prm[2] = {off, 20};
    for (int i = 0; i < reps && i < 1000; i++) {
        buf[0] = '\0';
        double t0 = now_us();
        if (run(s, prm, 2, buf, sizeof buf)) {
            fprintf(stderr, "%s\n", mysql_stmt_error(s));
            exit(1);
        }
        t[i] = now_us() - t0;
    }
    mysql_stmt_close(s);
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    return t[reps / 2];
}

static int bench(char **a)
{
    MYSQL *m = open_db((char *[]){a[0], a[2], a[3], a[4]}, (unsigned)atoi(a[1]));
    static const char *orig = "SELECT * FROM ps_items ORDER BY v, id LIMIT ?, ?";
    static const char *dj = "SELECT ps_items.* FROM ps_items JOIN (SELECT `id` FROM ps_items "
                            "ORDER BY v, id LIMIT ?, ?) AS myrewrite_dj USING (`id`) "
                            "ORDER BY v, id";
    printf("%10s %12s %12s %7s\n", "offset", "original_us", "deferred_us", "ratio");
    static const long long offs[] = {0, 10, 100, 1000, 10000, 19000};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        double o = median(m, orig, offs[i], 400), j = median(m, dj, offs[i], 400);
        printf("%10lld %12.1f %12.1f %7.2f\n", offs[i], o, j, j / o);
    }
    mysql_close(m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 7 && strcmp(argv[1], "--bench") == 0)
        return bench(argv + 2);
    if (argc != 7) {
        fprintf(stderr,
                "usage: %s HOST DIRECT_PORT PROXY_PORT USER PASSWORD DB\n"
                "       %s --bench HOST PORT USER PASSWORD DB\n",
                argv[0], argv[0]);
        return 2;
    }
    char *conn[] = {argv[1], argv[4], argv[5], argv[6]};
    MYSQL *d = open_db(conn, (unsigned)atoi(argv[2])), *p = open_db(conn, (unsigned)atoi(argv[3]));
    size_t cap = 1 << 20;
    char *bd = malloc(cap), *bp = malloc(cap);
    for (size_t i = 0; bd && bp && i < sizeof SHAPES / sizeof SHAPES[0]; i++)
        compare_shape(d, p, &SHAPES[i], bd, bp, cap);
    free(bd);
    free(bp);
    mysql_close(d);
    mysql_close(p);
    printf(failures ? "%d check(s) failed\n" : "all checks passed\n", failures);
    return failures ? 1 : 0;
}
