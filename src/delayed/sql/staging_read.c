/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/sql/staging_read.c - reads UPDATE DELAYED / DELETE DELAYED
 * statements and checks them against their delayed rule (grammar in
 * delayed/staging_sql.h); the staging INSERT is written from what it read
 * by delayed/sql/staging_sql.c.
 *
 * Pure, any thread. Works on the caller's tokens; literals are copied as
 * the bytes of their tokens, so whatever a string holds it stays one
 * string, lexed by the server as it was lexed here.
 */
#include "myrewrite/delayed/staging_sql.h"

#include "delayed/sql/staging_impl.h"
#include "myrewrite/sql/token_value.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char mr_delayed_grammar[] =
    "supported: UPDATE DELAYED [LOW_PRIORITY] tbl SET col = col + N [, col2 = col2 - N ...] "
    "(and col = literal on a column of the rule's set_columns) "
    "WHERE key = literal [AND key2 = literal ...] (one key may be key IN (literal, ...)); "
    "DELETE DELAYED FROM tbl WHERE <the same>; N is a whole number or ?, a literal a string, "
    "number, hex/bit literal or ?";

#define fail mr_delayed_fail

/* Formats the reason, then the grammar; always returns false. */
bool mr_delayed_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (!errlen)
        return false;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < errlen)
        snprintf(err + n, errlen - (size_t)n, "; %s", mr_delayed_grammar);
    return false;
}

/* ---- tokens ------------------------------------------------------------------- */

static bool whole_number(const char *text, const sql_token *t)
{
    if (t->kind == SQL_TOK_PARAM)
        return true;
    if (t->kind != SQL_TOK_NUMBER)
        return false;
    for (uint32_t i = 0; i < t->len; i++)
        if (text[t->off + i] < '0' || text[t->off + i] > '9')
            return false;
    return true;
}

static bool is_literal(const sql_token *t)
{
    return t->kind == SQL_TOK_STRING || t->kind == SQL_TOK_NUMBER || t->kind == SQL_TOK_HEX ||
           t->kind == SQL_TOK_BIT || t->kind == SQL_TOK_PARAM;
}

/* A literal at i (optionally `-` before a number); *next is past it. */
static bool read_literal(const sql_token *tok, uint32_t i, uint32_t end, uint32_t *next)
{
    i = skip(tok, i, end);
    if (i < end && is_op(&tok[i], SQL_OP_MINUS)) {
        i = skip(tok, i + 1, end);
        if (i >= end || tok[i].kind != SQL_TOK_NUMBER)
            return false;
    } else if (i >= end || !is_literal(&tok[i])) {
        return false;
    }
    *next = i + 1;
    return true;
}

/* ---- the statement ------------------------------------------------------------- */

bool mr_delayed_is_delayed(const sql_stmt *st)
{
    return (st->kind == SQL_STMT_UPDATE || st->kind == SQL_STMT_DELETE) &&
           (st->mods & (1u << SQL_MOD_DELAYED));
}

static bool check_shape(const sql_stmt *st, const mr_delayed_stmt *d, char *err, size_t errlen)
{
    const uint32_t bad = SQL_SF_UNSUPPORTED | SQL_SF_LEX_ERROR | SQL_SF_OVERFLOW |
                         SQL_SF_EXEC_COMMENT | SQL_SF_PAREN | SQL_SF_WITH | SQL_SF_UNION;
    if (st->flags & bad)
        return fail(err, errlen, "%s: the statement could not be read", verb(d));
    if (st->flags & (SQL_SF_JOIN | SQL_SF_MULTI_TABLE | SQL_SF_DERIVED))
        return fail(err, errlen, "%s takes one table", verb(d));
    if (st->flags & SQL_SF_SUBQUERY)
        return fail(err, errlen, "%s takes no subquery", verb(d));
    if (st->mods & ~((1u << SQL_MOD_DELAYED) | (1u << SQL_MOD_LOW_PRIORITY)))
        return fail(err, errlen, "%s takes no modifier other than LOW_PRIORITY", verb(d));
    if (st->order_by.kw != SQL_NONE || st->limit.kw != SQL_NONE)
        return fail(err, errlen, "%s takes no ORDER BY or LIMIT", verb(d));
    if (st->where.kw == SQL_NONE)
        return fail(err, errlen, "%s needs a WHERE on the key columns", verb(d));
    return true;
}

/* DELAYED and LOW_PRIORITY at most once each before the table: the plain
 * statement a pending default rule sends drops one DELAYED word only. */
