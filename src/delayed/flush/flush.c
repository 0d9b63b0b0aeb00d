/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/flush.c - staging tables and the flusher of delayed rules (see
 * delayed/flush.h for what a flush does and why it is exactly-once).
 *
 * The main thread hands copies of the delayed rules over under `D.lock`;
 * the flusher's bgconn thread adopts them in its tick, creates missing
 * staging tables, and flushes each table when its interval is due. On stop
 * the main thread asks for a final flush and waits for it, bounded.
 * Owns the rule copies, the per-chunk buffers and the counters.
 */
#include "myrewrite/delayed/flush.h"
#include "myrewrite/base/clock.h"

#include <inttypes.h>
#include <mysql.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "delayed/flush/flush_impl.h"
#include "delayed/flush/flush_job.h"
#include "myrewrite/base/buf.h"
#include "myrewrite/base/log.h"
#include "myrewrite/delayed/derive.h"
#include "myrewrite/delayed/reject.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/net/bgconn.h"
#include "myrewrite/schema/cache.h"
#include "myrewrite/sql/coltype.h"
#include "myrewrite/sql/digest.h"
#include "myrewrite/sql/quote.h"
#include "myrewrite/stats/rule_stats.h"

#define SEQS_PER_STATEMENT 5000 /* staged rows per DELETE FROM staging */
#define IDLE_MS 60000
#define SETUP_RETRY_MS 10000 /* a table whose check failed is checked again after this */
#define SETUP_ASKED_MS 200   /* ... or, asked for (a staging table is missing), this */
#define STAGING_POLL_MS 20   /* a start waiting for the staging tables looks this often */
#define ADOPT_MS 60000       /* between scans for staging tables of default rules */
#define ER_NO_SUCH_TABLE 1146

typedef struct tables {
    table *t;
    size_t n;
    dflush_default *d; /* default rules (derive = yes) */
    size_t nd;
} tables;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    /* guarded by lock */
    tables next;
    bool have_next;
    bool final_wanted;
    bool final_done;
    uint64_t staging_checks; /* ticks that set up every table not ready (done_cond) */
    bool setup_asked;        /* a staging table is missing: set up the tables not ready
                                now, whatever their setup_after_ms (mr_delayed_setup_now) */
    uint64_t deadline_ms;
    uint64_t flush_asked, flush_done; /* rounds asked (mr_delayed_wake), the last one served */
    char flush_filter[200];           /* its table ("" = all), as `t` or `schema.t` */
    /* main thread */
    mr_bgconn *bg;
    /* any thread */
    mr_delayed_stats stats;
    /* flusher thread */
    tables cur;
    tables derived;         /* tables derived by default rules (t only); kept across reloads */
    uint64_t next_adopt_ms; /* next scan for staging tables a default rule would own */
} D = {.lock = PTHREAD_MUTEX_INITIALIZER, .done_cond = PTHREAD_COND_INITIALIZER};

const mr_delayed_stats *mr_delayed_stats_get(void) { return &D.stats; }

/* ---- rule copies ---------------------------------------------------------------- */

static char *dup_or_null(const char *s, bool *ok)
{
    char *d = s ? strdup(s) : NULL;
    if (s && !d)
        *ok = false;
    return d;
}

static char **names_copy(char *const *v, size_t n, bool *ok)
{
    char **c = calloc(n ? n : 1, sizeof *c);
    if (!c)
        *ok = false;
    for (size_t i = 0; c && i < n; i++)
        c[i] = dup_or_null(v[i], ok);
    return c;
}

/* The rule's keys and, last, its bucket column: to the flusher the bucket
 * is one more key column, staged with each row and grouped on. */
static char **names_copy_bucket(const mr_delayed_def *s, bool *ok)
{
    size_t n = s->nkeys + (s->bucket_column != NULL);
    char **c = calloc(n ? n : 1, sizeof *c);
    if (!c) {
        *ok = false;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!(c[i] = strdup(i < s->nkeys ? s->keys[i] : s->bucket_column)))
            *ok = false;
    return c;
}

static void names_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static void table_free(table *t)
{
    free(t->def.schema);
    free(t->def.table);
    names_free(t->def.keys, t->def.nkeys);
    names_free(t->def.columns, t->def.ncolumns);
    names_free(t->def.set_columns, t->def.nset_columns);
    free(t->def.staging_table);
    free(t->def.staging_engine);
    free(t->rule);
    free(t->key_weights);
}

/* The lock name: myrewrite_flush_<schema>.<staging>, or a hash of it when
 * that passes the 64 characters GET_LOCK takes. */
static void set_lock_name(table *t)
{
    int n = snprintf(t->lock_name, sizeof t->lock_name, "myrewrite_flush_%s.%s", t->def.schema,
                     t->def.staging_table);
    if (n < 0 || (size_t)n >= sizeof t->lock_name) {
        char full[160];
        snprintf(full, sizeof full, "%s.%s", t->def.schema, t->def.staging_table);
        snprintf(t->lock_name, sizeof t->lock_name, "myrewrite_flush_%016" PRIx64,
                 sql_hash64(full, strlen(full)));
    }
}

/* The flusher's copy of the rule `s` named `rule`. */
static bool table_from_def(table *t, const mr_delayed_def *s, const char *rule,
                           struct mr_rule_stats *stats)
{
    bool ok = true;
    memset(t, 0, sizeof *t);
    t->def = *s;
    t->def.set_columns = names_copy(s->set_columns, s->nset_columns, &ok);
    t->def.mem = NULL;
    t->def.staged_rows = NULL;
    t->def.schema = dup_or_null(s->schema, &ok);
    t->def.table = dup_or_null(s->table, &ok);
    t->def.keys = names_copy_bucket(s, &ok);
    t->def.nkeys = s->nkeys + (s->bucket_column != NULL);
    t->def.bucket_column = NULL; /* one of the keys here, the last */
    t->key_from_schema = s->nkeys == 0;
    t->def.columns = names_copy(s->columns, s->ncolumns, &ok);
    t->def.staging_table = dup_or_null(s->staging_table, &ok);
    t->def.staging_engine = dup_or_null(s->staging_engine, &ok);
    t->rule = dup_or_null(rule, &ok);
    t->stats = stats;
    if (ok)
        set_lock_name(t);
    return ok;
}

static bool table_copy(table *t, const mr_rule *r)
{
    return table_from_def(t, r->delayed, r->name, mr_rule_stats_of(r));
}

static void tables_free(tables *ts)
{
    for (size_t i = 0; i < ts->n; i++)
        table_free(&ts->t[i]);
    free(ts->t);
    free(ts->d);
    memset(ts, 0, sizeof *ts);
}

