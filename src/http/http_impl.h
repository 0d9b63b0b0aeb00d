/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http/http_impl.h - what the HTTP files share privately: the exposition
 * format's pieces, the sum of a worker counter and the access checks.
 *
 * HTTP thread (or any thread but a worker); writes into the caller's evbuffer.
 */
#ifndef MYREWRITE_HTTP_IMPL_H
#define MYREWRITE_HTTP_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/config.h"
#include "myrewrite/base/proxy.h"

struct evbuffer;

/* "# HELP" and "# TYPE" lines of one metric family. */
void mr_metrics_family(struct evbuffer *out, const char *name, const char *type, const char *help);
/* One sample without labels. */
void mr_metrics_sample(struct evbuffer *out, const char *name, uint64_t v);
/* A label value with \, " and newline escaped. */
void mr_metrics_label_value(struct evbuffer *out, const char *s);
/* One mr_stats counter (at `offset`) summed over the workers. */
uint64_t mr_metrics_worker_sum(mr_proxy *p, size_t offset);

/* http/metrics_ops.c: reloads, front-end time, pagination, DELAYED per
 * table and the flush-duration histogram. */
void mr_metrics_write_ops(mr_proxy *p, struct evbuffer *out);
/* http/metrics_pool.c: pool = transaction's connections, waits and pins. */
void mr_metrics_write_pool(mr_proxy *p, struct evbuffer *out);

/* http/auth.c: true when `authorization` (the request's header, or NULL)
 * carries `token` as "Bearer <token>", or when no token is set. */
bool mr_http_token_ok(const char *token, const char *authorization);
/* True when serving on `a` is allowed by cfg: loopback, or a token, or
 * http_insecure; false with an error logged that says what to set. */
bool mr_http_exposure_ok(const mr_config *cfg, const mr_addr *a);

#endif
