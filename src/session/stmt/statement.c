/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/stmt/statement.c - a whole COM_QUERY or COM_STMT_PREPARE meets the
 * front end: digest, rules, and then relayed as written, rewritten, or
 * answered with the block's error; the features' statement hooks run
 * before and after the rules (session/stmt/hooks.c). Also notes `USE db` for
 * the rule filters. Runs on the session's worker thread, with the worker's
 * scratch.
 */
#include <string.h>

#include "myrewrite/base/log.h"
#include "myrewrite/proto/query_attrs.h"
#include "myrewrite/rules/kind.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/schema/cache.h"
#include "myrewrite/sql/charset_guard.h"
#include "myrewrite/sql/lexer.h"
#include "session/core/session_impl.h"

/* `USE db` changes the default schema the rules filter on. */
static void note_use_statement(mr_session *s, const char *sql, size_t len, unsigned lex_flags)
{
    sql_lexer lx;
    sql_token t;
    sql_lexer_init(&lx, sql, len, lex_flags | SQL_LEX_SKIP_COMMENTS);
    if (!sql_lexer_next(&lx, &t) || t.kind != SQL_TOK_WORD || t.id != SQL_KW_USE)
        return;
    if (!sql_lexer_next(&lx, &t) || (t.kind != SQL_TOK_WORD && t.kind != SQL_TOK_QIDENT))
        return;
    size_t off = t.off, n = t.len;
    if (t.kind == SQL_TOK_QIDENT && n >= 2) { /* `name`: doubled backticks stay as they are */
        off++;
        n -= 2;
    }
    ss_copy_name(s->pending_schema, sizeof(s->pending_schema), sql + off, n, &s->schema_pending);
}

/* SET NAMES and the like: the guard follows once the server accepted it. */
static void note_charset_statement(mr_session *s, const char *sql, size_t len, unsigned lex_flags)
{
    const char *unsafe;
    if (mr_charset_statement(sql, len, lex_flags, &unsafe) == MR_CHARSET_SAME)
        return;
    s->pending_charset = unsafe;
    s->charset_pending = true;
}

/* Original and rewritten text; for a log_only rule, the text it would
 * have sent (a block has none). */
static void log_full(mr_session *s, const mr_rule *r, const mr_match_result *res, const char *sql,
                     size_t len)
{
    const mr_buf *to = r->log_only ? &res->would_be : &res->text;
    bool blocked_here = res->action == MR_ACT_BLOCK && !r->log_only && res->nmatched > 0 &&
                        res->matched[res->nmatched - 1] == r;
    if (r->kind == MR_RULE_BLOCK || blocked_here)
        mr_info(s->id, "rule %s%s: %.*s -> blocked", r->name, r->log_only ? " (log only)" : "",
                (int)(len > 2000 ? 2000 : len), sql);
    else
        mr_info(s->id, "rule %s%s: %.*s -> %.*s", r->name, r->log_only ? " (log only)" : "",
                (int)(len > 2000 ? 2000 : len), sql, (int)(to->len > 2000 ? 2000 : to->len),
                to->data ? (const char *)to->data : "");
}

/* Logs what the matched rules asked to log, for the matches their
 * log_sample picks. */
static void log_matches(mr_session *s, const mr_match_result *res, const char *sql, size_t len)
{
    unsigned n = res->nmatched < MR_MATCH_MAX_RULES ? res->nmatched : MR_MATCH_MAX_RULES;
    for (unsigned i = 0; i < n; i++) {
        const mr_rule *r = res->matched[i];
        if (!res->sampled[i])
            continue;
        if (r->log == MR_RULE_LOG_DIGEST)
            mr_info(s->id, "rule %s%s: %s", r->name, r->log_only ? " (log only)" : "", res->digest);
        else if (r->log == MR_RULE_LOG_FULL || r->log_only)
            log_full(s, r, res, sql, len);
    }
}

/* The `unreadable` setting, validated at start (base/config.c). */
static uint8_t unreadable_policy(const mr_config *c)
{
    if (strcmp(c->unreadable, "pass") == 0)
        return MR_UNREADABLE_PASS;
    return strcmp(c->unreadable, "block") == 0 ? MR_UNREADABLE_BLOCK : MR_UNREADABLE_AUTO;
}

/* Did a rule whose kind says so (no_bulk, rules/kind.h) rewrite it? */
static bool rewritten_no_bulk(const mr_match_result *res)
{
    if (res->action != MR_ACT_REWRITE)
        return false;
    unsigned n = res->nmatched < MR_MATCH_MAX_RULES ? res->nmatched : MR_MATCH_MAX_RULES;
    for (unsigned i = 0; i < n; i++)
        if (res->matched[i]->entry->no_bulk)
            return true;
    return false;
}

