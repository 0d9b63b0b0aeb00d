/*
 * session/session.h - one client connection and its own backend connection.
 *
 * Runs on the worker thread that owns it. A session relays the protocol
 * packet by packet, always knowing whose turn it is and where the current
 * backend response ends (see proto/tracker.h).
 */
#ifndef MYREWRITE_SESSION_H
#define MYREWRITE_SESSION_H

#include <stdint.h>

struct mr_worker;
typedef struct mr_session mr_session;

/* Takes ownership of a connected client socket. */
void mr_session_start(struct mr_worker *w, int fd);
/* Closes the session now if it is between commands (or forced). */
void mr_session_drain(mr_session *s, int force);
/* Next session in the worker's list. */
mr_session *mr_session_next(mr_session *s);

#endif
