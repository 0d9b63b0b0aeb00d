/* SPDX-License-Identifier: Apache-2.0 */
/* sql/lexer.h - MySQL/MariaDB SQL tokenizer and statement splitter.
 * Thread: pure, any thread. Owns nothing: every token is an (offset,
 * length) view into the caller's text, which is never copied or changed.
 * Byte-oriented by default: an ASCII-compatible connection charset in which
 * bytes >= 0x80 never encode ASCII (utf8mb4, utf8mb3, latin1, binary). In
 * big5, cp932, gbk, gb18030 and sjis a multibyte character can end in 0x5c
 * ('\') or 0x60 ('`'): a SQL_LEX_MB_* flag makes the lexer read those
 * characters whole, as the server does in that client character set.
 * Rewrites stay off in those sessions all the same (sql/charset_guard.h). */
#ifndef MYREWRITE_SQL_LEXER_H
#define MYREWRITE_SQL_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Three outcomes shared by the SQL front end. */
typedef enum sql_rc {
    SQL_ERR = -1,   /* malformed input (the error is reported in the output) */
    SQL_OK = 0,     /* complete */
    SQL_PARTIAL = 1 /* output space ran out; what was produced is valid */
} sql_rc;

/* Lexer flags: the mode a text is read in. The sql_mode bits that change
 * tokenization, the client character set's multibyte rule, and a choice of
 * the caller's. */
enum {
    SQL_LEX_NO_BACKSLASH_ESCAPES = 1u << 0, /* '\' is an ordinary byte in strings */
    SQL_LEX_ANSI_QUOTES = 1u << 1,          /* "x" is an identifier, not a string */
    SQL_LEX_SKIP_COMMENTS = 1u << 2,        /* drop plain comments (hints, executable kept) */
    /* At most one multibyte rule (the field SQL_LEX_MB_MASK): which lead
     * bytes start a character whose second byte may be ASCII. */
    SQL_LEX_MB_BIG5 = 1u << 4,
    SQL_LEX_MB_SJIS = 2u << 4, /* sjis and cp932 */
    SQL_LEX_MB_GBK = 3u << 4,
    SQL_LEX_MB_GB18030 = 4u << 4,
    SQL_LEX_MB_MASK = 7u << 4,
    SQL_LEX_MB_COUNT = 4 /* the rules above, 1..4 in the field */
};

/* The multibyte rule of a client character set's name (any case): one of
 * SQL_LEX_MB_*, or 0 for a character set whose bytes >= 0x80 never encode
 * ASCII (and for NULL). */
unsigned sql_lex_mb_of(const char *charset, size_t n);

/* The length of the multibyte character at s[p] (of n bytes) under the
 * multibyte rule in lex_flags, or 0 when s[p] starts none (no rule, an
 * ASCII byte, or a lead byte without a valid trail byte). */
size_t sql_lex_mb_len(unsigned lex_flags, const char *s, size_t n, size_t p);

typedef enum sql_tok_kind {
    SQL_TOK_WORD = 1, /* keyword or bare identifier; id = sql_kw (0 = not a keyword) */
    SQL_TOK_QIDENT,   /* `quoted` identifier, or "quoted" under ANSI_QUOTES */
    SQL_TOK_STRING,   /* 'x' "x" N'x' _utf8mb4'x' (flags tell which) */
    SQL_TOK_HEX,      /* X'4A' x'4a' 0x4a, possibly with an introducer */
    SQL_TOK_BIT,      /* b'01' B'01' 0b01, possibly with an introducer */
    SQL_TOK_NUMBER,   /* 12 1.5 .5 1e10 1.5E-3 (sign is a separate OP) */
    SQL_TOK_PARAM,    /* ? */
    SQL_TOK_VAR,      /* @name @'name' @`name` */
    SQL_TOK_SYSVAR,   /* @@name @@global.name */
    SQL_TOK_OP,       /* operator; id = sql_op */
    SQL_TOK_LPAREN,
    SQL_TOK_RPAREN,
    SQL_TOK_COMMA,
    SQL_TOK_SEMI,
    SQL_TOK_DOT,
    SQL_TOK_COMMENT,      /* -- x, # x, / * x * /; flag SQL_TF_HINT for / *+ * / */
    SQL_TOK_EXEC_COMMENT, /* / *! ... * /, / *!50100 ... * /, / *M! ... * / kept whole */
    SQL_TOK_ERROR         /* id = sql_lex_err; the statement must pass through untouched */
} sql_tok_kind;

