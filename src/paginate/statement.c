/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/statement.c - the statement side of paginate rules: a deep page of
 * the rule's table becomes its deferred join, and a page deeper than the
 * rule's max_offset is refused with ERR 1235 (paginate/deferred_sql.h decides and
 * builds). A rule without `key` joins on the table's row key from the
 * schema source (the schema cache): while it is unknown, or when the table
 * has none, the page passes untouched. Statements it does not fully
 * understand pass untouched; the reason goes to the trace.
 *
 * Pure, any thread; writes only the caller's scratch (see rules/match.c).
 */
#include <string.h>

#include "myrewrite/paginate/counts.h"
#include "myrewrite/schema/desc.h"
#include "myrewrite/sql/token_value.h"
#include "paginate/statement_impl.h"

/* SELECT first: only those are worth a full parse. */
static bool starts_select(const mr_rule_run *R, const mr_rule_stmt *S)
{
    sql_lexer lx;
    sql_lexer_init(&lx, S->text, S->len, R->ctx->lex_flags | SQL_LEX_SKIP_COMMENTS);
    sql_token t;
    while (sql_lexer_next(&lx, &t))
        if (t.kind != SQL_TOK_COMMENT)
            return t.kind == SQL_TOK_WORD && t.id == SQL_KW_SELECT;
    return false;
}

static rule_why not_this(mr_rule_run *R, const char *why)
{
    snprintf(R->detail, sizeof R->detail, "%s", why);
    return WHY_NOT_KIND;
}

/* The guardrail: the DBA's message, or the default naming the limit. */
static rule_why too_deep(mr_rule_run *R, pag_scratch *s, const mr_rule *r, uint64_t offset)
{
    mr_paginate_too_deep_msg(r->paginate, offset, s->msg, sizeof s->msg);
    R->block_msg = r->message ? r->message : s->msg;
    snprintf(R->detail, sizeof R->detail, "offset %llu is beyond max_offset %llu: refused",
             (unsigned long long)offset, (unsigned long long)r->paginate->max_offset);
    return WHY_MATCHED;
}

/* A `?` offset cannot meet max_offset before COM_STMT_EXECUTE: the first
 * such rule is noted for the session to check each execute against,
 * whether or not the page is rewritten (as a literal offset is). */
static void note_guard(mr_rule_run *R, const mr_rule *r, const mr_pag_info *info)
{
    mr_page_guard *g = &R->res->page_guard;
    if (!r->paginate->max_offset || g->rule || r->log_only || !R->ctx->prepared)
        return;
    g->rule = r;
    g->param = info->offset_index;
    g->nparams = info->nparams;
    g->max_offset = r->paginate->max_offset;
    g->where[0] = '\0';
    if (r->paginate->table)
        snprintf(g->where, sizeof g->where, "%s%s%s",
                 r->paginate->schema ? r->paginate->schema : "", r->paginate->schema ? "." : "",
                 r->paginate->table);
    g->too_deep = mr_paginate_too_deep_text;
    g->refused = mr_paginate_count_refused;
}

static rule_why copy_out(mr_rule_run *R, const mr_buf *b, mr_rule_text *out,
                         const mr_pag_info *info)
{
    if (b->failed || !mr_rule_text_reserve(out, b->len + 1))
        return not_this(R, "out of memory");
    memcpy(out->p, b->data, b->len);
    out->len = b->len;
    if (info->offset_param)
        snprintf(R->detail, sizeof R->detail,
                 "deferred join for every offset (LIMIT ? is "
                 "rewritten at prepare time)%s",
                 R->res->page_guard.rule ? "; max_offset is "
                                           "checked at each execute"
                                         : "");
    else
        snprintf(R->detail, sizeof R->detail, "deferred join from offset %llu",
                 (unsigned long long)info->offset);
    return WHY_MATCHED;
}

/* A rule without `key`: the row key of the statement's one table from the
 * schema source, as a copy of the rule's settings naming its columns. On
 * anything short of a known key, *d keeps no key (the guardrail still
 * applies; the rewrite passes) and R->detail says why. */
