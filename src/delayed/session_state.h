/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/session_state.h - the delayed feature's state in one session, and
 * the answer to a memory-mode statement: what its session hooks
 * (delayed/session_hooks.c), prepared statements (session_prepared.c) and
 * FLUSH DELAYED (session_flush.c) share. Private to delayed/; session's
 * worker thread.
 */
#ifndef MYREWRITE_DELAYED_SESSION_STATE_H
#define MYREWRITE_DELAYED_SESSION_STATE_H

#include "myrewrite/delayed/mem.h"
#include "myrewrite/feature/feature.h"

struct ds_stmt;
struct ds_flush;

/* ds_session.dlast when the last prepare was not a memory stand-in. */
#define DS_LAST_NOT_MEMORY 0xffffffffu

/* The delayed feature's state in one session (its slot; NULL until used). */
typedef struct ds_session {
    struct ds_stmt *dstmts; /* prepared memory-mode DELAYED statements and point reads */
    struct ds_stmt *dprep;  /* the one being prepared */
    uint32_t dlast;         /* id of the last prepared, if a memory stand-in; else
                               DS_LAST_NOT_MEMORY */
    bool wake_flusher;      /* wake the staged flusher when this response ends */
    bool staged;            /* this statement stages rows: an ERR asks the flusher to check
                               its staging tables (one dropped outside the proxy) */
    struct ds_flush *flush; /* FLUSH DELAYED waiting for its job (session_flush.c) */
} ds_session;

/* The session's state, made on first use; NULL when out of memory. */
ds_session *ds_state(void **st);

/* Adds a memory batch and answers OK (or the ERR of a full table). */
mr_hook_action ds_memory(mr_fsession *fs, const mr_dmem_batch *b);

#endif
