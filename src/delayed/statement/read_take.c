/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/statement/read_take.c - read_pending (rules/README.md): a point read of a
 * delayed rule's counters by the full key is rewritten so that it returns
 * the table's value plus the deltas still pending for that key. Staged
 * mode: one statement that adds the staging table's sum for the key
 * (delayed/read_sql.h). Memory mode: the sum this proxy holds for the key
 * (delayed/mem/mem.c through the rule's mr_read_port; a chunk in flight
 * counted only while the read's snapshot lacks its mark) written into the
 * SELECT as a number; a prepared read's SELECT takes them from user
 * variables instead, and each execute's values give the SET of them that
 * the session sends ahead of it (delayed/session/session_prepared.c).
 * Every other SELECT, and a point read of a rule without read_pending,
 * passes untouched.
 *
 * Pure, any thread; writes only the caller's scratch and result, plus the
 * matched rule's hit counter.
 */
#include <string.h>

#include "myrewrite/delayed/mem.h"
#include "myrewrite/delayed/read_sql.h"
#include "myrewrite/delayed/rule.h"
#include "myrewrite/rules/kind.h"
#include "myrewrite/schema/desc.h"

#include "delayed/statement/statement_impl.h"

static bool rule_reads(const mr_rule_run *R, const mr_rule *r)
{
    return r->kind == MR_RULE_DELAYED && r->enabled && r->delayed->read_pending &&
           (!r->user || (R->ctx->user && strcmp(r->user, R->ctx->user) == 0));
}

/* Cheap: does any rule read pending, and does the text hold its table's
 * name? Only then is the statement worth a parse. */
static bool worth_a_look(const mr_rule_run *R, const mr_rule_stmt *S)
{
    for (size_t i = 0; i < mr_ruleset_count(R->rs); i++) {
        const mr_rule *r = mr_ruleset_rule(R->rs, i);
        if (rule_reads(R, r) &&
            memmem(S->text, S->len, r->delayed->table, strlen(r->delayed->table)))
            return true;
    }
    return false;
}

static bool starts_select(const mr_rule_run *R, const mr_rule_stmt *S)
{
    sql_lexer lx;
    sql_lexer_init(&lx, S->text, S->len, R->ctx->lex_flags | SQL_LEX_SKIP_COMMENTS);
    sql_token t;
    return sql_lexer_next_sig(&lx, &t) && t.kind == SQL_TOK_WORD && t.id == SQL_KW_SELECT;
}

/* The rule with read_pending for the read's table, or SIZE_MAX. */
static size_t find_reader(const mr_rule_run *R, const mr_rule_stmt *S, const mr_delayed_read *rd)
{
    mr_delayed_stmt d;
    memset(&d, 0, sizeof d);
    d.schema = rd->schema;
    d.table = rd->table;
    for (size_t i = 0; i < mr_ruleset_count(R->rs); i++) {
        const mr_rule *r = mr_ruleset_rule(R->rs, i);
        if (rule_reads(R, r) &&
            mr_delayed_table_is(S->text, R->tok, &d, R->ctx->schema, r->delayed))
            return i;
    }
    return SIZE_MAX;
}

/* A rule without `key`: the primary key the schema cache has (a read never
 * waits for it: while it is not there the read passes untouched). */
static void key_from_schema(const mr_rule_run *R, mr_delayed_def *def, mr_row_key *rk, char **names)
{
    const mr_schema_source *src = R->ctx->schema_src;
    if (def->nkeys || !src)
        return;
    if (src->row_key(src->arg, def->schema, def->table, rk) != MR_KEY_FOUND || !rk->primary)
        return;
    for (uint8_t k = 0; k < rk->ncols; k++)
        names[k] = rk->cols[k];
    def->keys = names;
    def->nkeys = rk->ncols;
}

static mr_take_step untouched(mr_rule_run *R, size_t i, const char *why)
{
    char detail[256];
    snprintf(detail, sizeof detail, "read_pending: not rewritten (%s); the read goes as written",
             why);
    mr_rule_trace(R, i, WHY_NOT_KIND, detail);
    return MR_TAKE_NONE;
}

static mr_take_step rewritten(mr_rule_run *R, mr_rule_stmt *S, size_t i, const char *how)
{
    mr_rule_count_hit(R, i);
    mr_rule_trace(R, i, WHY_MATCHED, how);
    R->res->read_pending = mr_ruleset_rule(R->rs, i);
    return mr_delayed_send_instead(R, S);
}

static mr_take_step staged_read(mr_rule_run *R, mr_rule_stmt *S, size_t i,
                                const mr_delayed_read *rd, const mr_delayed_def *def)
{
    delayed_scratch *s = mr_delayed_scratch_of(R);
    mr_buf_reset(&s->out);
    if (!mr_delayed_read_build(S->text, R->tok, rd, def, NULL, &s->out))
        return untouched(R, i, "out of memory, or a name that cannot be written");
    return rewritten(R, S, i,
                     "read_pending: the point read adds the staging table's pending deltas "
                     "for the key in the same statement");
}

/* The read's key as the memory table encodes it: the WHERE read as the
 * DELETE DELAYED of that key would be (delayed/mem.h), a `?` bound to an
 * execute's value (ctx->params). */
static bool memory_key(mr_rule_run *R, const mr_rule_stmt *S, const mr_delayed_read *rd,
                       const mr_delayed_def *def, mr_dmem_batch *b)
{
    mr_delayed_stmt d;
    memset(&d, 0, sizeof d);
    d.is_delete = true;
    d.schema = rd->schema;
    d.table = rd->table;
    d.in_term = -1;
    if (rd->nterms > MR_DELAYED_MAX_TERMS)
        return false;
    for (unsigned k = 0; k < rd->nterms; k++)
        d.key[d.nkey++] = rd->term[k];
    bool no_bs = (R->ctx->lex_flags & SQL_LEX_NO_BACKSLASH_ESCAPES) != 0;
    char err[256];
    return mr_dmem_read_stmt(S->text, R->tok, &d, def, no_bs, R->ctx->params, b, err, sizeof err);
}

/* What the proxy holds for the read's key (a chunk in flight folded in
 * when it has no mark), or a reason it cannot say. */
static const char *memory_held(mr_rule_run *R, const mr_rule_stmt *S, const mr_delayed_read *rd,
                               const mr_delayed_def *def, mr_read_held *mem)
{
    delayed_scratch *s = mr_delayed_scratch_of(R);
    if (!memory_key(R, S, rd, def, &s->dmem) || s->dmem.nrows != 1)
        return "a key value the memory table does not take";
    bool ok = def->mem_read->sum(def->mem_read->arg, (const char *)s->dmem.keys.data,
                                 s->dmem.keys.len, def->ncolumns, mem);
    for (size_t c = 0; ok && c < def->ncolumns; c++) {
        int64_t both;
        ok = !__builtin_add_overflow(mem->held[c], mem->inflight[c], &both);
    }
    return ok ? NULL : "the deltas held for the key sum past 64 bits";
}

/* COM_STMT_PREPARE: the SELECT reads the sums from user variables, set
 * ahead of each execute; the zero SET goes with it for the caller. */
static mr_take_step memory_prepare(mr_rule_run *R, mr_rule_stmt *S, size_t i,
                                   const mr_delayed_read *rd, const mr_delayed_def *def)
{
    delayed_scratch *s = mr_delayed_scratch_of(R);
    uint64_t proxy = 0;
    bool marks = def->mem_read->marks && def->mem_read->marks(def->mem_read->arg, &proxy);
    mr_buf_reset(&s->out);
    mr_buf_reset(&s->set);
    if (!mr_delayed_read_build_vars(S->text, R->tok, rd, def, marks, proxy, &s->out) ||
        !mr_delayed_read_set(rd, NULL, &s->set))
        return untouched(R, i, "out of memory, or a name that cannot be written");
    unsigned n = 0;
    for (uint32_t k = 0; k < S->st.end; k++)
        n += R->tok[k].kind == SQL_TOK_PARAM;
    R->res->dmem_read_prepare = true;
    R->res->dmem_nparams = n; /* the server's too: the rewrite keeps the `?` */
    R->res->read_set = (const char *)s->set.data;
    R->res->read_set_len = s->set.len;
    return rewritten(R, S, i,
                     marks ? "read_pending: the prepared point read adds the deltas this proxy "
                             "holds in memory for the key bound at each execute, set in user "
                             "variables ahead of it (a chunk in flight only if the read does "
                             "not see its mark)"
                           : "read_pending: the prepared point read adds the deltas this proxy "
                             "holds in memory for the key bound at each execute, set in user "
                             "variables ahead of it (no marks table yet: a chunk in flight "
                             "counts until its COMMIT returned)");
}

/* COM_STMT_EXECUTE of such a prepare (ctx->params): nothing is sent in its
 * place; the caller sends the SET for the key bound ahead of it. */
static mr_take_step memory_execute(mr_rule_run *R, const mr_rule_stmt *S, size_t i,
                                   const mr_delayed_read *rd, const mr_delayed_def *def)
{
    delayed_scratch *s = mr_delayed_scratch_of(R);
    mr_read_held mem;
    const char *why = memory_held(R, S, rd, def, &mem);
    mr_buf_reset(&s->set);
    if (why || !mr_delayed_read_set(rd, &mem, &s->set)) {
        mr_rule_trace(R, i, WHY_NOT_KIND, why ? why : "out of memory");
        return MR_TAKE_HELD; /* no SET: the caller sets zeros, the read gives the table's */
    }
    R->res->read_set = (const char *)s->set.data;
    R->res->read_set_len = s->set.len;
    mr_rule_trace(R, i, WHY_MATCHED, "read_pending: the held deltas of the key bound");
    return MR_TAKE_HELD;
}

static mr_take_step memory_read(mr_rule_run *R, mr_rule_stmt *S, size_t i,
                                const mr_delayed_read *rd, const mr_delayed_def *def)
{
    delayed_scratch *s = mr_delayed_scratch_of(R);
    if (!def->mem_read)
        return untouched(R, i,
                         "mode = memory without the proxy's memory table: no flusher "
                         "(proxy_user), or a dry run");
    if (def->bucket_column)
        return untouched(R, i, "mode = memory with bucket_column");
    if (R->ctx->params)
        return memory_execute(R, S, i, rd, def);
    if (R->ctx->prepared)
        return memory_prepare(R, S, i, rd, def);
    mr_read_held mem;
    const char *why = memory_held(R, S, rd, def, &mem);
    if (why)
        return untouched(R, i, why);
    mr_buf_reset(&s->out);
    if (!mr_delayed_read_build(S->text, R->tok, rd, def, &mem, &s->out))
        return untouched(R, i, "out of memory, or a name that cannot be written");
    return rewritten(R, S, i,
                     "read_pending: the point read adds the deltas this proxy holds in memory "
                     "for the key (a chunk in flight only if the read does not see its mark)");
}

mr_take_step mr_delayed_read_take(mr_rule_run *R, mr_rule_stmt *S)
{
    if (!worth_a_look(R, S) || !starts_select(R, S))
        return MR_TAKE_NONE;
    if (!S->parsed && !mr_rule_parse_stmt(R, S))
        return MR_TAKE_NONE;
    mr_delayed_read rd;
    if (!mr_delayed_read_table(S->text, R->tok, &S->st, &rd))
        return MR_TAKE_NONE;
    size_t i = find_reader(R, S, &rd);
    if (i == SIZE_MAX || !mr_delayed_scratch_of(R))
        return MR_TAKE_NONE;
    mr_delayed_def def = *mr_ruleset_rule(R->rs, i)->delayed;
    mr_row_key rk;
    char *names[MR_SD_MAX_KEY_COLS];
    key_from_schema(R, &def, &rk, names);
    char why[160];
    if (!mr_delayed_read_shape(S->text, R->tok, &S->st, &def, &rd, why, sizeof why))
        return untouched(R, i, why);
    if (def.mode == MR_DELAYED_MEMORY)
        return memory_read(R, S, i, &rd, &def);
    return staged_read(R, S, i, &rd, &def);
}
