/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/group/group_impl.h - what the files of group commit share, lowest
 * first: a member's answer and the counters (delayed/group/member.c), one
 * batch's run (delayed/group/batch.c); the queue and its runner threads
 * (delayed/group/group.c) use both.
 */
#ifndef MYREWRITE_DELAYED_GROUP_IMPL_H
#define MYREWRITE_DELAYED_GROUP_IMPL_H

#include <mysql.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/delayed/group.h"

/* ---- delayed/group/member.c ---- */

/* The counters SHOW DELAYED and /metrics read (mr_dgroup_stats_get). */
extern mr_dgroup_stats dg_stats;
/* The runner is done with member m: its answer is written, its submitter
 * woken; the runner lets go of it. */
void dg_deliver(mr_dgroup_member *m);
/* m's answer becomes the ERR code, state and formatted message. */
void dg_fail(mr_dgroup_member *m, uint16_t code, const char *state, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- delayed/group/batch.c ---- */

/* delayed_park_timeout: how long a batch waits for its staging table (set
 * at configure). */
extern uint64_t dg_park_timeout_ms;
/* Runs the batch of n members from first on (each answered); false when
 * the connection broke under it. */
bool dg_run_batch(MYSQL *db, mr_dgroup_member *first, size_t n);

#endif
