/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/kind.h - the rule-kind interface: what a kind of rule ([rewrite ...],
 * [delayed ...], ...) gives the rules layer through one table entry, and what
 * the rules layer gives a kind in return while loading and while matching.
 *
 * The rules layer knows no kind but through this table: it reads the
 * sections of rule files, hands each to the entry whose word heads it, and
 * at match time calls the entry's function for the rules of that kind. The
 * table is assembled above the kinds (core/rule_kinds.c) and passed to the
 * loader, which keeps it in the rule set.
 *
 * Pure, any thread. Entries are const; a kind keeps its per-worker buffers
 * in the matcher's scratch (mr_rule_kind_scratch), never in a global.
 */
#ifndef MYREWRITE_RULES_KIND_H
#define MYREWRITE_RULES_KIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "myrewrite/rules/rules.h"
#include "myrewrite/sql/lexer.h"
#include "myrewrite/sql/stmt.h"

struct rule_impl;
struct rules_trace;

/* ---- loading ------------------------------------------------------------------- */

/* The loader reading rule files (rules/load.c). */
typedef struct mr_rule_loader mr_rule_loader;

/* Most keys one section may hold: a kind's own and the common ones. */
#define MR_RULE_MAX_KEYS 32

/* A section being read: its kind, name, and each key's raw value and line,
 * by the key's place in the kind's list followed by the common keys. */
typedef struct mr_rule_draft {
    const struct mr_rule_kind *kind;
    char *name;
    int line;
    char *val[MR_RULE_MAX_KEYS];
    int vline[MR_RULE_MAX_KEYS];
} mr_rule_draft;

/* The value of `key` as written (NULL when not given) and its line (0). */
const char *mr_rule_val(const mr_rule_draft *dr, const char *key);
int mr_rule_line(const mr_rule_draft *dr, const char *key);

