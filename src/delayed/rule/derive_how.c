/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/rule/derive_how.c - what a default delayed rule gives each table it
 * derives (mr_derive_how, delayed/derive.h). Pure, any thread: the
 * registry itself, with its lock, is delayed/flush/derive.c.
 */
#include <stdio.h>
#include <string.h>

#include "myrewrite/delayed/derive.h"

static void copy_name(char *dst, const char *src)
{
    snprintf(dst, MR_DERIVE_NAME, "%s", src ? src : "");
}

void mr_derive_how_of(const char *rule, const mr_delayed_def *dflt, mr_derive_how *how)
{
    memset(how, 0, sizeof *how);
    copy_name(how->rule, rule);
    copy_name(how->staging_pattern, dflt->staging_table);
    copy_name(how->engine, dflt->staging_engine);
    how->flush_interval_ms = dflt->flush_interval_ms;
    how->flush_rows = dflt->flush_rows;
}
