/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/sql/bucket.c - a delayed rule's day/hour bucket as text and as SQL
 * (see delayed/bucket.h). Pure, any thread.
 */
#include "myrewrite/delayed/bucket.h"

#include <stdio.h>
#include <time.h>

size_t mr_bucket_text(mr_delayed_bucket b, int64_t t, char out[MR_BUCKET_TEXT_MAX])
{
    out[0] = '\0';
    time_t tt = (time_t)t;
    struct tm tm;
    if (b == MR_BUCKET_NONE || !gmtime_r(&tt, &tm) || tm.tm_year + 1900 < 1 ||
        tm.tm_year + 1900 > 9999)
        return 0;
    int n = b == MR_BUCKET_DAY ? snprintf(out, MR_BUCKET_TEXT_MAX, "%04d-%02d-%02d",
                                          tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday)
                               : snprintf(out, MR_BUCKET_TEXT_MAX, "%04d-%02d-%02d %02d:00:00",
                                          tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour);
    return n > 0 && n < MR_BUCKET_TEXT_MAX ? (size_t)n : 0;
}

const char *mr_bucket_sql(mr_delayed_bucket b)
{
    switch (b) {
    case MR_BUCKET_DAY: return "UTC_DATE()";
    case MR_BUCKET_HOUR: return "DATE_FORMAT(UTC_TIMESTAMP(), '%Y-%m-%d %H:00:00')";
    case MR_BUCKET_NONE: break;
    }
    return NULL;
}
