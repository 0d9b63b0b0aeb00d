/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_delayed_width.c - column ranges read from information_schema types
 * (schema/range.h) and UPDATE DELAYED values wider than their column
 * refused at statement time (delayed/width.h): deltas and SET literals,
 * staged and memory mode, rules with and without key, executed `?` values
 * of memory statements, and everything let through when the range is not
 * known (schema not loaded, other types, strings, `?` in staged mode).
 */
#include "test_rules.h"

#include "myrewrite/delayed/mem.h"
#include "myrewrite/schema/desc.h"
#include "myrewrite/schema/range.h"

static void range_of(const char *data_type, const char *column_type, const char *lo, const char *hi,
                     const char *width)
{
    mr_col_range r;
    mr_range_read(data_type, column_type, &r);
    if (!lo) {
        assert_int_equal(r.kind, MR_RANGE_NONE);
        return;
    }
    assert_int_not_equal(r.kind, MR_RANGE_NONE);
    assert_string_equal(r.type, column_type);
    assert_string_equal(r.lo, lo);
    assert_string_equal(r.hi, hi);
    assert_string_equal(r.width, width);
}

static void ranges(void **state)
{
    (void)state;
    range_of("tinyint", "tinyint(4)", "128", "127", "255");
    range_of("tinyint", "tinyint(3) unsigned", "0", "255", "255");
    range_of("smallint", "smallint(6)", "32768", "32767", "65535");
    range_of("mediumint", "mediumint(8) unsigned zerofill", "0", "16777215", "16777215");
    range_of("int", "int(11)", "2147483648", "2147483647", "4294967295");
    range_of("INT", "INT(10) UNSIGNED", "0", "4294967295", "4294967295");
    range_of("bigint", "bigint(20)", "9223372036854775808", "9223372036854775807",
             "18446744073709551615");
    range_of("bigint", "bigint(20) unsigned", "0", "18446744073709551615", "18446744073709551615");
    range_of("decimal", "decimal(5,2)", "999", "999", "1999");
    range_of("decimal", "decimal(3,0)", "999", "999", "1998");
    range_of("decimal", "decimal(1,0)", "9", "9", "18");
    range_of("decimal", "decimal(2,2)", "0", "0", "1");
    range_of("decimal", "decimal(4,1) unsigned", "0", "999", "999");
    range_of("decimal", "decimal(10)", "9999999999", "9999999999", "19999999998");
    range_of("float", "float", NULL, NULL, NULL);
    /* kinds without a range, read for the key values of DELAYED statements */
    mr_col_range r;
    mr_range_read("varchar", "varchar(10)", &r);
    assert_int_equal(r.kind, MR_RANGE_CHAR);
    assert_int_equal(r.length, 10);
    mr_range_read("text", "text", &r);
    assert_int_equal(r.kind, MR_RANGE_CHAR);
    assert_int_equal(r.length, 65535);
    mr_range_read("date", "date", &r);
    assert_int_equal(r.kind, MR_RANGE_DATE);
    mr_range_read("datetime", "datetime(3)", &r);
    assert_int_equal(r.kind, MR_RANGE_DATETIME);
    assert_int_equal(r.scale, 3);
    mr_range_read("decimal", "decimal(6,2) unsigned", &r);
    assert_int_equal(r.scale, 2);
    assert_int_equal(mr_range_value_fits(&(mr_col_range){.kind = MR_RANGE_CHAR}, false, "5", 1),
                     MR_FIT_UNSURE);
    range_of("double", "double", NULL, NULL, NULL);
    range_of("bit", "bit(8)", NULL, NULL, NULL);
    range_of("decimal", "decimal", NULL, NULL, NULL);
    range_of(NULL, NULL, NULL, NULL, NULL);
}

