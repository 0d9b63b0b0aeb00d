/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http/http.h - the optional HTTP endpoint for operators: /metrics (Prometheus
 * text format), /health (the process runs) and /ready (the backend accepts
 * TCP connections and a rule set is in force).
 *
 * Off unless `http_listen` is set. It runs on a thread of its own with its
 * own event_base, never on a worker or the listener. Start and stop are
 * called by the main thread; the metrics writer is called on the HTTP
 * thread and reads only thread-safe state (relaxed atomics, the rule set
 * in force through mr_rules_current).
 */
#ifndef MYREWRITE_HTTP_H
#define MYREWRITE_HTTP_H

#include <stdbool.h>

#include "myrewrite/base/proxy.h"

struct evbuffer;

/* Binds http_listen and starts the HTTP thread; does nothing and returns
 * true when http_listen is empty. Call after the workers have started
 * (the metrics read p->workers). False, with the reason logged, when the
 * address cannot be bound or the thread cannot start. */
bool mr_http_start(mr_proxy *p);
/* Answers pending /ready requests, stops the thread and frees everything.
 * Safe when the endpoint never started. Call before p->workers is freed. */
void mr_http_stop(void);

/* Appends the /metrics page for `p` to `out`. Any thread but a worker. */
void mr_metrics_write(mr_proxy *p, struct evbuffer *out);

#endif
