/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/statement/statement.c - the statement side of delayed rules: when the set holds
 * one, an UPDATE/DELETE DELAYED meets no other rule. It becomes the staging
 * INSERT of the delayed rule for its table (delayed/staging_sql.h), or is refused
 * with ERR 1235 saying why: outside the grammar, or no rule for the table.
 * A rule without `key` (either mode) takes the table's primary key from the
 * schema cache; until it is loaded the statement is refused with "retry"
 * and marked for parking (res->park): the session holds it and runs it
 * again once the cache has the table (session/stmt/park_stmt.c).
 * A value wider than its column, where the schema cache knows the column's
 * range, is refused too (delayed/width.h), and so is a key value that is
 * no row's key but would become one converted to the column's type
 * (delayed/key_literal.h).
 * A DELAYED statement is never sent as written, whatever the set holds: one
 * no rule covers (or met with no delayed rule at all) is refused with the
 * default rule that would take it, since the server only answers a syntax
 * error that hides the proxy.
 *
 * Pure, any thread; writes only the caller's scratch and result (see
 * rules/match.c), plus the matched rule's hit counter and, once, the key
 * a keyless memory rule's table learns (delayed/mem_keys.h).
 */
#include <string.h>
#include <strings.h>

#include "myrewrite/delayed/derive.h"
#include "myrewrite/delayed/key_literal.h"
#include "myrewrite/delayed/mem.h"
#include "myrewrite/delayed/mem_keys.h"
#include "myrewrite/delayed/rule.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/delayed/width.h"
#include "myrewrite/rules/kind.h"
#include "myrewrite/schema/desc.h"

#include "delayed/statement/statement_impl.h"

/* UPDATE or DELETE first: only those are worth a full parse. */
static bool starts_dml(const mr_rule_run *R, const mr_rule_stmt *S)
{
    sql_lexer lx;
    sql_lexer_init(&lx, S->text, S->len, R->ctx->lex_flags | SQL_LEX_SKIP_COMMENTS);
    sql_token t;
    while (sql_lexer_next(&lx, &t))
        if (t.kind != SQL_TOK_COMMENT)
            return t.kind == SQL_TOK_WORD && (t.id == SQL_KW_DELETE || t.id == SQL_KW_UPDATE);
    return false;
}

static delayed_scratch *scratch_of(mr_rule_run *R) { return mr_delayed_scratch_of(R); }

static mr_take_step refuse(mr_rule_run *R, size_t rule)
{
    if (rule != SIZE_MAX) {
        if (!R->res->park) /* a parked statement counts once, when it is run again */
            mr_rule_count_hit(R, rule);
        mr_rule_trace(R, rule, WHY_MATCHED, scratch_of(R)->msg);
    }
    mr_match_result *res = R->res;
    res->action = MR_ACT_BLOCK;
    res->err_code = MR_DELAYED_ERR_CODE;
    memcpy(res->sqlstate, MR_DELAYED_SQLSTATE, sizeof res->sqlstate);
    res->message = scratch_of(R)->msg;
    return MR_TAKE_BLOCKED;
}

bool mr_delayed_mentioned(const char *sql, size_t len)
{
    static const char word[] = "delayed";
    size_t n = sizeof word - 1;
    for (size_t i = 0; i + n <= len; i++)
        if ((sql[i] | 0x20) == 'd' && strncasecmp(sql + i, word, n) == 0)
            return true;
    return false;
}

static size_t nrules(const mr_rule_run *R) { return mr_ruleset_count(R->rs); }

static bool rule_applies(const mr_rule_run *R, const mr_rule *r)
{
    return r->kind == MR_RULE_DELAYED && r->enabled &&
           (!r->user || (R->ctx->user && strcmp(r->user, R->ctx->user) == 0));
}

/* The first enabled delayed rule for the statement's table (user filter
 * applied; `schema` names the table's schema here), or SIZE_MAX. Default
 * rules never match here: an explicit rule wins over them. */
static size_t find_rule(const mr_rule_run *R, const mr_rule_stmt *S, const mr_delayed_stmt *d)
{
    for (size_t i = 0; i < nrules(R); i++) {
        const mr_rule *r = mr_ruleset_rule(R->rs, i);
        if (rule_applies(R, r) && !r->delayed->derive &&
            mr_delayed_table_is(S->text, R->tok, d, R->ctx->schema, r->delayed))
            return i;
    }
    return SIZE_MAX;
}

