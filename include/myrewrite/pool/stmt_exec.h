/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/stmt_exec.h - what a server connection gets for a client's execute
 * of a statement it has prepared: the long data kept, then the execute with
 * the connection's statement id and, when the execute binds no parameter
 * types and that server statement has not got the client's last ones,
 * those put in (pool/stmt_map.h, pool/stmt_cache.h, proto/stmt_rewrite.h).
 *
 * Pure, one thread: the session's, while it has the connection.
 */
#ifndef MYREWRITE_POOL_STMT_EXEC_H
#define MYREWRITE_POOL_STMT_EXEC_H

#include "myrewrite/base/buf.h"
#include "myrewrite/pool/stmt_cache.h"
#include "myrewrite/pool/stmt_map.h"

/* Appends to out what goes to the connection whose server statement for
 * st is e, for the client's whole execute p[0..n) in the given form
 * (mr_exec_form). Then st and e keep the types the server statement now
 * has, and st's long data is gone (the server drops it at an execute).
 * NULL, else what is wrong (static text): out is as it was (but failed,
 * when memory ran out), st and e unchanged; the caller answers the client
 * an ERR and sends nothing. The long data must be re-sendable
 * (mr_stmt_long_data_resendable) or already on e's connection (then
 * dropped from st, mr_stmt_long_data_drop). */
const char *mr_stmt_exec_for(mr_buf *out, mr_stmt_map *m, mr_stmt *st, mr_stmt_cached *e,
                             const uint8_t *p, size_t n, unsigned form);
/* The same for a COM_STMT_BULK_EXECUTE (MariaDB). */
const char *mr_stmt_bulk_for(mr_buf *out, mr_stmt_map *m, mr_stmt *st, mr_stmt_cached *e,
                             const uint8_t *p, size_t n);

#endif
