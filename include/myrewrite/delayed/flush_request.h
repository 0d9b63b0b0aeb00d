/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush_request.h - one FLUSH DELAYED round asked of the flushers,
 * for whoever waits for it without blocking: a session through the proxy
 * (delayed/session/session_flush.c) and the admin console (admin/exec.c).
 *
 * The round is a job on each flusher asked (staged, memory) over the tables
 * matching a filter (mr_delayed_flush_job, mr_dmem_flush_job). When the
 * last job is done, the asker's wake function runs on that flusher's
 * thread; the asker then reads the outcome on its own thread. The request
 * is shared by the asker and its jobs and freed by the last to let go; an
 * asker that lets go first is never woken afterwards.
 */
#ifndef MYREWRITE_DELAYED_FLUSH_REQUEST_H
#define MYREWRITE_DELAYED_FLUSH_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_dflush_req mr_dflush_req;

typedef struct mr_dflush_outcome {
    int result;        /* 0 flushed; 2 a chunk failed (kept, retried); 1 not done */
    uint64_t rejected; /* rows the round moved to dead-letter tables */
    char where[400];   /* which tables, why, and where those rows are */
} mr_dflush_outcome;

/* Queues the jobs (`filter`: "", `t` or `schema.t`). wake(arg) runs once,
 * on a flusher's thread, when every job is done; it must not block (it
 * runs under the request's lock). NULL when no flusher asked took a job
 * (*no_flusher set) or out of memory. Any thread. */
mr_dflush_req *mr_dflush_req_start(const char *filter, bool staged, bool memory,
                                   void (*wake)(void *arg), void *arg, bool *no_flusher);
/* True once every job is done, with the outcome; false meanwhile (out's
 * result is then 1). The asker's thread. */
bool mr_dflush_req_outcome(mr_dflush_req *r, mr_dflush_outcome *out);
/* The asker lets go: wake is not called once this returns. */
void mr_dflush_req_release(mr_dflush_req *r);

#endif
