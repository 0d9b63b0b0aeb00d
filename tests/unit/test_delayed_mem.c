/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_delayed_mem.c - mode = memory of delayed rules: statements read into
 * batches (values of literals, IN expansion, SET, DELETE, refusals) and
 * the flusher's statements (DELETE, both upsert forms, UPDATE ... JOIN,
 * shapes), plus the server version that picks the upsert form.
 */
#include "test_rules.h"

#include "myrewrite/delayed/mem.h"
#include "myrewrite/delayed/mem_sql.h"

static const char RULES[] = "[delayed counters]\n"
                            "table = test.counters\n"
                            "key = id\n"
                            "columns = hits, misses\n"
                            "set_columns = note, misses\n"
                            "mode = memory\n"
                            "memory_max_keys = 50\n"
                            "flush_early = 7\n"
                            "[delayed pages]\n"
                            "table = test.pages\n"
                            "key = day, page\n"
                            "columns = views\n"
                            "mode = memory\n"
                            "missing = insert\n";

static const mr_stmt_ctx CTX = {.schema = "test"};
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

/* The encoded key tuples of a batch as "v1|v2;v1|v2;..." (bytes as they are). */
static char *tuples(const mr_dmem_batch *b, size_t nkeys)
{
    static char out[1024];
    size_t o = 0;
    const uint8_t *p = b->keys.data;
    for (uint32_t r = 0; r < b->nrows; r++) {
        for (size_t k = 0; k < nkeys; k++) {
            uint32_t len;
            memcpy(&len, p, 4);
            memcpy(out + o, p + 4, len);
            o += len;
            out[o++] = k + 1 < nkeys ? '|' : ';';
            p += 4 + len;
        }
    }
    out[o] = '\0';
    return out;
}

/* Applies sql and expects a memory batch; returns it (valid until the scratch goes). */
static const mr_dmem_batch *expect_batch(mr_rules_scratch *s, mr_match_result *res, const char *sql)
{
    apply_ctx(rs, sql, &CTX, s, res);
    if (res->action != MR_ACT_DELAYED_MEMORY)
        fail_msg("statement: %s\nwanted a memory batch, got action %d: %s", sql, res->action,
                 res->message ? res->message : "");
    return res->dmem;
}

static void reads_adds(void **state)
{
    (void)state;
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    const mr_dmem_batch *b = expect_batch(s, &res,
                                          "UPDATE DELAYED counters SET hits = hits + "
                                          "3, misses = misses - 0012 WHERE id = 005");
    assert_false(b->del);
    assert_int_equal(b->nops, 2);
    assert_int_equal(b->ops[0].op, MR_DMEM_ADD);
    assert_int_equal(b->ops[0].col, 0);
    assert_int_equal(b->ops[0].n, 3);
    assert_int_equal(b->ops[1].col, 1);
    assert_int_equal(b->ops[1].n, -12);
    assert_string_equal(tuples(b, 1), "5;");
    assert_int_equal(res.nmatched, 1);
    b = expect_batch(s, &res,
                     "UPDATE DELAYED counters SET hits = hits + 1 WHERE id IN ('5', "
                     "-7, 0x41, X'4243', 'it''s', 'a\\\\b\\n')");
    assert_int_equal(b->nrows, 6);
    assert_string_equal(tuples(b, 1), "5;-7;A;BC;it's;a\\b\n;");
    b = expect_batch(s, &res,
                     "UPDATE DELAYED pages SET views = views + 1 WHERE page = '/x' "
                     "AND day = '2026-11-30'");
    assert_string_equal(tuples(b, 2), "2026-11-30|/x;"); /* in the rule's key order */
    result_free(&res);
    mr_rules_scratch_free(s);
}

static void reads_sets_and_deletes(void **state)
{
    (void)state;
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    const mr_dmem_batch *b = expect_batch(s, &res,
                                          "UPDATE DELAYED counters SET note = 'x''y', "
                                          "misses = -40, hits = hits + 1 WHERE id = 2");
    assert_int_equal(b->nops, 3);
    assert_int_equal(b->ops[0].op, MR_DMEM_SET_TEXT);
    assert_int_equal(b->ops[0].col, 2); /* after the two counters */
    assert_memory_equal(b->text.data + b->ops[0].off, "x'y", 3);
    assert_int_equal(b->ops[0].len, 3);
    assert_int_equal(b->ops[1].op, MR_DMEM_SET_INT);
    assert_int_equal(b->ops[1].col, 1);
    assert_int_equal(b->ops[1].n, -40);
    b = expect_batch(s, &res, "DELETE DELAYED FROM counters WHERE id IN (1, 2)");
    assert_true(b->del);
    assert_int_equal(b->nops, 0);
    assert_int_equal(b->nrows, 2);
    char *ex = explain_text(rs, &CTX, "DELETE DELAYED FROM counters WHERE id IN (1, 2)");
    assert_non_null(strstr(ex, "action: delayed memory\nkeys: 2"));
    free(ex);
    result_free(&res);
    mr_rules_scratch_free(s);
}

