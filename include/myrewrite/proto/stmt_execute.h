/*
 * proto/stmt_execute.h - the parameter values of a COM_STMT_EXECUTE (binary
 * protocol: null bitmap, new-params-bound flag, the types when the flag is
 * 1, then the values), for the proxy's own decisions on prepared
 * statements: memory-mode DELAYED executes (delayed/session_prepared.c) and the
 * max_offset guardrail on a `LIMIT ?` offset (session/prepared.c).
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

/* The first `want` (<= nparams) of the nparams parameters of the execute
 * payload body[0..n) (after its MR_EXEC_HEADER bytes) into out; values
 * point into body or into bufs (numbers and dates written out). types
 * (2 * nparams bytes) and *have_types carry the types between executes of
 * one statement, since an execute that binds none uses the last ones.
 * NULL on success, else what is wrong (static text). */
const char *mr_exec_params_read(const uint8_t *body, size_t n, unsigned nparams, unsigned want,
                                uint8_t *types, bool *have_types, mr_exec_param *out,
                                char (*bufs)[32]);

#endif
