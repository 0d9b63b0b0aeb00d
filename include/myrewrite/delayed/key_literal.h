/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/key_literal.h - the key values of UPDATE/DELETE DELAYED compared
 * as the server compares them with their key column: a value that no row's
 * key equals, but that becomes one when converted to the column's type
 * (1.5 into an INT is 2), is refused instead of staged (forms taken:
 * delayed/statement/key_literal.c; rules/README.md, "Refused keys"). The types come
 * from the schema source (schema/desc.h, column_range); a column whose type
 * is not known is not checked.
 *
 * Pure, any thread. Writes only the caller's message.
 */
#ifndef MYREWRITE_DELAYED_KEY_LITERAL_H
#define MYREWRITE_DELAYED_KEY_LITERAL_H

#include <stdbool.h>
#include <stddef.h>

#include "myrewrite/delayed/rule.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/proto/stmt_execute.h"
#include "myrewrite/schema/desc.h"

/* Every key value of d (parsed and checked against def): literals, and
 * the `?` whose executed values params holds. False with the refusal in
 * err when one cannot be taken. */
bool mr_delayed_keys_comparable(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                                const mr_delayed_def *def, const mr_schema_source *src,
                                const mr_exec_params *params, char *err, size_t errlen);

#endif
