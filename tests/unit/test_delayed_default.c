/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_delayed_default.c - default delayed rules (`table = s.*` or `*`):
 * their load-time checks, the plain text a pending table's statement is
 * sent as, and the worker's path through the registry of derived tables
 * (pending, ready, failed), with an explicit rule winning over the default.
 */
#include "test_rules.h"

#include "myrewrite/delayed/derive.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/sql/lexer.h"
#include "myrewrite/sql/stmt.h"
#include "myrewrite/stats/rule_stats.h"

static const char RULES[] = "[delayed counters]\n"
                            "table = app.counters\n"
                            "key = id\n"
                            "columns = hits\n"
                            "[delayed app_default]\n"
                            "table = app.*\n"
                            "flush_interval = 200ms\n"
                            "[delayed any_default]\n"
                            "table = *\n"
                            "staging_table = stage_{table}\n";

/* ---- load-time checks ---------------------------------------------------------------- */

static void load_default(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(RULES);
    const mr_delayed_def *d = mr_ruleset_rule(rs, 1)->delayed;
    assert_true(d->derive);
    assert_string_equal(d->schema, "app");
    assert_string_equal(d->table, "*");
    assert_string_equal(d->staging_table, "{table}_delayed");
    assert_string_equal(d->staging_engine, "InnoDB");
    assert_int_equal(d->flush_interval_ms, 200);
    assert_int_equal(d->nkeys, 0);
    assert_int_equal(d->ncolumns, 0);
    d = mr_ruleset_rule(rs, 2)->delayed;
    assert_true(d->derive);
    assert_string_equal(d->schema, "*");
    assert_string_equal(d->staging_table, "stage_{table}");
    assert_false(mr_ruleset_rule(rs, 0)->delayed->derive);
    mr_ruleset_free(rs);
}

static void load_refusals(void **state)
{
    (void)state;
    expect_error("[delayed d]\ntable = app.*\nkey = id\n",
                 "t.rules:3: [delayed d]: a default rule (table = app.*) may not give key: the "
                 "table's rule is derived from the schema (the key is the table's primary key)\n");
    expect_error("[delayed d]\ntable = app.*\ncolumns = hits\n",
                 "t.rules:3: [delayed d]: a default rule (table = app.*) may not give columns: "
                 "the table's rule is derived from the schema (the counter columns are the "
                 "table's integer and DECIMAL columns)\n");
    expect_error("[delayed d]\ntable = *\nset_columns = title\n",
                 "t.rules:3: [delayed d]: a default rule (table = *) may not give set_columns: "
                 "the table's rule is derived from the schema (derived rules have no "
                 "set_columns)\n");
    expect_error("[delayed d]\ntable = app.*\nbucket_column = day\n",
                 "t.rules:3: [delayed d]: a default rule (table = app.*) may not give "
                 "bucket_column: the table's rule is derived from the schema (derived rules "
                 "have no bucket)\n");
    expect_error("[delayed d]\ntable = app.*\nmode = memory\n",
                 "t.rules:3: [delayed d]: a default rule is staged only (mode = memory needs its "
                 "columns written in the rule)\n");
    expect_error("[delayed d]\ntable = app.*\nmissing = insert\n",
                 "t.rules:3: [delayed d]: a default rule may not give missing = insert: while a "
                 "table's rule is being derived its statements are sent as plain UPDATEs, which "
                 "cannot insert a missing row\n");
    expect_error("[delayed d]\ntable = app.*\n[delayed e]\ntable = app.*\n",
                 "t.rules:4: [delayed e]: rule d (t.rules:1) is already the default rule for "
                 "app.*; at most one default rule per schema\n");
    expect_error("[delayed d]\ntable = app.*\nstaging_table = counters_stage\n",
                 "t.rules:3: staging_table = 'counters_stage' in [delayed d]: expected a name "
                 "holding {table} once, like {table}_delayed\n");
    expect_error("[delayed d]\ntable = app.*\nstaging_table = {table}\n",
                 "t.rules:3: staging_table = '{table}' in [delayed d]: expected a name holding "
                 "{table} once, like {table}_delayed\n");
    expect_error("[delayed d]\ntable = a.b.*\n",
                 "t.rules:2: table = 'a.b.*' in [delayed d]: expected schema.* or * for a "
                 "default rule\n");
    expect_error("[delayed d]\ntable = app.*\nstaging_engine = a;b\n",
                 "t.rules:3: staging_engine = 'a;b' in [delayed d]: expected an engine name, "
                 "like InnoDB\n");
    /* a default rule refused for its table has no schema: the next one's
     * one-per-schema check must pass over it (it dereferenced NULL) */
    expect_error(
        "[delayed d]\ntable = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.*\n"
        "[delayed e]\ntable = app.*\n",
        "t.rules:2: table = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.*' "
        "in [delayed d]: expected schema.* or * for a default rule\n");
    /* one per schema pattern: app.* and * together are fine */
    mr_ruleset_free(load_ok("[delayed d]\ntable = app.*\n[delayed e]\ntable = *\n"));
}

