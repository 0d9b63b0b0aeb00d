/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sql/charset_guard.h - which sessions the SQL front end must not rewrite.
 *
 * In big5, cp932, gbk, gb18030 and sjis the second byte of a character can
 * be 0x5c ('\') or 0x60 ('`'). The lexer reads them whole with the
 * character set's multibyte rule (SQL_LEX_MB_*, sql/lexer.h), but a session
 * whose client character set is one of these still gets its statements
 * relayed as written: block rules still run, rewrites do not, and DELAYED
 * statements (which can only be rewritten) are refused. The set named here
 * also picks the lexer's multibyte rule; block rules read every other rule
 * too where it matters (rules/readings.c), since a change the proxy does
 * not see may have happened.
 *
 * The session learns its character set from the handshake and
 * COM_CHANGE_USER (a collation id), and from the SET statements it relays
 * (SET NAMES, SET CHARACTER SET / CHARSET, SET character_set_client).
 * A server-side change it does not see (init_connect, a stored routine)
 * is not followed; rules/README.md says so.
 *
 * Pure, any thread.
 */
#ifndef MYREWRITE_CHARSET_GUARD_H
#define MYREWRITE_CHARSET_GUARD_H

#include <stddef.h>

/* The unsafe character set a collation id belongs to ("gbk"...), or NULL
 * for every other id (those whose bytes >= 0x80 never encode ASCII). */
const char *mr_charset_unsafe_collation(unsigned id);

/* The unsafe character set a charset name (any case) stands for, or NULL. */
const char *mr_charset_unsafe_name(const char *name, size_t len);

typedef enum mr_charset_change {
    MR_CHARSET_SAME,   /* the text changes no client character set */
    MR_CHARSET_SAFE,   /* it sets one the lexer reads correctly */
    MR_CHARSET_UNSAFE, /* it sets one of the unsafe ones, *name says which; or one the
                          proxy cannot know (DEFAULT, a variable, an expression), *name
                          then MR_CHARSET_UNKNOWN: taken as unsafe until a known one */
} mr_charset_change;

#define MR_CHARSET_UNKNOWN                                                                         \
    "one the proxy cannot know (set from DEFAULT, a variable or an "                               \
    "expression)"

/* What a COM_QUERY text does to the client character set: its last
 * SET NAMES / SET CHARACTER SET / SET CHARSET / SET character_set_client,
 * also inside executable comments (mysqldump writes `/ *!40101 SET NAMES
 * utf8mb4 * /`). lex_flags as for sql_lexer_init. */
mr_charset_change mr_charset_statement(const char *sql, size_t len, unsigned lex_flags,
                                       const char **name);

#endif
