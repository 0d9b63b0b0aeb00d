/* SPDX-License-Identifier: Apache-2.0 */
/* sql/stmt.h - shallow statement recognizer over sql_lexer tokens: kind,
 * modifiers, target tables and clause positions, so later code can splice
 * whole tokens (remove DELAYED, add or change a LIMIT, ...).
 * Thread: pure, any thread. Owns nothing; fills a caller-provided struct.
 *
 * All positions are token indexes into the array given to sql_stmt_parse
 * (comments may be present; they are skipped, never part of a range's
 * ends). Ranges are half-open [first, end). Clauses are found only at the
 * statement's own parenthesis depth, so a WHERE/LIMIT inside a subquery is
 * never taken for the outer one. Anything not understood sets
 * SQL_SF_UNSUPPORTED: callers must then not rewrite the statement. */
#ifndef MYREWRITE_SQL_STMT_H
#define MYREWRITE_SQL_STMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/sql/lexer.h"

#define SQL_NONE UINT32_MAX /* absent token index */
#define SQL_STMT_MAX_TABLES 8
#define SQL_STMT_MAX_ASSIGN 32
#define SQL_STMT_MAX_ORDER 16

typedef enum sql_stmt_kind {
    SQL_STMT_UNKNOWN = 0, /* empty, or lexing failed: pass through */
    SQL_STMT_SELECT,
    SQL_STMT_INSERT,
    SQL_STMT_UPDATE,
    SQL_STMT_DELETE,
    SQL_STMT_REPLACE,
    SQL_STMT_CALL,
    SQL_STMT_SET,
    SQL_STMT_BEGIN, /* BEGIN [WORK], START TRANSACTION ... */
    SQL_STMT_COMMIT,
    SQL_STMT_ROLLBACK, /* not ROLLBACK TO SAVEPOINT, which is OTHER */
    SQL_STMT_DDL,      /* CREATE ALTER DROP TRUNCATE RENAME */
    SQL_STMT_SHOW,
    SQL_STMT_USE,
    SQL_STMT_OTHER
} sql_stmt_kind;

/* Statement flags (sql_stmt.flags). */
enum {
    SQL_SF_JOIN = 1u << 0,     /* JOIN keyword or comma join */
    SQL_SF_SUBQUERY = 1u << 1, /* (SELECT ...) anywhere except a derived table */
    SQL_SF_UNION = 1u << 2,    /* top-level UNION/EXCEPT/INTERSECT: fields
                                  describe the first query block only */
    SQL_SF_DERIVED = 1u << 3,  /* derived table or LATERAL in FROM */
    SQL_SF_GROUP_BY = 1u << 4,
    SQL_SF_HAVING = 1u << 5,
    SQL_SF_WINDOW = 1u << 6,
    SQL_SF_INTO = 1u << 7,           /* SELECT ... INTO */
    SQL_SF_MULTI_TABLE = 1u << 8,    /* more than one table reference */
    SQL_SF_WITH = 1u << 9,           /* leading WITH (CTE) clause */
    SQL_SF_HINT = 1u << 10,          /* optimizer hint comment after the verb */
    SQL_SF_EXEC_COMMENT = 1u << 11,  /* executable comment present: its body is
                                        not analysed, structure may be incomplete */
    SQL_SF_MULTI_STMT = 1u << 12,    /* tokens follow a top-level ';' */
    SQL_SF_UNSUPPORTED = 1u << 13,   /* syntax not understood; do not rewrite */
    SQL_SF_LEX_ERROR = 1u << 14,     /* an SQL_TOK_ERROR token; kind is UNKNOWN */
    SQL_SF_OVERFLOW = 1u << 15,      /* a fixed array filled; extra items dropped */
    SQL_SF_ON_DUPLICATE = 1u << 16,  /* INSERT ... ON DUPLICATE KEY UPDATE */
    SQL_SF_INSERT_SELECT = 1u << 17, /* INSERT/REPLACE ... SELECT/TABLE */
    SQL_SF_PAREN = 1u << 18          /* statement starts with '(' */
};

/* Modifiers; bit (1u << m) in sql_stmt.mods, token in sql_stmt.mod_tok[m]. */
typedef enum sql_mod {
    SQL_MOD_DELAYED,
    SQL_MOD_LOW_PRIORITY,
    SQL_MOD_HIGH_PRIORITY,
    SQL_MOD_IGNORE,
    SQL_MOD_QUICK,
    SQL_MOD_ALL,
    SQL_MOD_DISTINCT,
    SQL_MOD_DISTINCTROW,
    SQL_MOD_STRAIGHT_JOIN,
    SQL_MOD_SQL_CALC_FOUND_ROWS,
    SQL_MOD_SQL_NO_CACHE,
    SQL_MOD_SQL_CACHE,
    SQL_MOD_SQL_SMALL_RESULT,
    SQL_MOD_SQL_BIG_RESULT,
    SQL_MOD_SQL_BUFFER_RESULT,
    SQL_MOD__COUNT
} sql_mod;

