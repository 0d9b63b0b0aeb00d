/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/cursor.h - a read position in a packet body, for the readers of
 * proto/ that walk a body field by field (the execute decoder, the
 * query-attribute block). Header-only: each step is a bounds check.
 */
#ifndef MYREWRITE_PROTO_CURSOR_H
#define MYREWRITE_PROTO_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mr_cursor {
    const uint8_t *p;
    size_t left;
} mr_cursor;

/* The next n bytes into *out, and past them; false (nothing moved) when
 * fewer are left. */
static inline bool mr_cursor_take(mr_cursor *c, size_t n, const uint8_t **out)
{
    if (c->left < n)
        return false;
    *out = c->p;
    c->p += n;
    c->left -= n;
    return true;
}

#endif
