/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_delayed_keys.c - the key values of DELAYED statements judged against
 * their key column's type (delayed/key_literal.h): the forms taken per type,
 * the ones refused (never rounded into another row's key), IN lists, the
 * executed `?` of memory mode, and what is not judged (a type not read, a
 * table not loaded, a `?` not executed here).
 */
#include "test_rules.h"

#include "myrewrite/proto/stmt_execute.h"
#include "myrewrite/schema/desc.h"

static const char RULES[] = "[delayed i]\ntable = test.i\nkey = id\ncolumns = n\n"
                            "[delayed u]\ntable = test.u\nkey = id\ncolumns = n\n"
                            "[delayed d]\ntable = test.d\nkey = id\ncolumns = n\n"
                            "[delayed v]\ntable = test.v\nkey = id\ncolumns = n\n"
                            "[delayed t]\ntable = test.t\nkey = id\ncolumns = n\n"
                            "[delayed dt]\ntable = test.dt\nkey = id\ncolumns = n\n"
                            "[delayed f]\ntable = test.f\nkey = id\ncolumns = n\n"
                            "[delayed later]\ntable = test.later\nkey = id\ncolumns = n\n"
                            "[delayed im]\ntable = test.im\nkey = id\ncolumns = n\nmode = memory\n"
                            "[delayed vm]\ntable = test.vm\nkey = id\ncolumns = n\nmode = memory\n";

/* The key `id` of each table: its type by the table's name. */
static mr_range_status fake_range(void *arg, const char *schema, const char *table,
                                  const char *column, mr_col_range *out)
{
    (void)arg;
    (void)schema;
    static const struct {
        const char *table, *data_type, *column_type;
    } types[] = {
        {"i", "int", "int(11)"},
        {"im", "int", "int(11)"},
        {"u", "int", "int(10) unsigned"},
        {"d", "decimal", "decimal(6,2)"},
        {"v", "varchar", "varchar(4)"},
        {"vm", "varchar", "varchar(4)"},
        {"t", "date", "date"},
        {"dt", "datetime", "datetime(3)"},
        {"f", "double", "double"},
    };
    if (strcmp(column, "id") != 0)
        return MR_RANGE_NO_COLUMN;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(table, types[i].table) == 0) {
            mr_range_read(types[i].data_type, types[i].column_type, out);
            return out->kind == MR_RANGE_NONE ? MR_RANGE_UNKNOWN : MR_RANGE_KNOWN;
        }
    return MR_RANGE_UNKNOWN; /* test.later: not loaded yet */
}

static const mr_schema_source SRC = {.column_range = fake_range};
static const mr_stmt_ctx CTX = {.schema = "test", .schema_src = &SRC};

/* UPDATE DELAYED <table> SET n = n + 1 WHERE id <where>: taken (staged or
 * memory) when ok, else refused naming why. */
static void judge(const mr_stmt_ctx *ctx, const char *table, const char *where, bool ok,
                  const char *why)
{
    char sql[256];
    snprintf(sql, sizeof sql, "UPDATE DELAYED %s SET n = n + 1 WHERE id %s", table, where);
    mr_ruleset *rs = load_ok(RULES);
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, ctx, s, &res);
    bool taken = res.action == MR_ACT_REWRITE || res.action == MR_ACT_DELAYED_MEMORY;
    if (taken != ok || (!ok && (!res.message || !strstr(res.message, why) ||
                                !strstr(res.message, "Keys are taken as"))))
        fail_msg("%s\nwanted %s%s, got action %d: %s", sql,
                 ok ? "taken" : "refused: ", ok ? "" : why, res.action,
                 res.message ? res.message : "(none)");
    if (!ok)
        assert_int_equal(res.err_code, 1235);
    result_free(&res);
    mr_rules_scratch_free(s);
    mr_ruleset_free(rs);
}

static void integers(void **state)
{
    (void)state;
    judge(&CTX, "i", "= 5", true, NULL);
    judge(&CTX, "i", "= -5", true, NULL);
    judge(&CTX, "i", "= '5'", true, NULL);
    judge(&CTX, "i", "= '-2147483648'", true, NULL);
    judge(&CTX, "i", "= 0", true, NULL);
    judge(&CTX, "i", "= 1.5", false, "a fraction never equals an integer");
    judge(&CTX, "i", "= '4.6'", false, "a fraction never equals an integer");
    judge(&CTX, "i", "= 2.0", false, "ends in a zero");
    judge(&CTX, "i", "= 05", false, "leading zero");
    judge(&CTX, "i", "= -0", false, "-0 is another spelling of 0");
    judge(&CTX, "i", "= ' 4'", false, "not a plain number");
    judge(&CTX, "i", "= '+4'", false, "not a plain number");
    judge(&CTX, "i", "= '4abc'", false, "not a plain number");
    judge(&CTX, "i", "= 1e0", false, "not a plain number");
    judge(&CTX, "i", "= 0x05", false, "not a plain number");
    judge(&CTX, "i", "= 2147483648", false, "outside the column's range");
    judge(&CTX, "i", "= '1234567890123456'", false, "exact only to 15 digits");
    judge(&CTX, "u", "= 4294967295", true, NULL);
    judge(&CTX, "u", "= -1", false, "outside the column's range");
    judge(&CTX, "i", "IN (1, 2, 3)", true, NULL);
    judge(&CTX, "i", "IN (1, 2.5, 3)", false, "the key value 2.5 for id (int(11))");
    /* one row named twice: directly it changes once */
    judge(&CTX, "i", "IN (4, 8, 4)", false, "the IN list names it twice");
    judge(&CTX, "i", "IN (4, 8, '4')", false, "the IN list names it twice");
    judge(&CTX, "i", "IN (4, -4)", true, NULL);
}

