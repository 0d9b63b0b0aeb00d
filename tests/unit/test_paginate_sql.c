/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_paginate_sql.c - paginate rules: the deferred join of every accepted
 * shape (aliases, t.*, expressions, WHERE, DESC, mixed directions, ties,
 * composite keys), every shape that passes untouched, threshold and
 * max_offset edges, hostile literals, and loading of paginate rules.
 */
#include "test_rules.h"

#include "myrewrite/paginate/bookmarks.h"
#include "myrewrite/paginate/deferred_sql.h"
#include "myrewrite/schema/desc.h"

static const char RULES[] = "[paginate orders]\n"
                            "table = orders\n"
                            "key = id\n"
                            "[paginate lines]\n"
                            "table = shop.lines\n"
                            "key = order_id, line_no\n"
                            "threshold = 500\n"
                            "max_offset = 100000\n"
                            "[paginate capped]\n"
                            "table = capped\n"
                            "key = id\n"
                            "max_offset = 5000\n"
                            "message = too deep, use a cursor\n";

static const mr_stmt_ctx CTX = {.schema = "shop"};
static const mr_stmt_ctx PREP = {.schema = "shop", .prepared = true};

static mr_ruleset *rs;

static int setup(void **state)
{
    (void)state;
    rs = load_ok(RULES);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    mr_ruleset_free(rs);
    return 0;
}

static void rw(const char *sql, const char *want)
{
    expect_sent(rs, &CTX, sql, MR_ACT_REWRITE, want);
}

static void same(const char *sql) { expect_sent(rs, &CTX, sql, MR_ACT_PASS, sql); }

#define DJ " AS myrewrite_dj USING (`id`)"
#define DJ2 " AS myrewrite_dj USING (`order_id`, `line_no`)"

static void accepted_shapes(void **state)
{
    (void)state;
    rw("SELECT * FROM orders ORDER BY id LIMIT 1000, 20",
       "SELECT orders.* FROM orders JOIN (SELECT `id` FROM orders ORDER BY id LIMIT 1000, 20)" DJ
       " ORDER BY id");
    rw("SELECT * FROM orders ORDER BY id LIMIT 20 OFFSET 5000",
       "SELECT orders.* FROM orders JOIN (SELECT `id` FROM orders ORDER BY id LIMIT 20 OFFSET "
       "5000)" DJ " ORDER BY id");
    rw("select o.*, o.total * 2 AS t2 from orders as o where o.status = 'paid' "
       "order by o.created desc limit 2000, 10",
       "select o.*, o.total * 2 AS t2 FROM orders as o JOIN (SELECT `id` FROM orders as o "
       "where o.status = 'paid' ORDER BY o.created desc, o.`id` DESC limit 2000, 10)" DJ
       " ORDER BY o.created desc, o.`id` DESC");
    rw("SELECT id, total FROM orders o WHERE total > 10 ORDER BY total DESC, id ASC LIMIT 3000,5",
       "SELECT id, total FROM orders o JOIN (SELECT `id` FROM orders o WHERE total > 10 ORDER BY "
       "total DESC, id ASC LIMIT 3000,5)" DJ " ORDER BY total DESC, id ASC");
    rw("SELECT * FROM shop.orders ORDER BY `id` DESC LIMIT 1000, 1",
       "SELECT shop.orders.* FROM shop.orders JOIN (SELECT `id` FROM shop.orders ORDER BY `id` "
       "DESC LIMIT 1000, 1)" DJ " ORDER BY `id` DESC");
    rw("SELECT a, CONCAT(b, c) x FROM orders ORDER BY status, created DESC LIMIT 9999, 20",
       "SELECT a, CONCAT(b, c) x FROM orders JOIN (SELECT `id` FROM orders ORDER BY status, "
       "created DESC, orders.`id` DESC LIMIT 9999, 20)" DJ
       " ORDER BY status, created DESC, orders.`id` DESC");
}

