/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/exec.c - what every step of the flusher runs on its
 * connection: a statement, logged and counted when it fails; a table's row
 * of information_schema; whether a table exists; the named lock that lets
 * one proxy at a time flush a table. And the counters of SHOW DELAYED and
 * /metrics (mr_delayed_stats).
 *
 * Flusher thread; the counters are read from any thread.
 */
#include "myrewrite/delayed/flush.h"

#include <mysql.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "delayed/flush/flush_impl.h"
#include "myrewrite/base/buf.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/net/bgconn.h"
#include "myrewrite/sql/quote.h"
#include "myrewrite/stats/rule_stats.h"

static mr_delayed_stats stats; /* written by the flusher, read by any thread */

const mr_delayed_stats *mr_delayed_stats_get(void) { return &stats; }

mr_delayed_stats *dflush_stats(void) { return &stats; }

void dflush_put_table(mr_buf *b, const char *schema, const char *name)
{
    dchunk_put_table(b, schema, name);
}

/* `<name>_set`: where a staged row keeps the value of SET name = literal. */
void dflush_put_set_ident(mr_buf *b, const char *name)
{
    mr_sql_put_ident_suffixed(b, name, "_set");
}

void dflush_put_fmt(mr_buf *b, const char *fmt, ...)
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
bool dflush_exec(MYSQL *db, const mr_buf *b, const table *t, const char *what)
{
    if (mr_bg_query_buf(db, b, t->rule, what))
        return true;
    dflush_count_error(t, what, mysql_errno(db), mysql_error(db));
    return false;
}

bool dflush_exec_str(MYSQL *db, const char *sql, const table *t, const char *what)
{
    mr_buf b = {.data = (uint8_t *)(uintptr_t)sql, .len = strlen(sql)};
    return dflush_exec(db, &b, t, what);
}

/* The first row of a query on (schema, name) strings; NULL when none. */
MYSQL_RES *dflush_schema_query(MYSQL *db, const table *t, const char *sql_head, const char *name)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, sql_head);
    mr_buf_put_str(&b, " WHERE TABLE_SCHEMA = ");
    mr_sql_put_literal(&b, t->def.schema);
    mr_buf_put_str(&b, " AND TABLE_NAME = ");
    mr_sql_put_literal(&b, name);
    MYSQL_RES *res =
        dflush_exec(db, &b, t, "reading information_schema") ? mysql_store_result(db) : NULL;
    mr_buf_free(&b);
    return res;
}

/* 1: table `name` of t's schema exists, 0: it does not, -1: unknown. */
int dflush_table_exists(MYSQL *db, const table *t, const char *name)
{
    MYSQL_RES *res = dflush_schema_query(db, t, "SELECT 1 FROM information_schema.TABLES", name);
    int rc = res ? mysql_num_rows(res) > 0 : -1;
    mysql_free_result(res);
    return rc;
}

/* GET_LOCK / RELEASE_LOCK on the table's lock name; true when it returned 1. */
bool dflush_named_lock(MYSQL *db, const table *t, const char *fn)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "SELECT ");
    mr_buf_put_str(&b, fn);
    mr_buf_put(&b, "(", 1);
    mr_sql_put_literal(&b, t->lock_name);
    mr_buf_put_str(&b, strcmp(fn, "GET_LOCK") == 0 ? ", 0)" : ")");
    bool ok = dflush_exec(db, &b, t, fn);
    mr_buf_free(&b);
    MYSQL_RES *res = ok ? mysql_store_result(db) : NULL;
    MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
    ok = row && row[0] && strcmp(row[0], "1") == 0;
    mysql_free_result(res);
    return ok;
}

void dflush_count_chunk(const table *t, long n)
{
    if (n <= 0)
        return;
    mr_stat_add(&stats.chunks, 1);
    mr_stat_add(&stats.rows, (uint64_t)n);
    struct mr_rule_stats *rows[2] = {t->stats, t->def.table_stats};
    for (int k = 0; k < 2; k++)
        if (rows[k])
            mr_stat_add(&rows[k]->flushed, (uint64_t)n);
}

void dflush_count_error(const table *t, const char *what, unsigned code, const char *msg)
{
    mr_stat_add(&stats.errors, 1);
    struct mr_rule_stats *rows[2] = {t->stats, t->def.table_stats};
    for (int k = 0; k < 2; k++) {
        if (!rows[k])
            continue;
        mr_stat_add(&rows[k]->errors, 1);
        mr_rule_stats_set_error(rows[k], what, code, msg);
        atomic_store_explicit(&rows[k]->last_error_at, mr_unix_ms(), memory_order_relaxed);
    }
}
