/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/statement/mem_stmt.c - a memory-mode DELAYED statement to the batch the
 * worker adds to its shard (delayed/mem.h): literals become their values,
 * so that the store coalesces `5` and '5' into one key and the flusher can
 * quote them afresh for its own connection.
 *
 * Pure, any thread. Writes only the caller's batch and message.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/delayed/mem.h"

#include "myrewrite/base/clock.h"
#include "myrewrite/delayed/bucket.h"
#include "myrewrite/sql/token_value.h"

void mr_dmem_batch_free(mr_dmem_batch *b)
{
    mr_buf_free(&b->keys);
    mr_buf_free(&b->text);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* What the readers below share. */
typedef struct rd {
    const char *text;
    const sql_token *tok;
    bool no_backslash;
    const mr_exec_params *params;
    char *err;
    size_t errlen;
} rd;

/* The `?` at token i: its place among the statement's parameters. */
static unsigned param_no(const sql_token *tok, uint32_t i)
{
    unsigned n = 0;
    for (uint32_t k = 0; k < i; k++)
        n += tok[k].kind == SQL_TOK_PARAM;
    return n;
}

/* The value bound to the `?` at token i; NULL (with the message) when
 * there is none or it is NULL. */
static const mr_exec_param *param_at(const rd *r, uint32_t i)
{
    unsigned no = param_no(r->tok, i);
    if (!r->params || no >= r->params->n) {
        mr_delayed_fail(r->err, r->errlen,
                        "DELAYED in mode = memory: parameter %u has no "
                        "value",
                        no + 1);
        return NULL;
    }
    const mr_exec_param *p = &r->params->v[no];
    if (p->kind == MR_EXEC_PARAM_NULL) {
        mr_delayed_fail(r->err, r->errlen,
                        "DELAYED: parameter %u is NULL; keys and values "
                        "must not be NULL",
                        no + 1);
        return NULL;
    }
    return p;
}

static void put_param(mr_buf *out, const mr_exec_param *p)
{
    if (p->kind == MR_EXEC_PARAM_INT) {
        char tmp[24];
        int n = snprintf(tmp, sizeof tmp, "%lld", (long long)p->n);
        mr_buf_put(out, tmp, (size_t)n);
    } else {
        mr_buf_put(out, p->p, p->len);
    }
}

/* X'4142' or 0x4142: the bytes. */
static bool put_hex(mr_buf *out, const char *p, size_t n)
{
    if (n >= 2 && p[0] == '0') { /* 0x...: an odd count has an implied leading 0 */
        p += 2;
        n -= 2;
    } else { /* X'...' */
        p += 2;
        n -= 3;
    }
    size_t i = 0;
    if (n % 2) {
        mr_buf_put_u8(out, (uint8_t)hexval(p[0]));
        i = 1;
    }
    for (; i + 1 < n; i += 2) {
        int hi = hexval(p[i]), lo = hexval(p[i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        mr_buf_put_u8(out, (uint8_t)(hi * 16 + lo));
    }
    return true;
}

/* A number as written, leading zeros of its integer part dropped. */
static void put_number(mr_buf *out, bool minus, const char *p, size_t n)
{
    if (minus)
        mr_buf_put_u8(out, '-');
    while (n > 1 && p[0] == '0' && p[1] >= '0' && p[1] <= '9') {
        p++;
        n--;
    }
    mr_buf_put(out, p, n);
}

/* The value of the literal starting at token i into out. */
static bool put_value(const rd *r, uint32_t i, uint32_t end, mr_buf *out)
{
    const char *text = r->text;
    const sql_token *tok = r->tok;
    char *err = r->err;
    size_t errlen = r->errlen;
    bool minus = false;
    while (i < end && tok[i].kind == SQL_TOK_COMMENT)
        i++;
    if (i < end && tok[i].kind == SQL_TOK_OP) { /* the `-` mr_delayed_parse let through */
        minus = true;
        for (i++; i < end && tok[i].kind == SQL_TOK_COMMENT; i++)
            ;
    }
    const sql_token *t = &tok[i];
    const char *p = text + t->off;
    switch (t->kind) {
    case SQL_TOK_NUMBER: put_number(out, minus, p, t->len); return true;
    case SQL_TOK_HEX:
        if (put_hex(out, p, t->len))
            return true;
        break;
    case SQL_TOK_STRING:
        if (!(t->flags & SQL_TF_INTRODUCER)) {
            size_t at = out->len; /* room for the value, never longer than the token */
            mr_buf_put(out, p, t->len);
            if (!out->failed)
                out->len = at + sql_tok_string(t, text,
                                               r->no_backslash ? SQL_LEX_NO_BACKSLASH_ESCAPES : 0u,
                                               (char *)out->data + at);
            return true;
        }
        return mr_delayed_fail(err, errlen,
                               "DELAYED in mode = memory: a string with a charset "
                               "introducer (_utf8'...', N'...') is not taken; send it plain");
    case SQL_TOK_PARAM: {
        const mr_exec_param *v = param_at(r, i);
        if (v)
            put_param(out, v);
        return v != NULL;
    }
    default: break;
    }
    return mr_delayed_fail(err, errlen,
                           "DELAYED in mode = memory: bit literals are not taken; "
                           "write the value as a number or string");
}

/* The nth literal of a key's value range. */
static uint32_t nth_literal(const sql_token *tok, const mr_delayed_key *k, uint32_t nth)
{
    uint32_t i = k->first;
    for (uint32_t n = 0; n < nth; n++) {
        mr_delayed_literal_at(tok, i, k->end, &i);
        while (i < k->end && tok[i].kind != SQL_TOK_COMMA)
            i++;
        i++; /* past the comma */
    }
    return i;
}

/* One key tuple, in the rule's key order, each value length-prefixed. */
static bool put_tuple(const rd *r, const mr_delayed_stmt *d, const int *key, size_t nkeys,
                      uint32_t row, mr_dmem_batch *b)
{
    for (size_t want = 0; want < nkeys; want++)
        for (unsigned i = 0; i < d->nkey; i++) {
            if ((size_t)key[i] != want)
                continue;
            const mr_delayed_key *k = &d->key[i];
            size_t at = b->keys.len;
            mr_buf_put_u32(&b->keys, 0);
            uint32_t first = nth_literal(r->tok, k, (int)i == d->in_term ? row : 0);
            if (!put_value(r, first, k->end, &b->keys))
                return false;
            uint32_t len = (uint32_t)(b->keys.len - at - 4);
            if (!b->keys.failed)
                memcpy(b->keys.data + at, &len, 4); /* little endian hosts only (x86, arm) */
        }
    return true;
}

/* bucket_column: the UTC day or hour of now (the proxy answers at once, so
 * this is the time the statement is acknowledged) as the tuple's last key
 * value, the memory table's last key column. */
static bool put_bucket(const rd *r, const mr_delayed_def *def, mr_dmem_batch *b)
{
    char v[MR_BUCKET_TEXT_MAX];
    size_t n = mr_bucket_text(def->bucket, (int64_t)(mr_unix_ms() / 1000), v);
    if (!n)
        return mr_delayed_fail(r->err, r->errlen,
                               "DELAYED on %s.%s: the clock gives no "
                               "bucket",
                               def->schema, def->table);
    uint32_t len = (uint32_t)n;
    mr_buf_put(&b->keys, &len, 4); /* little endian hosts only, as put_tuple */
    mr_buf_put(&b->keys, v, n);
    return true;
}

/* Digits, with an optional leading '-'. */
static bool whole(const char *v, size_t n)
{
    size_t k = n && v[0] == '-';
    if (k == n)
        return false;
    for (; k < n; k++)
        if (v[k] < '0' || v[k] > '9')
            return false;
    return true;
}

/* A whole number (already checked) as int64. */
static bool read_delta(const char *p, size_t n, bool minus, int64_t *out)
{
    char buf[32];
    if (n >= sizeof buf)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    errno = 0;
    char *end;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end)
        return false;
    *out = minus ? -v : v;
    return true;
}

/* A whole number: a literal's digits, or a parameter's value. */
static bool delta_of(const rd *r, const mr_delayed_set *s, int64_t *out)
{
    const sql_token *t = &r->tok[s->num];
    if (t->kind != SQL_TOK_PARAM)
        return read_delta(r->text + t->off, t->len, s->minus, out);
    const mr_exec_param *p = param_at(r, s->num);
    if (!p)
        return false;
    bool ok = true;
    if (p->kind == MR_EXEC_PARAM_INT)
        *out = p->n;
    else
        ok = whole(p->p, p->len) && read_delta(p->p, p->len, false, out);
    if (ok && s->minus && *out == INT64_MIN)
        ok = false;
    if (ok && s->minus)
        *out = -*out;
    if (!ok)
        mr_delayed_fail(r->err, r->errlen,
                        "UPDATE DELAYED: parameter %u is not a whole number "
                        "in the signed 64-bit range",
                        param_no(r->tok, s->num) + 1);
    return ok;
}

static bool read_ops(const rd *r, const mr_delayed_stmt *d, const mr_delayed_def *def,
                     const int *col, mr_dmem_batch *b)
{
    for (unsigned i = 0; i < d->nset; i++) {
        const mr_delayed_set *s = &d->set[i];
        mr_dmem_colop *o = &b->ops[b->nops++];
        *o = (mr_dmem_colop){.col = (uint16_t)col[i], .op = MR_DMEM_ADD};
        if (!s->is_set) {
            const sql_token *t = &r->tok[s->num];
            if (t->kind == SQL_TOK_PARAM) {
                if (!delta_of(r, s, &o->n))
                    return false;
            } else if (!read_delta(r->text + t->off, t->len, s->minus, &o->n)) {
                return mr_delayed_fail(r->err, r->errlen,
                                       "UPDATE DELAYED: %.*s is out of "
                                       "range for a delta",
                                       (int)t->len, r->text + t->off);
            }
            continue;
        }
        o->off = (uint32_t)b->text.len;
        uint32_t end;
        mr_delayed_literal_at(r->tok, s->num, UINT32_MAX, &end);
        if (!put_value(r, s->num, end, &b->text))
            return false;
        o->len = (uint32_t)(b->text.len - o->off);
        if ((size_t)col[i] >= def->ncolumns) {
            o->op = MR_DMEM_SET_TEXT;
            continue;
        }
        /* a counter column that may also be set: later adds add to the value */
        o->op = MR_DMEM_SET_INT;
        const char *v = (const char *)b->text.data + o->off;
        bool neg = o->len && v[0] == '-';
        if (!whole(v, o->len) || !read_delta(v + neg, o->len - neg, neg, &o->n))
            return mr_delayed_fail(r->err, r->errlen,
                                   "UPDATE DELAYED on %s.%s: %s is a "
                                   "counter column, so SET %s = takes a whole number",
                                   def->schema, def->table, mr_dmem_column(def, (size_t)col[i]),
                                   mr_dmem_column(def, (size_t)col[i]));
        b->text.len = o->off;
        o->len = 0;
    }
    return true;
}

bool mr_dmem_read_stmt(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                       const mr_delayed_def *def, bool no_backslash, const mr_exec_params *params,
                       mr_dmem_batch *b, char *err, size_t errlen)
{
    int col[MR_DELAYED_MAX_TERMS], key[MR_DELAYED_MAX_TERMS];
    rd r = {text, tok, no_backslash, params, err, errlen};
    mr_buf_reset(&b->keys);
    mr_buf_reset(&b->text);
    b->def = def;
    b->del = d->is_delete;
    b->nops = 0;
    b->nrows = 0;
    if (!mr_delayed_check(text, tok, d, def, col, key, err, errlen) ||
        !read_ops(&r, d, def, col, b))
        return false;
    uint32_t rows = d->in_term >= 0 ? d->key[d->in_term].count : 1;
    if (rows > MR_DELAYED_MAX_ROWS)
        return mr_delayed_fail(err, errlen, "DELAYED: at most %d values in the IN list",
                               MR_DELAYED_MAX_ROWS);
    for (uint32_t row = 0; row < rows; row++)
        if (!put_tuple(&r, d, key, def->nkeys, row, b) ||
            (def->bucket_column && !put_bucket(&r, def, b)))
            return false;
    b->nrows = rows;
    if (b->keys.failed || b->text.failed)
        return mr_delayed_fail(err, errlen, "DELAYED: out of memory");
    return true;
}