static void expect_refused(const mr_stmt_ctx *ctx, const char *sql, const char *want)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, ctx, s, &res);
    if (res.action != MR_ACT_BLOCK || !res.message || strncmp(res.message, want, strlen(want)))
        fail_msg("statement: %s\nwanted refusal: %s\ngot action %d: %s", sql, want, res.action,
                 res.message ? res.message : "(none)");
    assert_int_equal(res.err_code, 1235);
    result_free(&res);
    mr_rules_scratch_free(s);
}

static void refusals(void **state)
{
    (void)state;
    static const mr_stmt_ctx prep = {.schema = "test", .prepared = true};
    expect_refused(&prep, "UPDATE DELAYED counters SET nope = nope + ? WHERE id = ?",
                   "UPDATE DELAYED on test.counters: nope is not one of the rule's columns");
    expect_refused(&CTX, "SELECT 1; UPDATE DELAYED counters SET hits = hits + 1 WHERE id = 1",
                   "DELAYED on test.counters (mode = memory) is not taken in a multi-statement "
                   "query; send it on its own");
    expect_refused(&CTX, "UPDATE DELAYED counters SET hits = 4 WHERE id = 1",
                   "UPDATE DELAYED on test.counters: SET hits = literal needs hits in the rule's "
                   "set_columns");
    expect_refused(&CTX, "UPDATE DELAYED counters SET misses = 1.5 WHERE id = 1",
                   "UPDATE DELAYED on test.counters: misses is a counter column, so SET misses "
                   "= takes a whole number");
    expect_refused(&CTX, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = b'1'",
                   "DELAYED in mode = memory: bit literals are not taken");
    expect_refused(&CTX, "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = N'1'",
                   "DELAYED in mode = memory: a string with a charset introducer");
    expect_refused(&CTX,
                   "UPDATE DELAYED counters SET hits = hits + 9223372036854775808 WHERE "
                   "id = 1",
                   "UPDATE DELAYED: 9223372036854775808 is out of range for a delta");
    expect_refused(&CTX, "UPDATE DELAYED counters SET note = 'a', note = 'b' WHERE id = 1",
                   "UPDATE DELAYED: note is set twice");
}

/* PREPARE: a stand-in with the same `?`; EXECUTE: the values bound to them. */
static void prepared(void **state)
{
    (void)state;
    static const mr_stmt_ctx prep = {.schema = "test", .prepared = true};
    const char *sql = "UPDATE DELAYED counters SET hits = hits - ?, note = ? WHERE id IN (?, ?)";
    expect_sent(rs, &prep, sql, MR_ACT_REWRITE, "DO ?, ?, ?, ?");
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, &prep, s, &res);
    assert_true(res.dmem_prepare);
    assert_int_equal(res.dmem_nparams, 4);
    expect_sent(rs, &prep, "DELETE DELAYED FROM counters WHERE id = 5", MR_ACT_REWRITE, "DO 0");
    mr_exec_param v[4] = {{.kind = MR_EXEC_PARAM_INT, .n = 7},
                          {.kind = MR_EXEC_PARAM_TEXT, .p = "a'b", .len = 3},
                          {.kind = MR_EXEC_PARAM_INT, .n = -3},
                          {.kind = MR_EXEC_PARAM_TEXT, .p = "9", .len = 1}};
    mr_exec_params ps = {v, 4};
    mr_stmt_ctx exec = prep;
    exec.params = &ps;
    const mr_dmem_batch *b = NULL;
    apply_ctx(rs, sql, &exec, s, &res);
    assert_int_equal(res.action, MR_ACT_DELAYED_MEMORY);
    b = res.dmem;
    assert_int_equal(b->ops[0].n, -7);
    assert_int_equal(b->ops[1].op, MR_DMEM_SET_TEXT);
    assert_memory_equal(b->text.data + b->ops[1].off, "a'b", 3);
    assert_string_equal(tuples(b, 1), "-3;9;");
    v[0] = (mr_exec_param){.kind = MR_EXEC_PARAM_TEXT, .p = "2.5", .len = 3};
    apply_ctx(rs, sql, &exec, s, &res);
    assert_int_equal(res.action, MR_ACT_BLOCK);
    assert_non_null(strstr(res.message, "parameter 1 is not a whole number"));
    v[0] = (mr_exec_param){.kind = MR_EXEC_PARAM_INT, .n = 1};
    v[3] = (mr_exec_param){.kind = MR_EXEC_PARAM_NULL};
    apply_ctx(rs, sql, &exec, s, &res);
    assert_int_equal(res.action, MR_ACT_BLOCK);
    assert_non_null(strstr(res.message, "parameter 4 is NULL"));
    ps.n = 3;
    apply_ctx(rs, sql, &exec, s, &res);
    assert_non_null(strstr(res.message, "parameter 4 has no value"));
    result_free(&res);
    mr_rules_scratch_free(s);
}

