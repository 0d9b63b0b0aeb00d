/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/rule.h - a delayed rule's settings ([delayed NAME] in a rules file).
 *
 * Pure data, any thread: filled in by the rule loader, immutable once the
 * rule set is published.
 */
#ifndef MYREWRITE_DELAYED_RULE_H
#define MYREWRITE_DELAYED_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/rules/kind.h"

#include "myrewrite/base/counters.h"

struct mr_rule_stats;

/* What a delayed rule does with deltas for keys absent from the table. */
typedef enum mr_delayed_missing {
    MR_DELAYED_MISSING_IGNORE, /* dropped */
    MR_DELAYED_MISSING_INSERT, /* INSERT ... ON DUPLICATE KEY UPDATE */
} mr_delayed_missing;

/* Where a delayed rule keeps its deltas until the flush. */
typedef enum mr_delayed_mode {
    MR_DELAYED_STAGED, /* an INSERT into the staging table on the client's connection */
    MR_DELAYED_MEMORY, /* the proxy's memory (delayed/mem.h); OK at once */
} mr_delayed_mode;

/* A delayed rule's time bucket: the key column the proxy fills with the
 * UTC day or hour a statement was acknowledged (delayed/bucket.h). */
typedef enum mr_delayed_bucket {
    MR_BUCKET_NONE,
    MR_BUCKET_DAY,  /* 'YYYY-MM-DD' */
    MR_BUCKET_HOUR, /* 'YYYY-MM-DD HH:00:00' */
} mr_delayed_bucket;

struct mr_dmem_table;

/* A delayed rule's settings (rules/README.md, "delayed"); immutable once
 * the set is published (`mem` is set by mr_dmem_configure before that).
 * Names are as written in the file, unquoted, without backticks. */
/* The statement side's way to a memory table's learned key (delayed/mem_keys.h):
 * take is mr_dmem_keys_take on the store arg points at. A port, so that the
 * pure layers call into the store without linking it. */
typedef struct mr_key_port {
    bool (*take)(void *arg, const char *schema, const char *table, char *const *cols, size_t n,
                 char *err, size_t errlen);
    void *arg;
} mr_key_port;

/* What this proxy holds for one key of a memory table, for read_pending:
 * per counter column c (of def->columns) the adds not in a flush in flight
 * (held[c]) and those in the chunk the flusher has sent and whose COMMIT
 * has not returned (inflight[c]). That chunk wrote `chunk` into the row
 * `proxy` of `schema`.myrewrite_read_marks in its own transaction, so a
 * read that sees the row at chunk or later sees the chunk applied. chunk
 * 0: no such chunk, or no marks table (inflight is then added to held). */
typedef struct mr_read_held {
    int64_t held[MR_RULE_MAX_NAMES];
    int64_t inflight[MR_RULE_MAX_NAMES];
    uint64_t chunk;
    uint64_t proxy;
    bool gone; /* a DELETE DELAYED is held for the key */
} mr_read_held;

/* read_pending in memory mode: what the memory table arg points at holds
 * for one key (delayed/mem/mem.c, read_sum); key is one encoded tuple
 * (mr_dmem_batch.keys). False when a sum passes 64 bits. A port, like
 * mr_key_port. */
typedef struct mr_read_port {
    bool (*sum)(void *arg, const char *key, size_t klen, size_t ncols, mr_read_held *out);
    /* Does the table's schema have the marks table now (a prepared read may
     * name it)? proxy: this proxy's row in it. */
    bool (*marks)(void *arg, uint64_t *proxy);
    void *arg;
} mr_read_port;

typedef struct mr_delayed_def {
    char *schema; /* from `table = s.t` or the `schema` key */
    char *table;
    char **keys; /* key columns, in the order of the `key` list */
    size_t nkeys;
    char **columns; /* counter columns UPDATE DELAYED may add to */
    size_t ncolumns;
    char *staging_table;        /* default <table>_delayed, same schema */
    char *staging_engine;       /* default InnoDB */
    uint64_t flush_interval_ms; /* default 1000 */
    uint64_t flush_rows;        /* staged rows per flush transaction; default 10000 */
    uint64_t flush_early;       /* wake the flusher once this many staged rows (staged) or
                                   keys (memory) wait; 0 = only the interval */
    mr_delayed_missing missing;
    mr_delayed_mode mode;
    char **set_columns; /* columns `SET col = literal` may write (last write wins) */
    size_t nset_columns;
    uint64_t memory_max_keys;  /* memory mode: entries held (one per key per shard, plus the
                                  flusher's) before statements needing new ones are refused */
    char *bucket_column;       /* key column the proxy fills with the bucket; NULL: none */
    mr_delayed_bucket bucket;  /* MR_BUCKET_NONE exactly when bucket_column is NULL */
    struct mr_dmem_table *mem; /* memory mode: its in-memory table; NULL without a flusher */
    const struct mr_key_port *mem_keys;  /* memory mode without key: the key that table
                                   learned from the schema (delayed/mem_keys.h); NULL otherwise */
    const struct mr_read_port *mem_read; /* memory mode with read_pending: the deltas the
                                  table holds for a key; NULL otherwise (no flusher, a dry run) */
    mr_counter *staged_rows;             /* staged mode with flush_early: rows staged so far (any
                                            worker, atomic adds); NULL otherwise */
    bool derive;               /* a default rule (`table = s.*` or `*`): each table's rule is
                                  derived from the schema at run time (delayed/derive.h);
                                  table is "*", schema the schema or "*" for any, and
                                  staging_table a pattern holding {table}; no keys, columns */
    bool group_commit;         /* staged: autocommit statements of many sessions are staged
                                  together, one multi-row INSERT per batch on the proxy's own
                                  connection (delayed/group.h); default no */
    uint64_t group_wait_us;    /* how long a batch waits for more once sessions write
                                  concurrently; default 200 */
    uint64_t group_rows;       /* staging rows per batch at most; default 1000 */
    uint64_t group_bytes;      /* VALUES bytes per batch at most; default 1 MiB */
    uint64_t group_timeout_ms; /* a batch not done by then is cut (delayed/group.h);
                                  default 10 s */
    bool read_pending;         /* a point read of the counters by the full key through the
                                  proxy adds the deltas still pending (delayed/read_sql.h,
                                  delayed/statement/read_take.c); default no */
    struct mr_rule_stats *table_stats; /* a rule a default rule derived: its table's own
                                  SHOW DELAYED row (counted besides the default rule's); NULL
                                  for the rules of rule files */
} mr_delayed_def;

/* ---- the kind (delayed/statement/rule_kind.c) ---- */

extern const mr_rule_kind mr_delayed_kind;
/* [delayed NAME]: checks the section and fills r->delayed (delayed/rule/rule_load.c). */
bool mr_delayed_rule_parse(mr_rule_loader *L, const mr_rule_draft *dr, mr_rule *r,
                           struct rule_impl *im);
void mr_delayed_rule_free(mr_rule *r);
/* Takes over UPDATE/DELETE DELAYED, before any rule and whatever the set
 * holds (delayed/statement/statement.c). */
mr_take_step mr_delayed_take(mr_rule_run *R, mr_rule_stmt *S);
/* The word "delayed" in any case anywhere in the text: without it no
 * statement of the text is a DELAYED one. */
bool mr_delayed_mentioned(const char *sql, size_t len);
/* An unreadable DELAYED statement is refused whatever the policy. */
bool mr_delayed_unreadable(mr_rule_run *R, const sql_stmt *st, const char *why, char *msg,
                           size_t cap);
void mr_delayed_scratch_free(void *p);

#endif
