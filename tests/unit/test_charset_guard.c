/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for sql/charset_guard.c: unsafe collations and charset names, and
 * the SET statements that change a session's client character set. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/sql/charset_guard.h"
#include "myrewrite/sql/lexer.h"

static mr_charset_change change(const char *sql, const char **name)
{
    return mr_charset_statement(sql, strlen(sql), 0, name);
}

static void collations(void **state)
{
    (void)state;
    assert_string_equal(mr_charset_unsafe_collation(28), "gbk");
    assert_string_equal(mr_charset_unsafe_collation(87), "gbk");
    assert_string_equal(mr_charset_unsafe_collation(13), "sjis");
    assert_string_equal(mr_charset_unsafe_collation(1), "big5");
    assert_string_equal(mr_charset_unsafe_collation(95), "cp932");
    assert_string_equal(mr_charset_unsafe_collation(248), "gb18030");
    assert_string_equal(mr_charset_unsafe_collation(1052), "gbk");
    assert_null(mr_charset_unsafe_collation(8));   /* latin1_swedish_ci */
    assert_null(mr_charset_unsafe_collation(33));  /* utf8mb3_general_ci */
    assert_null(mr_charset_unsafe_collation(45));  /* utf8mb4_general_ci */
    assert_null(mr_charset_unsafe_collation(63));  /* binary */
    assert_null(mr_charset_unsafe_collation(255)); /* utf8mb4_0900_ai_ci */
    assert_null(mr_charset_unsafe_collation(0));
}

static void names(void **state)
{
    (void)state;
    assert_string_equal(mr_charset_unsafe_name("GBK", 3), "gbk");
    assert_string_equal(mr_charset_unsafe_name("Sjis", 4), "sjis");
    assert_null(mr_charset_unsafe_name("gbk_bin", 7));
    assert_null(mr_charset_unsafe_name("utf8mb4", 7));
    assert_null(mr_charset_unsafe_name("gb2312", 6)); /* trailing bytes >= 0xA1: safe */
    assert_null(mr_charset_unsafe_name("gb", 2));
}

static void set_names(void **state)
{
    (void)state;
    const char *n = "x";
    assert_int_equal(change("SET NAMES gbk", &n), MR_CHARSET_UNSAFE);
    assert_string_equal(n, "gbk");
    assert_int_equal(change("set names 'SJIS' collate sjis_bin", &n), MR_CHARSET_UNSAFE);
    assert_string_equal(n, "sjis");
    assert_int_equal(change("SET NAMES `big5`", &n), MR_CHARSET_UNSAFE);
    assert_int_equal(change("SET CHARACTER SET cp932", &n), MR_CHARSET_UNSAFE);
    assert_string_equal(n, "cp932");
    assert_int_equal(change("SET CHARSET gb18030", &n), MR_CHARSET_UNSAFE);
    assert_int_equal(change("SET NAMES utf8mb4", &n), MR_CHARSET_SAFE);
    assert_null(n);
    assert_int_equal(change("SET CHARACTER SET latin1", &n), MR_CHARSET_SAFE);
    /* a value the proxy cannot know is taken as unsafe */
    assert_int_equal(change("SET NAMES DEFAULT", &n), MR_CHARSET_UNSAFE);
    assert_string_equal(n, MR_CHARSET_UNKNOWN);
    assert_int_equal(change("SET NAMES DEFAULT; SET NAMES latin1", &n), MR_CHARSET_SAFE);
}

static void set_variable(void **state)
{
    (void)state;
    const char *n;
    assert_int_equal(change("SET character_set_client = gbk", &n), MR_CHARSET_UNSAFE);
    assert_int_equal(change("SET SESSION character_set_client := 'gbk'", &n), MR_CHARSET_UNSAFE);
    assert_int_equal(change("SET @@character_set_client = gbk", &n), MR_CHARSET_UNSAFE);
    assert_int_equal(change("SET @@session.character_set_client = sjis", &n), MR_CHARSET_UNSAFE);
    assert_int_equal(change("SET @@local.character_set_client = utf8mb4", &n), MR_CHARSET_SAFE);
    assert_int_equal(change("SET character_set_client = 28", &n), MR_CHARSET_UNSAFE);
    assert_int_equal(change("SET character_set_client = 45", &n), MR_CHARSET_SAFE);
    assert_int_equal(change("SET character_set_client = @saved", &n), MR_CHARSET_UNSAFE);
    assert_string_equal(n, MR_CHARSET_UNKNOWN);
    assert_int_equal(change("SET character_set_client = CONCAT('gb', 'k')", &n), MR_CHARSET_UNSAFE);
    assert_int_equal(change("SET GLOBAL character_set_client = @x", &n), MR_CHARSET_SAME);
    /* the server-wide default leaves this session as it is */
    assert_int_equal(change("SET GLOBAL character_set_client = gbk", &n), MR_CHARSET_SAME);
    assert_int_equal(change("SET @@global.character_set_client = gbk", &n), MR_CHARSET_SAME);
    assert_int_equal(change("SET GLOBAL x = 1, SESSION character_set_client = gbk", &n),
                     MR_CHARSET_UNSAFE);
    /* other variables and other statements */
    assert_int_equal(change("SET character_set_results = gbk", &n), MR_CHARSET_SAME);
    assert_int_equal(change("SET @x = 'gbk'", &n), MR_CHARSET_SAME);
    assert_int_equal(change("SELECT 'SET NAMES gbk'", &n), MR_CHARSET_SAME);
    assert_int_equal(change("SELECT names FROM t WHERE charset = 'gbk'", &n), MR_CHARSET_SAME);
    assert_int_equal(change("UPDATE t SET names = 'gbk'", &n), MR_CHARSET_SAME);
}

static void several_statements(void **state)
{
    (void)state;
    const char *n;
    assert_int_equal(change("SET NAMES gbk; SET NAMES utf8mb4", &n), MR_CHARSET_SAFE);
    assert_int_equal(change("SET NAMES utf8mb4; SELECT 1; SET NAMES gbk", &n), MR_CHARSET_UNSAFE);
    assert_int_equal(change("SET NAMES gbk; SET NAMES DEFAULT", &n), MR_CHARSET_UNSAFE);
    assert_string_equal(n, MR_CHARSET_UNKNOWN);
    assert_int_equal(change("SET autocommit = 1, NAMES gbk", &n), MR_CHARSET_UNSAFE);
    /* as mysqldump writes it */
    assert_int_equal(change("/*!40101 SET NAMES gbk */", &n), MR_CHARSET_UNSAFE);
    assert_int_equal(change("/*!40101 SET NAMES gbk */; /*!40101 SET NAMES utf8 */", &n),
                     MR_CHARSET_SAFE);
    assert_int_equal(change("SET NAMES /* why */ gbk", &n), MR_CHARSET_UNSAFE);
    assert_int_equal(change("SELECT 1 /*!40101 , 2 */", &n), MR_CHARSET_SAME);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(collations),         cmocka_unit_test(names),
        cmocka_unit_test(set_names),          cmocka_unit_test(set_variable),
        cmocka_unit_test(several_statements),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
