/*
 * session_prepared.c - the server-side prepared statements whose text the
 * front end acted on. A prepared statement meets the rules once, at
 * COM_STMT_PREPARE; what that decided must be repeated at each
 * COM_STMT_EXECUTE, which the front end never sees: claim_read_committed's
 * prelude goes out first, and the page or the staging rows it sends are
 * counted. The notes live until COM_STMT_CLOSE, or until
 * COM_RESET_CONNECTION / COM_CHANGE_USER drop every prepared statement on
 * the server too. Statements nothing acted on are not kept.
 *
 * Runs on the session's worker thread.
 */
#include <stdlib.h>

#include "myrewrite/log.h"
#include "session_impl.h"

static bool worth_keeping(const ss_pnote *n)
{
    return n->claim || n->page || n->rows;
}

void ss_prepared_done(mr_session *s, bool ok, uint32_t id)
{
    ss_pnote note = s->pnote_next;
    s->pnote_next = (ss_pnote){0};
    if (!ok || !worth_keeping(&note))
        return;
    if (s->npnotes == s->pnotes_cap) {
        size_t cap = s->pnotes_cap ? s->pnotes_cap * 2 : 8;
        ss_pnote *grown = realloc(s->pnotes, cap * sizeof *grown);
        if (!grown) {
            mr_warn(s->id, "out of memory: prepared statement %u runs without its claim prelude "
                    "and counts", id);
            return;
        }
        s->pnotes = grown;
        s->pnotes_cap = cap;
    }
    note.id = id;
    s->pnotes[s->npnotes++] = note;
}

static ss_pnote *find(mr_session *s, uint32_t id)
{
    for (size_t i = 0; i < s->npnotes; i++)
        if (s->pnotes[i].id == id)
            return &s->pnotes[i];
    return NULL;
}

void ss_prepared_command(mr_session *s, uint8_t cmd, const uint8_t *p, size_t n)
{
    if (!s->npnotes || (cmd != MR_COM_STMT_EXECUTE && cmd != MR_COM_STMT_CLOSE) || n < 5)
        return;
    uint32_t id = (uint32_t)p[1] | (uint32_t)p[2] << 8 | (uint32_t)p[3] << 16 |
                  (uint32_t)p[4] << 24;
    ss_pnote *note = find(s, id);
    if (!note)
        return;
    if (cmd == MR_COM_STMT_CLOSE) {
        *note = s->pnotes[--s->npnotes];
        return;
    }
    if (note->claim)
        ss_prelude_read_committed(s);
    if (note->page)
        ss_count_page(s->w, note->page_rule, false);
    if (note->rows)
        ss_count_staged(s->w, note->staged_rule, note->staged_table, note->rows);
}

void ss_prepared_forget_all(mr_session *s)
{
    free(s->pnotes);
    s->pnotes = NULL;
    s->npnotes = s->pnotes_cap = 0;
    s->pnote_next = (ss_pnote){0};
}
