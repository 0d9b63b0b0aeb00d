/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_delayed_chunk.c - a staged flush chunk summed per key and the
 * statements written from it (delayed/sql/chunk.h), with no server: staged rows
 * are put in by hand as delayed/flush/apply.c reads them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "delayed/sql/chunk.h"

typedef struct fixture {
    table t;
    chunk c;
    int64_t deltas[64];
    lit vals[64];
    staged rows[16];
    net keys[16];
} fixture;

static char *keys_id[] = {"id"};
static char *cols_nm[] = {"n", "m"};
static char *sets_s[] = {"s"};

static void setup_table(fixture *f, mr_delayed_missing missing, bool with_set)
{
    memset(f, 0, sizeof *f);
    f->t.def.schema = "app";
    f->t.def.table = "counter";
    f->t.def.keys = keys_id;
    f->t.def.nkeys = 1;
    f->t.def.columns = cols_nm;
    f->t.def.ncolumns = 2;
    f->t.def.missing = missing;
    if (with_set) {
        f->t.def.set_columns = sets_s;
        f->t.def.nset_columns = 1;
    }
    mr_buf_init(&f->c.arena);
    f->c.rows = f->rows;
    f->c.deltas = f->deltas;
    f->c.vals = f->vals;
    f->c.keys = f->keys;
}

/* One staged row: key literal, seq, deltas of n and m, an optional set of s. */
static void stage(fixture *f, const char *key, uint64_t seq, int64_t dn, int64_t dm,
                  const char *set_s, bool del)
{
    chunk *c = &f->c;
    staged *s = &c->rows[c->nrows];
    s->seq = seq;
    s->koff = c->arena.len;
    mr_buf_put_str(&c->arena, key);
    s->klen = c->arena.len - s->koff;
    s->woff = s->koff; /* weighed as its bytes, until weigh() says otherwise */
    s->wlen = s->klen;
    s->delta = &c->deltas[c->nrows * 2];
    s->delta[0] = dn;
    s->delta[1] = dm;
    s->val = &c->vals[c->nrows];
    if (set_s) {
        s->mask = 1;
        s->val[0].off = c->arena.len;
        mr_buf_put_str(&c->arena, set_s);
        s->val[0].len = c->arena.len - s->val[0].off;
    }
    s->del = del;
    c->nrows++;
}

/* The last staged row's key as the server compares it (delayed/flush/apply.c reads it
 * with WEIGHT_STRING). */
static void weigh(fixture *f, const char *weight)
{
    staged *s = &f->c.rows[f->c.nrows - 1];
    s->woff = f->c.arena.len;
    mr_buf_put_str(&f->c.arena, weight);
    s->wlen = f->c.arena.len - s->woff;
}

static char *text_of(const mr_buf *b)
{
    char *s = malloc(b->len + 1);
    memcpy(s, b->data, b->len);
    s[b->len] = '\0';
    return s;
}

static void sums_per_key_in_seq_order(void **state)
{
    (void)state;
    fixture f;
    setup_table(&f, MR_DELAYED_MISSING_IGNORE, false);
    stage(&f, "'2'", 5, 1, 0, NULL, false);
    stage(&f, "'1'", 1, 3, 1, NULL, false);
    stage(&f, "'2'", 2, 10, 0, NULL, false);
    stage(&f, "'1'", 4, -1, 0, NULL, false);
    dchunk_aggregate(&f.t, &f.c);
    assert_int_equal(f.c.nkeys, 2);
    /* keys sorted by their literal: '1' then '2' */
    assert_int_equal(f.c.keys[0].delta[0], 2);
    assert_int_equal(f.c.keys[0].delta[1], 1);
    assert_int_equal(f.c.keys[0].nrows, 2);
    assert_int_equal(f.c.keys[1].delta[0], 11);
    assert_false(dchunk_any_overflow(&f.c));

    mr_buf b;
    mr_buf_init(&b);
    size_t at = 0, n = 0;
    dchunk_build_update(&b, &f.t, &f.c, 0, &at, &n);
    char *sql = text_of(&b);
    assert_int_equal(n, 2);
    assert_string_equal(sql, "UPDATE `app`.`counter` AS `m` JOIN (SELECT '1' AS `id`, 2 AS `n`, "
                             "1 AS `m` UNION ALL SELECT '2', 11, 0) AS `d` USING (`id`) SET "
                             "`m`.`n` = `m`.`n` + `d`.`n`, `m`.`m` = `m`.`m` + `d`.`m` WHERE "
                             "(`m`.`id`) IN (('1'), ('2'))");
    free(sql);
    mr_buf_free(&b);
    mr_buf_free(&f.c.arena);
}