static void fits(void **state)
{
    (void)state;
    mr_col_range i, u, d;
    mr_range_read("int", "int(11)", &i);
    mr_range_read("int", "int(10) unsigned", &u);
    mr_range_read("decimal", "decimal(5,2)", &d);
    assert_int_equal(mr_range_delta_fits(&i, "4294967295", 10), MR_FIT_YES);
    assert_int_equal(mr_range_delta_fits(&i, "4294967296", 10), MR_FIT_NO);
    assert_int_equal(mr_range_delta_fits(&i, "0004294967295", 13), MR_FIT_YES);
    assert_int_equal(mr_range_delta_fits(&i, "9223372036854775807", 19), MR_FIT_NO);
    assert_int_equal(mr_range_delta_fits(&i, "99999999999999999999999", 23), MR_FIT_NO);
    assert_int_equal(mr_range_delta_fits(&i, "1e3", 3), MR_FIT_UNSURE);
    assert_int_equal(mr_range_value_fits(&i, true, "2147483648", 10), MR_FIT_YES);
    assert_int_equal(mr_range_value_fits(&i, true, "2147483649", 10), MR_FIT_NO);
    assert_int_equal(mr_range_value_fits(&i, false, "2147483648", 10), MR_FIT_NO);
    assert_int_equal(mr_range_value_fits(&u, true, "1", 1), MR_FIT_NO);
    assert_int_equal(mr_range_value_fits(&u, true, "0", 1), MR_FIT_YES);
    assert_int_equal(mr_range_value_fits(&d, false, "999.99", 6), MR_FIT_UNSURE);
    assert_int_equal(mr_range_value_fits(&d, false, "1000.0", 6), MR_FIT_NO);
    assert_int_equal(mr_range_value_fits(&d, false, "1000.", 5), MR_FIT_NO);
    assert_int_equal(mr_range_value_fits(&d, false, "1e9", 3), MR_FIT_UNSURE);
    assert_int_equal(mr_range_value_fits(&d, false, ".5", 2), MR_FIT_UNSURE);
    assert_int_equal(mr_range_delta_fits(&d, "1999", 4), MR_FIT_YES);
    assert_int_equal(mr_range_delta_fits(&d, "2000", 4), MR_FIT_NO);
}

/* A loaded description answers a column's range by name, any case. */
static void desc_ranges(void **state)
{
    (void)state;
    mr_table_desc *td = mr_td_new("test", "u");
    mr_td_set_engine(td, "InnoDB");
    assert_true(mr_td_add_column(td, "id", "NO"));
    mr_td_set_column_type(td, "int", "int(11)");
    assert_true(mr_td_add_column(td, "Name", "YES"));
    mr_td_set_column_type(td, "varchar", "varchar(20)");
    mr_col_range r;
    assert_int_equal(mr_td_column_range(td, "ID", &r), MR_RANGE_KNOWN);
    assert_string_equal(r.hi, "2147483647");
    assert_int_equal(mr_td_column_range(td, "name", &r), MR_RANGE_KNOWN);
    assert_int_equal(r.kind, MR_RANGE_CHAR);
    assert_true(mr_td_add_column(td, "f", "YES"));
    mr_td_set_column_type(td, "double", "double");
    assert_int_equal(mr_td_column_range(td, "f", &r), MR_RANGE_UNKNOWN);
    assert_int_equal(mr_td_column_range(td, "nope", &r), MR_RANGE_NO_COLUMN);
    mr_td_free(td);
}

/* ---- the statement side ---------------------------------------------------------- */

static const char RULES[] =
    "[delayed s]\ntable = test.s\nkey = id\ncolumns = n, b, t\nset_columns = label, t\n"
    "[delayed m]\ntable = test.m\nkey = id\ncolumns = n\nset_columns = t\nmode = memory\n"
    "[delayed k]\ntable = test.k\ncolumns = n\n";

/* Columns of every table: n INT, b BIGINT UNSIGNED, t TINYINT, label VARCHAR;
 * test.later is not loaded yet. */
static mr_range_status fake_range(void *arg, const char *schema, const char *table,
                                  const char *column, mr_col_range *out)
{
    (void)arg;
    (void)schema;
    if (strcmp(table, "later") == 0)
        return MR_RANGE_UNKNOWN;
    if (strcasecmp(column, "n") == 0)
        mr_range_read("int", "int(11)", out);
    else if (strcasecmp(column, "b") == 0)
        mr_range_read("bigint", "bigint(20) unsigned", out);
    else if (strcasecmp(column, "t") == 0)
        mr_range_read("tinyint", "tinyint(4)", out);
    else if (strcasecmp(column, "label") == 0)
        mr_range_read("varchar", "varchar(10)", out);
    else
        return MR_RANGE_NO_COLUMN;
    return out->kind == MR_RANGE_NONE ? MR_RANGE_UNKNOWN : MR_RANGE_KNOWN;
}

