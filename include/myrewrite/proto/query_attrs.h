/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/query_attrs.h - the query-attribute block that heads a COM_QUERY's
 * argument when the session negotiated CLIENT_QUERY_ATTRIBUTES (MySQL 8):
 * a parameter count (lenenc), a parameter-set count (lenenc, 1), and when
 * the count is not 0 a null bitmap, the new-params-bound flag (1), each
 * attribute's type and name, and the values; the SQL text follows. The
 * session reads it so the rules see the text, and keeps it to send it again
 * in front of a rewritten text.
 *
 * Pure, any thread.
 */
#ifndef MYREWRITE_QUERY_ATTRS_H
#define MYREWRITE_QUERY_ATTRS_H

#include <stddef.h>
#include <stdint.h>

#include "myrewrite/proto/codec.h"

/* The block of a COM_QUERY that carries no attribute: the one the proxy
 * puts in front of a statement of its own on such a session. */
#define MR_QUERY_ATTRS_NONE "\x00\x01"
#define MR_QUERY_ATTRS_NONE_LEN 2

typedef struct mr_query_attrs {
    uint64_t count; /* attributes sent */
    size_t len;     /* bytes of the block: the SQL text starts there */
} mr_query_attrs;

/* The block at the head of arg[0..n) (the COM_QUERY payload after its
 * command byte). MR_OK, or MR_MALFORMED with *why saying what is wrong
 * (static text); a block cut short is malformed, since the caller holds
 * the whole payload. */
mr_rc mr_query_attrs_read(const uint8_t *arg, size_t n, mr_query_attrs *out, const char **why);

#endif