/* mode = memory rules have their own flusher (delayed/mem/mem_flush.c); default
 * rules name no table (their tables are derived, below). */
static bool is_staged(const mr_rule *r)
{
    return r->kind == MR_RULE_DELAYED && r->enabled && r->delayed->mode == MR_DELAYED_STAGED &&
           !r->delayed->derive;
}

static bool is_default(const mr_rule *r)
{
    return r->kind == MR_RULE_DELAYED && r->enabled && r->delayed->derive;
}

/* The default rules, for adopting staging tables left by another proxy. */
static bool defaults_from(tables *ts, const mr_ruleset *rs)
{
    size_t total = mr_ruleset_count(rs);
    for (size_t i = 0; i < total; i++)
        ts->nd += is_default(mr_ruleset_rule(rs, i));
    if (!ts->nd)
        return true;
    if (!(ts->d = calloc(ts->nd, sizeof *ts->d)))
        return false;
    for (size_t i = 0, k = 0; i < total; i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        if (!is_default(r))
            continue;
        snprintf(ts->d[k].schema, sizeof ts->d[k].schema, "%s", r->delayed->schema);
        mr_derive_how_of(r->name, r->delayed, &ts->d[k].how);
        ts->d[k++].stats = mr_rule_stats_of(r);
    }
    return true;
}

static bool tables_from(tables *ts, const mr_ruleset *rs)
{
    size_t n = 0, total = mr_ruleset_count(rs);
    memset(ts, 0, sizeof *ts);
    if (!defaults_from(ts, rs))
        return false;
    for (size_t i = 0; i < total; i++)
        n += is_staged(mr_ruleset_rule(rs, i));
    if (!n)
        return true;
    if (!(ts->t = calloc(n, sizeof *ts->t)))
        return false;
    for (size_t i = 0; i < total; i++) {
        const mr_rule *r = mr_ruleset_rule(rs, i);
        if (!is_staged(r))
            continue;
        bool ok = table_copy(&ts->t[ts->n], r);
        ts->n++;
        if (!ok) {
            tables_free(ts);
            return false;
        }
    }
    return true;
}

/* ---- SQL text ------------------------------------------------------------------ */

static void put_table(mr_buf *b, const char *schema, const char *name)
{
    dchunk_put_table(b, schema, name);
}

static void put_fmt(mr_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put_fmt(mr_buf *b, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        mr_buf_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Runs the text built in b; logs and counts a failure. */
static bool exec_buf(MYSQL *db, const mr_buf *b, const table *t, const char *what)
{
    if (mr_bg_query_buf(db, b, t->rule, what))
        return true;
    dflush_count_error(t, what, mysql_errno(db), mysql_error(db));
    return false;
}

static bool exec_str(MYSQL *db, const char *sql, const table *t, const char *what)
{
    mr_buf b = {.data = (uint8_t *)(uintptr_t)sql, .len = strlen(sql)};
    return exec_buf(db, &b, t, what);
}

/* ---- staging table ---------------------------------------------------------------- */

/* The first row of a query on (schema, name) strings; NULL when none. */
static MYSQL_RES *schema_query(MYSQL *db, const table *t, const char *sql_head, const char *name)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, sql_head);
    mr_buf_put_str(&b, " WHERE TABLE_SCHEMA = ");
    mr_sql_put_literal(&b, t->def.schema);
    mr_buf_put_str(&b, " AND TABLE_NAME = ");
    mr_sql_put_literal(&b, name);
    MYSQL_RES *res =
        exec_buf(db, &b, t, "reading information_schema") ? mysql_store_result(db) : NULL;
    mr_buf_free(&b);
    return res;
}

/* 1: table `name` of t's schema exists, 0: it does not, -1: unknown. */
static int table_exists(MYSQL *db, const table *t, const char *name)
{
    MYSQL_RES *res = schema_query(db, t, "SELECT 1 FROM information_schema.TABLES", name);
    int rc = res ? mysql_num_rows(res) > 0 : -1;
    mysql_free_result(res);
    return rc;
}

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
        schema_query(db, t, "SELECT ENGINE FROM information_schema.TABLES", t->def.table);
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
    names_free(t->def.keys, t->def.nkeys);
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