/* The default rule for a table of `schema`: the one of that schema, else
 * the one of any schema (`*`); SIZE_MAX when none. */
static size_t find_default(const mr_rule_run *R, const char *schema)
{
    size_t any = SIZE_MAX;
    for (size_t i = 0; i < nrules(R); i++) {
        const mr_rule *r = mr_ruleset_rule(R->rs, i);
        if (!rule_applies(R, r) || !r->delayed->derive)
            continue;
        if (strcmp(r->delayed->schema, schema) == 0)
            return i;
        if (strcmp(r->delayed->schema, "*") == 0 && any == SIZE_MAX)
            any = i;
    }
    return any;
}

/* A rule without `key`: the table's row key from the schema source, into a
 * copy of the rule's settings. Never waits: while the key is not loaded (or
 * the table does not exist yet) the statement is refused with "retry" and
 * marked for parking (the lookup has queued the load), and nothing is
 * staged under a key the flusher might not share. */
static bool key_from_schema(mr_rule_run *R, mr_delayed_def *def, mr_row_key *rk, char **names)
{
    delayed_scratch *s = scratch_of(R);
    const mr_schema_source *src = R->ctx->schema_src;
    if (!src) {
        snprintf(s->msg, sizeof s->msg,
                 "myrewrite: the delayed rule for %s.%s "
                 "names no key and this proxy has no schema cache (set proxy_user, or give key "
                 "in the rule; a proxy with one parks the statement until the schema cache "
                 "has the table)",
                 def->schema, def->table);
        return false;
    }
    src->row_key(src->arg, def->schema, def->table, rk);
    R->res->park = rk->pending && rk->status != MR_KEY_FOUND;
    if (rk->status == MR_KEY_UNKNOWN) {
        snprintf(s->msg, sizeof s->msg,
                 "myrewrite: schema not loaded yet, "
                 "retry: the key of %s.%s is being read from information_schema (the delayed "
                 "rule names no key); nothing was staged (%.300s)",
                 def->schema, def->table, rk->why);
        return false;
    }
    if (rk->status == MR_KEY_NONE && rk->pending) {
        snprintf(s->msg, sizeof s->msg,
                 "myrewrite: DELAYED on %s.%s: %.300s "
                 "(the delayed rule names no key, so the table's primary key is read from "
                 "information_schema); nothing was staged",
                 def->schema, def->table, rk->why);
        return false;
    }
    if (rk->status != MR_KEY_FOUND || !rk->primary) {
        snprintf(s->msg, sizeof s->msg,
                 "myrewrite: the delayed rule for %s.%s "
                 "names no key and the table has no primary key (%.300s); give key in the rule",
                 def->schema, def->table,
                 rk->status == MR_KEY_FOUND ? "only a unique key" : rk->why);
        return false;
    }
    for (uint8_t k = 0; k < rk->ncols; k++) {
        for (size_t j = 0; j < def->ncolumns + def->nset_columns; j++)
            if (strcasecmp(j < def->ncolumns ? def->columns[j]
                                             : def->set_columns[j - def->ncolumns],
                           rk->cols[k]) == 0) {
                snprintf(s->msg, sizeof s->msg,
                         "myrewrite: %s, a column of the "
                         "primary key of %s.%s, is also a %s column of its delayed rule",
                         rk->cols[k], def->schema, def->table,
                         j < def->ncolumns ? "counter" : "set");
                return false;
            }
        names[k] = rk->cols[k];
    }
    def->keys = names;
    def->nkeys = rk->ncols;
    return true;
}

/* Values wider than their column (delayed/width.h), and key values that
 * would be converted into another row's key (delayed/key_literal.h): the
 * literals, and in a COM_STMT_EXECUTE of a memory statement the executed
 * `?` values. */
static bool fits(mr_rule_run *R, const mr_rule_stmt *S, const mr_delayed_stmt *d,
                 const mr_delayed_def *def)
{
    delayed_scratch *s = scratch_of(R);
    return mr_delayed_widths_fit(S->text, R->tok, d, def, R->ctx->schema_src, R->ctx->params,
                                 s->msg, sizeof s->msg) &&
           mr_delayed_keys_comparable(S->text, R->tok, d, def, R->ctx->schema_src, R->ctx->params,
                                      s->msg, sizeof s->msg);
}

