/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/tls_reload.c - the TLS contexts in force and their reload (see
 * net/tls_reload.h).
 */
#include "myrewrite/net/tls_reload.h"

#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "myrewrite/base/counters.h"
#include "myrewrite/base/log.h"
#include "myrewrite/net/tls.h"

static struct ssl_ctx_st *ref(mr_proxy *p, struct ssl_ctx_st *const *slot)
{
    pthread_mutex_lock(&p->tls_lock);
    SSL_CTX *ctx = *slot;
    if (ctx)
        SSL_CTX_up_ref(ctx);
    pthread_mutex_unlock(&p->tls_lock);
    return ctx;
}

struct ssl_ctx_st *mr_tls_client_ref(mr_proxy *p) { return ref(p, &p->client_tls); }
struct ssl_ctx_st *mr_tls_backend_ref(mr_proxy *p) { return ref(p, &p->backend_tls); }

/* ---- which files, as they were at the last load ---- */

typedef struct file_id {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} file_id;

enum { NFILES = 6 };

static pthread_mutex_t reload_lock = PTHREAD_MUTEX_INITIALIZER;
static file_id loaded[NFILES]; /* under reload_lock (and main before threads) */
static mr_counter reloads_ok, reloads_failed;

static void files_of(const mr_config *c, const char *names[NFILES])
{
    names[0] = c->tls_cert;
    names[1] = c->tls_key;
    names[2] = c->tls_ca;
    names[3] = c->backend_tls_ca;
    names[4] = c->backend_tls_cert;
    names[5] = c->backend_tls_key;
}

/* A file that is unset or missing is all zeros: its appearing is a change. */
static void identify(const mr_config *c, file_id ids[NFILES])
{
    const char *names[NFILES];
    files_of(c, names);
    memset(ids, 0, sizeof(file_id) * NFILES);
    for (int i = 0; i < NFILES; i++) {
        struct stat st;
        if (names[i][0] && stat(names[i], &st) == 0)
            ids[i] = (file_id){st.st_dev, st.st_ino, st.st_size, st.st_mtim};
    }
}

void mr_tls_loaded(const mr_config *c) { identify(c, loaded); }

/* ---- the reload ---- */

static void swap_in(mr_proxy *p, struct ssl_ctx_st *client, struct ssl_ctx_st *backend)
{
    pthread_mutex_lock(&p->tls_lock);
    SSL_CTX *old_client = p->client_tls, *old_backend = p->backend_tls;
    if (client)
        p->client_tls = client;
    if (backend)
        p->backend_tls = backend;
    pthread_mutex_unlock(&p->tls_lock);
    /* sessions still in a handshake hold references of their own */
    if (client)
        mr_tls_ctx_free(old_client);
    if (backend)
        mr_tls_ctx_free(old_backend);
}

/* Both new contexts, or neither: a half-applied reload would be a state no
 * configuration describes. */
static bool build(mr_proxy *p, struct ssl_ctx_st **client, struct ssl_ctx_st **backend, char *err,
                  size_t errlen)
{
    const mr_config *c = p->cfg;
    *client = *backend = NULL;
    if (p->client_tls_on && !(*client = mr_tls_server_ctx(c, err, errlen)))
        return false;
    if (p->backend_tls_on) {
        mr_backend_tls mode =
            p->backend_tls_mode ? (mr_backend_tls)p->backend_tls_mode : MR_BTLS_PREFER;
        if (!(*backend = mr_tls_backend_ctx(c, mode, err, errlen))) {
            mr_tls_ctx_free(*client);
            *client = NULL;
            return false;
        }
    }
    return true;
}

static mr_tls_reload_result reload_locked(mr_proxy *p, bool only_changed, char *msg, size_t msglen)
{
    if (!p->client_tls_on && !p->backend_tls_on) {
        snprintf(msg, msglen, "no TLS is configured (tls_cert, backend_tls): nothing to reload");
        return MR_TLS_NONE;
    }
    file_id now[NFILES];
    identify(p->cfg, now);
    if (only_changed && memcmp(now, loaded, sizeof(now)) == 0) {
        snprintf(msg, msglen, "TLS files unchanged");
        return MR_TLS_UNCHANGED;
    }
    char err[400];
    struct ssl_ctx_st *client, *backend;
    if (!build(p, &client, &backend, err, sizeof(err))) {
        mr_stat_add(&reloads_failed, 1);
        snprintf(msg, msglen, "TLS reload refused, the certificates in force stay: %s", err);
        mr_error(0, "%s", msg);
        return MR_TLS_REFUSED;
    }
    swap_in(p, client, backend);
    memcpy(loaded, now, sizeof(now));
    mr_stat_add(&reloads_ok, 1);
    snprintf(msg, msglen, "TLS reloaded: new connections use the new certificates");
    mr_info(0, "%s", msg);
    return MR_TLS_RELOADED;
}

mr_tls_reload_result mr_tls_reload(mr_proxy *p, bool only_changed, char *msg, size_t msglen)
{
    pthread_mutex_lock(&reload_lock);
    mr_tls_reload_result r = reload_locked(p, only_changed, msg, msglen);
    pthread_mutex_unlock(&reload_lock);
    return r;
}

mr_tls_reload_counts mr_tls_reload_counts_get(void)
{
    return (mr_tls_reload_counts){mr_stat_get(&reloads_ok), mr_stat_get(&reloads_failed)};
}