/* `<name>_set`: where a staged row keeps the value of SET name = literal. */
static void put_set_ident(mr_buf *b, const char *name)
{
    mr_sql_put_ident_suffixed(b, name, "_set");
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
                put_set_ident(b, name);
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
        put_fmt(&b, " COLLATE %s AS CHAR(%" PRIu64 "))", row[2],
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
    put_table(&b, t->def.schema, t->def.staging_table);
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
    ok = ok && exec_buf(db, &b, t, "creating the staging table");
    mr_buf_free(&b);
    return ok;
}

/* An existing staging table must have the columns this rule stages into:
 * one made for another rule, or before a key change, would fail every
 * staging INSERT or flush. */
static bool staging_columns_ok(MYSQL *db, const table *t)
{
    MYSQL_RES *res = schema_query(db, t, "SELECT COLUMN_NAME FROM information_schema.COLUMNS",
                                  t->def.staging_table);
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

static void drain_gone(MYSQL *db, table *t);

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
    MYSQL_RES *cols = schema_query(db, t,
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

/* ---- one chunk: read and aggregate ----------------------------------------------- */

static void chunk_free(chunk *c)
{
    mysql_free_result(c->res);
    mr_buf_free(&c->arena);
    free(c->rows);
    free(c->deltas);
    free(c->vals);
    free(c->keys);
    memset(c, 0, sizeof *c);
}

static bool read_rows(MYSQL *db, const table *t, chunk *c)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "SELECT `seq`");
    for (size_t i = 0; i < t->def.nkeys; i++) {
        mr_buf_put(&b, ", ", 2);
        mr_sql_put_ident(&b, t->def.keys[i]);
    }
    for (size_t i = 0; i < t->def.ncolumns; i++) {
        mr_buf_put(&b, ", ", 2);
        mr_sql_put_ident(&b, t->def.columns[i]);
    }
    for (size_t i = 0; i < t->def.nset_columns; i++) {
        mr_buf_put(&b, ", ", 2);
        put_set_ident(&b, t->def.set_columns[i]);
    }
    mr_buf_put_str(&b, t->def.nset_columns ? ", `set_mask`, `op`" : ", `op`");
    if (t->key_weights)
        mr_buf_put_str(&b, t->key_weights);
    mr_buf_put_str(&b, " FROM ");
    put_table(&b, t->def.schema, t->read_from ? t->read_from : t->def.staging_table);
    put_fmt(&b, " ORDER BY `seq` LIMIT %" PRIu64 "%s", t->def.flush_rows,
            t->read_from ? "" : " FOR UPDATE");
    bool ok = exec_buf(db, &b, t, "reading staged rows");
    mr_buf_free(&b);
    return ok && (c->res = mysql_store_result(db)) != NULL;
}

/* A whole number as the server prints an integer column: -?[0-9]+ */
static bool is_integer_text(const char *v, size_t n)
{
    size_t i = n && v[0] == '-';
    if (i == n)
        return false;
    for (; i < n; i++)
        if (v[i] < '0' || v[i] > '9')
            return false;
    return true;
}

/* The value of set column s as a literal: NULL, or a counter's integer bare
 * (so `value + adds` stays integer arithmetic), or quoted. */
static void load_value(MYSQL *db, const table *t, chunk *c, size_t s, const char *v, size_t n,
                       lit *out)
{
    out->off = c->arena.len;
    if (!v)
        mr_buf_put_str(&c->arena, "NULL");
    else if (dchunk_counter_of(t, s) >= 0 && is_integer_text(v, n))
        mr_buf_put(&c->arena, v, n);
    else
        mr_sql_put_literal_n(&c->arena, v, n);
    out->len = c->arena.len - out->off;
}

/* set_mask and the values it names, after the counters in a result row. */
static void load_sets(MYSQL *db, const table *t, chunk *c, MYSQL_ROW row, unsigned long *len,
                      size_t first, staged *s)
{
    size_t ns = t->def.nset_columns;
    if (!ns)
        return;
    s->val = &c->vals[c->nrows * ns];
    s->mask = row[first + ns] ? strtoull(row[first + ns], NULL, 10) : 0;
    for (size_t j = 0; j < ns; j++)
        if (s->mask & (1ull << j))
            load_value(db, t, c, j, row[first + j], len[first + j], &s->val[j]);
}

/* s->woff: per key column its weight (after `op`, when t->key_weights asked
 * for them; NULL for a column without a collation) or else its value, each
 * after its length. */
static void load_weights(const table *t, chunk *c, MYSQL_ROW row, unsigned long *len, staged *s)
{
    size_t nk = t->def.nkeys, ns = t->def.nset_columns;
    size_t w = 1 + nk + t->def.ncolumns + (ns ? ns + 1 : 0) + 1;
    s->woff = c->arena.len;
    for (size_t k = 0; k < nk; k++) {
        size_t at = t->key_weights && row[w + k] ? w + k : 1 + k;
        uint32_t n = (uint32_t)len[at];
        mr_buf_put(&c->arena, &n, sizeof n);
        if (row[at])
            mr_buf_put(&c->arena, row[at], len[at]);
    }
    s->wlen = c->arena.len - s->woff;
}

/* Copies the result into rows[] with each key as escaped literals. */
static bool load_rows(MYSQL *db, const table *t, chunk *c)
{
    size_t n = (size_t)mysql_num_rows(c->res), nk = t->def.nkeys, nc = t->def.ncolumns;
    size_t ns = t->def.nset_columns;
    c->rows = calloc(n ? n : 1, sizeof *c->rows);
    c->deltas = calloc((2 * n + 1) * (nc ? nc : 1), sizeof *c->deltas);
    c->vals = calloc((2 * n + 1) * (ns ? ns : 1), sizeof *c->vals);
    c->keys = calloc(n ? n : 1, sizeof *c->keys);
    if (!c->rows || !c->deltas || !c->vals || !c->keys)
        return false;
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(c->res))) {
        unsigned long *len = mysql_fetch_lengths(c->res);
        staged *s = &c->rows[c->nrows];
        s->seq = strtoull(row[0], NULL, 10);
        s->koff = c->arena.len;
        for (size_t k = 0; k < nk; k++) {
            if (k)
                mr_buf_put(&c->arena, ", ", 2);
            mr_sql_put_literal_n(&c->arena, row[1 + k] ? row[1 + k] : "", len[1 + k]);
        }
        s->klen = c->arena.len - s->koff;
        load_weights(t, c, row, len, s);
        s->delta = &c->deltas[c->nrows * nc];
        for (size_t j = 0; j < nc; j++)
            s->delta[j] = row[1 + nk + j] ? strtoll(row[1 + nk + j], NULL, 10) : 0;
        load_sets(db, t, c, row, len, 1 + nk + nc, s);
        size_t op = 1 + nk + nc + (ns ? ns + 1 : 0);
        s->del = row[op] && row[op][0] == '1';
        c->nrows++;
    }
    return !c->arena.failed;
}

/* ---- one chunk: apply -------------------------------------------------------------- */

/* DELETE FROM main WHERE (keys) IN ((...), ...) for the deleted keys. */
static bool apply_deletes(MYSQL *db, const table *t, const chunk *c)
{
    for (size_t at = 0; at < c->nkeys;) {
        mr_buf b;
        mr_buf_init(&b);
        mr_buf_put_str(&b, t->locked ? "DELETE LOW_PRIORITY FROM " : "DELETE FROM ");
        put_table(&b, t->def.schema, t->def.table);
        mr_buf_put_str(&b, " WHERE (");
        dchunk_put_key_names(&b, t);
        mr_buf_put_str(&b, ") IN (");
        size_t n = 0;
        for (; at < c->nkeys && n < KEYS_PER_STATEMENT; at++) {
            if (!c->keys[at].del)
                continue;
            if (n++)
                mr_buf_put(&b, ", ", 2);
            dchunk_put_key_tuple(&b, c, &c->keys[at]);
        }
        mr_buf_put(&b, ")", 1);
        bool ok = !n || exec_buf(db, &b, t, "deleting rows");
        mr_buf_free(&b);
        if (!ok)
            return false;
        mr_stat_add(&D.stats.keys, n);
    }
    return true;
}

/* The keys whose sets are `mask`: one statement shape per mask (which
 * columns are replaced rather than added to). */
static bool apply_mask(MYSQL *db, const table *t, const chunk *c, uint64_t mask)
{
    bool upsert = t->def.missing == MR_DELAYED_MISSING_INSERT;
    for (size_t at = 0; at < c->nkeys;) {
        mr_buf b;
        mr_buf_init(&b);
        size_t n = 0;
        if (upsert)
            dchunk_build_upsert(&b, t, c, mask, &at, &n);
        else
            dchunk_build_update(&b, t, c, mask, &at, &n);
        bool ok = !n || exec_buf(db, &b, t, upsert ? "upserting deltas" : "adding deltas");
        mr_buf_free(&b);
        if (!ok)
            return false;
        mr_stat_add(&D.stats.keys, n);
    }
    return true;
}

