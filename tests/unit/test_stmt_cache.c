/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_stmt_cache.c - one connection's prepared statements
 * (pool/stmt_cache.c) and what it gets for a client's execute
 * (pool/stmt_exec.c): found by identity, whichever session's statement
 * asks; least recently used out past the capacity, held entries never and
 * never shared; and, over two connections, the sequence a session lives:
 * execute with types on one, without on the other (the types go in once),
 * new types on the first, long data sent again with the second's id, then
 * gone after the execute.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/pool/stmt_cache.h"
#include "myrewrite/pool/stmt_exec.h"
#include "myrewrite/proto/stmt_execute.h"

static mr_stmt *add(mr_stmt_map *m, const char *text, const char *schema)
{
    mr_stmt *st = mr_stmt_map_add(m, text, strlen(text), schema, "", 0, 1, 1);
    assert_non_null(st);
    return st;
}

/* Adds st as server statement sid, then trims once: want_evicted is the id
 * that leaves, or -1 for none. */
static mr_stmt_cached *put(mr_stmt_cache *c, const mr_stmt *st, uint32_t sid, int64_t want_evicted)
{
    mr_stmt_cached *e = mr_stmt_cache_add(c, st, sid);
    assert_non_null(e);
    assert_int_equal(e->server_id, sid);
    uint32_t ev = 0;
    assert_int_equal(mr_stmt_cache_trim(c, e, &ev), want_evicted >= 0);
    if (want_evicted >= 0)
        assert_int_equal(ev, want_evicted);
    return e;
}

static void shared_by_identity(void **state)
{
    (void)state;
    mr_stmt_map s1, s2; /* two sessions */
    mr_stmt_map_init(&s1, 0);
    mr_stmt_map_init(&s2, 0);
    mr_stmt_cache c;
    mr_stmt_cache_init(&c, 4);
    mr_stmt *a1 = add(&s1, "SELECT ?", "shop");
    mr_stmt *a2 = add(&s2, "SELECT ?", "shop");
    mr_stmt *b2 = add(&s2, "SELECT ?", "other");
    assert_null(mr_stmt_cache_find(&c, a1));
    mr_stmt_cached *e = put(&c, a1, 100, -1);
    assert_ptr_equal(mr_stmt_cache_find(&c, a2), e); /* another session, same statement */
    assert_null(mr_stmt_cache_find(&c, b2));         /* another schema: another statement */
    mr_stmt_map_close(&s1, a1);                      /* the client's close leaves it cached */
    assert_ptr_equal(mr_stmt_cache_find(&c, a2), e);
    mr_stmt_cache_remove(&c, e);
    assert_null(mr_stmt_cache_find(&c, a2));
    assert_int_equal(mr_stmt_cache_count(&c), 0);
    mr_stmt_cache_clear(&c);
    mr_stmt_map_free(&s1);
    mr_stmt_map_free(&s2);
}

static void least_recent_out(void **state)
{
    (void)state;
    mr_stmt_map m;
    mr_stmt_map_init(&m, 0);
    mr_stmt_cache c;
    mr_stmt_cache_init(&c, 3);
    mr_stmt *st[5];
    const char *texts[] = {"SELECT 1", "SELECT 2", "SELECT 3", "SELECT 4", "SELECT 5"};
    for (int i = 0; i < 5; i++)
        st[i] = add(&m, texts[i], NULL);
    put(&c, st[0], 10, -1);
    put(&c, st[1], 11, -1);
    put(&c, st[2], 12, -1);
    assert_non_null(mr_stmt_cache_find(&c, st[0])); /* 0 used: 1 is the oldest now */
    put(&c, st[3], 13, 11);
    assert_null(mr_stmt_cache_find(&c, st[1]));
    /* held: never out, and only for its holder */
    mr_stmt_cached *e2 = mr_stmt_cache_find(&c, st[2]);
    mr_stmt_cache_hold(e2, st[2]);
    assert_non_null(mr_stmt_cache_find(&c, st[3]));
    mr_stmt_cached *e0 = mr_stmt_cache_find(&c, st[0]); /* order: 2, 3, 0 (newest) */
    put(&c, st[4], 14, 13);                             /* 2 is the oldest but held */
    assert_ptr_equal(mr_stmt_cache_find(&c, st[2]), e2);
    mr_stmt_cache_hold(e0, st[0]);
    mr_stmt_cached *e4 = mr_stmt_cache_find(&c, st[4]);
    mr_stmt_cache_hold(e4, st[4]);
    mr_stmt_cached *e1 = put(&c, st[1], 15, -1); /* all others held: over capacity */
    assert_int_equal(mr_stmt_cache_count(&c), 4);
    mr_stmt_cache_hold(e2, NULL);
    uint32_t ev;
    assert_true(mr_stmt_cache_trim(&c, NULL, &ev)); /* a hold ended: back to the capacity */
    assert_int_equal(ev, 12);
    assert_false(mr_stmt_cache_trim(&c, NULL, &ev));
    /* five entries, four held; the holds end: two leave, oldest first */
    mr_stmt_cache_hold(e1, st[1]);
    e2 = put(&c, st[2], 17, -1);
    mr_stmt_cache_hold(e2, st[2]);
    mr_stmt_cached *e3 = put(&c, st[3], 18, -1);
    assert_int_equal(mr_stmt_cache_count(&c), 5);
    mr_stmt_cached *held[] = {e0, e1, e2, e4};
    for (int i = 0; i < 4; i++)
        mr_stmt_cache_hold(held[i], NULL);
    assert_true(mr_stmt_cache_trim(&c, e3, &ev));
    assert_int_equal(ev, 10);
    assert_true(mr_stmt_cache_trim(&c, e3, &ev));
    assert_int_equal(ev, 14);
    assert_false(mr_stmt_cache_trim(&c, e3, &ev));
    assert_int_equal(mr_stmt_cache_count(&c), 3);
    mr_stmt_cache_clear(&c);
    mr_stmt_map_free(&m);
}