/* COM_STMT_PREPARE of a memory-mode statement: the server prepares `DO ?,
 * ...` with as many parameters, so the client gets a statement id and its
 * parameter count; the session keeps the original text and answers each
 * COM_STMT_EXECUTE itself (delayed/session/session_prepared.c). */
static mr_take_step prepare_stand_in(mr_rule_run *R, mr_rule_stmt *S, const mr_delayed_stmt *d,
                                     size_t i, const mr_delayed_def *def)
{
    delayed_scratch *s = scratch_of(R);
    int col[MR_DELAYED_MAX_TERMS], key[MR_DELAYED_MAX_TERMS];
    if (!mr_delayed_check(S->text, R->tok, d, def, col, key, s->msg, sizeof s->msg) ||
        !fits(R, S, d, def))
        return refuse(R, i);
    unsigned n = 0;
    for (uint32_t k = 0; k < S->st.end; k++)
        n += R->tok[k].kind == SQL_TOK_PARAM;
    mr_buf_reset(&s->out);
    mr_buf_put_str(&s->out, n ? "DO ?" : "DO 0");
    for (unsigned k = 1; k < n; k++)
        mr_buf_put_str(&s->out, ", ?");
    if (s->out.failed) {
        snprintf(s->msg, sizeof s->msg, "DELAYED: out of memory");
        return refuse(R, i);
    }
    mr_rule_count_hit(R, i);
    mr_rule_trace(R, i, WHY_MATCHED, "prepared as a stand-in; executes are answered by the proxy");
    R->res->dmem_prepare = true;
    R->res->dmem_nparams = n;
    return mr_delayed_send_instead(R, S);
}

/* A memory rule without `key`: the primary key as staged mode takes it,
 * which must also be the one the rule's table learned (delayed/mem_keys.h):
 * a table never holds tuples of two key shapes. Without a table (no
 * flusher, a dry run) there is nothing to learn; the store refuses. */
static bool memory_key(mr_rule_run *R, mr_delayed_def *def, mr_row_key *rk, char **names)
{
    return key_from_schema(R, def, rk, names) &&
           (!def->mem_keys ||
            def->mem_keys->take(def->mem_keys->arg, def->schema, def->table, def->keys, def->nkeys,
                                scratch_of(R)->msg, sizeof scratch_of(R)->msg));
}

/* mode = memory: the deltas go to the worker's shard (the session adds
 * them, delayed/mem.h) and the proxy answers; one statement only, since
 * the answer is the proxy's own OK. In a COM_STMT_EXECUTE the `?` take
 * the executed values (ctx->params). */
static mr_take_step into_memory(mr_rule_run *R, mr_rule_stmt *S, const mr_delayed_stmt *d, size_t i)
{
    delayed_scratch *s = scratch_of(R);
    const mr_delayed_def *rule = mr_ruleset_rule(R->rs, i)->delayed;
    if (R->multi) {
        snprintf(s->msg, sizeof s->msg,
                 "DELAYED on %s.%s (mode = memory) is "
                 "not taken in a multi-statement query; send it on its own",
                 rule->schema, rule->table);
        return refuse(R, i);
    }
    mr_delayed_def def = *rule;
    mr_row_key rk;
    char *names[MR_SD_MAX_KEY_COLS];
    if (!def.nkeys && !memory_key(R, &def, &rk, names))
        return refuse(R, i);
    if (R->ctx->prepared && !R->ctx->params)
        return prepare_stand_in(R, S, d, i, &def);
    bool no_bs = (R->ctx->lex_flags & SQL_LEX_NO_BACKSLASH_ESCAPES) != 0;
    if (!mr_dmem_read_stmt(S->text, R->tok, d, &def, no_bs, R->ctx->params, &s->dmem, s->msg,
                           sizeof s->msg) ||
        !fits(R, S, d, &def))
        return refuse(R, i);
    s->dmem.def = rule; /* outlives the copy; the store needs only its table */
    mr_rule_count_hit(R, i);
    mr_rule_trace(R, i, WHY_MATCHED, "added to the proxy's memory");
    R->res->action = MR_ACT_DELAYED_MEMORY;
    R->res->dmem = &s->dmem;
    R->res->dmem_keys = s->dmem.nrows;
    return MR_TAKE_HELD;
}

