/* SPDX-License-Identifier: Apache-2.0 */
/* sql/stmt.c - shallow recognizer: statement kind, modifiers, tables and
 * clause token ranges for SELECT/INSERT/REPLACE/UPDATE/DELETE, kind only
 * (plus a target name) for the rest.
 * Thread: pure, any thread. Owns nothing; fills the caller's sql_stmt.
 * Iterative throughout (parenthesized groups are skipped by counting), so
 * hostile nesting cannot exhaust the stack. */
#include "myrewrite/sql/stmt.h"

#include <string.h>
#include <strings.h>

typedef struct parser {
    const char *text;
    const sql_token *t;
    uint32_t n;     /* end of the statement being analysed */
    uint32_t nrefs; /* table references seen (stored or not) */
    sql_stmt *st;
} parser;

/* Stop conditions for scan_until: a run of tokens ends at the first of
 * these found at its own depth (and always at an unmatched ')'). */
enum {
    ST_CLAUSE = 1u << 0, /* FROM WHERE GROUP HAVING WINDOW ORDER LIMIT FOR LOCK INTO UNION ... */
    ST_COMMA = 1u << 1,
    ST_JOIN = 1u << 2, /* JOIN, INNER, CROSS, NATURAL, STRAIGHT_JOIN, LEFT/RIGHT [OUTER] JOIN */
    ST_SET = 1u << 3,
    ST_USING = 1u << 4,
    ST_ONDUP = 1u << 5, /* ON DUPLICATE */
    ST_AS = 1u << 6
};

/* Clauses a statement may carry after its head (parse_tail). */
enum {
    CL_FROM = 1u << 0,
    CL_WHERE = 1u << 1,
    CL_GROUP = 1u << 2,
    CL_HAVING = 1u << 3,
    CL_WINDOW = 1u << 4,
    CL_ORDER = 1u << 5,
    CL_LIMIT = 1u << 6,
    CL_LOCK = 1u << 7,
    CL_INTO = 1u << 8,
    CL_UNION = 1u << 9,
    CL_SELECT = 0x3ff,
    CL_DML = CL_WHERE | CL_ORDER | CL_LIMIT
};

#define M(m) (1u << SQL_MOD_##m)

/* ---- token access --------------------------------------------------------- */

static bool is_skip(const sql_token *t)
{
    return t->kind == SQL_TOK_COMMENT || t->kind == SQL_TOK_EXEC_COMMENT;
}

static uint32_t sig(const parser *p, uint32_t i)
{
    while (i < p->n && is_skip(&p->t[i]))
        i++;
    return i;
}

static uint32_t nx(const parser *p, uint32_t i) { return i < p->n ? sig(p, i + 1) : p->n; }

/* End of the last significant token before index j, but not before
 * first: ranges never run backwards over skipped comments. */
static uint32_t back_end(const parser *p, uint32_t first, uint32_t j)
{
    while (j > first && is_skip(&p->t[j - 1]))
        j--;
    return j < first ? first : j;
}

static bool is_kind(const parser *p, uint32_t i, sql_tok_kind k)
{
    return i < p->n && p->t[i].kind == k;
}

static bool is_kw(const parser *p, uint32_t i, sql_kw kw)
{
    return i < p->n && p->t[i].kind == SQL_TOK_WORD && p->t[i].id == kw;
}

static bool is_op(const parser *p, uint32_t i, sql_op op)
{
    return i < p->n && p->t[i].kind == SQL_TOK_OP && p->t[i].id == op;
}

/* A name usable without quotes here: quoted, or a non-reserved word. */
static bool is_ident(const parser *p, uint32_t i)
{
    if (i >= p->n)
        return false;
    const sql_token *t = &p->t[i];
    return t->kind == SQL_TOK_QIDENT ||
           (t->kind == SQL_TOK_WORD && !(sql_kw_flags((sql_kw)t->id) & SQL_KWF_RESERVED));
}

static bool is_number_or_param(const parser *p, uint32_t i)
{
    return is_kind(p, i, SQL_TOK_NUMBER) || is_kind(p, i, SQL_TOK_PARAM);
}

static void unsupported(parser *p) { p->st->flags |= SQL_SF_UNSUPPORTED; }

/* ---- groups and runs ---------------------------------------------------------- */

/* SELECT or WITH after any number of '(' : a query expression starts here. */
static bool starts_query(const parser *p, uint32_t i)
{
    while (is_kind(p, i, SQL_TOK_LPAREN))
        i = nx(p, i);
    return is_kw(p, i, SQL_KW_SELECT) || is_kw(p, i, SQL_KW_WITH);
}

/* i at '(' : index past the matching ')'. Subqueries nested inside are
 * flagged; the group's own opener is the caller's business. */
static uint32_t skip_group(parser *p, uint32_t i)
{
    uint32_t depth = 0;
    for (; i < p->n; i++) {
        const sql_token *t = &p->t[i];
        if (t->kind == SQL_TOK_LPAREN) {
            /* only the innermost '(' before SELECT is tested: calling
             * starts_query here would rescan runs of '(' quadratically */
            uint32_t k = nx(p, i);
            if (++depth > 1 && (is_kw(p, k, SQL_KW_SELECT) || is_kw(p, k, SQL_KW_WITH)))
                p->st->flags |= SQL_SF_SUBQUERY;
        } else if (t->kind == SQL_TOK_RPAREN && --depth == 0) {
            return i + 1;
        }
    }
    unsupported(p); /* unbalanced */
    return p->n;
}