static void composite_key(void **state)
{
    (void)state;
    rw("SELECT * FROM lines l WHERE l.sku = 'x' ORDER BY l.order_id, l.line_no LIMIT 500, 10",
       "SELECT l.* FROM lines l JOIN (SELECT `order_id`, `line_no` FROM lines l WHERE l.sku = 'x' "
       "ORDER BY l.order_id, l.line_no LIMIT 500, 10)" DJ2 " ORDER BY l.order_id, l.line_no");
    rw("SELECT sku FROM lines ORDER BY line_no DESC LIMIT 600, 10",
       "SELECT sku FROM lines JOIN (SELECT `order_id`, `line_no` FROM lines ORDER BY line_no DESC, "
       "lines.`order_id` DESC LIMIT 600, 10)" DJ2 " ORDER BY line_no DESC, lines.`order_id` DESC");
    rw("SELECT sku FROM lines ORDER BY price LIMIT 600, 10",
       "SELECT sku FROM lines JOIN (SELECT `order_id`, `line_no` FROM lines ORDER BY price, "
       "lines.`order_id`, lines.`line_no` LIMIT 600, 10)" DJ2
       " ORDER BY price, lines.`order_id`, lines.`line_no`");
    /* another schema's lines is not the rule's table */
    same("SELECT sku FROM other.lines ORDER BY price LIMIT 600, 10");
}

static void hostile_literals(void **state)
{
    (void)state;
    rw("SELECT * FROM orders WHERE note = 'x'' ORDER BY id LIMIT 1, 1; --' AND n = \"a\\\"b\" "
       "ORDER BY id LIMIT 1000, 2 /* tail */",
       "SELECT orders.* FROM orders JOIN (SELECT `id` FROM orders WHERE note = 'x'' ORDER BY id "
       "LIMIT 1, 1; --' AND n = \"a\\\"b\" ORDER BY id LIMIT 1000, 2)" DJ " ORDER BY id"
       " /* tail */");
    rw("/* lead */ SELECT `we``ird` FROM orders WHERE x IN ('(', ')') ORDER BY id LIMIT 1000, 2",
       "/* lead */ SELECT `we``ird` FROM orders JOIN (SELECT `id` FROM orders WHERE x IN ('(', "
       "')') ORDER BY id LIMIT 1000, 2)" DJ " ORDER BY id");
}

