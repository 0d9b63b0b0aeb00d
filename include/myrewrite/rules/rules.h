/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/rules.h - DBA rule files (rules/NAME.rules) and the matcher that applies them.
 *
 * Pure, any thread: a rule set is built from files on the main thread (at
 * start, on SIGHUP, on RELOAD RULES) and is immutable afterwards; workers
 * share it read-only. Only the hit counters change, and each worker writes
 * its own shard of them (single-writer relaxed atomics), so matching takes
 * no lock.
 *
 * File format (INI, see rules/README.md): one rule per section, the header
 * names the kind and the rule, `[rewrite no_star_orders]`. The loader knows
 * the kinds of the table it is given (rules/kind.h; the proxy's is
 * core/rule_kinds.h):
 *   rewrite  digest pattern -> replacement reusing the matched literals
 *   regex    pcre2 pattern -> replacement with $1 groups
 *   block    the client gets an ERR with the DBA's message
 *   queue    a table used as a queue: the proxy releases the claims of
 *            sessions that end (queue/release.h) and may add SKIP LOCKED
 *   delayed  UPDATE/DELETE DELAYED on a table become staging INSERTs that a
 *            background flusher applies (delayed/staging_sql.h, delayed/flush.h)
 *   paginate deep `LIMIT off, n` pages of one table become a deferred join
 *            (paginate/deferred_sql.h); pages deeper than max_offset are refused
 */
#ifndef MYREWRITE_RULES_H
#define MYREWRITE_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/base/config.h"
#include "myrewrite/base/counters.h"
#include "myrewrite/rules/keyset_note.h"
#include "myrewrite/rules/kind_list.h"

struct mr_rule_kind;
struct mr_rule_stats;
struct mr_queue_def;
struct mr_delayed_def;
struct mr_paginate_def;

/* The kind of a rule: the tag its table entry (rules/kind.h) carries, for
 * code that tells kinds apart without calling the entry; one per line of
 * rules/kind_list.h, in its order (the entry's index in the table). */
#define MR_RULE_TAG_(tag, entry) MR_RULE_##tag,
typedef enum mr_rule_type { MR_RULE_KIND_LIST(MR_RULE_TAG_) MR_RULE_KIND_MAX } mr_rule_type;
#undef MR_RULE_TAG_

/* What a rule asks to log when it matches. */
typedef enum mr_rule_log {
    MR_RULE_LOG_OFF,    /* nothing */
    MR_RULE_LOG_DIGEST, /* rule name and the digest (no literals) */
    MR_RULE_LOG_FULL,   /* original and rewritten text */
} mr_rule_log;

/* One rule as loaded; immutable. */
typedef struct mr_rule {
    char *name;
    char *file; /* path as given to the loader */
    int line;   /* line of the section header */
    mr_rule_type kind;
    bool enabled;  /* `enabled = no` keeps the rule listed but never matched */
    bool cont;     /* `continue = yes`: later rules see the rewritten text */
    bool log_only; /* match and log, but send the original */
    mr_rule_log log;
    uint32_t log_sample;              /* log one match in this many (per worker); 1 = every match */
    char *user;                       /* filter: only this user (NULL = any) */
    char *schema;                     /* filter: only this default schema (NULL = any) */
    char *pattern;                    /* as written in the file */
    char *replacement;                /* rewrite/regex; NULL for block */
    char *message;                    /* block; paginate's guardrail (NULL: the default message) */
    const struct mr_rule_kind *entry; /* the kind's table entry (rules/kind.h) */
    union { /* the kind's settings, owned by the rule (its entry frees them); NULL for
               rewrite, regex and block. One pointer read, typed by kind: */
        const void *settings;
        const struct mr_queue_def *queue;       /* queue/rule.h */
        const struct mr_delayed_def *delayed;   /* delayed/rule.h */
        const struct mr_paginate_def *paginate; /* paginate/rule.h */
    };
    uint16_t err_code; /* block; default 1148 */
    char sqlstate[6];  /* block; default 42000 */
    void *impl;        /* kind-specific compiled form (owned by the rule set) */
} mr_rule;