static bool modifiers_once(const sql_token *tok, const sql_stmt *st, const mr_delayed_stmt *d,
                           char *err, size_t errlen)
{
    uint32_t end = st->ntables ? st->tables[0].span.first : st->verb + 1;
    unsigned words = 0;
    for (uint32_t i = st->verb + 1; i < end; i++)
        words += tok[i].kind == SQL_TOK_WORD &&
                 (tok[i].id == SQL_KW_DELAYED || tok[i].id == SQL_KW_LOW_PRIORITY);
    if (words > (unsigned)__builtin_popcount(st->mods))
        return fail(err, errlen, "%s takes DELAYED and LOW_PRIORITY once each", verb(d));
    return true;
}

/* The one table: [schema.]name, nothing else in its span. */
static bool read_table(const char *text, const sql_token *tok, const sql_stmt *st,
                       mr_delayed_stmt *d, char *err, size_t errlen)
{
    char nm[NAME_MAX_LEN + 1];
    const sql_table_ref *ref = &st->tables[0];
    if (st->ntables != 1 || ref->derived || ref->name == SQL_NONE ||
        !sql_tok_name(&tok[ref->name], text, nm, sizeof nm))
        return fail(err, errlen, "%s takes one table named plainly", verb(d));
    if (ref->schema != SQL_NONE && !sql_tok_name(&tok[ref->schema], text, nm, sizeof nm))
        return fail(err, errlen, "%s: the schema name could not be read", verb(d));
    uint32_t words = 0;
    for (uint32_t i = ref->span.first; i < ref->span.end; i++)
        words += tok[i].kind != SQL_TOK_COMMENT;
    if (words != (ref->schema != SQL_NONE ? 3u : 1u))
        return fail(err, errlen, "%s takes no alias, partition or index hint", verb(d));
    d->schema = ref->schema;
    d->table = ref->name;
    return true;
}

/* col = col + N | col = col - N | col = literal */
static bool read_assign(const char *text, const sql_token *tok, const sql_assign *a,
                        mr_delayed_set *out, char *err, size_t errlen)
{
    char col[NAME_MAX_LEN + 1], again[NAME_MAX_LEN + 1];
    uint32_t c = skip(tok, a->column.first, a->column.end);
    if (c >= a->column.end || !sql_tok_name(&tok[c], text, col, sizeof col) ||
        skip(tok, c + 1, a->column.end) != a->column.end)
        return fail(err, errlen, "UPDATE DELAYED: SET takes plain column names");
    uint32_t e = a->expr.end;
    uint32_t i = skip(tok, a->expr.first, e), past;
    if (read_literal(tok, i, e, &past) && skip(tok, past, e) == e) {
        *out = (mr_delayed_set){.col = c, .num = i, .is_set = true};
        return true;
    }
    bool ok =
        i < e && sql_tok_name(&tok[i], text, again, sizeof again) && strcasecmp(col, again) == 0;
    uint32_t op = ok ? skip(tok, i + 1, e) : e;
    ok = op < e && (is_op(&tok[op], SQL_OP_PLUS) || is_op(&tok[op], SQL_OP_MINUS));
    uint32_t num = ok ? skip(tok, op + 1, e) : e;
    ok = ok && num < e && whole_number(text, &tok[num]) && skip(tok, num + 1, e) == e;
    if (!ok)
        return fail(err, errlen,
                    "UPDATE DELAYED: SET %s = ... must read %s = %s + N, "
                    "%s = %s - N with N a whole number or ?, or %s = literal",
                    col, col, col, col, col, col);
    *out = (mr_delayed_set){.col = c, .num = num, .minus = is_op(&tok[op], SQL_OP_MINUS)};
    return true;
}

bool mr_delayed_literal_at(const sql_token *tok, uint32_t i, uint32_t end, uint32_t *next)
{
    return read_literal(tok, i, end, next);
}

static bool read_set(const char *text, const sql_token *tok, const sql_stmt *st, mr_delayed_stmt *d,
                     char *err, size_t errlen)
{
    if (d->is_delete)
        return true;
    if (st->nassign == 0 || st->nassign > MR_DELAYED_MAX_TERMS)
        return fail(err, errlen, "UPDATE DELAYED takes 1 to %d SET assignments",
                    MR_DELAYED_MAX_TERMS);
    for (unsigned k = 0; k < st->nassign; k++)
        if (!read_assign(text, tok, &st->assign[k], &d->set[k], err, errlen))
            return false;
    d->nset = st->nassign;
    return true;
}

/* ( literal, ... ) starting at the '(' token; *next is past ')'. */
static bool read_in_list(const sql_token *tok, uint32_t i, uint32_t end, mr_delayed_key *k,
                         uint32_t *next)
{
    if (i >= end || tok[i].kind != SQL_TOK_LPAREN)
        return false;
    k->first = i + 1;
    k->count = 0;
    for (uint32_t at = i + 1;;) {
        if (!read_literal(tok, at, end, &at))
            return false;
        k->count++;
        at = skip(tok, at, end);
        if (at < end && tok[at].kind == SQL_TOK_RPAREN) {
            k->end = at;
            *next = at + 1;
            return true;
        }
        if (at >= end || tok[at].kind != SQL_TOK_COMMA)
            return false;
        at++;
    }
}