static int by_mask(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Adds (mask 0), then each distinct set of set columns in turn. */
static bool apply_adds(MYSQL *db, const table *t, const chunk *c)
{
    if (!apply_mask(db, t, c, 0))
        return false;
    if (!t->def.nset_columns)
        return true;
    uint64_t *masks = malloc((c->nkeys ? c->nkeys : 1) * sizeof *masks);
    if (!masks) {
        mr_error(0, "delayed %s: out of memory sorting set columns", t->rule);
        return false;
    }
    size_t n = 0;
    for (size_t i = 0; i < c->nkeys; i++)
        if (c->keys[i].mask && dchunk_wants_add(t, &c->keys[i]))
            masks[n++] = c->keys[i].mask;
    qsort(masks, n, sizeof *masks, by_mask);
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++)
        if (i == 0 || masks[i] != masks[i - 1])
            ok = apply_mask(db, t, c, masks[i]);
    free(masks);
    return ok;
}

/* DELETE FROM staging WHERE seq IN (exactly the rows read). */
static bool delete_staged(MYSQL *db, const table *t, const chunk *c)
{
    for (size_t at = 0; at < c->nrows;) {
        mr_buf b;
        mr_buf_init(&b);
        mr_buf_put_str(&b, "DELETE FROM ");
        put_table(&b, t->def.schema, t->def.staging_table);
        mr_buf_put_str(&b, " WHERE `seq` IN (");
        for (size_t n = 0; at < c->nrows && n < SEQS_PER_STATEMENT; at++, n++)
            put_fmt(&b, n ? ",%" PRIu64 : "%" PRIu64, c->rows[at].seq);
        mr_buf_put(&b, ")", 1);
        bool ok = exec_buf(db, &b, t, "deleting staged rows");
        mr_buf_free(&b);
        if (!ok)
            return false;
    }
    return true;
}

/* ---- refused keys: the dead-letter table ------------------------------------------ */

/* A key the server refused in an isolating chunk, noted after the commit. */
typedef struct refused {
    size_t key; /* index in c->keys */
    unsigned code;
    char msg[200];
    bool deleted; /* the locked path applied the key's DELETE before its add failed */
} refused;

/* The key as refused: what is left of its change once a DELETE went through. */
static net refused_net(const chunk *c, const refused *r)
{
    net k = c->keys[r->key];
    if (r->deleted)
        k.del = false;
    return k;
}

/* Creates the dead-letter table (DDL: outside any transaction). */
static bool reject_setup(MYSQL *db, table *t)
{
    if (t->reject_ready)
        return true;
    mr_buf b;
    mr_buf_init(&b);
    mr_dreject_put_create(&b, t->def.schema, t->def.table);
    t->reject_ready = exec_buf(db, &b, t, "creating the dead-letter table");
    mr_buf_free(&b);
    return t->reject_ready;
}

/* Writes refused key r to the dead-letter table (inside the transaction). */
static bool reject_write(MYSQL *db, const table *t, const chunk *c, const refused *r)
{
    mr_buf key, change, b;
    mr_buf_init(&key);
    mr_buf_init(&change);
    mr_buf_init(&b);
    net kr = refused_net(c, r);
    const net *k = &kr;
    dchunk_key_text(t, c, k, &key);
    dchunk_change_text(t, c, k, &change);
    bool ok = !key.failed && !change.failed;
    if (ok)
        mr_dreject_put_insert(&b, t->def.schema, t->def.table, (const char *)key.data,
                              (const char *)change.data, k->nrows, r->code, r->msg);
    ok = ok && exec_buf(db, &b, t, "writing a refused key to the dead-letter table");
    mr_buf_free(&key);
    mr_buf_free(&change);
    mr_buf_free(&b);
    return ok;
}

/* After the commit: counts and logs each refused key, once. */
static void reject_note(const table *t, const chunk *c, const refused *rs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mr_buf key, change;
        mr_buf_init(&key);
        mr_buf_init(&change);
        net kr = refused_net(c, &rs[i]);
        const net *k = &kr;
        dchunk_key_text(t, c, k, &key);
        dchunk_change_text(t, c, k, &change);
        const char *ks = key.failed ? "?" : (const char *)key.data;
        const char *cs = change.failed ? "?" : (const char *)change.data;
        mr_error(0,
                 "delayed %s: the server refused %s on %s.%s %s (%u %s); its %zu staged "
                 "row(s) went to %s.%.47s_delayed_rejected",
                 t->rule, cs, t->def.schema, t->def.table, ks, rs[i].code, rs[i].msg, k->nrows,
                 t->def.schema, t->def.table);
        mr_dreject_note(t->def.schema, t->def.table, ks, cs, k->nrows, rs[i].code, rs[i].msg);
        mr_buf_free(&key);
        mr_buf_free(&change);
    }
}

/* Key i alone under a savepoint: 1 applied, 0 refused for its data (rolled
 * back to the savepoint; *r filled), -1 any other failure. */
static int apply_one(MYSQL *db, const table *t, const chunk *c, size_t i, refused *r)
{
    chunk one = *c;
    one.keys = &c->keys[i];
    one.nkeys = 1;
    *r = (refused){.key = i};
    if (c->keys[i].overflow) {
        r->code = 1690;
        snprintf(r->msg, sizeof r->msg,
                 "the deltas staged for this key sum past the BIGINT "
                 "range");
        return 0;
    }
    bool sp = !t->locked; /* the locked path has no transaction: one key's statements */
    if (sp && !exec_str(db, "SAVEPOINT `mr_key`", t, "SAVEPOINT"))
        return -1;
    bool deleted = apply_deletes(db, t, &one);
    if (deleted && apply_adds(db, t, &one))
        return 1;
    r->code = mysql_errno(db);
    snprintf(r->msg, sizeof r->msg, "%s", mysql_error(db));
    /* A main table information_schema no longer lists is tried all the
     * same: only the server's own 1146 for this key's statement moves it to
     * the dead-letter table (a listing can lag a restart or a restore). */
    bool gone = t->main_gone && r->code == ER_NO_SUCH_TABLE;
    if (!(gone || mr_dreject_data_error(r->code)) || mr_bg_conn_broken(db))
        return -1;
    /* Without a savepoint a DELETE that went through stays: the dead-letter
     * row then holds only the add the server refused. */
    r->deleted = !sp && deleted && one.keys[0].del;
    return !sp || exec_str(db, "ROLLBACK TO SAVEPOINT `mr_key`", t, "ROLLBACK TO SAVEPOINT") ? 0
                                                                                             : -1;
}

/* Applies c key by key; the keys the server refuses go to the dead-letter
 * table. *rs gets the refused ones; false on any other failure. */
