/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/cmd.h - the admin console's command language and the merging of
 * per-worker digest counters into one top list.
 *
 * Pure, any thread; no globals. Commands are matched word by word,
 * case-insensitively, with any whitespace between words and trailing `;`
 * allowed.
 */
#ifndef MYREWRITE_ADMIN_CMD_H
#define MYREWRITE_ADMIN_CMD_H

#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/stats/digest_stats.h"

typedef enum mr_admin_cmd {
    MR_ADM_UNKNOWN,
    MR_ADM_SHOW_VERSION,
    MR_ADM_SHOW_CONFIG,
    MR_ADM_SHOW_RULES,
    MR_ADM_SHOW_DIGESTS,
    MR_ADM_SHOW_STATS,
    MR_ADM_SHOW_BACKENDS,
    MR_ADM_SHOW_QUEUES,
    MR_ADM_RELOAD_RULES,
    MR_ADM_RELOAD_TLS,
    MR_ADM_EXPLAIN_REWRITE, /* argument: the unquoted statement */
    MR_ADM_SHOW_CLIENTS,
    MR_ADM_SHOW_POOLS,
    MR_ADM_SHOW_SERVERS,
    MR_ADM_SHOW_PINS,
    MR_ADM_SHOW_DELAYED,
    MR_ADM_SHOW_PAGINATION,
    MR_ADM_FLUSH_DELAYED,         /* argument: the table, may be empty */
    MR_ADM_SHOW_DELAYED_REJECTED, /* argument: the table, may be empty */
    MR_ADM_VERSION_COMMENT,       /* SELECT @@version_comment [LIMIT 1], sent by the mariadb CLI */
    MR_ADM_SET,                   /* SET ...: drivers send these at connect; accepted, ignored */
    MR_ADM_EMPTY,                 /* nothing but whitespace and `;` */
    MR_ADM_BAD_ARGUMENT,          /* a known command with a malformed argument */
} mr_admin_cmd;

/* Recognizes one command; the argument (EXPLAIN REWRITE, FLUSH DELAYED,
 * SHOW DELAYED REJECTED)
 * is appended to `arg`, NUL-terminated. */
mr_admin_cmd mr_admin_cmd_parse(const char *sql, size_t len, mr_buf *arg);

/* The command list, for the error an unknown command gets. */
const char *mr_admin_cmd_list(void);

/* One digest's counters, as copied out of a worker's table. */
typedef struct mr_admin_digest {
    uint64_t hash; /* 0: the overflow entry */
    char text[MR_DIGEST_TEXT_MAX];
    uint64_t count, total_us, max_us, rewritten, blocked;
} mr_admin_digest;

/* Merges rows with the same hash (counts and totals add, max is the
 * largest), sorts by total time, largest first (ties: count, then hash),
 * and returns how many of the first `limit` rows are kept. In place. */
size_t mr_admin_digests_merge(mr_admin_digest *rows, size_t n, size_t limit);

#endif