static bool clause_word(sql_kw kw)
{
    switch (kw) {
    case SQL_KW_FROM:
    case SQL_KW_WHERE:
    case SQL_KW_GROUP:
    case SQL_KW_HAVING:
    case SQL_KW_WINDOW:
    case SQL_KW_ORDER:
    case SQL_KW_LIMIT:
    case SQL_KW_FOR:
    case SQL_KW_LOCK:
    case SQL_KW_INTO:
    case SQL_KW_UNION:
    case SQL_KW_EXCEPT:
    case SQL_KW_INTERSECT:
    case SQL_KW_PROCEDURE: return true;
    default: return false;
    }
}

static bool is_stop(const parser *p, uint32_t i, unsigned stop)
{
    const sql_token *t = &p->t[i];
    if (t->kind == SQL_TOK_RPAREN)
        return true;
    if (t->kind == SQL_TOK_COMMA)
        return stop & ST_COMMA;
    if (t->kind != SQL_TOK_WORD)
        return false;
    sql_kw kw = (sql_kw)t->id;
    switch (kw) {
    case SQL_KW_JOIN:
    case SQL_KW_INNER:
    case SQL_KW_CROSS:
    case SQL_KW_NATURAL:
    case SQL_KW_STRAIGHT_JOIN: return stop & ST_JOIN;
    case SQL_KW_LEFT:
    case SQL_KW_RIGHT: /* not the LEFT() function */
        return (stop & ST_JOIN) &&
               (is_kw(p, nx(p, i), SQL_KW_JOIN) || is_kw(p, nx(p, i), SQL_KW_OUTER));
    case SQL_KW_SET: return stop & ST_SET;
    case SQL_KW_USING: return stop & ST_USING;
    case SQL_KW_AS: return stop & ST_AS;
    case SQL_KW_ON: return (stop & ST_ONDUP) && is_kw(p, nx(p, i), SQL_KW_DUPLICATE);
    default: return (stop & ST_CLAUSE) && clause_word(kw);
    }
}

/* Tokens from i up to a stop token at this depth; returns the stop index
 * (or the end) and, if r, the range of significant tokens consumed. */
static uint32_t scan_until(parser *p, uint32_t i, unsigned stop, sql_range *r)
{
    i = sig(p, i);
    uint32_t first = i, last_end = i;
    while (i < p->n && !is_stop(p, i, stop)) {
        if (p->t[i].kind == SQL_TOK_LPAREN) {
            if (starts_query(p, nx(p, i)))
                p->st->flags |= SQL_SF_SUBQUERY;
            i = skip_group(p, i);
        } else {
            i++;
        }
        last_end = i;
        i = sig(p, i);
    }
    if (r) {
        r->first = first;
        r->end = last_end;
    }
    return i;
}

/* ---- names and table references ------------------------------------------------ */

/* name[.name[.name]] with an optional trailing .* (DELETE t.*). After a
 * dot any word is a name, reserved or not (t.order). */
static uint32_t parse_dotted(const parser *p, uint32_t i, uint32_t parts[3], int *np)
{
    *np = 0;
    if (!is_ident(p, i))
        return i;
    parts[(*np)++] = i;
    uint32_t j = nx(p, i);
    while (is_kind(p, j, SQL_TOK_DOT)) {
        uint32_t k = nx(p, j);
        if (is_op(p, k, SQL_OP_STAR))
            return nx(p, k);
        if (*np == 3 || !(is_kind(p, k, SQL_TOK_WORD) || is_kind(p, k, SQL_TOK_QIDENT)))
            break;
        parts[(*np)++] = k;
        j = nx(p, k);
    }
    return j;
}

static void add_table(parser *p, const sql_table_ref *r)
{
    sql_stmt *st = p->st;
    p->nrefs++;
    if (st->ntables < SQL_STMT_MAX_TABLES)
        st->tables[st->ntables++] = *r;
    else
        st->flags |= SQL_SF_OVERFLOW;
}

static sql_table_ref new_ref(uint32_t at)
{
    sql_table_ref r = {{at, at}, SQL_NONE, SQL_NONE, SQL_NONE, false};
    return r;
}

/* schema.table at *i: store it (no alias) and advance; false if absent. */
static bool add_name(parser *p, uint32_t *i)
{
    uint32_t parts[3];
    int np;
    uint32_t j = parse_dotted(p, *i, parts, &np);
    if (np == 0 || np == 3)
        return false;
    sql_table_ref r = new_ref(*i);
    r.name = parts[np - 1];
    r.schema = np == 2 ? parts[0] : SQL_NONE;
    r.span.end = back_end(p, r.span.first, j);
    add_table(p, &r);
    *i = j;
    return true;
}

/* [AS] alias */
static uint32_t parse_alias(parser *p, uint32_t i, uint32_t *alias)
{
    if (is_kw(p, i, SQL_KW_AS)) {
        i = nx(p, i);
        if (!is_ident(p, i) && !is_kind(p, i, SQL_TOK_STRING)) {
            unsupported(p);
            return i;
        }
    } else if (!is_ident(p, i)) {
        return i;
    }
    *alias = i;
    return nx(p, i);
}

/* {USE|IGNORE|FORCE} {INDEX|KEY} [FOR {JOIN|ORDER BY|GROUP BY}] (list) ... */
static uint32_t skip_index_hints(parser *p, uint32_t i)
{
    while (is_kw(p, i, SQL_KW_USE) || is_kw(p, i, SQL_KW_IGNORE) || is_kw(p, i, SQL_KW_FORCE)) {
        uint32_t k = nx(p, i);
        if (!is_kw(p, k, SQL_KW_INDEX) && !is_kw(p, k, SQL_KW_KEY))
            return i;
        k = nx(p, k);
        if (is_kw(p, k, SQL_KW_FOR)) {
            k = nx(p, k);
            if (is_kw(p, k, SQL_KW_ORDER) || is_kw(p, k, SQL_KW_GROUP))
                k = nx(p, k);
            k = nx(p, k); /* JOIN or BY */
        }
        if (!is_kind(p, k, SQL_TOK_LPAREN)) {
            unsupported(p);
            return k;
        }
        i = sig(p, skip_group(p, k));
    }
    return i;
}

