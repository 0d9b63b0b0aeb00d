/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/core/signal.c - messages to a worker through its hand-off pipe
 * (see session/worker.h): a client's socket, or an MR_WORKER_MSG_* that
 * makes it look at its sessions. Any thread may send one. Below the rest
 * of the session: the files that wake their own worker (a background
 * answer, a parked session, a KILL) use it, and the worker's loop that
 * reads the pipe (session/pump/worker.c) sits on top.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "myrewrite/base/log.h"
#include "myrewrite/session/worker.h"

/* Writes one int; a pipe write of <= PIPE_BUF bytes is atomic, so several
 * writers never interleave. */
static bool send_msg(mr_worker *w, int msg)
{
    ssize_t n;
    do {
        n = write(w->pipe_wr, &msg, sizeof(msg));
    } while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof(msg);
}

bool mr_worker_hand_off(mr_worker *w, int fd) { return send_msg(w, fd); }

bool mr_worker_signal(mr_worker *w, int msg)
{
    if (send_msg(w, msg))
        return true;
    mr_error(0, "cannot signal worker %u: %s", w->id, strerror(errno));
    return false;
}

void mr_worker_wake_bg(void *worker)
{
    mr_worker *w = worker;
    if (!atomic_exchange(&w->bg_signaled, true) && !mr_worker_signal(w, MR_WORKER_MSG_BG))
        atomic_store(&w->bg_signaled, false); /* the next answer tries again */
}
