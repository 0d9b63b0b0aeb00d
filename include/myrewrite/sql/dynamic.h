/* SPDX-License-Identifier: Apache-2.0 */
/* sql/dynamic.h - statements that run SQL of their own: which SQL, when
 * the text shows it.
 * Thread: pure, any thread. Owns nothing.
 *
 * `EXECUTE IMMEDIATE 'text' [USING ...]` and `PREPARE name FROM 'text'`
 * run the statement in the string: when it is one string literal, or
 * adjacent ones (the server joins 'a' 'b'), sql_dynamic_text gives the
 * bytes the server reads, escapes resolved. Every other way of naming SQL
 * to run is one whose statements the text does not show: a user variable,
 * an expression or a hex literal after EXECUTE IMMEDIATE / PREPARE ...
 * FROM, a literal with a character set introducer, CALL of a procedure, a
 * compound statement (BEGIN NOT ATOMIC, IF, CASE, LOOP, WHILE, REPEAT, FOR,
 * a label), or one of those inside an executable comment that starts the
 * statement. Reading the literal follows the lexer's flags (the session's
 * sql_mode: a '"' string is an identifier under ANSI_QUOTES, a backslash
 * is a plain byte under NO_BACKSLASH_ESCAPES); like the lexer it is byte
 * oriented (sql/lexer.h), so callers must not trust it in a character set
 * whose multibyte characters can end in 0x5c. */
#ifndef MYREWRITE_SQL_DYNAMIC_H
#define MYREWRITE_SQL_DYNAMIC_H

#include <stddef.h>

#include "myrewrite/sql/stmt.h"

typedef enum sql_dynamic_kind {
    SQL_DYN_NONE = 0, /* runs no SQL named by its own text */
    SQL_DYN_LITERAL,  /* the SQL it runs is the literal(s) `lit` */
    SQL_DYN_HIDDEN    /* runs SQL its text does not show; `what` says how */
} sql_dynamic_kind;

typedef struct sql_dynamic {
    sql_dynamic_kind kind;
    sql_range lit;    /* LITERAL: the string tokens (comments between them allowed) */
    const char *what; /* the form, in words: "EXECUTE IMMEDIATE of a user variable" ... */
} sql_dynamic;

/* A cheap look at the first tokens of text[0..n): false when the statement
 * cannot run SQL of its own (sql_dynamic_find would say SQL_DYN_NONE), so
 * the common statement is not lexed whole. */
bool sql_dynamic_may(const char *text, size_t n, unsigned lex_flags);

/* Looks at the statement in toks[0..ntok) (lexed from text, comments
 * included, one statement: tokens after a top-level ';' are not read). */
void sql_dynamic_find(const char *text, const sql_token *toks, size_t ntok, unsigned lex_flags,
                      sql_dynamic *out);

/* The bytes of the literals d->lit stands for, written to out, which must
 * hold the sum of their tokens' lengths (a value is never longer than its
 * quoted form). Returns the length. Escapes as the server resolves them:
 * a doubled quote is one, and without NO_BACKSLASH_ESCAPES \0 \b \n \r \t
 * \Z are control bytes, \% and \_ keep their backslash, any other \c is c. */
size_t sql_dynamic_text(const char *text, const sql_token *toks, const sql_dynamic *d,
                        unsigned lex_flags, char *out);

/* The buffer sql_dynamic_text needs for d. */
size_t sql_dynamic_text_max(const sql_token *toks, const sql_dynamic *d);

#endif
