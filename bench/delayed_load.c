/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed_load.c - a load generator for the hot-counter benchmark
 * (bench/delayed_counters.py): CONNS client connections spread over THREADS
 * threads, each thread keeping one statement in flight on every one of its
 * connections (mysql_send_query on all of them, then mysql_read_query_result
 * on all of them), so a few threads drive many connections without the
 * client being the bottleneck that one Python process per connection is.
 *
 * Every statement is TEMPLATE with its %d replaced by an id drawn uniformly
 * from 1..HOT. Runs for SECONDS and prints one line:
 *   acks=N errors=N affected=N lost=N elapsed=S reads=N read_errors=N
 *   read_p50_us=X read_p99_us=X first_error=...
 * where acks counts OK packets, affected sums their affected rows, and lost
 * counts the statements whose connection broke while they were in flight
 * (the server may or may not have applied them); such a connection is not
 * used again, so a server restart ends its writers instead of spinning.
 *
 * With READERS > 0, that many more connections to READ_PORT (each on a thread
 * of its own) send READ_TEMPLATE (a point read, its %d an id from 1..HOT) one
 * at a time, one every READ_INTERVAL_US at most, over the same window, and the
 * latency of each (send to last row read) goes into the read percentiles. The
 * readers are paced rather than flat out so that on a small machine they
 * measure how long a read waits behind the writers, not how many CPUs eight
 * busy loops take from them. CONNS may be 0 (with THREADS 0): readers alone,
 * the no-writer baseline.
 *
 * Usage: delayed_load HOST PORT USER PASSWORD DB CONNS THREADS SECONDS HOT TEMPLATE
 *                     [READERS READ_PORT READ_INTERVAL_US READ_TEMPLATE]
 */
#include <mysql.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct args {
    const char *host, *user, *password, *db, *tpl, *read_tpl;
    unsigned port, conns, threads, hot;
    unsigned readers, read_port, read_interval_us;
    double seconds;
} args;

typedef struct worker {
    const args *a;
    unsigned first, count; /* connections [first, first + count) */
    uint64_t acks, errors, affected, lost;
    char first_error[200];
    unsigned seed;
} worker;

static pthread_barrier_t connected, started; /* threads + readers + main */
static double start_at, end_at;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void note_error(worker *w, MYSQL *db)
{
    if (w->errors++ == 0)
        snprintf(w->first_error, sizeof w->first_error, "%u %s", mysql_errno(db), mysql_error(db));
}

/* TPL with the id in place of its %d (the caller checked it has one). */
static int fill_tpl(const char *tpl, char *out, size_t cap, unsigned id)
{
    size_t pre = (size_t)(strstr(tpl, "%d") - tpl);
    int n = snprintf(out, cap, "%.*s%u%s", (int)pre, tpl, id, tpl + pre + 2);
    return n < (int)cap ? n : (int)cap - 1;
}

static int fill(const args *a, char *out, size_t cap, unsigned id)
{
    return fill_tpl(a->tpl, out, cap, id);
}

static MYSQL *open_conn_port(const args *a, unsigned port)
{
    MYSQL *db = mysql_init(NULL);
    unsigned proto = MYSQL_PROTOCOL_TCP;
    mysql_options(db, MYSQL_OPT_PROTOCOL, &proto);
    if (!mysql_real_connect(db, a->host, a->user, a->password, a->db, port, NULL, 0)) {
        fprintf(stderr, "connect: %s\n", mysql_error(db));
        mysql_close(db);
        return NULL;
    }
    return db;
}

static MYSQL *open_conn(const args *a) { return open_conn_port(a, a->port); }

/* ---- readers: paced point reads, each one's latency kept ---- */

typedef struct reader {
    const args *a;
    unsigned seed;
    uint64_t errors;
    uint32_t *us; /* one latency per read, in microseconds */
    size_t n, cap;
} reader;

