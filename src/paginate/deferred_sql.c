/*
 * paginate/deferred_sql.c - deep pages of one table to a deferred join (see
 * paginate/deferred_sql.h): the checks that keep every statement it does not fully
 * understand untouched, the depth guardrail, and the splice.
 *
 * Pure, any thread. Owns nothing; reads the caller's text and tokens and
 * appends to the caller's buffer.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/paginate/deferred_sql.h"
#include "myrewrite/sql/quote.h"
#include "myrewrite/sql/token_value.h"

/* Flags that mean the statement is not read whole: never touched. */
#define UNREADABLE                                                                                 \
    (SQL_SF_UNION | SQL_SF_EXEC_COMMENT | SQL_SF_MULTI_STMT | SQL_SF_UNSUPPORTED |                 \
     SQL_SF_LEX_ERROR | SQL_SF_OVERFLOW | SQL_SF_PAREN | SQL_SF_WITH | SQL_SF_INTO)

/* Flags of shapes the deferred join does not take (the guardrail still does). */
#define NOT_REWRITTEN                                                                              \
    (SQL_SF_JOIN | SQL_SF_SUBQUERY | SQL_SF_DERIVED | SQL_SF_GROUP_BY | SQL_SF_HAVING |            \
     SQL_SF_WINDOW | SQL_SF_MULTI_TABLE | SQL_SF_HINT)

typedef struct pg {
    const char *text;
    size_t len;
    const sql_token *tok;
    const sql_stmt *st;
    const mr_paginate_def *def;
    const sql_table_ref *ref; /* the one table (rewrite checks) */
    mr_pag_info *info;
} pg;

static mr_pag_outcome pass(pg *P, const char *why)
{
    P->info->why = why;
    return MR_PAG_PASS;
}

/* ---- tokens ------------------------------------------------------------------ */

/* First non-comment token at or after i (and before end), or end. */
static uint32_t skip(const pg *P, uint32_t i, uint32_t end)
{
    while (i < end && (P->tok[i].kind == SQL_TOK_COMMENT))
        i++;
    return i;
}

/* Last non-comment token of [first, end). */
static uint32_t last_of(const pg *P, uint32_t first, uint32_t end)
{
    uint32_t i = end - 1;
    while (i > first && P->tok[i].kind == SQL_TOK_COMMENT)
        i--;
    return i;
}

static bool name_is(const pg *P, uint32_t i, const char *want, bool anycase)
{
    char name[MR_SQL_NAME_BUF];
    if (i == SQL_NONE || !sql_tok_name(&P->tok[i], P->text, name, sizeof name))
        return false;
    return anycase ? strcasecmp(name, want) == 0 : strcmp(name, want) == 0;
}

/* A LIMIT operand that is a plain whole number (saturating at UINT64_MAX). */
static bool read_count(const pg *P, uint32_t i, uint64_t *v)
{
    const sql_token *t = &P->tok[i];
    if (t->kind != SQL_TOK_NUMBER)
        return false;
    *v = 0;
    for (uint32_t k = 0; k < t->len; k++) {
        char c = P->text[t->off + k];
        if (c < '0' || c > '9')
            return false;
        unsigned d = (unsigned)(c - '0');
        *v = *v > (UINT64_MAX - d) / 10 ? UINT64_MAX : *v * 10 + d;
    }
    return true;
}

static void put_range(const pg *P, mr_buf *b, uint32_t first, uint32_t last)
{
    const sql_token *a = &P->tok[first], *z = &P->tok[last];
    mr_buf_put(b, P->text + a->off, (size_t)z->off + z->len - a->off);
}

/* ---- the table ----------------------------------------------------------------- */

static bool ref_is_table(const pg *P, const sql_table_ref *ref, const char *schema)
{
    const mr_paginate_def *d = P->def;
    if (ref->derived || ref->name == SQL_NONE)
        return false;
    if (d->table && !name_is(P, ref->name, d->table, false))
        return false;
    if (!d->schema)
        return true;
    if (ref->schema != SQL_NONE)
        return name_is(P, ref->schema, d->schema, false);
    return schema && strcmp(schema, d->schema) == 0;
}

static bool reads_table(const pg *P, const char *schema)
{
    for (unsigned i = 0; i < P->st->ntables; i++)
        if (ref_is_table(P, &P->st->tables[i], schema))
            return true;
    return false;
}

/* The reference is exactly [schema.]name [[AS] alias]: no partitions or index hints. */
static bool plain_ref(const pg *P)
{
    const sql_table_ref *r = P->ref;
    uint32_t last = r->alias != SQL_NONE ? r->alias : r->name;
    uint32_t first = r->schema != SQL_NONE ? r->schema : r->name;
    return skip(P, r->span.first, r->span.end) == first &&
           last_of(P, r->span.first, r->span.end) == last;
}

