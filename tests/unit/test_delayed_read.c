/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_delayed_read.c - read_pending's point reads (delayed/read_sql.h,
 * delayed/statement/read_take.c): the one shape rewritten, staged and memory mode,
 * one and two key columns, several counters, names as written, prepared
 * `?` kept in order, every other shape and every rule without
 * read_pending untouched, explain's lines, and the rule keys' checks.
 */
#include "test_rules.h"

#include "myrewrite/delayed/rule.h"
#include "myrewrite/proto/stmt_execute.h"
#include "myrewrite/schema/desc.h"

static const char RULES[] = "[delayed counters]\n"
                            "table = test.counters\n"
                            "key = id\n"
                            "columns = hits, misses\n"
                            "read_pending = yes\n"
                            "[delayed pairs]\n"
                            "table = test.pairs\n"
                            "key = a, b\n"
                            "columns = n\n"
                            "staging_table = pairs_stage\n"
                            "read_pending = yes\n"
                            "[delayed plain]\n"
                            "table = test.plain\n"
                            "key = id\n"
                            "columns = n\n"
                            "[delayed pages]\n"
                            "table = test.pages\n"
                            "key = id\n"
                            "columns = hits, views\n"
                            "set_columns = title, hits\n"
                            "read_pending = yes\n"
                            "[delayed mem]\n"
                            "table = test.mem\n"
                            "key = id\n"
                            "columns = n, m\n"
                            "mode = memory\n"
                            "read_pending = yes\n"
                            "[delayed daily]\n"
                            "table = test.daily\n"
                            "key = page_id\n"
                            "columns = views\n"
                            "bucket_column = day\n"
                            "read_pending = yes\n";

static const mr_stmt_ctx CTX = {.schema = "test"};
static const mr_stmt_ctx PREP = {.schema = "test", .prepared = true};

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

#define SUM(col, stg, match)                                                                       \
    "(`mr_t`.`" col "` + CAST(COALESCE((SELECT SUM(`mr_s`.`" col "`) FROM `test`.`" stg            \
    "` AS `mr_s` WHERE " match "), 0) AS SIGNED))"
#define NOT_DELETED(stg, match)                                                                    \
    " AND NOT EXISTS (SELECT 1 FROM `test`.`" stg "` AS `mr_s` WHERE " match " AND `mr_s`.`op` = " \
    "1)"
#define ID "`mr_s`.`id` = `mr_t`.`id`"
#define AB "`mr_s`.`a` = `mr_t`.`a` AND `mr_s`.`b` = `mr_t`.`b`"
#define DAY "`mr_s`.`page_id` = `mr_t`.`page_id` AND `mr_s`.`day` = `mr_t`.`day`"

static void staged_reads(void **state)
{
    (void)state;
    expect_sent(rs, &CTX, "SELECT hits FROM counters WHERE id = 7", MR_ACT_REWRITE,
                "SELECT " SUM("hits", "counters_delayed",
                              ID) " AS hits FROM counters AS `mr_t` "
                                  "WHERE (id = 7)" NOT_DELETED("counters_delayed", ID));
    /* names as written, several counters and a key column, a schema, comments */
    expect_sent(
        rs, NULL, "select `HITS`, id, misses /* x */ from test.`counters` where `id` = -3",
        MR_ACT_REWRITE,
        "SELECT " SUM("hits", "counters_delayed", ID) " AS `HITS`, id, " SUM(
            "misses", "counters_delayed", ID) " AS misses FROM test.`counters` AS `mr_t` WHERE "
                                              "(`id` = -3)" NOT_DELETED("counters_delayed", ID));
    /* two key columns in any order, literals byte for byte */
    expect_sent(rs, &CTX, "SELECT n FROM pairs WHERE b = 'x''y' AND a = 0x0A", MR_ACT_REWRITE,
                "SELECT " SUM("n", "pairs_stage",
                              AB) " AS n FROM pairs AS `mr_t` "
                                  "WHERE (b = 'x''y' AND a = 0x0A)" NOT_DELETED("pairs_stage", AB));
    /* a bucket column is one more key column */
    expect_sent(rs, &CTX, "SELECT views FROM daily WHERE page_id = 1 AND day = '2026-12-01'",
                MR_ACT_REWRITE,
                "SELECT " SUM("views", "daily_delayed",
                              DAY) " AS views FROM daily AS `mr_t` "
                                   "WHERE (page_id = 1 AND day = '2026-12-01')" NOT_DELETED(
                                       "daily_delayed", DAY));
}

/* COM_STMT_PREPARE: the `?` stay where they were, none added. */
static void prepared_reads(void **state)
{
    (void)state;
    expect_sent(rs, &PREP, "SELECT n FROM pairs WHERE a = ? AND b = ?", MR_ACT_REWRITE,
                "SELECT " SUM("n", "pairs_stage",
                              AB) " AS n FROM pairs AS `mr_t` "
                                  "WHERE (a = ? AND b = ?)" NOT_DELETED("pairs_stage", AB));
}

