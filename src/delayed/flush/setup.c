/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/setup.c - a staged rule's tables checked on the flusher's
 * connection (dflush_setup_table): the main table's engine and key, the
 * staging table created when missing or its columns checked, every name the
 * flush statements quote; a main table that is gone has its staged rows
 * drained into the dead-letter table.
 *
 * Flusher thread.
 */
#include <inttypes.h>
#include <mysql.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "delayed/flush/flush_impl.h"
#include "myrewrite/base/buf.h"
#include "myrewrite/base/log.h"
#include "myrewrite/net/bgconn.h"
#include "myrewrite/schema/cache.h"
#include "myrewrite/sql/coltype.h"
#include "myrewrite/sql/quote.h"

/* Engines a staging table may use: InnoDB for transactional tables (the
 * chunk's delete from staging commits with its apply); for the locked path
 * also the non-transactional engines that take DELETE. */
static bool staging_engine_ok(const table *t)
{
    static const char *const locked_ok[] = {"InnoDB", "MyISAM", "Aria", "MEMORY", NULL};
    for (size_t i = 0; locked_ok[i] && (t->locked || i == 0); i++)
        if (strcasecmp(t->def.staging_engine, locked_ok[i]) == 0)
            return true;
    mr_error(0, "delayed %s: staging_engine %s cannot be flushed for a%s table; use %s", t->rule,
             t->def.staging_engine, t->locked ? " non-transactional" : "n InnoDB",
             t->locked ? "InnoDB, MyISAM, Aria or MEMORY" : "InnoDB");
    return false;
}

/* InnoDB tables get the exactly-once transactional flush; MyISAM, Aria and
 * MEMORY the LOCK TABLES path (delayed/flush/flush_locked.c); others none. */
static bool check_engines(MYSQL *db, table *t)
{
    MYSQL_RES *res =
        dflush_schema_query(db, t, "SELECT ENGINE FROM information_schema.TABLES", t->def.table);
    MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
    const char *e = row && row[0] ? row[0] : "";
    static const char *const locked[] = {"MyISAM", "Aria", "MEMORY", NULL};
    bool ok = strcasecmp(e, "InnoDB") == 0;
    t->locked = false;
    t->main_gone = res && !row;
    for (size_t i = 0; !ok && locked[i]; i++)
        ok = t->locked = strcasecmp(e, locked[i]) == 0;
    if (res && !row)
        mr_error(0, "delayed %s: table %s.%s does not exist; not flushing", t->rule, t->def.schema,
                 t->def.table);
    else if (row && !ok)
        mr_error(0,
                 "delayed %s: %s.%s is %s, which the flusher cannot update (it flushes "
                 "InnoDB, MyISAM, Aria and MEMORY tables; ARCHIVE tables take no UPDATE)",
                 t->rule, t->def.schema, t->def.table, row[0] ? row[0] : "a view");
    mysql_free_result(res);
    return ok && staging_engine_ok(t);
}

/* A rule without `key`: the table's primary key, read again on every
 * (re)connect. The workers take theirs from the schema cache, which reads
 * the same information_schema rows. */
static bool key_from_schema(MYSQL *db, table *t)
{
    if (!t->key_from_schema)
        return true;
    dflush_names_free(t->def.keys, t->def.nkeys);
    t->def.keys = NULL;
    t->def.nkeys = 0;
    mr_table_desc *td = mr_schema_read(db, t->def.schema, t->def.table);
    mr_row_key rk;
    if (td)
        mr_td_row_key(td, &rk);
    mr_td_free(td);
    if (!td || rk.status != MR_KEY_FOUND || !rk.primary) {
        mr_error(0,
                 "delayed %s: the rule names no key and %s.%s has no primary key%s; not "
                 "flushing (give key in the rule)",
                 t->rule, t->def.schema, t->def.table, td ? "" : " that could be read");
        return false;
    }
    bool ok = (t->def.keys = calloc(rk.ncols, sizeof *t->def.keys)) != NULL;
    for (uint8_t k = 0; ok && k < rk.ncols; k++)
        ok = (t->def.keys[t->def.nkeys++] = strdup(rk.cols[k])) != NULL;
    return ok;
}

