/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/session_hooks.c - the paginate feature's hooks in a client
 * session (feature/feature.h): what a session does for deep pages. Counts
 * the pages its rules sent as deferred joins or refused (a prepared page
 * at each execute) and their keyset decisions, hands the response of a
 * watched page to its watch (whole column-definition and row packets), and
 * tells the bookmark store about writes passing through, so bookmarks of a
 * table written since are dropped.
 *
 * Bookmarks are per account (the listing's hash, paginate/keyset_sql.c)
 * and never cross a session that may have temporary tables: its names may
 * resolve to its own tables, whose keys would seek another session's pages
 * (and the other way round). Once a statement of the session may have
 * created one (mr_keyset_temp_scan, or a statement too large to read), the
 * session neither uses nor records bookmarks until COM_RESET_CONNECTION or
 * COM_CHANGE_USER drops its temporary tables: its ports give the statement
 * side no store, so its pages go as deferred joins.
 *
 * Writes are recognized by mr_keyset_writes_scan (paginate/keyset_writes.c);
 * statements the front end does not read whole may write anything: they
 * bump every table. A prepared write bumps its tables at every
 * COM_STMT_EXECUTE of the session, since the proxy does not map statement
 * ids to texts. Each write is noted when sent and again when it completes.
 *
 * Session's worker thread; owns the session's keyset state (its slot).
 */
#include <stdlib.h>
#include <string.h>

#include "myrewrite/paginate/session_hooks.h"

#include "myrewrite/base/log.h"
#include "myrewrite/paginate/bookmarks.h"
#include "myrewrite/paginate/counts.h"
#include "myrewrite/paginate/keyset.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/proto/query_attrs.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/sql/lexer.h"
#include "myrewrite/stats/rule_stats.h"

_Static_assert(MR_KEYSET_PACKET_MAX == MR_FEATURE_PACKET_MAX,
               "the session hands the watch packets up to the watch's own limit");

typedef struct pg_keyset {
    mr_keyset_watch watch;
    mr_keyset_writes prepared; /* tables of every write this session prepared */
    mr_keyset_writes command;  /* tables the command in flight writes: noted again at its end */
    bool temp_tables;          /* the session may have temporary tables: no bookmarks */
} pg_keyset;

static pg_keyset *state(void **st)
{
    if (!*st)
        *st = calloc(1, sizeof(pg_keyset));
    return *st; /* NULL when out of memory: keyset then simply stays off */
}

static void session_end(mr_fsession *fs, void **st)
{
    (void)fs;
    pg_keyset *k = *st;
    if (!k)
        return;
    mr_keyset_watch_free(&k->watch);
    free(k);
    *st = NULL;
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

/* The head of a COM_QUERY read (p: n bytes from its command byte): its
 * text starts with SELECT. Under query attributes the text starts after
 * them; a block that the head does not hold whole counts as no SELECT. */
static bool query_head_selects(const mr_fsession *fs, const uint8_t *p, size_t n)
{
    mr_query_attrs a = {0};
    const char *why;
    if (fs->query_attrs && mr_query_attrs_read(p + 1, n - 1, &a, &why) != MR_OK)
        return false;
    return starts_with_select((const char *)p + 1 + a.len, n - 1 - a.len);
}

/* A command starts: a prepared write executes, or a statement too large
 * for the front end goes by unread. */
static mr_hook_action command(mr_fsession *fs, void **st, uint8_t cmd, const uint8_t *p, size_t n,
                              uint32_t len)
{
    pg_keyset *k = *st;
    if (k)
        memset(&k->command, 0, sizeof k->command);
    /* a text not read whole may create a temporary table */
    if (n < len && (cmd == MR_COM_QUERY || cmd == MR_COM_STMT_PREPARE) && (k = state(st)))
        k->temp_tables = true;
    if (!mr_bookmarks_armed() || !(k = state(st)))
        return MR_HOOK_PASS;
    if ((cmd == MR_COM_STMT_EXECUTE || cmd == MR_COM_STMT_BULK_EXECUTE) &&
        (k->prepared.n || k->prepared.all))
        merge(&k->command, &k->prepared);
    /* only the head was read: a write's names may lie beyond it */
    if (cmd == MR_COM_QUERY && n < len && !query_head_selects(fs, p, n))
        k->command.all = true;
    if (cmd == MR_COM_STMT_PREPARE && n < len && !starts_with_select((const char *)p + 1, n - 1))
        k->prepared.all = true;
    note(&k->command);
    return MR_HOOK_PASS;
}

/* ---- statements ------------------------------------------------------------------------ */

/* Before the rules: a text that may create a temporary table ends the
 * session's use of bookmarks before its own pages meet the rules. */
static mr_hook_action before_rules(mr_fsession *fs, void **st, mr_hook_stmt *stmt)
{
    pg_keyset *k = *st;
    if ((!k || !k->temp_tables) && mr_keyset_temp_scan(stmt->sql, stmt->len, fs->lex_flags) &&
        (k = state(st)))
        k->temp_tables = true;
    return MR_HOOK_PASS;
}

/* COM_RESET_CONNECTION or COM_CHANGE_USER succeeded: the server dropped
 * the session's temporary tables with its prepared statements. */
static void prepared_reset(mr_fsession *fs, void **st)
{
    (void)fs;
    pg_keyset *k = *st;
    if (k)
        k->temp_tables = false;
}

static void count_keyset(mr_fsession *fs, const mr_keyset_note *no)
{
    if (no->outcome != MR_KEYSET_HIT && no->outcome != MR_KEYSET_MISS)
        return;
    bool hit = no->outcome == MR_KEYSET_HIT;
    mr_stat_add(hit ? &fs->stats->paginate_keyset_hits : &fs->stats->paginate_keyset_misses, 1);
    mr_rule_stats *e = no->rule ? mr_rule_stats_of(no->rule) : NULL;
    if (e)
        atomic_fetch_add_explicit(hit ? &e->keyset_hits : &e->keyset_misses, 1,
                                  memory_order_relaxed);
}

/* After the rules: the page's watch begins, and its writes are noted. */
static mr_hook_action statement(mr_fsession *fs, void **st, mr_hook_stmt *stmt)
{
    const mr_match_result *res = stmt->res;
    count_keyset(fs, &res->keyset);
    bool watch = res->keyset.watch && stmt->cmd == MR_COM_QUERY;
    if (watch)
        mr_bookmarks_arm();
    pg_keyset *k = mr_bookmarks_armed() ? state(st) : NULL;
    if (!k)
        return MR_HOOK_PASS;
    mr_keyset_writes wr = {0};
    mr_keyset_writes_scan(stmt->sql, stmt->len, fs->lex_flags, &wr);
    if (stmt->cmd == MR_COM_STMT_PREPARE) {
        merge(&k->prepared, &wr); /* written at each execute */
    } else {
        merge(&k->command, &wr);
        note(&wr);
    }
    if (watch) {
        mr_keyset_watch_begin(&k->watch, &res->keyset, &mr_bookmarks_store);
        k->watch.ext_metadata = (fs->ext_caps & MR_MARIADB_CAP_EXTENDED_METADATA) != 0;
    } else
        k->watch.active = false;
    return MR_HOOK_PASS;
}

/* ---- deferred joins and refusals ------------------------------------------------------ */

/* A prepared page sent as a deferred join: counted at each execute. */
typedef struct pg_note {
    mr_rule_stats *rule; /* NULL: the rule has no counters of its own */
} pg_note;

/* True when a keyset rule sent something other than a deferred join: a
 * seek, or a page it only ordered by the key (shallow, or a keyset miss). */
static bool keyset_not_deferred(const mr_keyset_note *k)
{
    if (k->outcome == MR_KEYSET_HIT)
        return true; /* counted as paginate_keyset_hits by count_keyset */
    if (!k->watch)
        return false;
    return k->listing.offset < k->threshold || (k->outcome == MR_KEYSET_MISS && k->keyset_only);
}

/* Matched rule i's outcome: the guardrail blocks (it is then the last
 * rule matched), otherwise the deferred join went out; for a prepare, at
 * each execute. */
static void count_rule(mr_fsession *fs, const mr_match_result *res, unsigned i, void **note)
{
    bool refused = res->action == MR_ACT_BLOCK && i + 1 == res->nmatched;
    if (!refused && res->action != MR_ACT_REWRITE)
        return; /* a later rule blocked the statement: nothing was sent */
    if (!refused && keyset_not_deferred(&res->keyset))
        return;
    mr_rule_stats *e = mr_rule_stats_of(res->matched[i]);
    if (!note || refused) {
        mr_paginate_count_page(fs->stats, e, refused);
        return;
    }
    if (!*note && !(*note = malloc(sizeof(pg_note)))) {
        mr_warn(fs->id, "out of memory: the executes of a prepared page are not counted");
        return;
    }
    ((pg_note *)*note)->rule = e;
}

static void verdict(mr_fsession *fs, void **st, const mr_match_result *res, void **note)
{
    (void)st;
    unsigned n = res->nmatched < MR_MATCH_MAX_RULES ? res->nmatched : MR_MATCH_MAX_RULES;
    for (unsigned i = 0; i < n; i++)
        if (res->matched[i]->kind == MR_RULE_PAGINATE && !res->matched[i]->log_only)
            count_rule(fs, res, i, note);
}

static void execute(mr_fsession *fs, void **st, void *note)
{
    (void)st;
    const pg_note *pn = note;
    mr_paginate_count_page(fs->stats, pn->rule, false);
}

/* ---- the response ------------------------------------------------------------------------- */

static bool response_wants(mr_fsession *fs, void **st, int track_state)
{
    (void)fs;
    pg_keyset *k = *st;
    return k && mr_keyset_watch_wants(&k->watch, track_state);
}

static void response_packet(mr_fsession *fs, void **st, int track_state, const uint8_t *payload,
                            uint32_t len)
{
    (void)fs;
    pg_keyset *k = *st;
    mr_keyset_watch_packet(&k->watch, track_state, payload, payload ? len : 0);
}

static void response_end(mr_fsession *fs, void **st, const mr_hook_response *r)
{
    (void)fs;
    pg_keyset *k = *st;
    if (!k)
        return;
    mr_keyset_watch_end(&k->watch, r->ok, mr_bookmarks_now_ms());
    note(&k->command); /* the write is done: a page read meanwhile may have missed it */
    memset(&k->command, 0, sizeof k->command);
}

/* The statement side's ports: the bookmark store, unless the session may
 * have temporary tables. */
static void ports(mr_fsession *fs, void **st, mr_stmt_ctx *ctx)
{
    (void)fs;
    const pg_keyset *k = *st;
    ctx->bookmarks = k && k->temp_tables ? NULL : &mr_bookmarks_store;
}

/* --explain: no session, so no temporary tables; the store as it is. */
static void explain_ports(mr_stmt_ctx *ctx) { ctx->bookmarks = &mr_bookmarks_store; }

const mr_feature mr_paginate_feature = {
    .name = "paginate",
    .ports = ports,
    .explain_ports = explain_ports,
    .command = command,
    .before_rules = before_rules,
    .statement = statement,
    .verdict = verdict,
    .execute = execute,
    .response_wants = response_wants,
    .response_packet = response_packet,
    .response_end = response_end,
    .prepared_reset = prepared_reset,
    .session_end = session_end,
};