static void passes_untouched(void **state)
{
    (void)state;
    static const char *const sqls[] = {
        "SELECT * FROM orders ORDER BY id LIMIT 999, 20",
        "SELECT * FROM orders ORDER BY id LIMIT 20",
        "SELECT * FROM orders LIMIT 5000, 20",
        "SELECT * FROM orders o JOIN x ON x.id = o.id ORDER BY o.id LIMIT 5000, 20",
        "SELECT * FROM orders, x ORDER BY orders.id LIMIT 5000, 20",
        "SELECT * FROM orders ORDER BY id LIMIT 5000, 20 UNION SELECT * FROM orders",
        "(SELECT * FROM orders ORDER BY id LIMIT 5000, 20)",
        "SELECT * FROM (SELECT * FROM orders) d ORDER BY id LIMIT 5000, 20",
        "SELECT * FROM orders WHERE id IN (SELECT id FROM x) ORDER BY id LIMIT 5000, 20",
        "SELECT status, COUNT(*) FROM orders GROUP BY status ORDER BY status LIMIT 5000, 20",
        "SELECT status FROM orders HAVING status > 1 ORDER BY status LIMIT 5000, 20",
        "SELECT COUNT(*) FROM orders ORDER BY id LIMIT 5000, 20",
        "SELECT DISTINCT status FROM orders ORDER BY status LIMIT 5000, 20",
        "SELECT SQL_CALC_FOUND_ROWS * FROM orders ORDER BY id LIMIT 5000, 20",
        "SELECT * FROM orders ORDER BY id LIMIT 5000, 20 FOR UPDATE",
        "SELECT * FROM orders ORDER BY id LIMIT 5000, 20 LOCK IN SHARE MODE",
        "SELECT * FROM orders ORDER BY id LIMIT 5000, 20 INTO OUTFILE '/tmp/x'",
        "SELECT id INTO @x FROM orders ORDER BY id LIMIT 5000, 1",
        "SELECT * FROM orders /*!50000 WHERE 1 */ ORDER BY id LIMIT 5000, 20",
        "SELECT ROW_NUMBER() OVER (ORDER BY id) FROM orders ORDER BY id LIMIT 5000, 20",
        "WITH c AS (SELECT 1) SELECT * FROM orders ORDER BY id LIMIT 5000, 20",
        "SELECT * FROM orders FORCE INDEX (ix) ORDER BY id LIMIT 5000, 20",
        "SELECT * FROM orders PARTITION (p1) ORDER BY id LIMIT 5000, 20",
        "SELECT total * 2 AS t FROM orders ORDER BY t LIMIT 5000, 20",
        "SELECT total t FROM orders ORDER BY t DESC LIMIT 5000, 20",
        "SELECT total FROM orders ORDER BY 1 LIMIT 5000, 20",
        "SELECT total FROM orders ORDER BY RAND() LIMIT 5000, 20",
        "SELECT total 'x' FROM orders ORDER BY id LIMIT 5000, 20",
        "SELECT @n := @n + 1 FROM orders ORDER BY id LIMIT 5000, 20",
        "SELECT /*+ NO_INDEX(orders) */ * FROM orders ORDER BY id LIMIT 5000, 20",
        "SELECT * FROM customers ORDER BY id LIMIT 5000, 20",
        "SELECT * FROM orders ORDER BY id LIMIT 500, ?",
        "SELECT * FROM orders ORDER BY id LIMIT ?",
        "SELECT * FROM orders ORDER BY id LIMIT 5000.5, 20",
        "UPDATE orders SET x = 1 ORDER BY id LIMIT 5000",
        "DELETE FROM orders ORDER BY id LIMIT 5000",
    };
    for (size_t i = 0; i < sizeof sqls / sizeof sqls[0]; i++)
        same(sqls[i]);
}

static void prepared(void **state)
{
    (void)state;
    /* a `?` offset is rewritten at prepare time, whatever the value will be;
     * the parameters keep their order (select list, WHERE, then LIMIT) */
    expect_sent(
        rs, &PREP, "SELECT * FROM orders ORDER BY id LIMIT ?, ?", MR_ACT_REWRITE,
        "SELECT orders.* FROM orders JOIN (SELECT `id` FROM orders ORDER BY id LIMIT ?, ?)" DJ
        " ORDER BY id");
    expect_sent(rs, &PREP,
                "SELECT a + ? AS x FROM orders o WHERE s = ? ORDER BY o.c LIMIT ? "
                "OFFSET ?",
                MR_ACT_REWRITE,
                "SELECT a + ? AS x FROM orders o JOIN (SELECT `id` FROM orders o WHERE s = ? "
                "ORDER BY o.c, o.`id` LIMIT ? OFFSET ?)" DJ " ORDER BY o.c, o.`id`");
    /* a numeric offset with a `?` count: the threshold still decides */
    expect_sent(rs, &PREP, "SELECT * FROM orders ORDER BY id LIMIT 2000, ?", MR_ACT_REWRITE,
                "SELECT orders.* FROM orders JOIN (SELECT `id` FROM orders ORDER BY id LIMIT 2000, "
                "?)" DJ " ORDER BY id");
    expect_sent(rs, &PREP, "SELECT * FROM orders ORDER BY id LIMIT 20, ?", MR_ACT_PASS,
                "SELECT * FROM orders ORDER BY id LIMIT 20, ?");
    /* ORDER BY ? would be needed twice: never rewritten */
    expect_sent(rs, &PREP, "SELECT * FROM orders ORDER BY IF(?, a, b) LIMIT ?, 5", MR_ACT_PASS,
                "SELECT * FROM orders ORDER BY IF(?, a, b) LIMIT ?, 5");
    expect_sent(rs, &PREP, "SELECT * FROM orders WHERE s = ? ORDER BY id LIMIT 1000, 5",
                MR_ACT_REWRITE,
                "SELECT orders.* FROM orders JOIN (SELECT `id` FROM orders WHERE s = ? ORDER BY id "
                "LIMIT 1000, 5)" DJ " ORDER BY id");
    expect_sent(rs, &PREP, "SELECT * FROM orders ORDER BY FIELD(id, ?) LIMIT 1000, 5", MR_ACT_PASS,
                "SELECT * FROM orders ORDER BY FIELD(id, ?) LIMIT 1000, 5");
}

