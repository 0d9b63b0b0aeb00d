/*
 * rules/match.c - applies a rule set to one COM_QUERY / COM_STMT_PREPARE
 * text (mr_rules_apply) and, with a trace, explains it (rules_run).
 *
 * Pure, any thread. Reads the rule set, writes only the caller's scratch
 * and result, plus the hit counters of the caller's shard. Owns the
 * scratch: every buffer the hot path needs lives there and only grows, so
 * a warmed-up worker matches without allocating (res->text aside).
 *
 * Per statement: its digest finds the digest rules (hash table), its words
 * find the regex rules (prefilter table), and rules without a key (regex
 * without a word, block without WHERE) are always candidates. Candidates
 * are tried in file order; the first match wins unless it says continue,
 * in which case the rewritten text becomes the statement for the rules
 * after it and the candidates are found again.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "myrewrite/sql/digest.h"
#include "rules/rules_run.h"

/* pcre2's budget per match; a regex that runs out counts as not matching. */
#define REGEX_MATCH_LIMIT 1000000

/* ---- scratch ------------------------------------------------------------------ */

/* The pointer is read and written with memcpy: it may be any T *, and
 * going through a void ** would break aliasing rules. */
bool rules_grow(void *pp, size_t *cap, size_t want, size_t elem)
{
    if (*cap >= want)
        return true;
    size_t n = *cap ? *cap : 16;
    while (n < want)
        n *= 2;
    void *p;
    memcpy(&p, pp, sizeof p);
    void *q = realloc(p, n * elem);
    if (!q)
        return false;
    memcpy(pp, &q, sizeof q);
    *cap = n;
    return true;
}

mr_rules_scratch *mr_rules_scratch_new(void)
{
    mr_rules_scratch *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->mctx = pcre2_match_context_create(NULL);
    s->md_pairs = 16;
    s->md = pcre2_match_data_create(s->md_pairs, NULL);
    bool ok = s->mctx && s->md && GROW(s->whole, s->whole_cap, 1024) &&
              GROW(s->dig, s->dig_cap, 1024) && GROW(s->spans, s->span_cap, 16) &&
              GROW(s->slots, s->slot_cap, 32) && GROW(s->params, s->param_cap, 16) &&
              GROW(s->bits, s->bit_words, 16);
    if (!ok) {
        mr_rules_scratch_free(s);
        return NULL;
    }
    pcre2_set_match_limit(s->mctx, REGEX_MATCH_LIMIT);
    return s;
}

void mr_rules_scratch_free(mr_rules_scratch *s)
{
    if (!s)
        return;
    free(s->whole);
    free(s->dig);
    free(s->spans);
    free(s->tok);
    free(s->bits);
    free(s->slots);
    free(s->params);
    free(s->segs);
    free(s->ver[0].p);
    free(s->ver[1].p);
    for (size_t d = 0; d < RULES_DYN_DEPTH; d++)
        free(s->dyn[d].p);
    for (size_t k = 0; k < MR_RULE_KIND_MAX; k++) {
        if (s->kind[k] && s->kind_free[k])
            s->kind_free[k](s->kind[k]);
        free(s->kind[k]);
    }
    pcre2_match_data_free(s->md);
    pcre2_match_context_free(s->mctx);
    free(s);
}

uint64_t mr_rules_scratch_regex_runs(const mr_rules_scratch *s) { return s->regex_runs; }

bool mr_rule_text_reserve(bytes *t, size_t n) { return GROW(t->p, t->cap, n); }

/* Made once per worker and kind, at its first statement: never per statement. */
void *mr_rule_scratch(run *R, mr_rule_type type, size_t size, void (*scratch_free)(void *))
{
    mr_rules_scratch *s = R->s;
    if (!s->kind[type]) {
        s->kind[type] = calloc(1, size);
        s->kind_free[type] = scratch_free;
    }
    return s->kind[type];
}

void *mr_rule_kind_scratch(run *R, const mr_rule_kind *k, size_t size)
{
    return mr_rule_scratch(R, k->type, size, k->scratch_free);
}

/* ---- digests ------------------------------------------------------------------- */

static sql_rc digest_into(char **buf, size_t *cap, const char *t, size_t n, unsigned flags,
                          sql_digest_result *dr)
{
    /* canonical spacing rarely makes a digest longer than twice the text */
    (void)GROW(*buf, *cap, 2 * n + 16);
    sql_rc rc = sql_digest(t, n, flags, *buf, *cap, dr);
    if (rc == SQL_PARTIAL && GROW(*buf, *cap, dr->full_len + 1))
        rc = sql_digest(t, n, flags, *buf, *cap, dr);
    return rc;
}

