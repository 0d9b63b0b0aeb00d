/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/stmt_rewrite.c - statement commands for another server statement
 * id, with the parameter types put back where an execute relies on earlier
 * ones (proto/stmt_rewrite.h). The execute's layout is read by the one
 * decoder of it, proto/stmt_execute.c.
 */
#include "myrewrite/proto/stmt_rewrite.h"

#include "myrewrite/proto/stmt_execute.h"

bool mr_stmt_cmd_names_id(uint8_t command)
{
    switch (command) {
    case MR_COM_STMT_EXECUTE:
    case MR_COM_STMT_SEND_LONG_DATA:
    case MR_COM_STMT_CLOSE:
    case MR_COM_STMT_RESET:
    case MR_COM_STMT_FETCH:
    case MR_COM_STMT_BULK_EXECUTE: return true;
    default: return false;
    }
}

uint32_t mr_stmt_id_get(const uint8_t *p)
{
    return (uint32_t)p[1] | (uint32_t)p[2] << 8 | (uint32_t)p[3] << 16 | (uint32_t)p[4] << 24;
}

void mr_stmt_id_set(uint8_t *p, uint32_t id)
{
    for (int i = 0; i < 4; i++)
        p[1 + i] = (uint8_t)(id >> (8 * i));
}

mr_rc mr_prepare_ok_parse(const uint8_t *p, size_t n, mr_prepare_ok *ok)
{
    mr_reader r = {p, n, 0};
    uint8_t hdr;
    if (mr_read_u8(&r, &hdr))
        return MR_NEED_MORE;
    if (hdr != 0x00)
        return MR_MALFORMED;
    if (mr_read_u32(&r, &ok->stmt_id) || mr_read_u16(&r, &ok->columns) ||
        mr_read_u16(&r, &ok->params))
        return MR_NEED_MORE;
    ok->warnings = 0;
    if (mr_read_skip(&r, 1) == MR_OK) /* the filler, then the warnings when sent */
        mr_read_u16(&r, &ok->warnings);
    return MR_OK;
}

/* The command p[0..n) as packets, with bytes 1..4 replaced by id and
 * `extra` (extra_len bytes) put in at `at` (> 5) in place of `drop` bytes. */
static const char *build(mr_buf *out, const uint8_t *p, size_t n, uint32_t id, size_t at,
                         size_t drop, const uint8_t *extra, size_t extra_len)
{
    mr_buf head;
    mr_buf_init(&head);
    for (int i = 0; i < 4; i++)
        mr_buf_put_u8(&head, (uint8_t)(id >> (8 * i)));
    mr_buf_put(&head, p + 5, at - 5);
    mr_buf_put(&head, extra, extra_len);
    if (!head.failed)
        mr_command_build2(out, p[0], head.data, head.len, p + at + drop, n - at - drop);
    bool failed = head.failed || out->failed;
    mr_buf_free(&head);
    return failed ? "out of memory rewriting a statement command" : NULL;
}

const char *mr_stmt_cmd_rewrite(mr_buf *out, const uint8_t *p, size_t n, uint32_t id)
{
    if (n < 5 || !mr_stmt_cmd_names_id(p[0]))
        return "not a statement command with a statement id";
    return build(out, p, n, id, 5, 0, NULL, 0);
}

/* The layout of the execute p[0..n); NULL or what is wrong. */
static const char *exec_layout(const uint8_t *p, size_t n, unsigned nparams, unsigned form,
                               mr_exec_layout *lay)
{
    if (n < MR_EXEC_HEADER || p[0] != MR_COM_STMT_EXECUTE)
        return "COM_STMT_EXECUTE is cut short";
    const char *bad =
        mr_exec_layout_read(p + MR_EXEC_HEADER, n - MR_EXEC_HEADER, nparams, form, lay);
    if (bad)
        return bad;
    /* the server reads any flag but 0 as "types follow", the decoder only 1 */
    if (lay->count && p[MR_EXEC_HEADER + lay->flag] > 1)
        return "the new-params-bound flag of COM_STMT_EXECUTE is neither 0 nor 1";
    return NULL;
}

