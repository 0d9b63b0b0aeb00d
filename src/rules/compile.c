/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/compile.c - turns one rule's pattern and replacement into their
 * matching form (digest and literal slots, pcre2 code, replacement
 * pieces), and builds the rule set's lookup tables.
 *
 * Pure, any thread (called by the loader only). Owns what it stores in
 * rule_impl; rules_impl_free releases it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/sql/digest.h"
#include "rules/rules_impl.h"

#define RULE_FMT "[%s %s]"
#define RULE_ARGS(at) (at)->r->entry->name, (at)->r->name

static void err(const rule_src *at, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void err(const rule_src *at, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mr_diag_error(at->d, at->r->file, at->line, "%s", msg);
}

/* Lexes SQL from a rule file: no error token, at least one significant
 * token, and a single statement (a trailing ';' is allowed). */
static bool check_sql(const rule_src *at, const char *key, const char *text)
{
    sql_lexer lx;
    sql_lexer_init(&lx, text, strlen(text), 0);
    sql_token t;
    bool any = false, after_semi = false;
    while (sql_lexer_next(&lx, &t)) {
        if (t.kind == SQL_TOK_ERROR) {
            err(at, "%s in " RULE_FMT " does not lex: %s at byte %u; write one SQL statement", key,
                RULE_ARGS(at), sql_lex_err_name(t.id), (unsigned)t.off + 1);
            return false;
        }
        if (t.kind == SQL_TOK_COMMENT)
            continue;
        if (t.kind == SQL_TOK_SEMI) {
            after_semi = any;
            continue;
        }
        if (after_semi) {
            err(at, "%s in " RULE_FMT " holds more than one statement; a rule takes exactly one",
                key, RULE_ARGS(at));
            return false;
        }
        any = true;
    }
    if (!any)
        err(at, "%s in " RULE_FMT " is empty; write one SQL statement", key, RULE_ARGS(at));
    return any;
}

bool rules_compile_pattern(const rule_src *at, const char *pattern, rule_impl *im)
{
    if (!check_sql(at, "pattern", pattern))
        return false;
    size_t n = strlen(pattern);
    sql_digest_result dr;
    char probe[1];
    sql_digest(pattern, n, 0, probe, sizeof probe, &dr);
    im->digest = malloc(dr.full_len + 1);
    if (!im->digest) {
        err(at, "out of memory");
        return false;
    }
    sql_digest(pattern, n, 0, im->digest, dr.full_len + 1, &dr);
    im->digest_len = dr.len;
    im->hash = dr.hash;
    im->how = HOW_DIGEST;
    size_t k = rules_slots(pattern, n, 0, NULL, 0);
    im->nslots = k == SIZE_MAX ? 0 : (uint32_t)k;
    return true;
}

/* ---- replacement pieces ------------------------------------------------- */

typedef struct tpl_builder {
    tpl_piece *v;
    size_t n;
    size_t cap;
    bool failed;
} tpl_builder;

static void tpl_add(tpl_builder *b, uint32_t off, uint32_t len, int32_t ref)
{
    if (ref < 0 && len == 0)
        return;
    if (b->n > 0 && ref < 0 && b->v[b->n - 1].ref < 0 &&
        b->v[b->n - 1].off + b->v[b->n - 1].len == off) {
        b->v[b->n - 1].len += len; /* extend the previous literal */
        return;
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 8;
        tpl_piece *v = realloc(b->v, cap * sizeof *v);
        if (!v) {
            b->failed = true;
            return;
        }
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = (tpl_piece){.off = off, .len = len, .ref = ref};
}

/* `?` or `?N` at t: the slot it names (1-based N), 0 for a bare `?`;
 * moves lx past the number. -1 when N is not a plain number. */
static long slot_number(sql_lexer *lx, const char *s, const sql_token *t, uint32_t *end)
{
    sql_lexer p = *lx;
    sql_token nt;
    *end = t->off + 1;
    if (!sql_lexer_next(&p, &nt) || nt.off != t->off + 1)
        return 0;
    if (nt.kind != SQL_TOK_NUMBER) /* ?1a lexes as ? then the word 1a */
        return nt.kind == SQL_TOK_WORD && s[nt.off] >= '0' && s[nt.off] <= '9' ? -1 : 0;
    long v = 0;
    for (uint32_t i = 0; i < nt.len; i++) {
        char c = s[nt.off + i];
        if (c < '0' || c > '9' || v > 100000)
            return -1;
        v = v * 10 + (c - '0');
    }
    *lx = p;
    *end = nt.off + nt.len;
    return v == 0 ? -1 : v;
}

/* A `?` inside / *! ... * / would be copied as written, never filled. */
static bool exec_has_param(const char *s, const sql_token *t)
{
    size_t off, len;
    sql_exec_body(t, s, &off, &len);
    return memchr(s + off, '?', len) != NULL;
}

typedef struct slot_use {
    int bare;     /* count of bare `?` */
    int numbered; /* count of `?N` */
    long max;     /* largest slot referenced */
} slot_use;

static bool replacement_piece(const rule_src *at, sql_lexer *lx, const char *s, const sql_token *t,
                              tpl_builder *b, uint32_t *copied, slot_use *u)
{
    if (t->kind == SQL_TOK_EXEC_COMMENT && exec_has_param(s, t)) {
        err(at,
            "replacement in " RULE_FMT " has ? inside an executable comment; "
            "literal slots can only be used outside /*! ... */",
            RULE_ARGS(at));
        return false;
    }
    if (t->kind != SQL_TOK_PARAM)
        return true;
    uint32_t end;
    long v = slot_number(lx, s, t, &end);
    if (v < 0) {
        err(at,
            "replacement in " RULE_FMT " has a malformed slot at byte %u; "
            "write ? (next literal) or ?1, ?2... (literal by position)",
            RULE_ARGS(at), (unsigned)t->off + 1);
        return false;
    }
    long slot = v ? v : ++u->bare;
    if (v)
        u->numbered++;
    if (slot > u->max)
        u->max = slot;
    tpl_add(b, *copied, t->off - *copied, -1);
    tpl_add(b, 0, 0, (int32_t)(slot - 1));
    *copied = end;
    return true;
}

bool rules_compile_replacement(const rule_src *at, const char *repl, rule_impl *im)
{
    if (!check_sql(at, "replacement", repl))
        return false;
    im->tpl_text = strdup(repl);
    if (!im->tpl_text) {
        err(at, "out of memory");
        return false;
    }
    const char *s = im->tpl_text;
    sql_lexer lx;
    sql_lexer_init(&lx, s, strlen(s), 0);
    tpl_builder b = {0};
    slot_use u = {0, 0, 0};
    uint32_t copied = 0;
    sql_token t;
    bool ok = true;
    while (ok && sql_lexer_next(&lx, &t))
        ok = replacement_piece(at, &lx, s, &t, &b, &copied, &u);
    tpl_add(&b, copied, (uint32_t)strlen(s) - copied, -1);
    im->tpl = b.v;
    im->ntpl = b.n;
    if (ok && b.failed) {
        err(at, "out of memory");
        ok = false;
    }
    if (ok && u.bare && u.numbered) {
        err(at,
            "replacement in " RULE_FMT " mixes ? and ?N; use either ? for the literals in "
            "order or ?1, ?2... throughout",
            RULE_ARGS(at));
        ok = false;
    }
    if (ok && u.max > (long)im->nslots) {
        err(at,
            "replacement in " RULE_FMT " uses literal ?%ld but the pattern has %u; "
            "each ?, signed number, IN (...) list and run of VALUES rows counts as one",
            RULE_ARGS(at), u.max, im->nslots);
        ok = false;
    }
    return ok;
}

/* ---- regex ---------------------------------------------------------------- */

bool rules_compile_regex(const rule_src *at, const char *match, bool caseless, rule_impl *im)
{
    int code;
    PCRE2_SIZE off;
    uint32_t opts = caseless ? PCRE2_CASELESS : 0;
    /* byte mode on purpose: statements may hold invalid UTF-8 */
    im->re = pcre2_compile((PCRE2_SPTR)match, PCRE2_ZERO_TERMINATED, opts, &code, &off, NULL);
    if (!im->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        err(at, "match in " RULE_FMT " is not a valid regular expression: %s at offset %zu",
            RULE_ARGS(at), (const char *)msg, (size_t)off);
        return false;
    }
    /* JIT is an optimization only; the interpreter gives the same answers */
    (void)pcre2_jit_compile(im->re, PCRE2_JIT_COMPLETE);
    pcre2_pattern_info(im->re, PCRE2_INFO_CAPTURECOUNT, &im->ncap);
    im->how = HOW_REGEX;
    return true;
}

static long group_by_name(const rule_impl *im, const char *name, size_t len)
{
    char buf[128];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, name, len);
    buf[len] = '\0';
    int n = pcre2_substring_number_from_name(im->re, (PCRE2_SPTR)buf);
    return n < 0 ? -1 : n;
}

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* After a '$' at s[*i]: the group it names, with *i moved past it; -1
 * when malformed, -2 for $$, -3 for an unknown name. As pcre2 reads it, a
 * number ends at the first non-digit ($1a is group 1 then "a") and a name
 * at the first non-word character. */
static long dollar_ref(const rule_impl *im, const char *s, size_t *i)
{
    size_t p = *i + 1;
    if (s[p] == '$') {
        *i = p + 1;
        return -2;
    }
    bool brace = s[p] == '{';
    p += brace;
    size_t start = p;
    bool number = is_digit(s[p]);
    while (number ? is_digit(s[p]) : is_name_char(s[p]))
        p++;
    if (p == start || (brace && s[p] != '}') || p - start > 32)
        return -1;
    long g = 0;
    if (number) {
        for (size_t k = start; k < p && g <= 100000; k++)
            g = g * 10 + (s[k] - '0');
    } else if ((g = group_by_name(im, s + start, p - start)) < 0) {
        return -3;
    }
    *i = p + brace;
    return g;
}

/* Parses the pcre2_substitute replacement into pieces (used to follow
 * prepared-statement parameters) and checks every group exists. */
bool rules_compile_regex_replace(const rule_src *at, const char *repl, rule_impl *im)
{
    size_t n = strlen(repl);
    char *text = malloc(n + 1);
    if (!text) {
        err(at, "out of memory");
        return false;
    }
    im->tpl_text = text;
    tpl_builder b = {0};
    size_t tl = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < n;) {
        if (repl[i] != '$') {
            text[tl] = repl[i++];
            tpl_add(&b, (uint32_t)tl, 1, -1);
            tl++;
            continue;
        }
        size_t at_byte = i;
        long g = dollar_ref(im, repl, &i);
        if (g == -2) {
            text[tl] = '$';
            tpl_add(&b, (uint32_t)tl, 1, -1);
            tl++;
        } else if (g == -1 || g == -3) {
            err(at,
                "replace in " RULE_FMT " has %s at byte %zu; write $1 or ${1} for a group, "
                "${name} for a named group, $$ for a dollar sign",
                RULE_ARGS(at), g == -1 ? "a malformed $ reference" : "an unknown group name",
                at_byte + 1);
            ok = false;
        } else if ((uint32_t)g > im->ncap) {
            err(at, "replace in " RULE_FMT " uses $%ld but match has %u capture group%s",
                RULE_ARGS(at), g, im->ncap, im->ncap == 1 ? "" : "s");
            ok = false;
        } else {
            tpl_add(&b, 0, 0, (int32_t)g);
        }
    }
    text[tl] = '\0';
    im->tpl = b.v;
    im->ntpl = b.n;
    if (ok && b.failed) {
        err(at, "out of memory");
        ok = false;
    }
    return ok;
}

