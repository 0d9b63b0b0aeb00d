/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_stmt_rewrite.c - statement commands rewritten for another server
 * statement id (proto/stmt_rewrite.c), and the prepare-OK reader.
 *
 * Feeds: byte 0 is the statement's parameter count, byte 1 the options:
 * bits 0-1 the command (0 COM_STMT_EXECUTE, 1 COM_STMT_BULK_EXECUTE, 2 any
 * other statement command, 3 a prepare-OK), bit 7 CLIENT_QUERY_ATTRIBUTES,
 * bit 6 the execute's PARAMETER_COUNT_AVAILABLE, bits 2-3 values the kept
 * types type beyond the parameters; byte 2 is the length L of the kept
 * types block that follows; the rest is the payload (its first byte is
 * set to the command). Checks beyond no crash: the output is whole packets
 * of sequence 0, 1, ...; their payload names the new id, is the input with
 * the kept types and the flag put in (then it reads back as binding them)
 * or else the input but its id; nothing is appended on a refusal.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "myrewrite/proto/stmt_execute.h"
#include "myrewrite/proto/stmt_rewrite.h"

#define NEW_ID 0x5a5a1234u

/* The payload of the packets in b, reassembled (malloc'd, *n bytes). */
static uint8_t *payload_of(const mr_buf *b, size_t *n)
{
    uint8_t *out = malloc(b->len ? b->len : 1);
    FUZZ_CHECK(out);
    size_t at = 0;
    *n = 0;
    for (uint8_t seq = 0;; seq++) {
        mr_pkt_header h;
        FUZZ_CHECK(mr_pkt_header_read(b->data + at, b->len - at, &h) == MR_OK);
        FUZZ_CHECK(h.seq == seq && b->len - at - MR_PKT_HEADER >= h.len);
        memcpy(out + *n, b->data + at + MR_PKT_HEADER, h.len);
        *n += h.len;
        at += MR_PKT_HEADER + h.len;
        if (h.len < MR_PKT_MAX_PAYLOAD)
            break;
    }
    FUZZ_CHECK(at == b->len);
    return out;
}

/* q (the output) is p with `extra` bytes of types put in at `at`, where p
 * had the flag, now 1 (bulk: its flags, now with SEND_TYPES). */
static void check_put(const uint8_t *p, size_t n, const uint8_t *q, size_t qn,
                      const mr_stmt_types *t, size_t at, bool bulk)
{
    size_t flag_len = bulk ? 2 : 1;
    FUZZ_CHECK(qn == n + t->len);
    FUZZ_CHECK(memcmp(q + 5, p + 5, at - 5) == 0);
    FUZZ_CHECK(bulk ? (q[at] & MR_BULK_SEND_TYPES) && q[at + 1] == p[at + 1] : q[at] == 1);
    FUZZ_CHECK(memcmp(q + at + flag_len, t->p, t->len) == 0);
    FUZZ_CHECK(memcmp(q + at + flag_len + t->len, p + at + flag_len, n - at - flag_len) == 0);
}

static void rewrite(uint8_t cmd, const uint8_t *p, size_t n, unsigned nparams, unsigned form,
                    const mr_stmt_types *t)
{
    mr_buf out;
    mr_buf_init(&out);
    bool put = false;
    const char *bad = cmd == MR_COM_STMT_EXECUTE
                          ? mr_stmt_exec_rewrite(&out, p, n, NEW_ID, nparams, form, t, &put)
                      : cmd == MR_COM_STMT_BULK_EXECUTE
                          ? mr_stmt_bulk_rewrite(&out, p, n, NEW_ID, nparams, t, &put)
                          : mr_stmt_cmd_rewrite(&out, p, n, NEW_ID);
    if (bad) {
        FUZZ_CHECK(out.len == 0 && !put);
        mr_buf_free(&out);
        return;
    }
    size_t qn;
    uint8_t *q = payload_of(&out, &qn);
    FUZZ_CHECK(q[0] == p[0] && mr_stmt_id_get(q) == NEW_ID);
    if (!put) {
        FUZZ_CHECK(qn == n && memcmp(q + 5, p + 5, n - 5) == 0);
    } else if (cmd == MR_COM_STMT_BULK_EXECUTE) {
        check_put(p, n, q, qn, t, 5, true);
    } else {
        mr_exec_layout lay;
        FUZZ_CHECK(
            !mr_exec_layout_read(p + MR_EXEC_HEADER, n - MR_EXEC_HEADER, nparams, form, &lay));
        check_put(p, n, q, qn, t, MR_EXEC_HEADER + lay.flag, false);
        mr_stmt_types back;
        FUZZ_CHECK(!mr_stmt_exec_types(q, qn, nparams, form, &back));
        FUZZ_CHECK(back.len == t->len && back.count == t->count);
    }
    free(q);
    mr_buf_free(&out);
}

static const uint8_t OTHER[] = {MR_COM_STMT_SEND_LONG_DATA, MR_COM_STMT_CLOSE, MR_COM_STMT_RESET,
                                MR_COM_STMT_FETCH, MR_COM_QUERY};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3 || size - 3 < data[2])
        return 0;
    unsigned nparams = data[0], opt = data[1], tlen = data[2];
    size_t n = size - 3 - tlen;
    uint8_t *p = malloc(n ? n : 1);
    FUZZ_CHECK(p);
    memcpy(p, data + 3 + tlen, n);
    uint8_t cmds[] = {MR_COM_STMT_EXECUTE, MR_COM_STMT_BULK_EXECUTE, 0, 0};
    uint8_t cmd = (opt & 3) == 2 ? OTHER[nparams % sizeof OTHER] : cmds[opt & 3];
    if ((opt & 3) == 3) {
        mr_prepare_ok ok;
        mr_rc rc = mr_prepare_ok_parse(p, n, &ok);
        FUZZ_CHECK(rc != MR_OK || (n >= 9 && p[0] == 0 && ok.stmt_id == mr_stmt_id_get(p)));
    } else if (n) {
        p[0] = cmd;
        uint8_t head[MR_EXEC_HEADER] = {0x17, 0, 0, 0, 0, (opt & 0x40) ? 0x08 : 0, 1, 0, 0, 0};
        unsigned form = mr_exec_form((opt & 0x80) != 0, head);
        mr_stmt_types t = {.p = data + 3,
                           .len = tlen,
                           .count = nparams + ((opt >> 2) & 3),
                           .named = (opt & 0x80) != 0};
        rewrite(cmd, p, n, nparams, form, &t);
        rewrite(cmd, p, n, nparams, form, NULL);
    }
    free(p);
    return 0;
}
