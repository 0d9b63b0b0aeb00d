/*
 * session/keyset.c - what a session does for keyset pagination: counts the
 * rules' keyset decisions, hands the response of a watched page to its
 * watch (whole column-definition and row packets), and tells the bookmark
 * store about writes passing through, so bookmarks of a table written
 * since are dropped.
 *
 * Writes are recognized by mr_keyset_writes_scan (paginate/keyset_writes.c);
 * statements the front end does not read whole may write anything: they
 * bump every table. A prepared write bumps its tables at every
 * COM_STMT_EXECUTE of the session, since the proxy does not map statement
 * ids to texts. Each write is noted when sent and again when it completes.
 *
 * Session's worker thread; owns the session's ss_keyset.
 */
#include <stdlib.h>
#include <string.h>

#include "myrewrite/paginate/bookmarks.h"
#include "myrewrite/paginate/keyset.h"
#include "myrewrite/stats/rule_stats.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/sql/lexer.h"
#include "session/session_impl.h"

struct ss_keyset {
    mr_keyset_watch watch;
    mr_keyset_writes prepared;  /* tables of every write this session prepared */
    mr_keyset_writes command;   /* tables the command in flight writes: noted again at its end */
    uint8_t *packet;  /* MR_PKT_HEADER + MR_KEYSET_PACKET_MAX bytes, once a page is watched */
};

static ss_keyset *state(mr_session *s)
{
    if (!s->keyset)
        s->keyset = calloc(1, sizeof *s->keyset);
    return s->keyset; /* NULL when out of memory: keyset then simply stays off */
}

void ss_keyset_free(mr_session *s)
{
    if (!s->keyset)
        return;
    mr_keyset_watch_free(&s->keyset->watch);
    free(s->keyset->packet);
    free(s->keyset);
    s->keyset = NULL;
}

/* ---- writes ---------------------------------------------------------------------- */

static void merge(mr_keyset_writes *to, const mr_keyset_writes *from)
{
    to->all |= from->all;
    for (unsigned i = 0; i < from->n; i++)
        mr_keyset_writes_add(to, from->slot[i]);
}

static void note(const mr_keyset_writes *wr)
{
    if (wr->all)
        mr_bookmarks_note_write_all();
    for (unsigned i = 0; i < wr->n && !wr->all; i++)
        mr_bookmarks_note_write(wr->slot[i]);
}

/* Does the text start with SELECT (comments aside)? */
static bool starts_with_select(const char *sql, size_t len)
{
    sql_lexer lx;
    sql_token t;
    sql_lexer_init(&lx, sql, len, SQL_LEX_SKIP_COMMENTS);
    while (sql_lexer_next(&lx, &t))
        if (t.kind != SQL_TOK_COMMENT)
            return t.kind == SQL_TOK_WORD && t.id == SQL_KW_SELECT;
    return false;
}

/* A command starts: a prepared write executes, or a statement too large
 * for the front end goes by unread. */
void ss_keyset_command(mr_session *s, uint8_t cmd, const uint8_t *p, size_t n, uint32_t len)
{
    ss_keyset *k = s->keyset;
    if (k)
        memset(&k->command, 0, sizeof k->command);
    if (!mr_bookmarks_armed() || !(k = state(s)))
        return;
    if (cmd == MR_COM_STMT_EXECUTE && (k->prepared.n || k->prepared.all))
        merge(&k->command, &k->prepared);
    /* only the head was read: a write's names may lie beyond it */
    if (cmd == MR_COM_QUERY && n < len && !starts_with_select((const char *)p + 1, n - 1))
        k->command.all = true;
    if (cmd == MR_COM_STMT_PREPARE && n < len && !starts_with_select((const char *)p + 1, n - 1))
        k->prepared.all = true;
    note(&k->command);
}

/* ---- statements ------------------------------------------------------------------------ */

static void count(mr_session *s, const mr_keyset_note *no)
{
    if (no->outcome != MR_KEYSET_HIT && no->outcome != MR_KEYSET_MISS)
        return;
    bool hit = no->outcome == MR_KEYSET_HIT;
    mr_stat_add(hit ? &s->w->stats.paginate_keyset_hits : &s->w->stats.paginate_keyset_misses, 1);
    mr_rule_stats *e = no->rule ? mr_rule_stats_of(no->rule) : NULL;
    if (e)
        atomic_fetch_add_explicit(hit ? &e->keyset_hits : &e->keyset_misses, 1,
                                  memory_order_relaxed);
}

void ss_keyset_statement(mr_session *s, uint8_t cmd, const char *sql, size_t len,
                         unsigned lex_flags, const mr_match_result *res)
{
    count(s, &res->keyset);
    bool watch = res->keyset.watch && cmd == MR_COM_QUERY;
    if (watch)
        mr_bookmarks_arm();
    ss_keyset *k = mr_bookmarks_armed() ? state(s) : NULL;
    if (!k)
        return;
    mr_keyset_writes wr = {0};
    mr_keyset_writes_scan(sql, len, lex_flags, &wr);
    if (cmd == MR_COM_STMT_PREPARE) {
        merge(&k->prepared, &wr); /* written at each execute */
    } else {
        merge(&k->command, &wr);
        note(&wr);
    }
    if (watch)
        mr_keyset_watch_begin(&k->watch, &res->keyset, &mr_bookmarks_store);
    else
        k->watch.active = false;
}

/* ---- the response ------------------------------------------------------------------------- */

bool ss_keyset_wants(const mr_session *s)
{
    return s->keyset && mr_keyset_watch_wants(&s->keyset->watch, (int)s->tracker.state);
}

bool ss_keyset_packet(mr_session *s, struct evbuffer *in, const struct evbuffer_ptr *pos,
                      uint32_t len, size_t avail)
{
    ss_keyset *k = s->keyset;
    int ts = (int)s->tracker.state;
    if (len > MR_KEYSET_PACKET_MAX) {
        mr_keyset_watch_packet(&k->watch, ts, NULL, 0);
        return true;
    }
    size_t total = MR_PKT_HEADER + (size_t)len;
    if (avail < total)
        return false; /* the rest of the packet comes with a later read */
    if (!k->packet && !(k->packet = malloc(MR_PKT_HEADER + MR_KEYSET_PACKET_MAX))) {
        mr_keyset_watch_packet(&k->watch, ts, NULL, 0); /* out of memory: no bookmark */
        return true;
    }
    struct evbuffer_ptr at = *pos;
    evbuffer_copyout_from(in, &at, k->packet, total);
    mr_keyset_watch_packet(&k->watch, ts, k->packet + MR_PKT_HEADER, len);
    return true;
}

void ss_keyset_response_done(mr_session *s)
{
    ss_keyset *k = s->keyset;
    if (!k)
        return;
    mr_keyset_watch_end(&k->watch, !s->tracker.ended_with_err, mr_bookmarks_now_ms());
    note(&k->command); /* the write is done: a page read meanwhile may have missed it */
    memset(&k->command, 0, sizeof k->command);
}
