/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/exec_limit.c - a COM_STMT_EXECUTE parameter as a LIMIT offset, as
 * MariaDB reads it, for the max_offset guard (see proto/stmt_execute.h).
 *
 * MariaDB 10.11 takes any type for a LIMIT `?` and converts it on its own
 * terms (measured by t_paginate_params.py, one execute per type direct):
 * a negative integer is read as unsigned (-1 is 2^64-1), a string as far
 * as it reads a number (' 90', '+90', '90.5', '90abc' are 90; '9e1' is 9),
 * a DECIMAL rounded ('90.5' is 91, '9e1' is 90), a DOUBLE truncated, a
 * date as its digits (2024-01-02 is 20240102), INT24 and YEAR as strings
 * with a length prefix (so their bytes are read as something else
 * altogether). Mirroring every one of those rules is where a guard goes
 * wrong; so the guard reads exactly what has one reading, and the caller
 * refuses the rest: an integer type, signed or not, or a text of decimal
 * digits only (a string, a DECIMAL, a whole FLOAT/DOUBLE as the decoder
 * writes it out, an unsigned LONGLONG over 2^63). NULL reads as 0.
 *
 * Pure, any thread.
 */
#include "myrewrite/proto/stmt_execute.h"

#include "myrewrite/proto/codec.h"

static bool digits_only(const char *p, uint32_t n, uint64_t *v)
{
    if (n == 0)
        return false;
    uint64_t x = 0;
    bool over = false;
    for (uint32_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(p[i] - '0');
        if (d > 9)
            return false;
        if (x > (UINT64_MAX - d) / 10)
            over = true; /* MariaDB reads a larger number as 2^64-1 */
        x = over ? UINT64_MAX : x * 10 + d;
    }
    *v = x;
    return true;
}

/* Types whose text the decoder hands over as the client wrote it, or as a
 * number written out (245..255: JSON, NEWDECIMAL, ENUM, SET, blobs,
 * strings, all texts). */
static bool text_type(uint8_t type)
{
    return type == MR_TYPE_DECIMAL || type == MR_TYPE_VARCHAR || type == MR_TYPE_BIT ||
           type == MR_TYPE_FLOAT || type == MR_TYPE_DOUBLE || type == MR_TYPE_LONGLONG ||
           type >= MR_TYPE_JSON;
}

const char *mr_exec_limit_value(uint8_t type, const mr_exec_param *v, uint64_t *off)
{
    switch (v->kind) {
    case MR_EXEC_PARAM_NULL: *off = 0; return NULL;
    case MR_EXEC_PARAM_INT:
        if (type != MR_TYPE_TINY && type != MR_TYPE_SHORT && type != MR_TYPE_LONG &&
            type != MR_TYPE_LONGLONG)
            return "INT24 and YEAR are read by MariaDB as strings, not as the integer sent";
        *off = (uint64_t)v->n; /* negative: MariaDB reads it as unsigned, as here */
        return NULL;
    default:
        if (!text_type(type))
            return "a date or time is no offset";
        if (!digits_only(v->p, v->len, off))
            return "a value that is not a whole number written in decimal digits only "
                   "(no sign, space, point, exponent or fraction)";
        return NULL;
    }
}
