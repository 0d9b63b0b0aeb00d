/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/flush_derive.c - the flusher's side of default delayed rules
 * (delayed/derive.h): derive a table's rule from information_schema on the
 * flusher's own connection, and adopt staging tables that a default rule
 * would own (rows left by a proxy that died).
 *
 * Flusher thread only.
 */
#include <mysql.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "delayed/flush/flush_impl.h"
#include "myrewrite/base/log.h"
#include "myrewrite/delayed/derive.h"
#include "myrewrite/net/bgconn.h"
#include "myrewrite/schema/cache.h"
#include "myrewrite/schema/desc.h"
#include "myrewrite/sql/quote.h"

#define MAX_COUNTERS 64

/* DATA_TYPE values whose columns a derived rule adds to: the staging table
 * sums whole numbers in BIGINT, which these take. */
static bool counter_type(const char *type)
{
    static const char *const ok[] = {"tinyint", "smallint", "mediumint", "int",
                                     "bigint",  "decimal",  NULL};
    for (size_t i = 0; type && ok[i]; i++)
        if (strcasecmp(type, ok[i]) == 0)
            return true;
    return false;
}

static bool in_key(const mr_row_key *rk, const char *col)
{
    for (uint8_t k = 0; k < rk->ncols; k++)
        if (strcasecmp(rk->cols[k], col) == 0)
            return true;
    return false;
}

/* The counter columns: every column outside the key of a counter type, in
 * table order. Their names live in `cols` (freed by the caller). */
static bool read_counters(MYSQL *db, const table *probe, const mr_row_key *rk, MYSQL_RES **cols,
                          char **names, size_t *n)
{
    *n = 0;
    *cols = dflush_schema_query(db, probe,
                                "SELECT COLUMN_NAME, DATA_TYPE FROM "
                                "information_schema.COLUMNS",
                                probe->def.table);
    if (!*cols)
        return false;
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(*cols)) && *n < MAX_COUNTERS)
        if (row[0] && counter_type(row[1]) && !in_key(rk, row[0]))
            names[(*n)++] = row[0];
    return true;
}

/* A flusher view for the information_schema queries on e's table. */
static table probe_of(const mr_derived *e)
{
    table t;
    memset(&t, 0, sizeof t);
    t.def.schema = (char *)(uintptr_t)e->schema;
    t.def.table = (char *)(uintptr_t)e->table;
    t.rule = (char *)(uintptr_t)e->how.rule;
    return t;
}

static dflush_derived failed(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static dflush_derived failed(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return DERIVE_FAILED;
}

/* The key: the table's primary key (a unique key is not enough: the staged
 * rows of one row must group on one spelling of its key). */
static dflush_derived read_key(MYSQL *db, const mr_derived *e, mr_row_key *rk, char *why,
                               size_t whylen)
{
    mr_table_desc *td = mr_schema_read(db, e->schema, e->table);
    if (!td)
        return mr_bg_conn_broken(db)
                   ? DERIVE_RETRY
                   : failed(why, whylen,
                            "myrewrite: the columns of %s.%s could not be read from "
                            "information_schema (see the proxy's log)",
                            e->schema, e->table);
    bool exists = td->exists;
    mr_td_row_key(td, rk);
    mr_td_free(td);
    if (!exists)
        return failed(why, whylen,
                      "myrewrite: table %s.%s does not exist (the default rule %s "
                      "derived no delayed rule for it)",
                      e->schema, e->table, e->how.rule);
    if (rk->status != MR_KEY_FOUND || !rk->primary)
        return failed(why, whylen,
                      "myrewrite: table %s.%s has no primary key; give a "
                      "[delayed ...] rule with key",
                      e->schema, e->table);
    return DERIVE_OK;
}

static dflush_derived make_rule(MYSQL *db, const mr_derived *e, const mr_row_key *rk,
                                mr_delayed_def **def, char *why, size_t whylen)
{
    table probe = probe_of(e);
    MYSQL_RES *res;
    char *cols[MAX_COUNTERS], *keys[MR_SD_MAX_KEY_COLS], staging[MR_DERIVE_NAME];
    size_t ncols;
    if (!read_counters(db, &probe, rk, &res, cols, &ncols))
        return mr_bg_conn_broken(db)
                   ? DERIVE_RETRY
                   : failed(why, whylen, "myrewrite: the columns of %s.%s could not be read",
                            e->schema, e->table);
    dflush_derived rc = DERIVE_OK;
    for (uint8_t k = 0; k < rk->ncols; k++)
        keys[k] = (char *)(uintptr_t)rk->cols[k];
    if (!ncols)
        rc = failed(why, whylen,
                    "myrewrite: table %s.%s has no integer or DECIMAL column "
                    "outside the primary key for the default rule %s to add to",
                    e->schema, e->table, e->how.rule);
    else if (!mr_derive_staging_name(e->how.staging_pattern, e->table, staging, sizeof staging))
        rc = failed(why, whylen,
                    "myrewrite: the staging table of %s.%s (%s) would pass 64 "
                    "characters; give the table a [delayed ...] rule with staging_table",
                    e->schema, e->table, e->how.staging_pattern);
    else if (!(*def = mr_derive_def_new(e, staging, keys, rk->ncols, cols, ncols)))
        rc = failed(why, whylen, "myrewrite: out of memory deriving the rule of %s.%s", e->schema,
                    e->table);
    mysql_free_result(res);
    return rc;
}

dflush_derived dflush_derive(MYSQL *db, const mr_derived *e, struct mr_rule_stats *stats,
                             table *out, mr_delayed_def **def, char *why, size_t whylen)
{
    mr_row_key rk;
    *def = NULL;
    dflush_derived rc = read_key(db, e, &rk, why, whylen);
    if (rc == DERIVE_OK)
        rc = make_rule(db, e, &rk, def, why, whylen);
    if (rc != DERIVE_OK)
        return rc;
    if (!dflush_table_from_def(out, *def, e->how.rule, stats)) {
        dflush_table_free(out);
        mr_derive_def_free(*def);
        return failed(why, whylen, "myrewrite: out of memory deriving the rule of %s.%s", e->schema,
                      e->table);
    }
    if (dflush_setup_table(db, out)) {
        mr_info(0,
                "delayed %s: derived the rule of %s.%s from the schema: %zu counter "
                "column(s), key of %zu column(s), staged in %s",
                e->how.rule, e->schema, e->table, (*def)->ncolumns, (*def)->nkeys,
                (*def)->staging_table);
        return DERIVE_OK;
    }
    bool broken = mr_bg_conn_broken(db);
    if (!broken)
        failed(why, whylen,
               "myrewrite: the staging table %s.%s of %s.%s could not be set up "
               "(see the proxy's log)",
               e->schema, (*def)->staging_table, e->schema, e->table);
    dflush_table_free(out);
    mr_derive_def_free(*def);
    *def = NULL;
    return broken ? DERIVE_RETRY : DERIVE_FAILED;
}

/* ---- adoption -------------------------------------------------------------------- */

/* s with LIKE's wildcards and the escape character itself escaped by '!'. */
static void put_like_literal(mr_buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' || s[i] == '_' || s[i] == '!')
            mr_buf_put(b, "!", 1);
        mr_buf_put(b, &s[i], 1);
    }
}

