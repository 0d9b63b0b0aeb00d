/*
 * rules/unreadable.c - a text the lexer cannot read (an unterminated
 * string or comment, a stray byte such as a NUL in the middle): no rule
 * can examine the statement holding the error, so the `unreadable` policy
 * decides whether it is relayed as written or refused with the proxy's
 * ERR. A DELAYED statement that does not lex is refused whatever the
 * policy and whatever rules the set holds, since a DELAYED statement is
 * never sent as written (delayed/statement.c).
 *
 * Pure, any thread; writes only the caller's scratch and result.
 */
#include <stdio.h>
#include <string.h>

#include "myrewrite/delayed/staging_sql.h"
#include "rules/rules_run.h"

/* Tokens of the whole text into the scratch, up to and with the first
 * error token; false when out of memory. */
static bool lex_all(run *R, const char *sql, size_t len, size_t *count)
{
    mr_rules_scratch *s = R->s;
    if (!GROW(s->tok, s->tok_cap, 256))
        return false;
    sql_rc rc = sql_lex(sql, len, R->ctx->lex_flags, s->tok, s->tok_cap, count);
    while (rc == SQL_PARTIAL) {
        if (!GROW(s->tok, s->tok_cap, s->tok_cap * 2))
            return false;
        rc = sql_lex(sql, len, R->ctx->lex_flags, s->tok, s->tok_cap, count);
    }
    return true;
}

/* Is the statement that runs into the error (tokens after the last ';'
 * before it) an UPDATE/DELETE DELAYED? Its readable part tells. */
static bool error_in_delayed(run *R, const char *sql, size_t count)
{
    const sql_token *tok = R->s->tok;
    size_t start = 0, end = count - 1; /* tok[end] is the error */
    for (size_t i = 0; i < end; i++)
        if (tok[i].kind == SQL_TOK_SEMI)
            start = i + 1;
    sql_stmt st;
    sql_stmt_parse(sql, tok + start, end - start, &st);
    return mr_delayed_is_delayed(&st);
}

/* "unterminated string at byte 12", "stray byte 0x00 at byte 27". */
static void describe(const char *sql, const sql_token *e, char *out, size_t cap)
{
    if (!e) {
        snprintf(out, cap, "lexing error");
        return;
    }
    if (e->id == SQL_LEXERR_STRAY_BYTE)
        snprintf(out, cap, "stray byte 0x%02x at byte %u", (unsigned char)sql[e->off],
                 (unsigned)e->off + 1);
    else
        snprintf(out, cap, "%s at byte %u", sql_lex_err_name(e->id), (unsigned)e->off + 1);
}

static bool policy_blocks(const run *R)
{
    switch ((mr_unreadable_policy)R->ctx->unreadable) {
    case MR_UNREADABLE_PASS: return false;
    case MR_UNREADABLE_BLOCK: return true;
    default: return R->rs && R->rs->has_block;
    }
}

bool rules_unreadable(run *R, const char *sql, size_t len)
{
    mr_match_result *res = R->res;
    size_t count = 0;
    const sql_token *e = NULL;
    if (lex_all(R, sql, len, &count) && count > 0 && R->s->tok[count - 1].kind == SQL_TOK_ERROR)
        e = &R->s->tok[count - 1];
    bool delayed = e && error_in_delayed(R, sql, count);
    if (!delayed && !policy_blocks(R)) {
        res->unreadable = MR_UNREADABLE_PASSED;
        return false;
    }
    char why[64];
    describe(sql, e, why, sizeof why);
    if (delayed)
        snprintf(R->s->unreadable_msg, sizeof R->s->unreadable_msg,
                 "myrewrite could not read this DELAYED statement (%s): it was neither taken "
                 "nor sent, since a DELAYED statement is never sent as written; correct its "
                 "text", why);
    else
        snprintf(R->s->unreadable_msg, sizeof R->s->unreadable_msg,
                 "myrewrite could not read the statement (%s), so its rules cannot examine it "
                 "and it was not sent (%s); correct the statement, or set unreadable = pass "
                 "in the proxy's configuration to relay such statements unexamined", why,
                 R->ctx->unreadable == MR_UNREADABLE_BLOCK
                     ? "unreadable = block"
                     : "unreadable = auto, which blocks while a block rule is loaded");
    res->unreadable = MR_UNREADABLE_BLOCKED;
    res->action = MR_ACT_BLOCK;
    res->err_code = delayed ? MR_DELAYED_ERR_CODE : MR_UNREADABLE_ERR_CODE;
    memcpy(res->sqlstate, delayed ? MR_DELAYED_SQLSTATE : MR_UNREADABLE_SQLSTATE,
           sizeof res->sqlstate);
    res->message = R->s->unreadable_msg;
    return true;
}