/* Token flags. */
enum {
    SQL_TF_INTRODUCER = 1u << 0, /* literal starts with _charset or N */
    SQL_TF_DQUOTE = 1u << 1,     /* STRING/QIDENT delimited by '"' */
    SQL_TF_HINT = 1u << 2,       /* COMMENT is an optimizer hint / *+ ... * / */
    SQL_TF_ESCAPED = 1u << 3     /* quoted token contains an escape or doubled quote */
};

typedef enum sql_lex_err {
    SQL_LEXERR_NONE = 0,
    SQL_LEXERR_UNTERMINATED_STRING,
    SQL_LEXERR_UNTERMINATED_IDENT,
    SQL_LEXERR_UNTERMINATED_COMMENT,
    SQL_LEXERR_BAD_LITERAL, /* X'zz', odd hex digit count, b'2' */
    SQL_LEXERR_STRAY_BYTE   /* NUL, control byte or '\' outside quotes */
} sql_lex_err;

typedef enum sql_op {
    SQL_OP_NONE = 0,
    SQL_OP_EQ,     /* =   */
    SQL_OP_NSEQ,   /* <=> */
    SQL_OP_LT,     /* <   */
    SQL_OP_LE,     /* <=  */
    SQL_OP_GT,     /* >   */
    SQL_OP_GE,     /* >=  */
    SQL_OP_NE,     /* <>  */
    SQL_OP_NE2,    /* !=  */
    SQL_OP_ASSIGN, /* :=  */
    SQL_OP_OROR,   /* ||  */
    SQL_OP_ANDAND, /* &&  */
    SQL_OP_SHL,    /* <<  */
    SQL_OP_SHR,    /* >>  */
    SQL_OP_ARROW,  /* ->  */
    SQL_OP_ARROW2, /* ->> */
    SQL_OP_PLUS,
    SQL_OP_MINUS,
    SQL_OP_STAR,
    SQL_OP_SLASH,
    SQL_OP_PERCENT,
    SQL_OP_CARET,
    SQL_OP_AMP,
    SQL_OP_PIPE,
    SQL_OP_TILDE,
    SQL_OP_BANG,
    SQL_OP_COLON,
    SQL_OP_AT,
    SQL_OP_LBRACE,
    SQL_OP_RBRACE
} sql_op;

/* Keyword flags (sql_kw_flags). */
enum {
    SQL_KWF_RESERVED = 1u << 0, /* cannot be a bare identifier or alias */
    SQL_KWF_FUNC = 1u << 1,     /* usually a function name: digest writes NAME( */
    SQL_KWF_OPERAND = 1u << 2,  /* ends an operand (NULL, TRUE, END): next '-' is binary */
    SQL_KWF_LITERAL = 1u << 3   /* TRUE/FALSE: digested as '?' */
};

/* Every keyword the front end distinguishes: X(name, flags). Words outside
 * this list are identifiers (id 0), whatever MySQL thinks of them. */
