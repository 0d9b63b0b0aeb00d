/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/flush/reject.c - the dead-letter table of delayed rules and the
 * counters of what went there (delayed/reject.h).
 */
#include "myrewrite/delayed/reject.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/base/clock.h"
#include "myrewrite/sql/quote.h"

#define TABLES_MAX 512

typedef struct rtable {
    char name[130]; /* schema.table */
    uint64_t total; /* rows rejected so far */
    uint64_t round; /* rows rejected by its latest round */
    unsigned last_code;
    char last_msg[160];
} rtable;

static struct {
    pthread_mutex_t lock;
    rtable t[TABLES_MAX];
    size_t n;
    mr_dreject_key recent[MR_DREJECT_RECENT]; /* a ring: next is the oldest */
    size_t next, nrecent;
} R = {.lock = PTHREAD_MUTEX_INITIALIZER};

bool mr_dreject_data_error(unsigned code)
{
    switch (code) {
    case 1048: /* column cannot be null */
    case 1062: /* duplicate key (an upsert's unique key other than the rule's) */
    case 1264: /* out of range value */
    case 1265: /* data truncated */
    case 1292: /* incorrect value */
    case 1364: /* field has no default value (an upsert's insert) */
    case 1366: /* incorrect integer/decimal/string value */
    case 1406: /* data too long */
    case 1451: /* a foreign key refuses the delete */
    case 1452: /* a foreign key refuses the insert */
    case 1690: /* BIGINT (UNSIGNED) value out of range */
    case 3819: /* check constraint (MySQL) */
    case 4025: /* CONSTRAINT ... failed (MariaDB) */ return true;
    default: return false;
    }
}

void mr_dreject_table_name(const char *table, char *out, size_t cap)
{
    snprintf(out, cap, "%.47s_delayed_rejected", table);
}

static void put_dead_letter(mr_buf *b, const char *schema, const char *table)
{
    char name[80];
    mr_dreject_table_name(table, name, sizeof name);
    mr_sql_put_ident(b, schema);
    mr_buf_put(b, ".", 1);
    mr_sql_put_ident(b, name);
}

void mr_dreject_put_create(mr_buf *b, const char *schema, const char *table)
{
    mr_buf_put_str(b, "CREATE TABLE IF NOT EXISTS ");
    put_dead_letter(b, schema, table);
    mr_buf_put_str(b, " (`id` BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                      "`key_values` TEXT NOT NULL, `change` TEXT NOT NULL, "
                      "`staged_rows` BIGINT UNSIGNED NOT NULL, `error_code` INT UNSIGNED NOT "
                      "NULL, `error_message` VARCHAR(512) NOT NULL, `rejected_at` TIMESTAMP(6) "
                      "NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB");
}

void mr_dreject_put_insert(mr_buf *b, const char *schema, const char *table, const char *key,
                           const char *change, uint64_t rows, unsigned code, const char *msg)
{
    char nums[64];
    mr_buf_put_str(b, "INSERT INTO ");
    put_dead_letter(b, schema, table);
    mr_buf_put_str(b, " (`key_values`, `change`, `staged_rows`, `error_code`, `error_message`) "
                      "VALUES (");
    mr_sql_put_literal(b, key);
    mr_buf_put(b, ", ", 2);
    mr_sql_put_literal(b, change);
    snprintf(nums, sizeof nums, ", %" PRIu64 ", %u, ", rows, code);
    mr_buf_put_str(b, nums);
    mr_sql_put_literal(b, msg);
    mr_buf_put(b, ")", 1);
}

/* ---- counters (under R.lock) ---- */

static rtable *find(const char *schema, const char *table, bool create)
{
    char name[130];
    snprintf(name, sizeof name, "%.64s.%.64s", schema ? schema : "", table);
    for (size_t i = 0; i < R.n; i++)
        if (strcmp(R.t[i].name, name) == 0)
            return &R.t[i];
    if (!create || R.n == TABLES_MAX)
        return NULL;
    rtable *t = &R.t[R.n++];
    memset(t, 0, sizeof *t);
    memcpy(t->name, name, sizeof name);
    return t;
}