static void keep_latency(reader *r, double secs)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 4096;
        uint32_t *p = realloc(r->us, cap * sizeof *p);
        if (!p)
            exit(3);
        r->us = p;
        r->cap = cap;
    }
    double us = secs * 1e6;
    r->us[r->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* One read, every row fetched; false on an error. */
static bool read_one(MYSQL *db, const char *sql, int len)
{
    if (mysql_real_query(db, sql, (unsigned long)len) != 0)
        return false;
    MYSQL_RES *res = mysql_store_result(db);
    if (!res)
        return mysql_field_count(db) == 0;
    mysql_free_result(res);
    return true;
}

static void *read_loop(void *arg)
{
    reader *r = arg;
    const args *a = r->a;
    MYSQL *db = open_conn_port(a, a->read_port);
    if (!db)
        exit(2);
    pthread_barrier_wait(&connected);
    pthread_barrier_wait(&started);
    double interval = a->read_interval_us / 1e6, next = now_s();
    char sql[512];
    while (now_s() < end_at) {
        int n = fill_tpl(a->read_tpl, sql, sizeof sql, (unsigned)rand_r(&r->seed) % a->hot + 1);
        double t0 = now_s();
        if (read_one(db, sql, n))
            keep_latency(r, now_s() - t0);
        else
            r->errors++;
        /* A fixed schedule, but no burst to catch up after a slow read. */
        next += interval;
        double now = now_s();
        if (next < now)
            next = now;
        else
            nanosleep(
                &(struct timespec){.tv_sec = (time_t)(next - now),
                                   .tv_nsec = (long)((next - now - (time_t)(next - now)) * 1e9)},
                NULL);
    }
    mysql_close(db);
    return NULL;
}

static int cmp_u32(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/* All readers' latencies in one sorted array; prints reads, errors, p50, p99. */
static void report_reads(reader *rs, unsigned count)
{
    size_t n = 0, at = 0;
    uint64_t errors = 0;
    for (unsigned i = 0; i < count; i++)
        n += rs[i].n;
    uint32_t *all = malloc((n ? n : 1) * sizeof *all);
    for (unsigned i = 0; i < count; i++) {
        if (rs[i].n)
            memcpy(all + at, rs[i].us, rs[i].n * sizeof *all);
        at += rs[i].n;
        errors += rs[i].errors;
        free(rs[i].us);
    }
    qsort(all, n, sizeof *all, cmp_u32);
    printf(" reads=%zu read_errors=%llu", n, (unsigned long long)errors);
    if (n)
        printf(" read_p50_us=%u read_p99_us=%u", all[n / 2], all[n * 99 / 100]);
    else
        printf(" read_p50_us=- read_p99_us=-");
    free(all);
}

/* The connection itself broke: the statement's outcome is unknown. */
static bool gone(MYSQL *db)
{
    unsigned e = mysql_errno(db);
    /* 1158: the proxy saying its backend connection broke mid-statement */
    return e == 2006 || e == 2013 || e == 1158 || e == 1053 /* server shutdown */ ||
           e == 1927 /* killed */;
}

static void *run(void *arg)
{
    worker *w = arg;
    const args *a = w->a;
    MYSQL **dbs = calloc(w->count, sizeof *dbs);
    bool *sent = calloc(w->count, sizeof *sent);
    for (unsigned i = 0; i < w->count; i++)
        if (!(dbs[i] = open_conn(a)))
            exit(2);
    pthread_barrier_wait(&connected);
    pthread_barrier_wait(&started); /* end_at is set */
    char sql[512];
    while (now_s() < end_at) {
        for (unsigned i = 0; i < w->count; i++) {
            if (!dbs[i]) {
                sent[i] = false;
                continue;
            }
            int n = fill(a, sql, sizeof sql, (unsigned)rand_r(&w->seed) % a->hot + 1);
            sent[i] = mysql_send_query(dbs[i], sql, (unsigned long)n) == 0;
            if (!sent[i])
                note_error(w, dbs[i]);
        }
        for (unsigned i = 0; i < w->count; i++) {
            if (!sent[i])
                continue;
            if (mysql_read_query_result(dbs[i]) != 0) {
                note_error(w, dbs[i]);
                if (gone(dbs[i])) {
                    w->lost++;
                    mysql_close(dbs[i]);
                    dbs[i] = NULL;
                }
                continue;
            }
            w->acks++;
            w->affected += mysql_affected_rows(dbs[i]);
        }
    }
    for (unsigned i = 0; i < w->count; i++)
        if (dbs[i])
            mysql_close(dbs[i]);
    free(dbs);
    free(sent);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 11 && argc != 15) {
        fprintf(stderr,
                "usage: %s HOST PORT USER PASSWORD DB CONNS THREADS SECONDS HOT "
                "TEMPLATE [READERS READ_PORT READ_INTERVAL_US READ_TEMPLATE]\n",
                argv[0]);
        return 2;
    }
    args a = {.host = argv[1],
              .port = (unsigned)atoi(argv[2]),
              .user = argv[3],
              .password = argv[4],
              .db = argv[5],
              .conns = (unsigned)atoi(argv[6]),
              .threads = (unsigned)atoi(argv[7]),
              .seconds = atof(argv[8]),
              .hot = (unsigned)atoi(argv[9]),
              .tpl = argv[10]};
    if (argc == 15) {
        a.readers = (unsigned)atoi(argv[11]);
        a.read_port = (unsigned)atoi(argv[12]);
        a.read_interval_us = (unsigned)atoi(argv[13]);
        a.read_tpl = argv[14];
        if (a.readers && !strstr(a.read_tpl, "%d"))
            return 2;
    }
    /* No writers (CONNS and THREADS 0) only makes sense with readers. */
    bool writers_ok = a.conns ? a.threads && a.threads <= a.conns : !a.threads && a.readers;
    if (!strstr(a.tpl, "%d") || !writers_ok || !a.hot || a.seconds <= 0)
        return 2;
    mysql_library_init(0, NULL, NULL);
    worker *ws = calloc(a.threads + 1, sizeof *ws);
    reader *rs = calloc(a.readers + 1, sizeof *rs);
    pthread_t *th = calloc(a.threads + a.readers + 1, sizeof *th);
    pthread_barrier_init(&connected, NULL, a.threads + a.readers + 1);
    pthread_barrier_init(&started, NULL, a.threads + a.readers + 1);
    for (unsigned t = 0, at = 0; t < a.threads; t++) {
        unsigned n = a.conns / a.threads + (t < a.conns % a.threads);
        ws[t] = (worker){.a = &a, .first = at, .count = n, .seed = 7919u * (t + 1)};
        at += n;
        pthread_create(&th[t], NULL, run, &ws[t]);
    }
    for (unsigned r = 0; r < a.readers; r++) {
        rs[r] = (reader){.a = &a, .seed = 104729u * (r + 1)};
        pthread_create(&th[a.threads + r], NULL, read_loop, &rs[r]);
    }
    pthread_barrier_wait(&connected);
    start_at = now_s();
    end_at = start_at + a.seconds;
    pthread_barrier_wait(&started);
    uint64_t acks = 0, errors = 0, affected = 0, lost = 0;
    const char *first = "";
    for (unsigned t = 0; t < a.threads; t++) {
        pthread_join(th[t], NULL);
        acks += ws[t].acks;
        errors += ws[t].errors;
        affected += ws[t].affected;
        lost += ws[t].lost;
        if (!first[0])
            first = ws[t].first_error;
    }
    for (unsigned r = 0; r < a.readers; r++)
        pthread_join(th[a.threads + r], NULL);
    printf("acks=%llu errors=%llu affected=%llu lost=%llu elapsed=%.3f", (unsigned long long)acks,
           (unsigned long long)errors, (unsigned long long)affected, (unsigned long long)lost,
           now_s() - start_at);
    report_reads(rs, a.readers);
    printf(" first_error=%s\n", first);
    free(ws);
    free(rs);
    free(th);
    mysql_library_end();
    return 0;
}