/* ---- lookup tables ---------------------------------------------------------- */

static size_t table_size(size_t count)
{
    size_t sz = 8;
    while (sz < count * 2)
        sz *= 2;
    return sz;
}

static void digest_insert(mr_ruleset *rs, uint32_t i)
{
    rule_impl *im = &rs->impl[i];
    size_t k = (size_t)im->hash & rs->dmask;
    while (rs->dtab[k].first != NO_RULE && rs->dtab[k].hash != im->hash)
        k = (k + 1) & rs->dmask;
    rs->dtab[k].hash = im->hash;
    im->next = rs->dtab[k].first;
    rs->dtab[k].first = i;
}

static void word_insert(mr_ruleset *rs, uint32_t i)
{
    rule_impl *im = &rs->impl[i];
    size_t len = strlen(im->require);
    uint64_t h = rules_word_hash(im->require, len);
    size_t k = (size_t)h & rs->wmask;
    while (rs->wtab[k].word &&
           !(rs->wtab[k].hash == h && strcmp(rs->wtab[k].word, im->require) == 0))
        k = (k + 1) & rs->wmask;
    if (!rs->wtab[k].word) {
        rs->wtab[k].word = im->require;
        rs->wtab[k].len = (uint32_t)len;
        rs->wtab[k].hash = h;
        rs->wtab[k].first = NO_RULE;
    }
    im->next = rs->wtab[k].first;
    rs->wtab[k].first = i;
}

