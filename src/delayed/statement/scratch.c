/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/statement/scratch.c - the delayed kind's buffers in the worker's
 * scratch (delayed_scratch, statement_impl.h), shared by the takers of
 * DELAYED statements (statement.c) and of point reads (read_take.c), and
 * the step both end with: the text built there sent in place of the
 * statement.
 *
 * The scratch is found by the kind's type and freed by its scratch_free,
 * the two fields mr_rule_kind_scratch reads. They are named here, in a
 * key of this file's own, rather than through the kind entry
 * (statement/rule_kind.c): that entry names the takers, so it sits above
 * them.
 *
 * Pure, any thread; writes only the caller's scratch.
 */
#include "myrewrite/delayed/mem.h"
#include "myrewrite/delayed/rule.h"
#include "myrewrite/rules/kind.h"

#include "delayed/statement/statement_impl.h"

static const mr_rule_kind scratch_key = {
    .type = MR_RULE_DELAYED,
    .scratch_free = mr_delayed_scratch_free,
};

delayed_scratch *mr_delayed_scratch_of(mr_rule_run *R)
{
    return mr_rule_kind_scratch(R, &scratch_key, sizeof(delayed_scratch));
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
