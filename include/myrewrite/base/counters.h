/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/counters.h - counters kept per worker thread.
 *
 * Each mr_stats is written by exactly one thread (its worker) and may be
 * read by any other (admin, metrics): single-writer relaxed atomics, so the
 * hot path never takes a lock or a locked instruction.
 */
#ifndef MYREWRITE_STATS_H
#define MYREWRITE_STATS_H

#include <stdatomic.h>
#include <stdint.h>

typedef _Atomic uint64_t mr_counter;

/* Why a client connection ended; counted per reason. */
typedef enum mr_close_reason {
    MR_CLOSE_CLIENT_QUIT,       /* COM_QUIT */
    MR_CLOSE_CLIENT_GONE,       /* client closed the socket or reset it */
    MR_CLOSE_BACKEND_DOWN,      /* backend unreachable at connect */
    MR_CLOSE_BACKEND_LOST,      /* backend closed or failed afterwards */
    MR_CLOSE_AUTH_FAILED,       /* backend refused the credentials */
    MR_CLOSE_MALFORMED,         /* client or backend broke the protocol */
    MR_CLOSE_TOO_LARGE,         /* packet over max_packet_size */
    MR_CLOSE_UNSUPPORTED,       /* TLS, compression or an old protocol asked for */
    MR_CLOSE_TIMEOUT,           /* handshake or connect timeout */
    MR_CLOSE_SHUTDOWN,          /* proxy shutting down */
    MR_CLOSE_TLS_REQUIRED,      /* a plaintext client under require_tls */
    MR_CLOSE_TLS_FAILED,        /* the TLS handshake with the client failed */
    MR_CLOSE_CLEARTEXT_REFUSED, /* the server asked a TLS client for its password in clear
                                   over the plain backend connection */
    MR_CLOSE_MAX
} mr_close_reason;

const char *mr_close_reason_name(mr_close_reason r);

typedef struct mr_stats {
    mr_counter connections_accepted;
    mr_counter connections_active;
    mr_counter commands;
    mr_counter commands_refused;
    mr_counter statements_rewritten;
    mr_counter statements_blocked;
    mr_counter statements_unexamined; /* texts over relay_buffer: relayed, no rule met */
    mr_counter unreadable_passed;     /* texts the lexer cannot read, relayed (unreadable) */
    mr_counter unreadable_blocked;    /* ... and refused with the proxy's ERR */
    mr_counter state_errors;          /* session state changes the transition table forbids */
    mr_counter bytes_from_clients;
    mr_counter bytes_from_backend;
    mr_counter closes[MR_CLOSE_MAX];
    mr_counter paginate_deferred;      /* deep pages sent as a deferred join */
    mr_counter paginate_keyset_hits;   /* deep pages sent as a keyset seek */
    mr_counter paginate_keyset_misses; /* keyset wanted, no usable bookmark */
    mr_counter paginate_refused;       /* pages beyond max_offset */
    /* the SQL front end (mr_rules_apply): statements it saw and the
     * monotonic nanoseconds it spent on them */
    mr_counter frontend_statements;
    mr_counter frontend_ns;
    /* rows the proxy staged for DELAYED statements it sent */
    mr_counter delayed_rows_staged;
    /* DELAYED statements parked until the schema cache had their table's
     * key (session/stmt/park_stmt.c), those answered with an ERR after
     * delayed_park_timeout, and the microseconds they waited in all */
    mr_counter delayed_parked;
    mr_counter delayed_park_timeouts;
    mr_counter delayed_park_wait_us;
    /* point reads rewritten by read_pending to add the pending deltas (a
     * prepared one once, at its COM_STMT_PREPARE) */
    mr_counter delayed_read_pending;
} mr_stats;

static inline void mr_stat_add(mr_counter *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline uint64_t mr_stat_get(mr_counter *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

#endif
