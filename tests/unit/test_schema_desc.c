/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_schema_desc.c - a table's description from information_schema rows
 * and the row key chosen from it (primary key, else the narrowest unique NOT
 * NULL key, never a unique key with a nullable column), malformed rows, and
 * the tables a DDL statement names for the schema cache.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/schema/desc.h"
#include "myrewrite/sql/lexer.h"
#include "myrewrite/sql/stmt.h"

/* COLUMNS rows "name:YES|NO", then STATISTICS rows "index:non_unique:column". */
static mr_table_desc *desc(const char *engine, const char *const *cols, const char *const *idx)
{
    mr_table_desc *td = mr_td_new("shop", "t");
    assert_non_null(td);
    mr_td_set_engine(td, engine);
    for (; cols && *cols; cols++) {
        char name[80];
        const char *colon = strchr(*cols, ':');
        memcpy(name, *cols, (size_t)(colon - *cols));
        name[colon - *cols] = '\0';
        assert_true(mr_td_add_column(td, name, colon + 1));
    }
    for (; idx && *idx; idx++) {
        char index[80], nu[4];
        const char *a = strchr(*idx, ':'), *b = strchr(a + 1, ':');
        memcpy(index, *idx, (size_t)(a - *idx));
        index[a - *idx] = '\0';
        memcpy(nu, a + 1, (size_t)(b - a - 1));
        nu[b - a - 1] = '\0';
        assert_true(mr_td_add_index_column(td, index, nu, b + 1));
    }
    return td;
}

static void primary_key(void **state)
{
    (void)state;
    static const char *const cols[] = {"id:NO", "email:NO", "n:YES", NULL};
    static const char *const idx[] = {"PRIMARY:0:id", "email:0:email", "n:1:n", NULL};
    mr_table_desc *td = desc("InnoDB", cols, idx);
    mr_row_key k;
    mr_td_row_key(td, &k);
    assert_int_equal(k.status, MR_KEY_FOUND);
    assert_true(k.primary);
    assert_true(k.transactional);
    assert_int_equal(k.ncols, 1);
    assert_string_equal(k.cols[0], "id");
    assert_int_equal(td->nidx, 3);
    assert_false(td->idx[2].unique);
    assert_true(td->idx[1].unique);
    assert_true(td->cols[2].nullable);
    mr_td_free(td);
}

static void composite_primary_in_order(void **state)
{
    (void)state;
    static const char *const cols[] = {"b:NO", "a:NO", "v:YES", NULL};
    static const char *const idx[] = {"PRIMARY:0:a", "PRIMARY:0:b", NULL};
    mr_table_desc *td = desc("MyISAM", cols, idx);
    mr_row_key k;
    mr_td_row_key(td, &k);
    assert_int_equal(k.status, MR_KEY_FOUND);
    assert_false(k.transactional);
    assert_string_equal(k.engine, "MyISAM");
    assert_int_equal(k.ncols, 2);
    assert_string_equal(k.cols[0], "a");
    assert_string_equal(k.cols[1], "b");
    mr_td_free(td);
}

static void unique_not_null_fallback(void **state)
{
    (void)state;
    /* u_null has a nullable column: many rows may share NULL, so not a row key;
     * of the two NOT NULL ones the narrower wins */
    static const char *const cols[] = {"a:NO", "b:NO", "c:YES", "d:NO", NULL};
    static const char *const idx[] = {"u_ab:0:a",   "u_ab:0:b",  "u_d:0:d",
                                      "u_null:0:c", "plain:1:a", NULL};
    mr_table_desc *td = desc("InnoDB", cols, idx);
    mr_row_key k;
    mr_td_row_key(td, &k);
    assert_int_equal(k.status, MR_KEY_FOUND);
    assert_false(k.primary);
    assert_int_equal(k.ncols, 1);
    assert_string_equal(k.cols[0], "d");
    assert_false(mr_td_index_not_null(td, 2));
    mr_td_free(td);
}

