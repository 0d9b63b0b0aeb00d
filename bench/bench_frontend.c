/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_frontend.c - nanoseconds per statement through the SQL front end
 * and the rule matcher, over a mix of ten statement shapes:
 *   lex           sql_lex alone
 *   digest        sql_digest alone
 *   apply/empty   mr_rules_apply with no rules (digest included)
 *   apply/digest  1,000 rewrite rules (hash lookup on the digest)
 *   apply/regex   1,000 regex rules (word prefilter, then pcre2)
 *   apply/regex*  the same rules with the prefilter turned off
 *   apply/block   10 regex rewrites and a `where = missing` block, with the
 *                 session's unsure lexer bits (ANSI_QUOTES and the multibyte
 *                 rule): the other readings' pre-scan runs on every text
 *   apply/modes   that set on the mix with each text followed by a second
 *                 statement that holds a backslash escape: texts that do read
 *                 differently in another mode, so every reading is examined
 *   clock pair    two clock_gettime(CLOCK_MONOTONIC) calls: what the proxy
 *                 adds per statement to time its front end (and, for
 *                 comparison, the same with CLOCK_MONOTONIC_COARSE)
 * and, per rule set, how many regexes ran and how many allocations the
 * matcher made once warmed up (counted by wrapping malloc/calloc/realloc
 * at link time, so only this program's and the static libraries' calls).
 *
 * Usage: bench_frontend [iterations-per-statement]   (default 200000)
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "myrewrite/core/rule_kinds.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/sql/digest.h"
#include "myrewrite/sql/lexer.h"

/* ---- allocation counting (-Wl,--wrap=...) ---- */

static atomic_ulong allocations;

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

void *__wrap_malloc(size_t n)
{
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __real_realloc(p, n);
}

/* ---- the workload ---- */

static const char *mix[] = {
    "SELECT * FROM orders WHERE id = 12345",
    "SELECT id, name FROM customers WHERE email = 'someone@example.com' AND active = 1",
    "UPDATE accounts SET balance = balance - 25.50, updated_at = NOW() WHERE id = 991",
    "INSERT INTO events (user_id, kind, payload) VALUES (17, 'click', '{\"x\":1}'), "
    "(18, 'view', '{}')",
    "SELECT o.id, o.total, c.name FROM orders o JOIN customers c ON c.id = o.customer_id "
    "WHERE o.created_at > '2024-01-01' ORDER BY o.total DESC LIMIT 50",
    "DELETE FROM sessions WHERE expires < 1700000000",
    "SELECT COUNT(*) FROM tbl_42 WHERE status IN (1, 2, 3, 4)",
    "COMMIT",
    "SELECT * FROM products WHERE sku = 'AB-1234' /* app:web */",
    "SELECT @@version_comment LIMIT 1",
};
#define NMIX (sizeof mix / sizeof mix[0])

/* One of four rule shapes over table tbl_<i>. */
static int digest_rule(char *out, size_t cap, int i)
{
    switch (i % 4) {
    case 0:
        return snprintf(out, cap,
                        "[rewrite d%d]\npattern = SELECT * FROM tbl_%d WHERE id = ?\n"
                        "replacement = SELECT a, b FROM tbl_%d WHERE id = ?\n",
                        i, i, i);
    case 1:
        return snprintf(out, cap,
                        "[rewrite d%d]\npattern = UPDATE tbl_%d SET a = ? WHERE id = ?\n"
                        "replacement = UPDATE tbl_%d SET a = ? WHERE id = ? LIMIT 1\n",
                        i, i, i);
    case 2:
        return snprintf(out, cap,
                        "[rewrite d%d]\n"
                        "pattern = SELECT a, b FROM tbl_%d WHERE c IN (?) ORDER BY a\n"
                        "replacement = SELECT a, b FROM tbl_%d WHERE c IN (?) ORDER BY a "
                        "LIMIT 100\n",
                        i, i, i);
    default:
        return snprintf(out, cap,
                        "[rewrite d%d]\npattern = INSERT INTO tbl_%d (a, b) VALUES (?, ?)\n"
                        "replacement = INSERT IGNORE INTO tbl_%d (a, b) VALUES (?)\n",
                        i, i, i);
    }
}

