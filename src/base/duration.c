/*
 * base/duration.c - durations as text to milliseconds (see base/duration.h).
 * Digits are read by hand rather than with strtod, which would take
 * "inf", "nan", hex floats and the locale's decimal point.
 */
#include "myrewrite/base/duration.h"

#include <string.h>

static uint64_t unit_ms(const char *u)
{
    static const struct {
        const char *name;
        uint64_t ms;
    } units[] = {{"", 1000}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(u, units[i].name) == 0)
            return units[i].ms;
    return 0;
}

bool mr_parse_duration(const char *s, uint64_t *ms)
{
    const uint64_t cap = MR_DURATION_MAX_MS;
    uint64_t whole = 0, frac = 0, scale = 1;
    const char *p = s;
    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (uint64_t)(*p - '0');
        if (whole > cap)
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
    uint64_t mult = unit_ms(p);
    if (!digits || !mult || whole > cap / mult)
        return false;
    uint64_t v = whole * mult + (frac * mult + scale / 2) / scale;
    if (v > cap)
        return false;
    *ms = v;
    return true;
}
