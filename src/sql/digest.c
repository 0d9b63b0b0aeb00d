/* SPDX-License-Identifier: Apache-2.0 */
/* sql/digest.c - statement normalization and FNV-1a 64 hashing.
 * Thread: pure, any thread. Owns nothing; writes only the caller's buffer
 * and keeps all state on the stack. Rules are listed in sql/digest.h. */
#include "myrewrite/sql/digest.h"

#include <string.h>

#define FNV_OFFSET 0xcbf29ce484222325ULL
#define FNV_PRIME 0x100000001b3ULL

uint64_t sql_hash64(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = FNV_OFFSET;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= FNV_PRIME;
    }
    return h;
}

/* ---- output writer ------------------------------------------------------ */

/* Spacing classes: what a piece is, as seen by its neighbours. */
enum { SP_START, SP_NAME, SP_OPEN, SP_CLOSE, SP_DOT, SP_COMMA, SP_SEMI, SP_OTHER };

typedef struct writer {
    char *out;
    size_t cap;
    size_t len;
    size_t full;
    uint64_t h;
    int last;      /* spacing class of the previous piece */
    bool last_str; /* previous piece was a string literal (for 'a' 'b') */
} writer;

static void put_byte(writer *w, char c)
{
    w->h = (w->h ^ (unsigned char)c) * FNV_PRIME;
    w->full++;
    if (w->len + 1 < w->cap)
        w->out[w->len++] = c;
}

/* Verbatim pieces (names, hints) may hold NUL bytes; they are written as
 * the two characters \0 so the digest stays a C string. */
static void put_bytes(writer *w, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\0') {
            put_byte(w, '\\');
            put_byte(w, '0');
        } else {
            put_byte(w, p[i]);
        }
    }
}

/* Canonical spacing: decided by the neighbours' classes only, so input
 * whitespace never changes the digest. */
static bool need_space(int last, int cur)
{
    if (last == SP_START || last == SP_OPEN || last == SP_DOT)
        return false;
    if (cur == SP_CLOSE || cur == SP_COMMA || cur == SP_DOT || cur == SP_SEMI)
        return false;
    return !(cur == SP_OPEN && last == SP_NAME);
}

/* Append a piece whose left side behaves as class `before` and whose
 * right side as `after`. */
static void put_piece(writer *w, const char *p, size_t n, int before, int after)
{
    if (need_space(w->last, before))
        put_bytes(w, " ", 1);
    put_bytes(w, p, n);
    w->last = after;
    w->last_str = false;
}

static void put_literal(writer *w, bool is_string)
{
    if (is_string && w->last_str)
        return; /* 'a' 'b' is one string to MySQL */
    put_piece(w, "?", 1, SP_OTHER, SP_OTHER);
    w->last_str = is_string;
}

/* Cut back to the start of a UTF-8 sequence the truncation split. */
static size_t utf8_trim(const char *s, size_t len)
{
    size_t i = len;
    int back = 0;
    while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        back++;
    }
    if (i == 0)
        return len;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return (len - (i - 1) < need) ? i - 1 : len;
}

/* ---- token helpers -------------------------------------------------------- */

typedef struct digester {
    writer w;
    const char *s;
    uint8_t prev_kind; /* last significant source token */
    uint16_t prev_id;
    int depth;        /* parenthesis depth */
    int values_depth; /* depth of a VALUES row list, -1 when none */
} digester;

/* One list item: signed number, literal (adjacent strings count as one),
 * NULL/TRUE/FALSE, or, if nest, a parenthesized literal tuple. On success
 * *t holds the token after the item. */
static bool literal_item(sql_lexer *lx, sql_token *t, bool nest)
{
    if (!sql_lexer_next_sig(lx, t))
        return false;
    if (t->kind == SQL_TOK_LPAREN) {
        sql_token close;
        if (!nest || !sql_digest_literal_row(lx, false, &close))
            return false;
    } else if (t->kind == SQL_TOK_OP && (t->id == SQL_OP_MINUS || t->id == SQL_OP_PLUS)) {
        if (!sql_lexer_next_sig(lx, t) || (t->kind != SQL_TOK_NUMBER && t->kind != SQL_TOK_PARAM))
            return false;
    } else if (t->kind == SQL_TOK_WORD) {
        if (t->id != SQL_KW_NULL && !(sql_kw_flags((sql_kw)t->id) & SQL_KWF_LITERAL))
            return false;
    } else if (!sql_tok_is_literal(t->kind)) {
        return false;
    }
    bool str = t->kind == SQL_TOK_STRING;
    if (!sql_lexer_next_sig(lx, t))
        return false;
    while (str && t->kind == SQL_TOK_STRING)
        if (!sql_lexer_next_sig(lx, t))
            return false;
    return true;
}

bool sql_digest_literal_row(sql_lexer *lx, bool nest, sql_token *close)
{
    for (;;) {
        if (!literal_item(lx, close, nest))
            return false;
        if (close->kind == SQL_TOK_RPAREN)
            return true;
        if (close->kind != SQL_TOK_COMMA)
            return false;
    }
}