static void untouched_shapes(void **state)
{
    (void)state;
    static const char *const pass[] = {
        "SELECT hits FROM counters WHERE id > 7",
        "SELECT hits FROM counters WHERE id = 7 OR id = 8",
        "SELECT hits FROM counters WHERE id IN (7, 8)",
        "SELECT hits FROM counters",
        "SELECT * FROM counters WHERE id = 7",
        "SELECT hits + 1 FROM counters WHERE id = 7",
        "SELECT hits AS h FROM counters WHERE id = 7",
        "SELECT id FROM counters WHERE id = 7",
        "SELECT SUM(hits) FROM counters WHERE id = 7",
        "SELECT DISTINCT hits FROM counters WHERE id = 7",
        "SELECT hits FROM counters c WHERE id = 7",
        "SELECT hits FROM counters WHERE id = 7 FOR UPDATE",
        "SELECT hits FROM counters WHERE id = 7 LOCK IN SHARE MODE",
        "SELECT hits FROM counters WHERE id = 7 LIMIT 1",
        "SELECT hits FROM counters WHERE id = 7 ORDER BY id",
        "SELECT hits FROM counters, pairs WHERE id = 7",
        "SELECT hits FROM counters JOIN pairs USING (id) WHERE id = 7",
        "SELECT hits FROM counters WHERE id = (SELECT 7)",
        "SELECT hits FROM counters WHERE id = 7 AND hits = 2",
        "SELECT hits FROM counters WHERE id = 7 AND id = 8",
        "SELECT hits FROM counters WHERE id = 7 AND",
        "SELECT hits, FROM counters WHERE id = 7",
        "SELECT counters.hits FROM counters WHERE id = 7",
        "SELECT hits FROM counters WHERE (id = 7)",
        "SELECT hits FROM counters WHERE id = 7 UNION SELECT 1",
        "SELECT hits INTO @x FROM counters WHERE id = 7",
        "SELECT hits FROM other.counters WHERE id = 7",
        "SELECT n FROM pairs WHERE a = 1",
        "SELECT n FROM plain WHERE id = 1",          /* no read_pending */
        "SELECT hits FROM pages WHERE id = 1",       /* hits is also a set column */
        "SELECT views FROM daily WHERE page_id = 1", /* the bucket column missing */
        "UPDATE counters SET hits = 1 WHERE id = 7",
    };
    for (size_t i = 0; i < sizeof pass / sizeof pass[0]; i++)
        expect_sent(rs, &CTX, pass[i], MR_ACT_PASS, pass[i]);
    /* a set-only column is not a counter either, but a plain counter is */
    expect_sent(rs, &CTX, "SELECT title FROM pages WHERE id = 1", MR_ACT_PASS,
                "SELECT title FROM pages WHERE id = 1");
    expect_sent(rs, &CTX, "SELECT views FROM pages WHERE id = 1", MR_ACT_REWRITE,
                "SELECT " SUM("views", "pages_delayed",
                              ID) " AS views FROM pages AS `mr_t` "
                                  "WHERE (id = 1)" NOT_DELETED("pages_delayed", ID));
}

/* A rule without key takes the primary key the schema source has; while
 * it has none the read is untouched, never parked. */
static mr_key_status fake_row_key(void *arg, const char *schema, const char *table, mr_row_key *out)
{
    (void)arg;
    (void)schema;
    memset(out, 0, sizeof *out);
    out->status = MR_KEY_UNKNOWN;
    if (strcmp(table, "auto") == 0) {
        out->status = MR_KEY_FOUND;
        out->primary = true;
        out->ncols = 1;
        strcpy(out->cols[0], "site");
    }
    return out->status;
}

static void key_from_schema(void **state)
{
    (void)state;
    mr_ruleset *set = load_ok("[delayed a]\ntable = test.auto\ncolumns = hits\n"
                              "read_pending = yes\n"
                              "[delayed l]\ntable = test.later\ncolumns = hits\n"
                              "read_pending = yes\n");
    mr_schema_source src = {.row_key = fake_row_key};
    mr_stmt_ctx ctx = {.schema = "test", .schema_src = &src};
    expect_sent(
        set, &ctx, "SELECT hits FROM auto WHERE site = 2", MR_ACT_REWRITE,
        "SELECT " SUM(
            "hits", "auto_delayed",
            "`mr_s`.`site` = `mr_t`.`site`") " AS hits "
                                             "FROM auto AS `mr_t` WHERE (site = 2)" NOT_DELETED(
                                                 "auto_delayed", "`mr_s`.`site` = "
                                                                 "`mr_t`.`site`"));
    expect_sent(set, &ctx, "SELECT hits FROM later WHERE id = 2", MR_ACT_PASS,
                "SELECT hits FROM later WHERE id = 2");
    expect_explain_line(set, &ctx, "SELECT hits FROM later WHERE id = 2",
                        "  rule l (t.rules:5): not matched: read_pending: not rewritten (the "
                        "table's key is not known yet); the read goes as written");
    mr_ruleset_free(set);
}