/* The staging tables the pattern names, in d's schema (or every schema but
 * the server's own). */
static MYSQL_RES *staging_candidates(MYSQL *db, const dflush_default *d)
{
    const char *pat = d->how.staging_pattern, *at = strstr(pat, "{table}");
    if (!at)
        return NULL;
    mr_buf like, b;
    mr_buf_init(&like);
    put_like_literal(&like, pat, (size_t)(at - pat));
    mr_buf_put(&like, "%", 1);
    put_like_literal(&like, at + 7, strlen(at + 7));
    mr_buf_put(&like, "", 1);
    mr_buf_init(&b);
    mr_buf_put_str(&b, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE "
                       "TABLE_TYPE = 'BASE TABLE' AND TABLE_NAME LIKE ");
    mr_sql_put_literal(&b, like.failed ? "" : (const char *)like.data);
    mr_buf_put_str(&b, " ESCAPE '!' AND TABLE_SCHEMA ");
    if (strcmp(d->schema, "*") == 0) {
        mr_buf_put_str(&b, "NOT IN ('mysql', 'information_schema', 'performance_schema', "
                           "'sys')");
    } else {
        mr_buf_put_str(&b, "= ");
        mr_sql_put_literal(&b, d->schema);
    }
    MYSQL_RES *res = NULL;
    if (!like.failed && !b.failed && mr_bg_query_buf(db, &b, d->how.rule, "listing staging tables"))
        res = mysql_store_result(db);
    mr_buf_free(&like);
    mr_buf_free(&b);
    return res;
}

/* The base table of a staging table's name, when the pattern fits it. */
static bool base_of(const char *pattern, const char *name, char *base, size_t cap)
{
    const char *at = strstr(pattern, "{table}");
    size_t pre = (size_t)(at - pattern), suf = strlen(at + 7), n = strlen(name);
    if (n <= pre + suf || strncmp(name, pattern, pre) != 0 || strcmp(name + n - suf, at + 7) != 0 ||
        n - pre - suf >= cap)
        return false;
    memcpy(base, name + pre, n - pre - suf);
    base[n - pre - suf] = '\0';
    return true;
}

static bool table_exists(MYSQL *db, const char *schema, const char *name, const char *rule)
{
    mr_derived e;
    memset(&e, 0, sizeof e);
    snprintf(e.schema, sizeof e.schema, "%s", schema);
    snprintf(e.how.rule, sizeof e.how.rule, "%s", rule);
    table probe = probe_of(&e);
    MYSQL_RES *res =
        dflush_schema_query(db, &probe, "SELECT 1 FROM information_schema.TABLES", name);
    bool found = res && mysql_num_rows(res) > 0;
    mysql_free_result(res);
    return found;
}

void dflush_adopt(MYSQL *db, struct mr_derive_reg *g, const dflush_default *d,
                  bool (*owned)(const dflush_default *d, const char *schema, const char *name))
{
    MYSQL_RES *res = staging_candidates(db, d);
    MYSQL_ROW row;
    while (res && (row = mysql_fetch_row(res))) {
        char base[MR_DERIVE_NAME];
        if (!row[0] || !row[1] || !base_of(d->how.staging_pattern, row[1], base, sizeof base) ||
            owned(d, row[0], row[1]) || owned(d, row[0], base) ||
            mr_derive_known(g, row[0], base) || !table_exists(db, row[0], base, d->how.rule))
            continue;
        bool added;
        const mr_delayed_def *def;
        char why[300];
        mr_derive_lookup(g, row[0], base, &d->how, &added, &def, why, sizeof why);
        if (added)
            mr_info(0,
                    "delayed %s: adopting %s.%s, whose staging table %s exists: its rule is "
                    "derived and its staged rows flushed",
                    d->how.rule, row[0], base, row[1]);
    }
    mysql_free_result(res);
}
