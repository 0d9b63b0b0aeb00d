/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pool/srv_reset.c - a server connection reset for its next
 * borrower drops its cache of prepared statements (the pool's side, session/
 * pool/pool_side.c, resets it; the statements are session/pool/pool_stmt.c's,
 * which sits above the pool's side and pins through it).
 */
#include "myrewrite/pool/stmt_cache.h"
#include "session/core/session_impl.h"

void ss_pstmt_srv_reset(mr_srv *srv)
{
    if (srv->stmts)
        mr_stmt_cache_clear(srv->stmts);
}
