/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/hints.c - the words of a statement that tell the pool to pin its
 * session (see pool/hints.h). One pass of the lexer; no parse.
 */
#include "myrewrite/pool/hints.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/sql/lexer.h"
#include "myrewrite/sql/token_value.h"

static bool word(const sql_token *t, const char *sql, const char *w)
{
    return t->kind == SQL_TOK_WORD && sql_tok_is_word(t, sql, w);
}

/* A function name: the word is followed by '(' (the lexer's look-ahead). */
static bool call_of(const sql_lexer *lx, const sql_token *t, const char *sql, const char *w)
{
    if (!word(t, sql, w))
        return false;
    sql_lexer ahead = *lx;
    sql_token n;
    return sql_lexer_next_sig(&ahead, &n) && n.kind == SQL_TOK_LPAREN;
}

/* A user variable assigned: in a SET, after INTO, or before `:=`. One only
 * read needs no pin: a session that assigns one keeps its connection to
 * the end, which is then closed, so no pooled connection holds any. */
static bool assigned(const sql_lexer *lx, const sql_token *t, bool set_or_into)
{
    if (t->kind != SQL_TOK_VAR)
        return false;
    sql_lexer ahead = *lx;
    sql_token n;
    return set_or_into ||
           (sql_lexer_next_sig(&ahead, &n) && n.kind == SQL_TOK_OP && n.id == SQL_OP_ASSIGN);
}

static uint32_t words_of(const sql_lexer *lx, const sql_token *t, const char *sql, bool set_or_into,
                         bool own)
{
    static const char *const lock_fns[] = {"GET_LOCK", "RELEASE_LOCK", "RELEASE_ALL_LOCKS",
                                           "IS_USED_LOCK"};
    uint32_t pins = 0;
    if (assigned(lx, t, set_or_into))
        pins |= MR_HINT(MR_PIN_USER_VARIABLE);
    else if (word(t, sql, "TEMPORARY"))
        pins |= MR_HINT(MR_PIN_TEMPORARY_TABLE);
    else if (word(t, sql, "SQL_CALC_FOUND_ROWS"))
        pins |= MR_HINT(MR_PIN_FOUND_ROWS);
    else if (!own && call_of(lx, t, sql, "CONNECTION_ID"))
        pins |= MR_HINT(MR_PIN_CONNECTION_ID);
    for (unsigned i = 0; i < sizeof lock_fns / sizeof lock_fns[0]; i++)
        if (call_of(lx, t, sql, lock_fns[i]))
            pins |= MR_HINT(MR_PIN_LOCK_FUNCTION);
    return pins;
}

/* `SET [SESSION] autocommit = <not 1, ON, TRUE>` (also as @@autocommit,
 * @@session.autocommit): each statement after it opens a transaction. */
static bool autocommit_off(const sql_lexer *lx, const sql_token *t, const char *sql)
{
    static const char name[] = "autocommit";
    size_t n = sizeof name - 1;
    bool named = word(t, sql, name) || (t->kind == SQL_TOK_SYSVAR && t->len >= n + 2 &&
                                        strncasecmp(sql + t->off + t->len - n, name, n) == 0 &&
                                        strchr("@.", sql[t->off + t->len - n - 1]));
    sql_lexer ahead = *lx;
    sql_token eq, v;
    if (!named || !sql_lexer_next_sig(&ahead, &eq) || eq.kind != SQL_TOK_OP ||
        (eq.id != SQL_OP_EQ && eq.id != SQL_OP_ASSIGN) || !sql_lexer_next_sig(&ahead, &v))
        return false;
    bool on = (v.kind == SQL_TOK_NUMBER && v.len == 1 && sql[v.off] == '1') ||
              word(&v, sql, "ON") || word(&v, sql, "TRUE");
    return !on;
}

/* A lone BEGIN [WORK] (not BEGIN NOT ATOMIC, a compound statement). */
static bool begin_alone(const sql_lexer *lx, const sql_token *t, const char *sql)
{
    if (!word(t, sql, "BEGIN"))
        return false;
    sql_lexer ahead = *lx;
    sql_token n;
    return !sql_lexer_next_sig(&ahead, &n) || n.kind == SQL_TOK_SEMI || word(&n, sql, "WORK");
}

