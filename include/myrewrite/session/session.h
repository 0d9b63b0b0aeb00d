/* SPDX-License-Identifier: Apache-2.0 */
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
/* The schema cache loaded a table: a session parked waiting for the
 * background (a DELAYED statement waiting for its table's key,
 * session/stmt/park_stmt.c) is retried (session/core/park.c). Worker thread. */
void mr_session_schema_loaded(mr_session *s);
/* The schema cache's hook (mr_schema_cache_on_load, arg: the mr_proxy):
 * signals every worker when any session is parked. Loader thread. */
void mr_session_wake_parked(void *proxy);
/* A background job of a feature answered (MR_WORKER_MSG_BG): a session
 * waiting for one gets its answer and goes on (session/stmt/hooks.c). Worker
 * thread. */
void mr_session_bg_answered(mr_session *s);
/* Another session's KILL concerns s (MR_WORKER_MSG_KILL): it ends, or gives
 * back the server connection a KILL held (session/pool/pool_kill.c). Worker
 * thread. */
void mr_session_kill_check(mr_session *s);

#endif