void mr_dreject_round_begin(const char *schema, const char *table)
{
    pthread_mutex_lock(&R.lock);
    rtable *t = find(schema, table, false);
    if (t)
        t->round = 0;
    pthread_mutex_unlock(&R.lock);
}

void mr_dreject_note(const char *schema, const char *table, const char *key, const char *change,
                     uint64_t rows, unsigned code, const char *msg)
{
    pthread_mutex_lock(&R.lock);
    rtable *t = find(schema, table, true);
    if (t) {
        t->total += rows;
        t->round += rows;
        t->last_code = code;
        snprintf(t->last_msg, sizeof t->last_msg, "%s", msg);
    }
    mr_dreject_key *k = &R.recent[R.next];
    snprintf(k->table, sizeof k->table, "%.64s.%.64s", schema ? schema : "", table);
    snprintf(k->key, sizeof k->key, "%s", key);
    snprintf(k->change, sizeof k->change, "%s", change);
    snprintf(k->msg, sizeof k->msg, "%s", msg);
    k->rows = rows;
    k->code = code;
    k->at_ms = mr_unix_ms();
    R.next = (R.next + 1) % MR_DREJECT_RECENT;
    if (R.nrecent < MR_DREJECT_RECENT)
        R.nrecent++;
    pthread_mutex_unlock(&R.lock);
}

uint64_t mr_dreject_total(const char *name)
{
    uint64_t n = 0;
    pthread_mutex_lock(&R.lock);
    for (size_t i = 0; i < R.n && !n; i++)
        if (strcmp(R.t[i].name, name) == 0)
            n = R.t[i].total;
    pthread_mutex_unlock(&R.lock);
    return n;
}

/* Does schema.table `name` match a FLUSH DELAYED filter ("", `t`, `schema.t`)? */
static bool matches(const char *filter, const char *name)
{
    if (!filter || !filter[0])
        return true;
    if (strchr(filter, '.'))
        return strcmp(filter, name) == 0;
    const char *dot = strchr(name, '.');
    return dot && strcmp(dot + 1, filter) == 0;
}

uint64_t mr_dreject_round_report(const char *filter, char *where, size_t cap)
{
    uint64_t n = 0;
    size_t used = 0;
    where[0] = '\0';
    pthread_mutex_lock(&R.lock);
    for (size_t i = 0; i < R.n; i++) {
        const rtable *t = &R.t[i];
        if (!t->round || !matches(filter, t->name))
            continue;
        n += t->round;
        const char *dot = strchr(t->name, '.');
        int w = snprintf(where + used, cap - used,
                         "%s%s: %" PRIu64 " row(s), last error %u %s; they are in %.*s.%.47s"
                         "_delayed_rejected",
                         used ? "; " : "", t->name, t->round, t->last_code, t->last_msg,
                         (int)(dot - t->name), t->name, dot + 1);
        if (w > 0)
            used = (size_t)w < cap - used ? used + (size_t)w : cap - 1;
    }
    pthread_mutex_unlock(&R.lock);
    return n;
}

bool mr_dreject_table_at(size_t i, char *name, size_t cap, uint64_t *rows)
{
    pthread_mutex_lock(&R.lock);
    bool ok = i < R.n;
    if (ok) {
        snprintf(name, cap, "%s", R.t[i].name);
        *rows = R.t[i].total;
    }
    pthread_mutex_unlock(&R.lock);
    return ok;
}

size_t mr_dreject_recent(const char *table, mr_dreject_key *out, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&R.lock);
    for (size_t k = 0; k < R.nrecent && n < cap; k++) {
        const mr_dreject_key *e =
            &R.recent[(R.next + MR_DREJECT_RECENT - 1 - k) % MR_DREJECT_RECENT];
        if (matches(table, e->table))
            out[n++] = *e;
    }
    pthread_mutex_unlock(&R.lock);
    return n;
}