/* The alias, or [schema.]name, as written: what qualifies a column. */
static void put_qualifier(const pg *P, mr_buf *b)
{
    const sql_table_ref *r = P->ref;
    if (r->alias != SQL_NONE)
        put_range(P, b, r->alias, r->alias);
    else
        put_range(P, b, r->schema != SQL_NONE ? r->schema : r->name, r->name);
}

/* ---- LIMIT and the guardrail --------------------------------------------------- */

/* Which `?` of the statement the offset (token `at`) is, and how many
 * there are: an execute's values are found by position. */
static void count_params(pg *P, uint32_t at)
{
    P->info->offset_index = P->info->nparams = 0;
    for (uint32_t k = 0; k < P->st->end; k++) {
        if (P->tok[k].kind != SQL_TOK_PARAM)
            continue;
        P->info->offset_index += k < at;
        P->info->nparams++;
    }
}

static mr_pag_outcome read_limit(pg *P, uint64_t *off)
{
    const sql_limit *l = &P->st->limit;
    uint64_t count;
    if (l->kw == SQL_NONE || l->offset == SQL_NONE)
        return pass(P, "no LIMIT with an offset");
    P->info->offset_param = P->tok[l->offset].kind == SQL_TOK_PARAM;
    if (P->info->offset_param)
        count_params(P, l->offset);
    *off = 0;
    if ((!P->info->offset_param && !read_count(P, l->offset, off)) ||
        (P->tok[l->count].kind != SQL_TOK_PARAM && !read_count(P, l->count, &count)))
        return pass(P, "a LIMIT operand is not a plain number or ?");
    P->info->offset = *off;
    return MR_PAG_REWRITE;
}

/* ---- the shape the rewrite takes ------------------------------------------------- */

/* SELECT list FROM ref [WHERE ...] ORDER BY ... LIMIT ... and nothing else. */
static bool clauses_in_order(const pg *P)
{
    const sql_stmt *st = P->st;
    uint32_t e = st->end;
    if (st->select_list.body.first == SQL_NONE || st->from.kw == SQL_NONE ||
        st->order_by.kw == SQL_NONE || skip(P, st->verb + 1, e) != st->select_list.body.first)
        return false;
    uint32_t i = skip(P, st->select_list.body.end, e);
    if (i != st->from.kw || skip(P, i + 1, e) != P->ref->span.first)
        return false;
    i = skip(P, P->ref->span.end, e);
    if (st->where.kw != SQL_NONE) {
        if (i != st->where.kw || st->where.body.first == SQL_NONE)
            return false;
        i = skip(P, st->where.body.end, e);
    }
    if (i != st->order_by.kw || st->order_by.body.first == SQL_NONE)
        return false;
    i = skip(P, i + 1, e);
    if (P->tok[i].kind != SQL_TOK_WORD || P->tok[i].id != SQL_KW_BY ||
        skip(P, i + 1, e) != st->order_by.body.first)
        return false;
    if (skip(P, st->order_by.body.end, e) != st->limit.kw)
        return false;
    return skip(P, st->limit.span.end, e) == e;
}

/* Is token i the name of a call to one of `names` (a NULL-terminated list)? */
static bool calls(const pg *P, uint32_t i, uint32_t end, const char *const *names)
{
    uint32_t next = skip(P, i + 1, end);
    if (P->tok[i].kind != SQL_TOK_WORD || next >= end || P->tok[next].kind != SQL_TOK_LPAREN)
        return false;
    for (; *names; names++)
        if (name_is(P, i, *names, true))
            return true;
    return false;
}

static const char *const AGGREGATES[] = {
    "count",    "sum",     "avg",        "min",         "max",           "group_concat",
    "std",      "stddev",  "stddev_pop", "stddev_samp", "variance",      "var_pop",
    "var_samp", "bit_and", "bit_or",     "bit_xor",     "json_arrayagg", "json_objectagg",
    NULL,
};
static const char *const VOLATILE[] = {"rand", "uuid", "uuid_short", "sys_guid", NULL};

/* Aggregates or := in the select list change meaning over a page of keys. */
static const char *select_list_problem(const pg *P)
{
    sql_range r = P->st->select_list.body;
    for (uint32_t i = r.first; i < r.end; i++) {
        if (calls(P, i, r.end, AGGREGATES))
            return "the select list aggregates";
        if (P->tok[i].kind == SQL_TOK_OP && P->tok[i].id == SQL_OP_ASSIGN)
            return "the select list assigns variables";
        if (P->tok[i].kind == SQL_TOK_WORD && P->tok[i].id == SQL_KW_OVER)
            return "the select list has window functions";
    }
    return NULL;
}

