/* SPDX-License-Identifier: Apache-2.0 */
/* sql/digest.h - normalized statement text and 64-bit hash, for grouping
 * statements that differ only in literals, whitespace, comments and
 * keyword case.
 * Thread: pure, any thread. Owns nothing; writes only the caller's buffer.
 *
 * Normalization rules:
 *  - literals (strings, numbers, hex, bit, TRUE/FALSE, '?') become '?';
 *    adjacent strings ('a' 'b', which MySQL concatenates) become one '?';
 *    a '-' or '+' directly before a number in operand position is folded
 *    into it ("a = -5" -> "a = ?", but "a - 5" -> "a - ?");
 *  - IN (...) and VALUES/VALUE row lists made only of literals, NULL and
 *    signed numbers collapse to "IN (...)" / "VALUES (...)"; a run of
 *    literal rows between non-literal ones collapses to one "(...)";
 *  - keywords known to sql/lexer.h are upper-cased; other words are kept
 *    as written; `name` loses its backticks when name is a plain
 *    identifier (and is then upper-cased if it is a non-reserved keyword,
 *    so `mode` and mode agree); reserved or unusual names keep them;
 *  - plain comments are dropped; optimizer hints are kept verbatim;
 *    executable comments keep their marker and version and have their
 *    body normalized: "/ *!40001 SQL_NO_CACHE * /";
 *  - tokens are joined by canonical spacing (independent of the input):
 *    one space, except none after '(' and '.', none before ')' ',' '.'
 *    ';', and none between a name or function keyword and '(';
 *  - trailing ';' are dropped and a run of ';' between statements is
 *    written as one;
 *  - a NUL byte inside a verbatim piece (quoted name, hint) is written as
 *    the two characters \0, so the text is always a C string.
 * The hash is FNV-1a 64 over the full normalized text, even when the
 * buffer truncates it. */
#ifndef MYREWRITE_SQL_DIGEST_H
#define MYREWRITE_SQL_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/sql/lexer.h"

#define SQL_DIGEST_DEFAULT_MAX 1024

typedef struct sql_digest_result {
    uint64_t hash;   /* FNV-1a 64 of the full normalized text */
    size_t len;      /* bytes written to out (excluding the NUL) */
    size_t full_len; /* length of the full normalized text */
    bool truncated;  /* len < full_len */
} sql_digest_result;

/* Normalize text s[0..n) lexed with lex_flags into out (cap bytes,
 * NUL-terminated when cap > 0; truncation backs off to a UTF-8 character
 * boundary). SQL_OK: complete. SQL_PARTIAL: out truncated, hash still
 * complete. SQL_ERR: a lexing error stopped normalization; out and hash
 * cover the text before the error and the statement is to be treated as
 * unknown. */
sql_rc sql_digest(const char *s, size_t n, unsigned lex_flags, char *out, size_t cap,
                  sql_digest_result *res);

/* After a '(': literal items separated by ',' up to ')' (signed numbers,
 * literals, adjacent strings as one, NULL/TRUE/FALSE and, when nest, literal
 * tuples). This is the list the digest collapses to "(...)"; the rule
 * engine's slot walk uses the same test so its `?` line up. On success lx
 * is just past the ')' and *close holds it. */
bool sql_digest_literal_row(sql_lexer *lx, bool nest, sql_token *close);

/* Two steps the rules' literal slots (rules/slots.c) must take exactly as
 * the digest does, so that each `?` of a digest finds its source bytes:
 * at ';', consume further ';' and say whether anything but comments
 * follows; and the depth of a VALUES row list after token t (-1 once a
 * token at its depth is neither a row nor the comma between rows). */
bool sql_digest_more_after_semi(sql_lexer *lx);
/* A '-' or '+' t in operand position (after prev_kind/prev_id) before a
 * number or '?' folds into that one literal: true with lx moved past it and
 * *num set to it. */
bool sql_digest_sign_folds(sql_lexer *lx, const sql_token *t, unsigned prev_kind, unsigned prev_id,
                           sql_token *num);
int sql_digest_values_depth(int values_depth, int depth, const sql_token *t);

/* FNV-1a 64, exposed so callers can hash digest text the same way. */
uint64_t sql_hash64(const void *p, size_t n);

#endif
