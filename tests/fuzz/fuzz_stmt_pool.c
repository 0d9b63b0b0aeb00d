/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_stmt_pool.c - a session's prepared statements over two server
 * connections (pool/stmt_map.c, pool/stmt_long_data.c, pool/stmt_cache.c,
 * pool/stmt_exec.c) driven by a client's commands.
 *
 * Feeds: a sequence of steps, each an op byte then its argument bytes:
 * op % 8 is 0 prepare (text, schema and parameter count from the next
 * byte), 1 close (the statement the next byte names, 0xff: the last
 * prepared), 2 long data (a piece of the next byte's length, of the bytes
 * after), 3 execute on connection op/8 % 2 (the next byte is the body's
 * length, the body follows: an execute of what the fuzzer gives), 4 hold
 * or let go of an entry, 5 COM_RESET_CONNECTION on a connection (its cache
 * cleared), 6 on the session (the map cleared, what it held closed), 7 a
 * bulk execute as 3. Checks beyond no crash: every statement
 * open is found by its id and every closed one is not; the long data kept
 * never passes the limit; each packet an execute sends names the server id
 * of its connection's entry; the entry just added is never evicted, and
 * after trimming a connection holds at most its capacity or else only held
 * entries besides it. Leaks fail the run.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "myrewrite/pool/stmt_cache.h"
#include "myrewrite/pool/stmt_exec.h"

#define LIMIT 300
#define CAPACITY 3
#define MAXSTMT 64

typedef struct run {
    mr_stmt_map m;
    mr_stmt_cache c[2];
    uint32_t next_sid;
    uint32_t ids[MAXSTMT]; /* ids given, in order */
    bool open[MAXSTMT];
    unsigned nids;
    const uint8_t *p, *end;
} run;

static bool take(run *r, size_t n, const uint8_t **out)
{
    if ((size_t)(r->end - r->p) < n)
        return false;
    *out = r->p;
    r->p += n;
    return true;
}

static const char *TEXTS[] = {"SELECT ?", "SELECT ?, ?", "SELECT 1", "INSERT INTO t VALUES (?)"};
static const char *SCHEMAS[] = {NULL, "a", "b"};

static void prepare(run *r, uint8_t a)
{
    const char *text = TEXTS[a % 4];
    mr_stmt *st = mr_stmt_map_add(&r->m, text, strlen(text), SCHEMAS[(a >> 2) % 3], "", 0,
                                  (uint16_t)((a >> 4) % 3), 1);
    FUZZ_CHECK(st && st->id && st->id != MR_STMT_ID_LAST);
    FUZZ_CHECK(mr_stmt_map_get(&r->m, MR_STMT_ID_LAST) == st);
    if (r->nids < MAXSTMT) {
        for (unsigned i = 0; i < r->nids; i++)
            FUZZ_CHECK(r->ids[i] != st->id);
        r->ids[r->nids] = st->id;
        r->open[r->nids++] = true;
    }
}

static void check_ids(const run *r)
{
    for (unsigned i = 0; i < r->nids; i++) {
        const mr_stmt *st = mr_stmt_map_get(&r->m, r->ids[i]);
        FUZZ_CHECK(r->open[i] ? st && st->id == r->ids[i] : !st);
    }
    FUZZ_CHECK(r->m.long_data_bytes <= LIMIT);
}

/* What st holds is closed on the servers, with it. */
static void close_held(run *r, const mr_stmt *st)
{
    for (int k = 0; k < 2; k++) {
        mr_stmt_cached *e;
        while ((e = mr_stmt_cache_held_by(&r->c[k], st)))
            mr_stmt_cache_remove(&r->c[k], e);
    }
}

static void close_one(run *r, uint8_t a)
{
    mr_stmt *st = mr_stmt_map_get(&r->m, a == 0xff ? MR_STMT_ID_LAST : a);
    if (!st)
        return;
    close_held(r, st);
    for (unsigned i = 0; i < r->nids; i++)
        if (r->ids[i] == st->id)
            r->open[i] = false;
    mr_stmt_map_close(&r->m, st);
}

static mr_stmt *last(const run *r) { return mr_stmt_map_get(&r->m, MR_STMT_ID_LAST); }

