/*
 * delayed/staging_sql.h - UPDATE DELAYED / DELETE DELAYED to the staging INSERT of a
 * `delayed` rule (rules/README.md, "delayed").
 *
 * Accepted (keywords any case, names bare or `quoted`, comments anywhere):
 *   UPDATE DELAYED [LOW_PRIORITY] [schema.]tbl
 *       SET col = col + N [, col2 = col2 - N | col3 = literal ...]
 *       WHERE key = literal [AND key2 = literal ...]
 *   DELETE DELAYED [LOW_PRIORITY] FROM [schema.]tbl WHERE <same WHERE>
 * where N is a whole number or `?`, a literal is a string, a number (with
 * an optional leading -), a hex or bit literal or `?`, and at most one key
 * may be written `key IN (literal, ...)`: one staging row per element.
 * The WHERE must name every key column of the rule, each once.
 *
 * The result is `INSERT INTO `schema`.`staging` (cols..., `op`) VALUES
 * (...), ...` with every literal copied byte for byte from the statement
 * (never unquoted or re-quoted), columns in the order they were written so
 * a prepared statement keeps its parameters in order. op is 0 for an add,
 * 1 for a delete.
 *
 * Pure, any thread. Owns nothing; writes the caller's buffer and message.
 */
#ifndef MYREWRITE_DELAYED_SQL_H
#define MYREWRITE_DELAYED_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/delayed/rule.h"
#include "myrewrite/delayed/stage.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/sql/stmt.h"

#define MR_DELAYED_MAX_TERMS 16   /* SET assignments, WHERE terms */
#define MR_DELAYED_MAX_ROWS 10000 /* staging rows one statement may produce */

/* ERR packet of a refused DELAYED statement. */
#define MR_DELAYED_ERR_CODE 1235 /* ER_NOT_SUPPORTED_YET */
#define MR_DELAYED_SQLSTATE "42000"

/* col = col + N: the column token and the number (NUMBER or `?`); or,
 * with is_set, col = literal: `num` is the literal's first token (a `-`
 * before a number included). */
typedef struct mr_delayed_set {
    uint32_t col;
    uint32_t num;
    bool minus;
    bool is_set;
} mr_delayed_set;

/* key = literal, or key IN (...): literal tokens are in [first, end). */
typedef struct mr_delayed_key {
    uint32_t col;
    uint32_t first;
    uint32_t end;
    uint32_t count; /* literals in the range */
} mr_delayed_key;

/* One DELAYED statement as read; token indexes into the caller's array. */
typedef struct mr_delayed_stmt {
    bool is_delete;
    uint32_t schema; /* SQL_NONE when unqualified */
    uint32_t table;
    mr_delayed_set set[MR_DELAYED_MAX_TERMS];
    unsigned nset;
    mr_delayed_key key[MR_DELAYED_MAX_TERMS];
    unsigned nkey;
    int in_term; /* index in key[] of the IN list, -1 if none */
} mr_delayed_stmt;

/* The text every refusal ends with: what is supported. */
extern const char mr_delayed_grammar[];

/* True when st is an UPDATE or DELETE with the DELAYED modifier. */
bool mr_delayed_is_delayed(const sql_stmt *st);

/* Reads a DELAYED statement (tokens of `text`, st from sql_stmt_parse).
 * False with a message in err (ending with mr_delayed_grammar) when it is
 * outside the grammar. */
bool mr_delayed_parse(const char *text, const sql_token *tok, const sql_stmt *st,
                      mr_delayed_stmt *out, char *err, size_t errlen);

/* Does the statement's table name this rule's table? An unqualified name
 * is in `default_schema` (NULL: unknown, never matches). */
bool mr_delayed_table_is(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                         const char *default_schema, const mr_delayed_def *def);

/* The message of a refusal: the reason, then what is supported. */
bool mr_delayed_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Checks the statement against the rule: SET columns are the rule's
 * (counter columns for `col = col + N`, set_columns for `col = literal`),
 * each once, and the WHERE gives every key column once. col[i] is the
 * index of set[i]'s column in the rule's counters, or ncolumns + its index
 * in set_columns; key[i] the index of key[i] in the rule's keys. */
bool mr_delayed_check(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                      const mr_delayed_def *def, int *col, int *key, char *err, size_t errlen);

/* True when token i starts a literal (a `-` before a number included);
 * *next is past it. */
bool mr_delayed_literal_at(const sql_token *tok, uint32_t i, uint32_t end, uint32_t *next);

/* FLUSH DELAYED's argument (`table` or `schema.table`; empty: every
 * table) against a rule's table; schema may be NULL (matches only the
 * unqualified form). */
bool mr_delayed_filter_matches(const char *filter, const mr_delayed_def *def);

/* "no delayed rule for table X; ..." into err. */
void mr_delayed_no_rule(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                        const char *default_schema, char *err, size_t errlen);

/* The statement as a plain UPDATE/DELETE: text with its DELAYED word (and
 * the blanks after it) left out, every other byte as written, appended to
 * out. For a table whose default-rule derivation is pending: the server
 * applies the change at once. False when st has no DELAYED modifier. */
bool mr_delayed_strip(const char *text, size_t len, const sql_token *tok, const sql_stmt *st,
                      mr_buf *out);

/* The statement's table as names: its schema (default_schema when
 * unqualified; false when that is NULL) and table, each 65 bytes. */
bool mr_delayed_names(const char *text, const sql_token *tok, const mr_delayed_stmt *d,
                      const char *default_schema, char *schema, char *table);

/* Appends the staging INSERT to out and, unless rows is NULL, its rows as
 * data (delayed/stage.h; offsets from where the INSERT begins in out) to
 * rows, emptied first. False with a message in err when the statement does
 * not fit the rule (unknown column, missing key, a `col = literal`, which
 * only mode = memory takes so far...) or, in a prepared statement, when a
 * `?` would be repeated or moved. */
bool mr_delayed_build(const char *text, const sql_token *tok, size_t ntok, const mr_delayed_stmt *d,
                      const mr_delayed_def *def, bool prepared, mr_buf *out, mr_dstage_rows *rows,
                      char *err, size_t errlen);

#endif
