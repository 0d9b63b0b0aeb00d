/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/query_attrs.c - reading a COM_QUERY's query-attribute block
 * (proto/query_attrs.h). The values are skipped by their types with the
 * binary-protocol reader of proto/stmt_execute.c: the proxy only needs to
 * know where the text starts.
 */
#include "myrewrite/proto/query_attrs.h"

#include "myrewrite/proto/cursor.h"
#include "myrewrite/proto/stmt_execute.h"

static bool lenenc(mr_cursor *c, uint64_t *v)
{
    const uint8_t *b, *x;
    if (!mr_cursor_take(c, 1, &b) || b[0] == 0xfb || b[0] == 0xff)
        return false;
    unsigned n = b[0] < 0xfb ? 0 : b[0] == 0xfc ? 2 : b[0] == 0xfd ? 3 : 8;
    *v = b[0];
    if (n == 0)
        return true;
    if (!mr_cursor_take(c, n, &x))
        return false;
    *v = 0;
    for (unsigned i = 0; i < n; i++)
        *v |= (uint64_t)x[i] << (8 * i);
    return true;
}

/* Past the type and name of each of count attributes; *first: where they start. */
static bool types(mr_cursor *c, uint64_t count, const uint8_t **first)
{
    const uint8_t *b;
    uint64_t len;
    *first = c->p;
    for (uint64_t i = 0; i < count; i++)
        if (!mr_cursor_take(c, 2, &b) || !lenenc(c, &len) || len > c->left ||
            !mr_cursor_take(c, (size_t)len, &b))
            return false;
    return true;
}

/* The values: each non-NULL one by its type, read again from the types
 * block (block_len bytes, which types() found whole). */
static bool values(mr_cursor *c, uint64_t count, const uint8_t *nulls, const uint8_t *block,
                   size_t block_len)
{
    mr_cursor t = {block, block_len};
    const uint8_t *type, *name;
    uint64_t len;
    for (uint64_t i = 0; i < count; i++) {
        if (!mr_cursor_take(&t, 2, &type) || !lenenc(&t, &len) || len > t.left ||
            !mr_cursor_take(&t, (size_t)len, &name))
            return false;
        if (nulls[i / 8] & (1u << (i % 8)))
            continue;
        size_t n;
        const uint8_t *v;
        if (!mr_exec_value_len(type[0], c->p, c->left, &n) || !mr_cursor_take(c, n, &v))
            return false;
    }
    return true;
}

mr_rc mr_query_attrs_read(const uint8_t *arg, size_t n, mr_query_attrs *out, const char **why)
{
    mr_cursor c = {arg, n};
    uint64_t sets;
    const uint8_t *nulls, *flag, *block;
    *out = (mr_query_attrs){0};
    *why = "the query attributes of COM_QUERY are cut short";
    if (!lenenc(&c, &out->count) || !lenenc(&c, &sets))
        return MR_MALFORMED;
    if (out->count > 0) {
        if (sets != 1) {
            *why = "COM_QUERY sends a parameter-set count other than 1";
            return MR_MALFORMED;
        }
        if (out->count > 8 * (uint64_t)c.left ||
            !mr_cursor_take(&c, (size_t)((out->count + 7) / 8), &nulls) ||
            !mr_cursor_take(&c, 1, &flag))
            return MR_MALFORMED;
        if (flag[0] != 1) {
            *why = "COM_QUERY sends query attributes without their types (new-params-bound "
                   "flag is not 1)";
            return MR_MALFORMED;
        }
        if (!types(&c, out->count, &block))
            return MR_MALFORMED;
        if (!values(&c, out->count, nulls, block, (size_t)(c.p - block))) {
            *why = "a query attribute of COM_QUERY is cut short or has a type no client sends";
            return MR_MALFORMED;
        }
    }
    out->len = n - c.left;
    *why = NULL;
    return MR_OK;
}
