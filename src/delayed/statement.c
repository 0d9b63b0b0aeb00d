/*
 * delayed/statement.c - the statement side of delayed rules: when the set holds
 * one, an UPDATE/DELETE DELAYED meets no other rule. It becomes the staging
 * INSERT of the delayed rule for its table (delayed/staging_sql.h), or is refused
 * with ERR 1235 saying why: outside the grammar, or no rule for the table.
 * A rule without `key` (either mode) takes the table's primary key from the
 * schema cache; until it is loaded the statement is refused with "retry"
 * and marked for parking (res->park): the session holds it and runs it
 * again once the cache has the table (session/park.c).
 * A value wider than its column, where the schema cache knows the column's
 * range, is refused too (delayed/width.h).
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
#include "myrewrite/delayed/mem.h"
#include "myrewrite/delayed/mem_keys.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/delayed/width.h"
#include "myrewrite/schema/desc.h"
#include "rules/rules_run.h"

/* UPDATE or DELETE first: only those are worth a full parse. */
static bool starts_dml(const run *R, const stmt *S)
{
    sql_lexer lx;
    sql_lexer_init(&lx, S->text, S->len, R->ctx->lex_flags | SQL_LEX_SKIP_COMMENTS);
    sql_token t;
    while (sql_lexer_next(&lx, &t))
        if (t.kind != SQL_TOK_COMMENT)
            return t.kind == SQL_TOK_WORD && (t.id == SQL_KW_DELETE || t.id == SQL_KW_UPDATE);
    return false;
}

static void trace(run *R, size_t i, rule_why why, const char *detail)
{
    if (R->tr && R->tr->rule && i != SIZE_MAX) {
        snprintf(R->detail, sizeof R->detail, "%.200s", detail);
        R->tr->rule(R->tr->ctx, R->rs, i, why, R->detail);
    }
}

static delayed_step refuse(run *R, size_t rule)
{
    if (rule != SIZE_MAX) {
        if (!R->res->park) /* a parked statement counts once, when it is run again */
            rules_count_hit(R, rule);
        trace(R, rule, WHY_MATCHED, R->s->delayed_msg);
    }
    mr_match_result *res = R->res;
    res->action = MR_ACT_BLOCK;
    res->err_code = MR_DELAYED_ERR_CODE;
    memcpy(res->sqlstate, MR_DELAYED_SQLSTATE, sizeof res->sqlstate);
    res->message = R->s->delayed_msg;
    return DELAYED_BLOCKED;
}

bool rules_mentions_delayed(const char *sql, size_t len)
{
    static const char word[] = "delayed";
    size_t n = sizeof word - 1;
    for (size_t i = 0; i + n <= len; i++)
        if ((sql[i] | 0x20) == 'd' && strncasecmp(sql + i, word, n) == 0)
            return true;
    return false;
}

static size_t nrules(const run *R)
{
    return R->rs ? R->rs->n : 0;
}

static bool rule_applies(const run *R, const mr_rule *r)
{
    return r->kind == MR_RULE_DELAYED && r->enabled &&
           (!r->user || (R->ctx->user && strcmp(r->user, R->ctx->user) == 0));
}

/* The first enabled delayed rule for the statement's table (user filter
 * applied; `schema` names the table's schema here), or SIZE_MAX. Default
 * rules never match here: an explicit rule wins over them. */
static size_t find_rule(const run *R, const stmt *S, const mr_delayed_stmt *d)
{
    for (size_t i = 0; i < nrules(R); i++) {
        const mr_rule *r = &R->rs->rules[i];
        if (rule_applies(R, r) && !r->delayed->derive &&
            mr_delayed_table_is(S->text, R->s->tok, d, R->ctx->schema, r->delayed))
            return i;
    }
    return SIZE_MAX;
}

/* The default rule for a table of `schema`: the one of that schema, else
 * the one of any schema (`*`); SIZE_MAX when none. */
