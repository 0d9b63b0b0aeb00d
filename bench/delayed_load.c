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
 *   acks=N errors=N affected=N elapsed=S first_error=...
 * where acks counts OK packets, affected sums their affected rows.
 *
 * Usage: delayed_load HOST PORT USER PASSWORD DB CONNS THREADS SECONDS HOT TEMPLATE
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
    const char *host, *user, *password, *db, *tpl;
    size_t pre, post_off;    /* the template around its %d */
    unsigned port, conns, threads, hot;
    double seconds;
} args;

typedef struct worker {
    const args *a;
    unsigned first, count;   /* connections [first, first + count) */
    uint64_t acks, errors, affected;
    char first_error[200];
    unsigned seed;
} worker;

static pthread_barrier_t connected, started; /* threads + main */
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
        snprintf(w->first_error, sizeof w->first_error, "%u %s", mysql_errno(db),
                 mysql_error(db));
}

/* The template with the id in place of its %d. */
static int fill(const args *a, char *out, size_t cap, unsigned id)
{
    int n = snprintf(out, cap, "%.*s%u%s", (int)a->pre, a->tpl, id, a->tpl + a->post_off);
    return n < (int)cap ? n : (int)cap - 1;
}

static MYSQL *open_conn(const args *a)
{
    MYSQL *db = mysql_init(NULL);
    unsigned proto = MYSQL_PROTOCOL_TCP;
    mysql_options(db, MYSQL_OPT_PROTOCOL, &proto);
    if (!mysql_real_connect(db, a->host, a->user, a->password, a->db, a->port, NULL, 0)) {
        fprintf(stderr, "connect: %s\n", mysql_error(db));
        mysql_close(db);
        return NULL;
    }
    return db;
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
                continue;
            }
            w->acks++;
            w->affected += mysql_affected_rows(dbs[i]);
        }
    }
    for (unsigned i = 0; i < w->count; i++)
        mysql_close(dbs[i]);
    free(dbs);
    free(sent);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 11) {
        fprintf(stderr, "usage: %s HOST PORT USER PASSWORD DB CONNS THREADS SECONDS HOT "
                "TEMPLATE\n", argv[0]);
        return 2;
    }
    args a = {.host = argv[1], .port = (unsigned)atoi(argv[2]), .user = argv[3],
              .password = argv[4], .db = argv[5], .conns = (unsigned)atoi(argv[6]),
              .threads = (unsigned)atoi(argv[7]), .seconds = atof(argv[8]),
              .hot = (unsigned)atoi(argv[9]), .tpl = argv[10]};
    const char *hole = strstr(a.tpl, "%d");
    if (!hole || !a.conns || !a.threads || a.threads > a.conns || !a.hot || a.seconds <= 0)
        return 2;
    a.pre = (size_t)(hole - a.tpl);
    a.post_off = a.pre + 2;
    mysql_library_init(0, NULL, NULL);
    worker *ws = calloc(a.threads, sizeof *ws);
    pthread_t *th = calloc(a.threads, sizeof *th);
    pthread_barrier_init(&connected, NULL, a.threads + 1);
    pthread_barrier_init(&started, NULL, a.threads + 1);
    for (unsigned t = 0, at = 0; t < a.threads; t++) {
        unsigned n = a.conns / a.threads + (t < a.conns % a.threads);
        ws[t] = (worker){.a = &a, .first = at, .count = n, .seed = 7919u * (t + 1)};
        at += n;
        pthread_create(&th[t], NULL, run, &ws[t]);
    }
    pthread_barrier_wait(&connected);
    start_at = now_s();
    end_at = start_at + a.seconds;
    pthread_barrier_wait(&started);
    uint64_t acks = 0, errors = 0, affected = 0;
    const char *first = "";
    for (unsigned t = 0; t < a.threads; t++) {
        pthread_join(th[t], NULL);
        acks += ws[t].acks;
        errors += ws[t].errors;
        affected += ws[t].affected;
        if (!first[0])
            first = ws[t].first_error;
    }
    printf("acks=%llu errors=%llu affected=%llu elapsed=%.3f first_error=%s\n",
           (unsigned long long)acks, (unsigned long long)errors, (unsigned long long)affected,
           now_s() - start_at, first);
    free(ws);
    free(th);
    mysql_library_end();
    return 0;
}
