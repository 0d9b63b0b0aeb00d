/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_ini.c - the INI reader under the config file and the rules files
 * (base/ini.c).
 *
 * Feeds: the input as the text of a file.
 * Checks beyond no crash: every section, key and value handed to the
 * callbacks is a C string no longer than the text, keys are non-empty,
 * values carry no leading or trailing blank, line numbers never go back
 * and never pass the text's line count; the returned count is the errors
 * reported (the callbacks here never refuse); a second parse reports the
 * same pairs.
 */
#include <string.h>

#include "fuzz.h"
#include "myrewrite/base/ini.h"

typedef struct seen {
    size_t text_len;
    int lines;     /* lines of the text */
    int last_line; /* line of the latest callback */
    int pairs, errors;
    uint64_t sum; /* of the pairs' bytes, to compare two parses */
} seen;

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static void at_line(seen *s, int line)
{
    FUZZ_CHECK(line >= 1 && line <= s->lines && line >= s->last_line);
    s->last_line = line;
}

static int on_section(void *ctx, const char *name, int line)
{
    seen *s = ctx;
    FUZZ_CHECK(strlen(name) <= s->text_len);
    return 0;
}

static int on_pair(void *ctx, const char *section, const char *key, const char *value, int line)
{
    seen *s = ctx;
    size_t vl = strlen(value);
    FUZZ_CHECK(strlen(section) <= s->text_len && strlen(key) <= s->text_len);
    FUZZ_CHECK(key[0] != 0 && vl <= s->text_len);
    FUZZ_CHECK(vl == 0 || (!blank(value[0]) && !blank(value[vl - 1])));
    s->pairs++;
    for (size_t i = 0; i < vl; i++)
        s->sum = s->sum * 31 + (unsigned char)value[i];
    return 0;
}

static void on_error(void *ctx, int line, const char *msg)
{
    seen *s = ctx;
    FUZZ_CHECK(msg && msg[0]);
    at_line(s, line);
    s->errors++;
}

static const mr_ini_callbacks cb = {on_section, on_pair, on_error};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    seen a = {size, 1, 0, 0, 0, 0};
    for (size_t i = 0; i < size; i++)
        a.lines += data[i] == '\n';
    seen b = a;
    int rc = mr_ini_parse((const char *)data, size, &cb, &a);
    FUZZ_CHECK(rc == a.errors);
    mr_ini_parse((const char *)data, size, &cb, &b);
    FUZZ_CHECK(a.pairs == b.pairs && a.sum == b.sum && a.errors == b.errors);
    return 0;
}