static size_t find_default(const run *R, const char *schema)
{
    size_t any = SIZE_MAX;
    for (size_t i = 0; i < nrules(R); i++) {
        const mr_rule *r = &R->rs->rules[i];
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
static bool key_from_schema(run *R, mr_delayed_def *def, mr_row_key *rk, char **names)
{
    mr_rules_scratch *s = R->s;
    const mr_schema_source *src = R->ctx->schema_src;
    if (!src) {
        snprintf(s->delayed_msg, sizeof s->delayed_msg, "myrewrite: the delayed rule for %s.%s "
                 "names no key and this proxy has no schema cache (set proxy_user, or give key "
                 "in the rule; a proxy with one parks the statement until the schema cache "
                 "has the table)", def->schema, def->table);
        return false;
    }
    src->row_key(src->arg, def->schema, def->table, rk);
    R->res->park = rk->pending && rk->status != MR_KEY_FOUND;
    if (rk->status == MR_KEY_UNKNOWN) {
        snprintf(s->delayed_msg, sizeof s->delayed_msg, "myrewrite: schema not loaded yet, "
                 "retry: the key of %s.%s is being read from information_schema (the delayed "
                 "rule names no key); nothing was staged (%.300s)", def->schema, def->table,
                 rk->why);
        return false;
    }
    if (rk->status == MR_KEY_NONE && rk->pending) {
        snprintf(s->delayed_msg, sizeof s->delayed_msg, "myrewrite: DELAYED on %s.%s: %.300s "
                 "(the delayed rule names no key, so the table's primary key is read from "
                 "information_schema); nothing was staged", def->schema, def->table, rk->why);
        return false;
    }
    if (rk->status != MR_KEY_FOUND || !rk->primary) {
        snprintf(s->delayed_msg, sizeof s->delayed_msg, "myrewrite: the delayed rule for %s.%s "
                 "names no key and the table has no primary key (%.300s); give key in the rule",
                 def->schema, def->table, rk->status == MR_KEY_FOUND ? "only a unique key"
                                                                      : rk->why);
        return false;
    }
    for (uint8_t k = 0; k < rk->ncols; k++) {
        for (size_t j = 0; j < def->ncolumns + def->nset_columns; j++)
            if (strcasecmp(j < def->ncolumns ? def->columns[j]
                                             : def->set_columns[j - def->ncolumns],
                           rk->cols[k]) == 0) {
                snprintf(s->delayed_msg, sizeof s->delayed_msg, "myrewrite: %s, a column of the "
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

/* The text as it goes to the server in place of the statement. */
static delayed_step send_instead(run *R, stmt *S)
{
    mr_rules_scratch *s = R->s;
    S->text = (const char *)s->delayed_out.data;
    S->len = s->delayed_out.len;
    S->version++;
    S->parsed = false;
    S->nparams = -1;
    return DELAYED_DONE;
}

/* Values wider than their column (delayed/width.h): the literals, and in a
 * COM_STMT_EXECUTE of a memory statement the executed `?` values. */
static bool fits(run *R, const stmt *S, const mr_delayed_stmt *d, const mr_delayed_def *def)
{
    return mr_delayed_widths_fit(S->text, R->s->tok, d, def, R->ctx->schema_src,
                                 R->ctx->params, R->s->delayed_msg, sizeof R->s->delayed_msg);
}

/* COM_STMT_PREPARE of a memory-mode statement: the server prepares `DO ?,
 * ...` with as many parameters, so the client gets a statement id and its
 * parameter count; the session keeps the original text and answers each
 * COM_STMT_EXECUTE itself (delayed/session_prepared.c). */
static delayed_step prepare_stand_in(run *R, stmt *S, const mr_delayed_stmt *d, size_t i,
                                     const mr_delayed_def *def)
{
    mr_rules_scratch *s = R->s;
    int col[MR_DELAYED_MAX_TERMS], key[MR_DELAYED_MAX_TERMS];
    if (!mr_delayed_check(S->text, s->tok, d, def, col, key, s->delayed_msg,
                          sizeof s->delayed_msg) ||
        !fits(R, S, d, def))
        return refuse(R, i);
    unsigned n = 0;
    for (uint32_t k = 0; k < S->st.end; k++)
        n += s->tok[k].kind == SQL_TOK_PARAM;
    mr_buf_reset(&s->delayed_out);
    mr_buf_put_str(&s->delayed_out, n ? "DO ?" : "DO 0");
    for (unsigned k = 1; k < n; k++)
        mr_buf_put_str(&s->delayed_out, ", ?");
    if (s->delayed_out.failed) {
        snprintf(s->delayed_msg, sizeof s->delayed_msg, "DELAYED: out of memory");
        return refuse(R, i);
    }
    rules_count_hit(R, i);
    trace(R, i, WHY_MATCHED, "prepared as a stand-in; executes are answered by the proxy");
    R->res->dmem_prepare = true;
    R->res->dmem_nparams = n;
    return send_instead(R, S);
}

/* A memory rule without `key`: the primary key as staged mode takes it,
 * which must also be the one the rule's table learned (delayed/mem_keys.h):
 * a table never holds tuples of two key shapes. Without a table (no
 * flusher, a dry run) there is nothing to learn; the store refuses. */
static bool memory_key(run *R, mr_delayed_def *def, mr_row_key *rk, char **names)
{
    return key_from_schema(R, def, rk, names) &&
           (!def->mem_keys ||
            def->mem_keys->take(def->mem_keys->arg, def->schema, def->table, def->keys,
                                def->nkeys, R->s->delayed_msg, sizeof R->s->delayed_msg));
}

/* mode = memory: the deltas go to the worker's shard (the session adds
 * them, delayed/mem.h) and the proxy answers; one statement only, since
 * the answer is the proxy's own OK. In a COM_STMT_EXECUTE the `?` take
 * the executed values (ctx->params). */
static delayed_step into_memory(run *R, stmt *S, const mr_delayed_stmt *d, size_t i)
{
    mr_rules_scratch *s = R->s;
    const mr_delayed_def *rule = R->rs->rules[i].delayed;
    if (R->multi) {
        snprintf(s->delayed_msg, sizeof s->delayed_msg, "DELAYED on %s.%s (mode = memory) is "
                 "not taken in a multi-statement query; send it on its own", rule->schema,
                 rule->table);
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
    if (!mr_dmem_read_stmt(S->text, s->tok, d, &def, no_bs, R->ctx->params, &s->dmem,
                           s->delayed_msg, sizeof s->delayed_msg) ||
        !fits(R, S, d, &def))
        return refuse(R, i);
    s->dmem.def = rule; /* outlives the copy; the store needs only its table */
    rules_count_hit(R, i);
    trace(R, i, WHY_MATCHED, "added to the proxy's memory");
    R->res->action = MR_ACT_DELAYED_MEMORY;
    R->res->dmem = &s->dmem;
    return DELAYED_MEMORY;
}

/* flush_early in staged mode: every flush_early rows staged through this
 * proxy (counted as the INSERTs are sent) the flusher is woken. */
static void note_staged(run *R, const mr_delayed_def *def, const mr_delayed_stmt *d)
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
static delayed_step send_plain(run *R, stmt *S, size_t i, const char *why)
{
    mr_rules_scratch *s = R->s;
    mr_buf_reset(&s->delayed_out);
    if (!mr_delayed_strip(S->text, S->len, s->tok, &S->st, &s->delayed_out)) {
        snprintf(s->delayed_msg, sizeof s->delayed_msg, "DELAYED: out of memory");
        return refuse(R, i);
    }
    rules_count_hit(R, i);
    trace(R, i, WHY_MATCHED, why);
    return send_instead(R, S);
}

/* The staging INSERT of a statement under `def` (an explicit rule's, or a
 * derived one: rule i is then the default rule, whose counters it shares). */
static delayed_step stage(run *R, stmt *S, const mr_delayed_stmt *d, size_t i,
                          const mr_delayed_def *def)
{
    mr_rules_scratch *s = R->s;
    const mr_rule *r = &R->rs->rules[i];
    mr_buf_reset(&s->delayed_out);
    if (!mr_delayed_build(S->text, s->tok, S->st.end, d, def, R->ctx->prepared,
                          &s->delayed_out, s->delayed_msg, sizeof s->delayed_msg) ||
        !fits(R, S, d, def))
        return refuse(R, i);
    rules_count_hit(R, i);
    if (R->res->nmatched <= MR_MATCH_MAX_RULES && R->res->nmatched > 0 &&
        R->res->matched[R->res->nmatched - 1] == r) {
        unsigned m = R->res->nmatched - 1;
        R->res->staged_rows[m] = d->in_term >= 0 ? d->key[d->in_term].count : 1;
        R->res->staged_table[m] = def->table_stats;
    }
    trace(R, i, WHY_MATCHED, "staging INSERT");
    note_staged(R, r->delayed, d);
    return send_instead(R, S);
}

/* A table with no rule of its own and a default rule for its schema: the
 * state of its derived rule decides (delayed/derive.h). A dry run (no
 * registry) adds nothing and shows the pending phase. */
static delayed_step by_default(run *R, stmt *S, const mr_delayed_stmt *d, size_t i,
                               const char *schema, const char *table)
{
    mr_rules_scratch *s = R->s;
    const mr_rule *r = &R->rs->rules[i];
    for (unsigned k = 0; k < d->nset; k++)
        if (d->set[k].is_set) {
            snprintf(s->delayed_msg, sizeof s->delayed_msg, "DELAYED on %s.%s: SET col = literal "
                     "is not taken on a table whose rule the default rule %s derives (derived "
                     "rules have no set_columns); give the table a [delayed ...] rule with "
                     "set_columns", schema, table, r->name);
            return refuse(R, i);
        }
    if (!R->ctx->derived)
        return send_plain(R, S, i, "default rule: the table's rule is derived from the schema "
                          "at run time; until then the statement is sent without DELAYED");
    mr_derive_how how;
    mr_derive_how_of(r->name, r->delayed, &how);
    bool added;
    const mr_delayed_def *def;
    const struct mr_derive_port *port = R->ctx->derived;
    switch (port->lookup(port->reg, schema, table, &how, &added, &def, s->delayed_msg,
                         sizeof s->delayed_msg)) {
    case MR_DERIVE_READY:
        return stage(R, S, d, i, def);
    case MR_DERIVE_FAILED:
        return refuse(R, i);
    default:
        R->res->wake_flusher |= added; /* the flusher derives it now, not at its next round */
        return send_plain(R, S, i, "default rule: the derived rule is pending, sent without "
                          "DELAYED");
    }
}

bool mr_ruleset_has_delayed(const mr_ruleset *rs)
{
    return rs && rs->has_delayed;
}

delayed_step rules_delayed(run *R, stmt *S)
{
    if (!rules_mentions_delayed(S->text, S->len) || !starts_dml(R, S))
        return DELAYED_NONE;
    if (!S->parsed && !rules_parse_stmt(R, S))
        return DELAYED_NONE;
    if (!mr_delayed_is_delayed(&S->st))
        return DELAYED_NONE;
    mr_rules_scratch *s = R->s;
    if (R->ctx->charset_unsafe) {
        snprintf(s->delayed_msg, sizeof s->delayed_msg, "DELAYED is not taken when the client "
                 "character set is %s: the proxy cannot read its statements safely (a "
                 "character may end in the byte '\\'); use utf8mb4, latin1 or another "
                 "ASCII-safe character set for DELAYED statements", R->ctx->charset_unsafe);
        return refuse(R, SIZE_MAX);
    }
    mr_delayed_stmt d;
    if (!mr_delayed_parse(S->text, s->tok, &S->st, &d, s->delayed_msg, sizeof s->delayed_msg))
        return refuse(R, SIZE_MAX);
    size_t i = find_rule(R, S, &d);
    char schema[65], table[65];
    if (i == SIZE_MAX && mr_delayed_names(S->text, s->tok, &d, R->ctx->schema, schema, table) &&
        (i = find_default(R, schema)) != SIZE_MAX)
        return by_default(R, S, &d, i, schema, table);
    if (i == SIZE_MAX) {
        mr_delayed_no_rule(S->text, s->tok, &d, R->ctx->schema, s->delayed_msg,
                           sizeof s->delayed_msg);
        return refuse(R, SIZE_MAX);
    }
    const mr_rule *r = &R->rs->rules[i];
    if (r->delayed->mode == MR_DELAYED_MEMORY)
        return into_memory(R, S, &d, i);
    mr_delayed_def def = *r->delayed;
    mr_row_key rk;
    char *names[MR_SD_MAX_KEY_COLS];
    if (!def.nkeys && !key_from_schema(R, &def, &rk, names))
        return refuse(R, i);
    return stage(R, S, &d, i, &def);
}