static void stmt_digest(run *R, stmt *S)
{
    sql_digest_result dr;
    sql_rc rc = digest_into(&R->s->dig, &R->s->dig_cap, S->text, S->len, R->ctx->lex_flags, &dr);
    S->dig = rc == SQL_ERR ? NULL : R->s->dig;
    S->dig_len = dr.len;
    S->hash = dr.hash;
    S->parsed = false;
    S->nparams = -1;
}

/* ---- candidates ------------------------------------------------------------------ */

static void set_chain(run *R, uint32_t i)
{
    const rule_impl *impl = R->rs->impl;
    for (; i != NO_RULE; i = impl[i].next)
        R->s->bits[i / 64] |= 1ull << (i % 64);
}

static void digest_candidates(run *R, const stmt *S)
{
    const mr_ruleset *rs = R->rs;
    if (!rs->dtab || !S->dig)
        return;
    for (size_t k = (size_t)S->hash & rs->dmask; rs->dtab[k].first != NO_RULE;
         k = (k + 1) & rs->dmask)
        if (rs->dtab[k].hash == S->hash) {
            set_chain(R, rs->dtab[k].first);
            return;
        }
}

static bool is_wordch(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool word_eq(const char *lower, const char *w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        if ((unsigned char)lower[i] != c)
            return false;
    }
    return true;
}

static void word_lookup(run *R, const char *w, size_t n, uint64_t h)
{
    const mr_ruleset *rs = R->rs;
    for (size_t k = (size_t)h & rs->wmask; rs->wtab[k].word; k = (k + 1) & rs->wmask) {
        const word_slot *ws = &rs->wtab[k];
        if (ws->hash == h && ws->len == n && word_eq(ws->word, w, n)) {
            set_chain(R, ws->first);
            return;
        }
    }
}

/* Every maximal [A-Za-z0-9_] run of the raw text, literals and comments
 * included: a regex sees those bytes too, so skipping them could hide a
 * statement from a regex that would match it. */
static void word_candidates(run *R, const stmt *S)
{
    if (!R->rs->wtab)
        return;
    const unsigned char *t = (const unsigned char *)S->text;
    size_t i = 0, n = S->len;
    while (i < n) {
        while (i < n && !is_wordch(t[i]))
            i++;
        size_t start = i;
        uint64_t h = RULES_FNV_OFFSET;
        for (; i < n && is_wordch(t[i]); i++) {
            unsigned char c = t[i];
            if (c >= 'A' && c <= 'Z')
                c = (unsigned char)(c + 32);
            h = (h ^ c) * RULES_FNV_PRIME;
        }
        if (i > start)
            word_lookup(R, S->text + start, i - start, h);
    }
}

static void find_candidates(run *R, const stmt *S)
{
    size_t words = (R->rs->n + 63) / 64;
    memset(R->s->bits, 0, words * sizeof *R->s->bits);
    digest_candidates(R, S);
    word_candidates(R, S);
    for (size_t k = 0; k < R->rs->nalways; k++) {
        uint32_t i = R->rs->always[k];
        R->s->bits[i / 64] |= 1ull << (i % 64);
    }
}

static bool is_candidate(const run *R, size_t i) { return (R->s->bits[i / 64] >> (i % 64)) & 1; }

/* First candidate at or after `from`, or SIZE_MAX. */
static size_t next_candidate(const run *R, size_t from)
{
    size_t words = (R->rs->n + 63) / 64;
    for (size_t w = from / 64; w < words; w++) {
        uint64_t b = R->s->bits[w];
        if (w == from / 64)
            b &= ~0ull << (from % 64);
        if (b)
            return w * 64 + (size_t)__builtin_ctzll(b);
    }
    return SIZE_MAX;
}

/* ---- regex ------------------------------------------------------------------------------ */

static bool ensure_match_data(run *R, const rule_impl *im)
{
    mr_rules_scratch *s = R->s;
    if (im->ncap + 1 <= s->md_pairs)
        return true;
    pcre2_match_data *md = pcre2_match_data_create(im->ncap + 1, NULL);
    if (!md)
        return false;
    pcre2_match_data_free(s->md);
    s->md = md;
    s->md_pairs = im->ncap + 1;
    return true;
}