/* At '(' following IN: a literal list collapses to "(...)". */
static bool try_collapse_in(sql_lexer *lx)
{
    sql_lexer p = *lx;
    sql_token close;
    if (!sql_digest_literal_row(&p, true, &close))
        return false;
    *lx = p;
    return true;
}

/* At a VALUES row '(': collapse it and any following literal rows. */
static bool try_collapse_rows(sql_lexer *lx)
{
    sql_lexer p = *lx;
    sql_token close;
    if (!sql_digest_literal_row(&p, false, &close))
        return false;
    *lx = p;
    for (;;) {
        sql_token t;
        sql_lexer q = p;
        if (!sql_lexer_next_sig(&q, &t) || t.kind != SQL_TOK_COMMA)
            break;
        if (!sql_lexer_next_sig(&q, &t) || t.kind != SQL_TOK_LPAREN ||
            !sql_digest_literal_row(&q, false, &close))
            break;
        *lx = p = q;
    }
    return true;
}

/* ---- per-token emitters ----------------------------------------------------- */

static bool plain_name(const char *p, size_t n)
{
    if (n == 0 || (p[0] >= '0' && p[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '$' || c >= 0x80;
        if (!ok)
            return false;
    }
    return true;
}

/* `name`: unquoted when that reads back as the same identifier. */
static void emit_qident(digester *d, const sql_token *t)
{
    const char *p = d->s + t->off;
    const char *in = p + 1;
    size_t n = t->len - 2;
    if (!(t->flags & SQL_TF_ESCAPED) && plain_name(in, n)) {
        sql_kw kw = sql_kw_lookup(in, n);
        if (kw == SQL_KW_NONE) {
            put_piece(&d->w, in, n, SP_NAME, SP_NAME);
            return;
        }
        if (!(sql_kw_flags(kw) & SQL_KWF_RESERVED)) {
            put_piece(&d->w, sql_kw_name(kw), n, SP_NAME, SP_NAME);
            return;
        }
    }
    put_piece(&d->w, p, t->len, SP_NAME, SP_NAME);
}

static void emit_word(digester *d, const sql_token *t)
{
    if (t->id == SQL_KW_NONE) {
        put_piece(&d->w, d->s + t->off, t->len, SP_NAME, SP_NAME);
        return;
    }
    unsigned f = sql_kw_flags((sql_kw)t->id);
    if (f & SQL_KWF_LITERAL) {
        put_literal(&d->w, false);
        return;
    }
    int cls = (f & SQL_KWF_FUNC) ? SP_NAME : SP_OTHER;
    put_piece(&d->w, sql_kw_name((sql_kw)t->id), t->len, cls, cls);
    if (t->id == SQL_KW_VALUES || t->id == SQL_KW_VALUE)
        d->values_depth = d->depth;
}

bool sql_digest_sign_folds(sql_lexer *lx, const sql_token *t, unsigned prev_kind, unsigned prev_id,
                           sql_token *num)
{
    if ((t->id != SQL_OP_MINUS && t->id != SQL_OP_PLUS) ||
        !sql_operand_expected(prev_kind, prev_id))
        return false;
    sql_lexer p = *lx;
    if (!sql_lexer_next_sig(&p, num) || (num->kind != SQL_TOK_NUMBER && num->kind != SQL_TOK_PARAM))
        return false;
    *lx = p;
    return true;
}

/* '-'/'+' in operand position before a number or '?': fold into one '?'. */
static bool fold_sign(digester *d, sql_lexer *lx, const sql_token *t)
{
    sql_token nx;
    if (!sql_digest_sign_folds(lx, t, d->prev_kind, d->prev_id, &nx))
        return false;
    put_literal(&d->w, false);
    d->prev_kind = SQL_TOK_NUMBER;
    return true;
}

/* '(' : maybe the start of a collapsible IN list or VALUES rows. */
static void emit_lparen(digester *d, sql_lexer *lx)
{
    bool in_list = d->prev_kind == SQL_TOK_WORD && d->prev_id == SQL_KW_IN;
    bool row = d->values_depth == d->depth &&
               ((d->prev_kind == SQL_TOK_WORD &&
                 (d->prev_id == SQL_KW_VALUES || d->prev_id == SQL_KW_VALUE)) ||
                d->prev_kind == SQL_TOK_COMMA);
    if ((in_list && try_collapse_in(lx)) || (row && try_collapse_rows(lx))) {
        put_piece(&d->w, "(...)", 5, SP_OPEN, SP_CLOSE);
        d->prev_kind = SQL_TOK_RPAREN;
        return;
    }
    put_piece(&d->w, "(", 1, SP_OPEN, SP_OPEN);
    d->depth++;
    d->prev_kind = SQL_TOK_LPAREN;
}

/* At ';': consume any further ';' (empty statements) and report whether
 * anything but comments follows. Consuming the run keeps a long ";;;;"
 * linear. */
bool sql_digest_more_after_semi(sql_lexer *lx)
{
    for (;;) {
        sql_lexer p = *lx;
        sql_token t;
        if (!sql_lexer_next_sig(&p, &t))
            return false;
        if (t.kind != SQL_TOK_SEMI)
            return true;
        *lx = p;
    }
}

static sql_rc digest_run(digester *d, sql_lexer *lx);

/* "/ *!50100 body * /": marker verbatim, body normalized. */
static sql_rc emit_exec(digester *d, const sql_lexer *lx, const sql_token *t)
{
    size_t off, len;
    sql_exec_body(t, d->s, &off, &len);
    put_piece(&d->w, d->s + t->off, off - t->off, SP_OTHER, SP_OTHER);
    sql_lexer in = *lx;
    in.pos = off;
    in.n = off + len;
    in.in_exec = 1;
    in.prev = 0;
    sql_rc rc = digest_run(d, &in);
    put_piece(&d->w, "*/", 2, SP_OTHER, SP_OTHER);
    return rc;
}

static void emit_simple(digester *d, const sql_token *t)
{
    writer *w = &d->w;
    switch (t->kind) {
    case SQL_TOK_RPAREN:
        put_piece(w, ")", 1, SP_CLOSE, SP_CLOSE);
        if (d->depth > 0)
            d->depth--;
        break;
    case SQL_TOK_COMMA: put_piece(w, ",", 1, SP_COMMA, SP_OTHER); break;
    case SQL_TOK_DOT: put_piece(w, ".", 1, SP_DOT, SP_DOT); break;
    case SQL_TOK_SEMI: put_piece(w, ";", 1, SP_SEMI, SP_OTHER); break;
    case SQL_TOK_QIDENT: emit_qident(d, t); break;
    default: /* operators, variables: as written */
        put_piece(w, d->s + t->off, t->len, SP_OTHER, SP_OTHER);
        break;
    }
}

int sql_digest_values_depth(int values_depth, int depth, const sql_token *t)
{
    bool row_list = t->kind == SQL_TOK_LPAREN || t->kind == SQL_TOK_COMMA ||
                    (t->kind == SQL_TOK_WORD && (t->id == SQL_KW_VALUES || t->id == SQL_KW_VALUE));
    return values_depth == depth && !row_list ? -1 : values_depth;
}

/* Emit one significant token; returns false to stop (trailing ';'). */
static bool emit_token(digester *d, sql_lexer *lx, const sql_token *t)
{
    d->values_depth = sql_digest_values_depth(d->values_depth, d->depth, t);
    if (t->kind == SQL_TOK_SEMI && !sql_digest_more_after_semi(lx))
        return false;
    if (sql_tok_is_literal(t->kind)) {
        put_literal(&d->w, t->kind == SQL_TOK_STRING);
    } else if (t->kind == SQL_TOK_WORD) {
        emit_word(d, t);
    } else if (t->kind == SQL_TOK_LPAREN) {
        emit_lparen(d, lx);
        return true; /* prev_kind set by emit_lparen */
    } else if (t->kind == SQL_TOK_OP && fold_sign(d, lx, t)) {
        return true;
    } else {
        emit_simple(d, t);
    }
    d->prev_kind = t->kind;
    d->prev_id = t->id;
    return true;
}

static sql_rc digest_run(digester *d, sql_lexer *lx)
{
    sql_token t;
    while (sql_lexer_next(lx, &t)) {
        if (t.kind == SQL_TOK_ERROR)
            return SQL_ERR;
        if (t.kind == SQL_TOK_COMMENT) {
            if (t.flags & SQL_TF_HINT)
                put_piece(&d->w, d->s + t.off, t.len, SP_OTHER, SP_OTHER);
            continue;
        }
        if (t.kind == SQL_TOK_EXEC_COMMENT) {
            if (emit_exec(d, lx, &t) != SQL_OK)
                return SQL_ERR;
            continue;
        }
        if (!emit_token(d, lx, &t))
            break;
    }
    return SQL_OK;
}

sql_rc sql_digest(const char *s, size_t n, unsigned lex_flags, char *out, size_t cap,
                  sql_digest_result *res)
{
    digester d;
    memset(&d, 0, sizeof d);
    d.w.out = out;
    d.w.cap = cap;
    d.w.h = FNV_OFFSET;
    d.w.last = SP_START;
    d.s = s;
    d.values_depth = -1;
    sql_lexer lx;
    sql_lexer_init(&lx, s, n, lex_flags & ~(unsigned)SQL_LEX_SKIP_COMMENTS);
    sql_rc rc = digest_run(&d, &lx);
    bool trunc = d.w.full > d.w.len;
    if (trunc)
        d.w.len = utf8_trim(out, d.w.len);
    if (cap > 0)
        out[d.w.len] = '\0';
    res->hash = d.w.h;
    res->len = d.w.len;
    res->full_len = d.w.full;
    res->truncated = trunc;
    if (rc == SQL_ERR)
        return SQL_ERR;
    return trunc ? SQL_PARTIAL : SQL_OK;
}
