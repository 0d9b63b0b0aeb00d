/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/session/flush_request.c - a FLUSH DELAYED round shared by its asker and
 * its jobs (see delayed/flush_request.h).
 *
 * Threads: start, outcome and release on the asker's; part_done on a
 * flusher's. The lock guards every field.
 */
#include "myrewrite/delayed/flush_request.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/delayed/flush.h"
#include "myrewrite/delayed/mem.h"
#include "myrewrite/delayed/reject.h"

struct mr_dflush_req {
    pthread_mutex_t lock;
    unsigned refs;           /* the asker's (until it lets go) and one per job */
    unsigned parts;          /* jobs not done yet */
    void (*wake)(void *arg); /* cleared when the asker lets go */
    void *wake_arg;
    int result; /* -1 no part yet; else the worst of the parts' */
    mr_dflush_outcome out;
    char filter[200];
};

/* Drops one reference (lock held); the last one frees. */
static void unref_locked(mr_dflush_req *r)
{
    bool last = --r->refs == 0;
    pthread_mutex_unlock(&r->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* Every part is done (lock held): what went to dead-letter tables, and
 * the asker is told. */
static void finish_locked(mr_dflush_req *r)
{
    r->out.result = r->result < 0 ? 0 : r->result;
    r->out.rejected = mr_dreject_round_report(r->filter, r->out.where, sizeof r->out.where);
    if (r->wake)
        r->wake(r->wake_arg); /* under the lock: the asker cannot let go meanwhile */
}

/* One flusher's job is done (its thread): the worse result is kept. */
static void part_done(void *arg, int rc)
{
    mr_dflush_req *r = arg;
    pthread_mutex_lock(&r->lock);
    r->result = r->result < 0 ? rc : rc < 0 ? r->result : rc > r->result ? rc : r->result;
    if (--r->parts == 0)
        finish_locked(r);
    unref_locked(r);
}

/* The jobs, one per flusher asked; false when none could be queued (then
 * nothing of r is shared yet). */
static bool submit(mr_dflush_req *r, bool staged, bool memory)
{
    pthread_mutex_lock(&r->lock);
    r->refs += staged + memory;
    r->parts = staged + memory;
    pthread_mutex_unlock(&r->lock);
    bool a = staged && mr_delayed_flush_job(r->filter, part_done, r);
    bool b = memory && mr_dmem_flush_job(r->filter, part_done, r);
    pthread_mutex_lock(&r->lock);
    /* a flusher that is not running takes no job */
    unsigned missing = (staged && !a) + (memory && !b);
    r->refs -= missing;
    r->parts -= missing;
    bool any = a || b;
    if (any && missing && r->parts == 0)
        finish_locked(r); /* the job that did run finished first */
    pthread_mutex_unlock(&r->lock);
    return any;
}

mr_dflush_req *mr_dflush_req_start(const char *filter, bool staged, bool memory,
                                   void (*wake)(void *arg), void *arg, bool *no_flusher)
{
    *no_flusher = false;
    mr_dflush_req *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        return NULL;
    }
    r->refs = 1;
    r->result = -1;
    r->out.result = 1;
    r->wake = wake;
    r->wake_arg = arg;
    snprintf(r->filter, sizeof r->filter, "%s", filter ? filter : "");
    if (submit(r, staged, memory))
        return r;
    *no_flusher = true;
    pthread_mutex_destroy(&r->lock);
    free(r);
    return NULL;
}

bool mr_dflush_req_outcome(mr_dflush_req *r, mr_dflush_outcome *out)
{
    pthread_mutex_lock(&r->lock);
    bool done = r->parts == 0;
    *out = r->out;
    pthread_mutex_unlock(&r->lock);
    if (!done)
        out->result = 1;
    return done;
}

void mr_dflush_req_release(mr_dflush_req *r)
{
    pthread_mutex_lock(&r->lock);
    r->wake = NULL;
    unref_locked(r);
}