/* Only a type and collation the grammar of sql/coltype.h takes go into the
 * staging table's DDL: it runs as the proxy's own account. */
static bool type_copyable(const table *t, const char *name, const char *type, const char *collation)
{
    char why[120];
    if (!mr_coltype_ok(type, why, sizeof why)) {
        mr_error(0,
                 "delayed %s: the type of %s.%s.%s (%s) is not one the staging table can "
                 "copy: %s; not flushing",
                 t->rule, t->def.schema, t->def.table, name, type, why);
        return false;
    }
    if (collation && !mr_collation_ok(collation)) {
        mr_error(0,
                 "delayed %s: the collation of %s.%s.%s is not a collation name; not "
                 "flushing",
                 t->rule, t->def.schema, t->def.table, name);
        return false;
    }
    return true;
}

/* Appends the staging table's column for key `name` (NOT NULL), or for the
 * value of set column `name` (`<name>_set`, NULL allowed as a value), typed
 * as the main table's column. */
static bool typed_column(mr_buf *b, MYSQL_RES *cols, const table *t, const char *name,
                         bool set_value)
{
    mysql_data_seek(cols, 0);
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(cols)))
        if (row[0] && row[1] && strcasecmp(row[0], name) == 0) {
            if (set_value)
                dflush_put_set_ident(b, name);
            else
                mr_sql_put_ident(b, name);
            if (!type_copyable(t, name, row[1], row[2]))
                return false;
            mr_buf_put(b, " ", 1);
            mr_buf_put_str(b, row[1]);
            if (row[2]) {
                mr_buf_put_str(b, " COLLATE ");
                mr_buf_put_str(b, row[2]);
            }
            mr_buf_put_str(b, set_value ? " NULL DEFAULT NULL, " : " NOT NULL, ");
            return true;
        }
    mr_error(0, "delayed %s: %s.%s has no column %s; not flushing", t->rule, t->def.schema,
             t->def.table, name);
    return false;
}

static bool has_column(MYSQL_RES *cols, const table *t, const char *name)
{
    mysql_data_seek(cols, 0);
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(cols)))
        if (row[0] && strcasecmp(row[0], name) == 0)
            return true;
    mr_error(0, "delayed %s: %s.%s has no column %s; not flushing", t->rule, t->def.schema,
             t->def.table, name);
    return false;
}

/* t->key_weights: `, WEIGHT_STRING(k COLLATE <main's collation> AS CHAR(<its
 * length>))` per key column with a collation (`, NULL` for one without, whose
 * value is its weight). Padded to the column's length, so a PAD SPACE
 * collation weighs 'abc' and 'abc ' alike and a NO PAD one apart, as the
 * server compares them: WEIGHT_STRING(k) alone keeps the trailing space's
 * weight. The COLLATE makes a staging column of another charset fail the
 * flush's read, loudly, rather than sum keys the main table tells apart. */
static bool key_weights(table *t, MYSQL_RES *cols)
{
    mr_buf b;
    mr_buf_init(&b);
    for (size_t i = 0; i < t->def.nkeys; i++) {
        mysql_data_seek(cols, 0);
        MYSQL_ROW row;
        while ((row = mysql_fetch_row(cols)) &&
               !(row[0] && strcasecmp(row[0], t->def.keys[i]) == 0))
            ;
        if (!row || !row[2] || !row[3]) {
            mr_buf_put_str(&b, ", NULL");
            continue;
        }
        mr_buf_put_str(&b, ", WEIGHT_STRING(");
        mr_sql_put_ident(&b, t->def.keys[i]);
        dflush_put_fmt(&b, " COLLATE %s AS CHAR(%" PRIu64 "))", row[2],
                       (uint64_t)strtoull(row[3], NULL, 10));
    }
    mr_buf_put_u8(&b, 0);
    t->key_weights = b.failed ? NULL : (char *)b.data;
    if (b.failed) {
        mr_buf_free(&b);
        mr_error(0, "delayed %s: out of memory writing how its keys compare; not flushing",
                 t->rule);
    }
    return t->key_weights != NULL;
}

