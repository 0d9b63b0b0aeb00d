/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/diag.h - where configuration and rule-file problems are reported, each as
 * `file:line: message`.
 *
 * Pure, any thread; writes only to the FILE it is given.
 */
#ifndef MYREWRITE_DIAG_H
#define MYREWRITE_DIAG_H

#include <stdio.h>

typedef struct mr_diag {
    FILE *out; /* NULL: count only */
    int errors;
} mr_diag;

/* Counts one error and writes `file:line: message` (`file: message` when
 * line is 0). */
void mr_diag_error(mr_diag *d, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
