/*
 * session_keyset.c - what a session does for keyset pagination: counts the
 * rules' keyset decisions, hands the response of a watched page to its
 * watch (whole column-definition and row packets), and tells the bookmark
 * store about writes passing through, so bookmarks of a table written
 * since are dropped.
 *
 * Writes are recognized by the statement's first word (INSERT, UPDATE,
 * DELETE, REPLACE, LOAD, TRUNCATE, ALTER, DROP, RENAME, CREATE): every name
 * in such a statement counts as a written table (a few innocent slots are
 * bumped too: only more misses, never a stale seek). CALL, EXECUTE and
 * statements the front end does not read whole may write anything: they
 * bump every table. A prepared write bumps its tables at every
 * COM_STMT_EXECUTE of the session, since the proxy does not map statement
 * ids to texts. Each write is noted when sent and again when it completes.
 *
 * Session's worker thread; owns the session's ss_keyset.
 */
#include <stdlib.h>
#include <string.h>

#include "myrewrite/bookmarks.h"
#include "myrewrite/paginate_keyset.h"
#include "myrewrite/rules.h"
#include "myrewrite/sql_lexer.h"
#include "session_impl.h"

#define WRITE_SLOTS 32

typedef struct writes {
    uint64_t slot[WRITE_SLOTS];
    unsigned n;
    bool all;
} writes;

struct ss_keyset {
    mr_keyset_watch watch;
    writes prepared;  /* tables of every write this session prepared */
    writes command;   /* tables the command in flight writes: noted again at its end */
    uint8_t packet[MR_PKT_HEADER + MR_KEYSET_PACKET_MAX];
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
    free(s->keyset);
    s->keyset = NULL;
}

/* ---- writes ---------------------------------------------------------------------- */

static void add_slot(writes *wr, uint64_t h)
{
    for (unsigned i = 0; i < wr->n; i++)
        if (wr->slot[i] == h)
            return;
    if (wr->n == WRITE_SLOTS)
        wr->all = true;
    else
        wr->slot[wr->n++] = h;
}

static void merge(writes *to, const writes *from)
{
    to->all |= from->all;
    for (unsigned i = 0; i < from->n; i++)
        add_slot(to, from->slot[i]);
}

static void note(const writes *wr)
{
    if (wr->all)
        mr_bookmarks_note_write_all();
    for (unsigned i = 0; i < wr->n && !wr->all; i++)
        mr_bookmarks_note_write(wr->slot[i]);
}

static bool writes_named_tables(int id)
{
    switch (id) {
    case SQL_KW_INSERT: case SQL_KW_UPDATE: case SQL_KW_DELETE: case SQL_KW_REPLACE:
    case SQL_KW_LOAD: case SQL_KW_TRUNCATE: case SQL_KW_ALTER: case SQL_KW_DROP:
    case SQL_KW_RENAME: case SQL_KW_CREATE:
        return true;
    default:
        return false;
    }
}

static bool writes_anything(int id) { return id == SQL_KW_CALL || id == SQL_KW_EXECUTE; }

static void add_name(writes *wr, const char *sql, const sql_token *t)
{
    size_t off = t->off, n = t->len;
    if (t->kind == SQL_TOK_QIDENT && n >= 2) {
        off++;
        n -= 2;
    }
    add_slot(wr, mr_keyset_table_hash(sql + off, n));
}

/* The tables each statement of the text may write (see the top). */
static void scan_writes(const char *sql, size_t len, unsigned lex_flags, writes *wr)
{
    sql_lexer lx;
    sql_token t;
    bool at_start = true, writing = false;
    sql_lexer_init(&lx, sql, len, lex_flags | SQL_LEX_SKIP_COMMENTS);
    while (sql_lexer_next(&lx, &t) && !wr->all) {
        if (t.kind == SQL_TOK_COMMENT)
            continue;
        if (t.kind == SQL_TOK_SEMI) {
            at_start = true;
            writing = false;
        } else if (t.kind == SQL_TOK_EXEC_COMMENT || t.kind == SQL_TOK_ERROR) {
            wr->all |= at_start || writing; /* its body is not read */
        } else if (at_start) {
            at_start = false;
            writing = t.kind == SQL_TOK_WORD && writes_named_tables(t.id);
            wr->all |= t.kind == SQL_TOK_WORD && writes_anything(t.id);
        } else if (writing && (t.kind == SQL_TOK_WORD || t.kind == SQL_TOK_QIDENT)) {
            add_name(wr, sql, &t);
        }
    }
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
    if (no->outcome == MR_KEYSET_HIT)
        mr_stat_add(&s->w->stats.paginate_keyset_hits, 1);
    else if (no->outcome == MR_KEYSET_MISS)
        mr_stat_add(&s->w->stats.paginate_keyset_misses, 1);
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
    writes wr = {0};
    scan_writes(sql, len, lex_flags, &wr);
    if (cmd == MR_COM_STMT_PREPARE) {
        merge(&k->prepared, &wr); /* written at each execute */
    } else {
        merge(&k->command, &wr);
        note(&wr);
    }
    if (watch)
        mr_keyset_watch_begin(&k->watch, &res->keyset);
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
