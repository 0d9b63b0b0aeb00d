/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/duration.h - the one grammar of durations, for settings and rule
 * files alike: a number, whole or with a fraction, then us, ms, s, m or h,
 * or no unit for seconds. "250ms", "10", "1.5s", "2m", "1h" -> milliseconds
 * (mr_parse_duration) or microseconds (mr_parse_duration_us, for the few
 * waits shorter than a millisecond: group_commit_wait = 200us).
 * Pure, any thread.
 */
#ifndef MYREWRITE_BASE_DURATION_H
#define MYREWRITE_BASE_DURATION_H

#include <stdbool.h>
#include <stdint.h>

/* Longest accepted: about 30,000 years, so that sums of durations stay far from
 * overflow. */
#define MR_DURATION_MAX_MS 1000000000000000ull

/* False for anything else: a sign, spaces, an unknown unit, "inf", a value
 * over MR_DURATION_MAX_MS. A fraction of a millisecond rounds to nearest. */
bool mr_parse_duration(const char *s, uint64_t *ms);
/* The same in microseconds (at most MR_DURATION_MAX_MS * 1000); a fraction
 * of a microsecond rounds to nearest. */
bool mr_parse_duration_us(const char *s, uint64_t *us);

/* What mr_parse_duration accepts, for error messages. */
#define MR_DURATION_FORMS "a duration such as 250ms, 10, 1.5s, 2m or 1h"

#endif