/* 'abc', 'ABC' and 'abc ' are one row in utf8mb4_general_ci: one entry,
 * named by the first row's literal, with every delta. By their bytes they
 * were three entries of one UPDATE ... JOIN, which changes a row once. */
static void keys_equal_by_weight_are_one(void **state)
{
    (void)state;
    fixture f;
    setup_table(&f, MR_DELAYED_MISSING_IGNORE, false);
    stage(&f, "'ABC'", 2, 2, 0, NULL, false);
    weigh(&f, "ABC");
    stage(&f, "'x'", 3, 8, 0, NULL, false);
    weigh(&f, "X");
    stage(&f, "'abc '", 4, 4, 0, NULL, false);
    weigh(&f, "ABC");
    stage(&f, "'abc'", 1, 1, 0, NULL, false);
    weigh(&f, "ABC");
    dchunk_aggregate(&f.t, &f.c);
    assert_int_equal(f.c.nkeys, 2);
    assert_int_equal(f.c.keys[0].delta[0], 7);
    assert_int_equal(f.c.keys[0].nrows, 3);
    assert_int_equal(f.c.keys[1].delta[0], 8);

    mr_buf b;
    mr_buf_init(&b);
    size_t at = 0, n = 0;
    dchunk_build_update(&b, &f.t, &f.c, 0, &at, &n);
    char *sql = text_of(&b);
    assert_int_equal(n, 2);
    assert_string_equal(sql, "UPDATE `app`.`counter` AS `m` JOIN (SELECT 'abc' AS `id`, 7 AS `n`, "
                             "0 AS `m` UNION ALL SELECT 'x', 8, 0) AS `d` USING (`id`) SET "
                             "`m`.`n` = `m`.`n` + `d`.`n`, `m`.`m` = `m`.`m` + `d`.`m` WHERE "
                             "(`m`.`id`) IN (('abc'), ('x'))");
    free(sql);
    mr_buf_free(&b);
    mr_buf_free(&f.c.arena);
}

static void a_delete_drops_what_came_before(void **state)
{
    (void)state;
    fixture f;
    setup_table(&f, MR_DELAYED_MISSING_INSERT, false);
    stage(&f, "'7'", 1, 5, 5, NULL, false);
    stage(&f, "'7'", 2, 0, 0, NULL, true);
    stage(&f, "'7'", 3, 2, 0, NULL, false);
    dchunk_aggregate(&f.t, &f.c);
    assert_int_equal(f.c.nkeys, 1);
    const net *k = &f.c.keys[0];
    assert_true(k->del);
    assert_true(dchunk_wants_add(&f.t, k)); /* missing = insert: re-created by an upsert */
    assert_int_equal(k->delta[0], 2);
    assert_int_equal(k->delta[1], 0);

    mr_buf b;
    mr_buf_init(&b);
    size_t at = 0, n = 0;
    dchunk_build_upsert(&b, &f.t, &f.c, 0, &at, &n);
    char *sql = text_of(&b);
    assert_string_equal(sql, "INSERT INTO `app`.`counter` (`id`, `n`, `m`) VALUES ('7', 2, 0) ON "
                             "DUPLICATE KEY UPDATE `n` = `n` + VALUES(`n`), `m` = `m` + "
                             "VALUES(`m`)");
    free(sql);
    mr_buf_reset(&b);
    dchunk_change_text(&f.t, &f.c, k, &b);
    assert_string_equal((const char *)b.data, "DELETE, then `n` + 2, `m` + 0");
    mr_buf_reset(&b);
    dchunk_key_text(&f.t, &f.c, k, &b);
    assert_string_equal((const char *)b.data, "(`id`) = ('7')");
    mr_buf_free(&b);
    mr_buf_free(&f.c.arena);
}

