/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ini.c - unit tests for base/ini.c: sections, pairs, comments,
 * continuation lines, line numbers and syntax errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "myrewrite/base/ini.h"

/* ---- a recorder for callbacks ---- */

typedef enum ev_kind { EV_SECTION, EV_PAIR, EV_ERROR } ev_kind;

typedef struct event {
    ev_kind kind;
    int line;
    char *section; /* section name, or the pair's section */
    char *key;
    char *value; /* value, or error message */
} event;

#define MAX_EVENTS 64

typedef struct recorder {
    event ev[MAX_EVENTS];
    int n;
    int fail_pairs; /* pair callback returns this */
    int fail_sections;
} recorder;

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static event *add(recorder *r, ev_kind kind, int line)
{
    assert_true(r->n < MAX_EVENTS);
    event *e = &r->ev[r->n++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    e->line = line;
    return e;
}

static int on_section(void *ctx, const char *name, int line)
{
    recorder *r = ctx;
    add(r, EV_SECTION, line)->section = dup_or_null(name);
    return r->fail_sections;
}

static int on_pair(void *ctx, const char *section, const char *key, const char *value, int line)
{
    recorder *r = ctx;
    event *e = add(r, EV_PAIR, line);
    e->section = dup_or_null(section);
    e->key = dup_or_null(key);
    e->value = dup_or_null(value);
    return r->fail_pairs;
}

static void on_error(void *ctx, int line, const char *msg)
{
    recorder *r = ctx;
    add(r, EV_ERROR, line)->value = dup_or_null(msg);
}

static const mr_ini_callbacks callbacks = {on_section, on_pair, on_error};

static int parse(recorder *r, const char *text)
{
    return mr_ini_parse(text, strlen(text), &callbacks, r);
}

static int setup(void **state)
{
    recorder *r = calloc(1, sizeof(*r));
    if (!r)
        return -1;
    *state = r;
    return 0;
}

static int teardown(void **state)
{
    recorder *r = *state;
    for (int i = 0; i < r->n; i++) {
        free(r->ev[i].section);
        free(r->ev[i].key);
        free(r->ev[i].value);
    }
    free(r);
    return 0;
}

static void check_pair(const recorder *r, int i, const char *section, const char *key,
                       const char *value, int line)
{
    assert_true(i < r->n);
    const event *e = &r->ev[i];
    assert_int_equal(e->kind, EV_PAIR);
    assert_string_equal(e->section, section);
    assert_string_equal(e->key, key);
    assert_string_equal(e->value, value);
    assert_int_equal(e->line, line);
}

static void check_section(const recorder *r, int i, const char *name, int line)
{
    assert_true(i < r->n);
    assert_int_equal(r->ev[i].kind, EV_SECTION);
    assert_string_equal(r->ev[i].section, name);
    assert_int_equal(r->ev[i].line, line);
}

static void check_error(const recorder *r, int i, int line)
{
    assert_true(i < r->n);
    assert_int_equal(r->ev[i].kind, EV_ERROR);
    assert_int_equal(r->ev[i].line, line);
    assert_non_null(r->ev[i].value);
    assert_true(strlen(r->ev[i].value) > 0);
}

/* ---- tests ---- */

static void sections_and_pairs(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[myrewrite]\n"
                              "listen = 127.0.0.1:6033\n"
                              "workers=4\n"
                              "[rule one]\n"
                              "  match   =   SELECT 1  \n"),
                     0);
    assert_int_equal(r->n, 5);
    check_section(r, 0, "myrewrite", 1);
    check_pair(r, 1, "myrewrite", "listen", "127.0.0.1:6033", 2);
    check_pair(r, 2, "myrewrite", "workers", "4", 3);
    check_section(r, 3, "rule one", 4);
    check_pair(r, 4, "rule one", "match", "SELECT 1", 5);
}

static void section_name_is_trimmed(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[  spaced name  ]   \n"), 0);
    assert_int_equal(r->n, 1);
    check_section(r, 0, "spaced name", 1);
}

