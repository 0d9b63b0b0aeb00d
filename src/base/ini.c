/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/ini.c - INI reader with line numbers and unbounded values (see base/ini.h).
 * Pure, any thread; allocates only the value being assembled.
 */
#include "myrewrite/base/ini.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/base/buf.h"

typedef struct parser {
    const mr_ini_callbacks *cb;
    void *ctx;
    int errors;
    char section[256];
    mr_buf key;   /* pending key, NUL-terminated */
    mr_buf value; /* pending value, NUL-terminated */
    int key_line; /* 0 when nothing is pending */
} parser;

static void trim(const char **s, const char **e)
{
    while (*s < *e && isspace((unsigned char)**s))
        (*s)++;
    while (*e > *s && isspace((unsigned char)(*e)[-1]))
        (*e)--;
}

static void fail(parser *p, int line, const char *msg)
{
    p->errors++;
    if (p->cb->error)
        p->cb->error(p->ctx, line, msg);
}

static void flush_pair(parser *p)
{
    if (!p->key_line)
        return;
    mr_buf_put_u8(&p->value, 0);
    if (p->key.failed || p->value.failed)
        fail(p, p->key_line, "out of memory");
    else if (p->cb->pair && p->cb->pair(p->ctx, p->section, (char *)p->key.data,
                                        (char *)p->value.data, p->key_line))
        p->errors++;
    p->key_line = 0;
    mr_buf_reset(&p->key);
    mr_buf_reset(&p->value);
}

static void on_section(parser *p, const char *s, const char *e, int line)
{
    const char *close = memchr(s, ']', (size_t)(e - s));
    if (!close || close + 1 != e) {
        fail(p, line, "section header must look like [name] with nothing after the ]");
        return;
    }
    const char *ns = s + 1, *ne = close;
    trim(&ns, &ne);
    if (ns == ne || (size_t)(ne - ns) >= sizeof(p->section)) {
        fail(p, line, "section name is empty or longer than 255 characters");
        return;
    }
    memcpy(p->section, ns, (size_t)(ne - ns));
    p->section[ne - ns] = '\0';
    if (p->cb->section && p->cb->section(p->ctx, p->section, line))
        p->errors++;
}

static void on_pair(parser *p, const char *s, const char *e, int line)
{
    const char *eq = memchr(s, '=', (size_t)(e - s));
    if (!eq) {
        fail(p, line, "expected 'key = value', '[section]' or a comment");
        return;
    }
    const char *ks = s, *ke = eq, *vs = eq + 1, *ve = e;
    trim(&ks, &ke);
    trim(&vs, &ve);
    if (ks == ke) {
        fail(p, line, "missing key before '='");
        return;
    }
    if (!p->section[0]) {
        fail(p, line, "key outside any [section]");
        return;
    }
    mr_buf_put(&p->key, ks, (size_t)(ke - ks));
    mr_buf_put_u8(&p->key, 0);
    mr_buf_put(&p->value, vs, (size_t)(ve - vs));
    p->key_line = line;
}

static void on_line(parser *p, const char *s, const char *e, int line)
{
    if (memchr(s, '\0', (size_t)(e - s))) {
        /* the callbacks get C strings: the value would silently end there */
        fail(p, line, "a NUL byte in the line (the file must be text)");
        return;
    }
    bool indented = s < e && (*s == ' ' || *s == '\t');
    trim(&s, &e);
    if (s == e || *s == '#' || *s == ';')
        return; /* blank lines and comments do not end a continued value */
    if (indented && p->key_line) {
        if (p->value.len > 0) /* `key =` alone, value on the next lines */
            mr_buf_put_u8(&p->value, ' ');
        mr_buf_put(&p->value, s, (size_t)(e - s));
        return;
    }
    flush_pair(p);
    if (*s == '[')
        on_section(p, s, e, line);
    else
        on_pair(p, s, e, line);
}

int mr_ini_parse(const char *text, size_t len, const mr_ini_callbacks *cb, void *ctx)
{
    parser p = {.cb = cb, .ctx = ctx};
    mr_buf_init(&p.key);
    mr_buf_init(&p.value);
    const char *s = text, *end = text + len;
    for (int line = 1; s < end; line++) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;
        if (line == 1 && e - s >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
            s += 3; /* UTF-8 byte-order mark */
        on_line(&p, s, e, line);
        s = nl ? nl + 1 : end;
    }
    flush_pair(&p);
    mr_buf_free(&p.key);
    mr_buf_free(&p.value);
    return p.errors;
}
