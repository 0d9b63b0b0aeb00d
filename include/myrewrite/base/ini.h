/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/ini.h - the INI reader behind the config file and the rules files.
 *
 * Pure, any thread. Written here rather than taken from libinih because
 * rules need the line of every key for file:line diagnostics and values
 * (regexes, SQL) longer than inih's fixed line buffer.
 *
 * Format: `[section]` headers; `key = value` pairs; lines starting with
 * `#` or `;` are comments; an indented line continues the previous value
 * (joined with one space). Values are trimmed; no inline comments, since
 * SQL and regexes contain `#` and `;`.
 */
#ifndef MYREWRITE_INI_H
#define MYREWRITE_INI_H

#include <stddef.h>

typedef struct mr_ini_callbacks {
    /* A `[header]` line; return 0 to go on. */
    int (*section)(void *ctx, const char *name, int line);
    /* A complete `key = value`; `line` is where the key stands. */
    int (*pair)(void *ctx, const char *section, const char *key, const char *value, int line);
    /* A syntax error; parsing goes on with the next line. */
    void (*error)(void *ctx, int line, const char *msg);
} mr_ini_callbacks;

/* Parses `len` bytes of text; returns the number of syntax errors plus the
 * number of callbacks that returned non-zero. */
int mr_ini_parse(const char *text, size_t len, const mr_ini_callbacks *cb, void *ctx);

#endif
