/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/shared.h - what the workers' pools share (pool/move.c): the room
 * under pool_max_connections and pool_size across every worker, and idle
 * server connections moved from one worker to another.
 *
 * Each worker keeps its own lists (a session borrows from its own worker's
 * idle connections without a lock shared with other workers); the shared
 * part counts every server connection of the proxy under one small lock,
 * per key and in total, and carries requests and connections between the
 * workers as letters: a worker whose session waits for a key it has no idle
 * connection of asks a worker that has one, which detaches it from its loop
 * (mr_conn_detach) and posts it; the asker attaches it to its own loop and
 * lends it to its first waiter. A letter wakes its worker through `wake`
 * (the worker's message pipe: MR_WORKER_MSG_POOL), and the worker reads its
 * letters with mr_pool_mail on its own thread.
 */
#ifndef MYREWRITE_POOL_SHARED_H
#define MYREWRITE_POOL_SHARED_H

#include "myrewrite/base/config.h"

struct mr_pool;
typedef struct mr_pool_shared mr_pool_shared;

/* Tells worker `worker` that its pool has letters (any thread). */
typedef void (*mr_pool_wake)(void *ctx, unsigned worker);

/* Before the workers' pools are made (mr_pool_new takes it); freed after
 * every pool is. */
mr_pool_shared *mr_pool_shared_new(const mr_config *cfg, unsigned nworkers, mr_pool_wake wake,
                                   void *ctx);
void mr_pool_shared_free(mr_pool_shared *sh);

/* The worker's letters (MR_WORKER_MSG_POOL), on its thread. */
void mr_pool_mail(struct mr_pool *p);

#endif
