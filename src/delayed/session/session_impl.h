/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/session/session_impl.h - what the delayed feature's session hooks share
 * (delayed/session/session_hooks.c, session_prepared.c, session_flush.c): its
 * per-session state (delayed/session/state.c). Private to those files; session's worker thread.
 */
#ifndef MYREWRITE_DELAYED_SESSION_IMPL_H
#define MYREWRITE_DELAYED_SESSION_IMPL_H

#include "myrewrite/delayed/mem.h"
#include "myrewrite/feature/feature.h"

struct ds_stmt;
struct ds_flush;

/* The delayed feature's state in one session (its slot; NULL until used). */
typedef struct ds_session {
    struct ds_stmt *dstmts; /* prepared memory-mode DELAYED statements and point reads */
    struct ds_stmt *dprep;  /* the one being prepared */
    uint32_t dlast;         /* id of the last prepared, if a memory stand-in; else
                               0xffffffff */
    bool wake_flusher;      /* wake the staged flusher when this response ends */
    bool staged;            /* this statement stages rows: an ERR asks the flusher to check
                               its staging tables (one dropped outside the proxy) */
    struct ds_flush *flush; /* FLUSH DELAYED waiting for its job (session_flush.c) */
} ds_session;

/* ds_session.dlast: the last prepare was not a memory stand-in. */
#define LAST_NOT_MEMORY 0xffffffffu

/* delayed/session/state.c: the session's state, made on first use; NULL
 * when out of memory. */
ds_session *ds_state(void **st);

/* delayed/session/state.c: adds a memory batch and answers OK (or the ERR
 * of a full table). */
mr_hook_action ds_memory(mr_fsession *fs, const mr_dmem_batch *b);

/* delayed/session/session_prepared.c: a COM_STMT_PREPARE of a memory-mode
 * statement goes out as its stand-in (false: it cannot be kept: too many
 * parameters, out of memory); its response ended; a statement command on
 * a kept id (ANSWERED: answered here); every id forgotten. */
bool ds_note_prepare(ds_session *d, const char *sql, size_t len, unsigned nparams);
/* ... and of a memory-mode point read with read_pending, which goes out
 * rewritten to read user variables (zero: the SET of zeros for them). */
bool ds_note_read(ds_session *d, const char *sql, size_t len, unsigned nparams, const char *zero,
                  size_t zlen);
void ds_prepared(ds_session *d, bool ok, uint32_t id);
mr_hook_action ds_command(mr_fsession *fs, ds_session *d, uint8_t cmd, const uint8_t *p, size_t n,
                          uint32_t len);
void ds_forget_all(ds_session *d);

/* delayed/session/session_flush.c: FLUSH DELAYED [tbl] (before the rules), its
 * job's answer (true: sent to the client), and the session's end. */
mr_hook_action ds_flush_statement(mr_fsession *fs, void **st, mr_hook_stmt *stmt);
bool ds_flush_answer(mr_fsession *fs, ds_session *d);
void ds_flush_orphan(ds_session *d);

#endif
