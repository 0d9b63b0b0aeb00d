/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/keyset_statement.c - the keyset and auto strategies of paginate rules
 * (see paginate/keyset.h): a deep page of a listing with a bookmark close
 * enough becomes a seek; every page of a keyset listing is noted in
 * res->keyset so the session reads its last row into a new bookmark.
 *
 *   no bookmark close enough  keyset: sent untouched; auto: deferred join
 *   listing refused           (a nullable or unsupported ORDER BY column,
 *   or not a keyset listing    an expression, a prepared statement...)
 *                              deferred join, whatever the strategy
 *
 * Any thread; reads the shared bookmark store, writes the caller's scratch.
 */
#include <stdio.h>
#include <string.h>

#include "myrewrite/paginate/bookmarks.h"
#include "myrewrite/paginate/keyset.h"
#include "paginate/statement_impl.h"

static rule_why not_this(mr_rule_run *R, const char *why)
{
    snprintf(R->detail, sizeof R->detail, "%s", why);
    return WHY_NOT_KIND;
}

static rule_why copy_out(mr_rule_run *R, mr_rule_text *out)
{
    const mr_buf *b = &pag_scratch_of(R)->out;
    if (b->failed || !mr_rule_text_reserve(out, b->len + 1))
        return not_this(R, "out of memory");
    memcpy(out->p, b->data, b->len);
    out->len = b->len;
    return WHY_MATCHED;
}

/* The deferred join mr_paginate_sql built (or its reason for passing). */
static rule_why deferred(mr_rule_run *R, mr_pag_outcome o, const mr_pag_info *info,
                         mr_rule_text *out, const char *why)
{
    if (o != MR_PAG_REWRITE) {
        snprintf(R->detail, sizeof R->detail, "keyset not used (%s); %s", why, info->why);
        return WHY_NOT_KIND;
    }
    rule_why w = copy_out(R, out);
    if (w == WHY_MATCHED)
        snprintf(R->detail, sizeof R->detail,
                 "deferred join from offset %llu (keyset not used: "
                 "%s)",
                 (unsigned long long)info->offset, why);
    return w;
}

/* A page that is not sought: untouched, or with the key appended to its
 * ORDER BY when that is what makes the order total. */
static rule_why ordered(mr_rule_run *R, mr_rule_stmt *S, mr_rule_text *out, const char *why)
{
    mr_buf *b = &pag_scratch_of(R)->out;
    mr_buf_reset(b);
    if (!mr_keyset_ordered_sql(S->text, S->len, R->tok, &S->st, &R->res->keyset.listing, b))
        return not_this(R, why);
    rule_why w = copy_out(R, out);
    if (w == WHY_MATCHED)
        snprintf(R->detail, sizeof R->detail,
                 "%s; the key is appended to ORDER BY, so the "
                 "page ends where the seeks assume",
                 why);
    return w;
}

static rule_why miss(mr_rule_run *R, mr_rule_stmt *S, const mr_rule *r, mr_pag_outcome o,
                     const mr_pag_info *info, mr_rule_text *out)
{
    if (!r->log_only) {
        R->res->keyset.outcome = MR_KEYSET_MISS;
        R->res->keyset.rule = r;
    }
    if (r->paginate->strategy == MR_PAGINATE_AUTO)
        return deferred(R, o, info, out, "no bookmark close enough");
    return ordered(R, S, out,
                   "keyset: no bookmark within threshold rows before the offset; "
                   "its last row is bookmarked");
}

static rule_why seek(mr_rule_run *R, mr_rule_stmt *S, const mr_rule *r, uint64_t pos,
                     const char *values, size_t n, mr_rule_text *out)
{
    mr_keyset_note *note = &R->res->keyset;
    mr_buf *b = &pag_scratch_of(R)->out;
    mr_buf_reset(b);
    mr_keyset_seek_sql(S->text, S->len, R->tok, &S->st, &note->listing, values, n,
                       note->listing.offset - pos, b);
    rule_why w = copy_out(R, out);
    if (w != WHY_MATCHED)
        return w;
    if (!r->log_only) {
        note->outcome = MR_KEYSET_HIT;
        note->rule = r;
    }
    snprintf(R->detail, sizeof R->detail,
             "keyset seek from the bookmark at row %llu for "
             "offset %llu",
             (unsigned long long)pos, (unsigned long long)note->listing.offset);
    return WHY_MATCHED;
}

rule_why mr_paginate_keyset(mr_rule_run *R, mr_rule_stmt *S, const mr_rule *r,
                            const mr_paginate_def *def, mr_pag_outcome o, const mr_pag_info *info,
                            mr_rule_text *out)
{
    mr_keyset_note *note = &R->res->keyset;
    const char *why = NULL;
    if (note->watch)
        return deferred(R, o, info, out, "another rule took the listing");
    if (R->ctx->prepared)
        return deferred(R, o, info, out, "prepared statements are not bookmarked");
    const mr_bookmark_port *store = R->ctx->bookmarks;
    if (!store) /* none, or the session may have temporary tables (paginate/session_hooks.c) */
        return deferred(R, o, info, out, "no bookmarks in this session");
    if (!mr_paginate_takes(S->text, S->len, R->tok, &S->st, def, R->ctx->schema, &why) ||
        !mr_keyset_listing_of(S->text, S->len, R->tok, &S->st, def, R->ctx->schema, R->ctx->user,
                              &note->listing, &why))
        return deferred(R, o, info, out, why);
    note->watch = true;
    note->ttl_ms = def->bookmark_ttl_ms;
    note->max_bookmarks = def->max_bookmarks;
    note->threshold = def->threshold;
    note->keyset_only = def->strategy == MR_PAGINATE_KEYSET;
    const mr_keyset_listing *ls = &note->listing;
    if (ls->offset < def->threshold)
        return ordered(R, S, out,
                       "keyset: offset below the threshold; the page's end is bookmarked");
    uint64_t pos = 0;
    char values[MR_KEYSET_VALUES_MAX];
    size_t n = 0;
    switch (store->find(ls->hash, ls->table_hash, ls->offset, store->now_ms(), &pos, values,
                        sizeof values, &n)) {
    case MR_BOOKMARK_REFUSED:
        note->watch = false;
        return deferred(R, o, info, out, "the listing's order cannot be bookmarked");
    case MR_BOOKMARK_FOUND:
        /* the listing's hash covers its columns; the count is checked all the same, as
         * a seek with a value missing would not even parse */
        if (ls->offset - pos < def->threshold && mr_keyset_value_count(values, n) == ls->ncols)
            return seek(R, S, r, pos, values, n, out);
        return miss(R, S, r, o, info, out);
    default: return miss(R, S, r, o, info, out);
    }
}
