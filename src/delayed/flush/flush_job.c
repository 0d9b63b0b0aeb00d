/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/flush_job.c - FLUSH DELAYED's round as a flusher job (see
 * delayed/flush/flush_job.h). Submitted from a worker, run and ended on the
 * flusher's thread, or dropped on the thread that stops the flusher.
 */
#include "delayed/flush/flush_job.h"

#include <stdio.h>
#include <stdlib.h>

void dflush_job_done(dflush_job *j, int rc)
{
    j->done(j->arg, rc);
    free(j);
}

static void drop(void *arg)
{
    dflush_job_done(arg, 1); /* the flusher stopped first: not finished */
}

bool dflush_job_submit(mr_bgconn *bg, mr_bg_job_fn run, const char *filter,
                       void (*done)(void *arg, int rc), void *arg)
{
    dflush_job *j = bg ? calloc(1, sizeof *j) : NULL;
    if (!j)
        return false;
    snprintf(j->filter, sizeof j->filter, "%s", filter ? filter : "");
    j->done = done;
    j->arg = arg;
    if (mr_bgconn_submit_job(bg, run, drop, j))
        return true;
    free(j);
    return false;
}