static bool apply_isolating(MYSQL *db, const table *t, const chunk *c, refused **rs, size_t *n)
{
    *n = 0;
    if (!(*rs = calloc(c->nkeys ? c->nkeys : 1, sizeof **rs)))
        return false;
    for (size_t i = 0; i < c->nkeys; i++) {
        int rc = apply_one(db, t, c, i, &(*rs)[*n]);
        if (rc < 0)
            return false;
        if (rc == 0) {
            if (!reject_write(db, t, c, &(*rs)[*n]))
                return false; /* not counted: the key was neither applied nor moved */
            (*n)++;
        }
    }
    return true;
}

/* The chunk again, key by key (its cost is paid only after a refusal): one
 * transaction that applies the keys the server takes, moves the others to
 * the dead-letter table and deletes every row read from staging. */
static long flush_chunk_isolating(MYSQL *db, table *t)
{
    if (!reject_setup(db, t))
        return -1;
    chunk c;
    memset(&c, 0, sizeof c);
    refused *rs = NULL;
    size_t nr = 0;
    if (!exec_str(db, "START TRANSACTION", t, "START TRANSACTION"))
        return -1;
    bool ok = read_rows(db, t, &c) && load_rows(db, t, &c);
    if (ok && c.nrows) {
        dchunk_aggregate(t, &c);
        ok = apply_isolating(db, t, &c, &rs, &nr) && delete_staged(db, t, &c);
    }
    ok = ok && exec_str(db, "COMMIT", t, "COMMIT");
    long n = ok ? (long)c.nrows : -1;
    if (ok)
        reject_note(t, &c, rs, nr);
    else if (!mr_bg_conn_broken(db))
        (void)mysql_query(db, "ROLLBACK");
    size_t refused_rows = 0;
    for (size_t i = 0; ok && i < nr; i++)
        refused_rows += c.keys[rs[i].key].nrows;
    free(rs);
    chunk_free(&c);
    if (n > 0)
        dflush_count_chunk(t, n - (long)refused_rows);
    return n;
}

/* One transaction; returns the rows read (applied, or moved to the
 * dead-letter table), or -1 (rolled back). */
static long flush_chunk(MYSQL *db, table *t)
{
    chunk c;
    memset(&c, 0, sizeof c);
    if (!exec_str(db, "START TRANSACTION", t, "START TRANSACTION"))
        return -1;
    bool ok = read_rows(db, t, &c) && load_rows(db, t, &c), isolate = false;
    if (ok && c.nrows) {
        dchunk_aggregate(t, &c);
        isolate = dchunk_any_overflow(&c);
        ok = !isolate && apply_deletes(db, t, &c) && apply_adds(db, t, &c);
        isolate =
            isolate || (!ok && !mr_bg_conn_broken(db) && mr_dreject_data_error(mysql_errno(db)));
        ok = ok && delete_staged(db, t, &c);
    }
    ok = ok && exec_str(db, "COMMIT", t, "COMMIT");
    long n = ok ? (long)c.nrows : -1;
    chunk_free(&c);
    if (!ok) {
        if (!mr_bg_conn_broken(db))
            (void)mysql_query(db, "ROLLBACK");
        return isolate && !mr_bg_conn_broken(db) ? flush_chunk_isolating(db, t) : -1;
    }
    dflush_count_chunk(t, n);
    return n;
}

/* ---- rounds -------------------------------------------------------------------------- */

/* GET_LOCK / RELEASE_LOCK on the table's lock name; true when it returned 1. */
static bool named_lock(MYSQL *db, const table *t, const char *fn)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "SELECT ");
    mr_buf_put_str(&b, fn);
    mr_buf_put(&b, "(", 1);
    mr_sql_put_literal(&b, t->lock_name);
    mr_buf_put_str(&b, strcmp(fn, "GET_LOCK") == 0 ? ", 0)" : ")");
    bool ok = exec_buf(db, &b, t, fn);
    mr_buf_free(&b);
    MYSQL_RES *res = ok ? mysql_store_result(db) : NULL;
    MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
    ok = row && row[0] && strcmp(row[0], "1") == 0;
    mysql_free_result(res);
    return ok;
}

/* The main table does not exist, so what is staged for it can never be
 * applied: rather than stay staged for good, each key goes to the
 * dead-letter table (logged one by one, and FLUSH DELAYED names them), in
 * the chunk's transaction with the DELETE from staging. */
static void drain_gone(MYSQL *db, table *t)
{
    if (!t->def.nkeys || table_exists(db, t, t->def.staging_table) != 1)
        return; /* keys never read (no key in the rule), or nothing staged */
    if (!named_lock(db, t, "GET_LOCK"))
        return; /* another proxy flushes it now */
    uint64_t moved = 0;
    long n;
    do
        if ((n = flush_chunk_isolating(db, t)) > 0)
            moved += (uint64_t)n;
    while (n >= (long)t->def.flush_rows);
    if (!mr_bg_conn_broken(db))
        (void)named_lock(db, t, "RELEASE_LOCK");
    if (moved)
        mr_error(0,
                 "delayed %s: table %s.%s does not exist, so its %" PRIu64 " staged row(s) "
                 "went to %s.%.47s_delayed_rejected (error 1146) instead of waiting in %s.%s",
                 t->rule, t->def.schema, t->def.table, moved, t->def.schema, t->def.table,
                 t->def.schema, t->def.staging_table);
}

/* After a failed chunk: a staging table dropped outside the proxy is made
 * again (the proxy owns it), logged, and flushing goes on; a main table
 * that is gone sends the table back to its setup, which drains staging
 * into the dead-letter table. */
static void check_dropped(MYSQL *db, table *t, bool main_too)
{
    if (mr_bg_conn_broken(db) || !t->ready)
        return;
    if (table_exists(db, t, t->def.staging_table) == 0) {
        mr_warn(0,
                "delayed %s: the staging table %s.%s was dropped outside the proxy; it is "
                "created again (statements staged on it meanwhile got the server's ERR 1146 "
                "and were not taken)",
                t->rule, t->def.schema, t->def.staging_table);
        t->ready = false;
        if (!dflush_setup_table(db, t))
            t->setup_after_ms = mr_mono_ms() + SETUP_RETRY_MS;
    } else if (main_too && table_exists(db, t, t->def.table) == 0) {
        t->ready = false;
        t->setup_after_ms = 0; /* set up (and drained) in the next round */
    }
}

/* A round's duration goes to the histogram; a round whose chunks all
 * committed is the table's latest flush (SHOW DELAYED, lag). */
