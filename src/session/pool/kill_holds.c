/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pool/kill_holds.c - the target's side of a KILL's hold on its
 * server connection (session/pool/pool_kill.c tells how the killer and the
 * target meet in the target's slot): asked when the unit of work ends
 * (session/pool/pool_side.c), below both. Runs on the target's worker thread.
 */
#include <stdatomic.h>

#include "myrewrite/base/log.h"
#include "session/core/session_impl.h"

bool ss_pool_kill_holds(mr_session *s)
{
    atomic_store(&s->slot.backend_id, 0); /* then the read: see grab() */
    if (!atomic_load(&s->slot.kill_holds))
        return false;
    atomic_store_explicit(&s->slot.backend_id, s->srv->thread_id, memory_order_relaxed);
    mr_debug(s->id, "pool: kept server connection %u: a KILL of it is on its way",
             s->srv->thread_id);
    return true;
}
