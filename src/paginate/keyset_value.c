/* SPDX-License-Identifier: Apache-2.0 */
/*
 * paginate/keyset_value.c - which result columns can carry a keyset
 * bookmark, and their text-protocol values turned back into SQL literals
 * (see paginate/keyset.h).
 *
 * The literal must compare *exactly* equal to the stored value, with the
 * column's own collation doing the comparing, whatever the session's
 * character set or sql_mode. Hence: numbers only when the text is a plain
 * number, dates only from digits and separators, and every string as hex
 * bytes (an introducer names the character set; no escaping to get wrong).
 * Types whose text is not exact (FLOAT, DOUBLE), that sort differently
 * from their text (ENUM, SET, BIT) or that depend on the session
 * (TIMESTAMP: its time zone) are refused.
 *
 * Pure, any thread.
 */
#include <stdio.h>

#include "myrewrite/paginate/keyset.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/sql/quote.h"

/* Column flags of the protocol's column definition. */
enum { F_NOT_NULL = 1, F_ENUM = 256, F_SET = 2048 };
#define CHARSET_BINARY 63

typedef enum vclass { V_NONE, V_INT, V_DECIMAL, V_TEMPORAL, V_STRING } vclass;

static vclass class_of(uint8_t type)
{
    switch (type) {
    case MR_TYPE_TINY:
    case MR_TYPE_SHORT:
    case MR_TYPE_LONG:
    case MR_TYPE_LONGLONG:
    case MR_TYPE_INT24:
    case MR_TYPE_YEAR: return V_INT;
    case MR_TYPE_DECIMAL:
    case MR_TYPE_NEWDECIMAL: return V_DECIMAL;
    case MR_TYPE_DATE:
    case MR_TYPE_NEWDATE:
    case MR_TYPE_TIME:
    case MR_TYPE_TIME2:
    case MR_TYPE_DATETIME:
    case MR_TYPE_DATETIME2: return V_TEMPORAL;
    case MR_TYPE_VARCHAR:
    case MR_TYPE_VAR_STRING:
    case MR_TYPE_STRING:
    case MR_TYPE_TINY_BLOB:
    case MR_TYPE_MEDIUM_BLOB:
    case MR_TYPE_LONG_BLOB:
    case MR_TYPE_BLOB: return V_STRING;
    default: return V_NONE;
    }
}

/* utf8mb4 collations: MariaDB's and MySQL 8's ids, pad and no-pad. */
static bool is_utf8mb4(uint16_t cs)
{
    return cs == 45 || cs == 46 || (cs >= 224 && cs <= 247) || (cs >= 255 && cs <= 309) ||
           cs == 1069 || cs == 1070 || cs == 1248 || cs == 1270;
}

const char *mr_keyset_column_problem(uint8_t type, uint16_t flags, uint16_t charset)
{
    if (!(flags & F_NOT_NULL))
        return "a nullable ORDER BY column (NULLs cannot be sought past)";
    if (flags & (F_ENUM | F_SET))
        return "an ENUM or SET ORDER BY column (sorted by index, not by text)";
    if (type == MR_TYPE_FLOAT || type == MR_TYPE_DOUBLE)
        return "a FLOAT or DOUBLE ORDER BY column (its text is rounded)";
    if (type == MR_TYPE_TIMESTAMP || type == MR_TYPE_TIMESTAMP2)
        return "a TIMESTAMP ORDER BY column (its text depends on the session's time zone)";
    vclass c = class_of(type);
    if (c == V_NONE)
        return "an ORDER BY column of a type without an exact text form";
    if (c == V_STRING && charset != CHARSET_BINARY && !is_utf8mb4(charset))
        return "an ORDER BY string in a result character set other than utf8mb4 or binary";
    return NULL;
}

static bool digits(const uint8_t *v, size_t n, size_t *i)
{
    size_t from = *i;
    while (*i < n && v[*i] >= '0' && v[*i] <= '9')
        (*i)++;
    return *i > from;
}

/* -?[0-9]+ or, with a point allowed, -?[0-9]+(.[0-9]+)? */
static bool plain_number(const uint8_t *v, size_t n, bool point)
{
    size_t i = n > 0 && v[0] == '-' ? 1 : 0;
    if (!digits(v, n, &i))
        return false;
    if (point && i < n && v[i] == '.') {
        i++;
        if (!digits(v, n, &i))
            return false;
    }
    return i == n;
}

static bool temporal_text(const uint8_t *v, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = v[i];
        if (!((c >= '0' && c <= '9') || c == '-' || c == ':' || c == ' ' || c == '.'))
            return false;
    }
    return true;
}

/* X'hex': only hex digits go between the quotes. */
static void put_hex(mr_buf *out, const uint8_t *v, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    mr_buf_put_str(out, "X'"); /* quoting-ok: hex digits only */
    for (size_t i = 0; i < n; i++) {
        char two[2] = {hex[v[i] >> 4], hex[v[i] & 15]};
        mr_buf_put(out, two, 2);
    }
    mr_buf_put_str(out, "'"); /* quoting-ok: closes the X' above */
}

bool mr_keyset_literal(mr_buf *out, uint8_t type, uint16_t charset, const uint8_t *v, size_t n)
{
    switch (class_of(type)) {
    case V_INT:
    case V_DECIMAL:
        if (!plain_number(v, n, class_of(type) == V_DECIMAL))
            return false;
        mr_buf_put(out, v, n);
        return true;
    case V_TEMPORAL:
        if (!temporal_text(v, n))
            return false;
        mr_sql_put_literal_n(out, (const char *)v, n);
        return true;
    case V_STRING:
        if (n == 0) {
            mr_buf_put_str(out, charset == CHARSET_BINARY ? "X''" : "''");
            return true;
        }
        if (charset != CHARSET_BINARY)
            mr_buf_put_str(out, "_utf8mb4 ");
        put_hex(out, v, n);
        return true;
    default: return false;
    }
}