static bool create_staging(MYSQL *db, const table *t, MYSQL_RES *cols)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "CREATE TABLE IF NOT EXISTS ");
    dflush_put_table(&b, t->def.schema, t->def.staging_table);
    mr_buf_put_str(&b, " (`seq` BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, ");
    bool ok = true;
    for (size_t i = 0; ok && i < t->def.nkeys; i++)
        ok = typed_column(&b, cols, t, t->def.keys[i], false);
    for (size_t i = 0; ok && i < t->def.ncolumns; i++) {
        ok = has_column(cols, t, t->def.columns[i]);
        mr_sql_put_ident(&b, t->def.columns[i]);
        mr_buf_put_str(&b, " BIGINT NOT NULL DEFAULT 0, ");
    }
    for (size_t i = 0; ok && i < t->def.nset_columns; i++)
        ok = typed_column(&b, cols, t, t->def.set_columns[i], true);
    if (t->def.nset_columns) /* bit s: the row sets set_columns[s] */
        mr_buf_put_str(&b, "`set_mask` BIGINT UNSIGNED NOT NULL DEFAULT 0, ");
    mr_buf_put_str(&b, "`op` TINYINT NOT NULL DEFAULT 0, `staged_at` TIMESTAMP(6) NOT NULL "
                       "DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=");
    mr_buf_put_str(&b, t->def.staging_engine);
    ok = ok && dflush_exec(db, &b, t, "creating the staging table");
    mr_buf_free(&b);
    return ok;
}

/* An existing staging table must have the columns this rule stages into:
 * one made for another rule, or before a key change, would fail every
 * staging INSERT or flush. */
static bool staging_columns_ok(MYSQL *db, const table *t)
{
    MYSQL_RES *res = dflush_schema_query(
        db, t, "SELECT COLUMN_NAME FROM information_schema.COLUMNS", t->def.staging_table);
    if (!res)
        return false;
    char missing[300] = "", set_name[80];
    size_t nk = t->def.nkeys, nc = t->def.ncolumns, ns = t->def.nset_columns;
    size_t total = 3 + nk + nc + ns + (ns ? 1 : 0);
    for (size_t i = 0; i < total; i++) {
        const char *want = i == 0                  ? "seq"
                           : i == 1                ? "op"
                           : i == 2                ? "staged_at"
                           : i < 3 + nk            ? t->def.keys[i - 3]
                           : i < 3 + nk + nc       ? t->def.columns[i - 3 - nk]
                           : i == 3 + nk + nc + ns ? "set_mask"
                                                   : set_name;
        if (want == set_name)
            snprintf(set_name, sizeof set_name, "%s_set", t->def.set_columns[i - 3 - nk - nc]);
        bool found = false;
        MYSQL_ROW row;
        mysql_data_seek(res, 0);
        while (!found && (row = mysql_fetch_row(res)))
            found = row[0] && strcasecmp(row[0], want) == 0;
        if (!found && strlen(missing) + strlen(want) + 3 < sizeof missing)
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s",
                     missing[0] ? ", " : "", want);
    }
    mysql_free_result(res);
    if (!missing[0])
        return true;
    mr_error(0,
             "delayed %s: the staging table %s.%s exists without the column(s) %s that this "
             "rule stages into; not flushing it (drop or rename it once it is empty, or set "
             "staging_table)",
             t->rule, t->def.schema, t->def.staging_table, missing);
    dflush_count_error(t, "the staging table check", 0, "the staging table lacks columns");
    return false;
}

