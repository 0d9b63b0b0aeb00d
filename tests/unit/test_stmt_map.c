/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_stmt_map.c - a session's prepared statements (pool/stmt_map.c,
 * pool/stmt_long_data.c): ids given one after the other and never reused
 * while open, MR_STMT_ID_LAST as the last prepared, close and clear; the
 * identity key (schema and context kept apart from the text); kept types;
 * long data kept up to the session's limit, built again for another
 * statement id, and what is not kept makes the statement not re-sendable
 * until its next execute.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/pool/stmt_map.h"

static mr_stmt *add(mr_stmt_map *m, const char *text, const char *schema, const char *ctx)
{
    mr_stmt *st = mr_stmt_map_add(m, text, strlen(text), schema, ctx, strlen(ctx), 2, 1);
    assert_non_null(st);
    return st;
}

static void ids_and_last(void **state)
{
    (void)state;
    mr_stmt_map m;
    mr_stmt_map_init(&m, 1024);
    assert_null(mr_stmt_map_get(&m, MR_STMT_ID_LAST)); /* none prepared yet */
    mr_stmt *a = add(&m, "SELECT ?", "shop", "");
    mr_stmt *b = add(&m, "SELECT ?", "shop", ""); /* prepared twice: two statements */
    assert_int_equal(a->id, 1);
    assert_int_equal(b->id, 2);
    assert_ptr_equal(mr_stmt_map_get(&m, 1), a);
    assert_ptr_equal(mr_stmt_map_get(&m, 2), b);
    assert_ptr_equal(mr_stmt_map_get(&m, MR_STMT_ID_LAST), b);
    assert_null(mr_stmt_map_get(&m, 0));
    assert_null(mr_stmt_map_get(&m, 3));
    assert_int_equal(b->nparams, 2);
    assert_int_equal(b->ncolumns, 1);
    assert_memory_equal(b->text, "SELECT ?", b->text_len);
    assert_memory_equal(b->schema, "shop", b->schema_len);
    mr_stmt_map_close(&m, b);
    assert_null(mr_stmt_map_get(&m, 2));
    assert_null(mr_stmt_map_get(&m, MR_STMT_ID_LAST)); /* the last one is gone */
    assert_ptr_equal(mr_stmt_map_get(&m, 1), a);
    mr_stmt *c = add(&m, "SELECT 1", NULL, "");
    assert_int_equal(c->id, 3);     /* ids are not reused */
    mr_stmt_map_prepare_failed(&m); /* a failed prepare: no last one */
    assert_null(mr_stmt_map_get(&m, MR_STMT_ID_LAST));
    assert_ptr_equal(mr_stmt_map_get(&m, 3), c);
    assert_int_equal(c->schema_len, 0);
    assert_int_equal(mr_stmt_map_count(&m), 2);
    mr_stmt_map_clear(&m); /* COM_RESET_CONNECTION */
    assert_int_equal(mr_stmt_map_count(&m), 0);
    assert_null(mr_stmt_map_get(&m, 1));
    assert_null(mr_stmt_map_get(&m, MR_STMT_ID_LAST));
    assert_int_equal(add(&m, "SELECT 2", NULL, "")->id, 4);
    mr_stmt_map_free(&m);
}

/* After 2^32 - 2 ids the count wraps: ids of open statements are skipped,
 * and neither 0 nor MR_STMT_ID_LAST is ever given. */
static void ids_wrap(void **state)
{
    (void)state;
    mr_stmt_map m;
    mr_stmt_map_init(&m, 0);
    mr_stmt *one = add(&m, "SELECT 1", NULL, "");
    m.next_id = MR_STMT_ID_LAST - 1;
    assert_int_equal(add(&m, "SELECT 2", NULL, "")->id, MR_STMT_ID_LAST - 1);
    assert_int_equal(add(&m, "SELECT 3", NULL, "")->id, 2); /* 1 is open */
    assert_int_equal(one->id, 1);
    mr_stmt_map_free(&m);
}

/* Many statements: each is found by its id, before and after half close. */
static void many(void **state)
{
    (void)state;
    mr_stmt_map m;
    mr_stmt_map_init(&m, 0);
    static mr_stmt *v[3000];
    for (int i = 0; i < 3000; i++)
        v[i] = add(&m, "SELECT ?", "s", "");
    for (int i = 0; i < 3000; i += 2)
        mr_stmt_map_close(&m, v[i]);
    for (int i = 0; i < 3000; i++)
        assert_ptr_equal(mr_stmt_map_get(&m, (uint32_t)i + 1), i % 2 ? v[i] : NULL);
    assert_int_equal(mr_stmt_map_count(&m), 1500);
    mr_stmt_map_free(&m);
}

static void identity(void **state)
{
    (void)state;
    mr_stmt_map m;
    mr_stmt_map_init(&m, 0);
    mr_stmt *a = add(&m, "SELECT * FROM t", "a", "ANSI_QUOTES");
    mr_stmt *same = add(&m, "SELECT * FROM t", "a", "ANSI_QUOTES");
    mr_stmt *other_schema = add(&m, "SELECT * FROM t", "b", "ANSI_QUOTES");
    mr_stmt *other_ctx = add(&m, "SELECT * FROM t", "a", "");
    /* the parts may not slide into one another: schema "ab" + text "c" is not "a" + "bc" */
    mr_stmt *x = add(&m, "c", "ab", ""), *y = add(&m, "bc", "a", "");
    assert_int_equal(a->key_len, same->key_len);
    assert_memory_equal(a->key, same->key, a->key_len);
    assert_true(a->hash == same->hash);
    const mr_stmt *others[] = {other_schema, other_ctx};
    for (int i = 0; i < 2; i++)
        assert_false(a->key_len == others[i]->key_len &&
                     memcmp(a->key, others[i]->key, a->key_len) == 0);
    assert_false(x->key_len == y->key_len && memcmp(x->key, y->key, x->key_len) == 0);
    mr_stmt_map_free(&m);
}

