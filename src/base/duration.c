/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/duration.c - durations as text to milliseconds or microseconds (see
 * base/duration.h). Digits are read by hand rather than with strtod, which
 * would take "inf", "nan", hex floats and the locale's decimal point.
 */
#include "myrewrite/base/duration.h"

#include <string.h>

/* One unit in microseconds; 0 when it is not one. */
static uint64_t unit_us(const char *u)
{
    static const struct {
        const char *name;
        uint64_t us;
    } units[] = {{"", 1000000},  {"us", 1},       {"ms", 1000},
                 {"s", 1000000}, {"m", 60000000}, {"h", 3600000000ull}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(u, units[i].name) == 0)
            return units[i].us;
    return 0;
}

/* The value in units of `per` microseconds (1: µs, 1000: ms), rounded to
 * nearest; false past cap (in those units). A unit smaller than `per` (µs
 * read as ms) is first rounded to whole µs. */
static bool parse(const char *s, uint64_t per, uint64_t cap, uint64_t *out)
{
    uint64_t whole = 0, frac = 0, scale = 1;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (uint64_t)(*p - '0');
        if (whole > cap * per)
            return false;
    }
    bool digits = p > s;
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, digits = true)
            if (scale < 1000000000) { /* digits past the ninth cannot matter */
                frac = frac * 10 + (uint64_t)(*p - '0');
                scale *= 10;
            }
    }
    uint64_t us = unit_us(p);
    if (!digits || !us)
        return false;
    uint64_t v;
    if (us < per) { /* whole µs first, then to the caller's unit */
        v = whole + (frac + scale / 2) / scale;
        v = (v + per / 2) / per;
    } else {
        uint64_t mult = us / per;
        if (whole > cap / mult)
            return false;
        v = whole * mult + (frac * mult + scale / 2) / scale;
    }
    if (v > cap)
        return false;
    *out = v;
    return true;
}

bool mr_parse_duration(const char *s, uint64_t *ms)
{
    return parse(s, 1000, MR_DURATION_MAX_MS, ms);
}

bool mr_parse_duration_us(const char *s, uint64_t *us)
{
    return parse(s, 1, MR_DURATION_MAX_MS * 1000, us);
}