static void held_is_not_shared(void **state)
{
    (void)state;
    mr_stmt_map m;
    mr_stmt_map_init(&m, 0);
    mr_stmt_cache c;
    mr_stmt_cache_init(&c, 8);
    mr_stmt *a = add(&m, "SELECT ?", NULL), *b = add(&m, "SELECT ?", NULL);
    mr_stmt_cached *ea = put(&c, a, 1, -1);
    mr_stmt_cache_hold(ea, a); /* a cursor of a is open on it */
    assert_ptr_equal(mr_stmt_cache_find(&c, a), ea);
    assert_null(mr_stmt_cache_find(&c, b)); /* b prepares its own */
    mr_stmt_cached *eb = put(&c, b, 2, -1);
    assert_ptr_equal(mr_stmt_cache_find(&c, b), eb);
    assert_ptr_equal(mr_stmt_cache_find(&c, a), ea);
    assert_ptr_equal(mr_stmt_cache_held_by(&c, a), ea);
    assert_null(mr_stmt_cache_held_by(&c, b));
    mr_stmt_cache_hold(ea, NULL);
    assert_null(mr_stmt_cache_held_by(&c, a));
    mr_stmt_cached *any = mr_stmt_cache_find(&c, b);
    assert_true(any == ea || any == eb);
    mr_stmt_cache_clear(&c);
    mr_stmt_map_free(&m);
}

/* An execute of a one-parameter statement: LONG 42 bound or not, or the
 * value left out (sent as long data, or put by the caller). */
static void exec1(mr_buf *b, uint32_t id, uint8_t type, bool bind, bool long_data)
{
    mr_buf_put_u8(b, MR_COM_STMT_EXECUTE);
    mr_buf_put_u32(b, id);
    mr_buf_put_u8(b, 0);
    mr_buf_put_u32(b, 1);
    mr_buf_put_u8(b, 0);
    mr_buf_put_u8(b, bind);
    if (bind) {
        mr_buf_put_u8(b, type);
        mr_buf_put_u8(b, 0);
    }
    if (!long_data)
        mr_buf_put_u32(b, 42);
}

/* The packets of out in order: command byte, statement id, and whether the
 * execute's flag is 1. */
typedef struct seen {
    uint8_t cmd;
    uint32_t id;
    bool typed;
    uint8_t type;
} seen;

static int packets(const mr_buf *out, seen *v)
{
    int k = 0;
    for (size_t at = 0; at < out->len; k++) {
        mr_pkt_header h;
        assert_int_equal(mr_pkt_header_read(out->data + at, out->len - at, &h), MR_OK);
        const uint8_t *p = out->data + at + MR_PKT_HEADER;
        v[k] = (seen){.cmd = p[0], .id = mr_stmt_id_get(p)};
        if (p[0] == MR_COM_STMT_EXECUTE) {
            v[k].typed = p[11] == 1;
            v[k].type = v[k].typed ? p[12] : 0;
        }
        at += MR_PKT_HEADER + h.len;
    }
    return k;
}