static void comments_and_blank_lines_are_skipped(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "# hash comment\n"
                              "; semicolon comment\n"
                              "\n"
                              "   \t \n"
                              "[s]\n"
                              "   # indented comment\n"
                              "k = v\n"),
                     0);
    assert_int_equal(r->n, 2);
    check_section(r, 0, "s", 5);
    check_pair(r, 1, "s", "k", "v", 7);
}

static void no_inline_comments(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\n"
                              "pattern = a#b ; c\n"
                              "sql = SELECT '#';\n"),
                     0);
    check_pair(r, 1, "s", "pattern", "a#b ; c", 2);
    check_pair(r, 2, "s", "sql", "SELECT '#';", 3);
}

static void value_may_contain_equals(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\nwhere = a = b AND c=d\n"), 0);
    check_pair(r, 1, "s", "where", "a = b AND c=d", 2);
}

static void empty_value(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\nsocket =\nother=   \n"), 0);
    assert_int_equal(r->n, 3);
    check_pair(r, 1, "s", "socket", "", 2);
    check_pair(r, 2, "s", "other", "", 3);
}

static void continuation_lines_join_with_one_space(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\n"
                              "sql = SELECT a,\n"
                              "      b\n"
                              "\tFROM   t\n"
                              "next = 1\n"),
                     0);
    assert_int_equal(r->n, 3);
    check_pair(r, 1, "s", "sql", "SELECT a, b FROM   t", 2);
    check_pair(r, 2, "s", "next", "1", 5);
}

static void continuation_survives_blank_and_comment_lines(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\n"
                              "k = one\n"
                              "\n"
                              "# note\n"
                              "  two\n"),
                     0);
    assert_int_equal(r->n, 2);
    check_pair(r, 1, "s", "k", "one two", 2);
}

static void continuation_at_end_of_file_without_newline(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\nk = a\n  b"), 0);
    check_pair(r, 1, "s", "k", "a b", 2);
}

static void line_numbers_after_continuations(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\n"    /* 1 */
                              "a = 1\n"  /* 2 */
                              "  2\n"    /* 3 */
                              "  3\n"    /* 4 */
                              "b = x\n"  /* 5 */
                              "\n"       /* 6 */
                              "[t]\n"    /* 7 */
                              "c = y\n"  /* 8 */
                              "    z\n"  /* 9 */
                              "oops\n"), /* 10 */
                     1);
    assert_int_equal(r->n, 6);
    check_pair(r, 1, "s", "a", "1 2 3", 2);
    check_pair(r, 2, "s", "b", "x", 5);
    check_section(r, 3, "t", 7);
    check_pair(r, 4, "t", "c", "y z", 8);
    check_error(r, 5, 10);
}

/*
 * Regression (base/ini.c, on_line/flush_pair, fixed): a value that starts empty and is then
 * continued keeps the joining space: "k =" + "  v" gives " v", although
 * values are documented as trimmed (base/ini.h).
 */
static void continued_empty_value_has_no_leading_space(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\n"
                              "sql =\n"
                              "    SELECT 1\n"),
                     0);
    assert_int_equal(r->n, 2);
    check_pair(r, 1, "s", "sql", "SELECT 1", 2);
}

static void indented_line_without_pending_key_is_a_normal_line(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "  [s]\n"
                              "  k = v\n"),
                     0);
    assert_int_equal(r->n, 2);
    check_section(r, 0, "s", 1);
    check_pair(r, 1, "s", "k", "v", 2);
}

static void key_outside_section_is_an_error(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "listen = 1.2.3.4:5\n[s]\nk = v\n"), 1);
    assert_int_equal(r->n, 3);
    check_error(r, 0, 1);
    check_section(r, 1, "s", 2);
    check_pair(r, 2, "s", "k", "v", 3);
}

/* A NUL byte would end the value the callbacks see as a C string, so
 * `k = v<NUL>rest` would silently mean `k = v`: the line is an error. */