static void loads(void **state)
{
    (void)state;
    const mr_delayed_def *d = mr_ruleset_rule(rs, 0)->delayed;
    assert_int_equal(d->mode, MR_DELAYED_MEMORY);
    assert_int_equal(d->memory_max_keys, 50);
    assert_int_equal(d->flush_early, 7);
    assert_int_equal(d->nset_columns, 2);
    assert_int_equal(mr_dmem_columns(d), 3); /* misses is both: counted once */
    assert_string_equal(mr_dmem_column(d, 2), "note");
    assert_null(mr_dmem_column(d, 3));
    d = mr_ruleset_rule(rs, 1)->delayed;
    assert_int_equal(d->memory_max_keys, 1000000);
    assert_int_equal(d->flush_early, 0);
}

/* ---- the flusher's statements ---------------------------------------------------------- */

/* A key tuple of one value, encoded. */
static size_t key1(char *buf, const char *v)
{
    uint32_t n = (uint32_t)strlen(v);
    memcpy(buf, &n, 4);
    memcpy(buf + 4, v, n);
    return 4 + n;
}

static const mr_delayed_def *def_of(size_t i) { return mr_ruleset_rule(rs, i)->delayed; }

static void sql_delete_and_upsert(void **state)
{
    (void)state;
    char k1[32], k2[32];
    size_t n1 = key1(k1, "5"), n2 = key1(k2, "it's\\");
    mr_dmem_val v1[3] = {{.op = MR_DMEM_VAL_ADD, .n = 3}, {.op = MR_DMEM_VAL_NONE}, {0}};
    mr_dmem_val v2[3] = {{.op = MR_DMEM_VAL_ADD, .n = -1}, {.op = MR_DMEM_VAL_ADD, .n = 2}, {0}};
    mr_dmem_row rows[2] = {{k1, (uint32_t)n1, false, v1}, {k2, (uint32_t)n2, true, v2}};
    mr_buf b;
    mr_buf_init(&b);
    assert_true(mr_dmem_sql_delete(&b, def_of(0), rows, 2));
    mr_buf_put_u8(&b, 0);
    assert_string_equal((char *)b.data, "DELETE FROM `test`.`counters` WHERE (`id`) IN (('5'), "
                                        "('it\\'s\\\\'))");
    mr_buf_reset(&b);
    assert_int_equal(mr_dmem_shape(def_of(0), v1), mr_dmem_shape(def_of(0), v2));
    assert_true(mr_dmem_sql_upsert(&b, def_of(0), rows, 2, MR_DMEM_SYNTAX_VALUES));
    mr_buf_put_u8(&b, 0);
    assert_string_equal((char *)b.data,
                        "INSERT INTO `test`.`counters` (`id`, `hits`, `misses`) VALUES ('5', 3, "
                        "0), ('it\\'s\\\\', -1, 2) ON DUPLICATE KEY UPDATE `hits` = `hits` + "
                        "VALUES(`hits`), `misses` = `misses` + VALUES(`misses`)");
    mr_buf_reset(&b);
    assert_true(mr_dmem_sql_upsert(&b, def_of(0), rows, 1, MR_DMEM_SYNTAX_ROW_ALIAS));
    mr_buf_put_u8(&b, 0);
    assert_string_equal((char *)b.data,
                        "INSERT INTO `test`.`counters` (`id`, `hits`, `misses`) VALUES ('5', 3, "
                        "0) AS `d` ON DUPLICATE KEY UPDATE `hits` = `hits` + `d`.`hits`, "
                        "`misses` = `misses` + `d`.`misses`");
    mr_buf_free(&b);
}