/* Memory mode: the sums the port gives, as numbers; a chunk in flight
 * asked of the marks table; a held delete: no row. */
static bool fake_gone;
static uint64_t fake_chunk;
static bool fake_sum(void *arg, const char *key, size_t klen, size_t ncols, mr_read_held *out)
{
    (void)arg;
    /* the key 5 as the memory table encodes it: a u32 length and "5" */
    assert_int_equal(klen, 5);
    assert_memory_equal(key,
                        "\x01\x00\x00\x00"
                        "5",
                        5);
    assert_int_equal(ncols, 2);
    memset(out, 0, sizeof *out);
    out->held[0] = 3;
    out->held[1] = -4;
    if (fake_chunk) {
        out->inflight[0] = 10;
        out->chunk = fake_chunk;
        out->proxy = 77;
    }
    out->gone = fake_gone;
    return true;
}

static bool fake_marks(void *arg, uint64_t *proxy)
{
    (void)arg;
    *proxy = 77;
    return true;
}

/* The SET a prepared memory read's prepare (zeros) or execute gives, with
 * nothing else sent in an execute's place; want NULL: none. */
static void expect_read_set(const mr_ruleset *set, const mr_stmt_ctx *ctx, const char *sql,
                            bool prepare, const char *want)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(set, sql, ctx, s, &res);
    assert_int_equal(res.dmem_read_prepare, prepare);
    assert_int_equal(res.action, prepare ? MR_ACT_REWRITE : MR_ACT_PASS);
    if (prepare)
        assert_int_equal(res.dmem_nparams, 1);
    if (!want) {
        assert_null(res.read_set);
    } else {
        assert_non_null(res.read_set);
        char got[512];
        snprintf(got, sizeof got, "%.*s", (int)res.read_set_len, res.read_set);
        assert_string_equal(got, want);
    }
    result_free(&res);
    mr_rules_scratch_free(s);
}