static bool alloc_tables(mr_ruleset *rs, size_t ndig, size_t nword, size_t nalways)
{
    if (ndig) {
        rs->dmask = table_size(ndig) - 1;
        rs->dtab = malloc((rs->dmask + 1) * sizeof *rs->dtab);
        if (!rs->dtab)
            return false;
        for (size_t k = 0; k <= rs->dmask; k++)
            rs->dtab[k] = (digest_slot){.hash = 0, .first = NO_RULE};
    }
    if (nword) {
        rs->wmask = table_size(nword) - 1;
        rs->wtab = calloc(rs->wmask + 1, sizeof *rs->wtab);
        if (!rs->wtab)
            return false;
    }
    if (nalways) {
        rs->always = malloc(nalways * sizeof *rs->always);
        if (!rs->always)
            return false;
    }
    return true;
}

/* Rules a kind tries apart (delayed, through take) or that ask nothing of
 * statements (a queue rule without skip_locked or claim_read_committed)
 * are never candidates. */
static bool never_candidate(const mr_rule *r)
{
    return !r->enabled || (r->entry->candidate && !r->entry->candidate(r));
}

bool rules_build_tables(mr_ruleset *rs)
{
    size_t ndig = 0, nword = 0, nalways = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const rule_impl *im = &rs->impl[i];
        if (rs->rules[i].enabled)
            rs->types |= 1u << rs->rules[i].kind;
        rs->has_block |=
            rs->rules[i].kind == MR_RULE_BLOCK && rs->rules[i].enabled && !rs->rules[i].log_only;
        rs->any_block |= rs->rules[i].kind == MR_RULE_BLOCK && rs->rules[i].enabled;
        if (never_candidate(&rs->rules[i]))
            continue;
        if (im->how == HOW_DIGEST)
            ndig++;
        else if (im->how == HOW_REGEX && im->require)
            nword++;
        else
            nalways++;
        if (im->how == HOW_REGEX && im->ncap + 1 > rs->max_ovec)
            rs->max_ovec = im->ncap + 1;
    }
    if (!alloc_tables(rs, ndig, nword, nalways))
        return false;
    /* inserting backwards leaves every chain in rule order */
    for (size_t i = rs->n; i-- > 0;) {
        const rule_impl *im = &rs->impl[i];
        if (!rs->rules[i].enabled)
            continue;
        if (im->how == HOW_DIGEST)
            digest_insert(rs, (uint32_t)i);
        else if (im->how == HOW_REGEX && im->require)
            word_insert(rs, (uint32_t)i);
    }
    for (size_t i = 0; i < rs->n; i++) {
        const rule_impl *im = &rs->impl[i];
        if (!never_candidate(&rs->rules[i]) && im->how != HOW_DIGEST &&
            !(im->how == HOW_REGEX && im->require))
            rs->always[rs->nalways++] = (uint32_t)i;
    }
    return true;
}

void rules_impl_free(rule_impl *im)
{
    free(im->digest);
    if (im->re)
        pcre2_code_free(im->re);
    free(im->require);
    free((char *)im->tpl_text);
    free(im->tpl);
    memset(im, 0, sizeof *im);
}