/* (subquery) [AS] alias [(columns)], optionally after LATERAL, at j. */
static bool parse_derived(parser *p, uint32_t *i, uint32_t j, sql_table_ref *r)
{
    if (!starts_query(p, nx(p, j))) {
        unsupported(p); /* parenthesized join: not analysed */
        *i = sig(p, skip_group(p, j));
        return false;
    }
    r->derived = true;
    p->st->flags |= SQL_SF_DERIVED;
    j = sig(p, skip_group(p, j));
    j = parse_alias(p, j, &r->alias);
    if (is_kind(p, j, SQL_TOK_LPAREN))
        j = sig(p, skip_group(p, j));
    *i = j;
    return true;
}

/* One table factor at *i; false (and UNSUPPORTED) if not understood. */
static bool parse_factor(parser *p, uint32_t *i)
{
    sql_table_ref r = new_ref(*i);
    bool lateral = is_kw(p, *i, SQL_KW_LATERAL);
    uint32_t j = lateral ? nx(p, *i) : *i;
    if (is_kind(p, j, SQL_TOK_LPAREN)) {
        if (!parse_derived(p, i, j, &r))
            return false;
        j = *i;
    } else if (is_kw(p, j, SQL_KW_DUAL) && !lateral) {
        *i = nx(p, j);
        return true;
    } else {
        uint32_t parts[3];
        int np;
        j = parse_dotted(p, j, parts, &np);
        if (np == 0 || np == 3 || lateral || is_kind(p, j, SQL_TOK_LPAREN)) {
            unsupported(p); /* table functions such as JSON_TABLE(...) too */
            *i = j;
            return false;
        }
        r.name = parts[np - 1];
        r.schema = np == 2 ? parts[0] : SQL_NONE;
        if (is_kw(p, j, SQL_KW_PARTITION) && is_kind(p, nx(p, j), SQL_TOK_LPAREN))
            j = sig(p, skip_group(p, nx(p, j)));
        j = parse_alias(p, j, &r.alias);
        j = skip_index_hints(p, j);
    }
    r.span.end = back_end(p, r.span.first, j);
    add_table(p, &r);
    *i = j;
    return true;
}

/* [NATURAL] [INNER|CROSS|LEFT [OUTER]|RIGHT [OUTER]] JOIN | STRAIGHT_JOIN:
 * index after the operator, or SQL_NONE. */
static uint32_t join_op(const parser *p, uint32_t i)
{
    if (is_kw(p, i, SQL_KW_NATURAL))
        i = nx(p, i);
    if (is_kw(p, i, SQL_KW_LEFT) || is_kw(p, i, SQL_KW_RIGHT)) {
        i = nx(p, i);
        if (is_kw(p, i, SQL_KW_OUTER))
            i = nx(p, i);
    } else if (is_kw(p, i, SQL_KW_INNER) || is_kw(p, i, SQL_KW_CROSS)) {
        i = nx(p, i);
    }
    if (is_kw(p, i, SQL_KW_JOIN) || is_kw(p, i, SQL_KW_STRAIGHT_JOIN))
        return nx(p, i);
    return SQL_NONE;
}

/* ON expr | USING (cols) after a joined factor. */
static uint32_t parse_join_cond(parser *p, uint32_t j, unsigned stop)
{
    if (is_kw(p, j, SQL_KW_ON))
        return scan_until(p, nx(p, j), stop | ST_JOIN | ST_COMMA, NULL);
    if (is_kw(p, j, SQL_KW_USING) && is_kind(p, nx(p, j), SQL_TOK_LPAREN))
        return sig(p, skip_group(p, nx(p, j)));
    return j;
}

/* Table references (comma lists and joins) from i; body gets their range.
 * On anything odd, skips to the next stop token. */
static uint32_t parse_refs(parser *p, uint32_t i, unsigned stop, sql_range *body)
{
    uint32_t first = sig(p, i), j = first;
    bool ok = parse_factor(p, &j);
    while (ok) {
        uint32_t k;
        if (is_kind(p, j, SQL_TOK_COMMA)) {
            k = nx(p, j);
        } else if ((k = join_op(p, j)) == SQL_NONE) {
            break;
        }
        p->st->flags |= SQL_SF_JOIN;
        bool joined = !is_kind(p, j, SQL_TOK_COMMA);
        j = k;
        ok = parse_factor(p, &j);
        if (ok && joined)
            j = parse_join_cond(p, j, stop);
    }
    if (!ok)
        j = scan_until(p, j, stop, NULL);
    body->first = first;
    body->end = back_end(p, first, j);
    return j;
}

/* ---- clauses -------------------------------------------------------------------- */

static void add_assign(parser *p, const sql_assign *a)
{
    sql_stmt *st = p->st;
    if (st->nassign < SQL_STMT_MAX_ASSIGN)
        st->assign[st->nassign++] = *a;
    else
        st->flags |= SQL_SF_OVERFLOW;
}

/* col = expr [, col = expr ...] from i; c->body gets the whole list. */
static uint32_t parse_assigns(parser *p, uint32_t i, unsigned stop, sql_clause *c)
{
    uint32_t j = sig(p, i);
    c->body.first = j;
    for (;;) {
        uint32_t parts[3];
        int np;
        uint32_t k = parse_dotted(p, j, parts, &np);
        if (np == 0 || !is_op(p, k, SQL_OP_EQ)) {
            unsupported(p);
            j = scan_until(p, j, stop, NULL);
            break;
        }
        sql_assign a = {{j, back_end(p, j, k)}, k, {0, 0}};
        j = scan_until(p, nx(p, k), stop | ST_COMMA, &a.expr);
        if (a.expr.first == a.expr.end)
            unsupported(p);
        add_assign(p, &a);
        if (!is_kind(p, j, SQL_TOK_COMMA))
            break;
        j = nx(p, j);
    }
    c->body.end = back_end(p, c->body.first, j);
    return j;
}

