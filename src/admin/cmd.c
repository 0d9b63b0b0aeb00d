/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/cmd.c - command recognition and digest merging for the admin
 * console (see admin/cmd.h).
 * Pure, any thread; owns nothing beyond the mr_buf it is handed.
 */
#include "myrewrite/admin/cmd.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A cursor over the command text. */
typedef struct text {
    const char *s;
    size_t n, pos;
} text;

static void skip_space(text *t)
{
    while (t->pos < t->n && isspace((unsigned char)t->s[t->pos]))
        t->pos++;
}

/* Consumes `word` (case-insensitive) when it stands next as a whole word. */
static bool take_word(text *t, const char *word)
{
    size_t wl = strlen(word);
    skip_space(t);
    if (t->n - t->pos < wl || strncasecmp(t->s + t->pos, word, wl) != 0)
        return false;
    size_t end = t->pos + wl;
    if (end < t->n && (isalnum((unsigned char)t->s[end]) || t->s[end] == '_' || t->s[end] == '@'))
        return false;
    t->pos = end;
    return true;
}

/* Consumes a phrase of space-separated words; restores the cursor on failure. */
static bool take_phrase(text *t, const char *phrase)
{
    size_t start = t->pos;
    char word[32];
    while (*phrase) {
        size_t wl = strcspn(phrase, " ");
        if (wl >= sizeof(word))
            return false;
        memcpy(word, phrase, wl);
        word[wl] = '\0';
        if (!take_word(t, word)) {
            t->pos = start;
            return false;
        }
        phrase += wl;
        while (*phrase == ' ')
            phrase++;
    }
    return true;
}

static bool at_end(text *t)
{
    skip_space(t);
    return t->pos == t->n;
}

/* The text without trailing whitespace and `;`. */
static size_t trimmed_len(const char *s, size_t n)
{
    while (n > 0 && (isspace((unsigned char)s[n - 1]) || s[n - 1] == ';'))
        n--;
    return n;
}

static char unescape(char c)
{
    switch (c) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case '0': return '\0';
    case 'Z': return 26;
    default: return c; /* \\ \' \" and anything else stand for themselves */
    }
}

/* A quoted string ('...' or "..."): doubled quotes and backslash escapes
 * as in SQL; the rest of the text must be empty. */
static bool take_quoted(text *t, mr_buf *arg)
{
    skip_space(t);
    if (t->pos >= t->n || (t->s[t->pos] != '\'' && t->s[t->pos] != '"'))
        return false;
    char q = t->s[t->pos++];
    while (t->pos < t->n) {
        char c = t->s[t->pos++];
        if (c == '\\' && t->pos < t->n) {
            mr_buf_put_u8(arg, (uint8_t)unescape(t->s[t->pos++]));
        } else if (c == q && t->pos < t->n && t->s[t->pos] == q) {
            mr_buf_put_u8(arg, (uint8_t)q);
            t->pos++;
        } else if (c == q) {
            mr_buf_put_u8(arg, 0);
            return at_end(t);
        } else {
            mr_buf_put_u8(arg, (uint8_t)c);
        }
    }
    mr_buf_put_u8(arg, 0); /* the argument stays a C string even when refused */
    return false;          /* unterminated */
}

/* An optional table name: the rest of the text, as written. */
static void take_rest(text *t, mr_buf *arg)
{
    skip_space(t);
    mr_buf_put(arg, t->s + t->pos, t->n - t->pos);
    mr_buf_put_u8(arg, 0);
    t->pos = t->n;
}

typedef struct plain_cmd {
    const char *phrase;
    mr_admin_cmd cmd;
} plain_cmd;

