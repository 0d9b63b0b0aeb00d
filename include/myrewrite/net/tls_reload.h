/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/tls_reload.h - the TLS contexts in force, and their reload.
 *
 * SIGHUP and the console's RELOAD TLS build both contexts anew from the
 * files the settings name (certificates are rotated by replacing files) and
 * swap them in under the proxy's tls_lock. A session takes its own reference
 * when its handshake starts, so one in TLS keeps the context it began with
 * and only new handshakes see the new pair. A pair that does not load is
 * refused and the one in force stays, as a rule file that does not load is.
 */
#ifndef MYREWRITE_TLS_RELOAD_H
#define MYREWRITE_TLS_RELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/proxy.h"

/* The context in force toward clients / the backend with a reference of the
 * caller's, dropped with mr_tls_ctx_free once SSL_new has taken its own;
 * NULL when that leg has none. Any thread. */
struct ssl_ctx_st *mr_tls_client_ref(mr_proxy *p);
struct ssl_ctx_st *mr_tls_backend_ref(mr_proxy *p);

/* Remembers the files the contexts were built from (main, at start). */
void mr_tls_loaded(const mr_config *c);

typedef enum mr_tls_reload_result {
    MR_TLS_RELOADED,  /* new contexts swapped in */
    MR_TLS_UNCHANGED, /* only_changed, and no file changed since the last load */
    MR_TLS_REFUSED,   /* a file did not load: msg says which; the old ones stay */
    MR_TLS_NONE,      /* no TLS is configured on either leg */
} mr_tls_reload_result;

/* Rebuilds what is configured. With only_changed (SIGHUP), does nothing
 * when no file's inode, size or mtime changed, so a rules reload does not
 * throw away the session cache and ticket keys. msg gets a line for the
 * console. Main or admin thread; one reload at a time. */
mr_tls_reload_result mr_tls_reload(mr_proxy *p, bool only_changed, char *msg, size_t msglen);

typedef struct mr_tls_reload_counts {
    uint64_t ok, failed;
} mr_tls_reload_counts;
mr_tls_reload_counts mr_tls_reload_counts_get(void);

#endif