typedef struct mr_ruleset mr_ruleset;

/* The kinds a loader knows: a NULL-terminated list of table entries
 * (core/rule_kinds.h has the proxy's). The set keeps it; it must outlive
 * the set. A section headed by a word no entry has is an error. */
typedef const struct mr_rule_kind *const mr_rule_kinds;

/* Loads every *.rules file in `dir`, in file-name order. Returns NULL when
 * any file has an error; every error is reported through `d` as
 * `file:line: message`. A missing directory is an error; an empty one gives
 * an empty set. `shards` is the number of hit-counter shards (workers). */
mr_ruleset *mr_rules_load_dir(const char *dir, const mr_rule_kinds *kinds, unsigned shards,
                              mr_diag *d);
/* Loads rules from a string (tests, the dry run); `name` stands in for the
 * file name in diagnostics. */
mr_ruleset *mr_rules_load_string(const char *text, const char *name, const mr_rule_kinds *kinds,
                                 unsigned shards, mr_diag *d);
mr_ruleset *mr_rules_empty(const mr_rule_kinds *kinds, unsigned shards);
void mr_ruleset_free(mr_ruleset *rs);

/* The kinds the set was loaded with. */
const mr_rule_kinds *mr_ruleset_kinds(const mr_ruleset *rs);
/* True when the set holds at least one enabled rule of this kind. */
bool mr_ruleset_has_type(const mr_ruleset *rs, mr_rule_type t);
size_t mr_ruleset_count(const mr_ruleset *rs);
const mr_rule *mr_ruleset_rule(const mr_ruleset *rs, size_t i);
/* Hits of rule i summed over all shards, and the latest hit (unix seconds, 0 = never). */
uint64_t mr_ruleset_hits(const mr_ruleset *rs, size_t i);
uint64_t mr_ruleset_last_hit(const mr_ruleset *rs, size_t i);

/* Who sends the statement and how. */
/* What becomes of a text the lexer cannot read (an unterminated string, a
 * stray NUL): no rule can examine it. AUTO: BLOCK when the set holds a
 * block rule in force, else PASS. A DELAYED statement among it is refused
 * whatever the policy, when the set holds a delayed rule. */
typedef enum mr_unreadable_policy {
    MR_UNREADABLE_AUTO,
    MR_UNREADABLE_PASS,
    MR_UNREADABLE_BLOCK,
} mr_unreadable_policy;

/* What the rules did with an unreadable text (mr_match_result.unreadable). */
typedef enum mr_unreadable_outcome {
    MR_UNREADABLE_NONE,    /* the text lexes */
    MR_UNREADABLE_PASSED,  /* relayed unexamined (its readable statements met the rules) */
    MR_UNREADABLE_BLOCKED, /* answered with the proxy's ERR */
} mr_unreadable_outcome;

/* The ERR of an unreadable text under unreadable = block: the code and
 * SQLSTATE of a block rule's default. */
#define MR_UNREADABLE_ERR_CODE 1148
#define MR_UNREADABLE_SQLSTATE "42000"

typedef struct mr_stmt_ctx {
    const char *user;   /* NULL when unknown */
    const char *schema; /* current default schema, NULL when none */
    bool prepared;      /* COM_STMT_PREPARE text: `?` are the statement's parameters */
    unsigned lex_flags; /* SQL_LEX_NO_BACKSLASH_ESCAPES etc., from the session's sql_mode */
    /* The lex_flags bits the session cannot vouch for at the text's start
     * (SQL_LEX_ANSI_QUOTES, SQL_LEX_MB_MASK): block rules also meet the text
     * read with them otherwise (rules/readings.c). After a statement of a
     * multi-statement text, every mode bit is unsure. */
    unsigned lex_unsure;
    unsigned shard;   /* hit-counter shard of the calling worker */
    bool skip_locked; /* the server accepts FOR UPDATE SKIP LOCKED
                         (mr_server_has_skip_locked, proto/server_version.h, on its greeting's
                         version) */
    /* row keys of tables, for paginate and delayed rules without `key`
     * (schema/desc.h; the schema cache on workers); NULL: none known */
    const struct mr_schema_source *schema_src;
    const struct mr_exec_params *params; /* prepared: the values of a COM_STMT_EXECUTE,
                           when the text is a memory-mode DELAYED statement's; else NULL */
    /* The session's client character set when the lexer cannot read it
     * (sql/charset_guard.h): only block rules run, DELAYED is refused. NULL: all rules. */
    const char *charset_unsafe;
    /* tables whose delayed rule a default rule derives (delayed/derive.h; the
     * process's registry on workers); NULL: a dry run, which adds nothing */
    const struct mr_derive_port *derived;
    /* keyset bookmarks (paginate/bookmarks.h; the process's store on workers);
     * NULL: none (or the session may have temporary tables), keyset rules
     * serve the deferred join */
    const struct mr_bookmark_port *bookmarks;
    /* a text the lexer cannot read (the `unreadable` setting) */
    uint8_t unreadable; /* mr_unreadable_policy */
} mr_stmt_ctx;

