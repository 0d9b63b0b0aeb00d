/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/unreadable.c - a text the lexer cannot read (an unterminated
 * string or comment, a stray byte such as a NUL in the middle): no rule
 * can examine the statement holding the error, so the `unreadable` policy
 * decides whether it is relayed as written or refused with the proxy's
 * ERR. A DELAYED statement that does not lex is refused whatever the
 * policy and whatever rules the set holds, since a DELAYED statement is
 * never sent as written: a kind with an `unreadable` hook (delayed's,
 * rules/kind.h) refuses it.
 *
 * Pure, any thread; writes only the caller's scratch and result.
 */
#include <stdio.h>
#include <string.h>

#include "rules/rules_run.h"

/* Does a kind refuse the statement that runs into the error (tokens after
 * the last ';' before it) whatever the policy? Its readable part tells; the
 * kind then sets res's code and writes the message. */
static bool kind_refuses(run *R, const char *sql, size_t count, const char *why)
{
    const sql_token *tok = R->s->tok;
    size_t start = 0, end = count - 1; /* tok[end] is the error */
    for (size_t i = 0; i < end; i++)
        if (tok[i].kind == SQL_TOK_SEMI)
            start = i + 1;
    sql_stmt st;
    sql_stmt_parse(sql, tok + start, end - start, &st);
    for (size_t k = 0; R->rs && R->rs->takers[k]; k++) {
        const mr_rule_kind *kd = R->rs->takers[k];
        if (kd->unreadable &&
            kd->unreadable(R, &st, why, R->s->unreadable_msg, sizeof R->s->unreadable_msg))
            return true;
    }
    return false;
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
    if (rules_lex(R, sql, len, &count) != SQL_PARTIAL && count > 0 &&
        R->s->tok[count - 1].kind == SQL_TOK_ERROR)
        e = &R->s->tok[count - 1];
    char why[64];
    describe(sql, e, why, sizeof why);
    bool taken = e && kind_refuses(R, sql, count, why);
    if (!taken && !policy_blocks(R)) {
        res->unreadable = MR_UNREADABLE_PASSED;
        return false;
    }
    if (!taken) {
        res->err_code = MR_UNREADABLE_ERR_CODE;
        memcpy(res->sqlstate, MR_UNREADABLE_SQLSTATE, sizeof res->sqlstate);
        snprintf(R->s->unreadable_msg, sizeof R->s->unreadable_msg,
                 "myrewrite could not read the statement (%s), so its rules cannot examine it "
                 "and it was not sent (%s); correct the statement, or set unreadable = pass "
                 "in the proxy's configuration to relay such statements unexamined",
                 why,
                 R->ctx->unreadable == MR_UNREADABLE_BLOCK
                     ? "unreadable = block"
                     : "unreadable = auto, which blocks while a block rule is loaded");
    }
    res->unreadable = MR_UNREADABLE_BLOCKED;
    res->action = MR_ACT_BLOCK;
    res->message = R->s->unreadable_msg;
    return true;
}
