/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/listen_guard.h - what every listener of the proxy (clients, admin
 * console, HTTP) does when accept fails or when it must turn clients away.
 *
 * libevent's listener calls its error callback and tries again at once, so
 * a process out of descriptors (EMFILE, ENFILE) would spin on accept and
 * log each try. The guard instead:
 *   - refuses the clients waiting in the backlog: it closes a descriptor it
 *     keeps in reserve (/dev/null), accepts, sends the listener's refusal
 *     (an ERR packet, an HTTP 503), closes, and takes the reserve again, so
 *     a client sees an answer instead of a hang;
 *   - pauses the listener on a timer, 50 ms doubling to 1 s, while accept
 *     keeps failing, and resumes it; the connections already open are
 *     served meanwhile;
 *   - logs the first failure, then at most one line every 10 s with the
 *     count of refused clients and failed accepts, and one line when an
 *     accept succeeds again.
 * It can also refuse every new client with the same answer while its owner
 * is at a connection cap (mr_listen_guard_set_full): a second listener on
 * the same socket that only refuses, so the owner's accept path (evhttp's,
 * which gives no way to refuse) is not touched.
 *
 * One guard per listening socket, used only on the thread that runs the
 * listener's event_base. The listener stays its owner's.
 */
#ifndef MYREWRITE_LISTEN_GUARD_H
#define MYREWRITE_LISTEN_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/base/counters.h"

struct event_base;
struct evconnlistener;
typedef struct mr_listen_guard mr_listen_guard;

/* A guard for `el` (on `base`); `name` is what its log lines start with,
 * `refusal` the bytes a refused client gets (copied; at most 512). NULL
 * when out of memory. The owner's accept-error callback must call
 * mr_listen_guard_failed first thing (errno is read there). */
mr_listen_guard *mr_listen_guard_new(struct event_base *base, struct evconnlistener *el,
                                     const char *name, const void *refusal, size_t refusal_len);
/* Frees the guard (not the listener). */
void mr_listen_guard_free(mr_listen_guard *g);
/* accept failed (errno says why): refuse what waits, pause, log if due. */
void mr_listen_guard_failed(mr_listen_guard *g);
/* A client was accepted: ends a failure episode (logged) and the back-off. */
void mr_listen_guard_accepted(mr_listen_guard *g);
/* full: every new client gets the refusal and is closed at once, until
 * called again with false. False when the refusing listener could not be
 * made (then new clients are not accepted at all while full). */
bool mr_listen_guard_set_full(mr_listen_guard *g, bool full);
/* Every listener's together, for /metrics; relaxed atomics, any thread. */
typedef struct mr_listen_stats {
    mr_counter accept_failures; /* accept calls that failed (EMFILE, ENFILE, ...) */
    mr_counter refused;         /* clients refused because of them, or at a cap (HTTP) */
    mr_counter pauses;          /* pauses of a listener after a failed accept */
} mr_listen_stats;
const mr_listen_stats *mr_listen_stats_get(void);

/* Sends the refusal on a client socket just accepted and closes it (what
 * the other refusals of a listener may share). */
void mr_listen_refuse_fd(int fd, const void *refusal, size_t len);
/* The same with the refusal built into b (a build that ran out of memory
 * closes the socket without a word); frees b either way. */
void mr_listen_refuse_buf(int fd, mr_buf *b);

#endif