static void expect_block(const char *sql, const char *want)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, &CTX, s, &res);
    if (res.action != MR_ACT_BLOCK || !res.message || !strstr(res.message, want))
        fail_msg("statement: %s\nwanted refusal with: %s\ngot action %d: %s", sql, want, res.action,
                 res.message ? res.message : "(none)");
    assert_int_equal(res.err_code, 1235);
    assert_string_equal(res.sqlstate, "42000");
    result_free(&res);
    mr_rules_scratch_free(s);
}

static void edges(void **state)
{
    (void)state;
    /* threshold: 1000 by default, 500 for lines */
    same("SELECT * FROM orders ORDER BY id LIMIT 999, 1");
    rw("SELECT * FROM orders ORDER BY id LIMIT 1000, 1",
       "SELECT orders.* FROM orders JOIN (SELECT `id` FROM orders ORDER BY id LIMIT 1000, 1)" DJ
       " ORDER BY id");
    same("SELECT * FROM lines ORDER BY order_id, line_no LIMIT 499, 1");
    /* max_offset: equal is allowed, one more is refused */
    rw("SELECT * FROM lines ORDER BY order_id, line_no LIMIT 100000, 1",
       "SELECT lines.* FROM lines JOIN (SELECT `order_id`, `line_no` FROM lines ORDER BY order_id, "
       "line_no LIMIT 100000, 1)" DJ2 " ORDER BY order_id, line_no");
    expect_block("SELECT * FROM lines ORDER BY order_id, line_no LIMIT 100001, 1",
                 "OFFSET 100001 is deeper than the 100000 allowed for shop.lines");
    expect_block("SELECT * FROM lines ORDER BY order_id LIMIT 10 OFFSET 99999999999999999999999",
                 "keyset");
    /* the guardrail also covers shapes the rewrite leaves alone */
    expect_block("SELECT * FROM lines JOIN x USING (sku) ORDER BY sku LIMIT 200000, 1",
                 "allowed for shop.lines");
    expect_block("SELECT * FROM capped ORDER BY id LIMIT 5001, 1", "too deep, use a cursor");
    rw("SELECT * FROM capped ORDER BY id LIMIT 5000, 1",
       "SELECT capped.* FROM capped JOIN (SELECT `id` FROM capped ORDER BY id LIMIT 5000, 1)" DJ
       " ORDER BY id");
    /* the guardrail needs the offset's value: `?` is not refused at prepare */
    expect_sent(
        rs, &PREP, "SELECT * FROM capped ORDER BY id LIMIT ?, 1", MR_ACT_REWRITE,
        "SELECT capped.* FROM capped JOIN (SELECT `id` FROM capped ORDER BY id LIMIT ?, 1)" DJ
        " ORDER BY id");
}

/* The rule of sql's page guard (prepared with ctx), and which `?` is the offset. */
static const mr_rule *guard_of(const mr_stmt_ctx *ctx, const char *sql, unsigned *param,
                               unsigned *nparams)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, ctx, s, &res);
    const mr_rule *r = res.page_guard.rule;
    *param = res.page_guard.param;
    *nparams = res.page_guard.nparams;
    result_free(&res);
    mr_rules_scratch_free(s);
    return r;
}