const char *mr_stmt_exec_types(const uint8_t *p, size_t n, unsigned nparams, unsigned form,
                               mr_stmt_types *out)
{
    mr_exec_layout lay;
    const char *bad = exec_layout(p, n, nparams, form, &lay);
    if (bad)
        return bad;
    *out = (mr_stmt_types){.p = p + MR_EXEC_HEADER + lay.types,
                           .len = lay.types_len,
                           .count = lay.count,
                           .named = (form & MR_EXEC_QATTRS) != 0};
    return NULL;
}

/* t is count types (each with its name when named), no more, no less: what
 * mr_stmt_exec_types gives. */
static bool types_whole(const mr_stmt_types *t)
{
    if (!t->named)
        return t->count <= SIZE_MAX / 2 && t->len == 2 * t->count;
    mr_reader r = {t->p, t->len, 0};
    uint64_t name;
    for (uint64_t i = 0; i < t->count; i++)
        if (mr_read_skip(&r, 2) || mr_read_lenenc(&r, &name) || name > r.n - r.pos ||
            mr_read_skip(&r, (size_t)name))
            return false;
    return r.pos == r.n;
}

const char *mr_stmt_exec_rewrite(mr_buf *out, const uint8_t *p, size_t n, uint32_t id,
                                 unsigned nparams, unsigned form, const mr_stmt_types *types,
                                 bool *put)
{
    mr_exec_layout lay;
    const char *bad = exec_layout(p, n, nparams, form, &lay);
    *put = false;
    if (bad)
        return bad;
    if (!lay.count || lay.types_len || !types || !types->len)
        return build(out, p, n, id, 5, 0, NULL, 0);
    if (types->count != lay.count || types->named != ((form & MR_EXEC_QATTRS) != 0) ||
        !types_whole(types))
        return "the parameter types kept for this statement type another number of values "
               "than this execute sends";
    size_t flag = MR_EXEC_HEADER + lay.flag;
    mr_buf extra; /* the flag, now 1, and the types */
    mr_buf_init(&extra);
    mr_buf_put_u8(&extra, 1);
    mr_buf_put(&extra, types->p, types->len);
    bad = extra.failed ? "out of memory rewriting a statement command"
                       : build(out, p, n, id, flag, 1, extra.data, extra.len);
    mr_buf_free(&extra);
    *put = !bad;
    return bad;
}

static const char *bulk_head(const uint8_t *p, size_t n, unsigned *flags)
{
    if (n < MR_BULK_HEADER || p[0] != MR_COM_STMT_BULK_EXECUTE)
        return "COM_STMT_BULK_EXECUTE is cut short";
    *flags = (unsigned)p[5] | (unsigned)p[6] << 8;
    return NULL;
}

const char *mr_stmt_bulk_types(const uint8_t *p, size_t n, unsigned nparams, mr_stmt_types *out)
{
    unsigned flags;
    const char *bad = bulk_head(p, n, &flags);
    if (bad)
        return bad;
    *out = (mr_stmt_types){.p = p + MR_BULK_HEADER, .count = nparams};
    if (!(flags & MR_BULK_SEND_TYPES) || !nparams)
        return NULL;
    if (n - MR_BULK_HEADER < 2 * (size_t)nparams)
        return "the parameter types of COM_STMT_BULK_EXECUTE are cut short";
    out->len = 2 * (size_t)nparams;
    return NULL;
}

const char *mr_stmt_bulk_rewrite(mr_buf *out, const uint8_t *p, size_t n, uint32_t id,
                                 unsigned nparams, const mr_stmt_types *types, bool *put)
{
    unsigned flags;
    const char *bad = bulk_head(p, n, &flags);
    *put = false;
    if (bad)
        return bad;
    if ((flags & MR_BULK_SEND_TYPES) || !nparams || !types || !types->len)
        return build(out, p, n, id, 5, 0, NULL, 0);
    if (types->named || types->count != nparams || types->len != 2 * (size_t)nparams)
        return "the parameter types kept for this statement do not fit a bulk execute of it";
    uint8_t head[2] = {(uint8_t)(flags | MR_BULK_SEND_TYPES), (uint8_t)(flags >> 8)};
    mr_buf extra;
    mr_buf_init(&extra);
    mr_buf_put(&extra, head, 2);
    mr_buf_put(&extra, types->p, types->len);
    bad = extra.failed ? "out of memory rewriting a statement command"
                       : build(out, p, n, id, 5, 2, extra.data, extra.len);
    mr_buf_free(&extra);
    *put = !bad;
    return bad;
}
