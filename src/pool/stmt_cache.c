/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/stmt_cache.c - one server connection's prepared statements by
 * identity, in use order, bounded (pool/stmt_cache.h).
 */
#include "myrewrite/pool/stmt_cache.h"

#include <stdlib.h>
#include <string.h>

void mr_stmt_cache_init(mr_stmt_cache *c, uint32_t capacity)
{
    memset(c, 0, sizeof *c);
    mr_pool_set_init(&c->by_key);
    c->capacity = capacity ? capacity : 1;
}

static void unlink_entry(mr_stmt_cache *c, mr_stmt_cached *e)
{
    if (e->newer)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void link_newest(mr_stmt_cache *c, mr_stmt_cached *e)
{
    e->older = c->newest;
    e->newer = NULL;
    if (c->newest)
        c->newest->newer = e;
    else
        c->oldest = e;
    c->newest = e;
}

static void entry_free(mr_stmt_cached *e)
{
    mr_stmt_types_drop(&e->types);
    free(e);
}

void mr_stmt_cache_clear(mr_stmt_cache *c)
{
    uint32_t capacity = c->capacity;
    for (uint32_t i = 0; i < c->by_key.n; i++)
        entry_free(c->by_key.v[i]);
    mr_pool_set_free(&c->by_key);
    mr_stmt_cache_init(c, capacity);
}

/* An entry of st's key that st may use: not held for another statement. */
static bool usable_by(const void *entry, const void *key)
{
    const mr_stmt_cached *e = entry;
    const mr_stmt *st = key;
    return e->key_len == st->key_len && memcmp(e->key, st->key, st->key_len) == 0 &&
           (!e->holder || e->holder == st);
}

mr_stmt_cached *mr_stmt_cache_find(mr_stmt_cache *c, const mr_stmt *st)
{
    mr_stmt_cached *e = mr_pool_set_find(&c->by_key, st->hash, usable_by, st);
    if (e && e != c->newest) {
        unlink_entry(c, e);
        link_newest(c, e);
    }
    return e;
}

mr_stmt_cached *mr_stmt_cache_held_by(const mr_stmt_cache *c, const mr_stmt *st)
{
    for (mr_stmt_cached *e = c->oldest; e; e = e->newer)
        if (e->holder == st)
            return e;
    return NULL;
}

void mr_stmt_cache_remove(mr_stmt_cache *c, mr_stmt_cached *e)
{
    mr_pool_set_remove(&c->by_key, e->hash, e);
    unlink_entry(c, e);
    entry_free(e);
}

/* The least recently used entry neither held nor `keep`, or NULL. */
static mr_stmt_cached *victim(const mr_stmt_cache *c, const mr_stmt_cached *keep)
{
    mr_stmt_cached *e = c->oldest;
    while (e && (e->holder || e == keep))
        e = e->newer;
    return e;
}

mr_stmt_cached *mr_stmt_cache_add(mr_stmt_cache *c, const mr_stmt *st, uint32_t server_id)
{
    mr_stmt_cached *e = calloc(1, sizeof *e + st->key_len);
    if (!e)
        return NULL;
    e->server_id = server_id;
    e->hash = st->hash;
    e->key_len = st->key_len;
    memcpy(e->key, st->key, st->key_len);
    if (!mr_pool_set_add(&c->by_key, e->hash, e)) {
        free(e);
        return NULL;
    }
    link_newest(c, e);
    return e;
}

bool mr_stmt_cache_trim(mr_stmt_cache *c, const mr_stmt_cached *keep, uint32_t *evicted)
{
    mr_stmt_cached *old = c->by_key.n > c->capacity ? victim(c, keep) : NULL;
    if (!old)
        return false;
    *evicted = old->server_id;
    mr_stmt_cache_remove(c, old);
    return true;
}