/* The second word of a statement after the first, `prev`. */
static uint32_t opens_second(const sql_token *prev, const sql_token *t, const char *sql)
{
    if ((word(prev, sql, "START") && word(t, sql, "TRANSACTION")) ||
        (word(prev, sql, "XA") && (word(t, sql, "START") || word(t, sql, "BEGIN"))))
        return MR_HINT(MR_PIN_TRANSACTION);
    if (word(prev, sql, "LOCK") && (word(t, sql, "TABLE") || word(t, sql, "TABLES")))
        return MR_HINT(MR_PIN_LOCKED_TABLES);
    if (word(prev, sql, "SET") && word(t, sql, "TRANSACTION"))
        return MR_HINT(MR_PIN_TRX_NEXT);
    return 0;
}

uint32_t mr_pool_opens(const char *sql, size_t len, unsigned lex_flags)
{
    sql_lexer lx;
    sql_token t, prev = {0};
    unsigned nth = 0;
    bool set = false;
    uint32_t r = 0;
    sql_lexer_init(&lx, sql, len, lex_flags);
    while (sql_lexer_next_sig(&lx, &t)) {
        if (t.kind == SQL_TOK_SEMI) {
            nth = 0;
            continue;
        }
        if (nth == 0) {
            set = word(&t, sql, "SET");
            if (begin_alone(&lx, &t, sql))
                r |= MR_HINT(MR_PIN_TRANSACTION);
            else if (word(&t, sql, "PREPARE"))
                r |= MR_HINT(MR_PIN_PREPARED_SQL);
        } else if (nth == 1) {
            r |= opens_second(&prev, &t, sql);
        }
        if (set && autocommit_off(&lx, &t, sql))
            r |= MR_HINT(MR_PIN_TRANSACTION);
        prev = t;
        nth++;
    }
    return r;
}

void mr_pool_hints_read(const char *sql, size_t len, unsigned lex_flags, bool own, mr_pool_hints *h)
{
    sql_lexer lx;
    sql_token t;
    bool first = true, set_or_use = false, set_or_into = false;
    *h = (mr_pool_hints){0};
    sql_lexer_init(&lx, sql, len, lex_flags);
    while (sql_lexer_next_sig(&lx, &t)) {
        if (t.kind == SQL_TOK_EXEC_COMMENT || t.kind == SQL_TOK_ERROR) {
            h->maybe |= MR_HINT(MR_PIN_STATE_CHANGE); /* unread words: any change pins */
            set_or_use = false;
            continue;
        }
        if (first)
            set_or_into = word(&t, sql, "SET");
        if (first)
            set_or_use = word(&t, sql, "SET") || word(&t, sql, "USE");
        else if (word(&t, sql, "INTO"))
            set_or_into = true;
        if (t.kind == SQL_TOK_VAR)
            h->maybe |= MR_HINT(MR_PIN_USER_VARIABLE);
        else if (word(&t, sql, "SELECT") || t.kind == SQL_TOK_SEMI)
            set_or_use = false; /* a subquery, or a second statement */
        if (first && (word(&t, sql, "PREPARE") || word(&t, sql, "EXECUTE")))
            h->maybe |= MR_HINT(MR_PIN_PREPARED_SQL);
        if (word(&t, sql, "CALL") || word(&t, sql, "EXECUTE"))
            h->opaque = true;
        first = false;
        h->pins |= words_of(&lx, &t, sql, set_or_into, own);
        if (t.kind == SQL_TOK_WORD && t.len > 14 &&
            strncasecmp(sql + t.off, "session_track_", 14) == 0)
            h->tracking = true;
    }
    h->replay_only = set_or_use && !h->pins;
}

/* Where the lexer stands for mr_pool_own_values: parentheses open, and the
 * depth of a select list it is in (-1: none), read one token at a time. */
typedef struct own_walk {
    int depth;
    int list;       /* the depth of the select list being read, or -1 */
    bool item_open; /* the token before starts a select item (SELECT, a modifier, ',') */
    bool first;     /* in the text's first statement */
    bool starts;    /* the next token starts a statement */
} own_walk;

