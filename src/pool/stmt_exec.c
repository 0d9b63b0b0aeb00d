/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/stmt_exec.c - a client's execute for the server statement of one
 * connection (pool/stmt_exec.h).
 */
#include "myrewrite/pool/stmt_exec.h"

/* The types to put into an execute that binds none: the client's last,
 * unless e's server statement has them already (NULL). */
static const mr_stmt_types *owed_types(const mr_stmt *st, const mr_stmt_cached *e,
                                       mr_stmt_types *view)
{
    return mr_stmt_types_same(&e->types, &st->types) ? NULL : mr_stmt_types_view(&st->types, view);
}

/* After the execute went into out: what the server statement now has.
 * Types that could not be kept (out of memory) are none: an execute that
 * binds none then gets them put in again, or goes as sent. */
static void note_sent(mr_stmt_map *m, mr_stmt *st, mr_stmt_cached *e, const mr_stmt_types *bound,
                      bool put)
{
    mr_stmt_types view;
    if (bound->len && !mr_stmt_bind_types(st, bound))
        mr_stmt_types_drop(&e->types);
    else if (bound->len || put)
        mr_stmt_types_keep(&e->types, mr_stmt_types_view(&st->types, &view));
    mr_stmt_long_data_reset(m, st);
}

/* bulk: p is a COM_STMT_BULK_EXECUTE, else a COM_STMT_EXECUTE of that form. */
static const char *exec_for(mr_buf *out, mr_stmt_map *m, mr_stmt *st, mr_stmt_cached *e,
                            const uint8_t *p, size_t n, unsigned form, bool bulk)
{
    size_t before = out->len;
    mr_stmt_types bound, view;
    const char *bad = bulk ? mr_stmt_bulk_types(p, n, st->nparams, &bound)
                           : mr_stmt_exec_types(p, n, st->nparams, form, &bound);
    if (bad)
        return bad;
    const mr_stmt_types *owed = bound.len ? NULL : owed_types(st, e, &view);
    bool put = false;
    bad = mr_stmt_long_data_build(st, out, e->server_id);
    if (!bad)
        bad = bulk ? mr_stmt_bulk_rewrite(out, p, n, e->server_id, st->nparams, owed, &put)
                   : mr_stmt_exec_rewrite(out, p, n, e->server_id, st->nparams, form, owed, &put);
    if (bad) {
        out->len = before;
        return bad;
    }
    note_sent(m, st, e, &bound, put);
    return NULL;
}

const char *mr_stmt_exec_for(mr_buf *out, mr_stmt_map *m, mr_stmt *st, mr_stmt_cached *e,
                             const uint8_t *p, size_t n, unsigned form)
{
    return exec_for(out, m, st, e, p, n, form, false);
}

const char *mr_stmt_bulk_for(mr_buf *out, mr_stmt_map *m, mr_stmt *st, mr_stmt_cached *e,
                             const uint8_t *p, size_t n)
{
    return exec_for(out, m, st, e, p, n, 0, true);
}