typedef struct sql_range {
    uint32_t first; /* SQL_NONE when absent */
    uint32_t end;
} sql_range;

/* A clause: its introducing keyword (SQL_NONE if absent) and its body,
 * e.g. WHERE <body>; for GROUP BY / ORDER BY kw is GROUP / ORDER. */
typedef struct sql_clause {
    uint32_t kw;
    sql_range body;
} sql_clause;

typedef struct sql_table_ref {
    sql_range span;  /* whole reference: name, alias, partitions, index hints */
    uint32_t schema; /* schema token of schema.table, SQL_NONE if unqualified */
    uint32_t name;   /* table token; SQL_NONE for a derived table */
    uint32_t alias;  /* alias token or SQL_NONE */
    bool derived;    /* (subquery) or LATERAL (subquery) */
} sql_table_ref;

typedef struct sql_assign {
    sql_range column; /* [[schema.]table.]column */
    uint32_t eq;      /* the '=' token */
    sql_range expr;
} sql_assign;

typedef struct sql_order_item {
    sql_range expr;
    uint32_t dir; /* ASC/DESC token or SQL_NONE */
    bool desc;
} sql_order_item;

typedef struct sql_limit {
    uint32_t kw;     /* LIMIT token or SQL_NONE */
    uint32_t offset; /* offset token or SQL_NONE */
    uint32_t count;  /* row count token */
    bool offset_kw;  /* "LIMIT count OFFSET offset" form */
    sql_range span;  /* LIMIT through its last operand */
} sql_limit;

typedef enum sql_lock_kind {
    SQL_LOCK_NONE = 0,
    SQL_LOCK_FOR_UPDATE,
    SQL_LOCK_FOR_SHARE,
    SQL_LOCK_IN_SHARE_MODE
} sql_lock_kind;

typedef enum sql_lock_wait {
    SQL_WAIT_DEFAULT = 0,
    SQL_WAIT_NOWAIT,
    SQL_WAIT_SKIP_LOCKED,
    SQL_WAIT_SECONDS /* MariaDB FOR UPDATE WAIT n */
} sql_lock_wait;

typedef struct sql_lock {
    uint8_t kind;   /* sql_lock_kind of the first locking clause */
    uint8_t wait;   /* sql_lock_wait of the first locking clause */
    sql_range span; /* all locking clauses */
} sql_lock;

typedef struct sql_stmt {
    sql_stmt_kind kind;
    uint32_t flags;                            /* SQL_SF_* */
    uint32_t mods;                             /* bits of sql_mod */
    uint32_t mod_tok[SQL_MOD__COUNT];          /* token of each modifier or SQL_NONE */
    uint32_t verb;                             /* leading verb token (after WITH) */
    uint32_t end;                              /* index of the ending ';' or ntokens */
    uint32_t hint;                             /* optimizer hint comment token */
    sql_range with;                            /* WITH ... before the verb */
    sql_clause select_list;                    /* kw = SELECT */
    sql_clause from;                           /* SELECT/DELETE FROM list, kw = FROM;
                                                  UPDATE table list, kw = SQL_NONE */
    sql_table_ref tables[SQL_STMT_MAX_TABLES]; /* targets, then FROM/USING refs */
    uint16_t ntables;                          /* stored entries */
    uint16_t nassign;
    uint16_t norder;
    sql_clause set; /* UPDATE/INSERT SET list; kw = SET */
    sql_assign assign[SQL_STMT_MAX_ASSIGN];
    sql_clause where;
    sql_clause group_by;
    sql_clause having;
    sql_clause order_by;
    sql_order_item order[SQL_STMT_MAX_ORDER];
    sql_limit limit;
    sql_lock lock;
    sql_range columns; /* INSERT (a, b): tokens inside the parens */
    sql_clause values; /* INSERT VALUES rows; kw = VALUES/VALUE */
    sql_clause on_dup; /* kw = ON of ON DUPLICATE KEY UPDATE */
} sql_stmt;

/* Recognize the first statement in toks[0..ntok) (lexed from text). Only
 * tokens before the first top-level ';' are analysed.
 * SQL_OK: recognized (kind may be OTHER). SQL_PARTIAL: kind is known but
 * SQL_SF_UNSUPPORTED or SQL_SF_OVERFLOW is set. SQL_ERR: kind UNKNOWN
 * (empty statement or lexing error). Never reads outside toks[0..ntok). */
sql_rc sql_stmt_parse(const char *text, const sql_token *toks, size_t ntok, sql_stmt *out);

static inline bool sql_range_present(sql_range r) { return r.first != SQL_NONE; }

#endif