static void decimals(void **state)
{
    (void)state;
    judge(&CTX, "d", "= 1.5", true, NULL);
    judge(&CTX, "d", "= 1.25", true, NULL);
    judge(&CTX, "d", "= -9999.99", true, NULL);
    judge(&CTX, "d", "= '3.1'", true, NULL);
    judge(&CTX, "d", "= 1.50", false, "ends in a zero");
    judge(&CTX, "d", "= 1.505", false, "more decimals than the column's scale");
    judge(&CTX, "d", "= 10000", false, "outside the column's range");
    judge(&CTX, "d", "= 1e1", false, "not a plain number");
}

static void strings(void **state)
{
    (void)state;
    judge(&CTX, "v", "= 'abcd'", true, NULL);
    judge(&CTX, "v", "= 'ABC '", true, NULL); /* the collation decides, as direct */
    judge(&CTX, "v", "= 'abcde'", false, "longer than the column");
    judge(&CTX, "v", "= 5", false, "not compared with a string as a string");
    judge(&CTX, "v", "= 0x61", false, "not compared with a string as a string");
    judge(&CTX, "vm", "= 'abcde'", true, NULL); /* memory: the strict flush refuses it */
    judge(&CTX, "vm", "= 5", false, "not compared with a string as a string");
    judge(&CTX, "v", "IN ('abc', 'ABC')", false, "the IN list names it twice");
    judge(&CTX, "v", "IN ('abc', 'abc ')", false, "the IN list names it twice");
    judge(&CTX, "vm", "IN ('ab', 'AB')", false, "the IN list names it twice");
    judge(&CTX, "v", "IN ('abc', 'abd')", true, NULL);
    judge(&CTX, "v", "= _binary'ABC'", false, "not compared with a string as a string");
    judge(&CTX, "v", "= _utf8mb4'ABC'", true, NULL);
    judge(&CTX, "v", "= N'ABC'", true, NULL);
}

static void dates(void **state)
{
    (void)state;
    judge(&CTX, "t", "= '2024-02-29'", true, NULL);
    judge(&CTX, "t", "= '2023-02-29'", false, "no real day");
    judge(&CTX, "t", "= '2024-1-2'", false, "not a quoted 'YYYY-MM-DD");
    judge(&CTX, "t", "= '2024-01-02 00:00:00'", false, "'YYYY-MM-DD' only");
    judge(&CTX, "t", "= 20240102", false, "not a quoted 'YYYY-MM-DD");
    judge(&CTX, "dt", "= '2024-01-02 03:04:05'", true, NULL);
    judge(&CTX, "dt", "= '2024-01-02 03:04:05.123'", true, NULL);
    judge(&CTX, "dt", "= '2024-01-02 03:04:05.1234'", false, "more fractional seconds");
    judge(&CTX, "dt", "= '2024-01-02 03:04:05.120'", false, "ends in a zero");
    judge(&CTX, "dt", "= '2024-01-02'", false, "with its time");
    judge(&CTX, "dt", "= '2024-01-02 24:00:00'", false, "no real time");
}

static void not_judged(void **state)
{
    (void)state;
    judge(&CTX, "f", "= 1.5", true, NULL);     /* DOUBLE: a type not read */
    judge(&CTX, "later", "= 1.5", true, NULL); /* not loaded yet */
    judge(&CTX, "i", "= ?", true, NULL);       /* staged text: a `?` is not seen */
    static const mr_stmt_ctx none = {.schema = "test"};
    judge(&none, "i", "= 1.5", true, NULL); /* no schema cache */
}

/* Memory mode: the executed values of a COM_STMT_EXECUTE. */
static void executed(void **state)
{
    (void)state;
    mr_exec_param v[1];
    mr_exec_params params = {v, 1};
    mr_stmt_ctx ctx = CTX;
    ctx.prepared = true;
    ctx.params = &params;
    v[0] = (mr_exec_param){.kind = MR_EXEC_PARAM_INT, .n = 7};
    judge(&ctx, "im", "= ?", true, NULL);
    v[0] = (mr_exec_param){.kind = MR_EXEC_PARAM_TEXT, .p = "1.5", .len = 3};
    judge(&ctx, "im", "= ?", false, "parameter 1 (1.5)");
    v[0] = (mr_exec_param){.kind = MR_EXEC_PARAM_TEXT, .p = "42", .len = 2};
    judge(&ctx, "im", "= ?", true, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(integers), cmocka_unit_test(decimals),   cmocka_unit_test(strings),
        cmocka_unit_test(dates),    cmocka_unit_test(not_judged), cmocka_unit_test(executed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