/* The table is kept as written, a line per letter: clang-format would not. */
// clang-format off
#define SQL_KEYWORDS(X) \
    X(ALL, R) X(ALTER, R) X(ANALYZE, R) X(AND, R) X(AS, R) X(ASC, R) X(ATOMIC, 0) \
    X(AVG, F) \
    X(BEGIN, 0) X(BETWEEN, R) X(BINARY, R) X(BY, R) \
    X(CALL, R) X(CASE, R) X(CAST, F) X(CHAIN, 0) X(CHECK, R) X(COLLATE, R) \
    X(COMMIT, 0) X(CONVERT, R | F) X(COUNT, F) X(CREATE, R) X(CROSS, R) \
    X(DATABASE, R) X(DEALLOCATE, 0) X(DEFAULT, R) X(DELAYED, R) X(DELETE, R) \
    X(DESC, R) X(DESCRIBE, R) X(DISTINCT, R) X(DISTINCTROW, R) X(DIV, R) \
    X(DO, 0) X(DROP, R) X(DUAL, R) X(DUPLICATE, 0) \
    X(ELSE, R) X(END, O) X(ESCAPE, 0) X(EXCEPT, R) X(EXECUTE, 0) X(EXISTS, R) \
    X(EXPLAIN, R) \
    X(FALSE, R | O | L) X(FOR, R) X(FORCE, R) X(FROM, R) X(FUNCTION, 0) \
    X(GLOBAL, 0) X(GRANT, R) X(GROUP, R) \
    X(HANDLER, 0) X(HAVING, R) X(HIGH_PRIORITY, R) \
    X(IF, R | F) X(IGNORE, R) X(IN, R) X(INDEX, R) X(INNER, R) X(INSERT, R) \
    X(INTERSECT, R) X(INTERVAL, R) X(INTO, R) X(IS, R) \
    X(JOIN, R) \
    X(KEY, R) X(KILL, 0) \
    X(LATERAL, R) X(LEFT, R | F) X(LIKE, R) X(LIMIT, R) X(LOAD, R) X(LOCAL, 0) \
    X(LOCK, R) X(LOCKED, 0) X(LOW_PRIORITY, R) \
    X(MAX, F) X(MIN, F) X(MOD, R | F) X(MODE, 0) \
    X(NATURAL, R) X(NO, 0) X(NOT, R) X(NOWAIT, 0) X(NULL, R | O) \
    X(OF, R) X(OFFSET, 0) X(ON, R) X(OPTIMIZE, R) X(OR, R) X(ORDER, R) \
    X(OUTER, R) X(OVER, R) \
    X(PARTITION, R) X(PREPARE, 0) X(PROCEDURE, R) \
    X(QUICK, 0) \
    X(RECURSIVE, R) X(REGEXP, R) X(RELEASE, R) X(RENAME, R) X(REPLACE, R) \
    X(REVOKE, R) X(RIGHT, R | F) X(RLIKE, R) X(ROLLBACK, 0) X(ROLLUP, 0) \
    X(ROW, R) X(ROWS, R) \
    X(SAVEPOINT, 0) X(SCHEMA, R) X(SELECT, R) X(SESSION, 0) X(SET, R) \
    X(SHARE, 0) X(SHOW, R) X(SKIP, 0) X(SQL_BIG_RESULT, R) \
    X(SQL_BUFFER_RESULT, 0) X(SQL_CACHE, 0) X(SQL_CALC_FOUND_ROWS, R) \
    X(SQL_NO_CACHE, 0) X(SQL_SMALL_RESULT, R) X(START, 0) X(STRAIGHT_JOIN, R) \
    X(SUM, F) \
    X(TABLE, R) X(TABLES, 0) X(TEMPORARY, 0) X(THEN, R) X(TO, R) \
    X(TRANSACTION, 0) X(TRIGGER, R) X(TRUE, R | O | L) X(TRUNCATE, 0) \
    X(UNION, R) X(UNLOCK, R) X(UPDATE, R) X(USE, R) X(USING, R) \
    X(VALUE, 0) X(VALUES, R) X(VIEW, 0) \
    X(WHEN, R) X(WHERE, R) X(WINDOW, R) X(WITH, R) X(WORK, 0) \
    X(XA, 0) X(XOR, R)
// clang-format on

#define SQL_KW_ENUM_(name, fl) SQL_KW_##name,
typedef enum sql_kw { SQL_KW_NONE = 0, SQL_KEYWORDS(SQL_KW_ENUM_) SQL_KW__COUNT } sql_kw;
#undef SQL_KW_ENUM_

#define SQL_KW_MAXLEN 19 /* strlen("SQL_CALC_FOUND_ROWS") */

typedef struct sql_token {
    uint32_t off;  /* byte offset into the text */
    uint32_t len;  /* byte length */
    uint8_t kind;  /* sql_tok_kind */
    uint8_t flags; /* SQL_TF_* */
    uint16_t id;   /* sql_kw for WORD, sql_op for OP, sql_lex_err for ERROR */
} sql_token;

