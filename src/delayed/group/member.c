/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/group/member.c - one member of group commit (see delayed/group.h):
 * a staged statement's copy, made by its session, answered by the runner
 * (dg_deliver, after dg_fail when the batch failed it) and freed by
 * whichever lets go last; and the counters of group commit.
 *
 * Threads: a member is its session's until submitted, then the runner's
 * until delivered; its lock guards the references and the wake-up.
 */
#include "myrewrite/delayed/group.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "delayed/group/group_impl.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/stats/rule_stats.h"

mr_dgroup_stats dg_stats;

/* One block for st's deltas (8-aligned, first), rows and text, into m. */
static bool copy_stage(mr_dgroup_member *m, const mr_dstage *st)
{
    size_t nd = (size_t)st->nrows * st->ndelta * sizeof *st->d;
    size_t nr = (size_t)st->nrows * sizeof *st->rows;
    char *block = malloc(nd + nr + st->len + 1);
    if (!block)
        return false;
    if (nd)
        memcpy(block, st->d, nd);
    if (nr)
        memcpy(block + nd, st->rows, nr);
    memcpy(block + nd + nr, st->text, st->len);
    m->copy = block;
    m->stage = *st;
    m->stage.d = (const int64_t *)(void *)block;
    m->stage.rows = (const mr_dstage_row *)(void *)(block + nd);
    m->stage.text = m->sql = block + nd + nr;
    m->len = st->len;
    return true;
}

mr_dgroup_member *mr_dgroup_member_new(const mr_dstage *st, uint32_t rows,
                                       const mr_delayed_def *def, struct mr_rule_stats *stats,
                                       void (*wake)(void *arg), void *wake_arg)
{
    mr_dgroup_member *m = calloc(1, sizeof *m);
    if (!m || !copy_stage(m, st) || pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m ? m->copy : NULL);
        free(m);
        return NULL;
    }
    m->rows = rows;
    m->wait_us = def->group_wait_us;
    m->max_rows = def->group_rows ? def->group_rows : 1000;
    m->max_bytes = def->group_bytes ? def->group_bytes : 1u << 20;
    m->timeout_ms = def->group_timeout_ms ? def->group_timeout_ms : 10000;
    m->stats = stats;
    m->refs = 1;
    m->wake = wake;
    m->wake_arg = wake_arg;
    return m;
}

/* Drops one reference (lock held); the last one frees. */
static void unref_locked(mr_dgroup_member *m)
{
    bool last = --m->refs == 0;
    pthread_mutex_unlock(&m->lock);
    if (!last)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m->copy);
    free(m);
}

bool mr_dgroup_member_answered(mr_dgroup_member *m)
{
    pthread_mutex_lock(&m->lock);
    bool done = m->answered;
    pthread_mutex_unlock(&m->lock);
    return done;
}

void mr_dgroup_member_release(mr_dgroup_member *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->wake = NULL;
    unref_locked(m);
}

/* The runner is done with the member: its answer is written, its
 * submitter woken (under the lock, so that it cannot let go meanwhile). */
void dg_deliver(mr_dgroup_member *m)
{
    uint64_t waited = (mr_mono_ns() - m->joined_ns) / 1000;
    if (!m->unsent) { /* an unsent one is answered by the server, not a batch */
        atomic_fetch_add_explicit(&dg_stats.waited, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&dg_stats.wait_us, waited, memory_order_relaxed);
    }
    if (m->stats && !m->unsent) {
        atomic_fetch_add_explicit(&m->stats->group_statements, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&m->stats->group_wait_us, waited, memory_order_relaxed);
    }
    m->next = NULL;
    pthread_mutex_lock(&m->lock);
    m->answered = true;
    if (m->wake)
        m->wake(m->wake_arg);
    unref_locked(m);
}

void dg_fail(mr_dgroup_member *m, uint16_t code, const char *state, const char *fmt, ...)
{
    m->ok = false;
    m->err_code = code;
    snprintf(m->sqlstate, sizeof m->sqlstate, "%s", state);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->msg, sizeof m->msg, fmt, ap);
    va_end(ap);
}

const mr_dgroup_stats *mr_dgroup_stats_get(void) { return &dg_stats; }
