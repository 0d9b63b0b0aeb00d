/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/session_track.c - reading the session state of OK packets
 * (proto/session_track.h). Each entry is a type byte and a length-encoded
 * block; what the block holds depends on the type.
 */
#include "myrewrite/proto/session_track.h"

#include <string.h>
#include <strings.h>

mr_rc mr_ok_session_state(const uint8_t *p, size_t n, uint32_t caps, const uint8_t **state,
                          size_t *len)
{
    mr_ok ok;
    *state = NULL;
    *len = 0;
    if (mr_ok_parse(p, n, &ok) != MR_OK)
        return MR_MALFORMED;
    if (!(caps & MR_CAP_SESSION_TRACK))
        return MR_OK; /* the rest is the info text, to the end */
    mr_reader r = {p, n, 0};
    uint64_t skip;
    /* header byte, affected rows, insert id, status, warnings: as mr_ok_parse read them */
    (void)mr_read_skip(&r, 1);
    (void)mr_read_lenenc(&r, &skip);
    (void)mr_read_lenenc(&r, &skip);
    (void)mr_read_skip(&r, 4);
    if (r.pos == n)
        return MR_OK; /* nothing after the warnings: no info, no state */
    const uint8_t *info;
    size_t info_len;
    if (mr_read_lenenc_str(&r, &info, &info_len) != MR_OK)
        return MR_MALFORMED;
    if (!(ok.status & MR_STATUS_SESSION_STATE_CHANGED))
        return MR_OK;
    return mr_read_lenenc_str(&r, state, len);
}

void mr_sst_iter_init(mr_sst_iter *it, const uint8_t *state, size_t len)
{
    it->p = state;
    it->n = len;
    it->pos = 0;
}

/* The parts of an entry's data block by its type. */
static mr_rc split_entry(mr_sst_entry *e, const uint8_t *d, size_t n)
{
    mr_reader r = {d, n, 0};
    e->name = NULL;
    e->name_len = 0;
    switch (e->type) {
    case MR_SST_SYSTEM_VARIABLES:
        if (mr_read_lenenc_str(&r, &e->name, &e->name_len) != MR_OK)
            return MR_MALFORMED;
        /* the value follows the name */
        /* fall through */
    case MR_SST_SCHEMA:
    case MR_SST_TRANSACTION_CHARACTERISTICS:
    case MR_SST_TRANSACTION_STATE:
        return mr_read_lenenc_str(&r, &e->value, &e->value_len) == MR_OK && r.pos == n
                   ? MR_OK
                   : MR_MALFORMED;
    case MR_SST_GTIDS: /* the encoding (0: the GTID set as text), then the set */
        if (mr_read_skip(&r, 1) != MR_OK ||
            mr_read_lenenc_str(&r, &e->value, &e->value_len) != MR_OK)
            return MR_MALFORMED;
        return r.pos == n ? MR_OK : MR_MALFORMED;
    default: /* STATE_CHANGE's block is the "1" itself (mariadbd and MySQL send 02 01 31) */
        e->value = d;
        e->value_len = n;
        return MR_OK;
    }
}

mr_rc mr_sst_next(mr_sst_iter *it, mr_sst_entry *e)
{
    if (it->pos >= it->n)
        return MR_NEED_MORE;
    mr_reader r = {it->p, it->n, it->pos};
    uint8_t type;
    const uint8_t *d;
    size_t dn;
    if (mr_read_u8(&r, &type) != MR_OK || mr_read_lenenc_str(&r, &d, &dn) != MR_OK) {
        it->pos = it->n;
        return MR_MALFORMED;
    }
    it->pos = r.pos;
    e->type = type;
    if (split_entry(e, d, dn) != MR_OK) {
        it->pos = it->n;
        return MR_MALFORMED;
    }
    return MR_OK;
}

/* Keeps a value, cut to the buffer's size (cap bytes and a NUL). */
static void keep(char *buf, size_t cap, mr_sst_value *v, const uint8_t *s, size_t n)
{
    v->known = true;
    v->truncated = n > cap;
    v->len = n > cap ? cap : n;
    memcpy(buf, s, v->len);
    buf[v->len] = '\0';
}

#define KEEP(st, field, e)                                                                         \
    keep((st)->field, sizeof(st)->field - 1, &(st)->field##_v, (e)->value, (e)->value_len)

static bool name_is(const mr_sst_entry *e, const char *name)
{
    return e->name_len == strlen(name) &&
           strncasecmp((const char *)e->name, name, e->name_len) == 0;
}

static void apply_entry(mr_session_state *st, const mr_sst_entry *e)
{
    switch (e->type) {
    case MR_SST_SYSTEM_VARIABLES:
        if (name_is(e, "sql_mode"))
            KEEP(st, sql_mode, e);
        else if (name_is(e, "character_set_client"))
            KEEP(st, charset_client, e);
        else
            st->other_vars++;
        break;
    case MR_SST_SCHEMA: KEEP(st, schema, e); break;
    case MR_SST_STATE_CHANGE: st->state_changes++; break;
    case MR_SST_GTIDS: KEEP(st, gtids, e); break;
    case MR_SST_TRANSACTION_CHARACTERISTICS: KEEP(st, trx_characteristics, e); break;
    case MR_SST_TRANSACTION_STATE: KEEP(st, trx_state, e); break;
    default: st->unknown++; break;
    }
}

mr_rc mr_sst_apply(mr_session_state *st, const uint8_t *state, size_t len)
{
    mr_sst_iter it;
    mr_sst_entry e;
    mr_rc rc;
    mr_sst_iter_init(&it, state, len);
    while ((rc = mr_sst_next(&it, &e)) == MR_OK)
        apply_entry(st, &e);
    return rc == MR_NEED_MORE ? MR_OK : rc;
}

bool mr_sql_mode_has(const char *sql_mode, size_t len, const char *name)
{
    size_t want = strlen(name), i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && sql_mode[j] != ',')
            j++;
        if (j - i == want && strncasecmp(sql_mode + i, name, want) == 0)
            return true;
        i = j + 1;
    }
    return false;
}