static void memory_reads(void **state)
{
    (void)state;
    mr_delayed_def *def = NULL;
    for (size_t i = 0; i < mr_ruleset_count(rs); i++)
        if (strcmp(mr_ruleset_rule(rs, i)->name, "mem") == 0)
            def = (mr_delayed_def *)(uintptr_t)mr_ruleset_rule(rs, i)->delayed;
    assert_non_null(def);
    /* without the proxy's table (no flusher, a dry run): untouched */
    expect_sent(rs, &CTX, "SELECT n FROM mem WHERE id = 5", MR_ACT_PASS,
                "SELECT n FROM mem WHERE id = 5");
    mr_read_port port = {.sum = fake_sum};
    def->mem_read = &port;
    fake_gone = false;
    fake_chunk = 0;
    expect_sent(rs, &CTX, "SELECT m, n FROM mem WHERE id = '5'", MR_ACT_REWRITE,
                "SELECT (`mr_t`.`m` + CAST(-4 AS SIGNED)) AS m, (`mr_t`.`n` + CAST(3 AS "
                "SIGNED)) AS n FROM mem AS `mr_t` WHERE (id = '5')");
    fake_chunk = 9;
    expect_sent(rs, &CTX, "SELECT n, m FROM mem WHERE id = 5", MR_ACT_REWRITE,
                "SELECT (`mr_t`.`n` + CAST(3 + IF(COALESCE((SELECT `mr_m`.`seq` FROM "
                "`test`.`myrewrite_read_marks` AS `mr_m` WHERE `mr_m`.`proxy` = 77), 0) >= 9, "
                "0, 10) AS SIGNED)) AS n, (`mr_t`.`m` + CAST(-4 AS SIGNED)) AS m FROM mem AS "
                "`mr_t` WHERE (id = 5)");
    fake_chunk = 0;
    fake_gone = true;
    expect_sent(rs, &CTX, "SELECT n FROM mem WHERE id = 5", MR_ACT_REWRITE,
                "SELECT (`mr_t`.`n` + CAST(3 AS SIGNED)) AS n FROM mem AS `mr_t` "
                "WHERE (id = 5) AND 0 = 1");
    /* a prepared read's key is known only at each execute: the prepare reads
     * user variables, set ahead of each execute */
    fake_gone = false;
    expect_sent(rs, &PREP, "SELECT n FROM mem WHERE id = ?", MR_ACT_REWRITE,
                "SELECT (`mr_t`.`n` + CAST(COALESCE(@myrewrite_rp_h1, 0) + "
                "COALESCE(@myrewrite_rp_f1, 0) AS SIGNED)) AS n FROM mem AS `mr_t` WHERE "
                "(id = ?) AND COALESCE(@myrewrite_rp_gone, 0) = 0");
    port.marks = fake_marks;
    expect_sent(rs, &PREP, "SELECT id, m FROM mem WHERE id = ?", MR_ACT_REWRITE,
                "SELECT id, (`mr_t`.`m` + CAST(COALESCE(@myrewrite_rp_h2, 0) + "
                "IF(COALESCE((SELECT `mr_m`.`seq` FROM `test`.`myrewrite_read_marks` AS `mr_m` "
                "WHERE `mr_m`.`proxy` = 77), 0) >= COALESCE(@myrewrite_rp_chunk, 0), 0, "
                "COALESCE(@myrewrite_rp_f2, 0)) AS SIGNED)) AS m FROM mem AS `mr_t` WHERE "
                "(id = ?) AND COALESCE(@myrewrite_rp_gone, 0) = 0");
    expect_read_set(rs, &PREP, "SELECT id, m FROM mem WHERE id = ?", true,
                    "SET @myrewrite_rp_chunk = 0, @myrewrite_rp_gone = 0, @myrewrite_rp_h2 = 0, "
                    "@myrewrite_rp_f2 = 0");
    /* an execute: nothing is sent in its place, the SET holds the key's sums */
    mr_exec_param v = {.kind = MR_EXEC_PARAM_INT, .n = 5};
    mr_exec_params ps = {&v, 1};
    mr_stmt_ctx exec = {.schema = "test", .prepared = true, .params = &ps};
    fake_chunk = 9;
    expect_read_set(rs, &exec, "SELECT n, m FROM mem WHERE id = ?", false,
                    "SET @myrewrite_rp_chunk = 9, @myrewrite_rp_gone = 0, @myrewrite_rp_h1 = 3, "
                    "@myrewrite_rp_f1 = 10, @myrewrite_rp_h2 = -4, @myrewrite_rp_f2 = 0");
    fake_chunk = 0;
    fake_gone = true;
    expect_read_set(rs, &exec, "SELECT n FROM mem WHERE id = ?", false,
                    "SET @myrewrite_rp_chunk = 0, @myrewrite_rp_gone = 1, @myrewrite_rp_h1 = 3, "
                    "@myrewrite_rp_f1 = 0");
    /* a NULL key: no SET (the caller sets zeros) */
    v.kind = MR_EXEC_PARAM_NULL;
    expect_read_set(rs, &exec, "SELECT n FROM mem WHERE id = ?", false, NULL);
    def->mem_read = NULL;
}

static void explain_lines(void **state)
{
    (void)state;
    expect_explain_line(rs, &CTX, "SELECT hits FROM counters WHERE id = 7",
                        "  rule counters (t.rules:1): matched: rewrite (read_pending: the point "
                        "read adds the staging table's pending deltas for the key in the same "
                        "statement)");
    expect_explain_line(rs, &CTX, "SELECT hits FROM counters WHERE id = 7",
                        "read pending: yes (rule counters has read_pending: the point read "
                        "returns the table's value plus the deltas still pending for the key)");
    expect_explain_line(rs, &CTX, "SELECT hits FROM counters WHERE id = 7 LIMIT 1",
                        "  rule counters (t.rules:1): not matched: read_pending: not rewritten "
                        "(ORDER BY, LIMIT or a locking clause); the read goes as written");
}

static void load_keys(void **state)
{
    (void)state;
    const mr_rule *r = mr_ruleset_rule(rs, 2);
    assert_string_equal(r->name, "plain");
    assert_false(r->delayed->read_pending);
    assert_true(mr_ruleset_rule(rs, 0)->delayed->read_pending);
    expect_error("[delayed x]\ntable = s.t\nkey = k\ncolumns = c\nread_pending = often\n",
                 "t.rules:5: read_pending = 'often' in [delayed x]: expected yes or no\n");
    expect_error("[delayed d]\ntable = s.*\nread_pending = yes\n",
                 "t.rules:3: [delayed d]: a default rule (table = s.*) may not give "
                 "read_pending: the table's rule is derived from the schema (point reads are "
                 "rewritten for a table's own rule, whose key and counters are written in it)\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(staged_reads),     cmocka_unit_test(prepared_reads),
        cmocka_unit_test(untouched_shapes), cmocka_unit_test(key_from_schema),
        cmocka_unit_test(memory_reads),     cmocka_unit_test(explain_lines),
        cmocka_unit_test(load_keys),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