static void note_round(table *t, bool ok, uint64_t us)
{
    mr_flush_observe(us);
    struct mr_rule_stats *rows[2] = {t->stats, t->def.table_stats};
    for (int k = 0; k < 2; k++) {
        if (!rows[k])
            continue;
        mr_stat_add(&rows[k]->rounds, 1);
        if (ok) {
            atomic_store_explicit(&rows[k]->last_flush_us, us, memory_order_relaxed);
            atomic_store_explicit(&rows[k]->last_flush_at, mr_unix_ms(), memory_order_relaxed);
        }
    }
}

/* Flushes chunks until the staging table has fewer than flush_rows left
 * (or the deadline passes, 0 = none). False when a chunk failed or the
 * table could not be flushed (a FLUSH DELAYED on it answers an ERR). */
static bool flush_table(MYSQL *db, table *t, uint64_t deadline)
{
    mr_dreject_round_begin(t->def.schema, t->def.table); /* FLUSH DELAYED reports this round */
    if (!t->ready && mr_mono_ms() < t->setup_after_ms)
        return false; /* a failed check is not repeated (and logged) every round */
    if (!t->ready && !dflush_setup_table(db, t)) {
        t->setup_after_ms = mr_mono_ms() + SETUP_RETRY_MS;
        return false;
    }
    if (!named_lock(db, t, "GET_LOCK")) {
        mr_stat_add(&D.stats.skipped, 1);
        return true; /* another proxy flushes it now */
    }
    mr_stat_add(&D.stats.rounds, 1);
    uint64_t t0 = mr_mono_ns();
    long n;
    do
        n = t->locked ? dflush_locked_chunk(db, t) : flush_chunk(db, t);
    while (n >= (long)t->def.flush_rows && (!deadline || mr_mono_ms() < deadline));
    note_round(t, n >= 0, (mr_mono_ns() - t0) / 1000);
    if (!mr_bg_conn_broken(db))
        (void)named_lock(db, t, "RELEASE_LOCK");
    if (n < 0)
        check_dropped(db, t, true);
    return n >= 0;
}

/* ---- flusher thread ------------------------------------------------------------------ */

/* The new set's table that flushes the same staging table as old, or NULL. */
static table *successor(tables *ts, const table *old)
{
    for (size_t i = 0; i < ts->n; i++)
        if (strcmp(ts->t[i].def.schema, old->def.schema) == 0 &&
            strcmp(ts->t[i].def.staging_table, old->def.staging_table) == 0)
            return &ts->t[i];
    return NULL;
}

/* A snapshot of the locked path lives on the connection, not in the rule:
 * the old rule applies what it holds (and sends an UNLOCK TABLES it owes)
 * before it goes; what it could not settle passes to the new rule on the
 * same staging table, or is logged as lost with the connection. */
static void hand_over_snapshots(MYSQL *db, tables *ts)
{
    for (size_t i = 0; i < D.cur.n; i++) {
        table *old = &D.cur.t[i], *next = successor(ts, old);
        if (dflush_locked_settle(db, old))
            continue;
        if (next) {
            memcpy(next->tmp_name, old->tmp_name, sizeof next->tmp_name);
            next->tmp_ready = old->tmp_ready;
            next->snap_stale = old->snap_stale;
            next->unlock_owed = old->unlock_owed;
        } else {
            mr_error(0,
                     "delayed %s: reloaded away while its flush snapshot %s.%s holds rows "
                     "that could not be applied; they are lost when the flusher's "
                     "connection closes",
                     old->rule, old->def.schema, old->tmp_name);
        }
    }
}

static void adopt_tables(MYSQL *db)
{
    pthread_mutex_lock(&D.lock);
    bool have = D.have_next;
    tables ts = D.next;
    D.have_next = false;
    pthread_mutex_unlock(&D.lock);
    if (!have)
        return;
    hand_over_snapshots(db, &ts);
    tables_free(&D.cur);
    D.cur = ts;
    D.next_adopt_ms = 0; /* a new default rule may own staging tables already */
}

static bool on_connect(MYSQL *db, void *arg)
{
    (void)db;
    (void)arg;
    for (size_t i = 0; i < D.cur.n + D.derived.n; i++) {
        table *t = i < D.cur.n ? &D.cur.t[i] : &D.derived.t[i - D.cur.n];
        t->ready = false;
        t->reject_ready = false;
        t->tmp_ready = t->snap_stale = t->unlock_owed = false; /* gone with the old one */
        t->setup_after_ms = 0;
    }
    D.next_adopt_ms = 0; /* a new connection may find staging tables a dead proxy left */
    return true;
}

/* ---- derived tables --------------------------------------------------------------- */

static mr_derive_reg *derived_reg;
static mr_derive_port derived_port;

static void derived_init(void)
{
    derived_reg = mr_derive_reg_new(); /* NULL: DELAYED on derived tables is sent plain */
    derived_port = (mr_derive_port){.lookup = mr_derive_lookup, .reg = derived_reg};
}

struct mr_derive_reg *mr_delayed_derived(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, derived_init);
    return derived_reg;
}

const struct mr_derive_port *mr_delayed_derive_port(void)
{
    return mr_delayed_derived() ? &derived_port : NULL;
}

/* The default rule named `rule` in the current set, or NULL (reloaded away). */
static const dflush_default *default_named(const char *rule)
{
    for (size_t i = 0; i < D.cur.nd; i++)
        if (strcmp(D.cur.d[i].how.rule, rule) == 0)
            return &D.cur.d[i];
    return NULL;
}

/* Is schema.name (a table or a staging table) another rule's than d's: an
 * explicit rule's, or, for the default rule of any schema, in a schema
 * with a default rule of its own? */
static bool owned(const dflush_default *dd, const char *schema, const char *name)
{
    for (size_t i = 0; strcmp(dd->schema, "*") == 0 && i < D.cur.nd; i++)
        if (strcmp(D.cur.d[i].schema, schema) == 0)
            return true;
    for (size_t i = 0; i < D.cur.n; i++) {
        const mr_delayed_def *d = &D.cur.t[i].def;
        if (strcmp(d->schema, schema) == 0 &&
            (strcmp(d->table, name) == 0 || strcmp(d->staging_table, name) == 0))
            return true;
    }
    return false;
}

static bool derived_push(table *t)
{
    table *grown = realloc(D.derived.t, (D.derived.n + 1) * sizeof *grown);
    if (!grown)
        return false;
    D.derived.t = grown;
    D.derived.t[D.derived.n++] = *t;
    return true;
}

/* Derives the pending tables (a bounded number per tick, so the flushes of
 * the others are not held back by a burst of new tables). */