/* Iterator state; copy it freely to look ahead. Fields are private. */
typedef struct sql_lexer {
    const unsigned char *s;
    size_t n;
    size_t pos;
    unsigned flags;
    uint8_t prev;    /* kind of the previous non-comment token, 0 at start */
    uint8_t in_exec; /* lexing the body of an executable comment */
} sql_lexer;

void sql_lexer_init(sql_lexer *lx, const char *s, size_t n, unsigned flags);

/* Next token into *t; false at end of text. Never fails: malformed input
 * yields an SQL_TOK_ERROR token (an unterminated one runs to the end). */
bool sql_lexer_next(sql_lexer *lx, sql_token *t);

/* The next token that is not a comment; false at the end. */
bool sql_lexer_next_sig(sql_lexer *lx, sql_token *t);

/* A literal the digest turns into `?`: string, number, hex, bit or `?`. */
bool sql_tok_is_literal(unsigned kind);

/* After a token of this kind and id (0, 0 at the start), is an operand
 * expected? Then a '-' or '+' is a sign, not a binary operator. */
bool sql_operand_expected(unsigned prev_kind, unsigned prev_id);

/* Bulk form. SQL_OK: all tokens stored. SQL_PARTIAL: out[] filled to max and
 * text remains. SQL_ERR: stopped at an error token, which is out[*count-1]. */
sql_rc sql_lex(const char *s, size_t n, unsigned flags, sql_token *out, size_t max, size_t *count);

/* Keyword lookup for a bare word (case-insensitive); SQL_KW_NONE if none. */
sql_kw sql_kw_lookup(const char *s, size_t n);
const char *sql_kw_name(sql_kw kw); /* upper case; "" for SQL_KW_NONE */
unsigned sql_kw_flags(sql_kw kw);

/* Body of an EXEC_COMMENT token: the text after "/ *!50100" or "/ *M!" and
 * before the closing "* /". Returns false for any other token. */
bool sql_exec_body(const sql_token *t, const char *s, size_t *off, size_t *len);

/* True when t is the bare word w (ASCII, any case): the one way the front
 * end compares a token with a keyword the lexer has no id for. */
bool sql_tok_is_word(const sql_token *t, const char *text, const char *w);

/* True for tokens with no syntactic weight (plain comments and hints). */
static inline bool sql_tok_is_comment(const sql_token *t) { return t->kind == SQL_TOK_COMMENT; }

typedef struct sql_span {
    uint32_t off;
    uint32_t len;
} sql_span;

/* Split into top-level statements at ';' outside quotes, comments and
 * BEGIN...END bodies of CREATE PROCEDURE/FUNCTION/TRIGGER/EVENT (and
 * MariaDB BEGIN NOT ATOMIC). Spans run from the first token to the end of
 * the last token before ';'; spans holding only comments are skipped.
 * SQL_PARTIAL: max spans stored and more remain. SQL_ERR: lexing error; the
 * last span runs to the end of the text and must be passed through. */
sql_rc sql_split(const char *s, size_t n, unsigned flags, sql_span *out, size_t max, size_t *count);

/* The first statement of s[0..n) as sql_split finds it, in *span (len 0
 * when only blanks, comments and ';' remain), and in *next where the text
 * after its ';' starts (n when nothing follows). SQL_ERR: the statement
 * runs into a lexing error (a string left open...), so the server stops
 * there with a syntax error; *span then ends at the error. */
sql_rc sql_split_first(const char *s, size_t n, unsigned flags, sql_span *span, size_t *next);

/* The length of a COM_QUERY / COM_STMT_PREPARE text as MariaDB reads it.
 * The server drops trailing blanks and ';' from the packet, and then one
 * NUL byte at the very end is its end of input (`SELECT 1\0` runs, while
 * `SELECT 1\0\0` and `SELECT 1\0 x` are syntax errors). So when the text
 * ends in a NUL followed by nothing but blanks and ';', the length before
 * that NUL; otherwise n. Blanks are the server's: space, \t \n \v \f \r,
 * and 0xA0, a space in latin1 (elsewhere the server refuses it there, so
 * dropping it too only lets the proxy read a text the server rejects). */
size_t sql_server_len(const char *s, size_t n);

/* What went wrong, in words ("unterminated string"), for an ERROR token's id. */
const char *sql_lex_err_name(unsigned id);

#endif
