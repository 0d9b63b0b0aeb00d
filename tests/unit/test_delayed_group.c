/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_delayed_group.c - the multi-row INSERT of a group-commit batch
 * (delayed/group_sql.h): staging INSERTs joined per column list, in order,
 * names quoted with backticks skipped whole, texts that are not staging
 * INSERTs and too many column lists refused; the add rows of one key
 * merged, their deltas summed, and every row that does not read plainly
 * (or would overflow) kept as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/delayed/group_sql.h"

#define INS "INSERT INTO `test`.`c_delayed` (`hits`, `id`, `op`) VALUES "

static mr_dgroup_text txt(const char *s) { return (mr_dgroup_text){s, strlen(s), 0}; }

/* A staging INSERT whose rows start with nd add deltas. */
static mr_dgroup_text adds(const char *s, unsigned nd)
{
    return (mr_dgroup_text){s, strlen(s), nd};
}

static void assert_buf(const mr_buf *b, const char *want)
{
    assert_int_equal(b->len, strlen(want));
    assert_memory_equal(b->data, want, b->len);
}

static void bufs_init(mr_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mr_buf_init(&b[i]);
}

static void bufs_free(mr_buf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mr_buf_free(&b[i]);
}

static void one_prefix(void **state)
{
    (void)state;
    mr_dgroup_text t[] = {txt(INS "(1, 1, 0)"), txt(INS "(2, 7, 0), (2, 8, 0)"),
                          txt(INS "(-3, 'a''b', 1)")};
    mr_buf out[MR_DGROUP_MAX_STMTS];
    bufs_init(out, MR_DGROUP_MAX_STMTS);
    assert_int_equal(mr_dgroup_build(t, 3, out, MR_DGROUP_MAX_STMTS, NULL), 1);
    assert_buf(&out[0], INS "(1, 1, 0), (2, 7, 0), (2, 8, 0), (-3, 'a''b', 1)");
    assert_int_equal(mr_dgroup_build(t, 1, out, MR_DGROUP_MAX_STMTS, NULL), 1);
    assert_buf(&out[0], INS "(1, 1, 0)"); /* reset first */
    bufs_free(out, MR_DGROUP_MAX_STMTS);
}

static void prefixes_in_order(void **state)
{
    (void)state;
    const char *other = "INSERT INTO `test`.`c_delayed` (`id`, `hits`, `op`) VALUES ";
    char b1[200], b2[200];
    snprintf(b1, sizeof b1, "%s(5, 1, 0)", other);
    snprintf(b2, sizeof b2, "%s(6, 2, 0)", other);
    mr_dgroup_text t[] = {txt(b1), txt(INS "(1, 1, 0)"), txt(b2), txt(INS "(2, 2, 0)")};
    mr_buf out[MR_DGROUP_MAX_STMTS];
    bufs_init(out, MR_DGROUP_MAX_STMTS);
    assert_int_equal(mr_dgroup_build(t, 4, out, MR_DGROUP_MAX_STMTS, NULL), 2);
    char want[300];
    snprintf(want, sizeof want, "%s(5, 1, 0), (6, 2, 0)", other);
    assert_buf(&out[0], want);
    assert_buf(&out[1], INS "(1, 1, 0), (2, 2, 0)");
    assert_int_equal(mr_dgroup_build(t, 4, out, 1, NULL), 0); /* two column lists, room for one */
    bufs_free(out, MR_DGROUP_MAX_STMTS);
}

/* A name holding " VALUES " (and a doubled backtick) is not the end of the
 * prefix; the values themselves are never read. */
static void quoted_names(void **state)
{
    (void)state;
    const char *a = "INSERT INTO `s`.`x VALUES ``(` (`a) VALUES (`, `op`) VALUES (1, 0)";
    size_t p = mr_dgroup_prefix_len(a, strlen(a));
    assert_int_equal(p, strlen("INSERT INTO `s`.`x VALUES ``(` (`a) VALUES (`, `op`) VALUES "));
    const char *b = "INSERT INTO `s`.`x VALUES ``(` (`a) VALUES (`, `op`) VALUES (2, 0)";
    mr_dgroup_text t[] = {txt(a), txt(b)};
    mr_buf out[2];
    bufs_init(out, 2);
    assert_int_equal(mr_dgroup_build(t, 2, out, 2, NULL), 1);
    assert_buf(&out[0], "INSERT INTO `s`.`x VALUES ``(` (`a) VALUES (`, `op`) VALUES (1, 0), "
                        "(2, 0)");
    bufs_free(out, 2);
}

static void not_staging(void **state)
{
    (void)state;
    static const char *const bad[] = {"", "INSERT INTO `t` (`a`) VALUES ", "SELECT 1",
                                      "INSERT INTO `t VALUES (1)", "INSERT INTO `t`(`a`)VALUES(1)"};
    mr_buf out[2];
    bufs_init(out, 2);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mr_dgroup_text t[] = {txt(INS "(1, 1, 0)"), txt(bad[i])};
        assert_int_equal(mr_dgroup_build(t, 2, out, 2, NULL), 0);
    }
    bufs_free(out, 2);
}

