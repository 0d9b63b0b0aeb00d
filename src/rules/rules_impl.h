/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/rules_impl.h - what the rules_*.c files share privately: the compiled
 * form of a rule, the rule set with its lookup tables, the loader, the
 * compilers, literal slots, and the matcher's trace hook used by explain.
 *
 * Pure, any thread. Nothing here is part of the public contract (rules/rules.h).
 */
#ifndef MYREWRITE_RULES_IMPL_H
#define MYREWRITE_RULES_IMPL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "myrewrite/rules/kind.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/sql/lexer.h"

#define NO_RULE UINT32_MAX

/* Prefilter words are hashed lower-case with FNV-1a 64, at load and while
 * scanning statements. */
#define RULES_FNV_OFFSET 0xcbf29ce484222325ULL
#define RULES_FNV_PRIME 0x100000001b3ULL

static inline uint64_t rules_word_hash(const char *w, size_t n)
{
    uint64_t h = RULES_FNV_OFFSET;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        h = (h ^ c) * RULES_FNV_PRIME;
    }
    return h;
}

/* How a rule recognizes its statements. */
typedef enum rule_how {
    HOW_DIGEST,   /* rewrite, block pattern: digest equality */
    HOW_REGEX,    /* regex, block match: pcre2 */
    HOW_NO_WHERE, /* block statement + where = missing: the recognizer */
    HOW_KIND,     /* the kind's own apply (rules/kind.h): queue, delayed, paginate */
} rule_how;

/* One piece of a replacement: bytes of tpl_text, or a reference to a
 * literal slot (rewrite) or capture group (regex). */
typedef struct tpl_piece {
    uint32_t off;
    uint32_t len;
    int32_t ref; /* -1: literal bytes; else slot index (0-based) or group number */
} tpl_piece;

/* The statement version a trace sees for the SQL inside EXECUTE IMMEDIATE
 * or PREPARE ... FROM a literal (rules/dynamic.c; explain says so). */
#define RULES_VERSION_INNER UINT32_MAX

typedef struct rule_impl {
    rule_how how;
    /* HOW_DIGEST */
    char *digest; /* normalized pattern */
    size_t digest_len;
    uint64_t hash;
    uint32_t nslots; /* literal slots of the pattern */
    /* HOW_REGEX */
    pcre2_code *re;
    uint32_t ncap; /* capture groups */
    bool global;
    char *require;        /* lower-case prefilter word; NULL = run on every statement */
    bool require_derived; /* found in the pattern rather than set with `require` */
    /* HOW_NO_WHERE: bit (1u << sql_stmt_kind) per blocked statement kind */
    unsigned stmt_mask;
    /* block `dynamic = refuse`: also refuse statements that run SQL the
     * rules cannot read (rules/dynamic.c) */
    bool dynamic_refuse;
    /* replacement (rewrite, regex) */
    const char *tpl_text; /* the bytes literal pieces point into (owned) */
    tpl_piece *tpl;
    size_t ntpl;
    /* next rule with the same digest hash or prefilter word, in rule order */
    uint32_t next;
} rule_impl;

typedef struct digest_slot {
    uint64_t hash;
    uint32_t first; /* NO_RULE = empty */
} digest_slot;

typedef struct word_slot {
    uint64_t hash;
    const char *word; /* lower case, NUL-terminated; NULL = empty */
    uint32_t len;
    uint32_t first;
} word_slot;

struct mr_ruleset {
    mr_rule *rules;
    rule_impl *impl;
    size_t n;
    unsigned shards;
    size_t stride;     /* counters per shard, rounded to a cache line */
    mr_counter *hits;  /* [shard * stride + rule] */
    mr_counter *last;  /* same layout: unix time of the latest hit */
    digest_slot *dtab; /* digest hash -> chain of rules */
    size_t dmask;      /* table size - 1; dtab NULL when no digest rules */
    word_slot *wtab;   /* prefilter word -> chain of regex rules */
    size_t wmask;
    uint32_t *always; /* enabled rules without a lookup key, in order */
    size_t nalways;
    uint32_t max_ovec;          /* largest capture count + 1 over all regexes */
    const mr_rule_kinds *kinds; /* the table the set was loaded with */
    const mr_rule_kind *takers[MR_RULE_KIND_MAX + 1]; /* kinds with take, NULL-terminated */
    unsigned types; /* bit (1u << mr_rule_type) per kind with an enabled rule */
    bool has_block; /* a block rule in force: unreadable = auto blocks what does not lex */
    bool any_block; /* an enabled block rule, log_only too: dynamic SQL is examined */
};