static rule_why regex_match(run *R, const stmt *S, const rule_impl *im)
{
    if (!ensure_match_data(R, im)) {
        snprintf(R->detail, sizeof R->detail, "out of memory");
        return WHY_REGEX_ERROR;
    }
    R->s->regex_runs++;
    int rc = pcre2_match(im->re, (PCRE2_SPTR)S->text, S->len, 0, 0, R->s->md, R->s->mctx);
    if (rc == PCRE2_ERROR_NOMATCH)
        return WHY_NO_MATCH;
    return rc < 0 ? rules_regex_error(R, rc) : WHY_MATCHED;
}

/* ---- the recognizer ------------------------------------------------------------------- */

static const char *stmt_kind_name(sql_stmt_kind k)
{
    static const char *const names[] = {
        "unknown", "SELECT", "INSERT",   "UPDATE", "DELETE", "REPLACE", "CALL",  "SET",
        "BEGIN",   "COMMIT", "ROLLBACK", "DDL",    "SHOW",   "USE",     "other",
    };
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "other";
}

bool mr_rule_parse_stmt(run *R, stmt *S)
{
    mr_rules_scratch *s = R->s;
    size_t count = 0;
    if (!GROW(s->tok, s->tok_cap, 256))
        return false;
    sql_rc rc = sql_lex(S->text, S->len, R->ctx->lex_flags, s->tok, s->tok_cap, &count);
    while (rc == SQL_PARTIAL) {
        if (!GROW(s->tok, s->tok_cap, s->tok_cap * 2))
            return false;
        rc = sql_lex(S->text, S->len, R->ctx->lex_flags, s->tok, s->tok_cap, &count);
    }
    sql_stmt_parse(S->text, s->tok, count, &S->st);
    R->tok = s->tok;
    S->parsed = true;
    return true;
}

/* Only DELETE/UPDATE (possibly after WITH) are worth a full parse. */
static bool may_be_dml(const run *R, const stmt *S)
{
    sql_lexer lx;
    sql_lexer_init(&lx, S->text, S->len, R->ctx->lex_flags | SQL_LEX_SKIP_COMMENTS);
    sql_token t;
    while (sql_lexer_next(&lx, &t))
        if (t.kind != SQL_TOK_COMMENT)
            return t.kind == SQL_TOK_WORD &&
                   (t.id == SQL_KW_DELETE || t.id == SQL_KW_UPDATE || t.id == SQL_KW_WITH);
    return false;
}

static rule_why no_where(run *R, stmt *S, const rule_impl *im)
{
    if (!S->parsed && (!may_be_dml(R, S) || !mr_rule_parse_stmt(R, S))) {
        snprintf(R->detail, sizeof R->detail, "not an UPDATE or DELETE");
        return WHY_NOT_KIND;
    }
    const sql_stmt *st = &S->st;
    if (!(im->stmt_mask & (1u << st->kind))) {
        snprintf(R->detail, sizeof R->detail, "statement is %s", stmt_kind_name(st->kind));
        return WHY_NOT_KIND;
    }
    /* a WHERE hidden in an executable comment or syntax the recognizer
     * does not follow: better let it through than block a good statement */
    if (st->flags & (SQL_SF_UNSUPPORTED | SQL_SF_LEX_ERROR | SQL_SF_EXEC_COMMENT)) {
        snprintf(R->detail, sizeof R->detail, "recognizer could not read the whole statement");
        return WHY_UNSURE;
    }
    return st->where.kw != SQL_NONE ? WHY_HAS_WHERE : WHY_MATCHED;
}

/* ---- one rule -------------------------------------------------------------------------- */

static rule_why filters(const run *R, const mr_rule *r)
{
    if (!r->enabled)
        return WHY_DISABLED;
    if (r->user && (!R->ctx->user || strcmp(r->user, R->ctx->user) != 0))
        return WHY_USER;
    if (r->schema && (!R->ctx->schema || strcmp(r->schema, R->ctx->schema) != 0))
        return WHY_SCHEMA;
    return WHY_MATCHED;
}