/* KW body, e.g. WHERE expr; SQL_NONE if repeated or empty. */
static uint32_t simple_clause(parser *p, uint32_t i, sql_clause *c)
{
    if (c->kw != SQL_NONE)
        return SQL_NONE;
    c->kw = i;
    uint32_t j = scan_until(p, nx(p, i), ST_CLAUSE, &c->body);
    return c->body.first == c->body.end ? SQL_NONE : j;
}

/* GROUP BY / ORDER BY head: index after BY, or SQL_NONE. */
static uint32_t by_head(const parser *p, uint32_t i, const sql_clause *c)
{
    uint32_t by = nx(p, i);
    if (c->kw != SQL_NONE || !is_kw(p, by, SQL_KW_BY))
        return SQL_NONE;
    return nx(p, by);
}

static void add_order(parser *p, sql_range r)
{
    sql_stmt *st = p->st;
    sql_order_item it = {r, SQL_NONE, false};
    uint32_t last = r.end - 1;
    if (r.end - r.first > 1 && (is_kw(p, last, SQL_KW_ASC) || is_kw(p, last, SQL_KW_DESC))) {
        it.dir = last;
        it.desc = is_kw(p, last, SQL_KW_DESC);
        it.expr.end = back_end(p, it.expr.first, last);
    }
    if (st->norder < SQL_STMT_MAX_ORDER)
        st->order[st->norder++] = it;
    else
        st->flags |= SQL_SF_OVERFLOW;
}

static uint32_t parse_order(parser *p, uint32_t i)
{
    sql_clause *c = &p->st->order_by;
    uint32_t j = by_head(p, i, c);
    if (j == SQL_NONE)
        return SQL_NONE;
    bool ok = true;
    c->kw = i;
    c->body.first = j;
    for (;;) {
        sql_range r;
        j = scan_until(p, j, ST_CLAUSE | ST_COMMA, &r);
        if (r.first == r.end) {
            ok = false;
            break;
        }
        add_order(p, r);
        if (!is_kind(p, j, SQL_TOK_COMMA))
            break;
        j = nx(p, j);
    }
    c->body.end = back_end(p, c->body.first, j);
    return ok ? j : SQL_NONE;
}

static uint32_t parse_group(parser *p, uint32_t i)
{
    uint32_t j = by_head(p, i, &p->st->group_by);
    if (j == SQL_NONE)
        return SQL_NONE;
    p->st->flags |= SQL_SF_GROUP_BY;
    p->st->group_by.kw = i;
    j = scan_until(p, j, ST_CLAUSE, &p->st->group_by.body);
    return p->st->group_by.body.first == p->st->group_by.body.end ? SQL_NONE : j;
}

/* LIMIT count | LIMIT offset, count | LIMIT count OFFSET offset */
static uint32_t parse_limit(parser *p, uint32_t i)
{
    sql_limit *l = &p->st->limit;
    if (l->kw != SQL_NONE)
        return SQL_NONE;
    uint32_t a = nx(p, i), j = nx(p, a), b = SQL_NONE;
    l->kw = i;
    if (a < p->n)
        l->count = a;
    if (is_kind(p, j, SQL_TOK_COMMA) || is_kw(p, j, SQL_KW_OFFSET)) {
        l->offset_kw = is_kw(p, j, SQL_KW_OFFSET);
        b = nx(p, j);
        uint32_t other = b < p->n ? b : SQL_NONE;
        if (l->offset_kw) {
            l->offset = other;
        } else {
            l->offset = a;
            l->count = other;
        }
        j = nx(p, b);
    }
    if (!is_number_or_param(p, a) || (b != SQL_NONE && !is_number_or_param(p, b)))
        unsupported(p); /* stored-program variables and expressions */
    l->span.first = i;
    l->span.end = back_end(p, i, j);
    return j;
}

/* NOWAIT | SKIP LOCKED | WAIT n (MariaDB) after a locking clause. */
static uint32_t parse_lock_wait(parser *p, uint32_t j, uint8_t *wait)
{
    if (is_kw(p, j, SQL_KW_NOWAIT)) {
        *wait = SQL_WAIT_NOWAIT;
        return nx(p, j);
    }
    if (is_kw(p, j, SQL_KW_SKIP) && is_kw(p, nx(p, j), SQL_KW_LOCKED)) {
        *wait = SQL_WAIT_SKIP_LOCKED;
        return nx(p, nx(p, j));
    }
    if (is_kind(p, j, SQL_TOK_WORD) && p->t[j].len == 4 &&
        strncasecmp(p->text + p->t[j].off, "wait", 4) == 0 && is_number_or_param(p, nx(p, j))) {
        *wait = SQL_WAIT_SECONDS;
        return nx(p, nx(p, j));
    }
    return j;
}

/* name [, name ...] (FOR UPDATE OF ...). */
static uint32_t skip_name_list(parser *p, uint32_t i)
{
    for (;;) {
        uint32_t parts[3];
        int np;
        i = parse_dotted(p, i, parts, &np);
        if (np == 0)
            unsupported(p);
        if (np == 0 || !is_kind(p, i, SQL_TOK_COMMA))
            return i;
        i = nx(p, i);
    }
}

/* FOR UPDATE / FOR SHARE [OF t, ...] [wait]; LOCK IN SHARE MODE. MySQL
 * allows several (FOR UPDATE OF a FOR SHARE OF b): the span covers all,
 * kind and wait describe the first. */