/* ---- reading rule text (rules/load.c) ------------------------------------ */

typedef struct mr_rule_loader rules_loader;

/* Starts reading rules; every problem is reported through d. NULL (and
 * an error reported) when out of memory. */
rules_loader *rules_loader_new(mr_diag *d, const mr_rule_kinds *kinds);
/* Where the loader reports (compile errors of a pattern kind). */
mr_diag *rules_loader_diag(rules_loader *L);
/* Reads the rules of one file's text; `file` names it in diagnostics. */
void rules_loader_add(rules_loader *L, const char *file, const char *text, size_t len);
/* Frees the loader. True when nothing went wrong since rules_loader_new:
 * the rules read are then handed over, in order; else they are freed. */
bool rules_loader_take(rules_loader *L, mr_rule **rules, rule_impl **impl, size_t *n);
void rules_free_rules(mr_rule *rules, rule_impl *impl, size_t n);

/* ---- compiling one rule (rules/compile.c) ------------------------------ */

/* Where a value came from, for error messages. */
typedef struct rule_src {
    mr_diag *d;
    const mr_rule *r;
    int line;
} rule_src;

bool rules_compile_pattern(const rule_src *at, const char *pattern, rule_impl *im);
bool rules_compile_replacement(const rule_src *at, const char *repl, rule_impl *im);
bool rules_compile_regex(const rule_src *at, const char *match, bool caseless, rule_impl *im);
bool rules_compile_regex_replace(const rule_src *at, const char *repl, rule_impl *im);
/* The prefilter word a regex needs, or NULL when none can be proven;
 * returned lower-case and malloc'ed. */
char *rules_derive_word(const char *pattern, size_t len);
/* Builds the lookup tables over the compiled rules. */
bool rules_build_tables(mr_ruleset *rs);
void rules_impl_free(rule_impl *im);

/* ---- literal slots (rules/slots.c) ------------------------------------- */

/* A literal position of a statement: the source bytes [off, end) behind
 * one `?` of its digest, or the inside of a collapsed `(...)` list. */
typedef struct rules_slot {
    uint32_t off;
    uint32_t end;
} rules_slot;

/* Walks s[0..n) as sql_digest does and stores the source span of every
 * `?` and `(...)` the digest writes, in order. Returns the number found
 * (only the first `max` are stored), or SIZE_MAX on a lexing error. */
size_t rules_slots(const char *s, size_t n, unsigned lex_flags, rules_slot *out, size_t max);

/* ---- the matcher and its trace (rules/match.c) ------------------------- */

/* Called by the matcher when tracing (explain); any may be NULL. */
typedef struct rules_trace {
    void *ctx;
    /* A statement (or a rewritten version of it, version > 0) is about to
     * meet the rules; `dig` is its digest, NULL when it does not lex. */
    void (*statement)(void *ctx, unsigned index, unsigned version, const char *text, size_t len,
                      const char *dig, uint64_t hash);
    void (*rule)(void *ctx, const mr_ruleset *rs, size_t i, rule_why why, const char *detail);
    /* Rules from index `from` on were not tried: `stopper` matched without continue. */
    void (*stopped)(void *ctx, const mr_ruleset *rs, size_t from, size_t stopper);
} rules_trace;

/* mr_rules_apply with an optional trace; with a trace every rule is
 * reported (not only the candidates) and no hit is counted. */
void rules_run(const mr_ruleset *rs, const char *sql, size_t len, const mr_stmt_ctx *ctx,
               mr_rules_scratch *scratch, mr_match_result *res, const rules_trace *trace);

#endif
