/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/sql/group_sql.c - the multi-row INSERT of a group-commit batch (see
 * delayed/group_sql.h): the prefixes here, the rows in delayed/sql/group_merge.c.
 */
#include "myrewrite/delayed/group_sql.h"

#include "delayed/sql/group_merge.h"

#include <string.h>

/* Which of out[0..k) has the prefix p (of n bytes); k when none. */
static size_t find_prefix(const mr_buf *out, size_t k, const size_t *plen, const char *p, size_t n)
{
    for (size_t j = 0; j < k; j++)
        if (plen[j] == n && memcmp(out[j].data, p, n) == 0)
            return j;
    return k;
}

size_t mr_dgroup_build(const mr_dstage *t, size_t n, mr_buf *out, size_t cap, size_t *merged)
{
    size_t k = 0, plen[MR_DGROUP_MAX_STMTS];
    bool has[MR_DGROUP_MAX_STMTS] = {false};
    dg_rows rows = {0};
    if (cap > MR_DGROUP_MAX_STMTS)
        cap = MR_DGROUP_MAX_STMTS;
    for (size_t i = 0; i < n; i++) {
        size_t p = t[i].prefix_len;
        if (!p || p >= t[i].len || !t[i].nrows)
            goto refused;
        size_t j = find_prefix(out, k, plen, t[i].text, p);
        if (j == k) {
            if (k == cap)
                goto refused;
            mr_buf_reset(&out[k]);
            mr_buf_put(&out[k], t[i].text, p);
            plen[k++] = p;
        }
        if (!dg_rows_add(&rows, j, &t[i]))
            goto refused;
    }
    if (!dg_rows_merge(&rows))
        goto refused;
    dg_rows_write(&rows, out, has);
    if (merged)
        *merged = dg_rows_gone(&rows);
    dg_rows_free(&rows);
    for (size_t j = 0; j < k; j++)
        if (out[j].failed)
            return 0;
    return k;
refused:
    dg_rows_free(&rows);
    return 0;
}