static uint32_t parse_lock(parser *p, uint32_t i)
{
    sql_lock *lk = &p->st->lock;
    if (lk->kind != SQL_LOCK_NONE)
        return SQL_NONE;
    uint32_t j = i;
    uint8_t first_kind = SQL_LOCK_NONE, first_wait = SQL_WAIT_DEFAULT;
    while (is_kw(p, j, SQL_KW_FOR) || is_kw(p, j, SQL_KW_LOCK)) {
        uint8_t kind, wait = SQL_WAIT_DEFAULT;
        uint32_t k = nx(p, j);
        if (is_kw(p, j, SQL_KW_LOCK)) {
            if (!is_kw(p, k, SQL_KW_IN) || !is_kw(p, nx(p, k), SQL_KW_SHARE) ||
                !is_kw(p, nx(p, nx(p, k)), SQL_KW_MODE))
                return SQL_NONE;
            kind = SQL_LOCK_IN_SHARE_MODE;
            k = nx(p, nx(p, nx(p, k)));
        } else if (is_kw(p, k, SQL_KW_UPDATE) || is_kw(p, k, SQL_KW_SHARE)) {
            kind = is_kw(p, k, SQL_KW_UPDATE) ? SQL_LOCK_FOR_UPDATE : SQL_LOCK_FOR_SHARE;
            k = nx(p, k);
            if (is_kw(p, k, SQL_KW_OF))
                k = skip_name_list(p, nx(p, k));
            k = parse_lock_wait(p, k, &wait);
        } else {
            return SQL_NONE;
        }
        if (first_kind == SQL_LOCK_NONE) {
            first_kind = kind;
            first_wait = wait;
        }
        j = k;
    }
    lk->kind = first_kind;
    lk->wait = first_wait;
    lk->span.first = i;
    lk->span.end = back_end(p, i, j);
    return j;
}

/* FROM refs as a SELECT clause. */
static uint32_t parse_from(parser *p, uint32_t i)
{
    if (p->st->from.kw != SQL_NONE)
        return SQL_NONE;
    p->st->from.kw = i;
    return parse_refs(p, nx(p, i), ST_CLAUSE, &p->st->from.body);
}

static unsigned clause_bit(sql_kw kw)
{
    switch (kw) {
    case SQL_KW_FROM: return CL_FROM;
    case SQL_KW_WHERE: return CL_WHERE;
    case SQL_KW_GROUP: return CL_GROUP;
    case SQL_KW_HAVING: return CL_HAVING;
    case SQL_KW_WINDOW: return CL_WINDOW;
    case SQL_KW_ORDER: return CL_ORDER;
    case SQL_KW_LIMIT: return CL_LIMIT;
    case SQL_KW_FOR:
    case SQL_KW_LOCK: return CL_LOCK;
    case SQL_KW_INTO: return CL_INTO;
    case SQL_KW_UNION:
    case SQL_KW_EXCEPT:
    case SQL_KW_INTERSECT: return CL_UNION;
    default: return 0;
    }
}

/* One clause at i: index after it, p->n to stop, SQL_NONE if not allowed
 * or malformed. */
static uint32_t parse_clause(parser *p, uint32_t i, unsigned allowed)
{
    sql_stmt *st = p->st;
    sql_kw kw = p->t[i].kind == SQL_TOK_WORD ? (sql_kw)p->t[i].id : SQL_KW_NONE;
    if (!(clause_bit(kw) & allowed))
        return SQL_NONE;
    switch (kw) {
    case SQL_KW_FROM: return parse_from(p, i);
    case SQL_KW_WHERE: return simple_clause(p, i, &st->where);
    case SQL_KW_GROUP: return parse_group(p, i);
    case SQL_KW_ORDER: return parse_order(p, i);
    case SQL_KW_LIMIT: return parse_limit(p, i);
    case SQL_KW_FOR:
    case SQL_KW_LOCK: return parse_lock(p, i);
    case SQL_KW_HAVING: st->flags |= SQL_SF_HAVING; return simple_clause(p, i, &st->having);
    case SQL_KW_WINDOW: {
        sql_clause w = {SQL_NONE, {SQL_NONE, SQL_NONE}};
        st->flags |= SQL_SF_WINDOW;
        return simple_clause(p, i, &w);
    }
    case SQL_KW_INTO: st->flags |= SQL_SF_INTO; return scan_until(p, nx(p, i), ST_CLAUSE, NULL);
    default: /* UNION, EXCEPT, INTERSECT */ st->flags |= SQL_SF_UNION; return p->n;
    }
}

/* Clauses after the statement head, in any order, each at most once. */
static void parse_tail(parser *p, uint32_t i, unsigned allowed)
{
    i = sig(p, i);
    while (i < p->n) {
        uint32_t j = parse_clause(p, i, allowed);
        if (j == SQL_NONE || j <= i) {
            unsupported(p);
            return;
        }
        i = sig(p, j);
    }
}

