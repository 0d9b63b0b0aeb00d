/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/tls_resume.c - the backend context's kept session (see
 * net/tls_resume.h). The kept session serves every worker, so it sits
 * behind a mutex held only to replace it or copy it.
 */
#include "myrewrite/net/tls_resume.h"

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdlib.h>

#include "myrewrite/base/counters.h"

typedef struct kept {
    pthread_mutex_t lock;
    SSL_SESSION *session; /* our own copy; NULL until the first handshake */
} kept;

static int kept_index = -1;
static pthread_once_t index_once = PTHREAD_ONCE_INIT;
static mr_counter client_full, client_resumed, backend_full, backend_resumed;

/* Frees the kept session with its context (a TLS reload drops the old one). */
static void kept_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
    kept *k = ptr;
    if (!k)
        return;
    /* the last thread to use the context may not be this one: the lock
     * orders its last copy before this free */
    pthread_mutex_lock(&k->lock);
    SSL_SESSION_free(k->session);
    pthread_mutex_unlock(&k->lock);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

static void make_index(void)
{
    kept_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, kept_free);
}

static kept *kept_of(SSL_CTX *ctx)
{
    return kept_index < 0 ? NULL : SSL_CTX_get_ex_data(ctx, kept_index);
}

/* OpenSSL hands over each session the server issued (with TLS 1.3 after
 * the handshake, as tickets arrive); a copy of the newest replaces the kept
 * one. Copies, not shared references: a session is freed on whichever
 * thread drops its last reference, and its fields are read by every copy
 * made of it, so the kept one is only ever read or freed under the lock. */
static int on_new_session(SSL *ssl, SSL_SESSION *session)
{
    kept *k = kept_of(SSL_get_SSL_CTX(ssl));
    SSL_SESSION *copy = k ? SSL_SESSION_dup(session) : NULL;
    if (!copy)
        return 0;
    pthread_mutex_lock(&k->lock);
    SSL_SESSION_free(k->session);
    k->session = copy;
    pthread_mutex_unlock(&k->lock);
    return 0; /* OpenSSL keeps its own reference to `session` */
}

bool mr_tls_resume_enable(SSL_CTX *ctx)
{
    pthread_once(&index_once, make_index);
    kept *k = calloc(1, sizeof(*k));
    if (kept_index < 0 || !k || pthread_mutex_init(&k->lock, NULL) != 0 ||
        !SSL_CTX_set_ex_data(ctx, kept_index, k)) {
        free(k);
        return false;
    }
    /* The context's own cache would only store; the callback keeps one. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, on_new_session);
    return true;
}

void mr_tls_resume_offer(SSL *ssl)
{
    kept *k = kept_of(SSL_get_SSL_CTX(ssl));
    if (!k)
        return;
    pthread_mutex_lock(&k->lock);
    SSL_SESSION *copy =
        k->session && SSL_SESSION_is_resumable(k->session) ? SSL_SESSION_dup(k->session) : NULL;
    pthread_mutex_unlock(&k->lock);
    if (copy) {
        SSL_set_session(ssl, copy); /* takes a reference of its own */
        SSL_SESSION_free(copy);
    }
}

void mr_tls_handshake_done(SSL *ssl)
{
    bool resumed = SSL_session_reused(ssl);
    if (SSL_is_server(ssl))
        mr_stat_add(resumed ? &client_resumed : &client_full, 1);
    else
        mr_stat_add(resumed ? &backend_resumed : &backend_full, 1);
}

mr_tls_handshake_counts mr_tls_handshake_counts_get(void)
{
    return (mr_tls_handshake_counts){mr_stat_get(&client_full), mr_stat_get(&client_resumed),
                                     mr_stat_get(&backend_full), mr_stat_get(&backend_resumed)};
}
