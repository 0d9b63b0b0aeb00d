/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/scratch.c - the delayed kind's buffers in the worker's scratch,
 * and the step that sends a text in place of the statement (see
 * delayed/scratch.h). Keyed by the kind's type, not by its table
 * (delayed/rule_kind.c), which names these files' takers.
 */
#include "delayed/scratch.h"

#include "myrewrite/delayed/rule.h"

delayed_scratch *mr_delayed_scratch_of(mr_rule_run *R)
{
    return mr_rule_scratch(R, MR_RULE_DELAYED, sizeof(delayed_scratch), mr_delayed_scratch_free);
}

void mr_delayed_scratch_free(void *p)
{
    delayed_scratch *s = p;
    mr_buf_free(&s->out);
    mr_buf_free(&s->rows.rows);
    mr_buf_free(&s->rows.d);
    mr_buf_free(&s->set);
    mr_dmem_batch_free(&s->dmem);
}

/* The text as it goes to the server in place of the statement. */
mr_take_step mr_delayed_send_instead(mr_rule_run *R, mr_rule_stmt *S)
{
    delayed_scratch *s = mr_delayed_scratch_of(R);
    S->text = (const char *)s->out.data;
    S->len = s->out.len;
    S->version++;
    S->parsed = false;
    S->nparams = -1;
    return MR_TAKE_DONE;
}
