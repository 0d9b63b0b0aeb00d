/* SPDX-License-Identifier: Apache-2.0 */
/*
 * schema/cache.h - what the proxy knows about the backend's tables: for
 * each table a rule asked about, its description (schema/desc.h) and row
 * key, read from information_schema on a background thread with the
 * proxy's own connection (net/bgconn.h, `proxy_user`).
 *
 * Workers never wait for the server: mr_schema_cache_row_key copies the
 * cached key out under a mutex held for a hash lookup and a memcpy. A miss
 * queues the table for loading and answers MR_KEY_UNKNOWN at once; the
 * statement then goes on without the table's key (a paginate rule passes
 * it untouched; DELAYED parks it in its session until the key is loaded,
 * session/stmt/park_stmt.c). Tables that rules name without a key are queued as the
 * rules are loaded (mr_schema_cache_preload), so the first statements
 * rarely miss. A table that does not exist is read again after a second. Entries older than
 * schema_cache_ttl are still answered while a refresh is queued. At most schema_cache_max_tables
 * entries are kept; the least recently used one is dropped first.
 *
 * DDL that passes through the proxy (mr_schema_cache_ddl_begin at the
 * statement, _end when its response has ended) drops the tables it names
 * and holds them unknown until the server has answered, so no load can
 * read the table as it was before the change; DDL that names no table the
 * proxy can read drops the whole cache.
 *
 * Nothing is read that no rule asked for: only a lookup (made by a rule in
 * force that needs the table's key) loads a table, and DDL reloads only
 * tables looked up since the last rule reload. The loader's connection is
 * lazy (net/bgconn.h): with no such rule the proxy sends nothing of its own.
 * A table without a usable key is logged once, again only after DDL on it
 * or a rule reload.
 *
 * Threads: start/stop on the main thread; lookups and DDL notes from any
 * thread (workers); loads on the cache's own bgconn thread.
 */
#ifndef MYREWRITE_SCHEMA_CACHE_H
#define MYREWRITE_SCHEMA_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "myrewrite/base/config.h"
#include "myrewrite/base/counters.h"
#include "myrewrite/schema/desc.h"

typedef struct mr_schema_cache_stats {
    mr_counter hits;          /* lookups answered from a loaded entry */
    mr_counter misses;        /* lookups that found nothing loaded (load queued) */
    mr_counter loads;         /* tables read from information_schema */
    mr_counter load_errors;   /* loads that failed (retried on the next miss) */
    mr_counter invalidations; /* entries dropped by DDL */
    mr_counter evictions;     /* entries dropped to stay within max_tables */
} mr_schema_cache_stats;

/* Starts the loader thread when cfg has a proxy_user; without one every
 * lookup answers MR_KEY_UNKNOWN ("no proxy_user: schema cache off"). */
void mr_schema_cache_start(const mr_config *cfg, const char *backend);
void mr_schema_cache_stop(void);
/* The lookup as a rules source (mr_stmt_ctx.schema_src). */
const mr_schema_source *mr_schema_cache_source(void);
/* Non-blocking lookup (see the top of this file). */
mr_key_status mr_schema_cache_row_key(const char *schema, const char *table, mr_row_key *out);
/* A column's range (schema/range.h), non-blocking like the key lookup: a
 * miss queues the table's load and answers MR_RANGE_UNKNOWN. */
mr_range_status mr_schema_cache_column_range(const char *schema, const char *table,
                                             const char *column, mr_col_range *out);
/* A DDL statement in COM_QUERY text: notes the tables it changes and drops
 * them; returns a handle for mr_schema_cache_ddl_end (0: not DDL). Any thread. */
uint64_t mr_schema_cache_ddl_begin(const char *sql, size_t len, unsigned lex_flags,
                                   const char *default_schema);
/* The DDL's response ended (or its session closed): the tables may load again. */
void mr_schema_cache_ddl_end(uint64_t handle);
const mr_schema_cache_stats *mr_schema_cache_stats_get(void);
/* fn(arg) is called on the loader thread after each table it installs
 * (not after a failed load). Main thread; once (NULL, NULL) returns, fn
 * runs no more, so what arg points to may go. */
void mr_schema_cache_on_load(void (*fn)(void *arg), void *arg);
/* Queues the load of every table a delayed or paginate rule of rs names
 * explicitly and needs the key of (no `key` given). Main thread, at start
 * and after each reload. */
struct mr_ruleset;
void mr_schema_cache_preload(const struct mr_ruleset *rs);
/* A new rule set is in force: tables asked about so far are no longer
 * reloaded after DDL until a rule asks again, and keyless tables are
 * reported again. Any thread. */
void mr_schema_cache_rules_changed(void);

/* Reads one table's description from information_schema on `db`, blocking:
 * background threads only (the cache's loader, the DELAYED flusher). NULL
 * when a query fails (logged); a table that does not exist gives a
 * description with exists = false. */
struct st_mysql;
mr_table_desc *mr_schema_read(struct st_mysql *db, const char *schema, const char *table);

#endif