static mr_key_status fake_key(void *arg, const char *schema, const char *table, mr_row_key *out)
{
    (void)arg;
    (void)schema;
    (void)table;
    memset(out, 0, sizeof *out);
    out->status = MR_KEY_FOUND;
    out->primary = true;
    out->ncols = 1;
    strcpy(out->cols[0], "id");
    return out->status;
}

static const mr_schema_source SRC = {.row_key = fake_key, .column_range = fake_range};
static const mr_stmt_ctx CTX = {.schema = "test", .schema_src = &SRC};

static void refused(const mr_ruleset *rs, const mr_stmt_ctx *ctx, const char *sql, const char *want)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, ctx, s, &res);
    if (res.action != MR_ACT_BLOCK || !res.message || !strstr(res.message, want))
        fail_msg("statement: %s\nwanted refusal holding: %s\ngot action %d: %s", sql, want,
                 res.action, res.message ? res.message : "(none)");
    assert_int_equal(res.err_code, 1235);
    assert_string_equal(res.sqlstate, "42000");
    assert_non_null(strstr(res.message, "was not staged"));
    result_free(&res);
    mr_rules_scratch_free(s);
}

static void accepted(const mr_ruleset *rs, const mr_stmt_ctx *ctx, const char *sql, mr_action want)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, ctx, s, &res);
    if (res.action != want)
        fail_msg("statement: %s\nwanted action %d, got %d: %s", sql, want, res.action,
                 res.message ? res.message : "(none)");
    result_free(&res);
    mr_rules_scratch_free(s);
}

static void staged(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(RULES);
    refused(rs, &CTX, "UPDATE DELAYED s SET n = n + 9223372036854775807 WHERE id = 1",
            "myrewrite: UPDATE DELAYED on test.s: the delta 9223372036854775807 is wider than "
            "column n can span (int(11): -2147483648 to 2147483647, a width of 4294967295); "
            "the statement was not staged");
    refused(rs, &CTX, "UPDATE DELAYED s SET n = n - 4294967296 WHERE id = 1",
            "the delta -4294967296 is wider");
    refused(rs, &CTX, "UPDATE DELAYED s SET n = n + 1, t = t + 256 WHERE id = 1",
            "column t can span (tinyint(4): -128 to 127");
    refused(rs, &CTX, "UPDATE DELAYED s SET b = b + 18446744073709551616 WHERE id = 1",
            "column b can span (bigint(20) unsigned: 0 to 18446744073709551615");
    refused(rs, &CTX, "UPDATE DELAYED s SET t = 128 WHERE id = 1",
            "SET t = 128 is out of range for column t (tinyint(4): -128 to 127)");
    refused(rs, &CTX, "UPDATE DELAYED s SET t = - /* c */ 129 WHERE id IN (1, 2)",
            "SET t = -129 is out of range");
    accepted(rs, &CTX, "UPDATE DELAYED s SET n = n + 4294967295 WHERE id = 1", MR_ACT_REWRITE);
    accepted(rs, &CTX,
             "UPDATE DELAYED s SET b = b + 18446744073709551615, t = t - 255 "
             "WHERE id = 1",
             MR_ACT_REWRITE);
    accepted(rs, &CTX, "UPDATE DELAYED s SET t = -128, label = 'x' WHERE id = 1", MR_ACT_REWRITE);
    /* not known: a string, another type, a `?` the proxy does not see, no source */
    accepted(rs, &CTX, "UPDATE DELAYED s SET t = '300' WHERE id = 1", MR_ACT_REWRITE);
    accepted(rs, &CTX, "UPDATE DELAYED s SET label = 99999999999999999999 WHERE id = 1",
             MR_ACT_REWRITE);
    static const mr_stmt_ctx prep = {.schema = "test", .prepared = true, .schema_src = &SRC};
    accepted(rs, &prep, "UPDATE DELAYED s SET n = n + ? WHERE id = ?", MR_ACT_REWRITE);
    refused(rs, &prep, "UPDATE DELAYED s SET n = n + 9999999999 WHERE id = ?",
            "the delta 9999999999 is wider");
    static const mr_stmt_ctx bare = {.schema = "test"};
    accepted(rs, &bare, "UPDATE DELAYED s SET n = n + 9223372036854775807 WHERE id = 1",
             MR_ACT_REWRITE);
    static const mr_schema_source keys_only = {.row_key = fake_key};
    static const mr_stmt_ctx old = {.schema = "test", .schema_src = &keys_only};
    accepted(rs, &old, "UPDATE DELAYED s SET n = n + 9223372036854775807 WHERE id = 1",
             MR_ACT_REWRITE);
    /* a rule without key takes both its key and its ranges from the schema */
    refused(rs, &CTX, "UPDATE DELAYED k SET n = n + 5000000000 WHERE id = 1",
            "UPDATE DELAYED on test.k: the delta 5000000000 is wider");
    accepted(rs, &CTX, "UPDATE DELAYED k SET n = n + 5 WHERE id = 1", MR_ACT_REWRITE);
    mr_ruleset_free(rs);
}