/* A `?` offset under a rule with max_offset is noted for the session to
 * check at each execute: which parameter it is, out of how many. */
static void prepared_guard(void **state)
{
    (void)state;
    unsigned param = 99, n = 99;
    const mr_rule *r = guard_of(&PREP,
                                "SELECT a, ? FROM lines WHERE s = ? ORDER BY order_id, "
                                "line_no LIMIT ?, ?",
                                &param, &n);
    assert_non_null(r);
    assert_string_equal(r->name, "lines");
    assert_int_equal(param, 2);
    assert_int_equal(n, 4);
    r = guard_of(&PREP, "SELECT * FROM capped WHERE s = ? ORDER BY id LIMIT ? OFFSET ?", &param,
                 &n);
    assert_non_null(r);
    assert_string_equal(r->name, "capped");
    assert_int_equal(param, 2); /* OFFSET ? comes after the count's ? */
    assert_int_equal(n, 3);
    assert_non_null(guard_of(&PREP,
                             "SELECT id FROM lines WHERE grp <> ? ORDER BY order_id, "
                             "line_no LIMIT ? OFFSET ?",
                             &param, &n));
    assert_int_equal(param, 2);
    /* a shape the rewrite leaves alone is still guarded, as a literal offset is */
    assert_non_null(guard_of(&PREP,
                             "SELECT * FROM lines JOIN x USING (sku) ORDER BY sku LIMIT "
                             "?, 1",
                             &param, &n));
    assert_int_equal(param, 0);
    /* no max_offset, a literal offset, or not a prepare: nothing to check later */
    assert_null(guard_of(&PREP, "SELECT * FROM orders ORDER BY id LIMIT ?, ?", &param, &n));
    assert_null(guard_of(&PREP, "SELECT * FROM capped ORDER BY id LIMIT 10, ?", &param, &n));
    assert_null(guard_of(&CTX, "SELECT * FROM capped ORDER BY id LIMIT 10, 1", &param, &n));
}

static void multi_statement(void **state)
{
    (void)state;
    rw("SELECT 1; SELECT * FROM orders ORDER BY id LIMIT 1000, 1;",
       "SELECT 1; SELECT orders.* FROM orders JOIN (SELECT `id` FROM orders ORDER BY id LIMIT "
       "1000, 1)" DJ " ORDER BY id;");
}

static void star_rule(void **state)
{
    (void)state;
    mr_ruleset *any = load_ok("[paginate all]\ntable = *\nkey = id\nthreshold = 10\n");
    expect_sent(any, &CTX, "SELECT * FROM t ORDER BY id LIMIT 10, 1", MR_ACT_REWRITE,
                "SELECT t.* FROM t JOIN (SELECT `id` FROM t ORDER BY id LIMIT 10, 1)" DJ
                " ORDER BY id");
    mr_ruleset_free(any);
    mr_ruleset *lo = load_ok("[paginate l]\ntable = t\nkey = id\nlog_only = yes\n"
                             "max_offset = 2000\n");
    expect_sent(lo, &CTX, "SELECT * FROM t ORDER BY id LIMIT 1000, 1", MR_ACT_PASS,
                "SELECT * FROM t ORDER BY id LIMIT 1000, 1");
    expect_sent(lo, &CTX, "SELECT * FROM t ORDER BY id LIMIT 3000, 1", MR_ACT_PASS,
                "SELECT * FROM t ORDER BY id LIMIT 3000, 1");
    mr_ruleset_free(lo);
}

/* A fake schema source: `orders` has the primary key id, `lines` the
 * composite (order_id, line_no), `heap` none, anything else is unknown. */