static bool select_modifier(const sql_token *t, const char *sql)
{
    static const char *const mods[] = {"ALL", "DISTINCT", "DISTINCTROW", "HIGH_PRIORITY",
                                       "STRAIGHT_JOIN"};
    if (t->kind != SQL_TOK_WORD)
        return false;
    if (t->len > 4 && strncasecmp(sql + t->off, "SQL_", 4) == 0)
        return true;
    for (unsigned i = 0; i < sizeof mods / sizeof mods[0]; i++)
        if (sql_tok_is_word(t, sql, mods[i]))
            return true;
    return false;
}

/* Follows the token t (not a call taken). */
static void walk_step(own_walk *w, const sql_token *t, const char *sql)
{
    bool opens = false;
    if (t->kind == SQL_TOK_LPAREN)
        w->depth++;
    else if (t->kind == SQL_TOK_RPAREN && w->depth > 0 && --w->depth < w->list)
        w->list = -1; /* a subquery's select list ends with it */
    else if (t->kind == SQL_TOK_SEMI)
        w->first = false, w->list = -1, w->depth = 0, w->starts = true;
    else if (word(t, sql, "SELECT"))
        w->list = w->depth, opens = true;
    else if (t->kind == SQL_TOK_COMMA)
        opens = w->list == w->depth;
    else if (w->list == w->depth && select_modifier(t, sql))
        opens = w->item_open;
    else if (w->list == w->depth && word(t, sql, "FROM"))
        w->list = -1;
    w->item_open = opens;
}

/* The token after a call ends a select item: the item is the call alone. */
static bool item_ends(const sql_token *n, bool more, const char *sql)
{
    static const char *const ends[] = {"FROM",  "INTO",   "UNION",  "EXCEPT", "INTERSECT",
                                       "WHERE", "GROUP",  "HAVING", "ORDER",  "LIMIT",
                                       "FOR",   "WINDOW", "LOCK"};
    if (!more || n->kind == SQL_TOK_COMMA || n->kind == SQL_TOK_SEMI || n->kind == SQL_TOK_RPAREN)
        return true;
    for (unsigned i = 0; i < sizeof ends / sizeof ends[0]; i++)
        if (word(n, sql, ends[i]))
            return true;
    return false;
}

/* Which value, if any, stands for the call at t; *v its text. */
static bool own_value(const sql_token *t, const char *sql, const mr_pool_own *own,
                      const own_walk *w, char *v, size_t cap)
{
    if (sql_tok_is_word(t, sql, "CONNECTION_ID"))
        return !own->counts_only && snprintf(v, cap, "%" PRIu32, own->connection_id) > 0;
    if (!w->first) /* an earlier statement of the text sets them, on the same connection */
        return false;
    if (own->row_count_known && sql_tok_is_word(t, sql, "ROW_COUNT"))
        return snprintf(v, cap, "%" PRId64, own->row_count) > 0;
    if (own->found_rows_known && sql_tok_is_word(t, sql, "FOUND_ROWS"))
        return snprintf(v, cap, "%" PRIu64, own->found_rows) > 0;
    return false;
}

/* Not `db.name()`: a stored function's call, the server's to answer.
 * (`name ()` and `name/ * * /()` are the native call, as direct.) */
static bool native_call(const sql_token *prev) { return prev->kind != SQL_TOK_DOT; }

/* The value for the call spanning [from, to) of sql. In a select list
 * `COALESCE(value, call)`, whose type is the call's BIGINT (a bare number
 * is an INT: a column of another type than direct), and as a select item
 * alone with ` AS `call`` too, the column's name as direct; elsewhere
 * `(value+0)`: an expression, as the call is (a bare number after ORDER BY
 * or GROUP BY names a column by its position), and a constant to the
 * optimizer (a claim's `owner = (<id>+0)` uses its index). */
static void put_value(mr_buf *out, const char *sql, size_t from, size_t to, const char *v,
                      bool listed, bool item)
{
    if (!listed) {
        mr_buf_put(out, "(", 1);
        mr_buf_put(out, v, strlen(v));
        mr_buf_put(out, "+0)", 3);
        return;
    }
    mr_buf_put(out, "COALESCE(", 9);
    mr_buf_put(out, v, strlen(v));
    mr_buf_put(out, ",", 1);
    mr_buf_put(out, sql + from, to - from);
    mr_buf_put(out, ")", 1);
    if (!item)
        return;
    mr_buf_put(out, " AS `", 5);
    for (size_t i = from; i < to; i++) /* a comment inside may hold one */
        mr_buf_put(out, sql + i, sql[i] == '`' ? 0 : 1);
    mr_buf_put(out, "`", 1);
}

