/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/set.h - a set of entries found by a 64-bit hash and an equality test
 * the caller gives: the one table under the pool's statement maps (client
 * id -> statement, statement identity -> server statement).
 *
 * Pure, one thread: the owner of the set. The set holds pointers and owns
 * none of the entries. Open addressing over entry numbers; an entry's
 * number changes when another is removed (the last one takes its place).
 */
#ifndef MYREWRITE_POOL_SET_H
#define MYREWRITE_POOL_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_pool_set {
    void **v;       /* the entries, v[0..n) (owned array, not the entries) */
    uint64_t *h;    /* their hashes */
    uint32_t n;     /* entries */
    uint32_t cap;   /* room in v and h */
    uint32_t *slot; /* entry number + 1 by hash, 0: empty (owned) */
    uint32_t mask;  /* slots - 1 (a power of two minus one), 0 before the first add */
} mr_pool_set;

/* true when entry is the one key names */
typedef bool (*mr_pool_set_eq)(const void *entry, const void *key);

void mr_pool_set_init(mr_pool_set *s);
/* Frees the table, not the entries. */
void mr_pool_set_free(mr_pool_set *s);
/* The first entry of hash h that eq says key names, or NULL. */
void *mr_pool_set_find(const mr_pool_set *s, uint64_t h, mr_pool_set_eq eq, const void *key);
/* Adds entry with hash h (several may have one key); false: out of memory,
 * nothing changed. */
bool mr_pool_set_add(mr_pool_set *s, uint64_t h, void *entry);
/* Removes entry (added with hash h); nothing when it is not in the set. */
void mr_pool_set_remove(mr_pool_set *s, uint64_t h, const void *entry);

#endif
