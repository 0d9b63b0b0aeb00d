/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sql/dynamic.c - statements that run SQL of their own (see sql/dynamic.h):
 * EXECUTE IMMEDIATE, PREPARE ... FROM, CALL, compound statements.
 *
 * Pure, any thread.
 */
#include "myrewrite/sql/dynamic.h"
#include "myrewrite/sql/token_value.h"

#include <string.h>

/* The two forms that name their SQL, and how the operand can hide it. */
enum form { FORM_EXECUTE, FORM_PREPARE };
enum operand { OP_VARIABLE, OP_PARAMETER, OP_INTRODUCER, OP_EXPRESSION };

static const char *const hidden_what[2][4] = {
    {"EXECUTE IMMEDIATE of a user variable", "EXECUTE IMMEDIATE of a parameter (?)",
     "EXECUTE IMMEDIATE of a string with a character set introducer",
     "EXECUTE IMMEDIATE of an expression"},
    {"PREPARE ... FROM a user variable", "PREPARE ... FROM a parameter (?)",
     "PREPARE ... FROM a string with a character set introducer", "PREPARE ... FROM an expression"},
};

static void hidden(sql_dynamic *out, const char *what)
{
    out->kind = SQL_DYN_HIDDEN;
    out->what = what;
}

static size_t next_sig(const sql_token *toks, size_t ntok, size_t i)
{
    while (i < ntok && toks[i].kind == SQL_TOK_COMMENT)
        i++;
    return i;
}

static bool is_word(const sql_token *t, unsigned kw)
{
    return t->kind == SQL_TOK_WORD && t->id == kw;
}

/* A compound statement runs the statements of its body now, where no rule
 * reads them: BEGIN NOT ATOMIC, IF, CASE, FOR, LOOP, WHILE, REPEAT, or a
 * label (`name:`) before one. */
static bool compound_start(const char *text, const sql_token *toks, size_t ntok, size_t i)
{
    const sql_token *t = &toks[i];
    size_t j = next_sig(toks, ntok, i + 1);
    const sql_token *next = j < ntok ? &toks[j] : NULL;
    if (is_word(t, SQL_KW_BEGIN))
        return next && is_word(next, SQL_KW_NOT);
    if (is_word(t, SQL_KW_IF) || is_word(t, SQL_KW_CASE) || is_word(t, SQL_KW_FOR))
        return true;
    if (sql_tok_is_word(t, text, "LOOP") || sql_tok_is_word(t, text, "WHILE") ||
        sql_tok_is_word(t, text, "REPEAT"))
        return true;
    return (t->kind == SQL_TOK_WORD || t->kind == SQL_TOK_QIDENT) && next &&
           next->kind == SQL_TOK_OP && next->id == SQL_OP_COLON;
}

/* The first word of a statement decides whether it may run SQL of its own. */
static bool dynamic_word(const char *text, const sql_token *t)
{
    return is_word(t, SQL_KW_CALL) || is_word(t, SQL_KW_EXECUTE) || is_word(t, SQL_KW_PREPARE) ||
           is_word(t, SQL_KW_BEGIN) || is_word(t, SQL_KW_IF) || is_word(t, SQL_KW_CASE) ||
           is_word(t, SQL_KW_FOR) || sql_tok_is_word(t, text, "LOOP") ||
           sql_tok_is_word(t, text, "WHILE") || sql_tok_is_word(t, text, "REPEAT");
}

/* Without lexing: a statement that starts with a letter no dynamic word
 * starts with (CALL CASE EXECUTE PREPARE BEGIN IF FOR LOOP WHILE REPEAT),
 * in a text with no ':' for a label, is none (SELECT, UPDATE, SET ...). */
static bool surely_not(const char *text, size_t n)
{
    size_t i = 0;
    while (i < n && (text[i] == ' ' || (text[i] >= '\t' && text[i] <= '\r')))
        i++;
    char c = i < n ? (char)(text[i] & ~0x20) : 0; /* upper case, for letters */
    bool letter = c >= 'A' && c <= 'Z';
    return letter && !strchr("CEPBIFLWR", c) && !memchr(text, ':', n);
}

bool sql_dynamic_may(const char *text, size_t n, unsigned lex_flags)
{
    if (surely_not(text, n))
        return false;
    sql_lexer lx;
    sql_token t, next;
    sql_lexer_init(&lx, text, n, lex_flags | SQL_LEX_SKIP_COMMENTS);
    if (!sql_lexer_next_sig(&lx, &t))
        return false;
    if (t.kind == SQL_TOK_EXEC_COMMENT || (t.kind == SQL_TOK_WORD && dynamic_word(text, &t)))
        return true;
    bool label = t.kind == SQL_TOK_QIDENT || (t.kind == SQL_TOK_WORD && t.id == SQL_KW_NONE);
    return label && sql_lexer_next_sig(&lx, &next) && next.kind == SQL_TOK_OP &&
           next.id == SQL_OP_COLON;
}

/* An executable comment that starts the statement: 1 when its body starts
 * a statement that may run SQL of its own (the proxy does not read those
 * inside a comment), 0 when the body starts another statement, -1 when the
 * body is empty (the statement starts after it). */
