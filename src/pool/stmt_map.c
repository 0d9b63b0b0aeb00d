/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/stmt_map.c - a session's prepared statements by the client's id
 * (pool/stmt_map.h). Each statement is one allocation with its identity
 * key; ids are found through the pool's hash set.
 */
#include "myrewrite/pool/stmt_map.h"

#include <stdlib.h>
#include <string.h>

#include "myrewrite/sql/digest.h"

bool mr_stmt_types_keep(mr_stmt_kept_types *k, const mr_stmt_types *t)
{
    mr_stmt_types_drop(k);
    if (!t || !t->len)
        return true;
    uint8_t *p = malloc(t->len);
    if (!p)
        return false;
    memcpy(p, t->p, t->len);
    *k = (mr_stmt_kept_types){.p = p, .len = t->len, .count = t->count, .named = t->named};
    return true;
}

bool mr_stmt_types_same(const mr_stmt_kept_types *a, const mr_stmt_kept_types *b)
{
    return a->len == b->len && a->count == b->count && a->named == b->named &&
           (!a->len || memcmp(a->p, b->p, a->len) == 0);
}

void mr_stmt_types_drop(mr_stmt_kept_types *k)
{
    free(k->p);
    *k = (mr_stmt_kept_types){0};
}

const mr_stmt_types *mr_stmt_types_view(const mr_stmt_kept_types *k, mr_stmt_types *view)
{
    if (!k->len)
        return NULL;
    *view = (mr_stmt_types){.p = k->p, .len = k->len, .count = k->count, .named = k->named};
    return view;
}

/* Ids are sequential: a multiplicative hash spreads them over the slots. */
static uint64_t id_hash(uint32_t id) { return (uint64_t)id * 0x9e3779b97f4a7c15ull; }

static bool same_id(const void *entry, const void *key)
{
    return ((const mr_stmt *)entry)->id == *(const uint32_t *)key;
}

void mr_stmt_map_init(mr_stmt_map *m, size_t long_data_limit)
{
    memset(m, 0, sizeof *m);
    mr_pool_set_init(&m->by_id);
    m->next_id = 1;
    m->long_data_limit = long_data_limit;
}

static void stmt_free(mr_stmt *st)
{
    mr_stmt_types_drop(&st->types);
    mr_buf_free(&st->long_data);
    free(st);
}

void mr_stmt_map_clear(mr_stmt_map *m)
{
    for (uint32_t i = 0; i < m->by_id.n; i++)
        stmt_free(m->by_id.v[i]);
    uint32_t next = m->next_id;
    size_t limit = m->long_data_limit;
    mr_pool_set_free(&m->by_id);
    mr_stmt_map_init(m, limit);
    m->next_id = next;
}

void mr_stmt_map_free(mr_stmt_map *m)
{
    mr_stmt_map_clear(m);
    mr_pool_set_free(&m->by_id);
}

mr_stmt *mr_stmt_map_get(const mr_stmt_map *m, uint32_t id)
{
    if (id == MR_STMT_ID_LAST)
        id = m->last;
    if (!id)
        return NULL;
    return mr_pool_set_find(&m->by_id, id_hash(id), same_id, &id);
}

/* The next id no open statement has: after 2^32 - 2 prepares the ids wrap
 * and skip those still open (a session holds far fewer than 2^32). */
static uint32_t next_free_id(mr_stmt_map *m)
{
    for (;;) {
        uint32_t id = m->next_id++;
        if (m->next_id == MR_STMT_ID_LAST)
            m->next_id = 1;
        if (!mr_stmt_map_get(m, id))
            return id;
    }
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

mr_stmt *mr_stmt_map_add(mr_stmt_map *m, const char *text, size_t text_len, const char *schema,
                         const void *ctx, size_t ctx_len, uint16_t nparams, uint16_t ncolumns)
{
    size_t slen = schema ? strlen(schema) : 0;
    if (slen > UINT32_MAX || ctx_len > UINT32_MAX)
        return NULL;
    /* the key: schema and context each after its length, so keys of other
     * parts are never the same bytes; then the text */
    size_t key_len = 8 + slen + ctx_len + text_len;
    mr_stmt *st = calloc(1, sizeof *st + key_len);
    if (!st)
        return NULL;
    uint8_t *k = (uint8_t *)(st + 1);
    put_u32(k, (uint32_t)slen);
    if (slen)
        memcpy(k + 4, schema, slen);
    put_u32(k + 4 + slen, (uint32_t)ctx_len);
    if (ctx_len)
        memcpy(k + 8 + slen, ctx, ctx_len);
    if (text_len)
        memcpy(k + 8 + slen + ctx_len, text, text_len);
    st->key = k;
    st->key_len = key_len;
    st->hash = sql_hash64(k, key_len);
    st->text = (const char *)k + 8 + slen + ctx_len;
    st->text_len = text_len;
    st->schema = slen ? (const char *)k + 4 : "";
    st->schema_len = slen;
    st->nparams = nparams;
    st->ncolumns = ncolumns;
    mr_buf_init(&st->long_data);
    st->id = next_free_id(m);
    if (!mr_pool_set_add(&m->by_id, id_hash(st->id), st)) {
        free(st);
        return NULL;
    }
    m->last = st->id;
    return st;
}

void mr_stmt_map_close(mr_stmt_map *m, mr_stmt *st)
{
    mr_stmt_long_data_reset(m, st);
    mr_pool_set_remove(&m->by_id, id_hash(st->id), st);
    if (m->last == st->id)
        m->last = 0; /* as the server: the last prepared is gone, not the one before */
    stmt_free(st);
}

bool mr_stmt_bind_types(mr_stmt *st, const mr_stmt_types *t)
{
    return mr_stmt_types_keep(&st->types, t);
}