/* Does a select-list item [first, end) end with an alias? A quoted-string
 * alias sets *quoted (its uses are not followed: the caller passes). */
static uint32_t item_alias(const pg *P, uint32_t first, uint32_t end, bool *quoted)
{
    uint32_t last = last_of(P, first, end);
    if (last <= first)
        return SQL_NONE;
    uint32_t prev = last - 1;
    while (prev > first && P->tok[prev].kind == SQL_TOK_COMMENT)
        prev--;
    uint8_t pk = P->tok[prev].kind, lk = P->tok[last].kind;
    if (pk == SQL_TOK_DOT)
        return SQL_NONE;
    if (lk == SQL_TOK_STRING)
        *quoted |= pk == SQL_TOK_WORD || pk == SQL_TOK_QIDENT || pk == SQL_TOK_RPAREN ||
                   pk == SQL_TOK_NUMBER || pk == SQL_TOK_STRING;
    return lk == SQL_TOK_WORD || lk == SQL_TOK_QIDENT ? last : SQL_NONE;
}

/* Does any identifier of the ORDER BY name the alias token a? */
static bool order_uses(const pg *P, uint32_t a)
{
    char alias[MR_SQL_NAME_BUF], name[MR_SQL_NAME_BUF];
    if (!sql_tok_name(&P->tok[a], P->text, alias, sizeof alias))
        return true; /* unreadable alias: assume the worst */
    sql_range r = P->st->order_by.body;
    for (uint32_t i = r.first; i < r.end; i++)
        if (sql_tok_name(&P->tok[i], P->text, name, sizeof name) && strcasecmp(name, alias) == 0)
            return true;
    return false;
}

/* ORDER BY must mean the same in the inner query, whose select list is
 * only the key: no select-list aliases, no positions, no `?`, no RAND(). */
static const char *order_problem(const pg *P)
{
    const sql_stmt *st = P->st;
    sql_range r = st->order_by.body;
    for (uint32_t i = r.first; i < r.end; i++) {
        if (P->tok[i].kind == SQL_TOK_PARAM)
            return "ORDER BY has ? parameters";
        if (calls(P, i, r.end, VOLATILE))
            return "ORDER BY is not deterministic (RAND, UUID)";
    }
    for (unsigned k = 0; k < st->norder; k++) {
        sql_range e = st->order[k].expr;
        uint32_t f = skip(P, e.first, e.end);
        if (f < e.end && P->tok[f].kind == SQL_TOK_NUMBER && last_of(P, e.first, e.end) == f)
            return "ORDER BY a select-list position";
    }
    sql_range s = st->select_list.body;
    bool quoted = false;
    int depth = 0;
    for (uint32_t i = s.first, item = s.first; i <= s.end; i++) {
        uint8_t kind = i < s.end ? P->tok[i].kind : SQL_TOK_COMMA;
        depth += kind == SQL_TOK_LPAREN ? 1 : kind == SQL_TOK_RPAREN ? -1 : 0;
        if (kind != SQL_TOK_COMMA || depth > 0)
            continue;
        uint32_t a = item_alias(P, item, i, &quoted);
        if (a != SQL_NONE && order_uses(P, a))
            return "ORDER BY names a select-list alias";
        item = i + 1;
    }
    return quoted ? "the select list has a quoted alias" : NULL;
}

/* The column token of an ORDER BY item that is a plain column of the
 * table (c, q.c or s.t.c), or SQL_NONE. */
static uint32_t order_column(const pg *P, const sql_order_item *it)
{
    uint32_t t[5], n = 0;
    for (uint32_t i = it->expr.first; i < it->expr.end; i++)
        if (P->tok[i].kind != SQL_TOK_COMMENT) {
            if (n == 5)
                return SQL_NONE;
            t[n++] = i;
        }
    char name[MR_SQL_NAME_BUF];
    if (n == 1)
        return sql_tok_name(&P->tok[t[0]], P->text, name, sizeof name) ? t[0] : SQL_NONE;
    if (n != 3 && n != 5)
        return SQL_NONE;
    for (uint32_t k = 1; k < n; k += 2)
        if (P->tok[t[k]].kind != SQL_TOK_DOT)
            return SQL_NONE;
    return sql_tok_name(&P->tok[t[n - 1]], P->text, name, sizeof name) ? t[n - 1] : SQL_NONE;
}

