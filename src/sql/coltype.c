/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sql/coltype.c - the grammar of column types a staging table may copy
 * (see sql/coltype.h).
 *
 * Pure, any thread.
 */
#include "myrewrite/sql/coltype.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef enum args { NONE, NUMS, STRINGS } args;

typedef struct type_name {
    const char *name;
    args args;
} type_name;

/* The names COLUMN_TYPE shows for MariaDB's types (synonyms such as BOOL
 * or REAL are shown as the type they stand for). */
static const type_name types[] = {
    {"tinyint", NUMS},   {"smallint", NUMS}, {"mediumint", NUMS}, {"int", NUMS},
    {"bigint", NUMS},    {"decimal", NUMS},  {"float", NUMS},     {"double", NUMS},
    {"bit", NUMS},       {"char", NUMS},     {"varchar", NUMS},   {"binary", NUMS},
    {"varbinary", NUMS}, {"tinytext", NONE}, {"text", NUMS},      {"mediumtext", NONE},
    {"longtext", NONE},  {"tinyblob", NONE}, {"blob", NUMS},      {"mediumblob", NONE},
    {"longblob", NONE},  {"date", NONE},     {"time", NUMS},      {"datetime", NUMS},
    {"timestamp", NUMS}, {"year", NUMS},     {"uuid", NONE},      {"inet4", NONE},
    {"inet6", NONE},     {"enum", STRINGS},  {"set", STRINGS},
};

static const char *const modifiers[] = {"unsigned", "signed", "zerofill"};

typedef struct rd {
    const char *p;
    char *why;
    size_t whylen;
} rd;

static bool bad(rd *r, const char *what)
{
    if (r->why && r->whylen)
        snprintf(r->why, r->whylen, "%s at \"%.20s\"", what, r->p);
    return false;
}

/* A run of letters and digits; its length. */
static size_t word(const char *p)
{
    size_t n = 0;
    while (isalnum((unsigned char)p[n]))
        n++;
    return n;
}

static const type_name *find_type(const char *p, size_t n)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strlen(types[i].name) == n && strncasecmp(types[i].name, p, n) == 0)
            return &types[i];
    return NULL;
}

/* A length, precision or scale: 1 to 5 digits (varchar(65532)). */
static bool number(rd *r)
{
    size_t n = 0;
    while (isdigit((unsigned char)r->p[n]))
        n++;
    if (n == 0 || n > 5)
        return bad(r, "expected a length of 1 to 5 digits");
    r->p += n;
    return true;
}

/* A string literal as the server reads it on the proxy's connection
 * (backslash escapes on): '' and \x stay inside it. Whatever bytes it
 * holds, it is one literal to the server. */
static bool string(rd *r)
{
    if (*r->p != '\'')
        return bad(r, "expected a quoted value");
    const char *p = r->p + 1;
    for (;;) {
        if (!*p)
            return bad(r, "unterminated quoted value");
        if (*p == '\\' && p[1]) {
            p += 2;
        } else if (*p == '\'' && p[1] == '\'') {
            p += 2;
        } else if (*p == '\'') {
            r->p = p + 1;
            return true;
        } else {
            p++;
        }
    }
}

static bool arg_list(rd *r, args kind)
{
    r->p++; /* ( */
    for (size_t i = 0;; i++) {
        if (kind == NUMS && i >= 2)
            return bad(r, "expected at most two numbers");
        if (!(kind == NUMS ? number(r) : string(r)))
            return false;
        if (*r->p == ')') {
            r->p++;
            return true;
        }
        if (*r->p != ',')
            return bad(r, "expected , or )");
        r->p++;
    }
}

static bool modifier(rd *r)
{
    size_t n = word(r->p);
    for (size_t i = 0; i < sizeof modifiers / sizeof modifiers[0]; i++)
        if (strlen(modifiers[i]) == n && strncasecmp(modifiers[i], r->p, n) == 0) {
            r->p += n;
            return true;
        }
    return bad(r, "expected unsigned, signed or zerofill");
}

bool mr_coltype_ok(const char *type, char *why, size_t whylen)
{
    rd r = {.p = type, .why = why, .whylen = whylen};
    size_t n = word(type);
    const type_name *t = find_type(type, n);
    if (!t)
        return bad(&r, "not a type the staging table can copy");
    r.p += n;
    if (*r.p == '(' && (t->args == NONE || !arg_list(&r, t->args)))
        return t->args == NONE ? bad(&r, "this type takes no (...)") : false;
    if (t->args == STRINGS && r.p == type + n)
        return bad(&r, "expected the (...) of values");
    while (*r.p == ' ') {
        r.p++;
        if (!modifier(&r))
            return false;
    }
    return *r.p ? bad(&r, "unexpected text") : true;
}

bool mr_collation_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_')
            return false;
    return true;
}