/* flush_early in staged mode: every flush_early rows staged through this
 * proxy (counted as the INSERTs are sent) the flusher is woken. */
static void note_staged(mr_rule_run *R, const mr_delayed_def *def, const mr_delayed_stmt *d)
{
    if (!def->staged_rows || R->tr)
        return;
    uint64_t rows = d->in_term >= 0 ? d->key[d->in_term].count : 1;
    uint64_t before = atomic_fetch_add_explicit(def->staged_rows, rows, memory_order_relaxed);
    if (before / def->flush_early != (before + rows) / def->flush_early)
        R->res->wake_flusher = true;
}

/* A table whose rule is being derived: the statement goes to the server
 * without DELAYED, so the change is applied (and durable) at once. Nothing
 * is staged for the table before its rule is ready, so staged rows follow
 * the direct statements (but for one still in flight when it becomes
 * ready: adds commute; rules/README.md notes the DELETE case). */
static mr_take_step send_plain(mr_rule_run *R, mr_rule_stmt *S, size_t i, const char *why)
{
    delayed_scratch *s = scratch_of(R);
    mr_buf_reset(&s->out);
    if (!mr_delayed_strip(S->text, S->len, R->tok, &S->st, &s->out)) {
        snprintf(s->msg, sizeof s->msg, "DELAYED: out of memory");
        return refuse(R, i);
    }
    mr_rule_count_hit(R, i);
    mr_rule_trace(R, i, WHY_MATCHED, why);
    return mr_delayed_send_instead(R, S);
}

/* The add deltas leading each staging row of d (col = col + N), when that
 * is all it changes; 0 for a delete or a statement with `col = literal`. */
/* The staging INSERT of a statement under `def` (an explicit rule's, or a
 * derived one: rule i is then the default rule, whose counters it shares). */
static mr_take_step stage(mr_rule_run *R, mr_rule_stmt *S, const mr_delayed_stmt *d, size_t i,
                          const mr_delayed_def *def)
{
    delayed_scratch *s = scratch_of(R);
    const mr_rule *r = mr_ruleset_rule(R->rs, i);
    mr_buf_reset(&s->out);
    if (!mr_delayed_build(S->text, R->tok, S->st.end, d, def, R->ctx->prepared, &s->out, &s->rows,
                          s->msg, sizeof s->msg) ||
        !fits(R, S, d, def))
        return refuse(R, i);
    mr_rule_count_hit(R, i);
    if (R->res->nmatched <= MR_MATCH_MAX_RULES && R->res->nmatched > 0 &&
        R->res->matched[R->res->nmatched - 1] == r) {
        unsigned m = R->res->nmatched - 1;
        R->res->staged_rows[m] = d->in_term >= 0 ? d->key[d->in_term].count : 1;
        R->res->staged_table[m] = def->table_stats;
    }
    /* group commit takes a COM_QUERY text of this statement alone; the
     * session decides by its transaction state (autocommit, none open) */
    bool grouped = r->delayed->group_commit && !R->ctx->prepared && !R->multi;
    if (grouped) {
        R->res->group = r;
        s->stage = mr_dstage_of((const char *)s->out.data, s->out.len, &s->rows);
        R->res->group_stage = &s->stage;
    }
    mr_rule_trace(R, i, WHY_MATCHED,
                  grouped
                      ? "staging INSERT, grouped (group_commit: in "
                        "autocommit mode outside a transaction it joins a multi-row INSERT of many "
                        "sessions on the proxy's own connection)"
                      : "staging INSERT");
    note_staged(R, r->delayed, d);
    return mr_delayed_send_instead(R, S);
}

/* A table with no rule of its own and a default rule for its schema: the
 * state of its derived rule decides (delayed/derive.h). A dry run (no
 * registry) adds nothing and shows the pending phase. */
