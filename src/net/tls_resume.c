/*
 * net/tls_resume.c - the last TLS session of each backend context, offered
 * again on its next connection (see net/tls_resume.h). OpenSSL's client
 * cache is on without its internal store: it hands each new session to
 * new_session(), which keeps it in the context's ex_data slot.
 */
#include "myrewrite/net/tls_resume.h"

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdlib.h>

typedef struct kept {
    pthread_mutex_t lock;
    SSL_SESSION *last; /* owned: one reference */
} kept;

static int slot = -1;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;

/* The context is freed (its last connection gone, after a reload). */
static void kept_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    kept *k = ptr;
    if (!k)
        return;
    SSL_SESSION_free(k->last);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

static void slot_init(void) { slot = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, kept_free); }

/* A new session from the server: it replaces the one kept. 1: the
 * reference is ours. */
static int new_session(SSL *ssl, SSL_SESSION *sess)
{
    kept *k = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), slot);
    if (!k)
        return 0;
    pthread_mutex_lock(&k->lock);
    SSL_SESSION *old = k->last;
    k->last = sess;
    pthread_mutex_unlock(&k->lock);
    SSL_SESSION_free(old);
    return 1;
}

bool mr_tls_resume_init(struct ssl_ctx_st *ctx)
{
    pthread_once(&slot_once, slot_init);
    kept *k = slot >= 0 ? calloc(1, sizeof *k) : NULL;
    if (!k || pthread_mutex_init(&k->lock, NULL) != 0) {
        free(k);
        return false;
    }
    if (!SSL_CTX_set_ex_data(ctx, slot, k)) {
        pthread_mutex_destroy(&k->lock);
        free(k);
        return false;
    }
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, new_session);
    return true;
}

void mr_tls_resume_offer(struct ssl_st *ssl)
{
    kept *k = slot >= 0 ? SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), slot) : NULL;
    if (!k)
        return; /* not a backend context */
    pthread_mutex_lock(&k->lock);
    SSL_SESSION *s = k->last;
    if (s && SSL_SESSION_is_resumable(s))
        SSL_SESSION_up_ref(s);
    else
        s = NULL;
    pthread_mutex_unlock(&k->lock);
    if (s) {
        SSL_set_session(ssl, s); /* a full handshake if the server declines it */
        SSL_SESSION_free(s);
    }
}
