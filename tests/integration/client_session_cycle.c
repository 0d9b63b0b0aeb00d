/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a reconnecting or resetting application pays per operation through
 * the proxy, against direct: a whole session (connect, log in, COM_QUIT
 * and close), COM_CHANGE_USER, COM_RESET_CONNECTION, COM_PING and a
 * one-row query. A timer or a wait anywhere on those paths (login, the
 * close after COM_QUIT, a lookup at connect) shows as a median of tens or
 * hundreds of milliseconds where direct takes well under one; the bound
 * (10 times direct's median plus 50 ms) leaves the scheduling noise of a
 * loaded machine alone.
 */
#include "client_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CYCLE_REPS 25

enum cycle_op { OP_SESSION, OP_CHANGE_USER, OP_RESET, OP_PING, OP_QUERY, OP_N };

static const char *const op_names[OP_N] = {"connect+quit", "change_user", "reset_connection",
                                           "ping", "select"};

static double mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One operation on m (OP_SESSION opens and closes a session of its own). */
static int run_op(struct ctx *c, MYSQL *m, enum cycle_op op)
{
    switch (op) {
    case OP_SESSION: {
        MYSQL *s = db_open(c, NULL);
        if (!s)
            return -1;
        mysql_close(s);
        return 0;
    }
    case OP_CHANGE_USER:
        return mysql_change_user(m, g_cfg.user, g_cfg.password, g_cfg.db)
                   ? fail_my(c, m, op_names[op])
                   : 0;
    case OP_RESET: return mysql_reset_connection(m) ? fail_my(c, m, op_names[op]) : 0;
    case OP_PING: return mysql_ping(m) ? fail_my(c, m, op_names[op]) : 0;
    default: return q_exec(c, m, "SELECT 1");
    }
}

/* The median of CYCLE_REPS runs of each operation against c->port, in ms. */
static int medians(struct ctx *c, double med[OP_N])
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = 0;
    for (int op = 0; op < OP_N && rc == 0; op++) {
        double t[CYCLE_REPS];
        for (int i = 0; i < CYCLE_REPS && rc == 0; i++) {
            double t0 = mono_ms();
            rc = run_op(c, m, (enum cycle_op)op);
            t[i] = mono_ms() - t0;
        }
        qsort(t, CYCLE_REPS, sizeof t[0], cmp_double);
        med[op] = t[CYCLE_REPS / 2];
    }
    mysql_close(m);
    return rc;
}

/* Run through the proxy; measures direct itself, so both medians are taken
 * in the same minute of the machine's load. */
static int chk_session_cycle(struct ctx *c)
{
    struct ctx d = {.port = g_cfg.direct_port, .side = "direct"};
    double dm[OP_N], pm[OP_N];
    int rc = medians(&d, dm);
    sb_free(&d.dg);
    if (rc)
        return fail(c, "direct: %s", d.err);
    rc = medians(c, pm);
    for (int op = 0; op < OP_N && rc == 0; op++) {
        double bound = 10 * dm[op] + 50;
        printf("# %s: median %.2f ms direct, %.2f ms through the proxy (bound %.0f ms)\n",
               op_names[op], dm[op], pm[op], bound);
        if (pm[op] > bound)
            rc = fail(c, "%s takes %.1f ms through the proxy against %.2f ms direct (median of %d)",
                      op_names[op], pm[op], dm[op], CYCLE_REPS);
    }
    return rc;
}

void run_session_cycle_checks(void) { check_proxy("session_cycle_latency", chk_session_cycle); }
