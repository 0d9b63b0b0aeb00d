/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue_load.c - a threaded load generator for queue claims (bench/, not a
 * test): N threads, each with its own libmysqlclient connection, claim
 * batches from the table `q` of bench/queue_claims.py and mark them sent,
 * for a fixed time. It exists to tell the server's limits from the Python
 * generator's: one process, one thread per worker, no interpreter.
 *
 * Modes (the statements of bench/queue_claims.py):
 *   claim        UPDATE ... owner = CONNECTION_ID() ... LIMIT b (autocommit);
 *                SELECT id ... WHERE owner = CONNECTION_ID() AND status = 'claimed';
 *                UPDATE ... status = 'sent' WHERE id IN (...) AND owner = CONNECTION_ID()
 *   for_update   BEGIN; SELECT id ... ORDER BY id LIMIT b FOR UPDATE; UPDATE ...; COMMIT
 *   skip_locked  the same with FOR UPDATE SKIP LOCKED written by the client
 *   claim_rc_next  claim, with SET TRANSACTION ISOLATION LEVEL READ COMMITTED
 *                before its UPDATE: that one statement runs READ COMMITTED
 *
 * Usage: queue_load HOST PORT USER PASSWORD DB MODE THREADS SECONDS [rc|rr] [BATCH]
 * Prints one line: mode threads rows secs rows/s batches deadlocks lock_timeouts
 * other_errors. The isolation level is set per session (rr: the server's
 * default is left alone).
 */
#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ER_LOCK_WAIT_TIMEOUT 1205
#define ER_LOCK_DEADLOCK 1213

typedef struct cfg {
    const char *host, *user, *password, *db, *mode, *isolation;
    unsigned port, threads, seconds, batch;
} cfg;

typedef struct result {
    unsigned long long rows, batches, deadlocks, timeouts, other;
} result;

static cfg C;
static pthread_barrier_t connected, go; /* the deadline is set between the two */
static double deadline;
static atomic_int failed_connects;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs sql; on an error counts it by kind, rolls back, and returns false. */
static int run(MYSQL *db, const char *sql, result *r)
{
    if (mysql_query(db, sql) == 0)
        return 1;
    unsigned e = mysql_errno(db);
    if (e == ER_LOCK_DEADLOCK)
        r->deadlocks++;
    else if (e == ER_LOCK_WAIT_TIMEOUT)
        r->timeouts++;
    else if (r->other++ < 3)
        fprintf(stderr, "queue_load: %u %s (%.60s)\n", e, mysql_error(db), sql);
    mysql_query(db, "ROLLBACK");
    return 0;
}

/* Reads the ids of the last SELECT into "a,b,c"; how many. */
static unsigned read_ids(MYSQL *db, char *list, size_t cap)
{
    MYSQL_RES *res = mysql_store_result(db);
    unsigned n = 0;
    size_t o = 0;
    MYSQL_ROW row;
    list[0] = 0;
    while (res && (row = mysql_fetch_row(res)) && o + 24 < cap)
        o += (size_t)snprintf(list + o, cap - o, "%s%s", n++ ? "," : "", row[0]);
    mysql_free_result(res);
    return n;
}

/* next_rc: the claim alone runs READ COMMITTED (SET TRANSACTION without
 * SESSION covers the next transaction only: the autocommit UPDATE). */