/* Reports a problem at `line` of the file being read: the load fails. */
void mr_rule_error(mr_rule_loader *L, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void mr_rule_oom(mr_rule_loader *L);
char *mr_rule_strdup(mr_rule_loader *L, const char *s);
/* The rules read so far, in order (a kind may check its rule against them). */
size_t mr_rule_loaded(const mr_rule_loader *L, const mr_rule **rules);

/* Shared value readers (rules/load_keys.c). Each reports its own error as
 * `key = 'value' in [kind name]: expected ...` and returns false. */
void mr_rule_bad_value(mr_rule_loader *L, const mr_rule_draft *dr, const char *key,
                       const char *expected);
/* The key must be given, and not empty; `what` says why. */
bool mr_rule_need(mr_rule_loader *L, const mr_rule_draft *dr, const char *key, const char *what);
bool mr_rule_bool(mr_rule_loader *L, const mr_rule_draft *dr, const char *key, bool dflt,
                  bool *out);
/* A whole number from 1 to max; dflt when not given. */
bool mr_rule_count(mr_rule_loader *L, const mr_rule_draft *dr, const char *key, uint64_t dflt,
                   uint64_t max, uint64_t *out);
/* A table or column name (1 to 64 characters, no backticks); NULL when not given. */
bool mr_rule_name(mr_rule_loader *L, const mr_rule_draft *dr, const char *key, char **out);
/* A comma list of up to MR_RULE_MAX_NAMES different column names. */
#define MR_RULE_MAX_NAMES 16
bool mr_rule_names(mr_rule_loader *L, const mr_rule_draft *dr, const char *key, char ***out,
                   size_t *n);
void mr_rule_names_free(char **v, size_t n);
/* `table = t` or `schema.t`, the schema from there or from the `schema` key. */
bool mr_rule_table(mr_rule_loader *L, const mr_rule_draft *dr, char **schema, char **table);
/* A duration above zero (base/duration.h). */
bool mr_rule_duration(const char *v, uint64_t *ms);

/* ---- matching -------------------------------------------------------------------- */

/* Why a rule did or did not apply to one statement. */
typedef enum rule_why {
    WHY_MATCHED,
    WHY_LOG_ONLY, /* matched, original kept */
    WHY_DISABLED,
    WHY_USER,
    WHY_SCHEMA,
    WHY_DIGEST,      /* digest differs */
    WHY_WORD,        /* prefilter word absent: regex not run */
    WHY_NO_MATCH,    /* regex ran, no match */
    WHY_REGEX_ERROR, /* pcre2 gave up (match limit...) */
    WHY_NOT_KIND,    /* statement kind is not the blocked one */
    WHY_HAS_WHERE,
    WHY_UNSURE,     /* recognizer could not read the statement */
    WHY_PREPARED,   /* would change the prepared statement's parameters */
    WHY_BAD_RESULT, /* the rewritten text does not lex as one statement */
    WHY_SLOTS,      /* literal slots differ from the pattern's */
    WHY_CHARSET,    /* the session's character set: only blocks run (sql/charset_guard.h) */
    WHY_NOTED,      /* matched and counted, text kept, the rules go on (a queue claim) */
} rule_why;

/* A growable byte string the matcher owns (a statement version). */
typedef struct mr_rule_text {
    char *p;
    size_t len;
    size_t cap;
} mr_rule_text;

/* One statement as the rules currently see it. */
typedef struct mr_rule_stmt {
    const char *text;
    size_t len;
    unsigned version; /* 0 = as sent; +1 per continued rewrite */
    const char *dig;  /* NULL when the text does not lex */
    size_t dig_len;
    uint64_t hash;
    bool parsed; /* st below is valid, its tokens in the run's tok */
    sql_stmt st;
    int nparams; /* parameters in the scratch; -1 until collected */
} mr_rule_stmt;

/* One mr_rules_apply call. */
typedef struct mr_rule_run {
    const mr_ruleset *rs;
    const mr_stmt_ctx *ctx;
    mr_rules_scratch *s;
    mr_match_result *res;
    const struct rules_trace *tr;
    const sql_token *tok; /* tokens of the latest statement parsed (mr_rule_parse_stmt) */
    unsigned shard;
    size_t whole_len;      /* length of the whole text's digest */
    uint64_t now;          /* unix time, read at the first hit */
    int spare;             /* ver[] buffer a rewrite may write */
    char detail[256];      /* trace detail of the latest rule */
    const char *block_msg; /* set by a rule of another kind that blocks (paginate's guardrail) */
    bool multi;            /* the text holds more than one statement */
    unsigned dyn_depth;    /* > 0: matching the SQL inside EXECUTE IMMEDIATE / PREPARE
                              ... FROM (rules/dynamic.c): only block rules are tried */
    bool reading;          /* another reading of the text (rules/readings.c): block rules only, and
                              no kind takes a statement over */
} mr_rule_run;

/* How a kind that takes statements over before any rule left one. */
typedef enum mr_take_step {
    MR_TAKE_NONE,    /* not its statement: the rules meet it */
    MR_TAKE_DONE,    /* S now holds the text to send; no other rule meets it */
    MR_TAKE_BLOCKED, /* refused: res is a block with the reason */
    MR_TAKE_HELD,    /* res says what the caller does instead; nothing is sent */
} mr_take_step;

/* Makes room for n bytes in t (a rewrite's output); false when out of memory. */
bool mr_rule_text_reserve(mr_rule_text *t, size_t n);
/* Records that rule i matched: res->matched and the hit counters. */
void mr_rule_count_hit(mr_rule_run *R, size_t i);
/* Lexes and recognizes S (S->st, R->tok); false when out of memory. */
bool mr_rule_parse_stmt(mr_rule_run *R, mr_rule_stmt *S);
/* Reports rule i to the trace (explain), with `detail`; no-op without one. */
void mr_rule_trace(mr_rule_run *R, size_t i, rule_why why, const char *detail);
/* The kind's own per-worker buffers: `size` zeroed bytes made at its first
 * use by this scratch, freed with it (after the kind's scratch_free). NULL
 * when out of memory. */
void *mr_rule_kind_scratch(mr_rule_run *R, const struct mr_rule_kind *k, size_t size);

/* ---- the entry ------------------------------------------------------------------ */

typedef struct mr_rule_kind {
    const char *name; /* the section header's first word: [name rule] */
    mr_rule_type type;
    /* A prepared statement a rule of the kind rewrote runs in a form each
     * COM_STMT_EXECUTE must repeat its part of (counts, a prelude, a
     * guard): the session relays no COM_STMT_BULK_EXECUTE of it. */
    bool no_bulk;
    const char *const *keys; /* its keys, NULL-terminated, in the order errors list them
                                (the common keys follow) */
    /* Checks the section's keys and fills r (settings, pattern text shown
     * by SHOW RULES) and, for a kind matched by pattern, im. False after
     * reporting every problem found. */
    bool (*parse)(mr_rule_loader *L, const mr_rule_draft *dr, mr_rule *r, struct rule_impl *im);
    void (*free)(mr_rule *r); /* frees r->settings; NULL: none */
    /* Does rule i apply to S? A rewrite leaves its text in `out`; NULL: the
     * kind is matched by its compiled pattern (rules/match.c). */
    rule_why (*apply)(mr_rule_run *R, mr_rule_stmt *S, size_t i, mr_rule_text *out);
    /* False for a rule never tried as a candidate (one that acts through
     * take only, or whose settings ask nothing of statements); NULL: true. */
    bool (*candidate)(const mr_rule *r);
    /* Called on every statement that lexes before any rule, even in a set
     * with no rule of the kind; NULL: none. */
    mr_take_step (*take)(mr_rule_run *R, mr_rule_stmt *S);
    /* With no rule at all: could the text hold a statement `take` wants? */
    bool (*mentions)(const char *sql, size_t len);
    /* A text that does not lex, its readable part recognized as `st`: true
     * when the kind refuses it whatever the policy, res then a block whose
     * message it wrote into msg (`why` says where the text stops lexing). */
    bool (*unreadable)(mr_rule_run *R, const sql_stmt *st, const char *why, char *msg, size_t cap);
    void (*scratch_free)(void *p); /* frees what its scratch holds; NULL: nothing */
    /* explain: "matched: ..." for a rule of the kind; NULL: "matched: rewrite" */
    void (*explain_match)(FILE *out, const mr_rule *r, const char *detail);
    /* The tables SHOW lists for rule r (staging: NULL when none); NULL: none. */
    bool (*tables)(const mr_rule *r, const char **schema, const char **table, const char **staging);
    /* True when rule r takes the row key of its table (the one `tables`
     * gives) from the schema cache, which then loads it as rules load. */
    bool (*wants_row_key)(const mr_rule *r);
} mr_rule_kind;

/* The generic kinds, matched by pattern (rules/kind_pattern.c). */
extern const mr_rule_kind mr_rewrite_kind, mr_regex_kind, mr_block_kind;

#endif