/* Modifier keywords allowed by mask, in any order, from i. */
static uint32_t parse_mods(parser *p, uint32_t i, uint32_t allowed)
{
    static const uint16_t kw_of_mod[SQL_MOD__COUNT] = {
        [SQL_MOD_DELAYED] = SQL_KW_DELAYED,
        [SQL_MOD_LOW_PRIORITY] = SQL_KW_LOW_PRIORITY,
        [SQL_MOD_HIGH_PRIORITY] = SQL_KW_HIGH_PRIORITY,
        [SQL_MOD_IGNORE] = SQL_KW_IGNORE,
        [SQL_MOD_QUICK] = SQL_KW_QUICK,
        [SQL_MOD_ALL] = SQL_KW_ALL,
        [SQL_MOD_DISTINCT] = SQL_KW_DISTINCT,
        [SQL_MOD_DISTINCTROW] = SQL_KW_DISTINCTROW,
        [SQL_MOD_STRAIGHT_JOIN] = SQL_KW_STRAIGHT_JOIN,
        [SQL_MOD_SQL_CALC_FOUND_ROWS] = SQL_KW_SQL_CALC_FOUND_ROWS,
        [SQL_MOD_SQL_NO_CACHE] = SQL_KW_SQL_NO_CACHE,
        [SQL_MOD_SQL_CACHE] = SQL_KW_SQL_CACHE,
        [SQL_MOD_SQL_SMALL_RESULT] = SQL_KW_SQL_SMALL_RESULT,
        [SQL_MOD_SQL_BIG_RESULT] = SQL_KW_SQL_BIG_RESULT,
        [SQL_MOD_SQL_BUFFER_RESULT] = SQL_KW_SQL_BUFFER_RESULT,
    };
    for (;;) {
        unsigned m = 0;
        while (m < SQL_MOD__COUNT && !((allowed >> m) & 1 && is_kw(p, i, (sql_kw)kw_of_mod[m])))
            m++;
        if (m == SQL_MOD__COUNT)
            return i;
        p->st->mods |= 1u << m;
        if (p->st->mod_tok[m] == SQL_NONE)
            p->st->mod_tok[m] = i;
        i = nx(p, i);
    }
}

/* ---- statements ------------------------------------------------------------------- */

static void parse_select(parser *p, uint32_t i)
{
    sql_stmt *st = p->st;
    st->kind = SQL_STMT_SELECT;
    st->select_list.kw = i;
    i = parse_mods(p, nx(p, i),
                   M(ALL) | M(DISTINCT) | M(DISTINCTROW) | M(HIGH_PRIORITY) | M(STRAIGHT_JOIN) |
                       M(SQL_SMALL_RESULT) | M(SQL_BIG_RESULT) | M(SQL_BUFFER_RESULT) |
                       M(SQL_NO_CACHE) | M(SQL_CACHE) | M(SQL_CALC_FOUND_ROWS));
    i = scan_until(p, i, ST_CLAUSE, &st->select_list.body);
    if (st->select_list.body.first == st->select_list.body.end)
        unsupported(p);
    parse_tail(p, i, CL_SELECT);
}

static void parse_update(parser *p, uint32_t i)
{
    sql_stmt *st = p->st;
    st->kind = SQL_STMT_UPDATE;
    i = parse_mods(p, nx(p, i), M(LOW_PRIORITY) | M(IGNORE) | M(DELAYED));
    i = parse_refs(p, i, ST_CLAUSE | ST_SET, &st->from.body);
    if (!is_kw(p, i, SQL_KW_SET)) {
        unsupported(p);
        return;
    }
    st->set.kw = i;
    i = parse_assigns(p, nx(p, i), ST_CLAUSE, &st->set);
    parse_tail(p, i, CL_DML);
}

/* DELETE FROM t ... | DELETE t1, t2 FROM refs ... | DELETE FROM t1, t2 USING refs ... */
static void parse_delete(parser *p, uint32_t i)
{
    sql_stmt *st = p->st;
    st->kind = SQL_STMT_DELETE;
    i = parse_mods(p, nx(p, i), M(LOW_PRIORITY) | M(QUICK) | M(IGNORE) | M(DELAYED));
    uint32_t join = st->flags & SQL_SF_JOIN;
    sql_range targets;
    if (is_kw(p, i, SQL_KW_FROM)) {
        st->from.kw = i;
        i = parse_refs(p, nx(p, i), ST_CLAUSE | ST_USING, &st->from.body);
        if (is_kw(p, i, SQL_KW_USING)) {
            st->flags = (st->flags & ~(uint32_t)SQL_SF_JOIN) | join; /* a target list */
            i = parse_refs(p, nx(p, i), ST_CLAUSE, &targets);
        }
    } else {
        i = parse_refs(p, i, ST_CLAUSE, &targets);
        st->flags = (st->flags & ~(uint32_t)SQL_SF_JOIN) | join;
        if (!is_kw(p, i, SQL_KW_FROM)) {
            unsupported(p);
            return;
        }
        st->from.kw = i;
        i = parse_refs(p, nx(p, i), ST_CLAUSE, &st->from.body);
    }
    parse_tail(p, i, CL_DML);
}

/* (row), (row) ... or ROW(row), ROW(row) ... after VALUES. */
static uint32_t parse_rows(parser *p, uint32_t i, sql_range *body)
{
    body->first = i;
    for (;;) {
        if (is_kw(p, i, SQL_KW_ROW))
            i = nx(p, i);
        if (!is_kind(p, i, SQL_TOK_LPAREN)) {
            unsupported(p);
            break;
        }
        i = sig(p, skip_group(p, i));
        if (!is_kind(p, i, SQL_TOK_COMMA))
            break;
        i = nx(p, i);
    }
    body->end = back_end(p, body->first, i);
    return i;
}

/* VALUES rows | SET assignments | SELECT/TABLE/(query) after the target. */
static uint32_t parse_insert_source(parser *p, uint32_t i)
{
    sql_stmt *st = p->st;
    if (is_kw(p, i, SQL_KW_VALUES) || is_kw(p, i, SQL_KW_VALUE)) {
        st->values.kw = i;
        return parse_rows(p, nx(p, i), &st->values.body);
    }
    if (is_kw(p, i, SQL_KW_SET)) {
        st->set.kw = i;
        return parse_assigns(p, nx(p, i), ST_ONDUP | ST_AS, &st->set);
    }
    if (starts_query(p, i) || is_kw(p, i, SQL_KW_TABLE)) {
        st->flags |= SQL_SF_INSERT_SELECT;
        return scan_until(p, i, ST_ONDUP, NULL);
    }
    unsupported(p);
    return p->n;
}

