/* SPDX-License-Identifier: Apache-2.0 */
/*
 * queue/release_sql.h - the statements the proxy sends for queue rules: release of
 * one owner's claims, the reaper's search and release, its advisory lock.
 *
 * Pure, any thread (in practice the queue's background thread, and the
 * rules loader for checking `release` templates). Every function returns
 * a malloc'ed NUL-terminated string the caller frees, or NULL when out of
 * memory. Names and literals are written by sql/quote.h.
 */
#ifndef MYREWRITE_QUEUE_SQL_H
#define MYREWRITE_QUEUE_SQL_H

#include <stdint.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/queue/rule.h"
#include "myrewrite/rules/rules.h"
#include "myrewrite/sql/quote.h"

/* A value as written in a rule: integers and NULL as they are, anything
 * else as a string literal. */
void mr_sql_put_value(mr_buf *b, const char *v);

/* Every {owner} of a `release` template replaced by the id. */
char *mr_queue_fill_release(const char *tpl, uint64_t owner);
/* The `reap` template with {live} replaced by the ids, comma separated,
 * and {cutoff} by TIMESTAMP'<cutoff>'. NULL also when nlive is 0 (an empty
 * IN list is not SQL, and the proxy's own connection is always live). */
char *mr_queue_fill_reap(const char *tpl, const uint64_t *live, size_t nlive, const char *cutoff);
/* SELECT NOW(6) - INTERVAL <timeout in us> MICROSECOND: the {cutoff} of a
 * reap round, read on the server before its PROCESSLIST. */
char *mr_queue_cutoff_sql(const mr_queue_def *q);
/* The statement releasing the claims of backend connection `owner`:
 * UPDATE `s`.`t` SET `status` = 'unclaimed', `owner` = 0
 * WHERE `owner` = <owner> AND `status` = 'claimed'  (or the template). */
char *mr_queue_release_sql(const mr_queue_def *q, uint64_t owner);
/* The owners of claims older than the timeout (table form with
 * claimed_at_column only; NULL otherwise):
 * SELECT DISTINCT `owner` FROM ... WHERE `status` = 'claimed'
 *   AND `claimed_at` < NOW(6) - INTERVAL <us> MICROSECOND */
char *mr_queue_reap_find_sql(const mr_queue_def *q);
/* The release of one zombie owner: the release statement plus the age
 * condition, so a claim made since the search is never taken. */
char *mr_queue_reap_sql(const mr_queue_def *q, uint64_t owner);
/* SELECT GET_LOCK('myrewrite_reaper_<schema.table>', 0), or RELEASE_LOCK
 * of the same name (a name over 64 characters is replaced by its hash). */
char *mr_queue_lock_sql(const mr_queue_def *q, int get);

#endif
