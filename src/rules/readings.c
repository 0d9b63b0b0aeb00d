/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules/readings.c - the other readings of a text: block rules apply to a
 * text as the server may read it, not only as the session's mode says.
 *
 * The server reads a multi-statement text one statement at a time, each
 * with the sql_mode and client character set in force when it starts, and
 * any statement may change them (SET sql_mode, SET NAMES, through a
 * variable, a prepared statement...). Where the proxy cannot vouch for the
 * mode (its ctx->lex_unsure bits at the start of the text; every bit after
 * a statement of the text), a statement can hide behind a quote or an
 * escape that another mode reads differently. So block rules meet every
 * statement every reading finds: from each start position, each mode that
 * could be in force reads one statement, which the block rules examine, and
 * the text after its ';' is a start position again (fail closed: a block
 * that matches in any reading refuses the text). Rewrites follow the
 * session's reading only; one that another reading of a multi-statement
 * text would read differently is refused.
 *
 * Readings can only differ where the text holds '"' (ANSI_QUOTES), '\'
 * (NO_BACKSLASH_ESCAPES), or a byte >= 0x81 just before one of @ [ \ ] ^ `
 * { | } ~ (a multibyte character set's trail byte that would otherwise be
 * an escape, a quote or an operator): a pre-scan finds those, so the
 * common text costs two memchr and a pass over its bytes, eight at a time
 * while they are ASCII. A text that has them is lexed in the
 * session's mode; when one of its tokens could read otherwise ('"'-delimited,
 * a quoted literal holding '\', or such a multibyte pair), once in each other
 * mode; and only when some mode's tokens differ is it read statement by
 * statement. That work is bounded (a budget of bytes read); a text that
 * reads in more ways than that is refused while block rules are in force.
 *
 * Pure, any thread; writes only the caller's scratch and result.
 */
#include <stdint.h>
#include <string.h>

#include "rules/rules_run.h"

/* A start position and whether the session's own reading reaches it (its
 * statement there, in that reading, is one the rules have already met). */
struct reading_start {
    size_t pos;
    bool primary;
};

/* Can a multibyte rule read this text otherwise? Only where a byte >= 0x81
 * stands before an ASCII byte that is no name byte and that a trail byte
 * may be (@ [ \ ] ^ ` { | } ~): read whole, the pair is a name character;
 * read as bytes, that byte is an escape, a quote or an operator. Eight
 * bytes at a time while the text is ASCII. */
static bool multibyte_matters(const unsigned char *u, size_t len)
{
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, u + i, sizeof w);
        if (w & 0x8080808080808080ull)
            break;
    }
    for (; i + 1 < len; i++) {
        unsigned c = u[i + 1];
        if (u[i] >= 0x81 &&
            (c == 0x40 || (c >= 0x5b && c <= 0x5e) || c == 0x60 || (c >= 0x7b && c <= 0x7e)))
            return true;
    }
    return false;
}

/* The mode bits in which readings of this text can differ. */
static unsigned relevant_bits(const char *sql, size_t len)
{
    unsigned bits = 0;
    if (memchr(sql, '"', len))
        bits |= SQL_LEX_ANSI_QUOTES;
    if (memchr(sql, '\\', len))
        bits |= SQL_LEX_NO_BACKSLASH_ESCAPES;
    if (multibyte_matters((const unsigned char *)sql, len))
        bits |= SQL_LEX_MB_MASK;
    return bits;
}

/* Every mode that differs from `base` only in `vary` (ANSI_QUOTES,
 * NO_BACKSLASH_ESCAPES, the multibyte field), base first. */
static size_t modes_of(unsigned base, unsigned vary, unsigned *out)
{
    size_t n = 0;
    unsigned fixed =
        base & ~(vary & (SQL_LEX_ANSI_QUOTES | SQL_LEX_NO_BACKSLASH_ESCAPES | SQL_LEX_MB_MASK));
    unsigned mbs = (vary & SQL_LEX_MB_MASK) ? SQL_LEX_MB_COUNT + 1 : 1;
    out[n++] = base;
    for (unsigned a = 0; a < 2; a++) {
        if (a && !(vary & SQL_LEX_ANSI_QUOTES))
            break;
        for (unsigned b = 0; b < 2; b++) {
            if (b && !(vary & SQL_LEX_NO_BACKSLASH_ESCAPES))
                break;
            for (unsigned m = 0; m < mbs; m++) {
                unsigned f = fixed;
                if (vary & SQL_LEX_ANSI_QUOTES)
                    f |= a ? SQL_LEX_ANSI_QUOTES : 0;
                if (vary & SQL_LEX_NO_BACKSLASH_ESCAPES)
                    f |= b ? SQL_LEX_NO_BACKSLASH_ESCAPES : 0;
                if (vary & SQL_LEX_MB_MASK)
                    f |= m << 4;
                if (f != base)
                    out[n++] = f;
            }
        }
    }
    return n;
}

