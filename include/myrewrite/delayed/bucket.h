/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/bucket.h - the time bucket of a delayed rule (rules/README.md,
 * "bucket_column"): the key column the proxy fills with the UTC day or hour
 * in which a statement was acknowledged, so deltas land in per-day or
 * per-hour rows (seed 004: counters partitioned by day).
 *
 * Always UTC, whatever the time zone of the proxy or the server: the same
 * instant lands in the same bucket through every proxy, and a DATE or
 * DATETIME column holds it without conversion (a TIMESTAMP column would
 * convert from the session's time zone; use DATE or DATETIME).
 *
 * Pure, any thread.
 */
#ifndef MYREWRITE_DELAYED_BUCKET_H
#define MYREWRITE_DELAYED_BUCKET_H

#include <stddef.h>
#include <stdint.h>

#include "myrewrite/delayed/rule.h"
#include "myrewrite/rules/rules.h"

#define MR_BUCKET_TEXT_MAX 24 /* 'YYYY-MM-DD HH:00:00' and its NUL */

/* The bucket of unix time `t` as the column's value, without quotes:
 * "2026-11-30" (day) or "2026-11-30 12:00:00" (hour); its length, 0 for
 * MR_BUCKET_NONE or a time gmtime cannot represent. */
size_t mr_bucket_text(mr_delayed_bucket b, int64_t t, char out[MR_BUCKET_TEXT_MAX]);

/* The same bucket as an SQL expression the server evaluates when the
 * staging INSERT runs (staged mode: the row's bucket is the time it was
 * staged, also for a prepared statement executed much later); NULL for
 * MR_BUCKET_NONE. */
const char *mr_bucket_sql(mr_delayed_bucket b);

#endif