static void no_key(void **state)
{
    (void)state;
    static const char *const cols[] = {"a:YES", "b:NO", NULL};
    static const char *const idx[] = {"u_a:0:a", "ix_b:1:b", NULL};
    mr_table_desc *td = desc("InnoDB", cols, idx);
    mr_row_key k;
    mr_td_row_key(td, &k);
    assert_int_equal(k.status, MR_KEY_NONE);
    assert_non_null(strstr(k.why, "shop.t has no primary key and no unique NOT NULL key"));
    mr_td_free(td);
    /* a table information_schema does not list */
    td = mr_td_new("shop", "gone");
    mr_td_row_key(td, &k);
    assert_int_equal(k.status, MR_KEY_NONE);
    assert_string_equal(k.why, "table shop.gone does not exist");
    mr_td_free(td);
}

static void malformed_rows(void **state)
{
    (void)state;
    static const char *const cols[] = {"a:NO", NULL};
    mr_table_desc *td = desc("InnoDB", cols, NULL);
    assert_false(mr_td_add_index_column(td, "PRIMARY", "0", "nope")); /* unknown column */
    assert_true(mr_td_add_index_column(td, "x", "0", "a"));
    assert_true(mr_td_add_index_column(td, "y", "1", "a"));
    assert_false(mr_td_add_index_column(td, "x", "0", "a")); /* x's rows not together */
    assert_false(mr_td_add_column(td, NULL, "NO"));
    char longname[80];
    memset(longname, 'n', 70);
    longname[70] = '\0';
    assert_false(mr_td_add_column(td, longname, "NO"));
    assert_null(mr_td_new("shop", longname));
    assert_int_equal(mr_td_column(td, "A"), 0); /* column names compare in any case */
    mr_td_free(td);
}

/* The DDL tables of sql, joined as "s.t s.t" ("-" when -1). */
static void ddl(const char *sql, const char *want)
{
    sql_token tok[256];
    size_t n;
    sql_lex(sql, strlen(sql), SQL_LEX_SKIP_COMMENTS, tok, 256, &n);
    sql_stmt st;
    sql_stmt_parse(sql, tok, n, &st);
    mr_ddl_table t[4];
    int k = mr_ddl_tables(sql, tok, n, &st, t, 4);
    char got[400] = "";
    if (k < 0)
        strcpy(got, "-");
    for (int i = 0; i < k; i++) {
        strcat(got, i ? " " : "");
        strcat(got, t[i].schema[0] ? t[i].schema : "?");
        strcat(got, ".");
        strcat(got, t[i].table);
    }
    if (strcmp(got, want) != 0)
        fail_msg("%s\nwanted: %s\ngot:    %s", sql, want, got);
}

static void ddl_tables(void **state)
{
    (void)state;
    ddl("SELECT * FROM t", "");
    ddl("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (a)", "?.t");
    ddl("ALTER TABLE `shop`.`my t` ADD COLUMN x INT", "shop.my t");
    ddl("DROP TABLE IF EXISTS a, s.b", "?.a s.b");
    ddl("RENAME TABLE a TO b, c TO d", "?.a ?.b ?.c ?.d");
    ddl("TRUNCATE TABLE s.t", "s.t");
    ddl("TRUNCATE t", "?.t");
    ddl("CREATE TABLE t (id INT PRIMARY KEY)", "?.t");
    ddl("CREATE UNIQUE INDEX u ON s.t (a)", "s.t");
    ddl("DROP INDEX ix ON t", "?.t");
    ddl("CREATE INDEX ix /* c */ ON `t` (a)", "?.t");
    ddl("DROP DATABASE shop", "-");
    ddl("ALTER /*!50100 TABLE t */ ADD x INT", "-");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(primary_key),
        cmocka_unit_test(composite_primary_in_order),
        cmocka_unit_test(unique_not_null_fallback),
        cmocka_unit_test(no_key),
        cmocka_unit_test(malformed_rows),
        cmocka_unit_test(ddl_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