static void nul_byte_in_a_line_is_an_error(void **state)
{
    recorder *r = *state;
    static const char text[] = "[s]\nk = v\0rest\n  more\0\nj = w\n";
    assert_int_equal(mr_ini_parse(text, sizeof text - 1, &callbacks, r), 2);
    assert_int_equal(r->n, 4);
    check_section(r, 0, "s", 1);
    check_error(r, 1, 2);
    check_error(r, 2, 3);
    check_pair(r, 3, "s", "j", "w", 4);
}

static void line_without_equals_is_an_error(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\njust some words\nk = v\n"), 1);
    assert_int_equal(r->n, 3);
    check_error(r, 1, 2);
    check_pair(r, 2, "s", "k", "v", 3);
}

static void missing_key_is_an_error(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\n  = value\n"), 1);
    assert_int_equal(r->n, 2);
    check_error(r, 1, 2);
}

static void unclosed_section_header_is_an_error(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[broken\n[ok]\nk = v\n"), 1);
    assert_int_equal(r->n, 3);
    check_error(r, 0, 1);
    check_section(r, 1, "ok", 2);
    check_pair(r, 2, "ok", "k", "v", 3);
}

static void text_after_section_header_is_an_error(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s] trailing\n"), 1);
    assert_int_equal(r->n, 1);
    check_error(r, 0, 1);
}

static void empty_section_name_is_an_error(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[]\n[   ]\n"), 2);
    assert_int_equal(r->n, 2);
    check_error(r, 0, 1);
    check_error(r, 1, 2);
}

static void section_name_length_limit(void **state)
{
    recorder *r = *state;
    char name[256];
    char text[2 * sizeof(name) + 8];
    memset(name, 'n', 255);
    name[255] = '\0';
    snprintf(text, sizeof(text), "[%s]\n[%sx]\n", name, name);
    assert_int_equal(parse(r, text), 1);
    assert_int_equal(r->n, 2);
    check_section(r, 0, name, 1);
    check_error(r, 1, 2);
}

static void errors_after_pending_pair_keep_the_pair(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\nk = v\n[bad\n"), 1);
    assert_int_equal(r->n, 3);
    check_pair(r, 1, "s", "k", "v", 2);
    check_error(r, 2, 3);
}

static void utf8_bom_is_skipped(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "\xef\xbb\xbf[myrewrite]\nk = v\n"), 0);
    assert_int_equal(r->n, 2);
    check_section(r, 0, "myrewrite", 1);
    check_pair(r, 1, "myrewrite", "k", "v", 2);
}

static void bom_only_counts_at_start_of_file(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\n\xef\xbb\xbfk = v\n"), 0);
    assert_int_equal(r->n, 2);
    check_pair(r, 1, "s", "\xef\xbb\xbfk", "v", 2);
}

static void crlf_line_endings(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "[s]\r\n"
                              "k = v\r\n"
                              "sql = SELECT 1\r\n"
                              "  FROM t\r\n"
                              "\r\n"
                              "# c\r\n"
                              "last = x\r\n"),
                     0);
    assert_int_equal(r->n, 4);
    check_section(r, 0, "s", 1);
    check_pair(r, 1, "s", "k", "v", 2);
    check_pair(r, 2, "s", "sql", "SELECT 1 FROM t", 3);
    check_pair(r, 3, "s", "last", "x", 7);
}

static void crlf_with_bom(void **state)
{
    recorder *r = *state;
    assert_int_equal(parse(r, "\xef\xbb\xbf[s]\r\nk=v\r\n"), 0);
    check_section(r, 0, "s", 1);
    check_pair(r, 1, "s", "k", "v", 2);
}

static void long_value_is_not_truncated(void **state)
{
    recorder *r = *state;
    size_t vlen = 5000;
    char *text = malloc(vlen + 64);
    assert_non_null(text);
    strcpy(text, "[s]\nregex = ");
    size_t off = strlen(text);
    for (size_t i = 0; i < vlen; i++)
        text[off + i] = (char)('a' + i % 26);
    strcpy(text + off + vlen, "\nafter = 1\n");
    assert_int_equal(parse(r, text), 0);
    assert_int_equal(r->n, 3);
    assert_int_equal(strlen(r->ev[1].value), vlen);
    assert_memory_equal(r->ev[1].value, text + off, vlen);
    check_pair(r, 2, "s", "after", "1", 3);
    free(text);
}

