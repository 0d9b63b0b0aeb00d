/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/pool/ok_state.c - what the server's session trackers say in an
 * OK (`pool = transaction`): the system variables, schema and transaction
 * state a session changed, recorded on the session and on the connection
 * it runs on, so that the next connection it borrows gets them replayed
 * (pool_side.c), and the pins for state the trackers cannot carry. Also the
 * trackers' answer to the proxy's own preludes. On the session's worker.
 */
#include <stdlib.h>
#include <string.h>

#include "myrewrite/base/log.h"
#include "myrewrite/pool/hints.h"
#include "myrewrite/proto/ok_view.h"
#include "session/core/session_impl.h"

/* A character set and its collation: setting one sets the other, but the
 * tracker reports only the one named (SET NAMES reports no
 * collation_connection). The one not reported is then dropped from the
 * state: replaying the other gives it. */
static const char *const cs_pairs[][2] = {
    {"character_set_connection", "collation_connection"},
    {"character_set_database", "collation_database"},
    {"character_set_server", "collation_server"},
};

static void drop_var(mr_pool_state *st, const char *name)
{
    mr_pool_var *v = (mr_pool_var *)mr_pool_state_get(st, name);
    if (!v)
        return;
    free(v->name);
    free(v->value);
    size_t at = (size_t)(v - st->v); /* order kept: a collation is set after its set */
    memmove(v, v + 1, (st->n - at - 1) * sizeof *v);
    st->n--;
}

/* After the entries of one OK: each pair member reported alone drops the
 * other (`seen` bit 2i: the character set, 2i+1: the collation). */
static void settle_pairs(mr_pool_state *st, unsigned seen)
{
    for (unsigned i = 0; i < sizeof cs_pairs / sizeof cs_pairs[0]; i++) {
        unsigned both = 3u << (2 * i), got = seen & both;
        if (got && got != both)
            drop_var(st, cs_pairs[i][(got >> (2 * i)) == 1 ? 1 : 0]);
    }
}

static unsigned pair_bit(const uint8_t *name, size_t len)
{
    for (unsigned i = 0; i < sizeof cs_pairs / sizeof cs_pairs[0]; i++)
        for (unsigned j = 0; j < 2; j++)
            if (strlen(cs_pairs[i][j]) == len &&
                strncasecmp(cs_pairs[i][j], (const char *)name, len) == 0)
                return 1u << (2 * i + j);
    return 0;
}

/* An entry of an OK's session state (the server's trackers). */
static void track_entry(mr_session *s, const mr_sst_entry *e, bool *changed, unsigned *pairs,
                        bool *named)
{
    if (e->type == MR_SST_SYSTEM_VARIABLES || e->type == MR_SST_SCHEMA)
        *named = true;
    switch (e->type) {
    case MR_SST_SYSTEM_VARIABLES:
        *pairs |= pair_bit(e->name, e->name_len);
        if (!mr_sst_var_replayable(e->name, e->name_len))
            break; /* the pool's own trackers, one-shots, LAST_INSERT_ID() (kept apart) */
        if (!mr_pool_state_set(&s->pstate, (const char *)e->name, e->name_len,
                               (const char *)e->value, e->value_len))
            ss_pool_pin(s, MR_PIN_UNKNOWN_STATE);
        break;
    case MR_SST_SCHEMA:
        if (e->value_len < sizeof s->schema) {
            memcpy(s->schema, e->value, e->value_len);
            s->schema[e->value_len] = '\0';
        } else {
            ss_pool_pin(s, MR_PIN_UNKNOWN_STATE);
        }
        break;
    case MR_SST_STATE_CHANGE: *changed = true; break;
    case MR_SST_TRANSACTION_STATE:
        if (e->value_len == 8 && e->value[7] == 'L')
            ss_pool_pin(s, MR_PIN_LOCKED_TABLES);
        else
            ss_pool_unpin(s, MR_PIN_LOCKED_TABLES);
        break;
    case MR_SST_TRANSACTION_CHARACTERISTICS:
        /* "SET TRANSACTION ...": the next one's; "START TRANSACTION ...": the
         * open one's, which the status flag pins already */
        if (e->value_len > 4 && strncasecmp((const char *)e->value, "SET ", 4) == 0)
            ss_pool_pin(s, MR_PIN_TRX_NEXT);
        else if (e->value_len)
            break;
        else
            ss_pool_unpin(s, MR_PIN_TRX_NEXT);
        break;
    default: break;
    }
}

void ss_pool_ok_state(mr_session *s, const uint8_t *state, size_t n)
{
    if (!s->srv)
        return;
    mr_sst_iter it;
    mr_sst_entry e;
    bool changed = false, named = false;
    unsigned pairs = 0;
    mr_rc rc;
    mr_sst_iter_init(&it, state, n);
    while ((rc = mr_sst_next(&it, &e)) == MR_OK)
        track_entry(s, &e, &changed, &pairs, &named);
    settle_pairs(&s->pstate, pairs);
    if (rc == MR_MALFORMED)
        ss_pool_pin(s, MR_PIN_UNKNOWN_STATE);
    /* The change is the variables or schema the entries name (autocommit = 0
     * reports itself again with every statement): what else the text does
     * that cannot be replayed, its words have pinned already. */
    if (!changed || (s->hints_read && (s->hint_replay_only || (named && !s->hint_opaque))))
        return;
    mr_debug(s->id, "pool: a change the trackers do not name (named %d, maybe 0x%x)", named,
             s->hint_maybe);
    bool any = false;
    for (unsigned r = 0; r < MR_PIN_REASONS && s->hints_read; r++)
        if (s->hint_maybe & MR_HINT(r)) {
            ss_pool_pin(s, (mr_pin_reason)r);
            any = true;
        }
    if (!any)
        ss_pool_pin(s, MR_PIN_STATE_CHANGE);
}

void ss_pool_prelude_state(mr_session *s, const uint8_t *state, size_t n)
{
    mr_sst_iter it;
    mr_sst_entry e;
    mr_sst_iter_init(&it, state, n);
    while (mr_sst_next(&it, &e) == MR_OK) {
        if (e.type != MR_SST_SYSTEM_VARIABLES || !mr_sst_var_replayable(e.name, e.name_len))
            continue;
        const char *nm = (const char *)e.name, *v = (const char *)e.value;
        bool ok =
            mr_pool_state_set(&s->pstate, nm, e.name_len, v, e.value_len) &&
            mr_pool_state_set(&s->srv->state, nm, e.name_len, v, e.value_len) &&
            (!s->learn_login || mr_pool_state_set(&s->login_state, nm, e.name_len, v, e.value_len));
        if (!ok)
            s->srv->broken = true;
    }
    s->learn_login = false;
}
