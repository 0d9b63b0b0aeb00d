/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/width.h - UPDATE DELAYED values wider than their column, refused
 * when the statement arrives: a delta `col = col + N` whose |N| exceeds
 * what the column can span (max - min), or a `SET col = literal` outside
 * [min, max], could never be applied by the flush (it would go to the
 * dead-letter table, delayed/reject.h). The ranges come from the schema
 * source (schema/desc.h, column_range); a column whose range is not known
 * (schema not loaded yet, a type other than the integer and DECIMAL ones,
 * a string literal, a `?` whose value the proxy does not see) is let
 * through as before, and the flush's dead-letter table catches it.
 *
 * Pure, any thread. Writes only the caller's message.
 */
#ifndef MYREWRITE_DELAYED_WIDTH_H
#define MYREWRITE_DELAYED_WIDTH_H

#include <stdbool.h>
#include <stddef.h>

#include "myrewrite/delayed/mem.h"
#include "myrewrite/delayed/rule.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/schema/desc.h"

/* Every SET term of d (parsed and checked against def) against its
 * column's range from src (NULL, or no column_range: nothing is known).
 * A `?` takes its value from params when given, else is not checked.
 * False with the refusal in err when a value cannot fit. */
bool mr_delayed_widths_fit(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                           const mr_delayed_def *def, const mr_schema_source *src,
                           const mr_exec_params *params, char *err, size_t errlen);

/* The place among the statement's `?` (from 0) of the `?` at token i. */
unsigned mr_delayed_param_no(const sql_token *tok, uint32_t i);

#endif