/* key = literal | key IN (...), at i; *next is past it. */
static bool read_term(const char *text, const sql_token *tok, uint32_t i, uint32_t end,
                      mr_delayed_stmt *d, uint32_t *next, char *err, size_t errlen)
{
    char nm[NAME_MAX_LEN + 1];
    mr_delayed_key *k = &d->key[d->nkey];
    if (i >= end || !sql_tok_name(&tok[i], text, nm, sizeof nm))
        return fail(err, errlen, "%s: WHERE takes key = literal terms joined by AND", verb(d));
    k->col = i;
    uint32_t j = skip(tok, i + 1, end);
    if (j < end && is_op(&tok[j], SQL_OP_EQ)) {
        k->first = skip(tok, j + 1, end);
        k->count = 1;
        if (!read_literal(tok, k->first, end, next))
            return fail(err, errlen, "%s: %s = must be followed by one literal", verb(d), nm);
        k->end = *next;
    } else if (j < end && is_kw(&tok[j], SQL_KW_IN)) {
        if (d->in_term >= 0)
            return fail(err, errlen, "%s: only one key may use IN (...)", verb(d));
        if (!read_in_list(tok, skip(tok, j + 1, end), end, k, next))
            return fail(err, errlen, "%s: %s IN takes a list of literals", verb(d), nm);
        d->in_term = (int)d->nkey;
    } else {
        return fail(err, errlen,
                    "%s: WHERE takes key = literal or key IN (...) terms joined "
                    "by AND",
                    verb(d));
    }
    d->nkey++;
    return true;
}

static bool read_where(const char *text, const sql_token *tok, const sql_stmt *st,
                       mr_delayed_stmt *d, char *err, size_t errlen)
{
    uint32_t end = st->where.body.end;
    uint32_t i = skip(tok, st->where.body.first, end);
    for (;;) {
        if (d->nkey == MR_DELAYED_MAX_TERMS)
            return fail(err, errlen, "%s: at most %d WHERE terms", verb(d), MR_DELAYED_MAX_TERMS);
        if (!read_term(text, tok, i, end, d, &i, err, errlen))
            return false;
        i = skip(tok, i, end);
        if (i == end)
            break;
        if (!is_kw(&tok[i], SQL_KW_AND))
            return fail(err, errlen, "%s: WHERE terms may only be joined by AND", verb(d));
        i = skip(tok, i + 1, end);
    }
    if (skip(tok, end, st->end) != st->end)
        return fail(err, errlen, "%s: nothing may follow the WHERE", verb(d));
    return true;
}

bool mr_delayed_parse(const char *text, const sql_token *tok, const sql_stmt *st,
                      mr_delayed_stmt *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->is_delete = st->kind == SQL_STMT_DELETE;
    out->in_term = -1;
    out->schema = out->table = SQL_NONE;
    return check_shape(st, out, err, errlen) && modifiers_once(tok, st, out, err, errlen) &&
           read_table(text, tok, st, out, err, errlen) &&
           read_set(text, tok, st, out, err, errlen) && read_where(text, tok, st, out, err, errlen);
}

/* ---- the rule ---------------------------------------------------------------- */

bool mr_delayed_table_is(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                         const char *default_schema, const mr_delayed_def *def)
{
    char nm[NAME_MAX_LEN + 1];
    if (!sql_tok_name(&tok[d->table], text, nm, sizeof nm) || strcmp(nm, def->table) != 0)
        return false;
    if (d->schema == SQL_NONE)
        return default_schema && strcmp(default_schema, def->schema) == 0;
    return sql_tok_name(&tok[d->schema], text, nm, sizeof nm) && strcmp(nm, def->schema) == 0;
}

bool mr_delayed_strip(const char *text, size_t len, const sql_token *tok, const sql_stmt *st,
                      mr_buf *out)
{
    if (!mr_delayed_is_delayed(st) || st->mod_tok[SQL_MOD_DELAYED] == SQL_NONE)
        return false;
    const sql_token *w = &tok[st->mod_tok[SQL_MOD_DELAYED]];
    size_t from = w->off + w->len;
    while (from < len &&
           (text[from] == ' ' || text[from] == '\t' || text[from] == '\r' || text[from] == '\n'))
        from++;
    mr_buf_put(out, text, w->off);
    mr_buf_put(out, text + from, len - from);
    return !out->failed;
}

bool mr_delayed_names(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                      const char *default_schema, char *schema, char *table)
{
    if (!sql_tok_name(&tok[d->table], text, table, NAME_MAX_LEN + 1))
        return false;
    if (d->schema != SQL_NONE)
        return sql_tok_name(&tok[d->schema], text, schema, NAME_MAX_LEN + 1);
    if (!default_schema || strlen(default_schema) > NAME_MAX_LEN)
        return false;
    memcpy(schema, default_schema, strlen(default_schema) + 1);
    return true;
}