/* ---- the text sent while pending -------------------------------------------------- */

static void expect_strip(const char *sql, const char *want)
{
    sql_token tok[64];
    size_t n = 0;
    assert_int_equal(sql_lex(sql, strlen(sql), 0, tok, 64, &n), SQL_OK);
    sql_stmt st;
    sql_stmt_parse(sql, tok, n, &st);
    mr_buf out;
    mr_buf_init(&out);
    bool ok = mr_delayed_strip(sql, strlen(sql), tok, &st, &out);
    if (!want) {
        assert_false(ok);
    } else {
        assert_true(ok);
        mr_buf_put(&out, "", 1);
        assert_string_equal((const char *)out.data, want);
    }
    mr_buf_free(&out);
}

static void strip_delayed(void **state)
{
    (void)state;
    expect_strip("UPDATE DELAYED t SET hits = hits + 1 WHERE id = 5",
                 "UPDATE t SET hits = hits + 1 WHERE id = 5");
    expect_strip("UPDATE DELAYED LOW_PRIORITY t SET hits = hits + 1 WHERE id = 5",
                 "UPDATE LOW_PRIORITY t SET hits = hits + 1 WHERE id = 5");
    expect_strip("update delayed\n\tt set a = a - 2 where id = 'delayed'",
                 "update t set a = a - 2 where id = 'delayed'");
    expect_strip("DELETE DELAYED FROM t WHERE id = 9", "DELETE FROM t WHERE id = 9");
    expect_strip("DELETE LOW_PRIORITY DELAYED FROM t WHERE id = 9",
                 "DELETE LOW_PRIORITY FROM t WHERE id = 9");
    expect_strip("UPDATE /* DELAYED */ DELAYED /* x */ `delayed` SET `delayed` = `delayed` + 1 "
                 "WHERE id = 1",
                 "UPDATE /* DELAYED */ /* x */ `delayed` SET `delayed` = `delayed` + 1 "
                 "WHERE id = 1");
    expect_strip("UPDATE/**/DELAYED`t` SET n = n + 1 WHERE k = 1",
                 "UPDATE/**/`t` SET n = n + 1 WHERE k = 1");
    expect_strip("UPDATE t SET n = n + 1 WHERE k = 1", NULL);
}

/* ---- the worker's path ------------------------------------------------------------- */

static const mr_stmt_ctx *ctx_with(mr_derive_reg *g)
{
    static mr_stmt_ctx ctx;
    static mr_derive_port port;
    port = (mr_derive_port){.lookup = mr_derive_lookup, .reg = g};
    ctx = (mr_stmt_ctx){.schema = "app", .derived = &port};
    return &ctx;
}

/* What the flusher would publish for app.t: key id, counters hits, views. */
static void publish(mr_derive_reg *g, const char *table)
{
    mr_derived *e = mr_derive_take(g);
    assert_non_null(e);
    assert_string_equal(e->table, table);
    char *keys[] = {"id"}, *cols[] = {"hits", "views"}, staging[MR_DERIVE_NAME];
    assert_true(mr_derive_staging_name(e->how.staging_pattern, e->table, staging, sizeof staging));
    mr_delayed_def *def = mr_derive_def_new(e, staging, keys, 1, cols, 2);
    assert_non_null(def);
    mr_derive_publish(g, e, def);
}

