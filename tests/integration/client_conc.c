/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Concurrency: many client connections through the proxy at once, each
 * running a mix of statements whose answers depend on that connection's own
 * state, so crossed wires between sessions show up as wrong answers.
 */
#include "client_common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS 32
#define QUERIES 200

struct worker {
    int idx;
    unsigned port;
    int answered;
    struct ctx c;
    MYSQL *m;
    MYSQL_STMT *ps;
    int inserted;
};

static int expect_str(struct worker *w, const char *sql, const char *want)
{
    char got[128];
    if (q_scalar(&w->c, w->m, sql, got, sizeof got))
        return -1;
    if (strcmp(got, want) != 0)
        return fail(&w->c, "'%.60s' answered '%s', expected '%s'", sql, got, want);
    w->answered++;
    return 0;
}

static int q_arith(struct worker *w, int i)
{
    char sql[96], want[32];
    snprintf(sql, sizeof sql, "SELECT %d * 1000 + %d", w->idx, i);
    snprintf(want, sizeof want, "%d", w->idx * 1000 + i);
    return expect_str(w, sql, want);
}

/* Result sizes vary so some span many TCP segments. */
static int q_repeat(struct worker *w, int i)
{
    char sql[96], want[32];
    int len = 1 + (i * 7919 + w->idx * 131) % 70000;
    char ch = (char)('A' + w->idx % 26);
    snprintf(sql, sizeof sql,
             "SELECT CONCAT(LENGTH(REPEAT('%c', %d)), MID(REPEAT('%c', %d), %d, 1))", ch, len, ch,
             len, len);
    snprintf(want, sizeof want, "%d%c", len, ch);
    return expect_str(w, sql, want);
}

static int q_insert(struct worker *w, int i)
{
    char sql[96];
    snprintf(sql, sizeof sql, "INSERT INTO mct_conc VALUES (%d, 'w%d-%d')", i, w->idx, i);
    if (q_exec(&w->c, w->m, sql))
        return -1;
    w->inserted++;
    w->answered++;
    return 0;
}

/* A user variable is per session: another connection's value must never leak in. */
static int q_session_var(struct worker *w, int i)
{
    char sql[96], want[32];
    snprintf(want, sizeof want, "w%d-i%d", w->idx, i);
    snprintf(sql, sizeof sql, "SET @mct_w = '%s'", want);
    if (q_exec(&w->c, w->m, sql))
        return -1;
    return expect_str(w, "SELECT @mct_w", want);
}

static int q_prepared(struct worker *w, int i)
{
    long long in = (long long)w->idx * 100000 + i, out = 0;
    MYSQL_BIND p, r;
    memset(&p, 0, sizeof p);
    memset(&r, 0, sizeof r);
    p.buffer_type = r.buffer_type = MYSQL_TYPE_LONGLONG;
    p.buffer = &in;
    r.buffer = &out;
    if (mysql_stmt_bind_param(w->ps, &p) || mysql_stmt_execute(w->ps) ||
        mysql_stmt_bind_result(w->ps, &r) || mysql_stmt_fetch(w->ps) ||
        mysql_stmt_free_result(w->ps))
        return fail_st(&w->c, w->ps, "prepared statement");
    if (out != in * 2)
        return fail(&w->c, "prepared statement answered %lld for %lld", out, in);
    w->answered++;
    return 0;
}

static int q_count(struct worker *w, int i)
{
    char want[32];
    (void)i;
    snprintf(want, sizeof want, "%d", w->inserted);
    return expect_str(w, "SELECT COUNT(*) FROM mct_conc", want);
}

typedef int (*query_fn)(struct worker *w, int i);

static int worker_run(struct worker *w)
{
    static const query_fn mix[] = {q_arith, q_repeat, q_insert, q_session_var, q_prepared, q_count};
    w->m = db_open(&w->c, NULL);
    if (!w->m)
        return -1;
    if (q_exec(&w->c, w->m,
               "CREATE TEMPORARY TABLE mct_conc (k INT PRIMARY KEY,"
               " v VARCHAR(32))"))
        return -1;
    w->ps = stmt_prepare(&w->c, w->m, "SELECT ? * 2");
    if (!w->ps)
        return -1;
    for (int i = 0; i < QUERIES; i++) {
        if (mix[i % 6](w, i)) {
            char why[sizeof w->c.err];
            snprintf(why, sizeof why, "%s", w->c.err);
            return fail(&w->c, "worker %d query %d: %s", w->idx, i, why);
        }
    }
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    mysql_thread_init();
    if (worker_run(w) != 0 && !w->c.err[0])
        fail(&w->c, "worker %d failed", w->idx);
    if (w->ps)
        mysql_stmt_close(w->ps);
    if (w->m)
        mysql_close(w->m);
    mysql_thread_end();
    return NULL;
}

static int chk_concurrent(struct ctx *c)
{
    struct worker *ws = calloc(WORKERS, sizeof *ws);
    pthread_t tid[WORKERS];
    int started = 0, answered = 0, rc = 0;
    for (int i = 0; ws && i < WORKERS; i++) {
        ws[i].idx = i;
        ws[i].c.port = ws[i].port = c->port;
        if (pthread_create(&tid[i], NULL, worker_main, &ws[i]) != 0)
            break;
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    for (int i = 0; i < started; i++) {
        answered += ws[i].answered;
        if (ws[i].c.err[0] && rc == 0)
            rc = fail(c, "%s", ws[i].c.err);
        sb_free(&ws[i].c.dg);
    }
    if (rc == 0 && answered != WORKERS * QUERIES)
        rc = fail(c, "%d of %d queries answered (%d threads started)", answered, WORKERS * QUERIES,
                  started);
    free(ws);
    return rc;
}

void run_concurrency_checks(void)
{
    check_proxy("concurrent_32_connections_x_200_queries", chk_concurrent);
}
