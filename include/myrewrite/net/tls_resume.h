/*
 * net/tls_resume.h - TLS session resumption toward the backend: a backend
 * context keeps the last session the server gave any of its connections
 * (a TLS 1.3 ticket, or a TLS 1.2 session), and each new connection of it
 * offers that session, so the server can skip the full handshake (its
 * certificate check and key exchange). A server that does not resume
 * answers with a full handshake, as without it. A reload makes a new
 * context, which starts with no session.
 *
 * Any thread: the kept session is behind its own lock.
 */
#ifndef MYREWRITE_TLS_RESUME_H
#define MYREWRITE_TLS_RESUME_H

#include <stdbool.h>

struct ssl_ctx_st;
struct ssl_st;

/* Makes the backend context ctx keep its last session; false when out of
 * memory. */
bool mr_tls_resume_init(struct ssl_ctx_st *ctx);
/* Offers the kept session, if any, on ssl (a new connection of such a
 * context, before its handshake). */
void mr_tls_resume_offer(struct ssl_st *ssl);

#endif
