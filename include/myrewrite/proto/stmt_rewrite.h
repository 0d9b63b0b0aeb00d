/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/stmt_rewrite.h - the statement commands of one client sent to a
 * server connection that knows the statement by another id: the id
 * rewritten in COM_STMT_EXECUTE, SEND_LONG_DATA, RESET, CLOSE, FETCH and
 * BULK_EXECUTE, and the parameter types an execute relies on put back in
 * when that server statement never got them; the head of a prepare-OK;
 * a COM_STMT_PREPARE to send.
 *
 * Why types: an execute whose new_params_bound_flag is 0 (a bulk execute
 * without SEND_TYPES_TO_SERVER) makes the server use the types of the
 * statement's previous execute. A statement prepared again on another
 * connection had none, or other ones: the proxy puts in the types the
 * client bound last and sets the flag, which the server takes exactly as
 * if the client had bound them again.
 *
 * Pure, any thread. Payloads are whole (command byte first); the
 * rewritten command is appended to an mr_buf as packets (sequence 0, split
 * at 16 MiB as the protocol requires).
 */
#ifndef MYREWRITE_STMT_REWRITE_H
#define MYREWRITE_STMT_REWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/proto/codec.h"

/* MariaDB's direct execution: a statement command naming this id means
 * the statement prepared last on that connection. */
#define MR_STMT_ID_LAST 0xffffffffu
/* A bulk execute's flag: the parameter types follow its flags. */
#define MR_BULK_SEND_TYPES 128u
#define MR_BULK_HEADER 7 /* command, statement id, flags */

/* True for the commands that name a statement in bytes 1..4: EXECUTE,
 * SEND_LONG_DATA, CLOSE, RESET, FETCH, BULK_EXECUTE. */
bool mr_stmt_cmd_names_id(uint8_t command);
/* The statement id in bytes 1..4 of p (a statement command or a
 * prepare-OK, at least 5 bytes). */
uint32_t mr_stmt_id_get(const uint8_t *p);
/* Puts id into bytes 1..4 of p in place: enough for a command whose types
 * need no change, and for the prepare-OK relayed to the client. */
void mr_stmt_id_set(uint8_t *p, uint32_t id);

/* The head of a COM_STMT_PREPARE OK. */
typedef struct mr_prepare_ok {
    uint32_t stmt_id;
    uint16_t columns;
    uint16_t params;
    uint16_t warnings; /* 0 when the packet stops before them (9 bytes) */
} mr_prepare_ok;

/* Reads a prepare-OK payload (0x00, id, columns, params, filler, warnings).
 * MR_NEED_MORE under 9 bytes; MR_MALFORMED when it does not start 0x00 (an
 * ERR is 0xff: the caller reads it with mr_err_parse). */
mr_rc mr_prepare_ok_parse(const uint8_t *p, size_t n, mr_prepare_ok *ok);

/* A COM_STMT_PREPARE of text, as a packet appended to b. */
static inline void mr_stmt_prepare_build(mr_buf *b, const char *text, size_t len)
{
    mr_command_build(b, MR_COM_STMT_PREPARE, text, len);
}

/* The parameter types one execute bound: its types block as sent (p,
 * len; each type 2 bytes, followed by its name when `named`, MySQL 8's
 * query attributes) and the number of values it types (the statement's
 * parameters, plus attributes). len 0: it bound none. */
typedef struct mr_stmt_types {
    const uint8_t *p;
    size_t len;
    uint64_t count;
    bool named;
} mr_stmt_types;

/* The types the execute p[0..n) (whole) binds, for a statement of nparams
 * parameters in the given form (mr_exec_form). NULL, else what is wrong
 * (static text). out->p points into p. */
const char *mr_stmt_exec_types(const uint8_t *p, size_t n, unsigned nparams, unsigned form,
                               mr_stmt_types *out);
/* The same for a bulk execute: its types when SEND_TYPES_TO_SERVER is set. */
const char *mr_stmt_bulk_types(const uint8_t *p, size_t n, unsigned nparams, mr_stmt_types *out);

/* Appends to out the execute p[0..n) for server statement id. When the
 * execute binds no types (flag 0) and `types` is given (not NULL, len >
 * 0), they go in with the flag set to 1 and *put is true; the server
 * statement then has them. An execute that binds its own goes as sent
 * (but its id). NULL, else what is wrong (static text; nothing is
 * appended, or out is marked failed when memory ran out): a malformed
 * execute, or kept types for another count of values or form than this
 * execute sends, or not exactly that many types. */
const char *mr_stmt_exec_rewrite(mr_buf *out, const uint8_t *p, size_t n, uint32_t id,
                                 unsigned nparams, unsigned form, const mr_stmt_types *types,
                                 bool *put);
/* The same for a bulk execute (MariaDB): types go in after its flags,
 * with SEND_TYPES_TO_SERVER set. Types kept from an execute with names
 * or for another count do not fit it. */
const char *mr_stmt_bulk_rewrite(mr_buf *out, const uint8_t *p, size_t n, uint32_t id,
                                 unsigned nparams, const mr_stmt_types *types, bool *put);
/* Appends to out any statement command p[0..n) (SEND_LONG_DATA, RESET,
 * CLOSE, FETCH, or an execute that needs no types) with id in place of
 * its own. NULL, else what is wrong (static text). */
const char *mr_stmt_cmd_rewrite(mr_buf *out, const uint8_t *p, size_t n, uint32_t id);

#endif