static void step_claim(MYSQL *db, result *r, int next_rc)
{
    char sql[512], ids[4096];
    if (next_rc && !run(db, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED", r))
        return;
    snprintf(sql, sizeof sql,
             "UPDATE q SET status='claimed', owner=CONNECTION_ID(), "
             "claimed_at=NOW(6) WHERE owner=0 AND status='unsent' LIMIT %u",
             C.batch);
    if (!run(db, sql, r) ||
        !run(db, "SELECT id FROM q WHERE owner=CONNECTION_ID() AND status='claimed'", r))
        return;
    if (!read_ids(db, ids, sizeof ids))
        return;
    char send[4400];
    snprintf(send, sizeof send,
             "UPDATE q SET status='sent' WHERE id IN (%s) "
             "AND owner=CONNECTION_ID()",
             ids);
    if (run(db, send, r)) {
        r->rows += mysql_affected_rows(db);
        r->batches++;
    }
}

static void step_locking(MYSQL *db, result *r, const char *suffix)
{
    char sql[256], ids[4096], send[4400];
    snprintf(sql, sizeof sql,
             "SELECT id FROM q WHERE status='unsent' ORDER BY id LIMIT %u "
             "FOR UPDATE%s",
             C.batch, suffix);
    if (!run(db, "BEGIN", r) || !run(db, sql, r))
        return;
    if (!read_ids(db, ids, sizeof ids)) {
        run(db, "COMMIT", r);
        return;
    }
    snprintf(send, sizeof send, "UPDATE q SET status='sent' WHERE id IN (%s)", ids);
    if (!run(db, send, r))
        return;
    unsigned long long n = mysql_affected_rows(db);
    if (run(db, "COMMIT", r)) {
        r->rows += n;
        r->batches++;
    }
}

static void *worker(void *arg)
{
    result *r = arg;
    MYSQL *db = mysql_init(NULL);
    unsigned proto = MYSQL_PROTOCOL_TCP;
    mysql_options(db, MYSQL_OPT_PROTOCOL, &proto);
    int ok = mysql_real_connect(db, C.host, C.user, C.password, C.db, C.port, NULL, 0) != NULL;
    if (ok && strcmp(C.isolation, "rc") == 0)
        ok = mysql_query(db, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED") == 0;
    if (!ok) {
        fprintf(stderr, "queue_load: connect: %s\n", mysql_error(db));
        atomic_fetch_add(&failed_connects, 1);
    }
    pthread_barrier_wait(&connected);
    pthread_barrier_wait(&go);
    while (ok && now_s() < deadline) {
        if (strcmp(C.mode, "claim") == 0 || strcmp(C.mode, "claim_rc_next") == 0)
            step_claim(db, r, strcmp(C.mode, "claim_rc_next") == 0);
        else
            step_locking(db, r, strcmp(C.mode, "skip_locked") == 0 ? " SKIP LOCKED" : "");
    }
    mysql_close(db);
    mysql_thread_end();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 9) {
        fprintf(stderr,
                "usage: %s HOST PORT USER PASSWORD DB claim|claim_rc_next|for_update|skip_locked "
                "THREADS SECONDS [rc|rr] [BATCH]\n",
                argv[0]);
        return 2;
    }
    C = (cfg){argv[1],
              argv[3],
              argv[4],
              argv[5],
              argv[6],
              argc > 9 ? argv[9] : "rr",
              (unsigned)atoi(argv[2]),
              (unsigned)atoi(argv[7]),
              (unsigned)atoi(argv[8]),
              argc > 10 ? (unsigned)atoi(argv[10]) : 10};
    if (!C.threads || !C.seconds || !C.batch || C.batch > 100) {
        fprintf(stderr, "queue_load: THREADS, SECONDS and BATCH (1..100) must be positive\n");
        return 2;
    }
    mysql_library_init(0, NULL, NULL);
    pthread_t *th = calloc(C.threads, sizeof *th);
    result *res = calloc(C.threads, sizeof *res);
    pthread_barrier_init(&connected, NULL, C.threads + 1);
    pthread_barrier_init(&go, NULL, C.threads + 1);
    for (unsigned i = 0; i < C.threads; i++)
        pthread_create(&th[i], NULL, worker, &res[i]);
    pthread_barrier_wait(&connected); /* every thread has its connection: the clock starts */
    double t0 = now_s();
    deadline = t0 + C.seconds;
    pthread_barrier_wait(&go);
    result tot = {0};
    for (unsigned i = 0; i < C.threads; i++) {
        pthread_join(th[i], NULL);
        tot.rows += res[i].rows;
        tot.batches += res[i].batches;
        tot.deadlocks += res[i].deadlocks;
        tot.timeouts += res[i].timeouts;
        tot.other += res[i].other;
    }
    double secs = now_s() - t0;
    printf("%-12s %3u %-2s %9llu %6.2f %8.0f %8llu %6llu %6llu %6llu\n", C.mode, C.threads,
           C.isolation, tot.rows, secs, (double)tot.rows / secs, tot.batches, tot.deadlocks,
           tot.timeouts, tot.other);
    free(th);
    free(res);
    mysql_library_end();
    return atomic_load(&failed_connects) ? 1 : 0;
}