/* Does rule i apply to S? A rewrite leaves its text in ver[R->spare]. */
static rule_why eval(run *R, stmt *S, size_t i, bool candidate)
{
    const mr_rule *r = &R->rs->rules[i];
    const rule_impl *im = &R->rs->impl[i];
    R->detail[0] = '\0';
    R->block_msg = NULL;
    rule_why why = filters(R, r);
    if (why != WHY_MATCHED)
        return why;
    /* A rewrite inside a string literal would need the literal written
     * again, quoted for the session's sql_mode: not done, it is left as is. */
    if (R->dyn_depth > 0 && r->kind != MR_RULE_BLOCK) {
        snprintf(R->detail, sizeof R->detail, "inside dynamic SQL only block rules are tried");
        return WHY_NOT_KIND;
    }
    /* In a charset the lexer misreads, a rewrite (or claim_read_committed's
     * prelude) could change what the server runs; a block can only refuse. */
    if (R->ctx->charset_unsafe && r->kind != MR_RULE_BLOCK) {
        snprintf(R->detail, sizeof R->detail,
                 "the session's character set is %s, which the "
                 "rules cannot read safely: only block rules run",
                 R->ctx->charset_unsafe);
        return WHY_CHARSET;
    }
    switch (im->how) {
    case HOW_DIGEST:
        if (!candidate || S->dig_len != im->digest_len || memcmp(S->dig, im->digest, S->dig_len))
            return WHY_DIGEST;
        break;
    case HOW_REGEX: why = candidate ? regex_match(R, S, im) : WHY_WORD; break;
    case HOW_NO_WHERE: why = no_where(R, S, im); break;
    case HOW_KIND:
        why = r->entry->apply(R, S, i, &R->s->ver[R->spare]);
        return why == WHY_MATCHED && r->log_only ? WHY_LOG_ONLY : why;
    }
    if (why != WHY_MATCHED || r->kind == MR_RULE_BLOCK)
        return why == WHY_MATCHED && r->log_only ? WHY_LOG_ONLY : why;
    bytes *out = &R->s->ver[R->spare];
    why = im->how == HOW_DIGEST ? rules_digest_rewrite(R, S, im, out)
                                : rules_regex_rewrite(R, S, r, im, out);
    return why == WHY_MATCHED && r->log_only ? WHY_LOG_ONLY : why;
}

void mr_rule_count_hit(run *R, size_t i)
{
    mr_match_result *res = R->res;
    unsigned m = res->nmatched < MR_MATCH_MAX_RULES ? res->nmatched++ : MR_MATCH_MAX_RULES;
    if (m < MR_MATCH_MAX_RULES) {
        res->matched[m] = &R->rs->rules[i];
        res->sampled[m] = true;
        res->staged_rows[m] = 0;
        res->staged_table[m] = NULL;
    }
    if (R->tr)
        return; /* a dry run counts nothing */
    size_t at = (size_t)R->shard * R->rs->stride + i;
    uint64_t before = mr_stat_get(&R->rs->hits[at]);
    mr_stat_add(&R->rs->hits[at], 1);
    if (m < MR_MATCH_MAX_RULES && R->rs->rules[i].log_sample > 1)
        res->sampled[m] = before % R->rs->rules[i].log_sample == 0; /* the 1st, N+1st... */
    if (!R->now)
        R->now = (uint64_t)time(NULL);
    atomic_store_explicit(&R->rs->last[at], R->now, memory_order_relaxed);
}

/* ---- one statement ---------------------------------------------------------------------- */

typedef enum step { STEP_NEXT, STEP_STOP, STEP_RESTART, STEP_BLOCK } step;

void mr_rule_trace(run *R, size_t i, rule_why why, const char *detail)
{
    if (R->tr && R->tr->rule && i != SIZE_MAX) {
        snprintf(R->detail, sizeof R->detail, "%.200s", detail);
        R->tr->rule(R->tr->ctx, R->rs, i, why, R->detail);
    }
}

static void trace_rule(const run *R, size_t i, rule_why why)
{
    if (R->tr && R->tr->rule)
        R->tr->rule(R->tr->ctx, R->rs, i, why, R->detail);
}

static void trace_stop(const run *R, size_t i)
{
    if (R->tr && R->tr->stopped && i + 1 < R->rs->n)
        R->tr->stopped(R->tr->ctx, R->rs, i + 1, i);
}

/* What a matching rule does to the statement. */
static step on_match(run *R, stmt *S, size_t i, rule_why why)
{
    const mr_rule *r = &R->rs->rules[i];
    mr_rule_count_hit(R, i);
    if (why == WHY_LOG_ONLY) {
        const bytes *would = &R->s->ver[R->spare];
        if (r->kind != MR_RULE_BLOCK && !R->block_msg && R->res->would_be.len == 0)
            mr_buf_put(&R->res->would_be, would->p, would->len);
        return r->cont ? STEP_NEXT : STEP_STOP;
    }
    if (r->kind == MR_RULE_BLOCK || R->block_msg) {
        R->res->action = MR_ACT_BLOCK;
        R->res->err_code = r->err_code;
        memcpy(R->res->sqlstate, r->sqlstate, sizeof R->res->sqlstate);
        R->res->message = R->block_msg ? R->block_msg : r->message;
        return STEP_BLOCK;
    }
    bytes *out = &R->s->ver[R->spare];
    S->text = out->p;
    S->len = out->len;
    S->version++;
    S->nparams = -1;
    S->parsed = false;
    R->spare ^= 1;
    return r->cont ? STEP_RESTART : STEP_STOP;
}

