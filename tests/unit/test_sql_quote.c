/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sql_quote.c - names and string literals in the proxy's own SQL
 * (sql/quote.c), and the column types a staging table may copy
 * (sql/coltype.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/sql/coltype.h"
#include "myrewrite/sql/quote.h"

/* The buffer as a C string; freed by the caller with mr_buf_free. */
static const char *text(mr_buf *b)
{
    mr_buf_put(b, "", 1);
    return (const char *)b->data;
}

static void expect_ident(const char *name, const char *want)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_sql_put_ident(&b, name);
    assert_false(b.failed);
    assert_string_equal(text(&b), want);
    mr_buf_free(&b);
}

static void ident_backticks_doubled(void **state)
{
    (void)state;
    expect_ident("plain", "`plain`");
    expect_ident("a`b", "`a``b`");
    expect_ident("`", "````");
    expect_ident("c` INT) SELECT 1 id,v FROM secret.s #",
                 "`c`` INT) SELECT 1 id,v FROM secret.s #`");
    expect_ident("it's", "`it's`");
    expect_ident("caf\xc3\xa9", "`caf\xc3\xa9`");
}

static void ident_refused(void **state)
{
    (void)state;
    char why[80];
    assert_false(mr_sql_ident_ok("", 0, why, sizeof why));
    assert_string_equal(why, "an empty name");
    assert_false(mr_sql_ident_ok("a\0b", 3, why, sizeof why));
    assert_non_null(strstr(why, "NUL"));
    assert_false(mr_sql_ident_ok("a ", 2, why, sizeof why));
    char long_name[66];
    memset(long_name, 'x', 65);
    long_name[65] = '\0';
    assert_false(mr_sql_ident_ok(long_name, 65, why, sizeof why));
    assert_non_null(strstr(why, "64"));
    assert_true(mr_sql_ident_ok(long_name, 64, NULL, 0));
    /* 64 two-byte characters are 64 characters */
    char wide[129];
    for (int i = 0; i < 64; i++)
        memcpy(wide + 2 * i, "\xc3\xa9", 2);
    wide[128] = '\0';
    assert_true(mr_sql_ident_ok(wide, 128, NULL, 0));

    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "SELECT ");
    mr_sql_put_ident(&b, long_name);
    assert_true(b.failed); /* never sent */
    mr_buf_free(&b);
    mr_buf_init(&b);
    mr_sql_put_ident_n(&b, "a\0b", 3);
    assert_true(b.failed);
    mr_buf_free(&b);
}

static void ident_suffixed(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_sql_put_ident_suffixed(&b, "n`m", "_set");
    assert_string_equal(text(&b), "`n``m_set`");
    mr_buf_free(&b);
    char name[62];
    memset(name, 'y', 61);
    name[61] = '\0';
    mr_buf_init(&b);
    mr_sql_put_ident_suffixed(&b, name, "_set"); /* 65 characters */
    assert_true(b.failed);
    mr_buf_free(&b);
}

static void literal_escapes(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_sql_put_literal(&b, "it's \\ done");
    assert_string_equal(text(&b), "'it\\'s \\\\ done'");
    mr_buf_free(&b);
    mr_buf_init(&b);
    mr_sql_put_literal_n(&b, "a\0b\nc\rd\032e\"f`", 12);
    assert_string_equal(text(&b), "'a\\0b\\nc\\rd\\Ze\"f`'");
    mr_buf_free(&b);
    mr_buf_init(&b);
    mr_sql_put_literal(&b, "");
    assert_string_equal(text(&b), "''");
    mr_buf_free(&b);
}

static void coltypes_taken(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "int",
        "int(11)",
        "int(11) unsigned",
        "int(10) unsigned zerofill",
        "bigint(20)",
        "bigint",
        "decimal(10,2)",
        "varchar(20)",
        "char(1)",
        "varbinary(255)",
        "datetime(6)",
        "timestamp",
        "date",
        "text",
        "longblob",
        "enum('a','b')",
        "set('x','y''z')",
        "enum('a\\'b',' ) x')",
        "double",
        "float(7,4)",
        "bit(1)",
        "year(4)",
        "uuid",
        "inet6",
        "INT(11) UNSIGNED",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char why[120] = "";
        if (!mr_coltype_ok(ok[i], why, sizeof why))
            fail_msg("%s refused: %s", ok[i], why);
    }
}

static void coltypes_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "int)",
        "int(11)) SELECT 1",
        "int(11) unsigned, `x` int",
        "int NOT NULL",
        "varchar(20) CHARACTER SET latin1",
        "decimal(1,2,3)",
        "int(123456)",
        "int(a)",
        "enum",
        "enum(1)",
        "enum('a'",
        "enum('a') x",
        "date(1)",
        "geometry",
        "datetime /* mariadb-5.3 */",
        "int(11) unsigned #",
        "int\n",
        "int;DROP TABLE t",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char why[120] = "";
        if (mr_coltype_ok(bad[i], why, sizeof why))
            fail_msg("%s taken", bad[i]);
        assert_true(why[0] != '\0');
    }
}

static void collations(void **state)
{
    (void)state;
    assert_true(mr_collation_ok("utf8mb4_general_ci"));
    assert_true(mr_collation_ok("latin1_bin"));
    assert_false(mr_collation_ok(""));
    assert_false(mr_collation_ok("utf8mb4_bin, x INT"));
    assert_false(mr_collation_ok("a b"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ident_backticks_doubled),
        cmocka_unit_test(ident_refused),
        cmocka_unit_test(ident_suffixed),
        cmocka_unit_test(literal_escapes),
        cmocka_unit_test(coltypes_taken),
        cmocka_unit_test(coltypes_refused),
        cmocka_unit_test(collations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