/* Bit k set: key column k is an ORDER BY item already. */
static uint32_t keys_ordered(const pg *P)
{
    uint32_t have = 0;
    for (unsigned k = 0; k < P->st->norder; k++) {
        uint32_t c = order_column(P, &P->st->order[k]);
        for (size_t j = 0; c != SQL_NONE && j < P->def->nkeys && j < 32; j++)
            if (name_is(P, c, P->def->keys[j], true))
                have |= 1u << j;
    }
    return have;
}

/* ---- the splice ------------------------------------------------------------------- */

static void put_keys(const pg *P, mr_buf *b)
{
    for (size_t j = 0; j < P->def->nkeys; j++) {
        if (j)
            mr_buf_put_str(b, ", ");
        mr_sql_put_ident(b, P->def->keys[j]);
    }
}

/* The select list, with a bare `*` item as qualifier.* (a bare * over the
 * join would list the USING columns first). */
static void put_select_list(const pg *P, mr_buf *b)
{
    sql_range s = P->st->select_list.body;
    uint32_t from = s.first, last = last_of(P, s.first, s.end);
    int depth = 0;
    uint32_t prev = SQL_NONE;
    for (uint32_t i = s.first; i <= last; i++) {
        const sql_token *t = &P->tok[i];
        depth += t->kind == SQL_TOK_LPAREN ? 1 : t->kind == SQL_TOK_RPAREN ? -1 : 0;
        if (t->kind == SQL_TOK_COMMENT)
            continue;
        uint32_t next = skip(P, i + 1, s.end);
        bool star = depth == 0 && t->kind == SQL_TOK_OP && t->id == SQL_OP_STAR &&
                    (prev == SQL_NONE || P->tok[prev].kind == SQL_TOK_COMMA) &&
                    (next >= s.end || P->tok[next].kind == SQL_TOK_COMMA);
        if (star) {
            mr_buf_put(b, P->text + P->tok[from].off, t->off - P->tok[from].off);
            put_qualifier(P, b);
            mr_buf_put_str(b, ".*");
            from = i + 1;
        }
        prev = i;
    }
    if (from <= last)
        put_range(P, b, from, last);
}

/* Appended key columns take the direction of the last ORDER BY item: an
 * index on (x) holds (x, key), so ORDER BY x DESC, key DESC is read
 * backwards from it, where x DESC, key ASC would need a filesort. */
static void put_order(const pg *P, mr_buf *b, uint32_t have)
{
    sql_range o = P->st->order_by.body;
    bool desc = P->st->norder > 0 && P->st->order[P->st->norder - 1].desc;
    put_range(P, b, o.first, last_of(P, o.first, o.end));
    for (size_t j = 0; j < P->def->nkeys; j++) {
        if (have & (1u << j))
            continue;
        mr_buf_put_str(b, ", ");
        put_qualifier(P, b);
        mr_buf_put_str(b, ".");
        mr_sql_put_ident(b, P->def->keys[j]);
        if (desc)
            mr_buf_put_str(b, " DESC");
    }
}

static void build(const pg *P, mr_buf *b)
{
    const sql_stmt *st = P->st;
    const sql_table_ref *r = P->ref;
    uint32_t have = keys_ordered(P);
    uint32_t ref_first = skip(P, r->span.first, r->span.end);
    uint32_t ref_last = last_of(P, r->span.first, r->span.end);
    mr_buf_put(b, P->text, P->tok[st->verb].off);
    put_range(P, b, st->verb, st->verb);
    mr_buf_put_str(b, " ");
    put_select_list(P, b);
    mr_buf_put_str(b, " FROM ");
    put_range(P, b, ref_first, ref_last);
    mr_buf_put_str(b, " JOIN (SELECT ");
    put_keys(P, b);
    mr_buf_put_str(b, " FROM ");
    put_range(P, b, ref_first, ref_last);
    if (st->where.kw != SQL_NONE) {
        mr_buf_put_str(b, " ");
        put_range(P, b, st->where.kw, last_of(P, st->where.body.first, st->where.body.end));
    }
    mr_buf_put_str(b, " ORDER BY ");
    put_order(P, b, have);
    mr_buf_put_str(b, " ");
    uint32_t lim_last = last_of(P, st->limit.span.first, st->limit.span.end);
    put_range(P, b, st->limit.kw, lim_last);
    mr_buf_put_str(b, ") AS myrewrite_dj USING (");
    put_keys(P, b);
    mr_buf_put_str(b, ") ORDER BY ");
    put_order(P, b, have);
    const sql_token *z = &P->tok[lim_last];
    size_t tail = (size_t)z->off + z->len;
    mr_buf_put(b, P->text + tail, P->len - tail);
}

