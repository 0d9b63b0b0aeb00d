/*
 * session/statement.c - a whole COM_QUERY or COM_STMT_PREPARE meets the
 * front end: digest, rules, and then relayed as written, rewritten, or
 * answered with the block's error; also notes `USE db` for the rule
 * filters. Runs on the session's worker thread, with the worker's scratch.
 */
#include <string.h>

#include "myrewrite/paginate/bookmarks.h"
#include "myrewrite/sql/charset_guard.h"
#include "myrewrite/delayed/flush.h"
#include "myrewrite/delayed/mem.h"
#include "myrewrite/base/log.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/schema/cache.h"
#include "myrewrite/sql/lexer.h"
#include "session/session_impl.h"

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
static void log_full(mr_session *s, const mr_rule *r, const mr_match_result *res,
                     const char *sql, size_t len)
{
    const mr_buf *to = r->log_only ? &res->would_be : &res->text;
    bool blocked_here = res->action == MR_ACT_BLOCK && !r->log_only &&
                        res->nmatched > 0 && res->matched[res->nmatched - 1] == r;
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
            mr_info(s->id, "rule %s%s: %s", r->name, r->log_only ? " (log only)" : "",
                    res->digest);
        else if (r->log == MR_RULE_LOG_FULL || r->log_only)
            log_full(s, r, res, sql, len);
    }
}

/* A memory-mode DELAYED statement: its deltas go into this worker's shard
 * and the proxy answers itself, OK with the keys touched as affected rows
 * (or the ERR of a full table). Nothing reaches the backend. */
stmt_verdict ss_delayed_memory(mr_session *s, const mr_dmem_batch *b)
{
    char err[512];
    uint64_t affected = 0;
    s->from_client.discard = true;
    s->digest = NULL;
    s->schema_pending = false;
    if (mr_dmem_apply(s->w->id, b, &affected, err, sizeof err) != 0) {
        mr_stat_add(&s->w->stats.statements_blocked, 1);
        ss_send_err(s, 1, MR_DELAYED_ERR_CODE, MR_DELAYED_SQLSTATE, err);
        return STMT_ANSWERED;
    }
    mr_stat_add(&s->w->stats.statements_rewritten, 1);
    mr_buf ok;
    mr_buf_init(&ok);
    /* the session's own status (autocommit, in transaction), never "more results" */
    mr_ok_build(&ok, 1, affected, 0, (uint16_t)(s->tracker.status & ~MR_STATUS_MORE_RESULTS), 0);
    if (!ok.failed)
        mr_conn_write(s->client, ok.data, ok.len);
    mr_buf_free(&ok);
    return STMT_ANSWERED;
}

/* The `unreadable` setting, validated at start (base/config.c). */
static uint8_t unreadable_policy(const mr_config *c)
{
    if (strcmp(c->unreadable, "pass") == 0)
        return MR_UNREADABLE_PASS;
    return strcmp(c->unreadable, "block") == 0 ? MR_UNREADABLE_BLOCK : MR_UNREADABLE_AUTO;
}

/* A whole COM_QUERY or COM_STMT_PREPARE: run the front end and act on it. */
/* Did a delayed, paginate or queue rule rewrite the statement? */
static bool feature_rewrite(const mr_match_result *res)
{
    if (res->action != MR_ACT_REWRITE)
        return false;
    for (unsigned i = 0; i < res->nmatched; i++) {
        mr_rule_type k = res->matched[i]->kind;
        if (k == MR_RULE_DELAYED || k == MR_RULE_PAGINATE || k == MR_RULE_QUEUE)
            return true;
    }
    return false;
}

