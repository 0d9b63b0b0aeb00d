/* SPDX-License-Identifier: Apache-2.0 */
/*
 * point_latency.c - one connection's latency: COUNT prepared point selects of
 * sysbench's table (SELECT c FROM sbtest1 WHERE id=?, random ids), one at a
 * time, each timed. Prints the mean, percentiles and queries per second, and
 * the voluntary context switches per query of this process. Used to compare
 * relays at one thread with each process pinned to a chosen CPU (doc/benchmarks.md,
 * "One thread over the unix socket").
 *
 * Usage: point_latency HOST PORT USER PASSWORD DB COUNT [ROWS]
 */
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One execute, its row read and freed; false on any error (printed). */
static int run_one(MYSQL_STMT *st)
{
    if (mysql_stmt_execute(st) || mysql_stmt_store_result(st)) {
        fprintf(stderr, "point_latency: %s\n", mysql_stmt_error(st));
        return 0;
    }
    while (mysql_stmt_fetch(st) == 0)
        ;
    mysql_stmt_free_result(st);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: point_latency HOST PORT USER PASSWORD DB COUNT [ROWS]\n");
        return 2;
    }
    int count = atoi(argv[6]), rows = argc > 7 ? atoi(argv[7]) : 100000;
    if (count <= 0 || rows <= 0)
        return 2;
    MYSQL *m = mysql_init(NULL);
    if (!mysql_real_connect(m, argv[1], argv[3], argv[4], argv[5], (unsigned)atoi(argv[2]), NULL,
                            0)) {
        fprintf(stderr, "point_latency: %s\n", mysql_error(m));
        return 1;
    }
    MYSQL_STMT *st = mysql_stmt_init(m);
    const char *q = "SELECT c FROM sbtest1 WHERE id=?";
    if (mysql_stmt_prepare(st, q, strlen(q))) {
        fprintf(stderr, "point_latency: %s\n", mysql_stmt_error(st));
        return 1;
    }
    int id = 0;
    char c[256];
    unsigned long len = 0;
    MYSQL_BIND param = {.buffer_type = MYSQL_TYPE_LONG, .buffer = &id};
    MYSQL_BIND res = {
        .buffer_type = MYSQL_TYPE_STRING, .buffer = c, .buffer_length = sizeof(c), .length = &len};
    mysql_stmt_bind_param(st, &param);
    mysql_stmt_bind_result(st, &res);
    double *lat = malloc(sizeof(double) * (size_t)count), sum = 0, t0 = now_us();
    if (!lat)
        return 1;
    for (int i = 0; i < count; i++) {
        id = 1 + rand() % rows;
        double a = now_us();
        if (!run_one(st))
            return 1;
        lat[i] = now_us() - a;
        sum += lat[i];
    }
    double total = now_us() - t0;
    qsort(lat, (size_t)count, sizeof(double), by_value);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("mean_us %.1f p10 %.1f p50 %.1f p90 %.1f qps %.0f vcs_per_query %.2f\n", sum / count,
           lat[count / 10], lat[count / 2], lat[count * 9 / 10], count / total * 1e6,
           (double)ru.ru_nvcsw / count);
    mysql_stmt_close(st);
    mysql_close(m);
    free(lat);
    return 0;
}
