/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_delayed_mem_keys.c - mode = memory rules without `key`: the loader
 * takes them; a statement reads the primary key from the schema source
 * (retry while unknown), the rule's table learns it once, and a later,
 * different primary key is refused; workers learning at once agree.
 */
#include <pthread.h>

#include "test_rules.h"

#include "myrewrite/delayed/mem.h"
#include "myrewrite/delayed/mem_keys.h"
#include "myrewrite/schema/desc.h"

/* What the fake schema cache answers for every table: not loaded while
 * ncols is 0, else a key of those columns (primary or only unique). */
typedef struct fake_key {
    const char *cols[3];
    uint8_t ncols;
    bool primary;
} fake_key;

static mr_key_status fake_lookup(void *arg, const char *schema, const char *table, mr_row_key *out)
{
    const fake_key *f = arg;
    memset(out, 0, sizeof *out);
    snprintf(out->why, sizeof out->why, "%s.%s queued", schema, table);
    out->status = f->ncols ? MR_KEY_FOUND : MR_KEY_UNKNOWN;
    out->primary = f->primary;
    out->ncols = f->ncols;
    for (uint8_t i = 0; i < f->ncols; i++)
        snprintf(out->cols[i], sizeof out->cols[i], "%s", f->cols[i]);
    return out->status;
}

static const char RULE[] = "[delayed hot]\ntable = test.hot\ncolumns = hits\n"
                           "set_columns = note\nmode = memory\n";

static void loads_without_key(void **state)
{
    (void)state;
    mr_ruleset *set = load_ok(RULE);
    const mr_delayed_def *d = mr_ruleset_rule(set, 0)->delayed;
    assert_int_equal(d->mode, MR_DELAYED_MEMORY);
    assert_int_equal(d->nkeys, 0);
    assert_null(d->mem_keys); /* given by the store's configure, with the table */
    mr_ruleset_free(set);
}

/* One memory statement through the rules; the batch or NULL (refused, res->message). */
static const mr_dmem_batch *run_stmt(const mr_ruleset *set, const mr_stmt_ctx *ctx, const char *sql,
                                     mr_rules_scratch *s, mr_match_result *res)
{
    apply_ctx(set, sql, ctx, s, res);
    return res->action == MR_ACT_DELAYED_MEMORY ? res->dmem : NULL;
}

/* The key tuple of a one-row batch of two key columns as "a|b". */
static void expect_tuple2(const mr_dmem_batch *b, const char *a, const char *c)
{
    const uint8_t *p = b->keys.data;
    uint32_t n;
    assert_int_equal(b->nrows, 1);
    memcpy(&n, p, 4);
    assert_int_equal(n, strlen(a));
    assert_memory_equal(p + 4, a, n);
    p += 4 + n;
    memcpy(&n, p, 4);
    assert_int_equal(n, strlen(c));
    assert_memory_equal(p + 4, c, n);
    assert_int_equal(b->keys.len, 8 + strlen(a) + strlen(c));
}

