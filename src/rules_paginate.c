/*
 * rules_paginate.c - the statement side of paginate rules: a deep page of
 * the rule's table becomes its deferred join, and a page deeper than the
 * rule's max_offset is refused with ERR 1235 (paginate_sql.h decides and
 * builds). Statements it does not fully understand pass untouched; the
 * reason goes to the trace.
 *
 * Pure, any thread; writes only the caller's scratch (see rules_match.c).
 */
#include <string.h>

#include "myrewrite/paginate_sql.h"
#include "rules_run.h"

/* SELECT first: only those are worth a full parse. */
static bool starts_select(const run *R, const stmt *S)
{
    sql_lexer lx;
    sql_lexer_init(&lx, S->text, S->len, R->ctx->lex_flags | SQL_LEX_SKIP_COMMENTS);
    sql_token t;
    while (sql_lexer_next(&lx, &t))
        if (t.kind != SQL_TOK_COMMENT)
            return t.kind == SQL_TOK_WORD && t.id == SQL_KW_SELECT;
    return false;
}

static rule_why not_this(run *R, const char *why)
{
    snprintf(R->detail, sizeof R->detail, "%s", why);
    return WHY_NOT_KIND;
}

/* The guardrail: the DBA's message, or the default naming the limit. */
static rule_why too_deep(run *R, const mr_rule *r, uint64_t offset)
{
    mr_rules_scratch *s = R->s;
    mr_paginate_too_deep_msg(r->paginate, offset, s->paginate_msg, sizeof s->paginate_msg);
    R->block_msg = r->message ? r->message : s->paginate_msg;
    snprintf(R->detail, sizeof R->detail, "offset %llu is beyond max_offset %llu: refused",
             (unsigned long long)offset, (unsigned long long)r->paginate->max_offset);
    return WHY_MATCHED;
}

static rule_why copy_out(run *R, const mr_buf *b, bytes *out, uint64_t offset)
{
    if (b->failed || !GROW(out->p, out->cap, b->len + 1))
        return not_this(R, "out of memory");
    memcpy(out->p, b->data, b->len);
    out->len = b->len;
    snprintf(R->detail, sizeof R->detail, "deferred join from offset %llu",
             (unsigned long long)offset);
    return WHY_MATCHED;
}

rule_why rules_paginate(run *R, stmt *S, const mr_rule *r, bytes *out)
{
    if (!starts_select(R, S))
        return not_this(R, "not a SELECT");
    if (!S->parsed && !rules_parse_stmt(R, S))
        return not_this(R, "out of memory");
    mr_buf *b = &R->s->paginate_out;
    mr_buf_reset(b);
    mr_pag_info info;
    /* the statement's text is not NUL-terminated: the tail is copied by length */
    mr_pag_outcome o = mr_paginate_sql(S->text, S->len, R->s->tok, &S->st, r->paginate,
                                       R->ctx->schema, b, &info);
    if (o == MR_PAG_TOO_DEEP)
        return too_deep(R, r, info.offset);
    if (r->paginate->strategy != MR_PAGINATE_DEFERRED_JOIN)
        return rules_paginate_keyset(R, S, r, o, &info, out);
    if (o == MR_PAG_PASS)
        return not_this(R, info.why);
    return copy_out(R, b, out, info.offset);
}