/* n digest rules; one of them matches the first statement of the mix. */
static char *digest_rules(int n)
{
    size_t cap = (size_t)n * 200 + 200, len = 0;
    char *text = malloc(cap);
    for (int i = 0; i < n; i++) {
        if (i == n / 2)
            len += (size_t)snprintf(text + len, cap - len,
                                    "[rewrite orders_cols]\n"
                                    "pattern = SELECT * FROM orders WHERE id = ?\n"
                                    "replacement = SELECT id, total FROM orders WHERE id = ?\n");
        else
            len += (size_t)digest_rule(text + len, cap - len, i);
    }
    return text;
}

/* n regex rules, each over its own table; with n > 42 one matches tbl_42.
 * With `prefilter` off every rule says require = none: the cost without it. */
static char *regex_rules(int n, bool prefilter)
{
    size_t cap = (size_t)n * 200 + 200, len = 0;
    char *text = malloc(cap);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "[regex r%d]\nmatch = ^SELECT (.+) FROM tbl_%d WHERE (.+)$\n"
                                "replace = SELECT $1 FROM tbl_%d_v2 WHERE $2\n%s",
                                i, i, i, prefilter ? "" : "require = none\n");
    return text;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static size_t lens[NMIX];
static volatile uint64_t sink;

static double bench_lex(long iters)
{
    sql_token toks[256];
    double t0 = now_ns();
    for (long k = 0; k < iters; k++)
        for (size_t i = 0; i < NMIX; i++) {
            size_t n;
            sql_lex(mix[i], lens[i], 0, toks, 256, &n);
            sink += n;
        }
    return (now_ns() - t0) / ((double)iters * NMIX);
}

static double bench_digest(long iters)
{
    char out[1024];
    double t0 = now_ns();
    for (long k = 0; k < iters; k++)
        for (size_t i = 0; i < NMIX; i++) {
            sql_digest_result dr;
            sql_digest(mix[i], lens[i], 0, out, sizeof out, &dr);
            sink += dr.hash;
        }
    return (now_ns() - t0) / ((double)iters * NMIX);
}

/* ns per pair of clock reads, the way session/stmt/statement.c takes them. */
static double bench_clock_pair(clockid_t id, long iters)
{
    double t0 = now_ns();
    for (long k = 0; k < iters; k++) {
        struct timespec a, b;
        clock_gettime(id, &a);
        clock_gettime(id, &b);
        sink += (uint64_t)(b.tv_nsec - a.tv_nsec);
    }
    return (now_ns() - t0) / (double)iters;
}

typedef struct outcome {
    double ns;
    unsigned rewritten; /* statements of the mix rewritten */
    double regex_per_stmt;
    unsigned long allocs; /* during the timed loop */
} outcome;

static outcome bench_apply(const mr_ruleset *rs, long iters)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res;
    memset(&res, 0, sizeof res);
    mr_buf_init(&res.text);
    mr_buf_init(&res.would_be);
    mr_stmt_ctx ctx = {
        .user = "app", .schema = "shop", .lex_unsure = SQL_LEX_ANSI_QUOTES | SQL_LEX_MB_MASK};
    outcome o = {0};
    for (size_t i = 0; i < NMIX; i++) { /* warm-up: buffers reach their size */
        mr_rules_apply(rs, mix[i], lens[i], &ctx, s, &res);
        o.rewritten += res.action == MR_ACT_REWRITE;
    }
    uint64_t runs0 = mr_rules_scratch_regex_runs(s);
    unsigned long a0 = atomic_load(&allocations);
    double t0 = now_ns();
    for (long k = 0; k < iters; k++)
        for (size_t i = 0; i < NMIX; i++) {
            mr_rules_apply(rs, mix[i], lens[i], &ctx, s, &res);
            sink += res.digest_hash;
        }
    o.ns = (now_ns() - t0) / ((double)iters * NMIX);
    o.allocs = atomic_load(&allocations) - a0;
    o.regex_per_stmt = (double)(mr_rules_scratch_regex_runs(s) - runs0) / ((double)iters * NMIX);
    mr_buf_free(&res.text);
    mr_buf_free(&res.would_be);
    mr_rules_scratch_free(s);
    return o;
}