static void long_continued_value_is_not_truncated(void **state)
{
    recorder *r = *state;
    char *text = malloc(20000);
    assert_non_null(text);
    size_t off = (size_t)sprintf(text, "[s]\nk = x");
    for (int i = 0; i < 1000; i++)
        off += (size_t)sprintf(text + off, "\n  y%03d", i);
    strcpy(text + off, "\n");
    assert_int_equal(parse(r, text), 0);
    assert_int_equal(r->n, 2);
    assert_int_equal(strlen(r->ev[1].value), 1 + 1000 * 5);
    assert_memory_equal(r->ev[1].value, "x y000 y001", 11);
    free(text);
}

static void empty_input(void **state)
{
    recorder *r = *state;
    assert_int_equal(mr_ini_parse("", 0, &callbacks, r), 0);
    assert_int_equal(r->n, 0);
    assert_int_equal(parse(r, "\n\n   \n# only comments\n"), 0);
    assert_int_equal(r->n, 0);
}

static void length_limits_the_parse(void **state)
{
    recorder *r = *state;
    static const char text[] = "[s]\nk = value\nignored = 1\n";
    assert_int_equal(mr_ini_parse(text, strlen("[s]\nk = val"), &callbacks, r), 0);
    assert_int_equal(r->n, 2);
    check_pair(r, 1, "s", "k", "val", 2);
}

static void callback_failures_are_counted(void **state)
{
    recorder *r = *state;
    r->fail_pairs = 1;
    r->fail_sections = 1;
    assert_int_equal(parse(r, "[a]\nx = 1\ny = 2\nbroken line\n"), 4);
    assert_int_equal(r->n, 4);
    check_pair(r, 1, "a", "x", "1", 2);
    check_pair(r, 2, "a", "y", "2", 3);
    check_error(r, 3, 4);
}

static void null_callbacks_are_allowed(void **state)
{
    (void)state;
    static const mr_ini_callbacks none = {NULL, NULL, NULL};
    static const char text[] = "[s]\nk = v\nbad\nx = 1\n  more\n";
    assert_int_equal(mr_ini_parse(text, strlen(text), &none, NULL), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(sections_and_pairs, setup, teardown),
        cmocka_unit_test_setup_teardown(section_name_is_trimmed, setup, teardown),
        cmocka_unit_test_setup_teardown(comments_and_blank_lines_are_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(no_inline_comments, setup, teardown),
        cmocka_unit_test_setup_teardown(value_may_contain_equals, setup, teardown),
        cmocka_unit_test_setup_teardown(empty_value, setup, teardown),
        cmocka_unit_test_setup_teardown(continuation_lines_join_with_one_space, setup, teardown),
        cmocka_unit_test_setup_teardown(continuation_survives_blank_and_comment_lines, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(continuation_at_end_of_file_without_newline, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(line_numbers_after_continuations, setup, teardown),
        cmocka_unit_test_setup_teardown(continued_empty_value_has_no_leading_space, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(indented_line_without_pending_key_is_a_normal_line, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(key_outside_section_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(line_without_equals_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_key_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(unclosed_section_header_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(text_after_section_header_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(empty_section_name_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(section_name_length_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(errors_after_pending_pair_keep_the_pair, setup, teardown),
        cmocka_unit_test_setup_teardown(utf8_bom_is_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(bom_only_counts_at_start_of_file, setup, teardown),
        cmocka_unit_test_setup_teardown(crlf_line_endings, setup, teardown),
        cmocka_unit_test_setup_teardown(crlf_with_bom, setup, teardown),
        cmocka_unit_test_setup_teardown(long_value_is_not_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(long_continued_value_is_not_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(nul_byte_in_a_line_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(empty_input, setup, teardown),
        cmocka_unit_test_setup_teardown(length_limits_the_parse, setup, teardown),
        cmocka_unit_test_setup_teardown(callback_failures_are_counted, setup, teardown),
        cmocka_unit_test(null_callbacks_are_allowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