static void memory(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(RULES);
    refused(rs, &CTX, "UPDATE DELAYED m SET n = n + 9223372036854775807 WHERE id = 1",
            "the delta 9223372036854775807 is wider than column n can span (int(11): "
            "-2147483648 to 2147483647, a width of 4294967295); the statement was not staged "
            "(mode = memory)");
    refused(rs, &CTX, "UPDATE DELAYED m SET t = 200 WHERE id = 1",
            "SET t = 200 is out of range for column t");
    accepted(rs, &CTX, "UPDATE DELAYED m SET n = n + 7, t = 100 WHERE id = 1",
             MR_ACT_DELAYED_MEMORY);
    /* prepared: the literals at PREPARE, the executed values at EXECUTE */
    static const mr_stmt_ctx prep = {.schema = "test", .prepared = true, .schema_src = &SRC};
    refused(rs, &prep, "UPDATE DELAYED m SET n = n + 8589934592 WHERE id = ?",
            "the delta 8589934592 is wider");
    const char *sql = "UPDATE DELAYED m SET n = n - ?, t = ? WHERE id = ?";
    accepted(rs, &prep, sql, MR_ACT_REWRITE);
    mr_exec_param v[3] = {{.kind = MR_EXEC_PARAM_INT, .n = INT64_MIN},
                          {.kind = MR_EXEC_PARAM_INT, .n = 1},
                          {.kind = MR_EXEC_PARAM_INT, .n = 1}};
    mr_exec_params ps = {v, 3};
    mr_stmt_ctx exec = prep;
    exec.params = &ps;
    v[0].n = 4294967296;
    refused(rs, &exec, sql, "the delta -4294967296 (parameter 1) is wider than column n");
    v[0].n = -4294967295;
    accepted(rs, &exec, sql, MR_ACT_DELAYED_MEMORY);
    v[1].n = -129;
    refused(rs, &exec, sql, "SET t = -129 (parameter 2) is out of range for column t");
    v[1] = (mr_exec_param){.kind = MR_EXEC_PARAM_TEXT, .p = "300", .len = 3};
    refused(rs, &exec, sql, "SET t = 300 (parameter 2) is out of range");
    v[1] = (mr_exec_param){.kind = MR_EXEC_PARAM_TEXT, .p = "-12", .len = 3};
    accepted(rs, &exec, sql, MR_ACT_DELAYED_MEMORY);
    mr_ruleset_free(rs);
}

/* Schema not loaded yet: accepted as before (the flush's dead-letter table
 * catches what the server refuses). */
static void not_loaded(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[delayed l]\ntable = test.later\nkey = id\ncolumns = n\n");
    accepted(rs, &CTX, "UPDATE DELAYED later SET n = n + 9223372036854775807 WHERE id = 1",
             MR_ACT_REWRITE);
    mr_ruleset_free(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ranges), cmocka_unit_test(fits),   cmocka_unit_test(desc_ranges),
        cmocka_unit_test(staged), cmocka_unit_test(memory), cmocka_unit_test(not_loaded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