/* True when the set holds at least one enabled queue rule. */
bool mr_ruleset_has_queue(const mr_ruleset *rs);
/* True when the set holds at least one enabled delayed rule: only then are
 * UPDATE/DELETE DELAYED statements taken over (others pass untouched). */
bool mr_ruleset_has_delayed(const mr_ruleset *rs);

typedef enum mr_action {
    MR_ACT_PASS,           /* send the original text */
    MR_ACT_REWRITE,        /* send res->text */
    MR_ACT_BLOCK,          /* answer res->err_code / sqlstate / message; send nothing */
    MR_ACT_DELAYED_MEMORY, /* a memory-mode DELAYED statement: add res->dmem to its
                              in-memory table and answer OK; send nothing */
} mr_action;

#define MR_MATCH_MAX_RULES 16

/* Reusable per-worker scratch (token arrays, digest buffer, pcre2 match
 * data); create one per thread. */
typedef struct mr_rules_scratch mr_rules_scratch;
mr_rules_scratch *mr_rules_scratch_new(void);
void mr_rules_scratch_free(mr_rules_scratch *s);
/* Regex executions (pcre2_match calls) made through this scratch so far:
 * shows the word prefilter at work in tests and benchmarks. */
uint64_t mr_rules_scratch_regex_runs(const mr_rules_scratch *s);

/* max_offset for a `?` offset, decided at each COM_STMT_EXECUTE. The
 * kind that notes it says all the caller needs, so that the caller copies
 * it and knows nothing of the kind's settings or wording. */
typedef struct mr_page_guard {
    const mr_rule *rule; /* NULL: none; valid while the rule set the statement met is */
    unsigned param;      /* which `?` the offset is (from 0) */
    unsigned nparams;    /* the statement's `?` count */
    uint64_t max_offset; /* the rule's */
    char where[132];     /* schema.table for the default message; "" = any table */
    /* The default ERR text for an execute binding `offset` (when the rule
     * has no message of its own); where NULL: any table. Pure, const. */
    void (*too_deep)(uint64_t max_offset, const char *where, uint64_t offset, char *buf,
                     size_t size);
    /* Counts an execute the caller refused, on the worker's counters and
     * the rule's (stats/rule_stats.h; NULL: none). Pure. */
    void (*refused)(mr_stats *w, struct mr_rule_stats *rule);
} mr_page_guard;

