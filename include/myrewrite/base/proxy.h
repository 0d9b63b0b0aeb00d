/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/proxy.h - the process-wide runtime shared by the listener and workers.
 *
 * Built by main before any thread starts; read-only afterwards except for
 * the atomics, which any thread may update, the rule set in force, guarded
 * by rules_lock, the backend address, guarded by backend_lock, and the two
 * TLS contexts, guarded by tls_lock (net/tls_reload.h swaps them).
 */
#ifndef MYREWRITE_PROXY_H
#define MYREWRITE_PROXY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "myrewrite/base/config.h"

struct mr_worker;
struct mr_shared_rules;
struct ssl_ctx_st;
struct mr_rule_kind;

typedef struct mr_proxy {
    const mr_config *cfg;
    pthread_mutex_t backend_lock;         /* guards backend_addr: read with mr_backend_addr */
    struct sockaddr_storage backend_addr; /* resolved at start, then again (net/backend_addr.h) */
    socklen_t backend_addr_len;
    char backend_name[300];         /* for messages: "127.0.0.1:3306" */
    pthread_mutex_t tls_lock;       /* guards client_tls and backend_tls */
    struct ssl_ctx_st *client_tls;  /* TLS toward clients; NULL: not configured */
    struct ssl_ctx_st *backend_tls; /* TLS toward the backend; NULL: never */
    bool client_tls_on;             /* client_tls set at start: a reload never unsets it */
    bool backend_tls_on;            /* the same for backend_tls */
    bool require_tls;               /* plaintext clients are refused */
    int backend_tls_mode;           /* mr_backend_tls (net/tls.h) */
    char backend_tls_host[256];     /* the name verify_identity checks */
    struct mr_worker *workers;
    unsigned nworkers;
    struct mr_pool_shared *pool_shared; /* pool = transaction: what the workers' pools share */
    _Atomic uint64_t next_conn_id;
    _Atomic uint64_t connections;  /* open client connections */
    pthread_mutex_t rules_lock;    /* guards `rules` */
    struct mr_shared_rules *rules; /* the set in force; one reference held here */
    const struct mr_rule_kind *const
        *rule_kinds;             /* the kinds rules load with (core/rule_kinds.h) */
    pthread_mutex_t reload_lock; /* one reload at a time (SIGHUP, admin console) */
} mr_proxy;

#endif
