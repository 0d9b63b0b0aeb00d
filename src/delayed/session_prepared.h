/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/session_prepared.h - prepared memory-mode statements in a client
 * session (delayed/session_prepared.c), as the delayed feature's hooks
 * (delayed/session_hooks.c) call them. Private to delayed/; session's
 * worker thread.
 */
#ifndef MYREWRITE_DELAYED_SESSION_PREPARED_H
#define MYREWRITE_DELAYED_SESSION_PREPARED_H

#include "delayed/session_state.h"

/* delayed/session_prepared.c: a COM_STMT_PREPARE of a memory-mode
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

#endif
