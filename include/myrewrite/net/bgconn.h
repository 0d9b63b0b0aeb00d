/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/bgconn.h - a background thread with the proxy's own connection to the
 * backend (libmysqlclient), for work that must not run on a worker: the
 * schema cache's loads, the DELAYED flushers, queue releases and the reaper.
 *
 * The thread connects as `proxy_user` to the configured backend, sets up
 * the session (sql_mode with backslash escapes, READ COMMITTED, a short
 * lock wait timeout), and reconnects with backoff (100 ms doubling to 5 s)
 * when the connection breaks. While it is connected it runs queued jobs in
 * order, then the owner's tick, then sleeps until woken or until the tick's
 * next wanted time. Blocking calls happen only on this thread.
 *
 * A lazy owner (ops.lazy) has no connection until its first job or wake,
 * and its connection is closed once own_connection_idle has passed without
 * one (its tick runs only while connected); the next job opens it again.
 * Others connect at start and stay connected while their tick has work due.
 *
 * Start and stop on the main thread; mr_bgconn_submit and mr_bgconn_wake
 * from any thread (they take a mutex for a few instructions, never wait).
 */
#ifndef MYREWRITE_BGCONN_H
#define MYREWRITE_BGCONN_H

#include <stdbool.h>
#include <stdint.h>

#include "myrewrite/base/config.h"

struct st_mysql; /* MYSQL of mysql.h */
typedef struct mr_bgconn mr_bgconn;

/* A job; runs once on the thread with a live connection. Returns false to
 * be run again after a reconnect (the connection broke under it). */
typedef bool (*mr_bg_job_fn)(struct st_mysql *db, void *arg);

#define MR_BG_NOTHING_DUE UINT64_MAX

typedef struct mr_bgconn_ops {
    const char *name; /* for log lines: "queue" */
    /* After every (re)connect, before anything else; false: the account
     * cannot do the work (logged by the callback); retried after backoff. */
    bool (*on_connect)(struct st_mysql *db, void *arg);
    /* Periodic work; returns how many ms until it wants to run again, or
     * MR_BG_NOTHING_DUE: no periodic work now (say, its rules are gone), so
     * the connection is closed after own_connection_idle without a job or
     * wake, as a lazy owner's is, until a wake brings work again. */
    uint64_t (*tick)(struct st_mysql *db, void *arg);
    /* Optional: a connect attempt failed (`why`: the client library's error);
     * the thread retries after its backoff. */
    void (*on_connect_failed)(const char *why, void *arg);
    void *arg;
    bool lazy; /* connect at the first job or wake; close when idle */
} mr_bgconn_ops;

/* Starts the thread. NULL, with a log line saying what is off and why,
 * when cfg has no proxy_user or the backend address does not parse. */
mr_bgconn *mr_bgconn_start(const mr_config *cfg, const char *backend, const mr_bgconn_ops *ops);
/* Queues a job (copied: fn and arg). False when out of memory. */
bool mr_bgconn_submit(mr_bgconn *b, mr_bg_job_fn fn, void *arg);
/* The same, with drop(arg) called instead for a job the thread stops
 * before running (on the thread calling mr_bgconn_stop). */
bool mr_bgconn_submit_job(mr_bgconn *b, mr_bg_job_fn fn, void (*drop)(void *arg), void *arg);
/* Makes the thread run its jobs and tick now. */
void mr_bgconn_wake(mr_bgconn *b);
/* True while the thread holds a working connection. */
bool mr_bgconn_connected(const mr_bgconn *b);
/* Connected, or without a connection only because none was needed (lazy
 * or idle-closed; the next wake opens one): worth waiting for. False while
 * connecting fails. */
bool mr_bgconn_usable(const mr_bgconn *b);
/* Connect attempts that failed since the start (a waiter's cue that the
 * server is not there to wait for). */
unsigned mr_bgconn_connect_failures(const mr_bgconn *b);
/* Stops the thread (unrun jobs are dropped: their drop is called, else
 * their arg is untouched), closes
 * the connection and frees everything. */
void mr_bgconn_stop(mr_bgconn *b);

/* A query on a bgconn connection; logs the error (with `what`) and returns
 * false on failure. */
bool mr_bg_query(struct st_mysql *db, const char *sql, const char *what);
/* The same for a statement built in `b` (by length: it may hold NULs), run
 * for delayed rule `rule`: a failed build (out of memory) is an error too. */
struct mr_buf;
bool mr_bg_query_buf(struct st_mysql *db, const struct mr_buf *b, const char *rule,
                     const char *what);
/* True when the connection itself broke (server gone, lost, timeout). */
bool mr_bg_conn_broken(struct st_mysql *db);

#endif