/* ---- the decision ------------------------------------------------------------------- */

static mr_pag_outcome rewrite_checks(pg *P)
{
    const sql_stmt *st = P->st;
    if (st->flags & NOT_REWRITTEN)
        return pass(P, "not a single-table SELECT without subqueries, GROUP BY, HAVING, "
                       "window functions or hints");
    if (st->mods)
        return pass(P, "a modifier (DISTINCT, SQL_CALC_FOUND_ROWS, SQL_NO_CACHE, ...)");
    if (st->lock.kind != SQL_LOCK_NONE)
        return pass(P, "a locking clause (FOR UPDATE, LOCK IN SHARE MODE)");
    if (st->ntables != 1)
        return pass(P, "not one table");
    P->ref = &st->tables[0];
    if (P->ref->derived || P->ref->name == SQL_NONE || !plain_ref(P))
        return pass(P, "the table has partitions or index hints");
    if (st->order_by.kw == SQL_NONE || st->norder == 0)
        return pass(P, "no ORDER BY: the page is not defined");
    if (!clauses_in_order(P))
        return pass(P, "clauses other than SELECT FROM WHERE ORDER BY LIMIT");
    const char *why = select_list_problem(P);
    if (!why)
        why = order_problem(P);
    return why ? pass(P, why) : MR_PAG_REWRITE;
}

mr_pag_outcome mr_paginate_sql(const char *text, size_t len, const sql_token *tok,
                               const sql_stmt *st, const mr_paginate_def *def, const char *schema,
                               mr_buf *out, mr_pag_info *info)
{
    pg P = {.text = text, .len = len, .tok = tok, .st = st, .def = def, .info = info};
    info->offset = 0;
    info->offset_param = info->no_key = false;
    info->offset_index = info->nparams = 0;
    if (st->kind != SQL_STMT_SELECT)
        return pass(&P, "not a SELECT");
    if (st->flags & UNREADABLE)
        return pass(&P, "not read whole (UNION, WITH, INTO, executable comment, ...)");
    if (!reads_table(&P, schema))
        return pass(&P, "does not read the rule's table");
    uint64_t off;
    if (read_limit(&P, &off) == MR_PAG_PASS)
        return MR_PAG_PASS;
    if (def->max_offset && off > def->max_offset && !info->offset_param) {
        info->why = "deeper than max_offset";
        return MR_PAG_TOO_DEEP;
    }
    if (off < def->threshold && !info->offset_param)
        return pass(&P, "offset below the threshold");
    if (rewrite_checks(&P) == MR_PAG_PASS)
        return MR_PAG_PASS;
    if (!ref_is_table(&P, P.ref, schema))
        return pass(&P, "does not read the rule's table");
    if (!def->nkeys) {
        info->no_key = true;
        return pass(&P, "the table's key is not known");
    }
    build(&P, out);
    info->why = "deferred join";
    return MR_PAG_REWRITE;
}

bool mr_paginate_takes(const char *text, size_t len, const sql_token *tok, const sql_stmt *st,
                       const mr_paginate_def *def, const char *schema, const char **why)
{
    mr_pag_info info = {0};
    pg P = {.text = text, .len = len, .tok = tok, .st = st, .def = def, .info = &info};
    if (st->kind != SQL_STMT_SELECT || (st->flags & UNREADABLE))
        info.why = "not a SELECT read whole";
    else if (rewrite_checks(&P) != MR_PAG_PASS && !ref_is_table(&P, P.ref, schema))
        info.why = "does not read the rule's table";
    else if (!info.why)
        return true;
    *why = info.why;
    return false;
}

void mr_paginate_too_deep_text(uint64_t max_offset, const char *where, uint64_t offset, char *buf,
                               size_t size)
{
    snprintf(buf, size,
             "myrewrite: OFFSET %llu is deeper than the %llu allowed for %s; "
             "page with a keyset instead (WHERE key > last key seen ORDER BY key LIMIT n)",
             (unsigned long long)offset, (unsigned long long)max_offset,
             where ? where : "this table");
}

void mr_paginate_too_deep_msg(const mr_paginate_def *def, uint64_t offset, char *buf, size_t size)
{
    char where[2 * 65 + 2];
    if (def->table)
        snprintf(where, sizeof where, "%s%s%s", def->schema ? def->schema : "",
                 def->schema ? "." : "", def->table);
    mr_paginate_too_deep_text(def->max_offset, def->table ? where : NULL, offset, buf, size);
}