static void pending_then_ready(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(RULES);
    mr_derive_reg *g = mr_derive_reg_new();
    const char *sql = "UPDATE DELAYED t SET hits = hits + 1 WHERE id = 5";
    /* first statement: registered as pending, sent plain, the flusher woken */
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, ctx_with(g), s, &res);
    assert_int_equal(res.action, MR_ACT_REWRITE);
    assert_true(res.wake_flusher);
    result_free(&res);
    mr_rules_scratch_free(s);
    assert_true(mr_derive_known(g, "app", "t"));
    expect_sent(rs, ctx_with(g), sql, MR_ACT_REWRITE, "UPDATE t SET hits = hits + 1 WHERE id = 5");
    /* SET col = literal is refused in every phase */
    expect_refused_with(rs, ctx_with(g), "UPDATE DELAYED t SET hits = 5 WHERE id = 1",
                        "derived rules have no set_columns");
    publish(g, "t");
    expect_sent(rs, ctx_with(g), sql, MR_ACT_REWRITE,
                "INSERT INTO `app`.`t_delayed` (`hits`, `id`, `op`) VALUES (1, 5, 0)");
    expect_sent(rs, ctx_with(g), "DELETE DELAYED FROM app.t WHERE id IN (1, 2)", MR_ACT_REWRITE,
                "INSERT INTO `app`.`t_delayed` (`id`, `op`) VALUES (1, 1), "
                "(2, 1)");
    expect_refused_with(rs, ctx_with(g), "UPDATE DELAYED t SET title = title + 1 WHERE id = 1",
                        "title");
    expect_refused_with(rs, ctx_with(g), "UPDATE DELAYED t SET hits = hits + 1 WHERE other = 1",
                        "key");
    mr_derive_reg_free(g);
    mr_ruleset_free(rs);
}

/* Runs sql (a DELAYED statement on a registered table of app) once. */
static void apply_once(const mr_ruleset *rs, mr_derive_reg *g, const char *sql,
                       mr_match_result *res)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    apply_ctx(rs, sql, ctx_with(g), s, res);
    mr_rules_scratch_free(s);
}

/* Each derived table has SHOW DELAYED counters of its own: a staged
 * statement names them, and the registry lists the ready tables of a
 * default rule by name. */
static void table_rows(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(RULES);
    mr_derive_reg *g = mr_derive_reg_new();
    mr_match_result res = result_new();
    const char *names[] = {"zeta", "alpha", "pend"};
    for (int k = 0; k < 3; k++) {
        char sql[128];
        snprintf(sql, sizeof sql, "UPDATE DELAYED %s SET hits = hits + 1 WHERE id = 1", names[k]);
        apply_once(rs, g, sql, &res);
        assert_int_equal(res.action, MR_ACT_REWRITE); /* pending: sent plain */
        assert_null(res.staged_table[0]);
    }
    publish(g, "pend"); /* newest first */
    publish(g, "alpha");
    size_t n = 0;
    mr_rule_stats **v = mr_derive_stats_of(g, "app_default", &n);
    assert_int_equal(n, 2);
    assert_string_equal(v[0]->table, "app.alpha");
    assert_string_equal(v[0]->staging, "app.alpha_delayed");
    assert_string_equal(v[0]->name, "app_default");
    assert_string_equal(v[1]->table, "app.pend");
    mr_rule_stats *alpha = v[0];
    free(v);
    v = mr_derive_stats_of(g, "any_default", &n);
    assert_int_equal(n, 0);
    free(v);
    apply_once(rs, g, "UPDATE DELAYED alpha SET hits = hits + 1 WHERE id IN (1, 2)", &res);
    assert_int_equal(res.nmatched, 1);
    assert_int_equal(res.staged_rows[0], 2);
    assert_ptr_equal(res.staged_table[0], alpha);
    apply_once(rs, g, "UPDATE DELAYED zeta SET hits = hits + 1 WHERE id = 1", &res);
    assert_null(res.staged_table[0]); /* still pending */
    result_free(&res);
    mr_derive_reg_free(g);
    mr_ruleset_free(rs);
}