/* [AS alias [(cols)]] [ON DUPLICATE KEY UPDATE assignments] */
static uint32_t parse_insert_end(parser *p, uint32_t i)
{
    sql_stmt *st = p->st;
    if (is_kw(p, i, SQL_KW_AS)) {
        i = nx(p, i);
        if (is_ident(p, i))
            i = nx(p, i);
        if (is_kind(p, i, SQL_TOK_LPAREN))
            i = sig(p, skip_group(p, i));
    }
    uint32_t d = nx(p, i), k = nx(p, d), u = nx(p, k);
    if (is_kw(p, i, SQL_KW_ON) && is_kw(p, d, SQL_KW_DUPLICATE) && is_kw(p, k, SQL_KW_KEY) &&
        is_kw(p, u, SQL_KW_UPDATE)) {
        st->flags |= SQL_SF_ON_DUPLICATE;
        st->on_dup.kw = i;
        i = scan_until(p, nx(p, u), 0, &st->on_dup.body);
    }
    return i;
}

static void parse_insert(parser *p, uint32_t i, bool replace)
{
    sql_stmt *st = p->st;
    st->kind = replace ? SQL_STMT_REPLACE : SQL_STMT_INSERT;
    i = parse_mods(p, nx(p, i), M(LOW_PRIORITY) | M(DELAYED) | M(HIGH_PRIORITY) | M(IGNORE));
    if (is_kw(p, i, SQL_KW_INTO))
        i = nx(p, i);
    if (!add_name(p, &i)) {
        unsupported(p);
        return;
    }
    if (is_kw(p, i, SQL_KW_PARTITION) && is_kind(p, nx(p, i), SQL_TOK_LPAREN))
        i = sig(p, skip_group(p, nx(p, i)));
    if (is_kind(p, i, SQL_TOK_LPAREN) && !starts_query(p, i)) {
        uint32_t close = skip_group(p, i);
        st->columns.first = nx(p, i);
        st->columns.end = back_end(p, st->columns.first, close - 1);
        i = sig(p, close);
    }
    i = parse_insert_end(p, parse_insert_source(p, i));
    if (i < p->n)
        unsupported(p);
}

/* WITH [RECURSIVE] name [(cols)] AS (query) [, ...] */
static uint32_t parse_with(parser *p, uint32_t i)
{
    sql_stmt *st = p->st;
    st->flags |= SQL_SF_WITH;
    st->with.first = i;
    i = nx(p, i);
    if (is_kw(p, i, SQL_KW_RECURSIVE))
        i = nx(p, i);
    for (;;) {
        if (!is_ident(p, i))
            break;
        i = nx(p, i);
        if (is_kind(p, i, SQL_TOK_LPAREN))
            i = sig(p, skip_group(p, i));
        if (!is_kw(p, i, SQL_KW_AS) || !is_kind(p, nx(p, i), SQL_TOK_LPAREN))
            break;
        i = sig(p, skip_group(p, nx(p, i)));
        if (!is_kind(p, i, SQL_TOK_COMMA)) {
            st->with.end = back_end(p, st->with.first, i);
            return i;
        }
        i = nx(p, i);
    }
    unsupported(p);
    st->with.end = back_end(p, st->with.first, i);
    return i;
}

/* CREATE/ALTER/DROP/TRUNCATE/RENAME: kind DDL; the table name(s) when the
 * form is [TEMPORARY] TABLE [IF [NOT] EXISTS] name[, name] or RENAME
 * TABLE a TO b[, ...]. Nothing here is meant for rewriting. */
static void parse_ddl(parser *p, uint32_t i)
{
    bool drop = is_kw(p, i, SQL_KW_DROP), rename = is_kw(p, i, SQL_KW_RENAME);
    bool truncate = is_kw(p, i, SQL_KW_TRUNCATE);
    p->st->kind = SQL_STMT_DDL;
    i = nx(p, i);
    if (is_kw(p, i, SQL_KW_TEMPORARY) || is_kw(p, i, SQL_KW_IGNORE))
        i = nx(p, i);
    if (is_kw(p, i, SQL_KW_TABLE))
        i = nx(p, i);
    else if (!truncate)
        return;
    if (is_kw(p, i, SQL_KW_IF))
        i = nx(p, i);
    if (is_kw(p, i, SQL_KW_NOT))
        i = nx(p, i);
    if (is_kw(p, i, SQL_KW_EXISTS))
        i = nx(p, i);
    while (add_name(p, &i)) {
        if (rename && is_kw(p, i, SQL_KW_TO)) {
            i = nx(p, i);
            continue;
        }
        if (!(drop || rename) || !is_kind(p, i, SQL_TOK_COMMA))
            break;
        i = nx(p, i);
    }
}

/* Transaction statements; ROLLBACK [WORK] TO [SAVEPOINT] is OTHER, since
 * it does not end the transaction. */
static sql_stmt_kind txn_kind(const parser *p, uint32_t i)
{
    uint32_t k = nx(p, i);
    switch (p->t[i].id) {
    case SQL_KW_BEGIN: return is_kw(p, k, SQL_KW_NOT) ? SQL_STMT_OTHER : SQL_STMT_BEGIN;
    case SQL_KW_START: return is_kw(p, k, SQL_KW_TRANSACTION) ? SQL_STMT_BEGIN : SQL_STMT_OTHER;
    case SQL_KW_COMMIT: return SQL_STMT_COMMIT;
    default:
        if (is_kw(p, k, SQL_KW_WORK))
            k = nx(p, k);
        return is_kw(p, k, SQL_KW_TO) ? SQL_STMT_OTHER : SQL_STMT_ROLLBACK;
    }
}

