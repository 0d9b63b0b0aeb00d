/*
 * proto/stmt_execute.c - decoding the parameter values of a COM_STMT_EXECUTE
 * (proto/stmt_execute.h).
 */
#include <stdio.h>
#include <string.h>

#include "myrewrite/proto/stmt_execute.h"

typedef struct cursor {
    const uint8_t *p;
    size_t left;
} cursor;

static bool take(cursor *c, size_t n, const uint8_t **out)
{
    if (c->left < n)
        return false;
    *out = c->p;
    c->p += n;
    c->left -= n;
    return true;
}

static bool lenenc(cursor *c, uint64_t *v)
{
    const uint8_t *b;
    if (!take(c, 1, &b))
        return false;
    unsigned n = b[0] < 0xfb ? 0 : b[0] == 0xfc ? 2 : b[0] == 0xfd ? 3 : b[0] == 0xfe ? 8 : 9;
    if (n == 9)
        return false;
    if (n == 0) {
        *v = b[0];
        return true;
    }
    const uint8_t *x;
    if (!take(c, n, &x))
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
static bool int_value(cursor *c, unsigned n, bool is_unsigned, mr_exec_param *out, char *buf)
{
    const uint8_t *b;
    if (!take(c, n, &b))
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
static bool date_value(cursor *c, mr_exec_param *out, char *buf)
{
    const uint8_t *n, *b;
    if (!take(c, 1, &n) || (n[0] != 0 && n[0] != 4 && n[0] != 7 && n[0] != 11) ||
        !take(c, n[0], &b) || !date_in_range(b, n[0]))
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
static bool value(cursor *c, uint8_t type, bool is_unsigned, mr_exec_param *out, char *buf)
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
        if (!take(c, type == 4 ? 4 : 8, &b))
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
        if (!lenenc(c, &n) || n > UINT32_MAX || !take(c, (size_t)n, &b))
            return false;
        out->kind = MR_EXEC_PARAM_TEXT;
        out->p = (const char *)b;
        out->len = (uint32_t)n;
        return true;
    default: return false;
    }
}

const char *mr_exec_params_read(const uint8_t *body, size_t n, unsigned nparams, unsigned want,
                                uint8_t *types, bool *have_types, mr_exec_param *out,
                                char (*bufs)[32])
{
    cursor c = {body, n};
    const uint8_t *nulls, *flag, *sent;
    if (!nparams)
        return NULL;
    if (!take(&c, (nparams + 7) / 8, &nulls) || !take(&c, 1, &flag))
        return "the parameters of COM_STMT_EXECUTE are cut short";
    if (flag[0] == 1) {
        if (!take(&c, 2 * (size_t)nparams, &sent))
            return "the parameter types of COM_STMT_EXECUTE are cut short";
        memcpy(types, sent, 2 * (size_t)nparams);
        *have_types = true;
    } else if (!*have_types) {
        return "COM_STMT_EXECUTE bound no parameter types";
    }
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
