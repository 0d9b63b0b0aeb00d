/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/keyset_watch.c - the last row of a page, read as the response
 * streams to the client, becomes a bookmark (see paginate/keyset.h).
 *
 * The listing's columns are found in the column definitions by their
 * original name and table (org_name, org_table), so `SELECT *`, `t.*` and
 * aliased columns all work; their flags and types decide whether the order
 * can be bookmarked at all (NOT NULL, a type with an exact text form). Rows
 * are only copied (the latest one); the values are read and turned into
 * literals once, when the response ends without an error.
 *
 * Session's worker thread; owns the row copy; writes the shared store.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/paginate/bookmarks.h"
#include "myrewrite/paginate/keyset.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/proto/tracker.h"

void mr_keyset_watch_begin(mr_keyset_watch *w, const mr_keyset_note *note,
                           const mr_bookmark_port *store)
{
    w->store = store;
    w->active = note->watch && store;
    w->broken = w->rows_started = false;
    w->problem = NULL;
    w->note = *note;
    w->gen = store ? store->gen(note->listing.table_hash) : 0;
    w->columns = 0;
    w->rows = 0;
    w->row_len = 0;
    for (unsigned k = 0; k < MR_KEYSET_MAX_COLS; k++)
        w->idx[k] = -1;
}

bool mr_keyset_watch_wants(const mr_keyset_watch *w, int ts)
{
    return w->active && !w->broken && (ts == MR_TS_COLUMNS || ts == MR_TS_ROWS);
}

static bool read_str(mr_reader *r, const uint8_t **s, size_t *n)
{
    uint64_t len;
    if (mr_read_lenenc(r, &len) != MR_OK || len > r->n - r->pos)
        return false;
    *s = r->p + r->pos;
    *n = (size_t)len;
    r->pos += (size_t)len;
    return true;
}

static bool same_name(const uint8_t *s, size_t n, const char *name)
{
    return strlen(name) == n && strncasecmp((const char *)s, name, n) == 0;
}

/* One column definition: is it one of the listing's columns? */
static void column(mr_keyset_watch *w, const uint8_t *p, size_t n)
{
    mr_reader r = {p, n, 0};
    const uint8_t *f[6];
    size_t fl[6];
    for (int i = 0; i < 6; i++)
        if (!read_str(&r, &f[i], &fl[i])) {
            w->broken = true;
            return;
        }
    const uint8_t *info;
    size_t info_len;
    if (w->ext_metadata && !read_str(&r, &info, &info_len)) { /* e.g. "json", "inet6" */
        w->broken = true;
        return;
    }
    uint64_t fixed;
    uint16_t charset, flags;
    uint8_t type;
    if (mr_read_lenenc(&r, &fixed) != MR_OK || fixed < 10 || mr_read_u16(&r, &charset) ||
        mr_read_skip(&r, 4) || mr_read_u8(&r, &type) || mr_read_u16(&r, &flags)) {
        w->broken = true;
        return;
    }
    unsigned at = w->columns++;
    const mr_keyset_listing *ls = &w->note.listing;
    if (!same_name(f[3], fl[3], ls->table)) /* org_table */
        return;
    for (unsigned k = 0; k < ls->ncols; k++) {
        if (w->idx[k] >= 0 || !same_name(f[5], fl[5], ls->cols[k].name)) /* org_name */
            continue;
        w->idx[k] = (int)at;
        w->type[k] = type;
        w->charset[k] = charset;
        const char *why = mr_keyset_column_problem(type, flags, charset);
        if (why && !w->problem)
            w->problem = why;
    }
}

/* Before the first row: every column of the order must be in the result. */
static void columns_done(mr_keyset_watch *w)
{
    w->rows_started = true;
    if (w->columns == 0) { /* resultset_metadata = NONE (MySQL 8): rows without definitions */
        w->broken = true;  /* nothing to read the row by: no bookmark, and no refusal either */
        return;
    }
    for (unsigned k = 0; k < w->note.listing.ncols && !w->problem; k++)
        if (w->idx[k] < 0)
            w->problem = "an ORDER BY or key column is not in the select list";
}

static void keep_row(mr_keyset_watch *w, const uint8_t *p, size_t n)
{
    if (n == 0) {
        w->broken = true; /* no row of a result with columns is empty: not a page to trust */
        return;
    }
    if (n > w->row_cap) {
        uint8_t *row = realloc(w->row, n);
        if (!row) {
            w->broken = true;
            return;
        }
        w->row = row;
        w->row_cap = n;
    }
    memcpy(w->row, p, n);
    w->row_len = n;
    w->rows++;
}

void mr_keyset_watch_packet(mr_keyset_watch *w, int ts, const uint8_t *p, size_t n)
{
    if (!mr_keyset_watch_wants(w, ts))
        return;
    if (!p) {
        w->broken = true;
        return;
    }
    if (ts == MR_TS_COLUMNS) {
        if (w->rows_started)
            w->broken = true; /* a second result set */
        else
            column(w, p, n);
        return;
    }
    if (!w->rows_started)
        columns_done(w);
    /* an ERR or the end of the rows: a row of this size never starts with 0xFE or 0xFF */
    if (n > 0 && (p[0] == 0xfe || p[0] == 0xff))
        return;
    if (!w->problem)
        keep_row(w, p, n);
}

/* The literals of the kept row, NUL-separated, in listing order. */
static bool row_values(const mr_keyset_watch *w, mr_buf *out)
{
    const uint8_t *val[64];
    size_t len[64];
    int need = 0;
    for (unsigned k = 0; k < w->note.listing.ncols; k++)
        need = w->idx[k] + 1 > need ? w->idx[k] + 1 : need;
    if (need > 64)
        return false;
    mr_reader r = {w->row, w->row_len, 0};
    for (int i = 0; i < need; i++) {
        if (r.pos < r.n && r.p[r.pos] == 0xfb)
            return false; /* NULL in a NOT NULL column: not a row to trust */
        if (!read_str(&r, &val[i], &len[i]))
            return false;
    }
    for (unsigned k = 0; k < w->note.listing.ncols; k++) {
        int i = w->idx[k];
        if (k)
            mr_buf_put_u8(out, 0);
        if (!mr_keyset_literal(out, w->type[k], w->charset[k], val[i], len[i]))
            return false;
    }
    return !out->failed && out->len <= MR_KEYSET_VALUES_MAX;
}

void mr_keyset_watch_end(mr_keyset_watch *w, bool ok, uint64_t now_ms)
{
    if (!w->active)
        return;
    w->active = false;
    if (!ok || w->broken)
        return;
    const mr_keyset_note *no = &w->note;
    const mr_keyset_listing *ls = &no->listing;
    if (w->problem) {
        w->store->refuse(ls->hash, ls->table_hash, w->gen, no->ttl_ms, now_ms);
        return;
    }
    if (w->rows == 0)
        return; /* past the end: nothing to seek from */
    mr_buf b;
    mr_buf_init(&b);
    if (row_values(w, &b))
        w->store->put(ls->hash, ls->table_hash, w->gen, ls->offset + w->rows, (const char *)b.data,
                      b.len, no->ttl_ms, no->max_bookmarks, now_ms);
    mr_buf_free(&b);
}

void mr_keyset_watch_free(mr_keyset_watch *w)
{
    free(w->row);
    w->row = NULL;
    w->row_cap = w->row_len = 0;
    w->active = false;
}