static void a_set_replaces_the_last_value(void **state)
{
    (void)state;
    fixture f;
    setup_table(&f, MR_DELAYED_MISSING_IGNORE, true);
    stage(&f, "'1'", 1, 4, 0, NULL, false);
    stage(&f, "'1'", 2, 1, 0, "'x'", false);
    stage(&f, "'1'", 3, 0, 0, "'it\\'s'", false);
    dchunk_aggregate(&f.t, &f.c);
    const net *k = &f.c.keys[0];
    assert_int_equal(k->mask, 1);
    assert_int_equal(k->delta[0], 5); /* s is no counter: the adds stay */
    mr_buf b;
    mr_buf_init(&b);
    size_t at = 0, n = 0;
    dchunk_build_update(&b, &f.t, &f.c, 1, &at, &n);
    char *sql = text_of(&b);
    assert_string_equal(sql, "UPDATE `app`.`counter` AS `m` JOIN (SELECT '1' AS `id`, 5 AS `n`, "
                             "0 AS `m`, 'it\\'s' AS `s_set`) AS `d` USING (`id`) SET `m`.`n` = "
                             "`m`.`n` + `d`.`n`, `m`.`m` = `m`.`m` + `d`.`m`, `m`.`s` = "
                             "`d`.`s_set` WHERE (`m`.`id`) IN (('1'))");
    free(sql);
    mr_buf_free(&b);
    mr_buf_free(&f.c.arena);
}

static void names_with_backticks_are_quoted(void **state)
{
    (void)state;
    fixture f;
    setup_table(&f, MR_DELAYED_MISSING_IGNORE, false);
    static char *odd[] = {"c`) SELECT 1 #", "q'x"};
    f.t.def.columns = odd;
    stage(&f, "'1'", 1, 1, 2, NULL, false);
    dchunk_aggregate(&f.t, &f.c);
    mr_buf b;
    mr_buf_init(&b);
    size_t at = 0, n = 0;
    dchunk_build_update(&b, &f.t, &f.c, 0, &at, &n);
    char *sql = text_of(&b);
    assert_non_null(
        strstr(sql, "`m`.`c``) SELECT 1 #` = `m`.`c``) SELECT 1 #` + `d`.`c``) SELECT 1 #`"));
    assert_non_null(strstr(sql, "`m`.`q'x` = `m`.`q'x` + `d`.`q'x`"));
    free(sql);
    mr_buf_free(&b);
    mr_buf_free(&f.c.arena);
}

static void sums_past_bigint_are_flagged(void **state)
{
    (void)state;
    fixture f;
    setup_table(&f, MR_DELAYED_MISSING_IGNORE, false);
    stage(&f, "'1'", 1, INT64_MAX, 0, NULL, false);
    stage(&f, "'1'", 2, 1, 0, NULL, false);
    stage(&f, "'2'", 3, 1, 0, NULL, false);
    dchunk_aggregate(&f.t, &f.c);
    assert_true(f.c.keys[0].overflow);
    assert_false(f.c.keys[1].overflow);
    assert_true(dchunk_any_overflow(&f.c));
    mr_buf_free(&f.c.arena);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sums_per_key_in_seq_order),
        cmocka_unit_test(keys_equal_by_weight_are_one),
        cmocka_unit_test(a_delete_drops_what_came_before),
        cmocka_unit_test(a_set_replaces_the_last_value),
        cmocka_unit_test(names_with_backticks_are_quoted),
        cmocka_unit_test(sums_past_bigint_are_flagged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