stmt_verdict ss_statement_start(mr_session *s, uint8_t cmd, const char *sql, size_t len)
{
    mr_worker *w = s->w;
    mr_match_result *res = &w->match;
    /* what the server ignores at the end (a NUL after the text) is ignored
     * here too: the rules then read the statement the server runs */
    len = sql_server_len(sql, len);
    unsigned lex_flags =
        (s->tracker.status & MR_STATUS_NO_BACKSLASH_ESCAPES) ? SQL_LEX_NO_BACKSLASH_ESCAPES : 0;
    mr_stmt_ctx ctx = {
        .user = s->user[0] ? s->user : NULL,
        .schema = s->schema[0] ? s->schema : NULL,
        .prepared = cmd == MR_COM_STMT_PREPARE,
        .lex_flags = lex_flags,
        .shard = w->id,
        .skip_locked = s->skip_locked,
        .schema_src = mr_schema_cache_source(),
        .charset_unsafe = s->charset_unsafe,
        .derived = mr_delayed_derive_port(),
        .bookmarks = &mr_bookmarks_store,
        .unreadable = unreadable_policy(cfg(s)),
    };
    if (cmd == MR_COM_QUERY) {
        stmt_verdict v = ss_flush_delayed(s, sql, len, lex_flags);
        if (v != STMT_RELAY)
            return v;
        note_charset_statement(s, sql, len, lex_flags);
    }
    mr_buf_reset(&res->text);
    if (ctx.prepared)
        ss_prepared_begin(s);
    /* The command's start time was read just before this call, a few
     * instructions ago: it stands in for a clock read of its own here. */
    mr_rules_apply(w->rules->set, sql, len, &ctx, w->scratch, res);
    /* counted once, when it is run for good (session/park.c) */
    if (res->park && ss_park(s, cmd, sql, len, res))
        return STMT_WAITING;
    ss_count_statement(s, res, ctx.prepared, mr_mono_ns() - s->command_start_ns);
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
    if (ctx.prepared && feature_rewrite(res))
        s->pnote_next.rewritten = true; /* no bulk execute of it (session/prepared.c) */
    if (res->read_committed && cmd == MR_COM_QUERY)
        ss_prelude_read_committed(s); /* ahead of the statement, rewritten or not */
    else if (res->read_committed)
        s->pnote_next.claim = true; /* ahead of each COM_STMT_EXECUTE of it */
    /* A staged rule's flush_early was passed, or a default rule's table is
     * new: the flusher is woken once the server has answered, so that the
     * staging rows of this very statement are committed (in autocommit
     * mode) when it looks. */
    s->wake_flusher = res->wake_flusher;
    if (res->action == MR_ACT_DELAYED_MEMORY)
        return ss_delayed_memory(s, res->dmem);
    if (res->dmem_prepare && !ss_dmem_note_prepare(s, sql, len, res->dmem_nparams)) {
        ss_send_err(s, 1, MR_DELAYED_ERR_CODE, MR_DELAYED_SQLSTATE, "DELAYED in mode = memory: "
                    "a prepared statement takes at most 256 parameters");
        s->from_client.discard = true;
        s->digest = NULL;
        return STMT_ANSWERED;
    }
    if (ss_group_wanted(s, cmd, res) && ss_group_join(s, res))
        return STMT_WAITING; /* answered once its batch has committed (session/group.c) */
    if (res->action == MR_ACT_REWRITE) {
        mr_buf out;
        mr_buf_init(&out);
        mr_command_build(&out, cmd, res->text.data, res->text.len);
        if (out.failed) {
            mr_buf_free(&out);
            ss_send_err(s, 1, MR_ER_OUT_OF_MEMORY, "HY001", "myrewrite is out of memory");
            ss_close_after_flush(s, MR_CLOSE_MALFORMED, "out of memory building a rewrite");
            return STMT_CLOSED;
        }
        mr_conn_write(s->backend, out.data, out.len);
        mr_buf_free(&out);
        mr_stat_add(&s->digest->rewritten, 1);
        mr_stat_add(&w->stats.statements_rewritten, 1);
        s->from_client.discard = true; /* the original bytes are dropped as they come */
    }
    ss_keyset_statement(s, cmd, sql, len, lex_flags, res);
    return STMT_RELAY;
}
