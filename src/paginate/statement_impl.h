/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/statement_impl.h - what the statement side of paginate rules
 * shares between its deferred join (paginate/statement.c) and its keyset
 * strategy (paginate/keyset_statement.c): the kind's buffers in the
 * worker's scratch.
 *
 * Pure, any thread: the buffers belong to one worker's scratch.
 */
#ifndef MYREWRITE_PAGINATE_STATEMENT_IMPL_H
#define MYREWRITE_PAGINATE_STATEMENT_IMPL_H

#include "myrewrite/paginate/deferred_sql.h"
#include "myrewrite/paginate/rule.h"
#include "myrewrite/rules/kind.h"

typedef struct pag_scratch {
    mr_buf out;    /* deferred join (or seek) of the latest paginate rule */
    char msg[512]; /* guardrail refusal of the latest paginate rule (res->message) */
} pag_scratch;

/* The kind's buffers; made at its first statement (mr_paginate_apply
 * checks they could be), so NULL never reaches the keyset code. */
static inline pag_scratch *pag_scratch_of(mr_rule_run *R)
{
    return mr_rule_kind_scratch(R, &mr_paginate_kind, sizeof(pag_scratch));
}

/* The keyset and auto strategies, after mr_paginate_sql gave `o` and `info`
 * (its deferred join, if any, in the scratch's out): a seek, the deferred
 * join, or untouched; fills R->res->keyset (paginate/keyset_statement.c). */
rule_why mr_paginate_keyset(mr_rule_run *R, mr_rule_stmt *S, const mr_rule *r,
                            const mr_paginate_def *def, mr_pag_outcome o, const mr_pag_info *info,
                            mr_rule_text *out);

#endif