typedef struct mr_match_result {
    mr_action action;
    mr_buf text;         /* REWRITE: the statement to send; caller inits/frees */
    mr_buf would_be;     /* the first log_only rewrite's statement as it would have
                            been sent (that statement alone), for the log;
                            caller inits/frees */
    uint16_t err_code;   /* BLOCK */
    char sqlstate[6];    /* BLOCK */
    const char *message; /* BLOCK; points into the rule set */
    const mr_rule *matched[MR_MATCH_MAX_RULES]; /* every rule that matched, in order */
    bool sampled[MR_MATCH_MAX_RULES];           /* this match is one the rule's log_sample picks */
    uint32_t staged_rows[MR_MATCH_MAX_RULES];   /* delayed rules: staging rows written */
    struct mr_rule_stats *staged_table[MR_MATCH_MAX_RULES]; /* ... and the derived table's
                             SHOW DELAYED row they also count on (NULL: none) */
    unsigned nmatched;
    uint64_t digest_hash; /* digest of the original statement text */
    const char
        *digest; /* normalized text, NUL-terminated, in the scratch (valid until next call) */
    mr_keyset_note keyset; /* a keyset paginate rule's decision, when the text is one statement */
    bool read_committed;   /* the text is one UPDATE of a queue table with claim_read_committed:
                              in autocommit mode outside a transaction, the session sends it
                              after SET TRANSACTION ISOLATION LEVEL READ COMMITTED */
    const struct mr_dmem_batch *dmem; /* DELAYED_MEMORY: the deltas, in the scratch */
    bool wake_flusher;                /* a staged DELAYED rule passed a multiple of its flush_early:
                                         the caller wakes the staged flusher (mr_delayed_wake) */
    bool dmem_prepare;           /* COM_STMT_PREPARE of a memory-mode DELAYED statement: text is a
                                    stand-in (`DO ?, ...`) with the same parameters; the caller
                                    keeps the original and answers its executes itself */
    unsigned dmem_nparams;       /* its parameters (or dmem_read_prepare's) */
    unsigned dmem_keys;          /* DELAYED_MEMORY: the keys in dmem (explain's count) */
    mr_page_guard page_guard;    /* COM_STMT_PREPARE of a page whose LIMIT offset is a `?`
                                under a rule with max_offset: the caller checks each execute */
    uint8_t unreadable;          /* mr_unreadable_outcome */
    const struct mr_rule *group; /* REWRITE of one staged DELAYED statement (COM_QUERY, alone
                             in its text) under a rule with group_commit: in autocommit mode
                             outside a transaction the caller stages it in a group batch
                             (delayed/group.h) instead of sending text; NULL otherwise */
    const struct mr_dstage *group_stage; /* ... the staging INSERT alone, as data
                             (delayed/stage.h; in the scratch, valid until the next call),
                             without what surrounded the statement */
    const struct mr_rule *read_pending;  /* REWRITE of a point read under a delayed rule with
                              read_pending: the text adds the deltas still pending for the key
                              (delayed/read_sql.h); NULL otherwise */
    bool dmem_read_prepare;              /* REWRITE of a COM_STMT_PREPARE of a point read under a
                                          memory-mode rule with read_pending: the text reads the sums
                                          from user variables; the caller keeps the original and sends a
                                          SET of them ahead of each execute (read_set: the one of zeros) */
    const char *read_set; /* ... and for an execute's values (ctx->params): the SET for the
                             key bound (in the scratch; NULL: the read adds nothing) */
    size_t read_set_len;
    bool park; /* BLOCK of a DELAYED statement whose rule names no key and whose
                  table's key the schema source does not have yet (row key
                  pending): the caller may hold the statement and run it again
                  once the cache has loaded a table, instead of answering the
                  message (which says "retry") */
} mr_match_result;

/* Runs the rules over one COM_QUERY or COM_STMT_PREPARE text. Multi-statement
 * text is split on top-level `;`: each statement meets the rules on its own,
 * a block of any one blocks the whole query, and rewritten statements are
 * joined back with the original separators. Counts hits in ctx->shard.
 * With a delayed rule in the set, an UPDATE/DELETE DELAYED statement meets
 * no other rule: it becomes its staging INSERT or is refused (1235).
 * The kinds that act are the set's (mr_rules_empty gives a set with no
 * rule); a NULL set knows no kind, so only the `unreadable` policy acts. */
void mr_rules_apply(const mr_ruleset *rs, const char *sql, size_t len, const mr_stmt_ctx *ctx,
                    mr_rules_scratch *scratch, mr_match_result *res);

/* The dry run behind `myrewrite --explain`: tokens' digest, each rule
 * tried and why it did or did not match, the outcome and the final text. */
void mr_rules_explain(const mr_ruleset *rs, const char *sql, size_t len, const mr_stmt_ctx *ctx,
                      FILE *out);

#endif
