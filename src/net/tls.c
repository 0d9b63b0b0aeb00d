/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/tls.c - the TLS contexts (see net/tls.h). Main thread at start, and
 * the thread of a reload (net/tls_reload.c).
 */
#include "myrewrite/net/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

#include "myrewrite/net/tls_resume.h"

/* The first queued OpenSSL error as text, after `what`. */
static void ssl_reason(char *err, size_t errlen, const char *what, const char *arg)
{
    char reason[200] = "";
    unsigned long e = ERR_get_error();
    if (e)
        ERR_error_string_n(e, reason, sizeof(reason));
    snprintf(err, errlen, "%s '%s': %s", what, arg, reason[0] ? reason : "unusable");
    ERR_clear_error();
}

static bool set_versions_and_ciphers(SSL_CTX *ctx, const mr_config *c, char *err, size_t errlen)
{
    int min = strcmp(c->tls_min_version, "TLSv1.3") == 0 ? TLS1_3_VERSION : TLS1_2_VERSION;
    if (!SSL_CTX_set_min_proto_version(ctx, min)) {
        ssl_reason(err, errlen, "tls_min_version", c->tls_min_version);
        return false;
    }
    if (c->tls_ciphers[0] && !SSL_CTX_set_cipher_list(ctx, c->tls_ciphers)) {
        ssl_reason(err, errlen, "tls_ciphers: no usable cipher in", c->tls_ciphers);
        return false;
    }
    if (c->tls_ciphersuites[0] && !SSL_CTX_set_ciphersuites(ctx, c->tls_ciphersuites)) {
        ssl_reason(err, errlen, "tls_ciphersuites: no usable suite in", c->tls_ciphersuites);
        return false;
    }
    return true;
}

/* A certificate and its key, named in messages by their settings' names. */
static bool load_identity(SSL_CTX *ctx, const char *const names[2], const char *cert,
                          const char *key, char *err, size_t errlen)
{
    char what[80];
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        snprintf(what, sizeof(what), "%s: cannot use", names[0]);
        ssl_reason(err, errlen, what, cert);
        return false;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        snprintf(what, sizeof(what), "%s: cannot use", names[1]);
        ssl_reason(err, errlen, what, key);
        return false;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(what, sizeof(what), "%s: does not match %s", names[1], names[0]);
        ssl_reason(err, errlen, what, key);
        return false;
    }
    return true;
}

static const char *const server_names[2] = {"tls_cert", "tls_key"};
static const char *const backend_names[2] = {"backend_tls_cert", "backend_tls_key"};

/* Client certificates: asked for, and required to chain to tls_ca. */
static bool load_client_ca(SSL_CTX *ctx, const mr_config *c, char *err, size_t errlen)
{
    if (SSL_CTX_load_verify_locations(ctx, c->tls_ca, NULL) != 1) {
        ssl_reason(err, errlen, "tls_ca: cannot load", c->tls_ca);
        return false;
    }
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(c->tls_ca);
    if (!names) {
        ssl_reason(err, errlen, "tls_ca: no certificate in", c->tls_ca);
        return false;
    }
    SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    return true;
}

struct ssl_ctx_st *mr_tls_server_ctx(const mr_config *c, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        ssl_reason(err, errlen, "TLS", "context");
        return NULL;
    }
    /* Partial and moving writes: net/conn_tls.c writes from an evbuffer.
     * A peer that closes without close_notify is an ordinary EOF, as a
     * plain client's close is. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_read_ahead(ctx, 1); /* net/conn_tls.c: fewer read() calls */
    /* Resumption: the server-side session cache (TLS 1.2 ids) and tickets
     * (on by default); the id context lets verified sessions resume. */
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"myrewrite", 9);
    if (!set_versions_and_ciphers(ctx, c, err, errlen) ||
        !load_identity(ctx, server_names, c->tls_cert, c->tls_key, err, errlen) ||
        (c->tls_ca[0] && !load_client_ca(ctx, c, err, errlen))) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

void mr_tls_ctx_free(struct ssl_ctx_st *ctx) { SSL_CTX_free(ctx); }

mr_backend_tls mr_backend_tls_parse(const char *s)
{
    static const char *const names[] = {"off", "prefer", "require", "verify_ca", "verify_identity"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0)
            return (mr_backend_tls)i;
    return MR_BTLS_OFF;
}

struct ssl_ctx_st *mr_tls_backend_ctx(const mr_config *c, mr_backend_tls mode, char *err,
                                      size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        ssl_reason(err, errlen, "TLS", "context");
        return NULL;
    }
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_read_ahead(ctx, 1);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (!mr_tls_resume_enable(ctx)) {
        snprintf(err, errlen, "backend TLS: out of memory");
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (mode >= MR_BTLS_VERIFY_CA) {
        if (SSL_CTX_load_verify_locations(ctx, c->backend_tls_ca, NULL) != 1) {
            ssl_reason(err, errlen, "backend_tls_ca: cannot load", c->backend_tls_ca);
            SSL_CTX_free(ctx);
            return NULL;
        }
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    }
    if (c->backend_tls_cert[0] &&
        !load_identity(ctx, backend_names, c->backend_tls_cert, c->backend_tls_key, err, errlen)) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}