static mr_take_step by_default(mr_rule_run *R, mr_rule_stmt *S, const mr_delayed_stmt *d, size_t i,
                               const char *schema, const char *table)
{
    delayed_scratch *s = scratch_of(R);
    const mr_rule *r = mr_ruleset_rule(R->rs, i);
    for (unsigned k = 0; k < d->nset; k++)
        if (d->set[k].is_set) {
            snprintf(s->msg, sizeof s->msg,
                     "DELAYED on %s.%s: SET col = literal "
                     "is not taken on a table whose rule the default rule %s derives (derived "
                     "rules have no set_columns); give the table a [delayed ...] rule with "
                     "set_columns",
                     schema, table, r->name);
            return refuse(R, i);
        }
    if (!R->ctx->derived)
        return send_plain(R, S, i,
                          "default rule: the table's rule is derived from the schema "
                          "at run time; until then the statement is sent without DELAYED");
    mr_derive_how how;
    mr_derive_how_of(r->name, r->delayed, &how);
    bool added;
    const mr_delayed_def *def;
    const struct mr_derive_port *port = R->ctx->derived;
    switch (port->lookup(port->reg, schema, table, &how, &added, &def, s->msg, sizeof s->msg)) {
    case MR_DERIVE_READY: return stage(R, S, d, i, def);
    case MR_DERIVE_FAILED: return refuse(R, i);
    default:
        R->res->wake_flusher |= added; /* the flusher derives it now, not at its next round */
        return send_plain(R, S, i,
                          "default rule: the derived rule is pending, sent without "
                          "DELAYED");
    }
}

mr_take_step mr_delayed_take(mr_rule_run *R, mr_rule_stmt *S)
{
    if (!mr_delayed_mentioned(S->text, S->len) || !starts_dml(R, S))
        return mr_delayed_read_take(R, S);
    if (!S->parsed && !mr_rule_parse_stmt(R, S))
        return MR_TAKE_NONE;
    if (!mr_delayed_is_delayed(&S->st))
        return MR_TAKE_NONE;
    delayed_scratch *s = scratch_of(R);
    if (!s) { /* never sent as written, even out of memory */
        static const char oom[] = "DELAYED: out of memory";
        R->res->action = MR_ACT_BLOCK;
        R->res->err_code = MR_DELAYED_ERR_CODE;
        memcpy(R->res->sqlstate, MR_DELAYED_SQLSTATE, sizeof R->res->sqlstate);
        R->res->message = oom;
        return MR_TAKE_BLOCKED;
    }
    if (R->ctx->charset_unsafe) {
        snprintf(s->msg, sizeof s->msg,
                 "DELAYED is not taken when the client "
                 "character set is %s: the proxy cannot read its statements safely (a "
                 "character may end in the byte '\\'); use utf8mb4, latin1 or another "
                 "ASCII-safe character set for DELAYED statements",
                 R->ctx->charset_unsafe);
        return refuse(R, SIZE_MAX);
    }
    mr_delayed_stmt d;
    if (!mr_delayed_parse(S->text, R->tok, &S->st, &d, s->msg, sizeof s->msg))
        return refuse(R, SIZE_MAX);
    size_t i = find_rule(R, S, &d);
    char schema[65], table[65];
    if (i == SIZE_MAX && mr_delayed_names(S->text, R->tok, &d, R->ctx->schema, schema, table) &&
        (i = find_default(R, schema)) != SIZE_MAX)
        return by_default(R, S, &d, i, schema, table);
    if (i == SIZE_MAX) {
        mr_delayed_no_rule(S->text, R->tok, &d, R->ctx->schema, s->msg, sizeof s->msg);
        return refuse(R, SIZE_MAX);
    }
    const mr_rule *r = mr_ruleset_rule(R->rs, i);
    if (r->delayed->mode == MR_DELAYED_MEMORY)
        return into_memory(R, S, &d, i);
    mr_delayed_def def = *r->delayed;
    mr_row_key rk;
    char *names[MR_SD_MAX_KEY_COLS];
    if (!def.nkeys && !key_from_schema(R, &def, &rk, names))
        return refuse(R, i);
    return stage(R, S, &d, i, &def);
}

bool mr_delayed_unreadable(mr_rule_run *R, const sql_stmt *st, const char *why, char *msg,
                           size_t cap)
{
    if (!mr_delayed_is_delayed(st))
        return false;
    snprintf(msg, cap,
             "myrewrite could not read this DELAYED statement (%s): it was neither "
             "taken nor sent, since a DELAYED statement is never sent as written; correct its "
             "text",
             why);
    R->res->err_code = MR_DELAYED_ERR_CODE;
    memcpy(R->res->sqlstate, MR_DELAYED_SQLSTATE, sizeof R->res->sqlstate);
    return true;
}
