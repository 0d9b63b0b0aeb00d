/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pool_hints.c - the session's own values put into a statement's text
 * (pool/hints.c, mr_pool_own_values): where each goes as (value+0),
 * where as COALESCE (a select list) and with the call's name (an item
 * alone), and the texts left alone; the words pool = statement refuses
 * (mr_pool_opens).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/pool/hints.h"

static const mr_pool_own OWN = {.connection_id = 12,
                                .row_count_known = true,
                                .row_count = -1,
                                .found_rows_known = true,
                                .found_rows = 7};

static void replaced(void **state)
{
    (void)state;
    static const struct {
        const char *sql, *want;
    } cases[] = {
        {"SELECT ROW_COUNT()", "SELECT COALESCE(-1,ROW_COUNT()) AS `ROW_COUNT()`"},
        {"select found_rows( ) , 1", "select COALESCE(7,found_rows( )) AS `found_rows( )` , 1"},
        {"SELECT DISTINCT FOUND_ROWS() FROM t",
         "SELECT DISTINCT COALESCE(7,FOUND_ROWS()) AS `FOUND_ROWS()` FROM t"},
        {"SELECT ROW_COUNT() AS rc", "SELECT COALESCE(-1,ROW_COUNT()) AS rc"},
        {"SELECT ROW_COUNT() + 1", "SELECT COALESCE(-1,ROW_COUNT()) + 1"},
        {"SELECT IF(1, ROW_COUNT(), 0)", "SELECT IF(1, COALESCE(-1,ROW_COUNT()), 0)"},
        {"SELECT ROW_COUNT(/*`*/)", "SELECT COALESCE(-1,ROW_COUNT(/*`*/)) AS `ROW_COUNT(/**/)`"},
        {"SELECT id FROM t WHERE id <= ROW_COUNT()", "SELECT id FROM t WHERE id <= (-1+0)"},
        {"UPDATE q SET owner = CONNECTION_ID() WHERE owner = 0",
         "UPDATE q SET owner = (12+0) WHERE owner = 0"},
        /* an expression, not a bare number: ORDER BY 3 is the third column */
        {"SELECT id FROM t ORDER BY ROW_COUNT()", "SELECT id FROM t ORDER BY (-1+0)"},
        {"SELECT id FROM t GROUP BY id, FOUND_ROWS()", "SELECT id FROM t GROUP BY id, (7+0)"},
        /* an executable comment's body, its wrapper (the version gate) kept */
        {"SELECT /*!ROW_COUNT()*/ AS rc", "SELECT /*!COALESCE(-1,ROW_COUNT())*/ AS rc"},
        {"SELECT /*!50100 CONNECTION_ID() */",
         "SELECT /*!50100 COALESCE(12,CONNECTION_ID()) AS `CONNECTION_ID()` */"},
        {"UPDATE q SET owner = /*M!100100 CONNECTION_ID()*/ WHERE owner = 0",
         "UPDATE q SET owner = /*M!100100 (12+0)*/ WHERE owner = 0"},
        {"SELECT 1 /*!, FOUND_ROWS() */",
         "SELECT 1 /*!, COALESCE(7,FOUND_ROWS()) AS `FOUND_ROWS()` */"},
        /* a space or a comment before ( is still the call, as direct */
        {"SELECT id FROM t WHERE id <= ROW_COUNT ()", "SELECT id FROM t WHERE id <= (-1+0)"},
        {"SELECT id FROM t WHERE id = FOUND_ROWS /**/ ()", "SELECT id FROM t WHERE id = (7+0)"},
        {"CREATE TABLE t2 AS SELECT CONNECTION_ID() AS c",
         "CREATE TABLE t2 AS SELECT COALESCE(12,CONNECTION_ID()) AS c"},
        {"SELECT * FROM t WHERE id IN (SELECT FOUND_ROWS())",
         "SELECT * FROM t WHERE id IN (SELECT COALESCE(7,FOUND_ROWS()) AS `FOUND_ROWS()`)"},
        /* a later statement reads what the earlier ones left: only CONNECTION_ID() */
        {"DELETE FROM t; SELECT ROW_COUNT(), CONNECTION_ID()",
         "DELETE FROM t; SELECT ROW_COUNT(), COALESCE(12,CONNECTION_ID()) AS `CONNECTION_ID()`"},
    };
    int bad = 0; /* each case said, then one failure */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mr_buf b;
        mr_buf_init(&b);
        bool done = mr_pool_own_values(cases[i].sql, strlen(cases[i].sql), 0, &OWN, &b);
        assert_false(b.failed);
        if (!done || b.len != strlen(cases[i].want) || memcmp(b.data, cases[i].want, b.len) != 0)
            bad++, print_error("%s -> %.*s, want %s\n", cases[i].sql, (int)b.len,
                               done ? (const char *)b.data : "", cases[i].want);
        mr_buf_free(&b);
    }
    if (bad)
        fail_msg("%d of the texts not as wanted", bad);
}