static void failed_and_explicit(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(RULES);
    mr_derive_reg *g = mr_derive_reg_new();
    expect_sent(rs, ctx_with(g), "UPDATE DELAYED nopk SET n = n + 1 WHERE id = 1", MR_ACT_REWRITE,
                "UPDATE nopk SET n = n + 1 WHERE id = 1");
    mr_derived *e = mr_derive_take(g);
    assert_non_null(e);
    assert_null(mr_derive_take(g)); /* taken: not handed out twice */
    mr_derive_fail(g, e,
                   "myrewrite: table app.nopk has no primary key; give a [delayed ...] "
                   "rule with key");
    expect_refused_with(
        rs, ctx_with(g), "UPDATE DELAYED nopk SET n = n + 1 WHERE id = 1",
        "myrewrite: table app.nopk has no primary key; give a [delayed ...] rule with key");
    assert_null(mr_derive_take(g)); /* failed: not taken again until a retry is asked */
    mr_derive_retry_failed(g);
    assert_ptr_equal(mr_derive_take(g), e);
    expect_refused_with(
        rs, ctx_with(g), "UPDATE DELAYED nopk SET n = n + 1 WHERE id = 1",
        "myrewrite: table app.nopk has no primary key"); /* still refused while retried */
    mr_derive_fail(g, e,
                   "myrewrite: table app.nopk has no primary key; give a [delayed ...] "
                   "rule with key");
    assert_null(mr_derive_take(g)); /* one retry per request */
    /* the explicit rule of app.counters wins: staged at once, nothing registered */
    expect_sent(rs, ctx_with(g), "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 3",
                MR_ACT_REWRITE,
                "INSERT INTO `app`.`counters_delayed` (`hits`, `id`, `op`) "
                "VALUES (1, 3, 0)");
    assert_false(mr_derive_known(g, "app", "counters"));
    /* another schema takes the `*` rule, with its staging pattern */
    expect_sent(rs, ctx_with(g), "UPDATE DELAYED shop.x SET n = n + 1 WHERE id = 1", MR_ACT_REWRITE,
                "UPDATE shop.x SET n = n + 1 WHERE id = 1");
    e = mr_derive_take(g);
    assert_non_null(e);
    assert_string_equal(e->how.rule, "any_default");
    assert_string_equal(e->how.staging_pattern, "stage_{table}");
    mr_derive_untake(g, e);
    assert_ptr_equal(mr_derive_take(g), e); /* given back: pending again */
    mr_derive_reg_free(g);
    mr_ruleset_free(rs);
}

/* Without a registry (a dry run) nothing is registered and the statement
 * shows as sent plain; without a default rule the usual refusal stays. */
static void dry_run_and_no_default(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(RULES);
    mr_stmt_ctx ctx = {.schema = "app"};
    expect_sent(rs, &ctx, "UPDATE DELAYED t SET hits = hits + 1 WHERE id = 5", MR_ACT_REWRITE,
                "UPDATE t SET hits = hits + 1 WHERE id = 5");
    expect_explain_line(rs, &ctx, "UPDATE DELAYED t SET hits = hits + 1 WHERE id = 5",
                        "  rule app_default (t.rules:5): matched: rewrite (default rule: the "
                        "table's rule is derived from the schema at run time; until then the "
                        "statement is sent without DELAYED)");
    mr_ruleset *only = load_ok("[delayed d]\ntable = app.*\n");
    mr_derive_reg *g = mr_derive_reg_new();
    expect_refused_with(only, ctx_with(g), "UPDATE DELAYED shop.t SET n = n + 1 WHERE id = 1",
                        "no delayed rule covers table shop.t,");
    mr_derive_port port = {.lookup = mr_derive_lookup, .reg = g};
    mr_stmt_ctx noschema = {.derived = &port};
    expect_refused_with(only, &noschema, "UPDATE DELAYED t SET n = n + 1 WHERE id = 1",
                        "no delayed rule covers table t,");
    assert_false(mr_derive_known(g, "shop", "t"));
    mr_derive_reg_free(g);
    mr_ruleset_free(only);
    mr_ruleset_free(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(load_default),        cmocka_unit_test(load_refusals),
        cmocka_unit_test(strip_delayed),       cmocka_unit_test(pending_then_ready),
        cmocka_unit_test(failed_and_explicit), cmocka_unit_test(dry_run_and_no_default),
        cmocka_unit_test(table_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
