/* SPDX-License-Identifier: Apache-2.0 */
/*
 * result_load.c - a load generator for result sets: THREADS connections
 * (libmariadb), each running QUERY and reading its whole result
 * (mysql_store_result) for SECONDS, optionally over the compressed
 * protocol. Prints "queries=N qps=X rows=R" for bench/compress.sh.
 *
 * Usage: result_load HOST PORT USER PASSWORD DB THREADS SECONDS COMPRESS QUERY
 */
#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct args {
    const char *host, *user, *password, *db, *query;
    unsigned port;
    int compress;
    double seconds;
} args;

static _Atomic unsigned long long queries, rows_seen, failures;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static MYSQL *connect_one(const args *a)
{
    MYSQL *db = mysql_init(NULL);
    if (!db)
        return NULL;
    if (a->compress)
        mysql_options(db, MYSQL_OPT_COMPRESS, NULL);
    if (!mysql_real_connect(db, a->host, a->user, a->password, a->db, a->port, NULL, 0)) {
        fprintf(stderr, "connect: %s\n", mysql_error(db));
        mysql_close(db);
        return NULL;
    }
    return db;
}

static void *run(void *arg)
{
    const args *a = arg;
    MYSQL *db = connect_one(a);
    if (!db) {
        atomic_fetch_add(&failures, 1);
        return NULL;
    }
    double end = now() + a->seconds;
    while (now() < end) {
        MYSQL_RES *res;
        if (mysql_query(db, a->query) || !(res = mysql_store_result(db))) {
            fprintf(stderr, "query: %s\n", mysql_error(db));
            atomic_fetch_add(&failures, 1);
            break;
        }
        atomic_fetch_add(&rows_seen, mysql_num_rows(res));
        atomic_fetch_add(&queries, 1);
        mysql_free_result(res);
    }
    mysql_close(db);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 10) {
        fprintf(stderr, "usage: result_load HOST PORT USER PASSWORD DB THREADS SECONDS "
                        "COMPRESS QUERY\n");
        return 2;
    }
    args a = {argv[1],       argv[3],      argv[4], argv[5], argv[9], (unsigned)atoi(argv[2]),
              atoi(argv[8]), atof(argv[7])};
    int n = atoi(argv[6]);
    pthread_t *t = calloc((size_t)n, sizeof(*t));
    if (!t || n <= 0)
        return 2;
    mysql_library_init(0, NULL, NULL);
    double start = now();
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, run, &a);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    double took = now() - start;
    printf("queries=%llu qps=%.1f rows=%llu failures=%llu\n", (unsigned long long)queries,
           (double)queries / took, (unsigned long long)rows_seen, (unsigned long long)failures);
    mysql_library_end();
    return failures ? 1 : 0;
}