/* CREATE or ALTER (t) of a stored program, a trigger, an event or a view:
 * the first object word after the options (OR REPLACE, DEFINER = ...,
 * ALGORITHM = ..., SQL SECURITY ...) says which. */
static bool stored_object(const sql_lexer *lx, const sql_token *t, const char *sql)
{
    static const char *const stored[] = {"TRIGGER", "PROCEDURE", "FUNCTION",
                                         "EVENT",   "VIEW",      "PACKAGE"};
    static const char *const other[] = {"TABLE",    "TEMPORARY", "INDEX",     "UNIQUE",
                                        "DATABASE", "SCHEMA",    "USER",      "ROLE",
                                        "SEQUENCE", "SERVER",    "TABLESPACE"};
    if (!word(t, sql, "CREATE") && !word(t, sql, "ALTER"))
        return false;
    sql_lexer ahead = *lx;
    sql_token n;
    while (sql_lexer_next_sig(&ahead, &n) && n.kind != SQL_TOK_SEMI) {
        for (unsigned i = 0; i < sizeof stored / sizeof stored[0]; i++)
            if (word(&n, sql, stored[i]))
                return true;
        for (unsigned i = 0; i < sizeof other / sizeof other[0]; i++)
            if (word(&n, sql, other[i]))
                return false;
    }
    return false;
}

/* One pass of mr_pool_own_values over the text and the bodies of its
 * executable comments. */
typedef struct own_pass {
    const char *text; /* the whole statement */
    unsigned lex_flags;
    const mr_pool_own *own;
    own_walk w;
    mr_buf *out;
    size_t copied;          /* text before this is in out */
    const sql_lexer *after; /* in a comment's body: the text's lexer past the comment */
} own_pass;

/* Reads len bytes at from of the text: all of it, or (nested) the body of
 * an executable comment, whose wrapper stays so the server's version gate
 * still decides. False: a stored object, left alone. */
static bool own_range(own_pass *p, size_t from, size_t len, bool nested)
{
    const char *sql = p->text + from; /* the lexer's offsets are from here */
    sql_lexer lx;
    sql_token t, prev = {0};
    char v[24];
    size_t boff, blen;
    sql_lexer_init(&lx, sql, len, p->lex_flags);
    for (; sql_lexer_next_sig(&lx, &t); prev = t) {
        if (!nested && sql_exec_body(&t, sql, &boff, &blen)) {
            p->after = &lx;
            if (!own_range(p, from + boff, blen, true))
                return false;
            continue;
        }
        /* a stored program's body (its `;` included), a view: evaluated where they
         * run, by whoever runs them; out is the caller's to drop */
        if (p->w.starts && stored_object(&lx, &t, sql))
            return false;
        p->w.starts = false;
        sql_token open, close, next;
        sql_lexer ahead = lx;
        if (t.kind != SQL_TOK_WORD || !own_value(&t, sql, p->own, &p->w, v, sizeof v) ||
            !sql_lexer_next_sig(&ahead, &open) || open.kind != SQL_TOK_LPAREN ||
            !sql_lexer_next_sig(&ahead, &close) || close.kind != SQL_TOK_RPAREN ||
            !native_call(&prev)) {
            walk_step(&p->w, &t, sql); /* these take no argument: else the server's error stands */
            continue;
        }
        sql_lexer after = ahead;
        bool more = sql_lexer_next_sig(&after, &next);
        const char *next_sql = sql;
        if (!more && nested) { /* at a comment body's end: what follows the comment */
            after = *p->after;
            more = sql_lexer_next_sig(&after, &next);
            next_sql = p->text;
        }
        bool item = p->w.item_open && p->w.list == p->w.depth && item_ends(&next, more, next_sql);
        mr_buf_put(p->out, p->text + p->copied, from + t.off - p->copied);
        put_value(p->out, sql, t.off, close.off + close.len, v, p->w.list >= 0, item);
        p->copied = from + close.off + close.len;
        lx = ahead;
        p->w.item_open = false;
    }
    return true;
}

