/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pool_kill.c - the KILL statements pool/kill.c takes (their kind and
 * number), those it leaves to the server, and the text written with
 * another id.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/pool/kill.h"
#include "myrewrite/sql/lexer.h"

static bool read_text(const char *sql, mr_pool_kill *k)
{
    return mr_pool_kill_read(sql, strlen(sql), 0, k);
}

static void taken(void **state)
{
    (void)state;
    static const struct {
        const char *sql;
        bool connection;
        uint32_t id;
    } cases[] = {
        {"KILL 12", true, 12},
        {"kill query 7", false, 7},
        {"KILL CONNECTION 4294967295", true, 4294967295u},
        {"KILL HARD QUERY 5", false, 5},
        {"KILL SOFT CONNECTION 5", true, 5},
        {"KILL SOFT 5", true, 5},
        {"  KILL /* cancel */ QUERY -- why\n 9", false, 9},
        {"KILL QUERY 9;", false, 9},
        {"KILL QUERY 9 ; ; ", false, 9},
        {"/*+ hint */ KILL 3", true, 3},
        {"KILL QUERY 007", false, 7},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mr_pool_kill k;
        assert_true(read_text(cases[i].sql, &k));
        assert_int_equal(k.connection, cases[i].connection);
        assert_int_equal(k.id, cases[i].id);
    }
}

static void left_alone(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "KILL",
        "KILL QUERY",
        "KILL QUERY ID 5", /* a query id, not a connection's */
        "KILL USER app",
        "KILL QUERY 4294967296", /* no thread id */
        "KILL QUERY 99999999999",
        "KILL QUERY 1.5",
        "KILL QUERY 1e3",
        "KILL QUERY 0x10",
        "KILL QUERY -5",
        "KILL QUERY '5'",
        "KILL QUERY 5 + 1",
        "KILL QUERY 5; SELECT 1", /* a second statement */
        "KILL /*!QUERY*/ 5",      /* an executable comment: the server's version decides */
        "KILL QUERY /*!50000 5*/",
        "/*!KILL QUERY 5*/",
        "KILL QUERY CONNECTION 5",
        "KILL HARD HARD 5",
        "KILL QUERY @id",
        "SELECT 1",
        "KILL QUERY 5 'x",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mr_pool_kill k;
        if (read_text(cases[i], &k))
            fail_msg("taken: %s", cases[i]);
    }
}

static void rewritten(void **state)
{
    (void)state;
    static const struct {
        const char *sql, *want;
    } cases[] = {
        {"KILL 12", "KILL 345"},
        {"kill /* x */ query 7;", "kill /* x */ query 345;"},
        {"KILL HARD CONNECTION 4294967295 -- end", "KILL HARD CONNECTION 345 -- end"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mr_pool_kill k;
        mr_buf b;
        assert_true(read_text(cases[i].sql, &k));
        mr_buf_init(&b);
        mr_pool_kill_rewrite(cases[i].sql, strlen(cases[i].sql), &k, 345, &b);
        assert_false(b.failed);
        assert_int_equal(b.len, strlen(cases[i].want));
        assert_memory_equal(b.data, cases[i].want, b.len);
        mr_buf_free(&b);
    }
}

/* Under NO_BACKSLASH_ESCAPES and ANSI_QUOTES the words are the same. */
static void lexer_flags(void **state)
{
    (void)state;
    mr_pool_kill k;
    const char *sql = "KILL \"QUERY\" 5";
    assert_false(mr_pool_kill_read(sql, strlen(sql), SQL_LEX_ANSI_QUOTES, &k));
    sql = "KILL QUERY 5";
    assert_true(mr_pool_kill_read(sql, strlen(sql),
                                  SQL_LEX_ANSI_QUOTES | SQL_LEX_NO_BACKSLASH_ESCAPES, &k));
    assert_int_equal(k.id, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(taken),
        cmocka_unit_test(left_alone),
        cmocka_unit_test(rewritten),
        cmocka_unit_test(lexer_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