/* What ss_lex_flags cannot vouch for at a text's start. */
#define LEX_UNSURE (SQL_LEX_ANSI_QUOTES | SQL_LEX_MB_MASK)

/* A whole COM_QUERY or COM_STMT_PREPARE (its text: after any query
 * attributes): run the front end and act on it. */
stmt_verdict ss_statement_start(mr_session *s, uint8_t cmd, const char *sql, size_t len)
{
    mr_worker *w = s->w;
    mr_match_result *res = &w->match;
    /* what the server ignores at the end (a NUL after the text) is ignored
     * here too: the rules then read the statement the server runs */
    len = sql_server_len(sql, len);
    unsigned lex_flags = ss_lex_flags(s);
    if (s->srv && ss_pool_refuses(s, sql, len, lex_flags))
        return STMT_ANSWERED; /* pool = statement: its words would pin */
    if (s->srv)
        ss_pool_statement(s, sql, len, lex_flags, true);
    mr_stmt_ctx ctx = {
        .user = s->user[0] ? s->user : NULL,
        .schema = s->schema[0] ? s->schema : NULL,
        .prepared = cmd == MR_COM_STMT_PREPARE,
        .lex_flags = lex_flags,
        .lex_unsure = LEX_UNSURE,
        .shard = w->id,
        .skip_locked = s->skip_locked,
        .schema_src = mr_schema_cache_source(),
        .charset_unsafe = s->charset_unsafe,
        .unreadable = unreadable_policy(cfg(s)),
    };
    mr_hook_stmt st = {.cmd = cmd, .sql = sql, .len = len, .attrs = s->qattrs_count};
    stmt_verdict v = ss_hooks_statement(s, true, &st);
    if (v != STMT_RELAY || st.send)
        return v;            /* a hook answered, waits for a job, or sent its own text */
    ss_hooks_ports(s, &ctx); /* after before_rules: what it learnt of the text counts */
    if (cmd == MR_COM_QUERY)
        note_charset_statement(s, sql, len, lex_flags);
    mr_buf_reset(&res->text);
    if (ctx.prepared)
        ss_prepared_begin(s);
    /* The command's start time was read just before this call, a few
     * instructions ago: it stands in for a clock read of its own here. */
    mr_rules_apply(w->rules->set, sql, len, &ctx, w->scratch, res);
    /* counted once, when it is run for good (session/stmt/park_stmt.c) */
    if (res->park && ss_park_statement(s, cmd, sql, len, res, ss_statement_start))
        return STMT_WAITING;
    ss_count_statement(s, res, mr_mono_ns() - s->command_start_ns);
    if (res->nmatched && ctx.prepared) /* the features count what their rules did, */
        ss_prepared_verdict(s, res);   /* or note what each execute repeats */
    else if (res->nmatched)
        ss_hooks_verdict(s, res, NULL);
    s->digest = mr_digest_stats_get(&w->digests, res->digest_hash, res->digest ? res->digest : "");
    if (res->nmatched)
        log_matches(s, res, sql, len);
    if (cmd == MR_COM_QUERY)
        note_use_statement(s, sql, len, lex_flags);
    if (cmd == MR_COM_QUERY && res->action != MR_ACT_BLOCK && !s->ddl_hold)
        s->ddl_hold = mr_schema_cache_ddl_begin(sql, len, lex_flags, ctx.schema);
    if (res->action == MR_ACT_BLOCK) {
        mr_stat_add(&s->digest->blocked, 1);
        mr_stat_add(&w->stats.statements_blocked, 1);
        ss_send_err(s, 1, res->err_code, res->sqlstate, res->message);
        s->from_client.discard = true;
        s->digest = NULL;
        s->schema_pending = s->charset_pending = false;
        return STMT_ANSWERED;
    }
    if (res->page_guard.rule)
        ss_prepared_note_guard(s, &res->page_guard); /* checked at each COM_STMT_EXECUTE */
    if (ctx.prepared && rewritten_no_bulk(res))
        s->pnote_next.rewritten = true; /* no bulk execute of it (session/stmt/prepared.c) */
    st.res = res;
    v = ss_hooks_statement(s, false, &st);
    if (v != STMT_RELAY || st.send)
        return v;
    if (res->action != MR_ACT_REWRITE && s->srv && ss_pool_kill(s, cmd, sql, len, lex_flags, &v))
        return v; /* pool = transaction: a KILL of a session's id */
    if (res->action != MR_ACT_REWRITE)
        return s->pool_view ? ss_pool_own_id(s, cmd, sql, len, lex_flags) : STMT_RELAY;
    v = ss_send_instead(s, cmd, res->text.data, res->text.len);
    if (v == STMT_RELAY)
        mr_stat_add(&s->digest->rewritten, 1);
    return v;
}
