/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/release_sql.c - builds the statements of queue rules (see queue/release_sql.h).
 *
 * Pure, any thread. Owns nothing beyond the strings it returns.
 */
#include "myrewrite/queue/release_sql.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/sql/digest.h"
#include "myrewrite/sql/quote.h"

static int is_integer(const char *v)
{
    const char *p = v + (*v == '-');
    if (!*p || strlen(p) > 20)
        return 0;
    for (; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

void mr_sql_put_value(mr_buf *b, const char *v)
{
    if (is_integer(v))
        mr_buf_put_str(b, v);
    else if (strcmp(v, "NULL") == 0 || strcmp(v, "null") == 0)
        mr_buf_put_str(b, "NULL");
    else
        mr_sql_put_literal(b, v);
}

/* Hands the buffer's text over as a C string, or NULL. */
static char *take(mr_buf *b)
{
    mr_buf_put(b, "", 1);
    char *s = b->failed ? NULL : strdup((const char *)b->data);
    mr_buf_free(b);
    return s;
}

static void put_u64(mr_buf *b, uint64_t v)
{
    char num[24];
    snprintf(num, sizeof num, "%" PRIu64, v);
    mr_buf_put_str(b, num);
}

/* The value of placeholder `name` (between the braces), written to b. */
typedef void (*put_fn)(mr_buf *b, const char *name, size_t len, const void *arg);

/* Copies tpl with every {name} that `put` knows replaced; other braces are
 * copied as they are. */
static char *fill(const char *tpl, const char *const *names, put_fn put, const void *arg)
{
    mr_buf b;
    mr_buf_init(&b);
    for (const char *p = tpl; *p;) {
        const char *open = strchr(p, '{');
        size_t n = open ? (size_t)(open - p) : strlen(p);
        mr_buf_put(&b, p, n);
        p += n;
        if (!open)
            break;
        size_t k = 0, len = 0;
        for (; names[k]; k++) {
            len = strlen(names[k]);
            if (strncmp(open + 1, names[k], len) == 0 && open[1 + len] == '}')
                break;
        }
        if (names[k]) {
            put(&b, names[k], len, arg);
            p += len + 2;
        } else {
            mr_buf_put(&b, "{", 1);
            p++;
        }
    }
    return take(&b);
}

static void put_owner(mr_buf *b, const char *name, size_t len, const void *arg)
{
    (void)name;
    (void)len;
    put_u64(b, *(const uint64_t *)arg);
}

char *mr_queue_fill_release(const char *tpl, uint64_t owner)
{
    static const char *const names[] = {"owner", NULL};
    return fill(tpl, names, put_owner, &owner);
}

typedef struct reap_args {
    const uint64_t *live;
    size_t nlive;
    const char *cutoff;
} reap_args;

static void put_reap(mr_buf *b, const char *name, size_t len, const void *arg)
{
    const reap_args *a = arg;
    if (len == 6 && memcmp(name, "cutoff", 6) == 0) {
        mr_buf_put_str(b, "TIMESTAMP");
        mr_sql_put_literal(b, a->cutoff);
        return;
    }
    for (size_t i = 0; i < a->nlive; i++) {
        if (i)
            mr_buf_put(b, ",", 1);
        put_u64(b, a->live[i]);
    }
}

char *mr_queue_fill_reap(const char *tpl, const uint64_t *live, size_t nlive, const char *cutoff)
{
    static const char *const names[] = {"live", "cutoff", NULL};
    if (!nlive)
        return NULL; /* the proxy's own connection is always live: never empty */
    reap_args a = {live, nlive, cutoff};
    return fill(tpl, names, put_reap, &a);
}

char *mr_queue_cutoff_sql(const mr_queue_def *q)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "SELECT NOW(6) - INTERVAL ");
    put_u64(&b, q->timeout_ms * 1000);
    mr_buf_put_str(&b, " MICROSECOND");
    return take(&b);
}

static void put_table(mr_buf *b, const mr_queue_def *q)
{
    mr_sql_put_ident(b, q->schema);
    mr_buf_put(b, ".", 1);
    mr_sql_put_ident(b, q->table);
}

/* UPDATE ... SET status = unclaimed, owner = unclaimed_owner
 * WHERE owner = N AND status = claimed */
static void put_release(mr_buf *b, const mr_queue_def *q, uint64_t owner)
{
    mr_buf_put_str(b, "UPDATE ");
    put_table(b, q);
    mr_buf_put_str(b, " SET ");
    mr_sql_put_ident(b, q->status_column);
    mr_buf_put_str(b, " = ");
    mr_sql_put_literal(b, q->unclaimed_value);
    mr_buf_put_str(b, ", ");
    mr_sql_put_ident(b, q->owner_column);
    mr_buf_put_str(b, " = ");
    mr_sql_put_value(b, q->unclaimed_owner);
    mr_buf_put_str(b, " WHERE ");
    mr_sql_put_ident(b, q->owner_column);
    mr_buf_put_str(b, " = ");
    put_u64(b, owner);
    mr_buf_put_str(b, " AND ");
    mr_sql_put_ident(b, q->status_column);
    mr_buf_put_str(b, " = ");
    mr_sql_put_literal(b, q->claimed_value);
}

char *mr_queue_release_sql(const mr_queue_def *q, uint64_t owner)
{
    if (q->release)
        return mr_queue_fill_release(q->release, owner);
    mr_buf b;
    mr_buf_init(&b);
    put_release(&b, q, owner);
    return take(&b);
}

static void put_age(mr_buf *b, const mr_queue_def *q)
{
    mr_buf_put_str(b, " AND ");
    mr_sql_put_ident(b, q->claimed_at_column);
    mr_buf_put_str(b, " < NOW(6) - INTERVAL ");
    put_u64(b, q->timeout_ms * 1000);
    mr_buf_put_str(b, " MICROSECOND");
}

char *mr_queue_reap_find_sql(const mr_queue_def *q)
{
    if (q->release || !q->claimed_at_column)
        return NULL;
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, "SELECT DISTINCT ");
    mr_sql_put_ident(&b, q->owner_column);
    mr_buf_put_str(&b, " FROM ");
    put_table(&b, q);
    mr_buf_put_str(&b, " WHERE ");
    mr_sql_put_ident(&b, q->status_column);
    mr_buf_put_str(&b, " = ");
    mr_sql_put_literal(&b, q->claimed_value);
    put_age(&b, q);
    return take(&b);
}

char *mr_queue_reap_sql(const mr_queue_def *q, uint64_t owner)
{
    if (q->release || !q->claimed_at_column)
        return NULL;
    mr_buf b;
    mr_buf_init(&b);
    put_release(&b, q, owner);
    put_age(&b, q);
    return take(&b);
}

char *mr_queue_lock_sql(const mr_queue_def *q, int get)
{
    char name[200];
    int n = snprintf(name, sizeof name, "myrewrite_reaper_%s.%s", q->schema, q->table);
    if (n < 0 || n > 64) {
        char whole[300];
        snprintf(whole, sizeof whole, "%s.%s", q->schema, q->table);
        snprintf(name, sizeof name, "myrewrite_reaper_%016" PRIx64,
                 sql_hash64(whole, strlen(whole)));
    }
    mr_buf b;
    mr_buf_init(&b);
    mr_buf_put_str(&b, get ? "SELECT GET_LOCK(" : "SELECT RELEASE_LOCK(");
    mr_sql_put_literal(&b, name);
    mr_buf_put_str(&b, get ? ", 0)" : ")");
    return take(&b);
}
