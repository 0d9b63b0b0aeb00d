/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/stmt_execute.c - decoding the parameter values of a COM_STMT_EXECUTE
 * (proto/stmt_execute.h).
 */
#include <stdio.h>
#include <string.h>

#include "myrewrite/proto/cursor.h"
#include "myrewrite/proto/stmt_execute.h"

static bool lenenc(mr_cursor *c, uint64_t *v)
{
    const uint8_t *b;
    if (!mr_cursor_take(c, 1, &b))
        return false;
    unsigned n = b[0] < 0xfb ? 0 : b[0] == 0xfc ? 2 : b[0] == 0xfd ? 3 : b[0] == 0xfe ? 8 : 9;
    if (n == 9)
        return false;
    if (n == 0) {
        *v = b[0];
        return true;
    }
    const uint8_t *x;
    if (!mr_cursor_take(c, n, &x))
        return false;
    *v = 0;
    for (unsigned i = 0; i < n; i++)
        *v |= (uint64_t)x[i] << (8 * i);
    return true;
}

static uint64_t le(const uint8_t *b, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

/* A fixed-size integer of n bytes, signed unless the type's unsigned flag is set. */
static bool int_value(mr_cursor *c, unsigned n, bool is_unsigned, mr_exec_param *out, char *buf)
{
    const uint8_t *b;
    if (!mr_cursor_take(c, n, &b))
        return false;
    uint64_t u = le(b, n);
    if (is_unsigned) {
        if (u > INT64_MAX) { /* written out: it fits no delta, but may be a key */
            out->kind = MR_EXEC_PARAM_TEXT;
            out->len = (uint32_t)snprintf(buf, 32, "%llu", (unsigned long long)u);
            out->p = buf;
            return true;
        }
        out->n = (int64_t)u;
    } else {
        unsigned shift = 64 - 8 * n;
        out->n = (int64_t)(u << shift) >> shift; /* sign-extend */
    }
    out->kind = MR_EXEC_PARAM_INT;
    return true;
}

/* The fields of a binary date as the client sent them are in range: a
 * valid date, and one that fits its 32-byte buffer when written out. */
static bool date_in_range(const uint8_t *b, uint8_t n)
{
    if (n >= 4 && (le(b, 2) > 9999 || b[2] > 12 || b[3] > 31))
        return false;
    if (n >= 7 && (b[4] > 23 || b[5] > 59 || b[6] > 59))
        return false;
    return n < 11 || le(b + 7, 4) <= 999999;
}

/* DATE / DATETIME / TIMESTAMP as 'YYYY-MM-DD[ HH:MM:SS[.ffffff]]'. */
static bool date_value(mr_cursor *c, mr_exec_param *out, char *buf)
{
    const uint8_t *n, *b;
    if (!mr_cursor_take(c, 1, &n) || (n[0] != 0 && n[0] != 4 && n[0] != 7 && n[0] != 11) ||
        !mr_cursor_take(c, n[0], &b) || !date_in_range(b, n[0]))
        return false;
    unsigned y = n[0] ? (unsigned)le(b, 2) : 0, mo = n[0] ? b[2] : 0, d = n[0] ? b[3] : 0;
    int len = snprintf(buf, 32, "%04u-%02u-%02u", y, mo, d);
    if (n[0] >= 7)
        len += snprintf(buf + len, 32 - (size_t)len, " %02u:%02u:%02u", b[4], b[5], b[6]);
    if (n[0] == 11)
        len += snprintf(buf + len, 32 - (size_t)len, ".%06u", (unsigned)le(b + 7, 4));
    out->kind = MR_EXEC_PARAM_TEXT;
    out->p = buf;
    out->len = (uint32_t)len;
    return true;
}

/* One value of the given type; false when the packet is short or the type
 * is not one a key or a delta can be. */
static bool value(mr_cursor *c, uint8_t type, bool is_unsigned, mr_exec_param *out, char *buf)
{
    const uint8_t *b;
    uint64_t n;
    switch (type) {
    case 1: return int_value(c, 1, is_unsigned, out, buf); /* TINY */
    case 2:
    case 13: return int_value(c, 2, is_unsigned, out, buf); /* SHORT, YEAR */
    case 3:
    case 9: return int_value(c, 4, is_unsigned, out, buf); /* LONG, INT24 */
    case 8: return int_value(c, 8, is_unsigned, out, buf); /* LONGLONG */
    case 4:
    case 5: { /* FLOAT, DOUBLE */
        double v;
        if (!mr_cursor_take(c, type == 4 ? 4 : 8, &b))
            return false;
        if (type == 4) {
            float f;
            memcpy(&f, b, 4);
            v = f;
        } else {
            memcpy(&v, b, 8);
        }
        out->kind = MR_EXEC_PARAM_TEXT;
        out->len = (uint32_t)snprintf(buf, 32, "%.17g", v);
        out->p = buf;
        return true;
    }
    case 7:
    case 10:
    case 12: return date_value(c, out, buf); /* TIMESTAMP, DATE, DATETIME */
    case 0:
    case 15:
    case 16:
    case 245:
    case 246:
    case 247:
    case 248:
    case 249:
    case 250:
    case 251:
    case 252:
    case 253:
    case 254: /* strings, decimals, blobs */
        if (!lenenc(c, &n) || n > UINT32_MAX || !mr_cursor_take(c, (size_t)n, &b))
            return false;
        out->kind = MR_EXEC_PARAM_TEXT;
        out->p = (const char *)b;
        out->len = (uint32_t)n;
        return true;
    default: return false;
    }
}

/* Strings, decimals, BIT, blobs, JSON, vectors, geometry: a lenenc length first. */
static bool lenenc_type(uint8_t t) { return t == 0 || t == 15 || t == 16 || t == 242 || t >= 245; }

bool mr_exec_value_len(uint8_t type, const uint8_t *p, size_t n, size_t *len)
{
    mr_cursor c = {p, n};
    const uint8_t *b;
    uint64_t v;
    switch (type) {
    case 6: *len = 0; return true; /* NULL: the bitmap says it */
    case 1: *len = 1; break;       /* TINY */
    case 2:
    case 13: *len = 2; break; /* SHORT, YEAR */
    case 3:
    case 4:
    case 9: *len = 4; break; /* LONG, FLOAT, INT24 */
    case 5:
    case 8: *len = 8; break; /* DOUBLE, LONGLONG */
    case 7:
    case 10:
    case 11:
    case 12: /* TIMESTAMP, DATE, TIME, DATETIME: a length byte, then the fields */
        if (!mr_cursor_take(&c, 1, &b))
            return false;
        *len = 1 + (size_t)b[0];
        break;
    default:
        if (!lenenc_type(type))
            return false; /* 17..20, 243, 244: server-side types */
        if (!lenenc(&c, &v) || v > n)
            return false;
        *len = (n - c.left) + (size_t)v; /* strings, decimals, blobs, vectors, geometry */
        break;
    }
    return *len <= n;
}

/* Past the lenenc name after a type (CLIENT_QUERY_ATTRIBUTES). */
static bool skip_name(mr_cursor *c)
{
    uint64_t len;
    const uint8_t *b;
    return lenenc(c, &len) && len <= c->left && mr_cursor_take(c, (size_t)len, &b);
}

/* The types (each with its name when `named`) of count values. */
static bool skip_types(mr_cursor *c, uint64_t count, bool named)
{
    const uint8_t *b;
    for (uint64_t i = 0; i < count; i++)
        if (!mr_cursor_take(c, 2, &b) || (named && !skip_name(c)))
            return false;
    return true;
}

const char *mr_exec_layout_read(const uint8_t *body, size_t n, unsigned nparams, unsigned form,
                                mr_exec_layout *out)
{
    mr_cursor c = {body, n};
    const uint8_t *b;
    bool qattrs = (form & MR_EXEC_QATTRS) != 0;
    *out = (mr_exec_layout){0};
    if (!nparams && !(qattrs && (form & MR_EXEC_PARAMETER_COUNT_AVAILABLE)))
        return NULL; /* no block */
    out->count = nparams;
    if (qattrs && !lenenc(&c, &out->count))
        return "the parameter count of COM_STMT_EXECUTE is cut short";
    if (out->count < nparams)
        return "COM_STMT_EXECUTE sends fewer parameters than the statement has";
    if (!out->count)
        return NULL;
    out->nulls = n - c.left;
    if (out->count > 8 * (uint64_t)n || !mr_cursor_take(&c, (size_t)((out->count + 7) / 8), &b) ||
        !mr_cursor_take(&c, 1, &b))
        return "the parameters of COM_STMT_EXECUTE are cut short";
    out->flag = n - c.left - 1;
    out->types = n - c.left;
    if (b[0] == 1 && !skip_types(&c, out->count, qattrs))
        return "the parameter types of COM_STMT_EXECUTE are cut short";
    out->types_len = n - c.left - out->types;
    out->values = n - c.left;
    return NULL;
}

/* The statement's nparams types, 2 bytes each, from the types block at p
 * (names skipped under query attributes). */
static void keep_types(const uint8_t *p, size_t len, unsigned nparams, bool named, uint8_t *types)
{
    mr_cursor c = {p, len};
    const uint8_t *b;
    for (unsigned i = 0; i < nparams && mr_cursor_take(&c, 2, &b); i++) {
        memcpy(types + 2 * i, b, 2);
        if (named)
            skip_name(&c);
    }
}

const char *mr_exec_params_read(const uint8_t *body, size_t n, unsigned nparams, unsigned want,
                                uint8_t *types, bool *have_types, mr_exec_param *out,
                                char (*bufs)[32], unsigned form)
{
    mr_exec_layout lay;
    if (!nparams)
        return NULL;
    const char *bad = mr_exec_layout_read(body, n, nparams, form, &lay);
    if (bad)
        return bad;
    const uint8_t *nulls = body + lay.nulls;
    if (lay.types_len) {
        keep_types(body + lay.types, lay.types_len, nparams, (form & MR_EXEC_QATTRS) != 0, types);
        *have_types = true;
    } else if (!*have_types) {
        return "COM_STMT_EXECUTE bound no parameter types";
    }
    mr_cursor c = {body + lay.values, n - lay.values};
    for (unsigned i = 0; i < want && i < nparams; i++) {
        out[i] = (mr_exec_param){.kind = MR_EXEC_PARAM_NULL};
        if (nulls[i / 8] & (1u << (i % 8)))
            continue;
        if (!value(&c, types[2 * i], (types[2 * i + 1] & 0x80) != 0, &out[i], bufs[i]))
            return "a parameter of COM_STMT_EXECUTE has a type a key or delta cannot have, "
                   "or is cut short";
    }
    return NULL;
}
