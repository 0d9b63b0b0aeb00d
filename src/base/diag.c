/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/diag.c - file:line diagnostics (see base/diag.h).
 * Pure, any thread.
 */
#include "myrewrite/base/diag.h"

#include <stdarg.h>

void mr_diag_error(mr_diag *d, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    d->errors++;
    if (!d->out)
        return;
    if (line > 0)
        fprintf(d->out, "%s:%d: ", file, line);
    else
        fprintf(d->out, "%s: ", file);
    va_start(ap, fmt);
    vfprintf(d->out, fmt, ap);
    va_end(ap);
    fputc('\n', d->out);
}