static mr_ruleset *load(char *text, const char *name)
{
    mr_diag d = {stderr, 0};
    mr_ruleset *rs = mr_rules_load_string(text, name, mr_rule_kinds_all, 1, &d);
    free(text);
    if (!rs) {
        fprintf(stderr, "bench: %s rules do not load\n", name);
        exit(1);
    }
    return rs;
}

static void report(const char *what, size_t nrules, outcome o)
{
    printf("%-14s %5zu rules  %8.1f ns/stmt  rewritten %u/%zu  regex runs/stmt %.2f  "
           "allocations %lu\n",
           what, nrules, o.ns, o.rewritten, NMIX, o.regex_per_stmt, o.allocs);
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 200000;
    if (iters <= 0)
        iters = 1;
    size_t bytes = 0;
    for (size_t i = 0; i < NMIX; i++)
        bytes += lens[i] = strlen(mix[i]);
    printf("mix: %zu statements, %zu bytes on average, %ld iterations each\n", NMIX, bytes / NMIX,
           iters);
    printf("%-14s %14s  %8.1f ns/stmt\n", "lex", "", bench_lex(iters));
    printf("%-14s %14s  %8.1f ns/stmt\n", "digest", "", bench_digest(iters));
    mr_ruleset *empty = mr_rules_empty(mr_rule_kinds_all, 1);
    report("apply/empty", 0, bench_apply(empty, iters));
    mr_ruleset_free(empty);
    for (int n = 10; n <= 1000; n *= 100) {
        mr_ruleset *dig = load(digest_rules(n), "digest.rules");
        report("apply/digest", mr_ruleset_count(dig), bench_apply(dig, iters));
        mr_ruleset_free(dig);
        mr_ruleset *rx = load(regex_rules(n, true), "regex.rules");
        report("apply/regex", mr_ruleset_count(rx), bench_apply(rx, iters));
        mr_ruleset_free(rx);
    }
    /* 1,000 regexes without the prefilter, fewer iterations: it is slow */
    mr_ruleset *rx = load(regex_rules(1000, false), "regex.rules");
    report("apply/regex*", mr_ruleset_count(rx), bench_apply(rx, iters / 100 + 1));
    mr_ruleset_free(rx);
    printf("(* every regex has require = none: no prefilter)\n");
    char *block = regex_rules(10, true);
    size_t bl = strlen(block);
    static const char where[] = "[block full_update]\nstatement = update, delete\n"
                                "where = missing\nmessage = no\n";
    block = realloc(block, bl + sizeof where);
    memcpy(block + bl, where, sizeof where);
    mr_ruleset *bk = load(block, "block.rules");
    report("apply/block", mr_ruleset_count(bk), bench_apply(bk, iters));
    for (size_t i = 0; i < NMIX; i++) { /* the same mix, each with an escape after it */
        char *t = malloc(lens[i] + 32);
        lens[i] = (size_t)sprintf(t, "%s; SELECT 'it\\'s'", mix[i]);
        mix[i] = t;
    }
    report("apply/modes", mr_ruleset_count(bk), bench_apply(bk, iters / 10 + 1));
    mr_ruleset_free(bk);
    printf("%-14s %14s  %8.1f ns/stmt\n", "clock pair", "MONOTONIC",
           bench_clock_pair(CLOCK_MONOTONIC, iters * NMIX));
    printf("%-14s %14s  %8.1f ns/stmt\n", "clock pair", "MONOTONIC_COARSE",
           bench_clock_pair(CLOCK_MONOTONIC_COARSE, iters * NMIX));
    return 0;
}