sql_rc rules_lex(run *R, const char *sql, size_t len, size_t *count)
{
    mr_rules_scratch *s = R->s;
    if (!GROW(s->tok, s->tok_cap, 256))
        return SQL_PARTIAL;
    sql_rc rc = sql_lex(sql, len, R->ctx->lex_flags, s->tok, s->tok_cap, count);
    while (rc == SQL_PARTIAL) {
        if (!GROW(s->tok, s->tok_cap, s->tok_cap * 2))
            return SQL_PARTIAL;
        rc = sql_lex(sql, len, R->ctx->lex_flags, s->tok, s->tok_cap, count);
    }
    return rc;
}

/* Narrows the relevant bits by the session's tokens: ANSI_QUOTES matters
 * only when a token is delimited by '"', NO_BACKSLASH_ESCAPES only when a
 * quoted literal holds a '\' (a '"' or '\' in a comment or another quote
 * reads alike in every mode: the lexer meets the same token starts). */
static unsigned narrow(const run *R, const char *sql, size_t count, unsigned bits)
{
    unsigned keep = bits & SQL_LEX_MB_MASK;
    for (size_t i = 0; i < count && keep != bits; i++) {
        const sql_token *t = &R->s->tok[i];
        bool whole = t->kind == SQL_TOK_ERROR || t->kind == SQL_TOK_EXEC_COMMENT;
        if (whole || (t->flags & SQL_TF_DQUOTE))
            keep |= bits & SQL_LEX_ANSI_QUOTES;
        if (whole || ((t->kind == SQL_TOK_STRING || t->kind == SQL_TOK_VAR) &&
                      memchr(sql + t->off, '\\', t->len)))
            keep |= bits & SQL_LEX_NO_BACKSLASH_ESCAPES;
    }
    return keep;
}

/* Does some mode of `modes` (after modes[0], the session's) read the text
 * into other tokens than the session's reading (count tokens in the
 * scratch)? Equal tokens (offset, length, kind) mean equal statements
 * wherever a mode changes, since the lexer reads the text after a ';' as it
 * reads a text's start. */
static bool reads_differently(run *R, const char *sql, size_t len, size_t count,
                              const unsigned *modes, size_t n)
{
    mr_rules_scratch *s = R->s;
    for (size_t k = 1; k < n; k++) {
        sql_lexer lx;
        sql_token t;
        size_t i = 0;
        sql_lexer_init(&lx, sql, len, modes[k]);
        for (; sql_lexer_next(&lx, &t); i++) {
            const sql_token *p = &s->tok[i];
            if (i == count || p->off != t.off || p->len != t.len || p->kind != t.kind)
                return true;
        }
        if (i != count)
            return true;
    }
    return false;
}

/* Adds a start position, kept sorted and unique (each is read once). */
static bool add_start(run *R, size_t *count, size_t pos, bool primary)
{
    mr_rules_scratch *s = R->s;
    size_t i = *count;
    while (i > 0 && s->starts[i - 1].pos > pos)
        i--;
    if (i > 0 && s->starts[i - 1].pos == pos) {
        s->starts[i - 1].primary |= primary;
        return true;
    }
    if (!GROW(s->starts, s->start_cap, *count + 1))
        return false;
    memmove(&s->starts[i + 1], &s->starts[i], (*count - i) * sizeof s->starts[0]);
    s->starts[i] = (struct reading_start){pos, primary};
    (*count)++;
    return true;
}

/* The block of another reading becomes the text's answer. */
static void take_block(mr_match_result *res, const mr_match_result *alt)
{
    res->action = MR_ACT_BLOCK;
    res->err_code = alt->err_code;
    memcpy(res->sqlstate, alt->sqlstate, sizeof res->sqlstate);
    res->message = alt->message;
    for (unsigned i = 0; i < alt->nmatched && res->nmatched < MR_MATCH_MAX_RULES; i++) {
        res->matched[res->nmatched] = alt->matched[i];
        res->sampled[res->nmatched] = alt->sampled[i];
        res->staged_rows[res->nmatched] = 0;
        res->staged_table[res->nmatched++] = NULL;
    }
}

static void refuse(mr_match_result *res, const char *why)
{
    res->action = MR_ACT_BLOCK;
    res->err_code = MR_UNREADABLE_ERR_CODE;
    memcpy(res->sqlstate, MR_UNREADABLE_SQLSTATE, sizeof res->sqlstate);
    res->message = why;
}

