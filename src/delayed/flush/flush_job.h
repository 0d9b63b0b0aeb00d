/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/flush_job.h - FLUSH DELAYED's round as a job on a flusher's own
 * connection (net/bgconn.h), shared by the staged flusher (delayed/flush/flush.c)
 * and the memory one (delayed/mem/mem_flush.c): the tables asked for, and whom
 * to tell when the round is done.
 */
#ifndef MYREWRITE_DELAYED_FLUSH_JOB_H
#define MYREWRITE_DELAYED_FLUSH_JOB_H

#include <stdbool.h>

#include "myrewrite/net/bgconn.h"

typedef struct dflush_job {
    char filter[200];                /* `t`, `schema.t`, "" = all */
    void (*done)(void *arg, int rc); /* called once, on the flusher's thread */
    void *arg;
} dflush_job;

/* Queues run(db, job) on bg; run ends the job with dflush_job_done (or
 * returns false to run again after a reconnect). A job the flusher stops
 * before running ends with rc 1 (not finished). False, done never called:
 * no flusher (bg NULL) or no memory. Any thread. */
bool dflush_job_submit(mr_bgconn *bg, mr_bg_job_fn run, const char *filter,
                       void (*done)(void *arg, int rc), void *arg);
/* Tells the job's owner rc and frees the job. */
void dflush_job_done(dflush_job *j, int rc);

#endif
