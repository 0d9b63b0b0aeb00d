/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/tls.h - the proxy's TLS contexts, built from the settings on the main
 * thread at start (every file is read there, never on a worker), then shared
 * read-only by the workers (OpenSSL locks its session cache itself).
 */
#ifndef MYREWRITE_TLS_H
#define MYREWRITE_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "myrewrite/base/config.h"

struct ssl_ctx_st;

/* The context toward clients from tls_cert, tls_key, tls_ca, tls_min_version,
 * tls_ciphers and tls_ciphersuites; NULL with the reason in err when one is
 * unusable. With tls_ca, clients must show a certificate it signed. */
struct ssl_ctx_st *mr_tls_server_ctx(const mr_config *c, char *err, size_t errlen);
void mr_tls_ctx_free(struct ssl_ctx_st *ctx);

/* backend_tls, weakest first: whether the proxy starts TLS with a backend
 * that offers it (prefer and up), refuses one that does not (require and
 * up), verifies its certificate against backend_tls_ca (verify_ca) and its
 * name (verify_identity). */
typedef enum mr_backend_tls {
    MR_BTLS_OFF,
    MR_BTLS_PREFER,
    MR_BTLS_REQUIRE,
    MR_BTLS_VERIFY_CA,
    MR_BTLS_VERIFY_IDENTITY,
} mr_backend_tls;
mr_backend_tls mr_backend_tls_parse(const char *s);
/* The context toward the backend for `mode` (never OFF: TLS clients use
 * PREFER's under off); NULL with the reason in err. */
struct ssl_ctx_st *mr_tls_backend_ctx(const mr_config *c, mr_backend_tls mode, char *err,
                                      size_t errlen);

#endif