static mr_key_status fake_row_key(void *arg, const char *schema, const char *table, mr_row_key *out)
{
    int *calls = arg;
    (*calls)++;
    memset(out, 0, sizeof *out);
    out->status = MR_KEY_UNKNOWN;
    snprintf(out->why, sizeof out->why, "%s.%s not loaded yet", schema, table);
    if (strcmp(table, "orders") == 0) {
        out->status = MR_KEY_FOUND;
        out->ncols = 1;
        strcpy(out->cols[0], "id");
    } else if (strcmp(table, "lines") == 0) {
        out->status = MR_KEY_FOUND;
        out->ncols = 2;
        strcpy(out->cols[0], "order_id");
        strcpy(out->cols[1], "line_no");
    } else if (strcmp(table, "heap") == 0) {
        out->status = MR_KEY_NONE;
        snprintf(out->why, sizeof out->why, "%s.%s has no primary key", schema, table);
    }
    return out->status;
}

static void key_from_schema(void **state)
{
    (void)state;
    int calls = 0;
    mr_schema_source src = {.row_key = fake_row_key, .arg = &calls};
    mr_stmt_ctx ctx = {.schema = "shop", .schema_src = &src};
    mr_ruleset *any = load_ok("[paginate all]\ntable = *\nthreshold = 10\nmax_offset = 90000\n");
    expect_sent(any, &ctx, "SELECT * FROM orders ORDER BY created LIMIT 10, 1", MR_ACT_REWRITE,
                "SELECT orders.* FROM orders JOIN (SELECT `id` FROM orders ORDER BY created, "
                "orders.`id` LIMIT 10, 1)" DJ " ORDER BY created, orders.`id`");
    expect_sent(any, &ctx, "SELECT l.* FROM other.lines l ORDER BY l.sku DESC LIMIT 50, 5",
                MR_ACT_REWRITE,
                "SELECT l.* FROM other.lines l JOIN (SELECT `order_id`, `line_no` FROM other.lines "
                "l ORDER BY l.sku DESC, l.`order_id` DESC, l.`line_no` DESC LIMIT 50, 5)" DJ2
                " ORDER BY l.sku DESC, l.`order_id` DESC, l.`line_no` DESC");
    /* no key, or not known yet: untouched, and the reason is in --explain */
    expect_sent(any, &ctx, "SELECT * FROM heap ORDER BY a LIMIT 50, 5", MR_ACT_PASS,
                "SELECT * FROM heap ORDER BY a LIMIT 50, 5");
    expect_sent(any, &ctx, "SELECT * FROM fresh ORDER BY a LIMIT 50, 5", MR_ACT_PASS,
                "SELECT * FROM fresh ORDER BY a LIMIT 50, 5");
    char *ex = explain_text(any, &ctx, "SELECT * FROM heap ORDER BY a LIMIT 50, 5");
    assert_non_null(strstr(ex, "no key: shop.heap has no primary key"));
    free(ex);
    ex = explain_text(any, &ctx, "SELECT * FROM fresh ORDER BY a LIMIT 50, 5");
    assert_non_null(strstr(ex, "no key: shop.fresh not loaded yet"));
    free(ex);
    /* the guardrail does not need the key */
    mr_match_result res = result_new();
    mr_rules_scratch *s = mr_rules_scratch_new();
    apply_ctx(any, "SELECT * FROM heap ORDER BY a LIMIT 90001, 5", &ctx, s, &res);
    assert_int_equal(res.action, MR_ACT_BLOCK);
    result_free(&res);
    mr_rules_scratch_free(s);
    /* without a schema source (--explain), nothing is rewritten */
    expect_sent(any, &CTX, "SELECT * FROM orders ORDER BY id LIMIT 10, 1", MR_ACT_PASS,
                "SELECT * FROM orders ORDER BY id LIMIT 10, 1");
    /* a rule with key never asks the schema */
    int before = calls;
    expect_sent(rs, &ctx, "SELECT * FROM orders ORDER BY id LIMIT 1000, 1", MR_ACT_REWRITE,
                "SELECT orders.* FROM orders JOIN (SELECT `id` FROM orders ORDER BY id LIMIT "
                "1000, 1)" DJ " ORDER BY id");
    assert_int_equal(calls, before);
    assert_true(before > 0);
    mr_ruleset_free(any);
}

