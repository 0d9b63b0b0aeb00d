/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/stmt_execute.h - the parameter values of a COM_STMT_EXECUTE (binary
 * protocol: null bitmap, new-params-bound flag, the types when the flag is
 * 1, then the values; with CLIENT_QUERY_ATTRIBUTES a parameter count
 * first and a name after each type, the statement's parameters then
 * followed by query attributes), for the proxy's own decisions on prepared
 * statements: memory-mode DELAYED executes (delayed/session/session_prepared.c) and the
 * max_offset guardrail on a `LIMIT ?` offset (session/stmt/prepared.c).
 *
 * Pure, any thread.
 */
#ifndef MYREWRITE_EXEC_PARAMS_H
#define MYREWRITE_EXEC_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The values of a prepared statement's `?`, in order, from its
 * COM_STMT_EXECUTE. */
typedef enum mr_exec_param_kind {
    MR_EXEC_PARAM_NULL,
    MR_EXEC_PARAM_INT,  /* n */
    MR_EXEC_PARAM_TEXT, /* p, len: a string, or a number or date written out */
} mr_exec_param_kind;

typedef struct mr_exec_param {
    uint8_t kind; /* mr_exec_param_kind */
    int64_t n;
    const char *p;
    uint32_t len;
} mr_exec_param;

typedef struct mr_exec_params {
    const mr_exec_param *v;
    unsigned n;
} mr_exec_params;

#define MR_EXEC_MAX_PARAMS 256 /* parameters a statement may have for these decisions */
#define MR_EXEC_HEADER 10      /* command, statement id, flags, iteration count */

/* The form of an execute's parameter block: MR_EXEC_QATTRS when the
 * session negotiated CLIENT_QUERY_ATTRIBUTES, or'ed with the execute's
 * flags byte (its PARAMETER_COUNT_AVAILABLE bit says a count is sent even
 * for a statement without `?`). 0: the classic form. */
#define MR_EXEC_QATTRS 0x100u
#define MR_EXEC_PARAMETER_COUNT_AVAILABLE 0x08u
static inline unsigned mr_exec_form(bool qattrs, const uint8_t *payload)
{
    return qattrs ? MR_EXEC_QATTRS | payload[5] : 0;
}

/* Where the parts of an execute's parameter block lie, as offsets into the
 * body after the MR_EXEC_HEADER bytes. */
typedef struct mr_exec_layout {
    uint64_t count;   /* values sent: the statement's nparams, plus attributes */
    size_t nulls;     /* the null bitmap, (count + 7) / 8 bytes */
    size_t flag;      /* the new-params-bound flag */
    size_t types;     /* the types (each with its name under MR_EXEC_QATTRS) ... */
    size_t types_len; /* ... and their length: 0 when the flag is not 1 */
    size_t values;    /* the first value */
} mr_exec_layout;

/* The layout of the body[0..n) of an execute of a statement with nparams
 * `?` in the given form. NULL on success, else what is wrong (static
 * text). count is 0 (and nothing else is set) when no block is sent. */
const char *mr_exec_layout_read(const uint8_t *body, size_t n, unsigned nparams, unsigned form,
                                mr_exec_layout *out);

/* The number of bytes of one binary-protocol value of the given type at
 * p[0..n), or false when it is cut short or the type is not one a client
 * sends. */
bool mr_exec_value_len(uint8_t type, const uint8_t *p, size_t n, size_t *len);

/* The first `want` (<= nparams) of the nparams parameters of the execute
 * payload body[0..n) (after its MR_EXEC_HEADER bytes), in the given form
 * (mr_exec_form), into out; values point into body or into bufs (numbers
 * and dates written out). types (2 * nparams bytes) and *have_types carry
 * the types between executes of one statement, since an execute that
 * binds none uses the last ones. Query attributes after the statement's
 * parameters are not read. NULL on success, else what is wrong (static
 * text). */
const char *mr_exec_params_read(const uint8_t *body, size_t n, unsigned nparams, unsigned want,
                                uint8_t *types, bool *have_types, mr_exec_param *out,
                                char (*bufs)[32], unsigned form);

/* ---- proto/exec_limit.c ---- */

/* The LIMIT offset MariaDB reads from parameter value v bound as `type`
 * (decoded by mr_exec_params_read): NULL with *off set when the value has
 * one plain reading (an integer type, signed or not; decimal digits only,
 * whatever the type carrying them; NULL as 0), else why it is not read
 * (static text): the server's conversions of other forms are its own. */
const char *mr_exec_limit_value(uint8_t type, const mr_exec_param *v, uint64_t *off);

#endif
