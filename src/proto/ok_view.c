/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proto/ok_view.c - a client's view of an all-trackers OK packet
 * (proto/ok_view.h).
 *
 * How mariadbd writes an OK (sql/protocol.cc, net_send_ok): header, affected
 * rows, insert id, status, warnings; then, when the connection negotiated
 * CLIENT_SESSION_TRACK and SERVER_SESSION_STATE_CHANGED is set, the info
 * text as a length-encoded string (empty or not) and the state block;
 * otherwise the info text as a length-encoded string only when it is not
 * empty. A session's trackers each decide alone whether they report (the
 * state-change tracker too: it fires for the same statements whatever the
 * others are set to), so the client's view is the packet with the entries
 * of its disabled trackers taken out.
 */
#include "myrewrite/proto/ok_view.h"

#include <string.h>
#include <strings.h>

#include "myrewrite/proto/session_track.h"

#define MR_TRACK_DEFAULT_VARS                                                                      \
    "autocommit,character_set_client,character_set_connection,character_set_results,time_zone"

void mr_track_want_defaults(mr_track_want *w)
{
    memset(w, 0, sizeof(*w));
    w->vars_len = (uint16_t)(sizeof(MR_TRACK_DEFAULT_VARS) - 1);
    memcpy(w->vars, MR_TRACK_DEFAULT_VARS, w->vars_len);
    w->schema = true;
    w->state_change = false;
    w->trx_info = MR_TRX_TRACK_OFF;
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static bool word_is(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && strncasecmp(s, word, n) == 0;
}

/* The list into w's vars: names trimmed, lower case, one comma between.
 * mariadbd takes '*' only as the last item (elsewhere it refuses the SET:
 * "Unknown system variable '*'"), and refuses empty and unknown names. */
static bool parse_vars(mr_track_want *w, const char *v, size_t n)
{
    size_t len = 0, i = 0;
    bool all = false;
    while (n > 0 && i <= n) {
        size_t j = i;
        while (j < n && v[j] != ',')
            j++;
        size_t a = i, b = j;
        while (a < b && is_blank(v[a]))
            a++;
        while (b > a && is_blank(v[b - 1]))
            b--;
        if (a == b || all)
            return false; /* an empty name, or an item after '*' */
        if (b - a == 1 && v[a] == '*') {
            all = true;
        } else {
            if (len + (len > 0) + (b - a) > sizeof(w->vars))
                return false;
            if (len > 0)
                w->vars[len++] = ',';
            for (size_t k = a; k < b; k++) {
                char c = v[k];
                w->vars[len++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
            }
        }
        i = j + 1;
    }
    w->all_vars = all;
    w->vars_len = (uint16_t)len;
    return true;
}

/* ON/OFF as mariadbd's boolean variables take them: *on, or false. */
static bool parse_bool(const char *v, size_t n, bool *on)
{
    if (word_is(v, n, "ON") || word_is(v, n, "1") || word_is(v, n, "TRUE")) {
        *on = true;
        return true;
    }
    if (word_is(v, n, "OFF") || word_is(v, n, "0") || word_is(v, n, "FALSE")) {
        *on = false;
        return true;
    }
    return false;
}

static bool parse_trx(const char *v, size_t n, uint8_t *level)
{
    static const char *const names[] = {"OFF", "STATE", "CHARACTERISTICS"};
    static const char *const numbers[] = {"0", "1", "2"};
    for (uint8_t i = 0; i < 3; i++) {
        if (word_is(v, n, names[i]) || word_is(v, n, numbers[i])) {
            *level = i;
            return true;
        }
    }
    return false;
}

bool mr_track_want_set(mr_track_want *w, const char *name, size_t name_len, const char *value,
                       size_t value_len)
{
    if (word_is(name, name_len, "session_track_system_variables")) {
        mr_track_want next = *w;
        if (!parse_vars(&next, value, value_len))
            return false;
        *w = next;
        return true;
    }
    if (word_is(name, name_len, "session_track_schema"))
        return parse_bool(value, value_len, &w->schema);
    if (word_is(name, name_len, "session_track_state_change"))
        return parse_bool(value, value_len, &w->state_change);
    if (word_is(name, name_len, "session_track_transaction_info"))
        return parse_trx(value, value_len, &w->trx_info);
    return false;
}

bool mr_track_want_apply(mr_track_want *w, const uint8_t *state, size_t len)
{
    mr_sst_iter it;
    mr_sst_entry e;
    mr_rc rc;
    bool ok = true;
    mr_sst_iter_init(&it, state, len);
    while ((rc = mr_sst_next(&it, &e)) == MR_OK) {
        if (e.type != MR_SST_SYSTEM_VARIABLES || e.name_len < 14 ||
            strncasecmp((const char *)e.name, "session_track_", 14) != 0)
            continue;
        if (!mr_track_want_set(w, (const char *)e.name, e.name_len, (const char *)e.value,
                               e.value_len))
            ok = false;
    }
    return ok && rc == MR_NEED_MORE;
}

bool mr_track_want_var(const mr_track_want *w, const uint8_t *name, size_t len)
{
    if (w->all_vars)
        return true;
    size_t i = 0;
    while (i < w->vars_len) {
        size_t j = i;
        while (j < w->vars_len && w->vars[j] != ',')
            j++;
        if (j - i == len && strncasecmp(w->vars + i, (const char *)name, len) == 0)
            return true;
        i = j + 1;
    }
    return false;
}

/* Would the client's own settings have produced this entry? Trackers the
 * proxy does not turn on (GTIDs, any type this code does not know) report
 * to a direct connection as they do to the pooled one: kept. */
static bool wanted(const mr_track_want *w, const mr_sst_entry *e)
{
    switch (e->type) {
    case MR_SST_SYSTEM_VARIABLES: return mr_track_want_var(w, e->name, e->name_len);
    case MR_SST_SCHEMA: return w->schema;
    case MR_SST_STATE_CHANGE: return w->state_change;
    case MR_SST_TRANSACTION_STATE: return w->trx_info >= MR_TRX_TRACK_STATE;
    case MR_SST_TRANSACTION_CHARACTERISTICS: return w->trx_info == MR_TRX_TRACK_CHARACTERISTICS;
    default: return true;
    }
}

/* The parts of an all-trackers OK packet. */
typedef struct ok_parts {
    size_t status_at; /* offset of the status flags */
    size_t head_len;  /* header byte to warnings */
    uint16_t status;
    const uint8_t *info;
    size_t info_len;
    const uint8_t *state; /* NULL without SERVER_SESSION_STATE_CHANGED */
    size_t state_len;
} ok_parts;

/* Reads p as net_send_ok writes it for a CLIENT_SESSION_TRACK connection:
 * nothing may follow the last field. */
static mr_rc split_ok(const uint8_t *p, size_t n, ok_parts *o)
{
    mr_reader r = {p, n, 0};
    uint8_t hdr;
    uint64_t skip;
    uint16_t warnings;
    memset(o, 0, sizeof(*o));
    if (mr_read_u8(&r, &hdr) != MR_OK || (hdr != 0x00 && hdr != 0xfe) ||
        mr_read_lenenc(&r, &skip) != MR_OK || mr_read_lenenc(&r, &skip) != MR_OK)
        return MR_MALFORMED;
    o->status_at = r.pos;
    if (mr_read_u16(&r, &o->status) != MR_OK || mr_read_u16(&r, &warnings) != MR_OK)
        return MR_MALFORMED;
    o->head_len = r.pos;
    if (r.pos < n && mr_read_lenenc_str(&r, &o->info, &o->info_len) != MR_OK)
        return MR_MALFORMED;
    if (o->status & MR_STATUS_SESSION_STATE_CHANGED) {
        if (mr_read_lenenc_str(&r, &o->state, &o->state_len) != MR_OK)
            return MR_MALFORMED;
    }
    return r.pos == n ? MR_OK : MR_MALFORMED;
}

/* What the client keeps of a state block. */
typedef struct kept {
    size_t len;       /* bytes of the entries kept */
    size_t dropped;   /* entries dropped */
    bool trx_touched; /* a transaction entry was seen (kept or not) */
} kept;

static mr_rc scan_state(const ok_parts *o, const mr_track_want *w, kept *k)
{
    mr_sst_iter it;
    mr_sst_entry e;
    mr_rc rc;
    memset(k, 0, sizeof(*k));
    mr_sst_iter_init(&it, o->state, o->state_len);
    for (size_t at = 0; (rc = mr_sst_next(&it, &e)) == MR_OK; at = it.pos) {
        if (e.type == MR_SST_TRANSACTION_STATE || e.type == MR_SST_TRANSACTION_CHARACTERISTICS)
            k->trx_touched = true;
        if (wanted(w, &e))
            k->len += it.pos - at;
        else
            k->dropped++;
    }
    return rc == MR_NEED_MORE ? MR_OK : MR_MALFORMED;
}

static void put_kept(mr_buf *out, const ok_parts *o, const mr_track_want *w, size_t len)
{
    mr_sst_iter it;
    mr_sst_entry e;
    mr_buf_put_lenenc(out, len);
    mr_sst_iter_init(&it, o->state, o->state_len);
    for (size_t at = 0; mr_sst_next(&it, &e) == MR_OK; at = it.pos)
        if (wanted(w, &e))
            mr_buf_put(out, o->state + at, it.pos - at);
}

mr_rc mr_ok_for_client(const uint8_t *p, size_t n, uint32_t client_caps, const mr_track_want *w,
                       mr_buf *out, bool *rewritten)
{
    ok_parts o;
    kept k;
    *rewritten = false;
    if (split_ok(p, n, &o) != MR_OK)
        return MR_MALFORMED;
    if (!o.state)
        return MR_OK; /* no state: written alike with the capability or without */
    if (scan_state(&o, w, &k) != MR_OK)
        return MR_MALFORMED;
    /* The transaction tracker at STATE still fires (and sets the flag) when
     * only the characteristics changed: it just has nothing to write. */
    bool trx_fired = k.trx_touched && w->trx_info == MR_TRX_TRACK_STATE;
    /* An empty block with the flag: only the transaction tracker fires
     * without writing anything (its state changed and changed back). */
    if (o.state_len == 0)
        trx_fired = w->trx_info != MR_TRX_TRACK_OFF;
    bool tracks = (client_caps & MR_CAP_SESSION_TRACK) != 0;
    bool flag = tracks && (k.len > 0 || trx_fired);
    if (flag && k.dropped == 0)
        return MR_OK;
    uint16_t status = flag ? o.status : (uint16_t)(o.status & ~MR_STATUS_SESSION_STATE_CHANGED);
    mr_buf_put(out, p, o.status_at);
    mr_buf_put_u16(out, status);
    mr_buf_put(out, p + o.status_at + 2, o.head_len - o.status_at - 2);
    if (flag || o.info_len > 0)
        mr_buf_put_lenenc_str(out, o.info, o.info_len);
    if (flag)
        put_kept(out, &o, w, k.len);
    *rewritten = true;
    return MR_OK;
}

bool mr_eof_for_client(uint8_t *p, size_t n, uint32_t client_caps, const mr_track_want *w)
{
    if (n < 5 || n >= 9 || p[0] != 0xfe || !(p[4] & (MR_STATUS_SESSION_STATE_CHANGED >> 8)))
        return false;
    if ((client_caps & MR_CAP_SESSION_TRACK) && w->trx_info != MR_TRX_TRACK_OFF)
        return false;
    p[4] &= (uint8_t) ~(MR_STATUS_SESSION_STATE_CHANGED >> 8);
    return true;
}

/* Per variable, why its reported value must not be set again on another
 * connection. */
static const char *const not_replayable[] = {
    /* The pooled connection's own settings (every tracker on); the
     * client's are kept in its mr_track_want. */
    "session_track_system_variables",
    "session_track_schema",
    "session_track_state_change",
    "session_track_transaction_info",
    "session_track_user_variables", /* a newer MariaDB's user-variable tracker (not 10.11) */
    /* One-shots: consumed by the next statement that uses them (insert_id
     * reads 0 after the INSERT), and not reported again when they are;
     * setting the old value later would apply it twice. */
    "insert_id",
    "rand_seed1",
    "rand_seed2",
    /* LAST_INSERT_ID() is also moved by every INSERT that generates a
     * value, which no tracker reports: a replayed SET would put back a
     * value the session no longer has. (Its alias identity is never
     * reported: SET identity changes it without a state entry.) */
    "last_insert_id",
};

bool mr_sst_var_replayable(const uint8_t *name, size_t len)
{
    for (size_t i = 0; i < sizeof(not_replayable) / sizeof(not_replayable[0]); i++)
        if (word_is((const char *)name, len, not_replayable[i]))
            return false;
    return true;
}
