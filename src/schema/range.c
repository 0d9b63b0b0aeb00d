/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schema/range.c - a numeric column's range from its information_schema
 * type, and the comparison of a literal's digits against it (see
 * schema/range.h).
 *
 * Pure, any thread.
 */
#include "myrewrite/schema/range.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Bits of each integer type, as DATA_TYPE names it. */
static unsigned int_bits(const char *data_type)
{
    static const struct {
        const char *name;
        unsigned bits;
    } types[] = {{"tinyint", 8}, {"smallint", 16}, {"mediumint", 24},
                 {"int", 32},    {"integer", 32},  {"bigint", 64}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcasecmp(data_type, types[i].name) == 0)
            return types[i].bits;
    return 0;
}

static bool is_unsigned(const char *column_type)
{
    for (const char *p = column_type; *p; p++)
        if (strncasecmp(p, "unsigned", 8) == 0)
            return true;
    return false;
}

static void put_u64(char *dst, uint64_t v) { snprintf(dst, MR_RANGE_DIGITS, "%" PRIu64, v); }

static void read_int(unsigned bits, bool uns, mr_col_range *out)
{
    uint64_t all = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    uint64_t half = UINT64_C(1) << (bits - 1);
    out->kind = MR_RANGE_INT;
    put_u64(out->lo, uns ? 0 : half);
    put_u64(out->hi, uns ? all : half - 1);
    put_u64(out->width, all);
}

/* n nines ("0" for none): the greatest whole value of n integer digits. */
static void nines(char *dst, unsigned n)
{
    if (!n) {
        strcpy(dst, "0");
        return;
    }
    memset(dst, '9', n);
    dst[n] = '\0';
}

/* decimal(p,s) or decimal(p) in COLUMN_TYPE: false when not in that form. */
static bool read_decimal_ps(const char *column_type, unsigned *p, unsigned *s)
{
    const char *open = strchr(column_type, '(');
    if (!open)
        return false;
    char *end;
    unsigned long pv = strtoul(open + 1, &end, 10), sv = 0;
    if (end == open + 1)
        return false;
    if (*end == ',') {
        const char *from = end + 1;
        sv = strtoul(from, &end, 10);
        if (end == from)
            return false;
    }
    if (*end != ')' || pv < 1 || pv > 65 || sv > 38 || sv > pv)
        return false;
    *p = (unsigned)pv;
    *s = (unsigned)sv;
    return true;
}

/* The number in the first parentheses of COLUMN_TYPE, or `none`. */
static unsigned long paren_number(const char *column_type, unsigned long none)
{
    const char *open = strchr(column_type, '(');
    char *end;
    unsigned long v = open ? strtoul(open + 1, &end, 10) : 0;
    return open && end != open + 1 && *end == ')' ? v : none;
}

/* Character and temporal types: their kind, length or fractional digits. */
static void read_other(const char *data_type, const char *column_type, mr_col_range *out)
{
    static const struct {
        const char *name;
        unsigned long length; /* 0: from COLUMN_TYPE */
    } chars[] = {{"char", 0},     {"varchar", 0},           {"tinytext", 255},
                 {"text", 65535}, {"mediumtext", 16777215}, {"longtext", 4294967295ul}};
    for (size_t i = 0; i < sizeof chars / sizeof chars[0]; i++)
        if (strcasecmp(data_type, chars[i].name) == 0) {
            out->kind = MR_RANGE_CHAR;
            out->length = chars[i].length ? chars[i].length : paren_number(column_type, 1);
            return;
        }
    if (strcasecmp(data_type, "date") == 0) {
        out->kind = MR_RANGE_DATE;
    } else if (strcasecmp(data_type, "datetime") == 0 || strcasecmp(data_type, "timestamp") == 0) {
        out->kind = MR_RANGE_DATETIME;
        out->scale = (unsigned)paren_number(column_type, 0);
    }
}

/* DECIMAL(p,s): |v| < 10^(p-s); a delta spans at most twice that, less 2
 * (s = 0) or, whole, less 1 (s > 0). */
static void read_decimal(unsigned p, unsigned s, bool uns, mr_col_range *out)
{
    unsigned k = p - s;
    out->kind = MR_RANGE_DECIMAL;
    nines(out->hi, k);
    if (uns) {
        strcpy(out->lo, "0");
        strcpy(out->width, out->hi);
        return;
    }
    strcpy(out->lo, out->hi);
    out->width[0] = '1';
    nines(out->width + 1, k);
    if (!k)
        out->width[1] = '\0'; /* DECIMAL(s,s): "1" */
    if (s == 0)
        out->width[k] = '8';
}

void mr_range_read(const char *data_type, const char *column_type, mr_col_range *out)
{
    memset(out, 0, sizeof *out);
    out->kind = MR_RANGE_NONE;
    if (!data_type || !column_type)
        return;
    snprintf(out->type, sizeof out->type, "%s", column_type);
    bool uns = is_unsigned(column_type);
    unsigned bits = int_bits(data_type), p, s;
    if (bits) {
        read_int(bits, uns, out);
    } else if (strcasecmp(data_type, "decimal") == 0 || strcasecmp(data_type, "numeric") == 0) {
        if (read_decimal_ps(column_type, &p, &s)) {
            read_decimal(p, s, uns, out);
            out->scale = s;
        }
    } else {
        read_other(data_type, column_type, out);
    }
}

/* Compares two magnitudes written in digits (leading zeros allowed in a). */
static int cmp_digits(const char *a, size_t an, const char *b)
{
    while (an > 1 && a[0] == '0') {
        a++;
        an--;
    }
    size_t bn = strlen(b);
    if (an != bn)
        return an < bn ? -1 : 1;
    int c = memcmp(a, b, an);
    return c < 0 ? -1 : c > 0;
}

static bool all_digits(const char *p, size_t n)
{
    if (!n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return false;
    return true;
}

mr_fit mr_range_delta_fits(const mr_col_range *r, const char *digits, size_t n)
{
    if (!mr_range_numeric(r) || !all_digits(digits, n))
        return MR_FIT_UNSURE;
    return cmp_digits(digits, n, r->width) > 0 ? MR_FIT_NO : MR_FIT_YES;
}

mr_fit mr_range_value_fits(const mr_col_range *r, bool neg, const char *digits, size_t n)
{
    if (!mr_range_numeric(r))
        return MR_FIT_UNSURE;
    size_t whole = 0;
    while (whole < n && digits[whole] >= '0' && digits[whole] <= '9')
        whole++;
    if (!whole)
        return MR_FIT_UNSURE;
    if (whole < n &&
        (digits[whole] != '.' || (whole + 1 < n && !all_digits(digits + whole + 1, n - whole - 1))))
        return MR_FIT_UNSURE;
    if (cmp_digits(digits, whole, neg ? r->lo : r->hi) > 0)
        return MR_FIT_NO;
    return whole == n ? MR_FIT_YES : MR_FIT_UNSURE;
}
