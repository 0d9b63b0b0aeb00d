/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pool/prelude.c - a statement the proxy sends on the session's
 * backend connection ahead of the client's own, whose answer the client
 * never sees: a feature's (the mr_fsession_ops prelude op,
 * feature/feature.h: a claim's SET TRANSACTION ISOLATION LEVEL READ
 * COMMITTED, the SET of the user variables a prepared memory-mode point
 * read adds before each of its COM_STMT_EXECUTEs), or the pool's (below).
 *
 * With pool = transaction, a COM_STMT_PREPARE is a prelude too: a statement
 * of the session prepared on a connection that lacks it
 * (session/pool/pool_stmt.c). Its answer is a whole prepare response
 * (prepare-OK, parameter and column definitions, EOFs), read to its end.
 *
 * Runs on the session's worker thread. A prelude goes out right before
 * the client's command, so its answer (one OK or ERR packet, or a prepare
 * response) comes ahead of the response the backend sends; ss_pump_backend
 * hands each to session/pool/prelude_take.c first (above the pool's side
 * and its prepared statements, which the answers inform; this file, which
 * they send with, is below them).
 */
#include <string.h>

#include "myrewrite/base/log.h"
#include "myrewrite/proto/stmt_rewrite.h"
#include "session/core/session_impl.h"

/* Sends text ahead of the command in flight; what it is for goes into the
 * log should the server refuse it. */
bool ss_prelude_send(mr_session *s, const char *text, size_t len, const char *what)
{
    if (s->prelude_pending >= SS_PRELUDES_MAX)
        return false;
    mr_buf out;
    mr_buf_init(&out);
    ss_command_build(s, &out, MR_COM_QUERY, text, len, true);
    bool sent = !out.failed;
    if (sent) {
        mr_conn_write(s->backend, out.data, out.len);
        mr_conn_z_command(s->backend); /* the statement after it is a command of its own */
        s->prelude_prepare[s->prelude_pending] = false;
        s->prelude_what[s->prelude_pending++] = what;
    }
    mr_buf_free(&out);
    return sent;
}

bool ss_prelude_command(mr_session *s, uint8_t cmd, const char *data, size_t len, const char *what)
{
    if (s->prelude_pending >= SS_PRELUDES_MAX)
        return false;
    uint8_t hdr[MR_PKT_HEADER + 1] = {(uint8_t)(len + 1), (uint8_t)((len + 1) >> 8),
                                      (uint8_t)((len + 1) >> 16), 0, cmd};
    mr_conn_write(s->backend, hdr, sizeof hdr);
    if (len)
        mr_conn_write(s->backend, data, len);
    mr_conn_z_command(s->backend);
    s->prelude_prepare[s->prelude_pending] = false;
    s->prelude_what[s->prelude_pending++] = what;
    return true;
}

bool ss_prelude_prepare(mr_session *s, const char *text, size_t len)
{
    if (s->prelude_pending >= SS_PRELUDES_MAX)
        return false;
    mr_buf out;
    mr_buf_init(&out);
    mr_stmt_prepare_build(&out, text, len);
    bool sent = !out.failed;
    if (sent) {
        mr_conn_write(s->backend, out.data, out.len);
        mr_conn_z_command(s->backend);
        s->prelude_prepare[s->prelude_pending] = true;
        s->prelude_what[s->prelude_pending++] = "COM_STMT_PREPARE (a statement prepared again)";
    }
    mr_buf_free(&out);
    return sent;
}