static void derive_pending(MYSQL *db)
{
    mr_derive_reg *g = mr_delayed_derived();
    mr_derived *e;
    for (int n = 0; g && n < 50 && !mr_bg_conn_broken(db) && (e = mr_derive_take(g)); n++) {
        const dflush_default *dd = default_named(e->how.rule);
        table t;
        mr_delayed_def *def = NULL;
        char why[300];
        switch (dflush_derive(db, e, dd ? dd->stats : NULL, &t, &def, why, sizeof why)) {
        case DERIVE_OK:
            if (!derived_push(&t)) {
                table_free(&t);
                mr_derive_def_free(def);
                mr_derive_fail(g, e, "myrewrite: out of memory deriving the delayed rule");
                break;
            }
            mr_derive_publish(g, e, def);
            break;
        case DERIVE_FAILED:
            if (e->state != MR_DERIVE_FAILED) /* a retry that fails again is not logged again */
                mr_error(0, "delayed %s: %s", e->how.rule, why);
            mr_derive_fail(g, e, why);
            break;
        default: mr_derive_untake(g, e); /* the connection broke: again after the reconnect */
        }
    }
}

/* At start, after a reconnect and every ADOPT_MS: registers the tables
 * whose staging tables a default rule would own, so rows a dead proxy
 * staged are flushed without a statement on them; and gives the tables
 * that could not be derived another try. */
static void adopt_staging(MYSQL *db)
{
    uint64_t now = mr_mono_ms();
    mr_derive_reg *g = mr_delayed_derived();
    if (!g || now < D.next_adopt_ms || !D.cur.nd)
        return;
    D.next_adopt_ms = now + ADOPT_MS;
    mr_derive_retry_failed(g);
    for (size_t i = 0; i < D.cur.nd && !mr_bg_conn_broken(db); i++)
        dflush_adopt(db, g, &D.cur.d[i], owned);
}

/* One round: adopts and derives what is pending, then flushes the tables
 * that are due, every table when `final` (chunking until deadline), and
 * those matching `filter` (NULL: none asked). False when a table asked for
 * failed. *wait: the time until the next table is due. */
static bool round_over(MYSQL *db, const char *filter, bool final, uint64_t deadline, uint64_t *wait)
{
    adopt_staging(db); /* before deriving: an adopted table is flushed in this very round */
    derive_pending(db);
    uint64_t now = mr_mono_ms();
    bool asked_ok = true;
    *wait = IDLE_MS;
    for (size_t i = 0; i < D.cur.n + D.derived.n && !mr_bg_conn_broken(db); i++) {
        table *t = i < D.cur.n ? &D.cur.t[i] : &D.derived.t[i - D.cur.n];
        bool mine = filter && mr_delayed_filter_matches(filter, &t->def);
        if (final || mine || now >= t->next_ms) {
            /* a round reads everything staged so far (in chunks), so a
             * requested flush is an ordinary round run now */
            bool ok = flush_table(db, t, final ? deadline : 0);
            asked_ok = asked_ok && (ok || !mine);
            now = mr_mono_ms();
            t->next_ms = now + t->def.flush_interval_ms;
        }
        uint64_t left = t->next_ms > now ? t->next_ms - now : 0;
        *wait = left < *wait ? left : *wait;
    }
    return asked_ok;
}

/* Each table not set up yet (its staging table perhaps not created) is set
 * up now, ahead of any flush: a start waits for this (mr_delayed_wait_staging)
 * so that no staged statement meets a missing staging table. */
static void setup_pending(MYSQL *db)
{
    static uint64_t last_asked_ms;
    uint64_t now = mr_mono_ms();
    pthread_mutex_lock(&D.lock);
    bool asked = D.setup_asked && now - last_asked_ms >= SETUP_ASKED_MS;
    if (asked)
        D.setup_asked = false;
    pthread_mutex_unlock(&D.lock);
    if (asked)
        last_asked_ms = now;
    for (size_t i = 0; i < D.cur.n && !mr_bg_conn_broken(db); i++) {
        table *t = &D.cur.t[i];
        if (asked)
            check_dropped(db, t, false); /* a staged statement failed: here, perhaps */
        if (!t->ready && (asked || now >= t->setup_after_ms) && !dflush_setup_table(db, t))
            t->setup_after_ms = mr_mono_ms() + SETUP_RETRY_MS;
    }
    pthread_mutex_lock(&D.lock);
    D.staging_checks++;
    pthread_cond_broadcast(&D.done_cond);
    pthread_mutex_unlock(&D.lock);
}

static uint64_t tick(MYSQL *db, void *arg)
{
    (void)arg;
    adopt_tables(db);
    setup_pending(db);
    char filter[sizeof D.flush_filter];
    pthread_mutex_lock(&D.lock);
    bool final = D.final_wanted;
    uint64_t deadline = D.deadline_ms;
    uint64_t asked = D.flush_asked;
    bool asked_now = asked > D.flush_done;
    memcpy(filter, D.flush_filter, sizeof filter);
    pthread_mutex_unlock(&D.lock);
    uint64_t wait;
    round_over(db, asked_now ? filter : NULL, final, deadline, &wait);
    if ((final || asked_now) && !mr_bg_conn_broken(db)) {
        pthread_mutex_lock(&D.lock);
        D.final_done = D.final_done || final;
        if (asked > D.flush_done)
            D.flush_done = asked;
        pthread_cond_broadcast(&D.done_cond);
        pthread_mutex_unlock(&D.lock);
    }
    if (!D.cur.n && !D.derived.n && !D.cur.nd)
        return MR_BG_NOTHING_DUE; /* no delayed rules left: the connection may go */
    return wait;
}

/* ---- FLUSH DELAYED from a client: a job ----------------------------------------- */

/* The round runs on the flusher's thread, in its job queue: nobody waits
 * for it. A connection that broke under it runs it again once back. */
static bool run_flush_job(MYSQL *db, void *arg)
{
    dflush_job *j = arg;
    adopt_tables(db);
    uint64_t wait;
    bool ok = round_over(db, j->filter, false, 0, &wait);
    if (mr_bg_conn_broken(db))
        return false;
    dflush_job_done(j, ok ? 0 : 2);
    return true;
}

bool mr_delayed_flush_job(const char *table_filter, mr_delayed_flush_done done, void *arg)
{
    pthread_mutex_lock(&D.lock);
    mr_bgconn *bg = D.bg;
    pthread_mutex_unlock(&D.lock);
    return dflush_job_submit(bg, run_flush_job, table_filter, done, arg);
}

/* ---- main thread ------------------------------------------------------------------- */

static bool start_thread(const mr_proxy *p)
{
    static const mr_bgconn_ops ops = {
        .name = "delayed flush", .on_connect = on_connect, .tick = tick, .arg = NULL};
    mr_bgconn *bg = mr_bgconn_start(p->cfg, p->backend_name, &ops);
    pthread_mutex_lock(&D.lock); /* read by the other threads' calls */
    D.bg = bg;
    pthread_mutex_unlock(&D.lock);
    return bg != NULL;
}

