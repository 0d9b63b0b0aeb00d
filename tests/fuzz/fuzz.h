/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tests/fuzz/fuzz.h - what the fuzz targets share: an invariant check that
 * stops the run with a message (libFuzzer then keeps the input as a crash),
 * and "does this text lex cleanly", the test every SQL the proxy writes
 * must pass.
 */
#ifndef MYREWRITE_FUZZ_H
#define MYREWRITE_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "myrewrite/sql/lexer.h"

/* libFuzzer calls it once per input; it returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* p lies inside [base, base + n], with room for len bytes. */
static inline bool fuzz_within(const void *p, size_t len, const void *base, size_t n)
{
    const uint8_t *q = p, *b = base;
    return q >= b && q <= b + n && len <= (size_t)(b + n - q);
}

/* True when text lexes without an error token under flags. */
static inline bool fuzz_lexes(const char *s, size_t n, unsigned flags)
{
    sql_lexer lx;
    sql_token t;
    sql_lexer_init(&lx, s, n, flags);
    while (sql_lexer_next(&lx, &t))
        if (t.kind == SQL_TOK_ERROR)
            return false;
    return true;
}

#endif