/* Verb at i; after_with: it follows a WITH clause. */
static void dispatch(parser *p, uint32_t i, bool after_with)
{
    sql_stmt *st = p->st;
    sql_kw kw = p->t[i].kind == SQL_TOK_WORD ? (sql_kw)p->t[i].id : SQL_KW_NONE;
    st->verb = i;
    if (i + 1 < p->n && p->t[i + 1].kind == SQL_TOK_COMMENT && (p->t[i + 1].flags & SQL_TF_HINT)) {
        st->hint = i + 1;
        st->flags |= SQL_SF_HINT;
    }
    switch (kw) {
    case SQL_KW_SELECT: parse_select(p, i); return;
    case SQL_KW_UPDATE: parse_update(p, i); return;
    case SQL_KW_DELETE: parse_delete(p, i); return;
    case SQL_KW_INSERT:
    case SQL_KW_REPLACE:
        parse_insert(p, i, kw == SQL_KW_REPLACE);
        if (after_with)
            unsupported(p);
        return;
    default: break;
    }
    if (after_with) {
        st->kind = SQL_STMT_OTHER;
        unsupported(p);
        return;
    }
    uint32_t k = nx(p, i);
    switch (kw) {
    case SQL_KW_CALL:
        st->kind = SQL_STMT_CALL;
        add_name(p, &k);
        return;
    case SQL_KW_USE:
        st->kind = SQL_STMT_USE;
        add_name(p, &k);
        return;
    case SQL_KW_SET: st->kind = SQL_STMT_SET; return;
    case SQL_KW_SHOW: st->kind = SQL_STMT_SHOW; return;
    case SQL_KW_BEGIN:
    case SQL_KW_START:
    case SQL_KW_COMMIT:
    case SQL_KW_ROLLBACK: st->kind = txn_kind(p, i); return;
    case SQL_KW_CREATE:
    case SQL_KW_ALTER:
    case SQL_KW_DROP:
    case SQL_KW_TRUNCATE:
    case SQL_KW_RENAME: parse_ddl(p, i); return;
    default: st->kind = SQL_STMT_OTHER; return;
    }
}

/* ---- entry point ------------------------------------------------------------------- */

static void stmt_init(sql_stmt *st)
{
    const sql_range none = {SQL_NONE, SQL_NONE};
    const sql_clause nc = {SQL_NONE, {SQL_NONE, SQL_NONE}};
    memset(st, 0, sizeof *st);
    for (unsigned m = 0; m < SQL_MOD__COUNT; m++)
        st->mod_tok[m] = SQL_NONE;
    st->verb = st->hint = SQL_NONE;
    st->with = st->columns = none;
    st->select_list = st->from = st->set = st->where = nc;
    st->group_by = st->having = st->order_by = st->values = st->on_dup = nc;
    st->limit.kw = st->limit.offset = st->limit.count = SQL_NONE;
    st->limit.span = st->lock.span = none;
}

/* Statement end (first top-level ';') and whole-statement flags. */
static void find_end(parser *p, uint32_t ntok)
{
    uint32_t i = 0;
    int depth = 0;
    for (; i < ntok; i++) {
        const sql_token *t = &p->t[i];
        if (t->kind == SQL_TOK_LPAREN)
            depth++;
        else if (t->kind == SQL_TOK_RPAREN && depth > 0)
            depth--;
        else if (t->kind == SQL_TOK_SEMI && depth == 0)
            break;
        else if (t->kind == SQL_TOK_EXEC_COMMENT)
            p->st->flags |= SQL_SF_EXEC_COMMENT;
        else if (t->kind == SQL_TOK_ERROR)
            p->st->flags |= SQL_SF_LEX_ERROR;
    }
    p->n = i;
    p->st->end = i;
    for (; i < ntok; i++)
        if (!is_skip(&p->t[i]) && p->t[i].kind != SQL_TOK_SEMI) {
            p->st->flags |= SQL_SF_MULTI_STMT;
            break;
        }
}

/* Leading '(': a parenthesized query expression, not analysed. */
static void parse_paren(parser *p, uint32_t i)
{
    p->st->flags |= SQL_SF_PAREN;
    p->st->kind = starts_query(p, i) ? SQL_STMT_SELECT : SQL_STMT_OTHER;
    unsupported(p);
}

sql_rc sql_stmt_parse(const char *text, const sql_token *toks, size_t ntok, sql_stmt *out)
{
    parser p = {text, toks, 0, 0, out};
    stmt_init(out);
    find_end(&p, ntok >= SQL_NONE ? SQL_NONE - 1 : (uint32_t)ntok);
    uint32_t i = sig(&p, 0);
    if (out->flags & SQL_SF_LEX_ERROR) {
        out->kind = SQL_STMT_UNKNOWN;
        return SQL_ERR;
    }
    if (i >= p.n) {
        /* nothing but comments; an executable one (mysqldump's
         * / *!40101 SET ... * /) is a statement we do not look into */
        out->kind = (out->flags & SQL_SF_EXEC_COMMENT) ? SQL_STMT_OTHER : SQL_STMT_UNKNOWN;
        return out->kind == SQL_STMT_OTHER ? SQL_OK : SQL_ERR;
    }
    if (is_kind(&p, i, SQL_TOK_LPAREN)) {
        parse_paren(&p, i);
    } else if (is_kw(&p, i, SQL_KW_WITH)) {
        i = parse_with(&p, i);
        if (i < p.n) {
            dispatch(&p, i, true);
        } else {
            out->kind = SQL_STMT_OTHER;
            unsupported(&p);
        }
    } else {
        dispatch(&p, i, false);
    }
    if (p.nrefs > 1)
        out->flags |= SQL_SF_MULTI_TABLE;
    if (out->flags & (SQL_SF_UNSUPPORTED | SQL_SF_OVERFLOW))
        return SQL_PARTIAL;
    return SQL_OK;
}
