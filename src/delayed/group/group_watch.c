/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/group/group_watch.c - the batch limit of group commit (see
 * delayed/group/group_watch.h): one slot per runner connection, one thread that
 * sleeps until the earliest deadline and shuts the socket of a batch that
 * passed it.
 *
 * Threads: the slots and W.running under W.lock (W.running is written only
 * by the thread that starts and stops the watch, which alone reads it
 * unlocked); the socket is shut under it too, so that it is never one a
 * batch has already left (the runner ends its watch under the same lock
 * before it uses the connection for anything else).
 */
#include "delayed/group/group_watch.h"

#include <pthread.h>
#include <sys/socket.h>
#include <time.h>

#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"
#include "myrewrite/delayed/group.h"

struct dg_watch {
    MYSQL *db; /* NULL: the slot is free */
    uint64_t deadline_ns;
    bool commits;  /* a statement that may commit is in flight */
    bool cut;      /* the deadline passed: the socket is shut */
    bool in_doubt; /* commits, at the cut */
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* a batch began, or stop (CLOCK_MONOTONIC) */
    dg_watch slot[MR_DGROUP_CONNS];
    uint64_t sleep_until; /* the thread's wake-up (UINT64_MAX: none): a batch whose
                             deadline is later needs no signal */
    pthread_t thread;
    bool running, stop;
} W = {.lock = PTHREAD_MUTEX_INITIALIZER, .sleep_until = UINT64_MAX};

/* Shuts the batch's connection (lock held): the runner's read returns. */
static void cut(dg_watch *w)
{
    w->cut = true;
    w->in_doubt = w->commits;
    int fd = (int)mysql_get_socket(w->db);
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
}

/* The earliest deadline not passed (UINT64_MAX: none), cutting those that
 * have (lock held). */
static uint64_t sweep(void)
{
    uint64_t now = mr_mono_ns(), next = UINT64_MAX;
    for (unsigned i = 0; i < MR_DGROUP_CONNS; i++) {
        dg_watch *w = &W.slot[i];
        if (!w->db || w->cut)
            continue;
        if (w->deadline_ns <= now)
            cut(w);
        else if (w->deadline_ns < next)
            next = w->deadline_ns;
    }
    return next;
}

static void *watch_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&W.lock);
    while (!W.stop) {
        uint64_t next = sweep();
        W.sleep_until = next;
        if (next == UINT64_MAX) {
            pthread_cond_wait(&W.changed, &W.lock);
            continue;
        }
        struct timespec at = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        pthread_cond_timedwait(&W.changed, &W.lock, &at);
    }
    pthread_mutex_unlock(&W.lock);
    return NULL;
}

bool dg_watch_start(void)
{
    if (W.running)
        return true;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return false;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    bool ok = pthread_cond_init(&W.changed, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (ok && pthread_create(&W.thread, NULL, watch_main, NULL) != 0) {
        pthread_cond_destroy(&W.changed);
        ok = false;
    }
    if (!ok)
        mr_warn(0, "group commit: no thread for group_commit_timeout; a batch waits as long as "
                   "own_connection_timeout lets its connection");
    pthread_mutex_lock(&W.lock); /* read under it by the runners (dg_watch_begin) */
    W.running = ok;
    pthread_mutex_unlock(&W.lock);
    return ok;
}

void dg_watch_stop(void)
{
    if (!W.running)
        return;
    pthread_mutex_lock(&W.lock);
    W.stop = true;
    pthread_cond_signal(&W.changed);
    pthread_mutex_unlock(&W.lock);
    pthread_join(W.thread, NULL);
    pthread_cond_destroy(&W.changed);
    pthread_mutex_lock(&W.lock);
    W.running = false;
    pthread_mutex_unlock(&W.lock);
}

dg_watch *dg_watch_begin(MYSQL *db, uint64_t limit_ms)
{
    dg_watch *w = NULL;
    pthread_mutex_lock(&W.lock);
    for (unsigned i = 0; W.running && !w && i < MR_DGROUP_CONNS; i++)
        if (!W.slot[i].db)
            w = &W.slot[i];
    if (w) {
        *w = (dg_watch){.db = db, .deadline_ns = mr_mono_ns() + limit_ms * 1000000u};
        if (w->deadline_ns < W.sleep_until) /* else the thread's wake-up comes first: one a
                                               limit, not one a batch */
            pthread_cond_signal(&W.changed);
    }
    pthread_mutex_unlock(&W.lock);
    return w;
}

bool dg_watch_send(dg_watch *w, bool commits)
{
    if (!w)
        return true;
    pthread_mutex_lock(&W.lock);
    bool go = !w->cut;
    w->commits = go && commits;
    pthread_mutex_unlock(&W.lock);
    return go;
}

void dg_watch_sent(dg_watch *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&W.lock);
    w->commits = false;
    pthread_mutex_unlock(&W.lock);
}

bool dg_watch_end(dg_watch *w, bool *in_doubt)
{
    *in_doubt = false;
    if (!w)
        return false;
    pthread_mutex_lock(&W.lock);
    bool was = w->cut;
    *in_doubt = w->in_doubt;
    w->db = NULL;
    pthread_mutex_unlock(&W.lock);
    return was;
}
