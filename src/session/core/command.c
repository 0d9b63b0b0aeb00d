/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/core/command.c - what the session sends the backend in place of
 * the client's bytes, or of its own: a command built with the client's query
 * attributes (or an empty block), sent instead of the client's, and the
 * lexer mode its text is read in. Below the statement side, the pool's side
 * and the preludes, which all send such commands.
 */
#include <string.h>

#include "myrewrite/proto/query_attrs.h"
#include "myrewrite/sql/lexer.h"
#include "session/core/session_impl.h"

void ss_command_build(const mr_session *s, mr_buf *out, uint8_t cmd, const void *text, size_t len,
                      bool own)
{
    if (cmd != MR_COM_QUERY || !(s->caps & MR_CAP_QUERY_ATTRIBUTES)) {
        mr_command_build(out, cmd, text, len);
        return;
    }
    if (own || !s->qattrs)
        mr_command_build2(out, cmd, MR_QUERY_ATTRS_NONE, MR_QUERY_ATTRS_NONE_LEN, text, len);
    else
        mr_command_build2(out, cmd, s->qattrs, s->qattrs_len, text, len);
}

unsigned ss_lex_flags(const mr_session *s)
{
    unsigned f =
        (s->tracker.status & MR_STATUS_NO_BACKSLASH_ESCAPES) ? SQL_LEX_NO_BACKSLASH_ESCAPES : 0;
    const mr_sst_value *mode = &s->track.sql_mode_v;
    if (mode->known && mr_sql_mode_has(s->track.sql_mode, mode->len, "ANSI_QUOTES"))
        f |= SQL_LEX_ANSI_QUOTES;       /* the server said so; the other reading is still read */
    const char *cs = s->charset_unsafe; /* MR_CHARSET_UNKNOWN has no rule: the byte reading */
    return cs ? f | sql_lex_mb_of(cs, strlen(cs)) : f;
}

bool ss_send_text(mr_session *s, uint8_t cmd, const uint8_t *text, size_t len)
{
    mr_buf out;
    mr_buf_init(&out);
    ss_command_build(s, &out, cmd, text, len, false);
    if (out.failed) {
        mr_buf_free(&out);
        ss_send_err(s, 1, MR_ER_OUT_OF_MEMORY, "HY001", "myrewrite is out of memory");
        ss_close_after_flush(s, MR_CLOSE_MALFORMED, "out of memory building a rewrite");
        return false;
    }
    mr_conn_write(s->backend, out.data, out.len);
    mr_buf_free(&out);
    s->from_client.discard = true; /* the original bytes are dropped as they come */
    return true;
}