static bool name_ok(const table *t, const char *what, const char *name, const char *suffix)
{
    char whole[4 * MR_SQL_IDENT_MAX + 8], why[80];
    int n = snprintf(whole, sizeof whole, "%s%s", name, suffix);
    if (n > 0 && (size_t)n < sizeof whole && mr_sql_ident_ok(whole, (size_t)n, why, sizeof why))
        return true;
    mr_error(0, "delayed %s: the %s %.80s%s is %s; not flushing", t->rule, what, name, suffix,
             n > 0 && (size_t)n < sizeof whole ? why : "a name over 64 characters");
    return false;
}

/* Every name the staging and flush statements quote: refused here with a
 * reason rather than left to make a statement fail to build. */
static bool names_ok(const table *t)
{
    bool ok = name_ok(t, "schema", t->def.schema, "") && name_ok(t, "table", t->def.table, "") &&
              name_ok(t, "staging table", t->def.staging_table, "");
    for (size_t i = 0; ok && i < t->def.nkeys; i++)
        ok = name_ok(t, "key column", t->def.keys[i], "");
    for (size_t i = 0; ok && i < t->def.ncolumns; i++)
        ok = name_ok(t, "column", t->def.columns[i], "");
    for (size_t i = 0; ok && i < t->def.nset_columns; i++)
        ok = name_ok(t, "staging column of", t->def.set_columns[i], "_set");
    return ok;
}

/* The main table does not exist, so what is staged for it can never be
 * applied: rather than stay staged for good, each key goes to the
 * dead-letter table (logged one by one, and FLUSH DELAYED names them), in
 * the chunk's transaction with the DELETE from staging. */
static void drain_gone(MYSQL *db, table *t)
{
    if (!t->def.nkeys || dflush_table_exists(db, t, t->def.staging_table) != 1)
        return; /* keys never read (no key in the rule), or nothing staged */
    if (!dflush_named_lock(db, t, "GET_LOCK"))
        return; /* another proxy flushes it now */
    uint64_t moved = 0;
    long n;
    do
        if ((n = dflush_chunk_isolating(db, t)) > 0)
            moved += (uint64_t)n;
    while (n >= (long)t->def.flush_rows);
    if (!mr_bg_conn_broken(db))
        (void)dflush_named_lock(db, t, "RELEASE_LOCK");
    if (moved)
        mr_error(0,
                 "delayed %s: table %s.%s does not exist, so its %" PRIu64 " staged row(s) "
                 "went to %s.%.47s_delayed_rejected (error 1146) instead of waiting in %s.%s",
                 t->rule, t->def.schema, t->def.table, moved, t->def.schema, t->def.table,
                 t->def.schema, t->def.staging_table);
}

bool dflush_setup_table(MYSQL *db, table *t)
{
    free(t->key_weights); /* made again below for the keys read now; a drain without them
                             moves rows by their keys' bytes, applying nothing */
    t->key_weights = NULL;
    if (!check_engines(db, t)) {
        if (t->main_gone)
            drain_gone(db, t);
        return false;
    }
    if (!key_from_schema(db, t) || !names_ok(t))
        return false;
    MYSQL_RES *cols =
        dflush_schema_query(db, t,
                            "SELECT COLUMN_NAME, COLUMN_TYPE, COLLATION_NAME, "
                            "CHARACTER_MAXIMUM_LENGTH FROM information_schema.COLUMNS",
                            t->def.table);
    bool ok =
        cols && create_staging(db, t, cols) && staging_columns_ok(db, t) && key_weights(t, cols);
    mysql_free_result(cols);
    t->tmp_ready = false;
    if (ok)
        mr_info(0, "delayed %s: %s.%s flushed from %s.%s every %" PRIu64 " ms%s", t->rule,
                t->def.schema, t->def.table, t->def.schema, t->def.staging_table,
                t->def.flush_interval_ms,
                t->locked ? " (not transactional: LOCK TABLES "
                            "snapshots, rows in flight are lost if the flush dies)"
                          : "");
    t->ready = ok;
    return ok;
}
