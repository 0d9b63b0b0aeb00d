/* SPDX-License-Identifier: Apache-2.0 */
/*
 * connect_rate.c - short-lived connections per second (bench/pool.sh): THREADS
 * threads, each for SECONDS repeating connect, one query (its result read),
 * disconnect (COM_QUIT), as a PHP or CGI request does. QUERY's %d, if it has
 * one, becomes an id drawn uniformly from 1..ROWS (a point select of
 * sysbench's table, say); without one the query is sent as it is.
 *
 * Prints one line:
 *   conns=N errors=N rate=X p50_ms=X p95_ms=X elapsed=S first_error=...
 * where conns counts the loops that connected, ran the query and read its
 * result, rate is conns per second of the window, the percentiles are of one
 * whole loop (connect to close), and errors counts the loops that failed at
 * any step (the first error's text is kept). A failed loop is counted and the
 * thread goes on with the next one, so a refusing server shows as errors, not
 * as a stopped benchmark.
 *
 * Usage: connect_rate HOST PORT USER PASSWORD DB THREADS SECONDS [QUERY [ROWS]]
 */
#include <mysql.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct args {
    const char *host, *user, *password, *db, *query;
    unsigned port, rows;
    double end_at;
} args;

typedef struct worker {
    const args *a;
    uint64_t conns, errors;
    double *lat_ms; /* one per successful loop */
    size_t nlat, cap;
    char first_error[200];
    unsigned seed;
} worker;

static pthread_barrier_t ready; /* threads + main */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void note_error(worker *w, MYSQL *m)
{
    w->errors++;
    if (!w->first_error[0])
        snprintf(w->first_error, sizeof(w->first_error), "%u: %s", mysql_errno(m), mysql_error(m));
}

static int keep_latency(worker *w, double ms)
{
    if (w->nlat == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 4096;
        double *p = realloc(w->lat_ms, cap * sizeof(*p));
        if (!p)
            return 0;
        w->lat_ms = p, w->cap = cap;
    }
    w->lat_ms[w->nlat++] = ms;
    return 1;
}

/* One connect, query, result, close; true when every step succeeded. */
static int one_loop(worker *w)
{
    const args *a = w->a;
    char sql[512];
    const char *hole = strstr(a->query, "%d");
    if (hole)
        snprintf(sql, sizeof(sql), "%.*s%u%s", (int)(hole - a->query), a->query,
                 1 + rand_r(&w->seed) % a->rows, hole + 2);
    else
        snprintf(sql, sizeof(sql), "%s", a->query);
    MYSQL *m = mysql_init(NULL);
    if (!m) {
        w->errors++;
        return 0;
    }
    int ok = 0;
    if (mysql_real_connect(m, a->host, a->user, a->password, a->db, a->port, NULL, 0) &&
        !mysql_query(m, sql)) {
        MYSQL_RES *r = mysql_store_result(m);
        ok = r || !mysql_field_count(m);
        mysql_free_result(r);
    }
    if (!ok)
        note_error(w, m);
    mysql_close(m);
    return ok;
}

static void *run(void *p)
{
    worker *w = p;
    mysql_thread_init();
    pthread_barrier_wait(&ready);
    for (double t0 = now_s(); t0 < w->a->end_at;) {
        int ok = one_loop(w);
        double t1 = now_s();
        if (ok) {
            w->conns++;
            if (!keep_latency(w, (t1 - t0) * 1e3))
                break;
        }
        t0 = t1;
    }
    mysql_thread_end();
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        fprintf(stderr, "usage: connect_rate HOST PORT USER PASSWORD DB THREADS SECONDS "
                        "[QUERY [ROWS]]\n");
        return 2;
    }
    args a = {.host = argv[1],
              .port = (unsigned)atoi(argv[2]),
              .user = argv[3],
              .password = argv[4],
              .db = argv[5],
              .query = argc > 8 ? argv[8] : "SELECT 1",
              .rows = argc > 9 ? (unsigned)atoi(argv[9]) : 1};
    int threads = atoi(argv[6]);
    double secs = atof(argv[7]);
    if (threads <= 0 || secs <= 0 || a.rows == 0)
        return 2;
    mysql_library_init(0, NULL, NULL);
    worker *ws = calloc((size_t)threads, sizeof(*ws));
    pthread_t *ts = calloc((size_t)threads, sizeof(*ts));
    if (!ws || !ts)
        return 1;
    pthread_barrier_init(&ready, NULL, (unsigned)threads + 1);
    double start = now_s();
    a.end_at = start + secs; /* the threads read it after the barrier */
    for (int i = 0; i < threads; i++) {
        ws[i] = (worker){.a = &a, .seed = (unsigned)i * 7919u + 1};
        if (pthread_create(&ts[i], NULL, run, &ws[i]))
            return 1;
    }
    pthread_barrier_wait(&ready);
    uint64_t conns = 0, errors = 0;
    size_t n = 0;
    const char *first = "";
    for (int i = 0; i < threads; i++) {
        pthread_join(ts[i], NULL);
        conns += ws[i].conns, errors += ws[i].errors, n += ws[i].nlat;
        if (!*first && ws[i].first_error[0])
            first = ws[i].first_error;
    }
    double elapsed = now_s() - start;
    double *all = malloc((n ? n : 1) * sizeof(*all));
    if (!all)
        return 1;
    size_t k = 0;
    for (int i = 0; i < threads; i++)
        for (size_t j = 0; j < ws[i].nlat; j++)
            all[k++] = ws[i].lat_ms[j];
    qsort(all, n, sizeof(*all), by_value);
    printf("conns=%llu errors=%llu rate=%.0f p50_ms=%.2f p95_ms=%.2f elapsed=%.1f first_error=%s\n",
           (unsigned long long)conns, (unsigned long long)errors, conns / elapsed,
           n ? all[n / 2] : 0.0, n ? all[n * 95 / 100] : 0.0, elapsed, first);
    for (int i = 0; i < threads; i++)
        free(ws[i].lat_ms);
    free(all), free(ws), free(ts);
    mysql_library_end();
    return 0;
}