static const char too_many[] =
    "myrewrite refused this text: it reads differently under the sql_mode or character set "
    "its statements may set, in more ways than the rules can examine; send its statements "
    "separately";
static const char no_rewrite[] =
    "myrewrite refused this text: a rule rewrites it, but a statement in it may change the "
    "sql_mode or character set under which the server reads the rest, and the rest reads "
    "differently then; send the statements that change the mode separately";

/* Reads the text from every start position in every mode that may be in
 * force there; with block rules, they meet each statement found that the
 * session's reading does not hold as it is. True when such a statement
 * starts after the first (a rewrite of the session's reading would then be
 * read differently). */
static bool explore(run *R, const char *sql, size_t len, const unsigned *start_modes, size_t nstart,
                    const unsigned *all_modes, size_t nall)
{
    mr_rules_scratch *s = R->s;
    mr_match_result alt = {0};
    bool blocks = R->rs->has_block, later = false, stop = false;
    size_t count = 0, budget = (nall + 2) * len + 65536;
    unsigned own = R->ctx->lex_flags;
    if (!add_start(R, &count, 0, true))
        return true;
    for (size_t i = 0; i < count && !stop; i++) {
        struct reading_start at = s->starts[i];
        const unsigned *modes = at.pos == 0 ? start_modes : all_modes;
        size_t n = at.pos == 0 ? nstart : nall;
        sql_span own_sp = {0, 0}; /* modes[0] is the session's: its statement here */
        for (size_t k = 0; k < n && !stop; k++) {
            sql_span sp;
            size_t next, rest = len - at.pos;
            sql_rc rc = sql_split_first(sql + at.pos, rest, modes[k], &sp, &next);
            budget = budget > next ? budget - next : 0;
            if (budget == 0) {
                if (blocks)
                    refuse(R->res, too_many);
                later = stop = true;
                continue;
            }
            const char *text = sql + at.pos + sp.off;
            bool same =
                at.primary && (k == 0 || (sp.off == own_sp.off && sp.len == own_sp.len &&
                                          !((modes[k] ^ own) & relevant_bits(text, sp.len))));
            if (k == 0)
                own_sp = sp;
            if (sp.len == 0 || rc == SQL_ERR)
                continue; /* nothing, or the server stops here with a syntax error */
            later |= !same && at.pos > 0;
            if (!same && blocks) {
                mr_stmt_ctx c = *R->ctx;
                c.lex_flags = modes[k];
                rules_run_reading(R->rs, text, sp.len, &c, s, &alt);
                if (alt.action == MR_ACT_BLOCK) {
                    take_block(R->res, &alt);
                    stop = true;
                    continue;
                }
            }
            if (next < rest && !add_start(R, &count, at.pos + next, same))
                later = stop = true; /* out of memory: rewrites are refused */
        }
    }
    mr_buf_free(&alt.text);
    mr_buf_free(&alt.would_be);
    return later;
}

void rules_readings(run *R, const char *sql, size_t len)
{
    mr_match_result *res = R->res;
    bool rewrites = res->action != MR_ACT_PASS && res->action != MR_ACT_BLOCK;
    if (!R->rs->has_block && !rewrites)
        return; /* nothing another reading could change */
    unsigned bits = relevant_bits(sql, len);
    size_t count = 0;
    if (!bits)
        return;
    if (rules_lex(R, sql, len, &count) == SQL_PARTIAL) { /* out of memory: fail closed */
        refuse(res, R->rs->has_block ? too_many : no_rewrite);
        return;
    }
    /* Narrowed bits hold only for the session's token starts: once one mode
     * reads a token otherwise, the starts after it are new, and any bit may
     * matter there. So they only say when nothing can differ at all. */
    if (!narrow(R, sql, count, bits))
        return;
    unsigned start[2 * 2 * (SQL_LEX_MB_COUNT + 1)], all[2 * 2 * (SQL_LEX_MB_COUNT + 1)];
    size_t nstart = modes_of(R->ctx->lex_flags, bits & R->ctx->lex_unsure, start);
    bool multi = memchr(sql, ';', len) != NULL;
    size_t nall = multi ? modes_of(R->ctx->lex_flags, bits, all) : 0;
    if (!reads_differently(R, sql, len, count, multi ? all : start, multi ? nall : nstart))
        return;
    bool later = explore(R, sql, len, start, nstart, all, nall);
    if (later && rewrites && res->action != MR_ACT_BLOCK)
        refuse(res, no_rewrite);
}
