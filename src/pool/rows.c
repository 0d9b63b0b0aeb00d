/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/rows.c - copies of a worker's pool for SHOW POOLS, SHOW SERVERS,
 * SHOW PINS and /metrics, read on the admin and HTTP threads: taken under
 * the pool's snapshot lock (p->lock), which the worker holds only while it
 * changes what these read.
 */
#include "pool/pool_impl.h"

#include <stdlib.h>
#include <string.h>

#include "myrewrite/base/clock.h"

/* One more row (the console's path: a realloc a row is cheap enough). */
static bool grow(void **rows, size_t n, size_t size)
{
    void *g = realloc(*rows, (n + 1) * size);
    if (!g)
        return false;
    *rows = g;
    return true;
}

bool mr_pool_rows(mr_pool *p, mr_pool_row **rows, size_t *n)
{
    bool ok = true;
    pthread_mutex_lock(&p->lock);
    for (mr_pool_user *u = p->users; u && ok; u = u->next) {
        size_t i = 0;
        while (i < *n && strcmp((*rows)[i].user, u->key.user) != 0)
            i++;
        if (i == *n) {
            ok = grow((void **)rows, *n, sizeof **rows);
            if (!ok)
                break;
            memset(&(*rows)[i], 0, sizeof **rows);
            memcpy((*rows)[i].user, u->key.user, sizeof u->key.user);
            (*n)++;
        }
        mr_pool_row *r = &(*rows)[i];
        r->sessions += u->sessions;
        r->waiting += u->waiting;
        r->pinned += u->pinned;
        r->active += u->nbusy;
        r->idle += u->nidle;
        r->waits += u->waits;
        r->wait_timeouts += u->wait_timeouts;
        mr_pool_wait *oldest = mr_pool_first_waiter(p, u);
        uint64_t us = oldest ? (mr_mono_ns() - oldest->since_ns) / 1000 : 0;
        if (us > r->max_wait_us)
            r->max_wait_us = us;
    }
    pthread_mutex_unlock(&p->lock);
    return ok;
}

static bool srv_row(mr_pool *p, const mr_srv *s, uint64_t now, mr_pool_srv_row **rows, size_t *n)
{
    if (!grow((void **)rows, *n, sizeof **rows))
        return false;
    mr_pool_srv_row *r = &(*rows)[(*n)++];
    memset(r, 0, sizeof *r);
    r->worker = p->worker;
    memcpy(r->user, s->user->key.user, sizeof r->user);
    r->thread_id = s->thread_id;
    r->session = s->session;
    r->idle = s->idle_ns != 0;
    r->age_ms = (now - s->born_ns) / 1000000;
    r->idle_ms = s->idle_ns ? (now - s->idle_ns) / 1000000 : 0;
    r->units = s->units;
    return true;
}

bool mr_pool_srv_rows(mr_pool *p, mr_pool_srv_row **rows, size_t *n)
{
    bool ok = true;
    uint64_t now = mr_mono_ns();
    pthread_mutex_lock(&p->lock);
    for (mr_pool_user *u = p->users; u && ok; u = u->next) {
        for (mr_srv *s = u->busy; s && ok; s = s->next)
            ok = srv_row(p, s, now, rows, n);
        for (mr_srv *s = u->idle; s && ok; s = s->next)
            ok = srv_row(p, s, now, rows, n);
    }
    pthread_mutex_unlock(&p->lock);
    return ok;
}

void mr_pool_counters(mr_pool *p, mr_pool_totals *t)
{
    pthread_mutex_lock(&p->lock);
    for (unsigned r = 0; r < MR_PIN_REASONS; r++) {
        t->pins[r] += p->pins[r];
        t->pinned[r] += p->pinned[r];
    }
    t->waits += p->waits;
    t->wait_timeouts += p->wait_timeouts;
    t->evictions += p->evictions;
    t->replays += p->replays;
    t->resets += p->resets;
    t->moves += p->moves;
    t->connections += p->total - p->nclosing; /* those closing are not lent again */
    t->logins += p->logins;
    for (mr_pool_user *u = p->users; u; u = u->next) {
        t->idle += u->nidle;
        t->waiting += u->waiting;
    }
    t->wait_us_sum += p->wait_us_sum;
    for (unsigned i = 0; i < MR_POOL_WAIT_BUCKETS; i++)
        t->wait_us_buckets[i] += p->wait_us_buckets[i];
    pthread_mutex_unlock(&p->lock);
}
