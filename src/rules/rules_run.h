/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/rules_run.h - the matcher's working state, shared by rules/match.c
 * (finding and trying rules) and rules/rewrite.c (building and checking a
 * rewritten text).
 *
 * Pure, any thread: everything here lives in one worker's scratch or on
 * the stack of one mr_rules_apply call.
 */
#ifndef MYREWRITE_RULES_RUN_H
#define MYREWRITE_RULES_RUN_H

#include "myrewrite/sql/stmt.h"
#include "rules/rules_impl.h"

/* The kind interface's types under the short names the matcher uses. */
typedef mr_rule_text bytes;
typedef mr_rule_stmt stmt;
typedef mr_rule_run run;

/* Where a piece of a regex rewrite's output came from: input bytes at
 * `in`, or the replacement's own text (in < 0). */
typedef struct seg {
    size_t out;
    size_t len;
    long long in;
} seg;

/* EXECUTE IMMEDIATE 'PREPARE ...' nests; the server refuses that, so one
 * level is all a working statement has and deeper ones count as unread. */
#define RULES_DYN_DEPTH 2

struct mr_rules_scratch {
    char *whole; /* digest of the whole text: res->digest */
    size_t whole_cap;
    char *dig; /* digest of the statement being matched */
    size_t dig_cap;
    sql_span *spans;
    size_t span_cap;
    sql_token *tok;
    size_t tok_cap;
    uint64_t *bits; /* candidate rules of the current statement version */
    size_t bit_words;
    rules_slot *slots;
    size_t slot_cap;
    uint32_t *params; /* offsets of the `?` parameters of the statement */
    size_t param_cap;
    seg *segs; /* regex rewrite output -> input, prepared only */
    size_t nseg;
    size_t seg_cap;
    bool seg_failed;
    size_t seg_in;  /* end of the previous regex match in the input */
    size_t seg_out; /* and in the output */
    const rule_impl *seg_rule;
    bytes ver[2]; /* statement versions along a continue chain */
    pcre2_match_data *md;
    uint32_t md_pairs;
    pcre2_match_context *mctx;
    uint64_t regex_runs;
    void *kind[MR_RULE_KIND_MAX]; /* each kind's own buffers (mr_rule_kind_scratch), by type */
    void (*kind_free[MR_RULE_KIND_MAX])(void *p); /* and what frees their insides */
    char unreadable_msg[512];     /* refusal of the latest unreadable text (res->message) */
    bytes dyn[RULES_DYN_DEPTH];   /* the SQL an EXECUTE IMMEDIATE / PREPARE runs, per depth */
    char dynamic_msg[512];        /* refusal of the latest unexaminable dynamic SQL */
    struct reading_start *starts; /* statement starts of the other readings (rules/readings.c) */
    size_t start_cap;
};

/* Grows the array `ptr` (any T *, capacity `cap` elements) to hold at
 * least `want` elements, doubling; false when out of memory (the array is
 * then unchanged). */
bool rules_grow(void *pp, size_t *cap, size_t want, size_t elem);
#define GROW(ptr, cap, want) rules_grow(&(ptr), &(cap), (want), sizeof *(ptr))

/* Lexes the whole text in the session's reading (ctx->lex_flags) into
 * the scratch's tokens, growing them as needed (rules/readings.c): sql_lex's
 * answer, SQL_ERR with the error token last; SQL_PARTIAL only when out of
 * memory. */
sql_rc rules_lex(run *R, const char *sql, size_t len, size_t *count);
/* Rewrites S into `out` for a matched rule; WHY_MATCHED when the result
 * may be sent (see rules/rewrite.c). */
rule_why rules_digest_rewrite(run *R, stmt *S, const rule_impl *im, bytes *out);
rule_why rules_regex_rewrite(run *R, stmt *S, const mr_rule *r, const rule_impl *im, bytes *out);
/* A text that does not lex (rules/unreadable.c): true when it is refused,
 * res then a block saying why; false when its readable statements go on
 * to the rules. Sets res->unreadable either way. */
bool rules_unreadable(run *R, const char *sql, size_t len);
/* Statements that run SQL of their own (rules/dynamic.c), after the rules
 * met S: the block rules meet the SQL of a literal EXECUTE IMMEDIATE or
 * PREPARE ... FROM, and a block rule with dynamic = refuse refuses a form
 * whose SQL the text does not show. False when S is refused (res says why). */
bool rules_dynamic(run *R, stmt *S, unsigned index);
/* The block rules over one statement of such SQL (rules/match.c), S's
 * text in place; false when one blocks it. S->dig is NULL when it does
 * not lex (nothing was tried). */
bool rules_inner_passes(run *R, stmt *S, unsigned index);
/* Block rules meet the statements the text's other readings find (the
 * modes ctx->lex_unsure leaves open, and every mode after a statement):
 * res becomes the block of the first that matches, or the refusal of a
 * text whose readings cannot all be examined or rewritten (rules/readings.c). */
void rules_readings(run *R, const char *sql, size_t len);
/* Runs the block rules over one statement of another reading (ctx's
 * lex_flags): res->action is MR_ACT_BLOCK when one matches. */
void rules_run_reading(const mr_ruleset *rs, const char *sql, size_t len, const mr_stmt_ctx *ctx,
                       mr_rules_scratch *scratch, mr_match_result *res);
/* Sets the trace detail from a pcre2 error code. */
rule_why rules_regex_error(run *R, int rc);

#endif