static void sql_sets_and_update(void **state)
{
    (void)state;
    char k1[32], k2[32];
    size_t n1 = key1(k1, "1"), n2 = key1(k2, "2");
    mr_dmem_val v1[3] = {{.op = MR_DMEM_VAL_ADD, .n = 1},
                         {.op = MR_DMEM_VAL_INT, .n = 100},
                         {.op = MR_DMEM_VAL_TEXT, .text = "a\nb", .len = 3}};
    mr_dmem_val v2[3] = {{.op = MR_DMEM_VAL_ADD, .n = 4},
                         {.op = MR_DMEM_VAL_INT, .n = 7},
                         {.op = MR_DMEM_VAL_TEXT, .text = "z", .len = 1}};
    mr_dmem_val v3[3] = {{.op = MR_DMEM_VAL_ADD, .n = 4}, {0}, {0}};
    assert_int_not_equal(mr_dmem_shape(def_of(0), v1), mr_dmem_shape(def_of(0), v3));
    mr_dmem_row rows[2] = {{k1, (uint32_t)n1, false, v1}, {k2, (uint32_t)n2, false, v2}};
    mr_buf b;
    mr_buf_init(&b);
    assert_true(mr_dmem_sql_update(&b, def_of(0), rows, 2));
    mr_buf_put_u8(&b, 0);
    assert_string_equal((char *)b.data,
                        "UPDATE `test`.`counters` AS `m` JOIN (SELECT `g`.`id`, SUM(`r`.`hits`) "
                        "AS `hits`, MAX(`r`.`misses`) AS `misses`, MAX(`r`.`note`) AS `note` "
                        "FROM `test`.`counters` AS `g` JOIN (SELECT '1' AS `id`, 1 AS `hits`, "
                        "100 AS `misses`, 'a\\nb' AS `note` UNION ALL SELECT '2', 4, 7, 'z') AS "
                        "`r` USING (`id`) GROUP BY `g`.`id`) "
                        "AS `d` USING (`id`) SET "
                        "`m`.`hits` = `m`.`hits` + `d`.`hits`, `m`.`misses` = `d`.`misses`, "
                        "`m`.`note` = `d`.`note` WHERE (`m`.`id`) IN (('1'), ('2'))");
    mr_buf_reset(&b);
    mr_dmem_row r3 = {k1, (uint32_t)n1, false, v3};
    assert_true(mr_dmem_sql_upsert(&b, def_of(0), &r3, 1, MR_DMEM_SYNTAX_VALUES));
    mr_buf_put_u8(&b, 0);
    /* note untouched: left out, so a duplicate keeps it and a new row gets its default */
    assert_string_equal((char *)b.data,
                        "INSERT INTO `test`.`counters` (`id`, `hits`, `misses`) VALUES ('1', 4, "
                        "0) ON DUPLICATE KEY UPDATE `hits` = `hits` + VALUES(`hits`), `misses` = "
                        "`misses` + VALUES(`misses`)");
    assert_true(mr_dmem_row_writes(def_of(0), &r3));
    mr_dmem_val none[3] = {{0}, {0}, {0}};
    mr_dmem_row r4 = {k1, (uint32_t)n1, true, none};
    assert_false(mr_dmem_row_writes(def_of(0), &r4));
    mr_buf_free(&b);
}

static void sql_two_keys(void **state)
{
    (void)state;
    char k[64];
    size_t n = key1(k, "2026-11-30");
    n += key1(k + n, "/a");
    mr_dmem_val v[1] = {{.op = MR_DMEM_VAL_ADD, .n = 9}};
    mr_dmem_row row = {k, (uint32_t)n, false, v};
    mr_buf b;
    mr_buf_init(&b);
    assert_true(mr_dmem_sql_upsert(&b, def_of(1), &row, 1, MR_DMEM_SYNTAX_VALUES));
    mr_buf_put_u8(&b, 0);
    assert_string_equal((char *)b.data,
                        "INSERT INTO `test`.`pages` (`day`, `page`, `views`) VALUES "
                        "('2026-11-30', '/a', 9) ON DUPLICATE KEY UPDATE `views` = `views` + "
                        "VALUES(`views`)");
    mr_buf_free(&b);
}

static void syntax_by_version(void **state)
{
    (void)state;
    assert_int_equal(mr_dmem_syntax_for("10.11.19-MariaDB-0+deb12u1", 101119),
                     MR_DMEM_SYNTAX_VALUES);
    assert_int_equal(mr_dmem_syntax_for("11.4.2-MariaDB", 110402), MR_DMEM_SYNTAX_VALUES);
    assert_int_equal(mr_dmem_syntax_for("8.0.19", 80019), MR_DMEM_SYNTAX_VALUES);
    assert_int_equal(mr_dmem_syntax_for("8.0.20", 80020), MR_DMEM_SYNTAX_ROW_ALIAS);
    assert_int_equal(mr_dmem_syntax_for("8.4.3", 80403), MR_DMEM_SYNTAX_ROW_ALIAS);
    assert_int_equal(mr_dmem_syntax_for("5.7.44-log", 50744), MR_DMEM_SYNTAX_VALUES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_adds),
        cmocka_unit_test(reads_sets_and_deletes),
        cmocka_unit_test(refusals),
        cmocka_unit_test(loads),
        cmocka_unit_test(prepared),
        cmocka_unit_test(sql_delete_and_upsert),
        cmocka_unit_test(sql_sets_and_update),
        cmocka_unit_test(sql_two_keys),
        cmocka_unit_test(syntax_by_version),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