void mr_delayed_setup_now(void)
{
    pthread_mutex_lock(&D.lock);
    mr_bgconn *bg = D.bg;
    D.setup_asked = true;
    pthread_mutex_unlock(&D.lock);
    if (bg)
        mr_bgconn_wake(bg);
}

bool mr_delayed_wait_staging(uint64_t timeout_ms)
{
    uint64_t end = mr_mono_ms() + timeout_ms;
    pthread_mutex_lock(&D.lock);
    mr_bgconn *bg = D.bg;
    /* in slices: a failed connect is seen by polling, nobody signals it */
    while (bg && D.staging_checks == 0 && mr_bgconn_connect_failures(bg) == 0 &&
           mr_mono_ms() < end) {
        struct timespec slice = mr_deadline_in(CLOCK_REALTIME, STAGING_POLL_MS);
        pthread_cond_timedwait(&D.done_cond, &D.lock, &slice);
    }
    bool done = !bg || D.staging_checks > 0;
    pthread_mutex_unlock(&D.lock);
    return done;
}

void mr_delayed_wake(void)
{
    pthread_mutex_lock(&D.lock);
    mr_bgconn *bg = D.bg;
    D.flush_asked++;
    D.flush_filter[0] = '\0'; /* all tables: a superset of any filter asked concurrently */
    pthread_mutex_unlock(&D.lock);
    if (bg)
        mr_bgconn_wake(bg);
}

void mr_delayed_configure(const mr_proxy *p, const mr_ruleset *rs)
{
    tables ts;
    if (!tables_from(&ts, rs)) {
        mr_error(0, "delayed: out of memory reading the delayed rules; they stay as they were");
        return;
    }
    if ((ts.n || ts.nd) && !D.bg && !start_thread(p)) {
        mr_error(0, "delayed: no own connection, so nothing is flushed: staged rows wait in "
                    "their staging tables until proxy_user is set");
        tables_free(&ts);
        return;
    }
    pthread_mutex_lock(&D.lock);
    if (D.have_next)
        tables_free(&D.next);
    D.next = ts;
    D.have_next = true;
    pthread_mutex_unlock(&D.lock);
    if (D.bg)
        mr_bgconn_wake(D.bg);
}

void mr_delayed_stop(uint64_t drain_ms)
{
    if (!D.bg)
        return;
    struct timespec until = mr_deadline_in(CLOCK_REALTIME, drain_ms);
    pthread_mutex_lock(&D.lock);
    D.final_wanted = true;
    D.final_done = false;
    D.deadline_ms = mr_mono_ms() + drain_ms;
    pthread_mutex_unlock(&D.lock);
    mr_bgconn_wake(D.bg);
    pthread_mutex_lock(&D.lock);
    while (mr_bgconn_usable(D.bg) && !D.final_done &&
           pthread_cond_timedwait(&D.done_cond, &D.lock, &until) == 0)
        ;
    bool done = D.final_done;
    pthread_mutex_unlock(&D.lock);
    if (!done)
        mr_warn(0, "delayed: final flush not done within the shutdown timeout; staged rows stay "
                   "in their staging tables for the next flush");
    mr_bgconn_stop(D.bg);
    D.bg = NULL;
    tables_free(&D.cur);
    tables_free(&D.derived);
    if (D.have_next)
        tables_free(&D.next);
    D.have_next = false;
    D.final_wanted = false;
}

/* ---- shared with delayed/flush/flush_locked.c and delayed/flush/flush_derive.c -----------------
 */

MYSQL_RES *dflush_schema_query(MYSQL *db, const table *t, const char *sql_head, const char *name)
{
    return schema_query(db, t, sql_head, name);
}

bool dflush_table_from_def(table *t, const mr_delayed_def *def, const char *rule,
                           struct mr_rule_stats *stats)
{
    return table_from_def(t, def, rule, stats);
}

void dflush_table_free(table *t) { table_free(t); }

bool dflush_exec(MYSQL *db, const mr_buf *b, const table *t, const char *what)
{
    return exec_buf(db, b, t, what);
}

void dflush_put_table(mr_buf *b, const char *schema, const char *name)
{
    put_table(b, schema, name);
}

long dflush_apply(MYSQL *db, table *t, uint64_t *written, long *rejected)
{
    chunk c;
    memset(&c, 0, sizeof c);
    uint64_t keys_before = mr_stat_get(&D.stats.keys); /* +n per statement that succeeded */
    bool ok = read_rows(db, t, &c) && load_rows(db, t, &c), isolate = false;
    refused *rs = NULL;
    size_t nr = 0;
    *rejected = 0;
    if (ok && c.nrows) {
        dchunk_aggregate(t, &c);
        /* No transaction here: a statement over many keys that the server
         * refuses part way (1264 at its second row, say) has already written
         * the rows before it, and nothing says which they were, so a retry
         * of the rest would apply some twice. One statement per key instead:
         * the server writes a single row whole or not at all. */
        isolate = true;
        ok = reject_setup(db, t) && apply_isolating(db, t, &c, &rs, &nr);
    }
    *written = mr_stat_get(&D.stats.keys) - keys_before + (isolate ? nr : 0);
    for (size_t i = 0; ok && i < nr; i++)
        *rejected += (long)c.keys[rs[i].key].nrows;
    if (ok)
        reject_note(t, &c, rs, nr);
    long n = ok ? (long)c.nrows : -1;
    free(rs);
    chunk_free(&c);
    return n;
}

void dflush_count_chunk(const table *t, long n)
{
    if (n <= 0)
        return;
    mr_stat_add(&D.stats.chunks, 1);
    mr_stat_add(&D.stats.rows, (uint64_t)n);
    struct mr_rule_stats *rows[2] = {t->stats, t->def.table_stats};
    for (int k = 0; k < 2; k++)
        if (rows[k])
            mr_stat_add(&rows[k]->flushed, (uint64_t)n);
}

void dflush_count_error(const table *t, const char *what, unsigned code, const char *msg)
{
    mr_stat_add(&D.stats.errors, 1);
    struct mr_rule_stats *rows[2] = {t->stats, t->def.table_stats};
    for (int k = 0; k < 2; k++) {
        if (!rows[k])
            continue;
        mr_stat_add(&rows[k]->errors, 1);
        mr_rule_stats_set_error(rows[k], what, code, msg);
        atomic_store_explicit(&rows[k]->last_error_at, mr_unix_ms(), memory_order_relaxed);
    }
}
