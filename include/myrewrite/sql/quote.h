/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sql/quote.h - the one way the proxy writes a name or a string into SQL it
 * builds itself (staging and flush statements, queue releases, pagination
 * rewrites, information_schema queries).
 *
 * Pure, any thread. Names come from rules, from statements and from
 * information_schema: a table or column may be called anything MariaDB
 * takes, backticks included, so every name is quoted here and nowhere else
 * (tests/unit/check_sql_quoting.sh fails the build's tests on any other
 * way of writing one).
 */
#ifndef MYREWRITE_SQL_QUOTE_H
#define MYREWRITE_SQL_QUOTE_H

#include <stdbool.h>
#include <stddef.h>

#include "myrewrite/base/buf.h"

/* MariaDB's longest identifier, in characters (NAME_CHAR_LEN). */
#define MR_SQL_IDENT_MAX 64

/* Whether name[0..n) is a name MariaDB takes: 1 to 64 characters (UTF-8
 * counted as characters), no NUL byte, not ending in a space. When not,
 * why (if given) says what is wrong. */
bool mr_sql_ident_ok(const char *name, size_t n, char *why, size_t whylen);

/* `name` with every backtick doubled. A name mr_sql_ident_ok refuses is not
 * written: the buffer is marked failed, so the statement is never sent. */
void mr_sql_put_ident(mr_buf *b, const char *name);
void mr_sql_put_ident_n(mr_buf *b, const char *name, size_t n);
/* The name `name` followed by `suffix` (a staging table's `<col>_set`),
 * checked and quoted as one name. */
void mr_sql_put_ident_suffixed(mr_buf *b, const char *name, const char *suffix);

/* 'bytes' as a string literal for a server whose sql_mode lacks
 * NO_BACKSLASH_ESCAPES: backslash, quote, NUL, \n, \r and ^Z written as
 * backslash escapes. Under NO_BACKSLASH_ESCAPES a backslash is an ordinary
 * character, so \' would end the literal: the proxy's own connections take
 * that mode out of their sql_mode when they connect (net/bgconn.c), and these
 * literals are only sent there. No byte of a multi-byte character in
 * utf8mb4, latin1 or binary is below 0x80, so escaping byte by byte is safe
 * in those character sets. */
void mr_sql_put_literal(mr_buf *b, const char *s);
void mr_sql_put_literal_n(mr_buf *b, const char *s, size_t n);

#endif