static void left_alone(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "SELECT 1",
        "SELECT ROW_COUNT",     /* a column of that name */
        "SELECT ROW_COUNT(1)",  /* the server's error stands */
        "SELECT 'ROW_COUNT()'", /* a string */
        "CREATE TRIGGER tr BEFORE INSERT ON q FOR EACH ROW SET NEW.owner = CONNECTION_ID()",
        "create or replace definer = `a`@`%` sql security invoker view v as select connection_id()",
        "CREATE DEFINER=CURRENT_USER PROCEDURE p() BEGIN SELECT 1; SELECT CONNECTION_ID(); END",
        "ALTER VIEW v AS SELECT CONNECTION_ID()",
        "SELECT CONNECTION_ID(); CREATE TRIGGER tr BEFORE INSERT ON q FOR EACH ROW "
        "SET NEW.owner = CONNECTION_ID()",
        "SELECT db.FOUND_ROWS()", /* a stored function */
        "SELECT id FROM t WHERE id = db . CONNECTION_ID()",
        "INSERT INTO t VALUES (1); SELECT ROW_COUNT()",
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mr_buf b;
        mr_buf_init(&b);
        if (mr_pool_own_values(cases[i], strlen(cases[i]), 0, &OWN, &b))
            bad++, print_error("%s -> %.*s, want it left alone\n", cases[i], (int)b.len,
                               (const char *)b.data);
        mr_buf_free(&b);
    }
    if (bad)
        fail_msg("%d of the texts not left alone", bad);
}

/* Values the session does not know are the server's. */
static void unknown_values(void **state)
{
    (void)state;
    mr_pool_own own = {.connection_id = 5};
    mr_buf b;
    mr_buf_init(&b);
    const char *sql = "SELECT ROW_COUNT(), FOUND_ROWS(), CONNECTION_ID()";
    assert_true(mr_pool_own_values(sql, strlen(sql), 0, &own, &b));
    const char *want = "SELECT ROW_COUNT(), FOUND_ROWS(), COALESCE(5,CONNECTION_ID()) AS "
                       "`CONNECTION_ID()`";
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    mr_buf_free(&b);
}

/* A prepare reading ROW_COUNT() or FOUND_ROWS() (each execute reads the
 * connection's): CONNECTION_ID() is put in at the prepare, so not one. */
static void reads_counts(void **state)
{
    (void)state;
    static const char *const yes[] = {
        "SELECT ROW_COUNT()", "SELECT id FROM t ORDER BY FOUND_ROWS()", "SELECT /*!ROW_COUNT()*/"};
    static const char *const no[] = {"SELECT CONNECTION_ID()", "SELECT db.ROW_COUNT()",
                                     "SELECT 'FOUND_ROWS()'", "SELECT ROW_COUNT"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        if (!mr_pool_reads_counts(yes[i], strlen(yes[i]), 0))
            fail_msg("%s: reads ROW_COUNT() or FOUND_ROWS(), not found", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (mr_pool_reads_counts(no[i], strlen(no[i]), 0))
            fail_msg("%s: reads neither, found", no[i]);
}

/* pool = statement: the words that open what only the reply would pin. */
static void opens(void **state)
{
    (void)state;
    static const struct {
        const char *sql;
        uint32_t want;
    } cases[] = {
        {"BEGIN", MR_HINT(MR_PIN_TRANSACTION)},
        {"begin work;", MR_HINT(MR_PIN_TRANSACTION)},
        {"START TRANSACTION WITH CONSISTENT SNAPSHOT", MR_HINT(MR_PIN_TRANSACTION)},
        {"XA BEGIN 'x'", MR_HINT(MR_PIN_TRANSACTION)},
        {"SET autocommit = 0", MR_HINT(MR_PIN_TRANSACTION)},
        {"SET SESSION sql_mode = '', @@autocommit := OFF", MR_HINT(MR_PIN_TRANSACTION)},
        {"SET @@session.autocommit = FALSE", MR_HINT(MR_PIN_TRANSACTION)},
        {"LOCK TABLE t READ", MR_HINT(MR_PIN_LOCKED_TABLES)},
        {"SET TRANSACTION READ ONLY", MR_HINT(MR_PIN_TRX_NEXT)},
        {"PREPARE s FROM 'SELECT 1'", MR_HINT(MR_PIN_PREPARED_SQL)},
        {"SELECT 1; BEGIN", MR_HINT(MR_PIN_TRANSACTION)},
        {"BEGIN NOT ATOMIC SELECT 1; END", 0},
        {"SET autocommit = 1", 0},
        {"SET @@autocommit = ON", 0},
        {"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", 0},
        {"SELECT 'BEGIN'", 0},
        {"UNLOCK TABLES", 0},
        {"COMMIT", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (mr_pool_opens(cases[i].sql, strlen(cases[i].sql), 0) != cases[i].want)
            fail_msg("%s -> 0x%x, want 0x%x", cases[i].sql,
                     mr_pool_opens(cases[i].sql, strlen(cases[i].sql), 0), cases[i].want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replaced),       cmocka_unit_test(left_alone),
        cmocka_unit_test(unknown_values), cmocka_unit_test(reads_counts),
        cmocka_unit_test(opens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