/* Add rows of one key become the key's first row with the sums; keys stay
 * in first-seen order; an IN list's rows merge like any others. */
static void merged_adds(void **state)
{
    (void)state;
    mr_dgroup_text t[] = {adds(INS "(1, 5, 0)", 1), adds(INS "(1, 7, 0)", 1),
                          adds(INS "(-3, 5, 0)", 1), adds(INS "(2, 7, 0), (4, 9, 0)", 1),
                          adds(INS "(10, 5, 0)", 1)};
    mr_buf out[2];
    bufs_init(out, 2);
    size_t merged = 0;
    assert_int_equal(mr_dgroup_build(t, 5, out, 2, &merged), 1);
    assert_int_equal(merged, 3);
    assert_buf(&out[0], INS "(8, 5, 0), (3, 7, 0), (4, 9, 0)");
    bufs_free(out, 2);
}

/* Two deltas, a string key and a two-column key: merged per whole key,
 * compared byte for byte ('a' and 'A' stay apart). */
static void merged_keys(void **state)
{
    (void)state;
    const char *ins2 = "INSERT INTO `s`.`t_delayed` (`a`, `b`, `k`, `g`, `op`) VALUES ";
    char b[6][200];
    const char *rows[] = {"(1, 2, 'a', 1, 0)", "(3, -4, 'a', 1, 0)", "(1, 1, 'A', 1, 0)",
                          "(1, 1, 'a', 2, 0)", "(5, 5, 'a', 1, 0)",  "(0, 0, 'a', 2, 0)"};
    mr_dgroup_text t[6];
    for (int i = 0; i < 6; i++) {
        snprintf(b[i], sizeof b[i], "%s%s", ins2, rows[i]);
        t[i] = adds(b[i], 2);
    }
    mr_buf out[1];
    bufs_init(out, 1);
    size_t merged = 0;
    assert_int_equal(mr_dgroup_build(t, 6, out, 1, &merged), 1);
    assert_int_equal(merged, 3);
    char want[400];
    snprintf(want, sizeof want, "%s(9, 3, 'a', 1, 0), (1, 1, 'A', 1, 0), (1, 1, 'a', 2, 0)", ins2);
    assert_buf(&out[0], want);
    bufs_free(out, 1);
}

/* What is not a plain add row is copied as it was and merges with
 * nothing: a delete (op 1), ndelta 0, a string with an escape or a doubled
 * quote, a charset introducer, an expression, a number of 19 digits; a sum
 * past the BIGINT range keeps the row apart. */
static void kept_apart(void **state)
{
    (void)state;
    mr_dgroup_text t[] = {
        adds(INS "(1, 5, 0)", 1),
        adds(INS "(1, 5, 1)", 1),
        txt(INS "(1, 5, 0)"),
        adds(INS "(1, 'x\\', 0)", 1),
        adds(INS "(1, 'it''s', 0)", 1),
        adds(INS "(1, _utf8'x', 0)", 1),
        adds(INS "(1, 5, FLOOR(UNIX_TIMESTAMP() / 60), 0)", 1),
        adds(INS "(1000000000000000000, 5, 0)", 1),
        adds(INS "(1, 5, 0), (1, 'a\\'b', 0)", 1),
        adds(INS "(999999999999999999, 6, 0)", 1),
        adds(INS "(999999999999999999, 6, 0)", 1),
        adds(INS "(999999999999999999, 6, 0)", 1),
        adds(INS "(999999999999999999, 6, 0)", 1),
        adds(INS "(999999999999999999, 6, 0)", 1),
        adds(INS "(999999999999999999, 6, 0)", 1),
        adds(INS "(999999999999999999, 6, 0)", 1),
        adds(INS "(999999999999999999, 6, 0)", 1),
        adds(INS "(999999999999999999, 6, 0)", 1),
        adds(INS "(999999999999999999, 6, 0)", 1),
        adds(INS "(2, 5, 0)", 1),
    };
    size_t n = sizeof t / sizeof t[0];
    mr_buf out[1];
    bufs_init(out, 1);
    size_t merged = 0;
    assert_int_equal(mr_dgroup_build(t, n, out, 1, &merged), 1);
    assert_int_equal(merged, 9);
    assert_buf(&out[0], INS "(3, 5, 0), (1, 5, 1), (1, 5, 0), (1, 'x\\', 0), (1, 'it''s', 0), "
                            "(1, _utf8'x', 0), (1, 5, FLOOR(UNIX_TIMESTAMP() / 60), 0), "
                            "(1000000000000000000, 5, 0), (1, 5, 0), (1, 'a\\'b', 0), "
                            "(8999999999999999991, 6, 0), (999999999999999999, 6, 0)");
    bufs_free(out, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_prefix),   cmocka_unit_test(prefixes_in_order),
        cmocka_unit_test(quoted_names), cmocka_unit_test(not_staging),
        cmocka_unit_test(merged_adds),  cmocka_unit_test(merged_keys),
        cmocka_unit_test(kept_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
