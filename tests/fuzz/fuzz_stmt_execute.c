/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_stmt_execute.c - the COM_STMT_EXECUTE parameter decoder
 * (proto/stmt_execute.c).
 *
 * Feeds: byte 0 is the statement's parameter count (0..255), byte 1 how
 * many of them are wanted (bits 0-5) and the form: bit 7 CLIENT_QUERY_ATTRIBUTES
 * negotiated, bit 6 the execute's PARAMETER_COUNT_AVAILABLE flag; the rest
 * is the execute payload after its 10-byte head. The body is decoded twice with one type store, as
 * two executes of one statement are (the second reuses the types when it binds none). Checks beyond
 * no crash: on success every value is NULL, a number, or text lying wholly inside the payload or
 * inside its own 32-byte scratch buffer (numbers and dates written out); decoding the same body
 * again gives the same values; the layout's parts lie inside the body, in order.
 */
#include <string.h>

#include "fuzz.h"
#include "myrewrite/proto/stmt_execute.h"

static void check_values(const mr_exec_param *v, unsigned k, char (*bufs)[32], const uint8_t *body,
                         size_t n)
{
    for (unsigned i = 0; i < k; i++) {
        FUZZ_CHECK(v[i].kind <= MR_EXEC_PARAM_TEXT);
        if (v[i].kind != MR_EXEC_PARAM_TEXT)
            continue;
        FUZZ_CHECK(fuzz_within(v[i].p, v[i].len, body, n) ||
                   fuzz_within(v[i].p, v[i].len, bufs[i], sizeof bufs[i]));
    }
}

static bool same(const mr_exec_param *a, const mr_exec_param *b, unsigned k)
{
    for (unsigned i = 0; i < k; i++) {
        if (a[i].kind != b[i].kind)
            return false;
        if (a[i].kind == MR_EXEC_PARAM_INT && a[i].n != b[i].n)
            return false;
        if (a[i].kind == MR_EXEC_PARAM_TEXT &&
            (a[i].len != b[i].len || memcmp(a[i].p, b[i].p, a[i].len) != 0))
            return false;
    }
    return true;
}

static void check_layout(const uint8_t *body, size_t n, unsigned nparams, unsigned form)
{
    mr_exec_layout lay;
    if (mr_exec_layout_read(body, n, nparams, form, &lay) || !lay.count)
        return;
    FUZZ_CHECK(lay.count >= nparams);
    FUZZ_CHECK(lay.nulls + (lay.count + 7) / 8 == lay.flag && lay.flag < lay.types);
    FUZZ_CHECK(lay.types + lay.types_len == lay.values && lay.values <= n);
    FUZZ_CHECK(!lay.types_len || body[lay.flag] == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static mr_exec_param v1[MR_EXEC_MAX_PARAMS], v2[MR_EXEC_MAX_PARAMS];
    static char bufs1[MR_EXEC_MAX_PARAMS][32], bufs2[MR_EXEC_MAX_PARAMS][32];
    if (size < 2)
        return 0;
    unsigned nparams = data[0], want = (data[1] & 0x3fu) <= nparams ? data[1] & 0x3fu : nparams;
    uint8_t head[MR_EXEC_HEADER] = {0x17, 0, 0, 0, 0, (data[1] & 0x40) ? 0x08 : 0, 1, 0, 0, 0};
    unsigned form = mr_exec_form((data[1] & 0x80) != 0, head);
    const uint8_t *body = data + 2;
    size_t n = size - 2;
    check_layout(body, n, nparams, form);
    uint8_t types[2 * MR_EXEC_MAX_PARAMS];
    bool have = false;
    const char *e1 = mr_exec_params_read(body, n, nparams, want, types, &have, v1, bufs1, form);
    if (e1)
        return 0;
    check_values(v1, want, bufs1, body, n);
    const char *e2 = mr_exec_params_read(body, n, nparams, want, types, &have, v2, bufs2, form);
    FUZZ_CHECK(!e2);
    check_values(v2, want, bufs2, body, n);
    FUZZ_CHECK(same(v1, v2, want));
    return 0;
}