/* A keyset rule without `key`: the key the schema gave is part of the
 * listing's order and of the text sent (the key's names must outlive the
 * lookup: the keyset code reads them after it). */
static void keyset_key_from_schema(void **state)
{
    (void)state;
    int calls = 0;
    mr_schema_source src = {.row_key = fake_row_key, .arg = &calls};
    mr_stmt_ctx ctx = {.schema = "shop", .schema_src = &src, .bookmarks = &mr_bookmarks_store};
    mr_ruleset *ks = load_ok("[paginate ks]\ntable = lines\nthreshold = 100\n"
                             "strategy = keyset\n");
    const char *sql = "SELECT * FROM lines ORDER BY sku DESC LIMIT 20, 5";
    mr_match_result res = result_new();
    mr_rules_scratch *s = mr_rules_scratch_new();
    apply_ctx(ks, sql, &ctx, s, &res);
    assert_true(calls > 0);
    assert_true(res.keyset.watch);
    const mr_keyset_listing *ls = &res.keyset.listing;
    assert_int_equal(ls->ncols, 3);
    assert_string_equal(ls->cols[0].name, "sku");
    assert_string_equal(ls->cols[1].name, "order_id");
    assert_string_equal(ls->cols[2].name, "line_no");
    assert_true(ls->cols[1].desc && ls->cols[2].desc);
    char *got = sent_text(&res, sql);
    assert_string_equal(got, "SELECT * FROM lines ORDER BY sku DESC, lines.`order_id` DESC, "
                             "lines.`line_no` DESC LIMIT 20, 5");
    free(got);
    result_free(&res);
    mr_rules_scratch_free(s);
    mr_ruleset_free(ks);
}

static void load_errors(void **state)
{
    (void)state;
    expect_error("[paginate p]\ntable = t\nkey = id\nstrategy = seek\n",
                 "t.rules:4: strategy = 'seek' in [paginate p]: expected deferred_join, keyset "
                 "or auto\n");
    expect_error("[paginate p]\ntable = t\nkey = id\nstrategy = keyset\nbookmark_ttl = 0\n",
                 "t.rules:5: bookmark_ttl = '0' in [paginate p]: expected a duration above zero, "
                 "like 30s, 5m or 1h\n");
    expect_error("[paginate p]\ntable = t\nkey = id\nstrategy = auto\nmax_bookmarks = 0\n",
                 "t.rules:5: max_bookmarks = '0' in [paginate p]: expected a whole number from 1 "
                 "to 10000000\n");
    expect_error("[paginate p]\ntable = t\nkey = id\nthreshold = 0\n",
                 "t.rules:4: threshold = '0' in [paginate p]: expected a whole number from 1 to "
                 "1844674407370955161\n");
    expect_error("[paginate p]\ntable = t\nkey = id\nmax_offset = -1\n",
                 "t.rules:4: max_offset = '-1' in [paginate p]: expected a whole number from 1 to "
                 "1844674407370955161\n");
    expect_error("[paginate p]\ntable = a.b.c\nkey = id\n",
                 "t.rules:2: table = 'a.b.c' in [paginate p]: expected *, a table name, or "
                 "schema.table, unquoted\n");
    expect_error("[paginate p]\ntable = t\nkey = id, id\n",
                 "t.rules:3: key = 'id, id' in [paginate p]: expected a comma list of up to 16 "
                 "different column names, unquoted\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepted_shapes),
        cmocka_unit_test(composite_key),
        cmocka_unit_test(hostile_literals),
        cmocka_unit_test(passes_untouched),
        cmocka_unit_test(prepared),
        cmocka_unit_test(edges),
        cmocka_unit_test(prepared_guard),
        cmocka_unit_test(multi_statement),
        cmocka_unit_test(star_rule),
        cmocka_unit_test(key_from_schema),
        cmocka_unit_test(keyset_key_from_schema),
        cmocka_unit_test(load_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