static void key_from_schema(mr_rule_run *R, const mr_rule_stmt *S, mr_row_key *rk, char **names,
                            mr_paginate_def *d)
{
    const sql_stmt *st = &S->st;
    const sql_token *tok = R->tok;
    char schema[MR_SD_NAME], table[MR_SD_NAME];
    rk->status = MR_KEY_UNKNOWN;
    snprintf(R->detail, sizeof R->detail, "no key: not one plain table");
    if (st->ntables != 1 || st->tables[0].derived || st->tables[0].name == SQL_NONE ||
        !sql_tok_name(&tok[st->tables[0].name], S->text, table, MR_SD_NAME))
        return;
    if (!R->ctx->schema_src) {
        snprintf(R->detail, sizeof R->detail,
                 "no key: no schema cache here (the rule has no "
                 "key and --explain reads no server)");
        return;
    }
    schema[0] = '\0';
    if (st->tables[0].schema != SQL_NONE)
        sql_tok_name(&tok[st->tables[0].schema], S->text, schema, MR_SD_NAME);
    else if (R->ctx->schema && strlen(R->ctx->schema) < sizeof schema)
        strcpy(schema, R->ctx->schema);
    if (!schema[0]) {
        snprintf(R->detail, sizeof R->detail,
                 "no key: the table's schema is not known (no "
                 "default schema)");
        return;
    }
    R->ctx->schema_src->row_key(R->ctx->schema_src->arg, schema, table, rk);
    if (rk->status != MR_KEY_FOUND) {
        snprintf(R->detail, sizeof R->detail, "no key: %.240s", rk->why);
        return;
    }
    for (uint8_t k = 0; k < rk->ncols; k++)
        names[k] = rk->cols[k];
    d->keys = names;
    d->nkeys = rk->ncols;
}

rule_why mr_paginate_apply(mr_rule_run *R, mr_rule_stmt *S, size_t i, mr_rule_text *out)
{
    const mr_rule *r = mr_ruleset_rule(R->rs, i);
    if (!starts_select(R, S))
        return not_this(R, "not a SELECT");
    pag_scratch *ps = pag_scratch_of(R);
    if (!ps || (!S->parsed && !mr_rule_parse_stmt(R, S)))
        return not_this(R, "out of memory");
    mr_buf *b = &ps->out;
    mr_buf_reset(b);
    mr_pag_info info;
    mr_paginate_def def = *r->paginate;
    /* the statement's text is not NUL-terminated: the tail is copied by length */
    mr_pag_outcome o =
        mr_paginate_sql(S->text, S->len, R->tok, &S->st, &def, R->ctx->schema, b, &info);
    bool keyset = r->paginate->strategy != MR_PAGINATE_DEFERRED_JOIN;
    /* def.keys may point into these (a key from the schema): they must live as
     * long as def, down to the keyset code below */
    mr_row_key rk;
    char *names[MR_SD_MAX_KEY_COLS];
    if (o == MR_PAG_PASS && !def.nkeys && (info.no_key || keyset)) {
        /* a page the rewrite would take, but the rule names no key: only now is
         * the schema asked (a lookup per SELECT would load every table read);
         * keyset also orders shallow pages by the key, to bookmark them */
        key_from_schema(R, S, &rk, names, &def);
        if (!def.nkeys)
            return WHY_NOT_KIND; /* R->detail says why the key is not known */
        o = mr_paginate_sql(S->text, S->len, R->tok, &S->st, &def, R->ctx->schema, b, &info);
    }
    if (o == MR_PAG_TOO_DEEP)
        return too_deep(R, ps, r, info.offset);
    if (info.offset_param)
        note_guard(R, r, &info);
    if (keyset)
        return mr_paginate_keyset(R, S, r, &def, o, &info, out);
    if (o == MR_PAG_PASS)
        return not_this(R, info.why);
    return copy_out(R, b, out, &info);
}

void mr_paginate_scratch_free(void *p)
{
    pag_scratch *s = p;
    mr_buf_free(&s->out);
}