static void long_data(run *r, uint8_t a)
{
    const uint8_t *b;
    mr_stmt *st = last(r);
    if (!st || !take(r, a, &b))
        return;
    uint8_t piece[7 + 255] = {MR_COM_STMT_SEND_LONG_DATA};
    mr_stmt_id_set(piece, st->id);
    memcpy(piece + 7, b, a);
    if (!mr_stmt_long_data_add(&r->m, st, piece, 7 + (size_t)a))
        mr_stmt_long_data_drop(&r->m, st); /* what a caller does: sends and pins */
}

/* Each packet of out names the server id sid (or is the entry's long data). */
static void check_ids_sent(const mr_buf *out, uint32_t sid)
{
    for (size_t at = 0; at < out->len;) {
        mr_pkt_header h;
        FUZZ_CHECK(mr_pkt_header_read(out->data + at, out->len - at, &h) == MR_OK);
        FUZZ_CHECK(h.len >= 5 && mr_stmt_id_get(out->data + at + MR_PKT_HEADER) == sid);
        at += MR_PKT_HEADER + h.len;
    }
}

static mr_stmt_cached *entry(run *r, int k, mr_stmt *st)
{
    mr_stmt_cached *e = mr_stmt_cache_find(&r->c[k], st);
    if (e)
        return e;
    uint32_t ev, held = 0;
    e = mr_stmt_cache_add(&r->c[k], st, ++r->next_sid);
    FUZZ_CHECK(e);
    while (mr_stmt_cache_trim(&r->c[k], e, &ev))
        FUZZ_CHECK(ev != e->server_id);
    FUZZ_CHECK(mr_stmt_cache_find(&r->c[k], st) == e);
    for (const mr_stmt_cached *x = r->c[k].oldest; x; x = x->newer)
        held += x->holder != NULL;
    /* trimmed to the capacity, or every other entry is held */
    FUZZ_CHECK(mr_stmt_cache_count(&r->c[k]) <= CAPACITY ||
               mr_stmt_cache_count(&r->c[k]) == held + 1);
    return e;
}

static void execute(run *r, int k, uint8_t a, bool bulk)
{
    const uint8_t *b;
    mr_stmt *st = last(r);
    if (!st || !take(r, a, &b) || !mr_stmt_long_data_resendable(st))
        return;
    mr_stmt_cached *e = entry(r, k, st);
    uint8_t body[10 + 255] = {bulk ? MR_COM_STMT_BULK_EXECUTE : MR_COM_STMT_EXECUTE};
    mr_stmt_id_set(body, st->id);
    memcpy(body + 5, b, a);
    mr_buf out;
    mr_buf_init(&out);
    size_t n = 5 + (size_t)a;
    const char *bad = bulk ? mr_stmt_bulk_for(&out, &r->m, st, e, body, n)
                           : mr_stmt_exec_for(&out, &r->m, st, e, body, n, 0);
    if (bad)
        FUZZ_CHECK(out.len == 0);
    else
        check_ids_sent(&out, e->server_id);
    mr_buf_free(&out);
}

static void hold(run *r, int k)
{
    mr_stmt *st = last(r);
    if (!st)
        return;
    mr_stmt_cached *e = entry(r, k, st);
    mr_stmt_cache_hold(e, e->holder ? NULL : st);
}

static void step(run *r, uint8_t op, uint8_t a)
{
    int k = (op >> 3) & 1;
    switch (op % 8) {
    case 0: prepare(r, a); break;
    case 1: close_one(r, a); break;
    case 2: long_data(r, a); break;
    case 3: execute(r, k, a, false); break;
    case 4: hold(r, k); break;
    case 5: mr_stmt_cache_clear(&r->c[k]); break;
    case 6: /* the session's statements go; what they held is closed on the servers */
        for (uint32_t i = 0; i < r->m.by_id.n; i++)
            close_held(r, r->m.by_id.v[i]);
        mr_stmt_map_clear(&r->m);
        memset(r->open, 0, sizeof r->open);
        break;
    default: execute(r, k, a, true); break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static run r;
    memset(&r, 0, sizeof r);
    mr_stmt_map_init(&r.m, LIMIT);
    mr_stmt_cache_init(&r.c[0], CAPACITY);
    mr_stmt_cache_init(&r.c[1], CAPACITY);
    r.p = data;
    r.end = data + size;
    const uint8_t *op;
    while (take(&r, 2, &op)) {
        step(&r, op[0], op[1]);
        check_ids(&r);
    }
    mr_stmt_cache_clear(&r.c[0]);
    mr_stmt_cache_clear(&r.c[1]);
    mr_stmt_map_free(&r.m);
    return 0;
}
