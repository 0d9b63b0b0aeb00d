/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/statement/statement_impl.h - what the statement side of delayed rules
 * shares between its files (delayed/statement/statement.c: DELAYED statements;
 * delayed/statement/read_take.c: read_pending's point reads): the kind's buffers in
 * the worker's scratch and the step that sends a text instead. Private to
 * delayed/; pure, the caller's worker thread.
 */
#ifndef MYREWRITE_DELAYED_STATEMENT_IMPL_H
#define MYREWRITE_DELAYED_STATEMENT_IMPL_H

#include "myrewrite/delayed/mem.h"
#include "myrewrite/delayed/stage.h"
#include "myrewrite/rules/kind.h"

/* The kind's buffers in the worker's scratch, made at its first DELAYED
 * statement or point read (the takers check they could be). */
typedef struct delayed_scratch {
    mr_buf out;          /* staging INSERT (or point read) of the latest statement taken */
    mr_dstage_rows rows; /* ... the staging INSERT's rows as data */
    mr_dstage stage;     /* ... the INSERT as the group batch takes it (res->group_stage) */
    char msg[1024];      /* refusal of the latest DELAYED statement (res->message) */
    mr_dmem_batch dmem;  /* deltas of the latest memory-mode DELAYED statement (res->dmem) */
    mr_buf set;          /* a prepared memory-mode point read's SET (res->read_set) */
} delayed_scratch;

/* NULL when out of memory. */
delayed_scratch *mr_delayed_scratch_of(mr_rule_run *R);

/* S becomes the scratch's `out`: the text sent in place of the statement. */
mr_take_step mr_delayed_send_instead(mr_rule_run *R, mr_rule_stmt *S);

/* A SELECT that may be a point read of a rule with read_pending
 * (delayed/statement/read_take.c); MR_TAKE_NONE for every other statement. */
mr_take_step mr_delayed_read_take(mr_rule_run *R, mr_rule_stmt *S);

#endif
