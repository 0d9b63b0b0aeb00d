/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sql/coltype.h - which column types the proxy copies into a staging
 * table's CREATE TABLE.
 *
 * Pure, any thread. The flusher types a staging table's key and set
 * columns as the main table's, reading COLUMN_TYPE and COLLATION_NAME from
 * information_schema. Those are text the server wrote, but they end up in
 * DDL run by the proxy's own account, so only what this grammar takes is
 * written: a known type name, an optional (n) or (m,d) or, for ENUM and
 * SET, a list of string literals, then UNSIGNED / SIGNED / ZEROFILL.
 */
#ifndef MYREWRITE_SQL_COLTYPE_H
#define MYREWRITE_SQL_COLTYPE_H

#include <stdbool.h>
#include <stddef.h>

/* Whether COLUMN_TYPE text `type` is one the grammar above takes; when not,
 * why says what was not understood. */
bool mr_coltype_ok(const char *type, char *why, size_t whylen);
/* Whether `name` is a collation name: 1 to 64 of [A-Za-z0-9_]. */
bool mr_collation_ok(const char *name);

#endif
