/*
 * worker.h - worker threads, one libevent event_base each.
 *
 * The listener (main thread) hands accepted sockets to workers round-robin
 * through each worker's pipe; from then on the worker owns the connection
 * and everything about it. Workers never block: no DNS, no file I/O, no
 * libmysqlclient calls.
 */
#ifndef MYREWRITE_WORKER_H
#define MYREWRITE_WORKER_H

#include <pthread.h>
#include <stdbool.h>

#include "myrewrite/proxy.h"
#include "myrewrite/stats.h"

struct event_base;
struct event;
struct mr_session;

typedef struct mr_worker {
    unsigned id;
    mr_proxy *proxy;            /* shared runtime */
    pthread_t thread;
    struct event_base *base;    /* owned; only this worker's thread runs it */
    int pipe_rd, pipe_wr;       /* hand-off pipe: listener writes, worker reads */
    struct event *pipe_ev;
    struct mr_session *sessions; /* intrusive list of live sessions; worker thread only */
    unsigned nsessions;
    bool draining;              /* shutdown: close sessions as they go idle */
    mr_stats stats;             /* written by this worker only */
} mr_worker;

/* Control messages on the hand-off pipe besides socket descriptors. */
#define MR_WORKER_MSG_DRAIN (-1)
#define MR_WORKER_MSG_STOP (-2)

bool mr_worker_start(mr_worker *w, mr_proxy *p, unsigned id);
/* Hands a connected client socket to the worker (called by the listener). */
bool mr_worker_hand_off(mr_worker *w, int fd);
/* Sends a control message; the worker acts on it in its own thread. */
void mr_worker_signal(mr_worker *w, int msg);
void mr_worker_join(mr_worker *w);
/* Called by a session as it ends; stops the loop once drained. */
void mr_worker_session_ended(mr_worker *w);

#endif
