/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sql/token_value.h - what a token of a statement stands for, by the
 * server's rules: the one reader of a name token (a WORD or quoted
 * identifier) and the one reader of a string literal token.
 *
 * Pure, any thread.
 */
#ifndef MYREWRITE_SQL_TOKEN_VALUE_H
#define MYREWRITE_SQL_TOKEN_VALUE_H

#include <stdbool.h>
#include <stddef.h>

#include "myrewrite/sql/lexer.h"

/* Room for any name the server takes: 64 characters of up to 4 bytes. */
#define MR_SQL_NAME_BUF 257

/* The name token t of text stands for, NUL-terminated into dst[cap]:
 * - a bare word as written, unless it is a reserved word (the server takes
 *   one as a name only quoted);
 * - a quoted identifier (`x`, or "x" when the lexer ran under ANSI_QUOTES)
 *   without its quotes, the quote character doubled inside standing for one
 *   (`a``b` is a`b); a backslash is an ordinary character there, as in the
 *   server. An empty name or a lone quote inside is not a name.
 * False for every other token, and for names of cap bytes or more (dst is
 * then unspecified). */
bool sql_tok_name(const sql_token *t, const char *text, char *dst, size_t cap);

/* The value of the STRING token t of text into out (room for t->len bytes;
 * returns the bytes written): the text between its quotes (after a charset
 * introducer, when it has one), the quote character doubled inside standing
 * for one, and unless lex_flags has SQL_LEX_NO_BACKSLASH_ESCAPES backslash
 * escapes resolved as the server resolves them: \0 \b \n \r \t \Z their
 * control bytes, \% and \_ kept whole (for LIKE), \x any other x. A
 * multibyte character of lex_flags' rule is copied whole: its trail byte
 * 0x5c escapes nothing, as in the server. */
size_t sql_tok_string(const sql_token *t, const char *text, unsigned lex_flags, char *out);

#endif