static void trace_statement(const run *R, unsigned index, const stmt *S)
{
    if (R->tr && R->tr->statement)
        R->tr->statement(R->tr->ctx, index, S->version, S->text, S->len, S->dig, S->hash);
}

/* Runs the rules from `from` over S; returns how it ended. */
static step pass(run *R, stmt *S, size_t *from)
{
    find_candidates(R, S);
    for (size_t i = *from; i < R->rs->n; i++) {
        if (!R->tr && (i = next_candidate(R, i)) == SIZE_MAX)
            break;
        rule_why why = eval(R, S, i, is_candidate(R, i));
        trace_rule(R, i, why);
        if (why != WHY_MATCHED && why != WHY_LOG_ONLY)
            continue;
        step st = on_match(R, S, i, why);
        if (st == STEP_STOP)
            trace_stop(R, i);
        if (st != STEP_NEXT) {
            *from = i + 1;
            return st;
        }
    }
    return STEP_STOP;
}

/* Applies the rules to one statement; false when it is blocked. S holds
 * the final text afterwards. */
static bool statement(run *R, stmt *S, unsigned index)
{
    size_t from = 0;
    trace_statement(R, index, S);
    for (size_t k = 0; S->dig && R->rs && R->rs->takers[k]; k++) {
        mr_take_step ts = R->rs->takers[k]->take(R, S);
        if (ts != MR_TAKE_NONE)
            return ts == MR_TAKE_DONE; /* blocked or held: nothing is sent */
    }
    if (!R->rs || R->rs->n == 0)
        return true; /* no rule: only a statement a kind takes over was worth a look */
    for (bool first = true;; first = false) {
        if (!first)
            trace_statement(R, index, S);
        if (!S->dig)
            return true; /* does not lex: passes untouched */
        step st = pass(R, S, &from);
        if (st == STEP_BLOCK)
            return false;
        if (st != STEP_RESTART)
            return rules_dynamic(R, S, index); /* the text as it will be sent */
        stmt_digest(R, S);
    }
}

bool rules_inner_passes(run *R, stmt *S, unsigned index)
{
    size_t from = 0;
    stmt_digest(R, S);
    S->version = RULES_VERSION_INNER;
    trace_statement(R, index, S);
    S->version = 0;
    return !S->dig || pass(R, S, &from) != STEP_BLOCK; /* a block never restarts */
}

/* ---- the whole text --------------------------------------------------------------------- */

/* Appends a statement's final text; copies the untouched text before it
 * the first time anything changes. */
static void emit(run *R, const char *sql, size_t *emitted, const sql_span *sp, const stmt *S)
{
    mr_buf *b = &R->res->text;
    if (S->version == 0)
        return;
    mr_buf_put(b, sql + *emitted, sp->off - *emitted);
    mr_buf_put(b, S->text, S->len);
    *emitted = (size_t)sp->off + sp->len;
}

/* Text outside the only statement is blank or ';': its digest is the
 * statement's, computed once. */
static bool only_separators(const char *sql, size_t len, const sql_span *sp)
{
    for (size_t i = 0; i < len; i++) {
        char c = sql[i];
        if (i == sp->off)
            i += sp->len - 1;
        else if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\f' && c != '\v' &&
                 c != ';')
            return false;
    }
    return true;
}

static size_t split(run *R, const char *sql, size_t len, sql_rc *rc)
{
    mr_rules_scratch *s = R->s;
    size_t count = 0;
    *rc = sql_split(sql, len, R->ctx->lex_flags, s->spans, s->span_cap, &count);
    while (*rc == SQL_PARTIAL && GROW(s->spans, s->span_cap, s->span_cap * 2))
        *rc = sql_split(sql, len, R->ctx->lex_flags, s->spans, s->span_cap, &count);
    return count;
}