/* Commands that take no argument. */
static const plain_cmd plain[] = {
    {"SHOW VERSION", MR_ADM_SHOW_VERSION},
    {"SHOW CONFIG", MR_ADM_SHOW_CONFIG},
    {"SHOW RULES", MR_ADM_SHOW_RULES},
    {"SHOW DIGESTS", MR_ADM_SHOW_DIGESTS},
    {"SHOW STATS", MR_ADM_SHOW_STATS},
    {"SHOW BACKENDS", MR_ADM_SHOW_BACKENDS},
    {"SHOW QUEUES", MR_ADM_SHOW_QUEUES},
    {"SHOW CLIENTS", MR_ADM_SHOW_CLIENTS},
    {"SHOW POOLS", MR_ADM_SHOW_POOLS},
    {"SHOW SERVERS", MR_ADM_SHOW_SERVERS},
    {"SHOW PINS", MR_ADM_SHOW_PINS},
    {"SHOW DELAYED", MR_ADM_SHOW_DELAYED},
    {"SHOW PAGINATION", MR_ADM_SHOW_PAGINATION},
    {"RELOAD RULES", MR_ADM_RELOAD_RULES},
    {"RELOAD TLS", MR_ADM_RELOAD_TLS},
    {"SELECT @@version_comment LIMIT 1", MR_ADM_VERSION_COMMENT},
    {"SELECT @@version_comment", MR_ADM_VERSION_COMMENT},
};

mr_admin_cmd mr_admin_cmd_parse(const char *sql, size_t len, mr_buf *arg)
{
    text t = {sql, trimmed_len(sql, len), 0};
    if (at_end(&t))
        return MR_ADM_EMPTY;
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        if (take_phrase(&t, plain[i].phrase) && at_end(&t))
            return plain[i].cmd;
        t.pos = 0;
    }
    if (take_phrase(&t, "EXPLAIN REWRITE"))
        return take_quoted(&t, arg) ? MR_ADM_EXPLAIN_REWRITE : MR_ADM_BAD_ARGUMENT;
    if (take_phrase(&t, "SHOW DELAYED REJECTED")) {
        take_rest(&t, arg);
        return MR_ADM_SHOW_DELAYED_REJECTED;
    }
    t.pos = 0;
    if (take_phrase(&t, "FLUSH DELAYED")) {
        take_rest(&t, arg);
        return MR_ADM_FLUSH_DELAYED;
    }
    if (take_word(&t, "SET"))
        return MR_ADM_SET;
    return MR_ADM_UNKNOWN;
}

const char *mr_admin_cmd_list(void)
{
    return "SHOW VERSION, SHOW CONFIG, SHOW RULES, SHOW DIGESTS, SHOW STATS, SHOW BACKENDS, "
           "SHOW QUEUES, SHOW CLIENTS, SHOW POOLS, SHOW SERVERS, SHOW PINS, SHOW DELAYED, SHOW "
           "DELAYED REJECTED [table], "
           "SHOW PAGINATION, RELOAD RULES, RELOAD TLS, "
           "FLUSH DELAYED [table], EXPLAIN REWRITE '<sql>'";
}

/* ---- digests ---- */

static int by_hash(const void *a, const void *b)
{
    uint64_t x = ((const mr_admin_digest *)a)->hash, y = ((const mr_admin_digest *)b)->hash;
    return x < y ? -1 : x > y;
}

static int by_total_desc(const void *a, const void *b)
{
    const mr_admin_digest *x = a, *y = b;
    if (x->total_us != y->total_us)
        return x->total_us > y->total_us ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return by_hash(a, b);
}

static void add_into(mr_admin_digest *to, const mr_admin_digest *from)
{
    to->count += from->count;
    to->total_us += from->total_us;
    to->rewritten += from->rewritten;
    to->blocked += from->blocked;
    if (from->max_us > to->max_us)
        to->max_us = from->max_us;
}

size_t mr_admin_digests_merge(mr_admin_digest *rows, size_t n, size_t limit)
{
    if (n == 0)
        return 0;
    qsort(rows, n, sizeof(*rows), by_hash);
    size_t out = 0;
    for (size_t i = 1; i < n; i++) {
        if (rows[i].hash == rows[out].hash)
            add_into(&rows[out], &rows[i]);
        else
            rows[++out] = rows[i];
    }
    n = out + 1;
    qsort(rows, n, sizeof(*rows), by_total_desc);
    return n < limit ? n : limit;
}
