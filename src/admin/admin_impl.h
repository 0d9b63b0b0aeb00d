/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/admin_impl.h - what the admin console's files share privately: running
 * one command against the proxy's state and writing its answer as packets.
 *
 * Admin console thread only. Every function appends a complete answer
 * (result set, OK or ERR) to `out`, its first packet with sequence id 1.
 */
#ifndef MYREWRITE_ADMIN_IMPL_H
#define MYREWRITE_ADMIN_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "myrewrite/admin/admin.h"
#include "myrewrite/base/buf.h"
#include "myrewrite/base/proxy.h"

/* A command that answers later (FLUSH DELAYED): its work runs on another
 * thread, which calls mr_admin_wake when it is done, and the connection
 * asks for the answer then, or gives it at MR_ADMIN_JOB_LIMIT_MS. */
typedef struct mr_admin_job mr_admin_job;
#define MR_ADMIN_JOB_LIMIT_MS 10000

/* Recognizes and runs one COM_QUERY text (admin/exec.c): the answer in
 * out, or *job set and out left empty. */
void mr_admin_exec(mr_proxy *p, const char *sql, size_t len, mr_buf *out, mr_admin_job **job);
/* The job's answer into out once it is done, or at its limit (limit_passed);
 * false: not done yet. */
bool mr_admin_job_answer(mr_admin_job *j, bool limit_passed, mr_buf *out);
/* Lets go of the job (its work may go on; nobody is told). */
void mr_admin_job_free(mr_admin_job *j);
/* admin/admin.c: a job is done; any thread, never blocks. */
void mr_admin_wake(void *arg);
/* A one-column result set, one row per line of `text`, which it splits
 * in place (admin/exec.c). */
void mr_admin_lines_result(mr_buf *out, const char *column, char *text);
/* An ERR answer with SQLSTATE 42000 or HY000 (admin/exec.c). */
void mr_admin_error(mr_buf *out, uint16_t code, const char *sqlstate, const char *msg);

/* admin/show.c */
void mr_admin_show_version(mr_proxy *p, mr_buf *out);
void mr_admin_show_config(mr_proxy *p, mr_buf *out);
void mr_admin_show_stats(mr_proxy *p, mr_buf *out);
void mr_admin_show_backends(mr_proxy *p, mr_buf *out);
void mr_admin_show_queues(mr_proxy *p, mr_buf *out);

/* admin/show_features.c */
void mr_admin_show_delayed(mr_proxy *p, mr_buf *out);
/* SHOW DELAYED REJECTED [table]: the latest keys moved to dead-letter tables. */
void mr_admin_show_delayed_rejected(const char *table, mr_buf *out);
void mr_admin_show_pagination(mr_proxy *p, mr_buf *out);

/* admin/show_clients.c */
void mr_admin_show_clients(mr_proxy *p, mr_buf *out);
/* admin/show_pools.c: pool = transaction's pools, server connections and
 * pins (empty with pool = session) */
void mr_admin_show_pools(mr_proxy *p, mr_buf *out);
void mr_admin_show_servers(mr_proxy *p, mr_buf *out);
void mr_admin_show_pins(mr_proxy *p, mr_buf *out);

/* admin/show_rules.c */
void mr_admin_show_rules(mr_proxy *p, mr_buf *out);
void mr_admin_show_digests(mr_proxy *p, mr_buf *out);
void mr_admin_reload_rules(mr_proxy *p, mr_buf *out);
void mr_admin_explain(mr_proxy *p, const char *sql, size_t len, mr_buf *out);

/* A client's address, as the back-off of failed logins keys it. */
typedef struct mr_admin_addr {
    int family; /* AF_INET, AF_INET6; 0: unknown */
    uint8_t bytes[16];
} mr_admin_addr;
struct sockaddr;

/* admin/login_guard.c: the back-off of failed logins per address. */
void mr_admin_addr_of(const struct sockaddr *sa, mr_admin_addr *out);
void mr_admin_addr_text(const mr_admin_addr *a, char *buf, size_t cap);
/* How long `a` must still wait before a login is tried; 0: now. */
uint64_t mr_admin_login_wait_ms(const mr_admin_addr *a);
/* A failed login from `a` (counted); returns the wait it starts. */
uint64_t mr_admin_login_failed(const mr_admin_addr *a);
/* A login from `a` succeeded: its failures are forgotten. */
void mr_admin_login_ok(const mr_admin_addr *a);
mr_admin_stats *mr_admin_stats_mut(void);
void mr_admin_count(mr_counter *c);

/* admin/conn.c: one console connection on the console's base (takes fd). */
struct event_base;
void mr_admin_conn_open(mr_proxy *p, struct event_base *base, int fd, uint32_t id,
                        const mr_admin_addr *from);
void mr_admin_conn_close_all(void);
/* Answers the connections whose job is done (after mr_admin_wake). */
void mr_admin_conn_jobs_done(void);
/* Connections logged in, and the others (still logging in, or refused). */
unsigned mr_admin_conn_ready(void);
unsigned mr_admin_conn_logins(void);
/* Closes the oldest connection that has not logged in (counted). */
void mr_admin_conn_evict_login(void);

/* When the console started (admin/admin.c), for SHOW VERSION's uptime. */
time_t mr_admin_started(void);

#endif
