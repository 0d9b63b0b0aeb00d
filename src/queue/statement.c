/*
 * queue/statement.c - the statement side of queue rules: with skip_locked = yes,
 * `SELECT ... FROM <queue table> ... FOR UPDATE` gets SKIP LOCKED appended
 * to its locking clause, so workers that select-then-update their claims
 * stop waiting on each other's rows. Only when the session's server takes
 * it (mr_stmt_ctx.skip_locked, from the greeting's version).
 *
 * Pure, any thread; writes only the caller's scratch (see rules/match.c).
 */
#include <stdio.h>
#include <string.h>

#include "myrewrite/queue/rule.h"
#include "myrewrite/rules/kind.h"
#include "myrewrite/sql/lexer.h"
#include "myrewrite/sql/token_value.h"

/* Is token t the name `want` (bare or `quoted`, compared exactly)? */
static bool token_is(const char *text, const sql_token *t, const char *want)
{
    char name[MR_SQL_NAME_BUF];
    return sql_tok_name(t, text, name, sizeof name) && strcmp(name, want) == 0;
}

/* Does the statement read the queue table (in the right schema)? */
static bool reads_table(const mr_rule_run *R, const mr_rule_stmt *S, const mr_queue_def *q)
{
    const sql_token *tok = R->tok;
    for (unsigned i = 0; i < S->st.ntables; i++) {
        const sql_table_ref *ref = &S->st.tables[i];
        if (ref->derived || ref->name == SQL_NONE || !token_is(S->text, &tok[ref->name], q->table))
            continue;
        if (ref->schema != SQL_NONE ? token_is(S->text, &tok[ref->schema], q->schema)
                                    : R->ctx->schema && strcmp(R->ctx->schema, q->schema) == 0)
            return true;
    }
    return false;
}

/* The locking clause is exactly FOR UPDATE (no OF, NOWAIT, WAIT n, SKIP LOCKED). */
static bool plain_for_update(const mr_rule_run *R, const mr_rule_stmt *S)
{
    const sql_lock *lk = &S->st.lock;
    if (lk->kind != SQL_LOCK_FOR_UPDATE || lk->wait != SQL_WAIT_DEFAULT)
        return false;
    unsigned words = 0;
    for (uint32_t i = lk->span.first; i < lk->span.end; i++)
        words += R->tok[i].kind != SQL_TOK_COMMENT;
    return words == 2;
}

static rule_why not_this(mr_rule_run *R, const char *why)
{
    snprintf(R->detail, sizeof R->detail, "%s", why);
    return WHY_NOT_KIND;
}

/* Whether the statement qualifies; the reason goes to the trace. */
static rule_why qualifies(mr_rule_run *R, mr_rule_stmt *S, const mr_queue_def *q)
{
    if (!q->skip_locked)
        return not_this(R, "queue rule with skip_locked = no rewrites nothing");
    if (!R->ctx->skip_locked)
        return not_this(R, "the server does not take SKIP LOCKED (or its version is unknown)");
    if (!S->parsed && !mr_rule_parse_stmt(R, S))
        return not_this(R, "out of memory");
    const sql_stmt *st = &S->st;
    if (st->kind != SQL_STMT_SELECT)
        return not_this(R, "not a SELECT");
    if (st->flags & (SQL_SF_UNSUPPORTED | SQL_SF_LEX_ERROR | SQL_SF_EXEC_COMMENT | SQL_SF_UNION |
                     SQL_SF_OVERFLOW))
        return not_this(R, "recognizer could not read the whole statement");
    if (!plain_for_update(R, S))
        return not_this(R, "no plain FOR UPDATE clause");
    if (!reads_table(R, S, q))
        return not_this(R, "does not read the queue table");
    return WHY_MATCHED;
}

/* The first word is UPDATE: only then is a full parse worth it. */
static bool starts_with_update(const mr_rule_run *R, const mr_rule_stmt *S)
{
    sql_lexer lx;
    sql_lexer_init(&lx, S->text, S->len, R->ctx->lex_flags | SQL_LEX_SKIP_COMMENTS);
    sql_token t;
    while (sql_lexer_next(&lx, &t))
        if (t.kind != SQL_TOK_COMMENT)
            return t.kind == SQL_TOK_WORD && t.id == SQL_KW_UPDATE;
    return false;
}

/* One UPDATE of the queue table alone: no join, subquery, CTE or anything
 * the recognizer could not follow. Under READ COMMITTED such a statement
 * locks the rows it changes, as under REPEATABLE READ, but no gaps: it
 * gives the same rows the same values (each row is checked against its
 * latest committed version either way), and claimers stop queueing on the
 * gap locks of the index range they all scan. */
static bool claim(mr_rule_run *R, mr_rule_stmt *S, const mr_rule *r)
{
    const mr_queue_def *q = r->queue;
    if (!q->claim_read_committed || (!S->parsed && !starts_with_update(R, S)))
        return false;
    if (!S->parsed && !mr_rule_parse_stmt(R, S))
        return false;
    const sql_stmt *st = &S->st;
    if (st->kind != SQL_STMT_UPDATE || st->ntables != 1 ||
        (st->flags & (SQL_SF_UNSUPPORTED | SQL_SF_LEX_ERROR | SQL_SF_EXEC_COMMENT |
                      SQL_SF_OVERFLOW | SQL_SF_JOIN | SQL_SF_SUBQUERY | SQL_SF_DERIVED |
                      SQL_SF_MULTI_TABLE | SQL_SF_WITH | SQL_SF_MULTI_STMT)) ||
        !reads_table(R, S, q))
        return false;
    bool apply = !r->log_only;
    if (apply)
        R->res->read_committed = true;
    snprintf(R->detail, sizeof R->detail, "an UPDATE of the queue table: text kept%s",
             !apply             ? " (log_only: nothing done)"
             : R->ctx->prepared ? "; each execute sent in autocommit mode outside a transaction "
                                  "runs READ COMMITTED (claim_read_committed)"
                                : "; sent alone in autocommit mode outside a transaction, it "
                                  "runs READ COMMITTED (claim_read_committed)");
    return true;
}

static rule_why skip_locked(mr_rule_run *R, mr_rule_stmt *S, const mr_rule *r, mr_rule_text *out)
{
    rule_why why = qualifies(R, S, r->queue);
    if (why != WHY_MATCHED)
        return why;
    const sql_token *last = &R->tok[S->st.lock.span.end - 1];
    while (last->kind == SQL_TOK_COMMENT)
        last--;
    size_t at = (size_t)last->off + last->len;
    static const char add[] = " SKIP LOCKED";
    size_t n = S->len + sizeof add - 1;
    if (!mr_rule_text_reserve(out, n))
        return not_this(R, "out of memory");
    memcpy(out->p, S->text, at);
    memcpy(out->p + at, add, sizeof add - 1);
    memcpy(out->p + at + sizeof add - 1, S->text + at, S->len - at);
    out->len = n;
    return WHY_MATCHED;
}

/* A claim is counted and noted, yet not a rewrite: the rules go on. */
rule_why mr_queue_apply(mr_rule_run *R, mr_rule_stmt *S, size_t i, mr_rule_text *out)
{
    const mr_rule *r = mr_ruleset_rule(R->rs, i);
    if (claim(R, S, r)) {
        mr_rule_count_hit(R, i);
        return WHY_NOTED;
    }
    return skip_locked(R, S, r, out);
}