static void two_connections(void **state)
{
    (void)state;
    mr_stmt_map m;
    mr_stmt_map_init(&m, 4096);
    mr_stmt_cache c1, c2;
    mr_stmt_cache_init(&c1, 8);
    mr_stmt_cache_init(&c2, 8);
    mr_stmt *st = add(&m, "SELECT ?", "shop");
    mr_stmt_cached *e1 = put(&c1, st, 501, -1), *e2 = put(&c2, st, 902, -1);
    mr_buf p, out;
    mr_buf_init(&p);
    mr_buf_init(&out);
    seen v[4];
    /* binds LONG on connection 1: as sent, but the id */
    exec1(&p, st->id, MR_TYPE_LONG, true, false);
    assert_null(mr_stmt_exec_for(&out, &m, st, e1, p.data, p.len, 0));
    assert_int_equal(packets(&out, v), 1);
    assert_int_equal(v[0].id, 501);
    assert_true(v[0].typed);
    /* binds none on connection 2: LONG goes in, once */
    for (int round = 0; round < 2; round++) {
        mr_buf_reset(&p);
        mr_buf_reset(&out);
        exec1(&p, st->id, 0, false, false);
        assert_null(mr_stmt_exec_for(&out, &m, st, e2, p.data, p.len, 0));
        assert_int_equal(packets(&out, v), 1);
        assert_int_equal(v[0].id, 902);
        assert_int_equal(v[0].typed, round == 0);
        assert_int_equal(v[0].type, round == 0 ? MR_TYPE_LONG : 0);
    }
    /* new types on connection 2, then none on connection 1: the new ones go in */
    mr_buf_reset(&p);
    mr_buf_reset(&out);
    exec1(&p, st->id, MR_TYPE_TINY, true, true);
    mr_buf_put_u8(&p, 7); /* a TINY's one byte */
    assert_null(mr_stmt_exec_for(&out, &m, st, e2, p.data, p.len, 0));
    mr_buf_reset(&p);
    mr_buf_reset(&out);
    exec1(&p, st->id, 0, false, true);
    mr_buf_put_u8(&p, 9);
    assert_null(mr_stmt_exec_for(&out, &m, st, e1, p.data, p.len, 0));
    assert_int_equal(packets(&out, v), 1);
    assert_true(v[0].typed);
    assert_int_equal(v[0].type, MR_TYPE_TINY);
    /* long data kept, then sent with connection 2's id before the execute */
    uint8_t piece[] = {MR_COM_STMT_SEND_LONG_DATA, 0, 0, 0, 0, 0, 0, 'x', 'y'};
    mr_stmt_id_set(piece, st->id);
    assert_true(mr_stmt_long_data_add(&m, st, piece, sizeof piece));
    mr_buf_reset(&p);
    mr_buf_reset(&out);
    exec1(&p, st->id, 0, false, true);
    assert_null(mr_stmt_exec_for(&out, &m, st, e2, p.data, p.len, 0));
    assert_int_equal(packets(&out, v), 2);
    assert_int_equal(v[0].cmd, MR_COM_STMT_SEND_LONG_DATA);
    assert_int_equal(v[0].id, 902);
    assert_int_equal(v[1].cmd, MR_COM_STMT_EXECUTE);
    assert_int_equal(v[1].id, 902);
    assert_false(v[1].typed); /* connection 2 has TINY already */
    mr_buf_reset(&out);       /* the execute consumed the long data */
    assert_null(mr_stmt_exec_for(&out, &m, st, e1, p.data, p.len, 0));
    assert_int_equal(packets(&out, v), 1);
    assert_int_equal(v[0].cmd, MR_COM_STMT_EXECUTE);
    assert_int_equal(m.long_data_bytes, 0);
    /* a malformed execute: nothing appended, nothing changed */
    mr_buf_reset(&out);
    assert_true(mr_stmt_long_data_add(&m, st, piece, sizeof piece));
    assert_non_null(mr_stmt_exec_for(&out, &m, st, e1, p.data, 9, 0));
    assert_int_equal(out.len, 0);
    assert_int_equal(m.long_data_bytes, 4 + sizeof piece);
    mr_buf_free(&p);
    mr_buf_free(&out);
    mr_stmt_cache_clear(&c1);
    mr_stmt_cache_clear(&c2);
    mr_stmt_map_free(&m);
}

/* A bulk execute without types on a connection whose statement has none:
 * the client's last types go in after its flags. */
static void bulk_on_another(void **state)
{
    (void)state;
    mr_stmt_map m;
    mr_stmt_map_init(&m, 0);
    mr_stmt_cache c;
    mr_stmt_cache_init(&c, 2);
    mr_stmt *st = add(&m, "INSERT INTO t VALUES (?)", NULL);
    mr_stmt_cached *e = put(&c, st, 77, -1);
    const uint8_t t[] = {MR_TYPE_LONG, 0};
    assert_true(mr_stmt_bind_types(st, &(mr_stmt_types){.p = t, .len = 2, .count = 1}));
    const uint8_t bulk[] = {MR_COM_STMT_BULK_EXECUTE, 1, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0};
    mr_buf out;
    mr_buf_init(&out);
    assert_null(mr_stmt_bulk_for(&out, &m, st, e, bulk, sizeof bulk));
    const uint8_t *p = out.data + MR_PKT_HEADER;
    assert_int_equal(out.len, MR_PKT_HEADER + sizeof bulk + 2);
    assert_int_equal(mr_stmt_id_get(p), 77);
    assert_int_equal(p[5], MR_BULK_SEND_TYPES);
    assert_memory_equal(p + 7, t, 2);
    assert_memory_equal(p + 9, bulk + 7, sizeof bulk - 7);
    mr_buf_reset(&out);
    assert_null(mr_stmt_bulk_for(&out, &m, st, e, bulk, sizeof bulk));
    assert_int_equal(out.len, MR_PKT_HEADER + sizeof bulk); /* it has them now */
    mr_buf_free(&out);
    mr_stmt_cache_clear(&c);
    mr_stmt_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shared_by_identity), cmocka_unit_test(least_recent_out),
        cmocka_unit_test(held_is_not_shared), cmocka_unit_test(two_connections),
        cmocka_unit_test(bulk_on_another),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
