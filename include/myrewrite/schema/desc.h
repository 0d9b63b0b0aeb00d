/*
 * schema/desc.h - one table as information_schema describes it (columns
 * with nullability, primary key, unique and secondary indexes, engine), and
 * the key a rewrite may use to name one row: the primary key, else the
 * shortest unique key whose columns are all NOT NULL.
 *
 * Pure, any thread. A description is built row by row from query results
 * (schema/cache.c feeds it on its own thread) and is immutable once built;
 * the row-key summary is a fixed-size value that can be copied out.
 */
#ifndef MYREWRITE_SCHEMA_DESC_H
#define MYREWRITE_SCHEMA_DESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/schema/range.h"
#include "myrewrite/sql/stmt.h"

#define MR_SD_NAME 65         /* 64 characters of a MySQL name + NUL */
#define MR_SD_MAX_KEY_COLS 16 /* MySQL's limit of columns per index */

typedef struct mr_sd_column {
    char name[MR_SD_NAME];
    bool nullable;
    mr_col_range range; /* kind MR_RANGE_NONE unless an integer or DECIMAL type */
} mr_sd_column;

typedef struct mr_sd_index {
    char name[MR_SD_NAME];
    bool primary;
    bool unique;
    uint8_t ncols;
    uint16_t cols[MR_SD_MAX_KEY_COLS]; /* positions in the table's columns */
} mr_sd_index;

/* A table as read; owns its arrays. */
typedef struct mr_table_desc {
    char schema[MR_SD_NAME];
    char table[MR_SD_NAME];
    char engine[MR_SD_NAME]; /* "" for a view */
    bool exists;             /* false: information_schema has no such table */
    mr_sd_column *cols;
    size_t ncols;
    mr_sd_index *idx;
    size_t nidx;
} mr_table_desc;

/* What a lookup knows about a table's row key. */
typedef enum mr_key_status {
    MR_KEY_UNKNOWN, /* not loaded (yet): the caller must not guess */
    MR_KEY_FOUND,   /* cols[] name one row */
    MR_KEY_NONE,    /* loaded, and no usable key (or no such table): why says which */
} mr_key_status;

/* The row key of a table: a plain value, copied out of the cache. */
typedef struct mr_row_key {
    mr_key_status status;
    bool primary;       /* FOUND: the primary key (else a unique NOT NULL key) */
    bool transactional; /* the engine is InnoDB */
    uint8_t ncols;
    char cols[MR_SD_MAX_KEY_COLS][MR_SD_NAME];
    char engine[MR_SD_NAME];
    char why[384]; /* UNKNOWN / NONE: a reason for logs and --explain */
    bool pending;  /* asking again soon may answer otherwise: a load is queued,
                      DDL is in flight, or the table does not exist (yet) */
} mr_row_key;

/* Where rules find a table's row key and a column's range without blocking
 * (the schema cache on workers; a fake in unit tests). `schema`, `table`
 * and `column` are NUL-terminated names as written (unquoted). row_key
 * fills *out and returns its status; a miss may ask for the table to be
 * loaded and returns MR_KEY_UNKNOWN at once. column_range (NULL: never
 * known) fills *out when it returns MR_RANGE_KNOWN; a miss is the same as
 * row_key's and returns MR_RANGE_UNKNOWN. */
typedef struct mr_schema_source {
    mr_key_status (*row_key)(void *arg, const char *schema, const char *table, mr_row_key *out);
    void *arg;
    mr_range_status (*column_range)(void *arg, const char *schema, const char *table,
                                    const char *column, mr_col_range *out);
} mr_schema_source;

/* A new, empty description (exists = false until an engine row is set);
 * NULL when out of memory or a name is longer than 64 bytes. */
mr_table_desc *mr_td_new(const char *schema, const char *table);
void mr_td_free(mr_table_desc *td);
/* information_schema.TABLES.ENGINE (NULL for a view): marks the table as existing. */
void mr_td_set_engine(mr_table_desc *td, const char *engine);
/* One row of information_schema.COLUMNS, in ORDINAL_POSITION order:
 * is_nullable is "YES" or "NO". False when out of memory or malformed. */
bool mr_td_add_column(mr_table_desc *td, const char *name, const char *is_nullable);
/* The DATA_TYPE and COLUMN_TYPE of the column added last (either may be
 * NULL): its range when it is an integer or DECIMAL type (schema/range.h). */
void mr_td_set_column_type(mr_table_desc *td, const char *data_type, const char *column_type);
/* The range of a column of a loaded description: KNOWN, UNKNOWN for a type
 * without one, NO_COLUMN when the table lacks it or does not exist. */
mr_range_status mr_td_column_range(const mr_table_desc *td, const char *column, mr_col_range *out);
/* One row of information_schema.STATISTICS, in (INDEX_NAME, SEQ_IN_INDEX)
 * order: non_unique "0" or "1"; the column must have been added. False when
 * out of memory, malformed, or the column is unknown. */
bool mr_td_add_index_column(mr_table_desc *td, const char *index, const char *non_unique,
                            const char *column);
/* Position of a column (case-insensitive, as mysqld compares them), or -1. */
int mr_td_column(const mr_table_desc *td, const char *name);
/* Is every column of index i NOT NULL? */
bool mr_td_index_not_null(const mr_table_desc *td, size_t i);
/* The row key: the primary key, else the unique NOT NULL key with the
 * fewest columns (first by name on ties); MR_KEY_NONE with a reason when
 * there is none or the table does not exist. */
void mr_td_row_key(const mr_table_desc *td, mr_row_key *out);
/* Engines whose updates a transaction covers (InnoDB): the DELAYED flusher
 * applies and deletes in one transaction only there. */
bool mr_engine_transactional(const char *engine);

/* Tables a DDL statement changes, for the schema cache: up to `max` names
 * (schema or "" when unqualified, table) from the recognizer's table list,
 * or from `ON tbl` of CREATE/DROP INDEX. Returns the count, or -1 when the
 * statement is DDL that names no table the proxy can read (DROP DATABASE,
 * ALTER ... with executable comments): the whole cache should go. 0 when
 * it is not DDL. Tokens are text's (sql_lex), st its recognized form. */
typedef struct mr_ddl_table {
    char schema[MR_SD_NAME];
    char table[MR_SD_NAME];
} mr_ddl_table;
int mr_ddl_tables(const char *text, const sql_token *tok, size_t ntok, const sql_stmt *st,
                  mr_ddl_table *out, int max);

#endif
