/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/live.c - the ids of this proxy's live pooled sessions (queue/live.h):
 * a hash set of ids under one mutex. The ids are stored in the set's entry
 * pointers themselves (never 0: a session has an id once logged in).
 */
#include "myrewrite/queue/live.h"

#include <pthread.h>
#include <stdlib.h>

#include "myrewrite/pool/set.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mr_pool_set live; /* guarded by lock; zeroed: an empty set */

static uint64_t hash(uint32_t id) { return (uint64_t)id * 0x9E3779B97F4A7C15ull; }

static bool same(const void *entry, const void *key) { return entry == key; }

static void *entry(uint32_t id) { return (void *)(uintptr_t)id; }

bool mr_queue_live_add(uint32_t id)
{
    pthread_mutex_lock(&lock);
    bool ok = mr_pool_set_find(&live, hash(id), same, entry(id)) ||
              mr_pool_set_add(&live, hash(id), entry(id));
    pthread_mutex_unlock(&lock);
    return ok;
}

void mr_queue_live_remove(uint32_t id)
{
    pthread_mutex_lock(&lock);
    mr_pool_set_remove(&live, hash(id), entry(id));
    pthread_mutex_unlock(&lock);
}

bool mr_queue_live_ids(uint64_t **v, size_t *n, size_t *cap)
{
    pthread_mutex_lock(&lock);
    bool ok = true;
    if (*n + live.n > *cap) {
        size_t want = *n + live.n;
        uint64_t *grown = realloc(*v, want * sizeof *grown);
        if ((ok = grown != NULL)) {
            *v = grown;
            *cap = want;
        }
    }
    for (uint32_t i = 0; ok && i < live.n; i++)
        (*v)[(*n)++] = (uint64_t)(uintptr_t)live.v[i];
    pthread_mutex_unlock(&lock);
    return ok;
}

void mr_queue_live_free(void)
{
    pthread_mutex_lock(&lock);
    mr_pool_set_free(&live);
    pthread_mutex_unlock(&lock);
}
