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

#include "myrewrite/paginate/deferred_sql.h"
#include "myrewrite/delayed/mem.h"
#include "myrewrite/sql/stmt.h"
#include "rules/rules_impl.h"

typedef struct bytes {
    char *p;
    size_t len;
    size_t cap;
} bytes;

/* Where a piece of a regex rewrite's output came from: input bytes at
 * `in`, or the replacement's own text (in < 0). */
typedef struct seg {
    size_t out;
    size_t len;
    long long in;
} seg;

struct mr_rules_scratch {
    char *whole;          /* digest of the whole text: res->digest */
    size_t whole_cap;
    char *dig;            /* digest of the statement being matched */
    size_t dig_cap;
    sql_span *spans;
    size_t span_cap;
    sql_token *tok;
    size_t tok_cap;
    uint64_t *bits;       /* candidate rules of the current statement version */
    size_t bit_words;
    rules_slot *slots;
    size_t slot_cap;
    uint32_t *params;     /* offsets of the `?` parameters of the statement */
    size_t param_cap;
    seg *segs;            /* regex rewrite output -> input, prepared only */
    size_t nseg;
    size_t seg_cap;
    bool seg_failed;
    size_t seg_in;        /* end of the previous regex match in the input */
    size_t seg_out;       /* and in the output */
    const rule_impl *seg_rule;
    bytes ver[2];         /* statement versions along a continue chain */
    pcre2_match_data *md;
    uint32_t md_pairs;
    pcre2_match_context *mctx;
    uint64_t regex_runs;
    mr_buf delayed_out;   /* staging INSERT of the latest DELAYED statement */
    char delayed_msg[1024]; /* refusal of the latest DELAYED statement (res->message) */
    mr_dmem_batch dmem;   /* deltas of the latest memory-mode DELAYED statement (res->dmem) */
    mr_buf paginate_out;  /* deferred join of the latest paginate rule */
    char paginate_msg[512]; /* guardrail refusal of the latest paginate rule (res->message) */
    char unreadable_msg[512]; /* refusal of the latest unreadable text (res->message) */
};

/* One statement as the rules currently see it. */
typedef struct stmt {
    const char *text;
    size_t len;
    unsigned version;  /* 0 = as sent; +1 per continued rewrite */
    const char *dig;   /* NULL when the text does not lex */
    size_t dig_len;
    uint64_t hash;
    bool parsed;       /* st below is valid */
    sql_stmt st;
    int nparams;       /* parameters in s->params; -1 until collected */
} stmt;

/* One mr_rules_apply call. */
typedef struct run {
    const mr_ruleset *rs;
    const mr_stmt_ctx *ctx;
    mr_rules_scratch *s;
    mr_match_result *res;
    const rules_trace *tr;
    unsigned shard;
    size_t whole_len;  /* length of the whole text's digest */
    uint64_t now;      /* unix time, read at the first hit */
    int spare;         /* ver[] buffer a rewrite may write */
    char detail[256];  /* trace detail of the latest rule */
    const char *block_msg; /* set by a rule of another kind that blocks (paginate's guardrail) */
    bool multi;        /* the text holds more than one statement */
} run;

/* Grows the array `ptr` (any T *, capacity `cap` elements) to hold at
 * least `want` elements, doubling; false when out of memory (the array is
 * then unchanged). */
bool rules_grow(void *pp, size_t *cap, size_t want, size_t elem);
#define GROW(ptr, cap, want) rules_grow(&(ptr), &(cap), (want), sizeof *(ptr))

/* Rewrites S into `out` for a matched rule; WHY_MATCHED when the result
 * may be sent (see rules/rewrite.c). */
rule_why rules_digest_rewrite(run *R, stmt *S, const rule_impl *im, bytes *out);
rule_why rules_regex_rewrite(run *R, stmt *S, const mr_rule *r, const rule_impl *im, bytes *out);
/* Adds SKIP LOCKED to a SELECT ... FOR UPDATE of a queue rule's table
 * (queue/statement.c); WHY_MATCHED when `out` holds the new text. */
rule_why rules_queue_rewrite(run *R, stmt *S, const mr_rule *r, bytes *out);
/* A single-table UPDATE of the table of a queue rule with
 * claim_read_committed (queue/statement.c): sets res->read_committed (unless
 * log_only or prepared) and the trace detail; true when it is one. */
bool rules_queue_claim(run *R, stmt *S, const mr_rule *r);
/* A paginate rule on S: WHY_MATCHED with the deferred join in `out`, or
 * WHY_MATCHED with R->block_msg set for a page beyond max_offset
 * (paginate/statement.c). */
rule_why rules_paginate(run *R, stmt *S, const mr_rule *r, bytes *out);
/* The keyset and auto strategies, after mr_paginate_sql gave `o` and `info`
 * (its deferred join, if any, in the scratch's paginate_out): a seek, the
 * deferred join, or untouched; fills R->res->keyset (paginate/keyset_statement.c). */
rule_why rules_paginate_keyset(run *R, stmt *S, const mr_rule *r, const mr_paginate_def *def,
                               mr_pag_outcome o, const mr_pag_info *info, bytes *out);
/* How the delayed path (delayed/statement.c) left a statement. */
typedef enum delayed_step {
    DELAYED_NONE,    /* not a DELAYED statement (or no delayed rule): the rules meet it */
    DELAYED_DONE,    /* S now holds its staging INSERT; no other rule meets it */
    DELAYED_BLOCKED, /* refused: res is a block with the reason */
    DELAYED_MEMORY,  /* res is MR_ACT_DELAYED_MEMORY with the deltas; nothing is sent */
} delayed_step;

/* Takes over UPDATE/DELETE DELAYED when the set has a delayed rule. */
delayed_step rules_delayed(run *R, stmt *S);
/* The word "delayed" in any case anywhere in the text: without it no
 * statement of the text is a DELAYED one (delayed/statement.c). */
bool rules_mentions_delayed(const char *sql, size_t len);
/* Records that rule i matched: res->matched and the hit counters (rules/match.c). */
void rules_count_hit(run *R, size_t i);
/* Lexes and recognizes S into the scratch tokens and S->st (rules/match.c). */
bool rules_parse_stmt(run *R, stmt *S);
/* A text that does not lex (rules/unreadable.c): true when it is refused,
 * res then a block saying why; false when its readable statements go on
 * to the rules. Sets res->unreadable either way. */
bool rules_unreadable(run *R, const char *sql, size_t len);
/* Sets the trace detail from a pcre2 error code. */
rule_why rules_regex_error(run *R, int rc);

#endif
