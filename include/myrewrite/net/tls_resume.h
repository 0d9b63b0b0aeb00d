/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/tls_resume.h - resumed TLS handshakes toward the backend, and the
 * handshake counts of both legs.
 *
 * A session's backend leg is a new TLS client connection to the same
 * server each time; a full handshake there costs the server and the proxy
 * as much as a direct client's. The backend context keeps the last session
 * the server issued, and every new backend leg offers it, so a proxy that
 * opens many short sessions pays a full handshake only when the server
 * declines (a restart, an expired ticket).
 */
#ifndef MYREWRITE_TLS_RESUME_H
#define MYREWRITE_TLS_RESUME_H

#include <stdbool.h>
#include <stdint.h>

struct ssl_ctx_st;
struct ssl_st;

/* Makes a client context keep the latest session its server issued. False:
 * out of memory (the context then works without resumption). */
bool mr_tls_resume_enable(struct ssl_ctx_st *ctx);
/* Offers the context's kept session, if any, on a new client connection. */
void mr_tls_resume_offer(struct ssl_st *ssl);

/* Counts a finished handshake by leg (server side: the client leg) and
 * whether it resumed a session. Any thread. */
void mr_tls_handshake_done(struct ssl_st *ssl);

typedef struct mr_tls_handshake_counts {
    uint64_t client_full, client_resumed, backend_full, backend_resumed;
} mr_tls_handshake_counts;
mr_tls_handshake_counts mr_tls_handshake_counts_get(void);

#endif
