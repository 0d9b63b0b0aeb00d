/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pool/own_values.c - with `pool = transaction`, the values a
 * statement reads of its connection (CONNECTION_ID(), ROW_COUNT(),
 * FOUND_ROWS()) put into its text as the session's own (pool/hints.c finds
 * them), so another session's use of the connection never shows. Above
 * pool_stmt.c: a prepare sent with the values in is prepared again as sent.
 */
#include "myrewrite/pool/hints.h"
#include "session/core/session_impl.h"

/* A statement run on a connection borrowed for it reads the session's
 * values, not what the connection's last session left; one on a connection
 * the session kept (pinned, a transaction) reads the server's, which are
 * its own. A prepare's are read at each execute: never put in (such a
 * prepare pins, pool_side.c). */
static void own_of(const mr_session *s, uint8_t cmd, mr_pool_own *own)
{
    bool fresh = cmd == MR_COM_QUERY && s->srv && s->srv_fresh;
    *own = (mr_pool_own){.connection_id = s->client_thread_id,
                         .row_count_known = fresh && s->row_count_known,
                         .row_count = s->row_count,
                         .found_rows_known = fresh && s->found_rows_known,
                         .found_rows = s->found_rows};
}

stmt_verdict ss_pool_own_id(mr_session *s, uint8_t cmd, const char *sql, size_t len,
                            unsigned lex_flags)
{
    if (!s->pool_view)
        return STMT_RELAY;
    mr_buf b;
    mr_buf_init(&b);
    stmt_verdict v = STMT_RELAY;
    mr_pool_own own;
    own_of(s, cmd, &own);
    if (mr_pool_own_values(sql, len, lex_flags, &own, &b)) {
        if (b.failed || !ss_send_text(s, cmd, b.data, b.len))
            v = STMT_CLOSED;
        else if (cmd == MR_COM_STMT_PREPARE && s->pstmt)   /* prepared again as sent: the */
            ss_pstmt_text(s, (const char *)b.data, b.len); /* id is this session's alone */
    }
    if (b.failed && ALIVE(s)) {
        ss_send_err(s, 1, MR_ER_OUT_OF_MEMORY, "HY001", "myrewrite is out of memory");
        ss_close_after_flush(s, MR_CLOSE_MALFORMED, "out of memory");
    }
    mr_buf_free(&b);
    return v;
}

bool ss_pool_own_text(mr_session *s, uint8_t cmd, const uint8_t *text, size_t len, mr_buf *out)
{
    mr_pool_own own;
    own_of(s, cmd, &own);
    return mr_pool_own_values((const char *)text, len, ss_lex_flags(s), &own, out) && !out->failed;
}