static void statements(run *R, const char *sql, size_t len, bool whole_lexes)
{
    mr_rules_scratch *s = R->s;
    sql_span one = {0, (uint32_t)len};
    sql_rc rc = SQL_OK;
    size_t n = 1;
    const sql_span *spans = &one;
    if (memchr(sql, ';', len)) {
        n = split(R, sql, len, &rc);
        spans = s->spans;
    }
    R->multi = n > 1;
    size_t emitted = 0;
    for (size_t k = 0; k < n; k++) {
        stmt S = {.text = sql + spans[k].off, .len = spans[k].len, .nparams = -1};
        bool reuse = n == 1 && (spans == &one || only_separators(sql, len, &spans[0]));
        if (reuse) {
            S.dig = whole_lexes ? s->whole : NULL;
            S.dig_len = R->whole_len;
            S.hash = R->res->digest_hash;
        } else if (rc == SQL_ERR && k == n - 1) {
            S.dig = NULL; /* runs into the lexing error: passed through */
        } else {
            stmt_digest(R, &S);
        }
        if (!statement(R, &S, (unsigned)k + 1))
            return;
        emit(R, sql, &emitted, &spans[k], &S);
    }
    if (n > 1) /* the rows of several results cannot be told apart for a bookmark */
        R->res->keyset.watch = false;
    if (n != 1)
        R->res->read_committed = false; /* SET TRANSACTION would cover the first statement */
    if (emitted > 0) {                  /* something was rewritten */
        mr_buf_put(&R->res->text, sql + emitted, len - emitted);
        R->res->action = MR_ACT_REWRITE;
    }
}

static void result_init(mr_match_result *res)
{
    res->action = MR_ACT_PASS;
    mr_buf_reset(&res->text);
    mr_buf_reset(&res->would_be);
    res->err_code = 0;
    memset(res->sqlstate, 0, sizeof res->sqlstate);
    res->message = NULL;
    res->nmatched = 0;
    res->digest_hash = 0;
    res->digest = "";
    memset(&res->keyset, 0, sizeof res->keyset);
    res->read_committed = false;
    res->dmem = NULL;
    res->wake_flusher = false;
    res->dmem_prepare = false;
    res->dmem_nparams = 0;
    res->dmem_keys = 0;
    res->page_guard.rule = NULL;
    res->unreadable = MR_UNREADABLE_NONE;
    res->park = false;
    res->group = NULL;
    res->read_pending = NULL;
    res->dmem_read_prepare = false;
    res->read_set = NULL;
    res->read_set_len = 0;
    res->group_stage = NULL;
}

/* With no rule, only a kind that takes statements over may act (a DELAYED
 * statement is refused even then): does the text hold one of its words? */
static bool taken_with_no_rule(const mr_ruleset *rs, const char *sql, size_t len)
{
    for (size_t k = 0; rs && rs->takers[k]; k++)
        if (rs->takers[k]->mentions && rs->takers[k]->mentions(sql, len))
            return true;
    return false;
}

void rules_run(const mr_ruleset *rs, const char *sql, size_t len, const mr_stmt_ctx *ctx,
               mr_rules_scratch *scratch, mr_match_result *res, const rules_trace *trace)
{
    run R = {.rs = rs, .ctx = ctx, .s = scratch, .res = res, .tr = trace};
    result_init(res);
    sql_digest_result dr;
    sql_rc rc = digest_into(&scratch->whole, &scratch->whole_cap, sql, len, ctx->lex_flags, &dr);
    res->digest_hash = dr.hash;
    res->digest = scratch->whole;
    R.whole_len = dr.len;
    if (rc == SQL_ERR && rules_unreadable(&R, sql, len))
        return; /* refused: no rule is tried, so none counts a hit */
    bool empty = !rs || rs->n == 0;
    if (empty && !taken_with_no_rule(rs, sql, len))
        return; /* a DELAYED statement is refused even with no rule; nothing else to do */
    /* an out-of-range shard is folded in rather than overrun the counters */
    R.shard = empty ? 0 : ctx->shard % rs->shards;
    if (!empty && !GROW(scratch->bits, scratch->bit_words, (rs->n + 63) / 64))
        return;
    statements(&R, sql, len, rc != SQL_ERR);
    if (res->action == MR_ACT_REWRITE && res->text.failed)
        res->action = MR_ACT_PASS; /* out of memory: the original is safer than half a text */
    if (res->action == MR_ACT_BLOCK)
        mr_buf_reset(&res->text);
}

void mr_rules_apply(const mr_ruleset *rs, const char *sql, size_t len, const mr_stmt_ctx *ctx,
                    mr_rules_scratch *scratch, mr_match_result *res)
{
    rules_run(rs, sql, len, ctx, scratch, res, NULL);
}
