/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/session_flush.h - FLUSH DELAYED in a client session
 * (delayed/session_flush.c), as the delayed feature's hooks
 * (delayed/session_hooks.c) call it. Private to delayed/; session's worker
 * thread.
 */
#ifndef MYREWRITE_DELAYED_SESSION_FLUSH_H
#define MYREWRITE_DELAYED_SESSION_FLUSH_H

#include "delayed/session_state.h"

/* delayed/session_flush.c: FLUSH DELAYED [tbl] (before the rules), its
 * job's answer (true: sent to the client), and the session's end. */
mr_hook_action ds_flush_statement(mr_fsession *fs, void **st, mr_hook_stmt *stmt);
bool ds_flush_answer(mr_fsession *fs, ds_session *d);
void ds_flush_orphan(ds_session *d);

#endif