void mr_delayed_no_rule(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                        const char *default_schema, char *err, size_t errlen)
{
    char sch[NAME_MAX_LEN + 1], tbl[NAME_MAX_LEN + 1];
    if (!sql_tok_name(&tok[d->table], text, tbl, sizeof tbl))
        tbl[0] = '\0';
    if (d->schema != SQL_NONE && sql_tok_name(&tok[d->schema], text, sch, sizeof sch))
        default_schema = sch;
    /* the rule to paste is a default rule for the table's schema, never
     * `table = *`: covering every schema is the DBA's choice to make */
    const char *rule_schema = default_schema ? default_schema : "<schema>";
    snprintf(err, errlen,
             "no delayed rule covers table %s%s%s, so this DELAYED statement was "
             "neither staged nor sent (it is never sent as written); to delay the counters of "
             "every table of %s, add these two lines to a rules file and reload: "
             "[delayed %s_default] table = %s.* (or a [delayed ...] rule for this table "
             "alone; see rules/README.md)",
             default_schema ? default_schema : "", default_schema ? "." : "", tbl, rule_schema,
             default_schema ? default_schema : "my", rule_schema);
}

/* The place of set_columns[s] among the set columns that are not also
 * counters (those come after the counters in a memory table's columns). */
static int set_only_index(const mr_delayed_def *def, int s)
{
    int n = 0;
    for (int j = 0; j < s; j++)
        n += find_name(def->columns, def->ncolumns, def->set_columns[j]) < 0;
    return n;
}

/* Every `col = col + N` names a counter column, every `col = literal` a
 * set_columns column, each column once. */
static bool check_columns(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                          const mr_delayed_def *def, int *col, char *err, size_t errlen)
{
    char nm[NAME_MAX_LEN + 1];
    for (unsigned i = 0; i < d->nset; i++) {
        sql_tok_name(&tok[d->set[i].col], text, nm, sizeof nm);
        int c = find_name(def->columns, def->ncolumns, nm);
        if (d->set[i].is_set) {
            int s = find_name(def->set_columns, def->nset_columns, nm);
            if (s < 0)
                return fail(err, errlen,
                            "UPDATE DELAYED on %s.%s: SET %s = literal needs %s "
                            "in the rule's set_columns",
                            def->schema, def->table, nm, nm);
            c = c >= 0 ? c : (int)def->ncolumns + set_only_index(def, s);
        } else if (c < 0) {
            return fail(err, errlen,
                        "UPDATE DELAYED on %s.%s: %s is not one of the rule's "
                        "columns",
                        def->schema, def->table, nm);
        }
        col[i] = c;
        for (unsigned j = 0; j < i; j++)
            if (col[j] == c)
                return fail(err, errlen, "UPDATE DELAYED: %s is set twice", nm);
    }
    return true;
}

/* The WHERE names every key column of the rule, each once. */
static bool check_keys(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                       const mr_delayed_def *def, int *key, char *err, size_t errlen)
{
    char nm[NAME_MAX_LEN + 1];
    unsigned seen = 0;
    for (unsigned i = 0; i < d->nkey; i++) {
        sql_tok_name(&tok[d->key[i].col], text, nm, sizeof nm);
        key[i] = find_name(def->keys, def->nkeys, nm);
        if (key[i] < 0)
            return fail(err, errlen, "%s on %s.%s: %s is not a key column of the rule", verb(d),
                        def->schema, def->table, nm);
        if (seen & (1u << key[i]))
            return fail(err, errlen, "%s: key %s appears twice in the WHERE", verb(d), nm);
        seen |= 1u << key[i];
    }
    if (d->nkey != def->nkeys)
        return fail(err, errlen,
                    "%s on %s.%s: the WHERE must give every key column (%zu of "
                    "them)",
                    verb(d), def->schema, def->table, def->nkeys);
    return true;
}

bool mr_delayed_check(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                      const mr_delayed_def *def, int *col, int *key, char *err, size_t errlen)
{
    return check_columns(text, tok, d, def, col, err, errlen) &&
           check_keys(text, tok, d, def, key, err, errlen);
}

bool mr_delayed_filter_matches(const char *filter, const mr_delayed_def *def)
{
    if (!filter[0])
        return true;
    const char *dot = strchr(filter, '.');
    if (!dot)
        return strcmp(filter, def->table) == 0;
    size_t n = (size_t)(dot - filter);
    return def->schema && strlen(def->schema) == n && strncmp(filter, def->schema, n) == 0 &&
           strcmp(dot + 1, def->table) == 0;
}
