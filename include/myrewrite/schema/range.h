/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schema/range.h - the values a numeric column can hold, read from
 * information_schema.COLUMNS (DATA_TYPE and COLUMN_TYPE), and whether a
 * literal fits it: UPDATE DELAYED refuses a delta or a SET value the flush
 * could never apply (rules/README.md, "Refused keys").
 *
 * Known: TINYINT, SMALLINT, MEDIUMINT, INT, BIGINT (signed or UNSIGNED) and
 * DECIMAL/NUMERIC(p,s). Every other type has no range: nothing is refused
 * for it. The kind of a character or temporal column is read too, with its
 * length or fractional digits, for the key literals of UPDATE DELAYED
 * (delayed/statement/key_literal.c).
 * Bounds are kept as decimal digit strings, so DECIMAL(65,0) and BIGINT
 * UNSIGNED are compared the same way as TINYINT.
 *
 * Pure, any thread. A range is a plain value.
 */
#ifndef MYREWRITE_SCHEMA_RANGE_H
#define MYREWRITE_SCHEMA_RANGE_H

#include <stdbool.h>
#include <stddef.h>

#define MR_RANGE_DIGITS 68 /* DECIMAL(65,0)'s width has 66 digits, + NUL */
#define MR_RANGE_TYPE 48   /* COLUMN_TYPE kept for messages, cut to fit */

typedef enum mr_range_kind {
    MR_RANGE_NONE, /* not a type the proxy reads */
    MR_RANGE_INT,
    MR_RANGE_DECIMAL,
    MR_RANGE_CHAR,     /* CHAR, VARCHAR, TEXT types: `length` characters at most */
    MR_RANGE_DATE,     /* DATE */
    MR_RANGE_DATETIME, /* DATETIME, TIMESTAMP: `scale` fractional digits */
} mr_range_kind;

typedef struct mr_col_range {
    unsigned char kind;          /* mr_range_kind */
    char type[MR_RANGE_TYPE];    /* COLUMN_TYPE as read, e.g. "int(10) unsigned" */
    char lo[MR_RANGE_DIGITS];    /* the least value is -lo ("0" when unsigned) */
    char hi[MR_RANGE_DIGITS];    /* the greatest whole value */
    char width[MR_RANGE_DIGITS]; /* the greatest whole |delta| that can still land */
    unsigned scale;              /* DECIMAL: digits after the point; DATETIME: of the seconds */
    unsigned long length;        /* CHAR: characters at most */
} mr_col_range;

/* What a lookup knows of a column's range (mr_schema_source.column_range). */
typedef enum mr_range_status {
    MR_RANGE_UNKNOWN, /* not loaded (yet), or a type the proxy does not read */
    MR_RANGE_KNOWN,
    MR_RANGE_NO_COLUMN, /* loaded, and the table has no such column (or no such table) */
} mr_range_status;

/* The range of a column of DATA_TYPE / COLUMN_TYPE (either may be NULL);
 * out->kind is MR_RANGE_NONE for types other than those of mr_range_kind. */
void mr_range_read(const char *data_type, const char *column_type, mr_col_range *out);

/* Does a literal fit? */
typedef enum mr_fit {
    MR_FIT_YES,
    MR_FIT_NO,
    MR_FIT_UNSURE, /* a form not compared (an exponent, a string...): let the server judge */
} mr_fit;

/* Has the column a range (an integer or DECIMAL type)? */
static inline bool mr_range_numeric(const mr_col_range *r)
{
    return r->kind == MR_RANGE_INT || r->kind == MR_RANGE_DECIMAL;
}

/* A delta of magnitude `digits` (n bytes, [0-9]+) added to the column:
 * NO when it is wider than max - min, so no row can take it. */
mr_fit mr_range_delta_fits(const mr_col_range *r, const char *digits, size_t n);
/* A value (`-` first when neg) set into the column: NO when it lies outside
 * [min, max]. digits is [0-9]+ optionally followed by .[0-9]* (the whole
 * part is compared: rounding only takes it further out); else UNSURE. */
mr_fit mr_range_value_fits(const mr_col_range *r, bool neg, const char *digits, size_t n);

#endif