static void types_kept(void **state)
{
    (void)state;
    mr_stmt_map m;
    mr_stmt_map_init(&m, 0);
    mr_stmt *st = add(&m, "SELECT ?, ?", NULL, "");
    const uint8_t t1[] = {MR_TYPE_LONG, 0, MR_TYPE_VAR_STRING, 0};
    const uint8_t t2[] = {MR_TYPE_LONGLONG, 0x80, MR_TYPE_BLOB, 0};
    assert_true(mr_stmt_bind_types(st, &(mr_stmt_types){.p = t1, .len = 4, .count = 2}));
    assert_true(mr_stmt_bind_types(st, &(mr_stmt_types){.p = t2, .len = 4, .count = 2}));
    assert_int_equal(st->types.len, 4);
    assert_memory_equal(st->types.p, t2, 4); /* the last bound */
    mr_stmt_kept_types copy = {0};
    mr_stmt_types view;
    assert_true(mr_stmt_types_keep(&copy, mr_stmt_types_view(&st->types, &view)));
    assert_true(mr_stmt_types_same(&copy, &st->types));
    copy.named = true;
    assert_false(mr_stmt_types_same(&copy, &st->types));
    mr_stmt_types_drop(&copy);
    assert_null(mr_stmt_types_view(&copy, &view));
    assert_false(mr_stmt_types_same(&copy, &st->types));
    mr_stmt_map_free(&m);
}

static void long_piece(uint8_t *p, uint32_t id, uint16_t param, char fill, size_t n)
{
    p[0] = MR_COM_STMT_SEND_LONG_DATA;
    mr_stmt_id_set(p, id);
    p[5] = (uint8_t)param;
    p[6] = (uint8_t)(param >> 8);
    memset(p + 7, fill, n - 7);
}

static void long_data(void **state)
{
    (void)state;
    mr_stmt_map m;
    mr_stmt_map_init(&m, 2 * (4 + 100) + 50); /* two pieces of 100, not three */
    mr_stmt *st = add(&m, "INSERT INTO t VALUES (?, ?)", NULL, "");
    mr_stmt *other = add(&m, "SELECT ?", NULL, "");
    uint8_t a[100], b[100], c[100];
    long_piece(a, st->id, 0, 'a', sizeof a);
    long_piece(b, st->id, 1, 'b', sizeof b);
    long_piece(c, other->id, 0, 'c', sizeof c);
    assert_true(mr_stmt_long_data_add(&m, st, a, sizeof a));
    assert_true(mr_stmt_long_data_add(&m, st, b, sizeof b));
    assert_true(mr_stmt_long_data_resendable(st));
    /* the session's limit counts every statement's */
    assert_false(mr_stmt_long_data_add(&m, other, c, sizeof c));
    assert_false(mr_stmt_long_data_resendable(other));
    assert_false(mr_stmt_long_data_add(&m, other, c, 8)); /* once over, none is kept */
    assert_true(mr_stmt_long_data_resendable(st));
    mr_buf out;
    mr_buf_init(&out);
    assert_null(mr_stmt_long_data_build(st, &out, 0x55));
    assert_int_equal(out.len, 2 * (4 + sizeof a));
    for (int i = 0; i < 2; i++) {
        const uint8_t *pkt = out.data + i * (4 + sizeof a), *orig = i ? b : a;
        assert_int_equal(pkt[0] | pkt[1] << 8 | pkt[2] << 16, sizeof a);
        assert_int_equal(pkt[3], 0);
        assert_int_equal(mr_stmt_id_get(pkt + 4), 0x55);
        assert_memory_equal(pkt + 4 + 5, orig + 5, sizeof a - 5);
    }
    mr_buf_reset(&out);
    assert_null(mr_stmt_long_data_build(other, &out, 9)); /* nothing kept */
    assert_int_equal(out.len, 0);
    mr_stmt_long_data_reset(&m, st); /* st executed: its bytes are free again */
    assert_int_equal(m.long_data_bytes, 0);
    assert_null(mr_stmt_long_data_build(st, &out, 9));
    assert_int_equal(out.len, 0);
    assert_false(mr_stmt_long_data_resendable(other)); /* until its own execute */
    mr_stmt_long_data_reset(&m, other);
    assert_true(mr_stmt_long_data_resendable(other));
    assert_true(mr_stmt_long_data_add(&m, other, c, sizeof c));
    assert_true(mr_stmt_long_data_add(&m, st, a, sizeof a));
    mr_stmt_map_close(&m, other); /* a close gives its bytes back */
    assert_int_equal(m.long_data_bytes, 4 + sizeof a);
    mr_stmt_long_data_drop(&m, st); /* sent to a connection: not kept, still re-sendable */
    assert_int_equal(m.long_data_bytes, 0);
    assert_true(mr_stmt_long_data_resendable(st));
    mr_buf_free(&out);
    mr_stmt_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ids_and_last), cmocka_unit_test(ids_wrap),   cmocka_unit_test(many),
        cmocka_unit_test(identity),     cmocka_unit_test(types_kept), cmocka_unit_test(long_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