static int exec_comment_lead(const char *text, const sql_token *t, unsigned lex_flags)
{
    size_t off = 0, len = 0;
    if (!sql_exec_body(t, text, &off, &len))
        return 0;
    sql_lexer lx;
    sql_token first;
    sql_lexer_init(&lx, text + off, len, lex_flags | SQL_LEX_SKIP_COMMENTS);
    if (!sql_lexer_next_sig(&lx, &first))
        return -1;
    if (first.kind == SQL_TOK_WORD || first.kind == SQL_TOK_QIDENT)
        return dynamic_word(text + off, &first) ? 1 : 0;
    return 0;
}

/* What names the SQL after EXECUTE IMMEDIATE / PREPARE ... FROM, at i. */
static void operand(const char *text, const sql_token *toks, size_t ntok, size_t i, enum form form,
                    sql_dynamic *out)
{
    size_t first = i, end = i;
    for (; i < ntok && toks[i].kind == SQL_TOK_STRING; i = next_sig(toks, ntok, i + 1)) {
        if (toks[i].flags & SQL_TF_INTRODUCER) {
            hidden(out, hidden_what[form][OP_INTRODUCER]);
            return;
        }
        end = i + 1;
    }
    if (end == first) {
        if (i >= ntok || toks[i].kind == SQL_TOK_SEMI)
            return; /* nothing named: the server refuses the syntax */
        enum operand op = toks[i].kind == SQL_TOK_VAR     ? OP_VARIABLE
                          : toks[i].kind == SQL_TOK_PARAM ? OP_PARAMETER
                                                          : OP_EXPRESSION;
        hidden(out, hidden_what[form][op]);
        return;
    }
    bool ends = i >= ntok || toks[i].kind == SQL_TOK_SEMI ||
                (form == FORM_EXECUTE && sql_tok_is_word(&toks[i], text, "USING"));
    if (!ends) { /* 'a' COLLATE x, 'a' || b: an expression made from the literal */
        hidden(out, hidden_what[form][OP_EXPRESSION]);
        return;
    }
    out->kind = SQL_DYN_LITERAL;
    out->lit = (sql_range){(uint32_t)first, (uint32_t)end};
    out->what = form == FORM_EXECUTE ? "EXECUTE IMMEDIATE" : "PREPARE ... FROM";
}

/* i: the statement's first significant token. */
static void classify(const char *text, const sql_token *toks, size_t ntok, size_t i,
                     sql_dynamic *out)
{
    const sql_token *t = &toks[i];
    if (compound_start(text, toks, ntok, i)) {
        hidden(out, "a compound statement (BEGIN NOT ATOMIC, IF, CASE, a loop)");
        return;
    }
    if (is_word(t, SQL_KW_CALL)) {
        hidden(out, "CALL of a stored procedure");
        return;
    }
    size_t j = next_sig(toks, ntok, i + 1);
    if (is_word(t, SQL_KW_EXECUTE)) {
        if (j < ntok && sql_tok_is_word(&toks[j], text, "IMMEDIATE"))
            operand(text, toks, ntok, next_sig(toks, ntok, j + 1), FORM_EXECUTE, out);
        return; /* EXECUTE name: a statement prepared before, examined then */
    }
    if (!is_word(t, SQL_KW_PREPARE) || j >= ntok ||
        (toks[j].kind != SQL_TOK_WORD && toks[j].kind != SQL_TOK_QIDENT))
        return;
    size_t k = next_sig(toks, ntok, j + 1);
    if (k < ntok && is_word(&toks[k], SQL_KW_FROM))
        operand(text, toks, ntok, next_sig(toks, ntok, k + 1), FORM_PREPARE, out);
}

void sql_dynamic_find(const char *text, const sql_token *toks, size_t ntok, unsigned lex_flags,
                      sql_dynamic *out)
{
    out->kind = SQL_DYN_NONE;
    out->lit = (sql_range){SQL_NONE, SQL_NONE};
    out->what = NULL;
    size_t i = next_sig(toks, ntok, 0);
    for (; i < ntok && toks[i].kind == SQL_TOK_EXEC_COMMENT; i = next_sig(toks, ntok, i + 1)) {
        int lead = exec_comment_lead(text, &toks[i], lex_flags);
        if (lead > 0)
            hidden(out, "a statement that starts inside an executable comment");
        if (lead >= 0)
            return;
    }
    if (i < ntok && toks[i].kind != SQL_TOK_SEMI)
        classify(text, toks, ntok, i, out);
}

size_t sql_dynamic_text_max(const sql_token *toks, const sql_dynamic *d)
{
    size_t n = 0;
    for (uint32_t i = d->lit.first; d->kind == SQL_DYN_LITERAL && i < d->lit.end; i++)
        n += toks[i].len;
    return n;
}

size_t sql_dynamic_text(const char *text, const sql_token *toks, const sql_dynamic *d,
                        unsigned lex_flags, char *out)
{
    size_t n = 0;
    for (uint32_t i = d->lit.first; d->kind == SQL_DYN_LITERAL && i < d->lit.end; i++)
        if (toks[i].kind == SQL_TOK_STRING)
            n += sql_tok_string(&toks[i], text, lex_flags, out + n);
    return n;
}
