/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/sql/width.c - the range check of UPDATE DELAYED values (see
 * delayed/width.h): each SET term's literal, or executed `?` value, is
 * compared as decimal digits with its column's range.
 *
 * Pure, any thread.
 */
#include "myrewrite/delayed/width.h"
#include "myrewrite/sql/token_value.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A term's value as a sign and the digits of its magnitude. */
typedef struct value {
    bool known;
    bool neg;
    const char *p;
    size_t n;
    char buf[24];
    int param; /* its place among the `?` (from 1), 0 for a literal */
} value;

unsigned mr_delayed_param_no(const sql_token *tok, uint32_t i)
{
    unsigned n = 0;
    for (uint32_t k = 0; k < i; k++)
        n += tok[k].kind == SQL_TOK_PARAM;
    return n;
}

/* The executed value of the `?` at token i, when the proxy has it. */
static void from_param(const sql_token *tok, uint32_t i, const mr_exec_params *params, value *v)
{
    unsigned no = mr_delayed_param_no(tok, i);
    if (!params || no >= params->n)
        return;
    const mr_exec_param *p = &params->v[no];
    v->param = (int)no + 1;
    if (p->kind == MR_EXEC_PARAM_INT) {
        v->neg = p->n < 0;
        uint64_t mag = v->neg ? (uint64_t)(-(p->n + 1)) + 1 : (uint64_t)p->n;
        v->n = (size_t)snprintf(v->buf, sizeof v->buf, "%" PRIu64, mag);
        v->p = v->buf;
        v->known = true;
    } else if (p->kind == MR_EXEC_PARAM_TEXT && p->len) {
        v->neg = p->p[0] == '-';
        v->p = p->p + v->neg;
        v->n = p->len - v->neg;
        v->known = true;
    }
}

/* The value at token i: a number (after a `-` for a SET literal), or a `?`. */
static void value_at(const char *text, const sql_token *tok, uint32_t i,
                     const mr_exec_params *params, value *v)
{
    memset(v, 0, sizeof *v);
    if (tok[i].kind == SQL_TOK_OP) { /* the `-` of `SET col = -N` */
        v->neg = true;
        for (i++; tok[i].kind == SQL_TOK_COMMENT; i++)
            ;
    }
    if (tok[i].kind == SQL_TOK_NUMBER) {
        v->p = text + tok[i].off;
        v->n = tok[i].len;
        v->known = true;
    } else if (tok[i].kind == SQL_TOK_PARAM) {
        from_param(tok, i, params, v);
    }
}

static bool refuse(const mr_delayed_def *def, const char *col, const mr_col_range *r,
                   const mr_delayed_set *s, const value *v, char *err, size_t errlen)
{
    char what[48] = "";
    if (v->param)
        snprintf(what, sizeof what, " (parameter %d)", v->param);
    const char *mode = def->mode == MR_DELAYED_MEMORY ? " (mode = memory)" : "";
    if (s->is_set)
        snprintf(err, errlen,
                 "myrewrite: UPDATE DELAYED on %s.%s: SET %s = %s%.*s%s is out of "
                 "range for column %s (%s: %s%s to %s); the statement was not staged%s",
                 def->schema, def->table, col, v->neg ? "-" : "", (int)v->n, v->p, what, col,
                 r->type, strcmp(r->lo, "0") ? "-" : "", r->lo, r->hi, mode);
    else
        snprintf(err, errlen,
                 "myrewrite: UPDATE DELAYED on %s.%s: the delta %s%.*s%s is wider "
                 "than column %s can span (%s: %s%s to %s, a width of %s); the statement was "
                 "not staged%s",
                 def->schema, def->table, s->minus != v->neg ? "-" : "", (int)v->n, v->p, what, col,
                 r->type, strcmp(r->lo, "0") ? "-" : "", r->lo, r->hi, r->width, mode);
    return false;
}

/* One term: false (with the refusal) only when its value is known not to fit. */
static bool term_fits(const char *text, const sql_token *tok, const mr_delayed_set *s,
                      const mr_delayed_def *def, const mr_schema_source *src,
                      const mr_exec_params *params, char *err, size_t errlen)
{
    char col[MR_SD_NAME];
    value v;
    value_at(text, tok, s->num, params, &v);
    mr_col_range r;
    if (!v.known || !sql_tok_name(&tok[s->col], text, col, MR_SD_NAME) ||
        src->column_range(src->arg, def->schema, def->table, col, &r) != MR_RANGE_KNOWN)
        return true;
    mr_fit fit =
        s->is_set ? mr_range_value_fits(&r, v.neg, v.p, v.n) : mr_range_delta_fits(&r, v.p, v.n);
    return fit != MR_FIT_NO || refuse(def, col, &r, s, &v, err, errlen);
}

bool mr_delayed_widths_fit(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                           const mr_delayed_def *def, const mr_schema_source *src,
                           const mr_exec_params *params, char *err, size_t errlen)
{
    if (!src || !src->column_range)
        return true;
    for (unsigned i = 0; i < d->nset; i++)
        if (!term_fits(text, tok, &d->set[i], def, src, params, err, errlen))
            return false;
    return true;
}