bool mr_pool_own_values(const char *sql, size_t len, unsigned lex_flags, const mr_pool_own *own,
                        mr_buf *out)
{
    own_pass p = {.text = sql,
                  .lex_flags = lex_flags,
                  .own = own,
                  .w = {.list = -1, .first = true, .starts = true},
                  .out = out};
    if (!own_range(&p, 0, len, false) || !p.copied)
        return false;
    mr_buf_put(out, sql + p.copied, len - p.copied);
    return true;
}

bool mr_pool_reads_counts(const char *sql, size_t len, unsigned lex_flags)
{
    mr_pool_own own = {.row_count_known = true, .found_rows_known = true, .counts_only = true};
    mr_buf scratch;
    mr_buf_init(&scratch);
    bool reads = mr_pool_own_values(sql, len, lex_flags, &own, &scratch);
    mr_buf_free(&scratch);
    return reads;
}

bool mr_pool_own_connection_id(const char *sql, size_t len, unsigned lex_flags, uint32_t id,
                               mr_buf *out)
{
    mr_pool_own own = {.connection_id = id};
    return mr_pool_own_values(sql, len, lex_flags, &own, out);
}

/* One `[SESSION | LOCAL | @@session. | @@local. | @@]name = value`. */
static bool track_assignment(sql_lexer *lx, const char *sql, unsigned lex_flags,
                             mr_pool_track_set *out, bool *more)
{
    sql_token t, eq, v, next;
    if (!sql_lexer_next_sig(lx, &t))
        return false;
    if (word(&t, sql, "SESSION") || word(&t, sql, "LOCAL"))
        if (!sql_lexer_next_sig(lx, &t))
            return false;
    const char *name = sql + t.off;
    size_t nlen = t.len;
    if (t.kind == SQL_TOK_SYSVAR) { /* @@x, @@session.x, @@local.x */
        const char *dot = memchr(name, '.', nlen);
        if (dot &&
            (strncasecmp(name, "@@session.", 10) == 0 || strncasecmp(name, "@@local.", 8) == 0))
            nlen -= (size_t)(dot + 1 - name), name = dot + 1;
        else if (!dot)
            nlen -= 2, name += 2;
        else
            return false; /* @@global.: not the session's */
    } else if (t.kind != SQL_TOK_WORD) {
        return false;
    }
    if (nlen >= sizeof out->name || !sql_lexer_next_sig(lx, &eq) || eq.kind != SQL_TOK_OP ||
        (eq.id != SQL_OP_EQ && eq.id != SQL_OP_ASSIGN) || !sql_lexer_next_sig(lx, &v))
        return false;
    memcpy(out->name, name, nlen);
    out->name[nlen] = '\0';
    if (v.kind == SQL_TOK_STRING && !(v.flags & SQL_TF_INTRODUCER) && v.len < sizeof out->value) {
        size_t n = sql_tok_string(&v, sql, lex_flags, out->value);
        out->value[n] = '\0';
    } else if ((v.kind == SQL_TOK_WORD && !word(&v, sql, "DEFAULT")) || v.kind == SQL_TOK_NUMBER) {
        if (v.len >= sizeof out->value)
            return false;
        memcpy(out->value, sql + v.off, v.len);
        out->value[v.len] = '\0';
    } else {
        return false;
    }
    *more = sql_lexer_next_sig(lx, &next);
    return !*more || next.kind == SQL_TOK_COMMA || next.kind == SQL_TOK_SEMI;
}

int mr_pool_track_sets(const char *sql, size_t len, unsigned lex_flags, mr_pool_track_set *out,
                       int max)
{
    sql_lexer lx;
    sql_token t;
    sql_lexer_init(&lx, sql, len, lex_flags);
    if (!sql_lexer_next_sig(&lx, &t) || !word(&t, sql, "SET"))
        return -1;
    int n = 0;
    bool more = true;
    mr_pool_track_set one;
    while (more) {
        if (!track_assignment(&lx, sql, lex_flags, &one, &more))
            return -1;
        if (strncasecmp(one.name, "session_track_", 14) != 0)
            continue;
        if (n == max)
            return -1;
        out[n++] = one;
    }
    return n;
}
