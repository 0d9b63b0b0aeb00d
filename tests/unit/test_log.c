/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_log.c - the log's one escaping rule (base/log.h, mr_log_escape):
 * control characters, C1 controls and bytes that are not well-formed UTF-8
 * become \xHH, valid UTF-8 is copied, output is cut only between whole
 * characters and escapes; and a line mr_log writes with a newline, a
 * carriage return and an escape sequence in its text stays one line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "myrewrite/base/log.h"

static void expect(const char *in, size_t n, const char *want)
{
    char out[256];
    size_t got = mr_log_escape(out, sizeof out, in, n);
    assert_string_equal(out, want);
    assert_int_equal(got, strlen(want));
}

#define EXPECT(lit, want) expect(lit, sizeof lit - 1, want)

static void escapes_controls(void **state)
{
    (void)state;
    EXPECT("plain `t` 'x' \\ ok", "plain `t` 'x' \\ ok");
    EXPECT("a\nb", "a\\x0ab");
    EXPECT("a\r\n2026-12-03T00:00:00.000Z error forged", "a\\x0d\\x0a2026-12-03T00:00:00.000Z "
                                                         "error forged");
    EXPECT("\t\x1b[31mred\x7f", "\\x09\\x1b[31mred\\x7f");
    EXPECT("nul\0after", "nul\\x00after");
}

static void utf8_kept_or_escaped(void **state)
{
    (void)state;
    EXPECT("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
           "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    EXPECT("c1 \xc2\x85 \xc2\x9b", "c1 \\xc2\\x85 \\xc2\\x9b"); /* NEL, CSI */
    EXPECT("\xc2\xa0", "\xc2\xa0");                             /* the first one after C1 */
    EXPECT("over \xc0\xaf \xe0\x80\xaf", "over \\xc0\\xaf \\xe0\\x80\\xaf");
    EXPECT("surrogate \xed\xa0\x80", "surrogate \\xed\\xa0\\x80");
    EXPECT("big \xf4\x90\x80\x80 \xf5", "big \\xf4\\x90\\x80\\x80 \\xf5");
    EXPECT("latin1 \xe9t\xe9", "latin1 \\xe9t\\xe9");
    EXPECT("cut \xe2\x82", "cut \\xe2\\x82");
}

static void cut_between_whole_pieces(void **state)
{
    (void)state;
    char out[16];
    assert_int_equal(mr_log_escape(out, sizeof out, "ab\ncd", 5), 8);
    assert_string_equal(out, "ab\\x0acd");
    assert_int_equal(mr_log_escape(out, 6, "ab\ncd", 5), 2); /* no room for the escape */
    assert_string_equal(out, "ab");
    assert_int_equal(mr_log_escape(out, 5, "abc\xe2\x82\xac", 6), 3); /* nor for the euro */
    assert_string_equal(out, "abc");
    assert_int_equal(mr_log_escape(out, 1, "a", 1), 0);
    assert_string_equal(out, "");
}

/* mr_log (no writer thread: it writes stderr at once) into a pipe. */
static void one_line_per_call(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    int saved = dup(STDERR_FILENO);
    dup2(p[1], STDERR_FILENO);
    mr_error(0, "delayed d: table test.%s has no primary key",
             "t\n2026-12-03T00:00:00.000Z error forged\r\x1b[2K");
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(p[1]);
    char buf[512];
    ssize_t n = read(p[0], buf, sizeof buf - 1);
    close(p[0]);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_non_null(strstr(buf, " error delayed d: table test.t\\x0a2026-12-03T00:00:00.000Z "
                                "error forged\\x0d\\x1b[2K has no primary key\n"));
    assert_ptr_equal(strchr(buf, '\n'), buf + n - 1); /* one line */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(escapes_controls),
        cmocka_unit_test(utf8_kept_or_escaped),
        cmocka_unit_test(cut_between_whole_pieces),
        cmocka_unit_test(one_line_per_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