static void learns_and_holds(void **state)
{
    (void)state;
    mr_ruleset *set = load_ok(RULE);
    mr_delayed_def *rule = (mr_delayed_def *)(uintptr_t)mr_ruleset_rule(set, 0)->delayed;
    mr_delayed_def table = {0};
    mr_dmem_keys k;
    mr_dmem_keys_init(&k, &table);
    rule->mem_keys = &k.port; /* as configure does for a table from the schema */
    fake_key f = {.ncols = 0};
    mr_schema_source src = {.row_key = fake_lookup, .arg = &f};
    mr_stmt_ctx ctx = {.schema = "test", .schema_src = &src};
    const char *sql = "UPDATE DELAYED hot SET hits = hits + 3 WHERE day = 7 AND site = 'x'";
    expect_refused_with(set, &ctx, sql,
                        "myrewrite: schema not loaded yet, retry: the key of "
                        "test.hot is being read from information_schema");
    assert_false(mr_dmem_keys_known(&k));

    f = (fake_key){.cols = {"site", "day"}, .ncols = 2, .primary = true};
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    const mr_dmem_batch *b = run_stmt(set, &ctx, sql, s, &res);
    if (!b)
        fail_msg("wanted a memory batch, got %d: %s", res.action, res.message);
    expect_tuple2(b, "x", "7"); /* in the primary key's order, not the WHERE's */
    assert_ptr_equal(b->def, rule);
    assert_int_equal(b->nops, 1);
    assert_int_equal(b->ops[0].n, 3);
    assert_true(mr_dmem_keys_known(&k));
    assert_int_equal(table.nkeys, 2); /* the table's own settings got the key */
    assert_string_equal(table.keys[0], "site");
    assert_string_equal(table.keys[1], "day");
    /* the same key spelt in another case is the same key */
    f.cols[1] = "DAY";
    assert_non_null(run_stmt(set, &ctx, sql, s, &res));
    expect_refused_with(set, &ctx, "UPDATE DELAYED hot SET hits = hits + 1 WHERE site = 'x'",
                        "the WHERE must give every key column (2 of them)");
    mr_stmt_ctx prep = {.schema = "test", .prepared = true, .schema_src = &src};
    expect_sent(set, &prep, "UPDATE DELAYED hot SET hits = hits + ? WHERE site = ? AND day = ?",
                MR_ACT_REWRITE, "DO ?, ?, ?");

    /* an ALTER: the cache now gives (site), the table holds (site, day) tuples */
    f = (fake_key){.cols = {"site"}, .ncols = 1, .primary = true};
    expect_refused_with(set, &ctx, "UPDATE DELAYED hot SET hits = hits + 1 WHERE site = 'x'",
                        "myrewrite: the primary key of test.hot changed since the proxy started "
                        "holding its deltas (now (site), was (site, day)); nothing was taken");
    expect_refused_with(set, &prep, "UPDATE DELAYED hot SET hits = hits + ? WHERE site = ?",
                        "the primary key of test.hot changed");
    f = (fake_key){.cols = {"site", "day"}, .ncols = 2, .primary = false};
    expect_refused_with(set, &ctx, sql, "names no key and the table has no primary key");
    assert_int_equal(table.nkeys, 2);
    assert_string_equal(table.keys[1], "day");

    result_free(&res);
    mr_rules_scratch_free(s);
    rule->mem_keys = NULL;
    mr_dmem_keys_free(&k);
    mr_ruleset_free(set);
}

/* ---- workers learning at once --------------------------------------------------- */

#define THREADS 8
#define ROUNDS 2000

static mr_dmem_keys shared;

typedef struct racer {
    bool wide;      /* offers (a, b); else (a) */
    unsigned taken; /* rounds the key was taken */
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    char *wide[] = {"a", "b"}, *narrow[] = {"a"};
    char err[512];
    for (unsigned i = 0; i < ROUNDS; i++)
        r->taken += mr_dmem_keys_take(&shared, "s", "t", r->wide ? wide : narrow, r->wide ? 2 : 1,
                                      err, sizeof err);
    return NULL;
}

/* Two key shapes offered at once: one is learned, and from then on only it
 * is taken; the other is refused every time. */
static void one_shape_wins(void **state)
{
    (void)state;
    mr_delayed_def table = {0};
    mr_dmem_keys_init(&shared, &table);
    pthread_t th[THREADS];
    racer r[THREADS];
    for (int i = 0; i < THREADS; i++) {
        r[i] = (racer){.wide = i % 2};
        assert_int_equal(pthread_create(&th[i], NULL, race, &r[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_true(mr_dmem_keys_known(&shared));
    bool wide_won = shared.n == 2;
    assert_int_equal(table.nkeys, shared.n);
    assert_ptr_equal(table.keys, shared.names);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(r[i].taken, r[i].wide == wide_won ? ROUNDS : 0);
    mr_dmem_keys_free(&shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loads_without_key),
        cmocka_unit_test(learns_and_holds),
        cmocka_unit_test(one_shape_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
