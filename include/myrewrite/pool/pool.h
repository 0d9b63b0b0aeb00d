/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/pool.h - the server connections of one worker thread, lent to client
 * sessions one unit of work at a time (`pool = transaction`).
 *
 * The pool is the layer under the session: a session owns its client
 * connection and borrows a server connection (an mr_srv) for a transaction
 * or an autocommit statement; the pool owns the server connections, knows
 * each one's session state (the system variables and schema the sessions
 * that used it left there, learned from the server's session trackers), and
 * decides which one a session gets. Choosing a server per unit of work
 * belongs here, never in the session.
 *
 * Connections are grouped by key: the login's user and what the login fixed
 * for the connection's life (capabilities, character set, TLS, compression).
 * A connection of one key never serves a session of another. New
 * connections come only from logins: the proxy holds no passwords, so each
 * client login is relayed to the server on a connection of its own (the
 * server checks it), which then joins the pool. `pool_max_connections`
 * bounds every server connection of the proxy, all workers and logins
 * included, and `pool_size` each user's (counted in pool/move.c): a login
 * waits for room, and an idle connection of another key may be closed to
 * make it.
 *
 * One pool per worker, used on that worker's thread only; the counters SHOW
 * POOLS, SHOW SERVERS, SHOW PINS and /metrics read are copied under `lock`.
 * An idle connection moves to another worker's pool when a session there
 * waits for its key (pool/shared.h).
 */
#ifndef MYREWRITE_POOL_POOL_H
#define MYREWRITE_POOL_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/config.h"
#include "myrewrite/net/conn.h"

struct event_base;
struct event;

/* Why a session keeps its server connection after a unit of work. */
typedef enum mr_pin_reason {
    MR_PIN_TRANSACTION,     /* a transaction is open (the server's status says so) */
    MR_PIN_TRX_NEXT,        /* SET TRANSACTION: characteristics for the next one */
    MR_PIN_LOCKED_TABLES,   /* LOCK TABLES (the transaction tracker's L) */
    MR_PIN_USER_VARIABLE,   /* a user variable was assigned */
    MR_PIN_TEMPORARY_TABLE, /* a temporary table was created */
    MR_PIN_PREPARED,        /* a server-side prepared statement is open */
    MR_PIN_PREPARED_SQL,    /* PREPARE ... FROM, or a prepare reading ROW_COUNT()/FOUND_ROWS() */
    MR_PIN_LOCK_FUNCTION,   /* GET_LOCK and its kin */
    MR_PIN_FOUND_ROWS,      /* SQL_CALC_FOUND_ROWS: FOUND_ROWS() may follow */
    MR_PIN_CONNECTION_ID,   /* CONNECTION_ID(): the session reads its server's id */
    MR_PIN_TRACKING,        /* the client set session_track_* itself */
    MR_PIN_STATE_CHANGE,    /* the server reported other state it does not name */
    MR_PIN_FEATURE,         /* a feature's per-connection state (a queue claim) */
    MR_PIN_UNKNOWN_STATE,   /* a reply the proxy could not read (too large, malformed) */
    MR_PIN_CHANGE_USER,     /* COM_CHANGE_USER: the connection is another user's now */
    MR_PIN_REASONS
} mr_pin_reason;

const char *mr_pin_reason_name(mr_pin_reason r);

/* A system variable a session set, as the server reported it. */
typedef struct mr_pool_var {
    char *name;  /* lower case, owned */
    char *value; /* owned */
} mr_pool_var;

/* Session state that can be replayed on another connection. */
typedef struct mr_pool_state {
    mr_pool_var *v; /* owned */
    unsigned n, cap;
    char schema[200]; /* "" with schema_set: none */
    bool schema_set;  /* the schema differs from the login's */
} mr_pool_state;

void mr_pool_state_free(mr_pool_state *st);
/* Forgets the variables, keeps the schema (what COM_RESET_CONNECTION does). */
void mr_pool_state_clear_vars(mr_pool_state *st);
/* Records name = value (replacing an earlier value); false: out of memory. */
bool mr_pool_state_set(mr_pool_state *st, const char *name, size_t nlen, const char *value,
                       size_t vlen);
const mr_pool_var *mr_pool_state_get(const mr_pool_state *st, const char *name);
bool mr_pool_state_copy(mr_pool_state *dst, const mr_pool_state *src);
/* dst's variables become src's; dst keeps its schema. */
bool mr_pool_state_copy_vars(mr_pool_state *dst, const mr_pool_state *src);

/* What a login fixed for a connection's whole life. */
typedef struct mr_pool_key {
    char user[96];
    uint32_t caps;     /* negotiated with the server */
    uint32_t ext_caps; /* MariaDB's extended ones */
    bool tls, zlib;    /* the backend leg's */
} mr_pool_key;

#define MR_POOL_WAIT_BUCKETS 8 /* waits under 1 ms * 4^i; the last holds the rest */

typedef struct mr_pool_user mr_pool_user;
typedef struct mr_pool mr_pool;

/* The character set variables at login (the handshake's collation, or
 * init_connect's SET NAMES): what undoing another session's SET NAMES
 * restores, since `SET x = DEFAULT` gives the global value instead. */
#define MR_POOL_LOGIN_VARS 4
extern const char *const mr_pool_login_var_names[MR_POOL_LOGIN_VARS];

/* One server connection of the pool. */
typedef struct mr_srv {
    mr_conn *conn;
    mr_pool *pool;
    mr_pool_user *user;
    uint32_t thread_id;
    uint64_t born_ns, idle_ns; /* opened; went idle (0: in use) */
    uint64_t units;            /* units of work it served */
    uint64_t session;          /* the session using it (0: idle) */
    uint64_t last_session;     /* the last session that used it */
    bool tracking;             /* the proxy's tracker settings are in force */
    uint64_t last_insert_id;   /* what LAST_INSERT_ID() gives on it */
    struct event *quit_timer;  /* closing for a login: its room comes when this fires */
    bool broken;               /* its state is unknown: closed, never lent again */
    mr_pool_state state;       /* system variables and schema it holds */
    char login[MR_POOL_LOGIN_VARS][64];
    bool login_known;
    struct mr_stmt_cache *stmts; /* the statements prepared on it (owned; NULL: none yet) */
    struct mr_srv *prev, *next;  /* its user's idle or busy list */
    unsigned hops;               /* moves between workers since it was last lent */
    unsigned move_to;            /* the worker it is on its way to */
} mr_srv;

/* A session waiting for a connection (or for room to log in). */
typedef struct mr_pool_wait mr_pool_wait;
/* srv: the connection lent (NULL with room: the login may connect now;
 * NULL with timed_out: pool_max_wait passed, or the pool is gone). */
typedef void (*mr_pool_ready)(void *arg, mr_srv *srv, bool timed_out);

/* The numbers of one key, as SHOW POOLS gives them (summed over workers). */
typedef struct mr_pool_row {
    char user[96];
    unsigned sessions, waiting, pinned; /* client sessions of the key */
    unsigned active, idle;              /* its server connections */
    uint64_t waits, wait_timeouts;
    uint64_t max_wait_us; /* how long the oldest session waiting has waited (PgBouncer's maxwait) */
} mr_pool_row;

/* One server connection, as SHOW SERVERS gives it. */
typedef struct mr_pool_srv_row {
    unsigned worker;
    char user[96];
    uint32_t thread_id;
    uint64_t session;
    bool idle;
    uint64_t age_ms, idle_ms, units;
} mr_pool_srv_row;

struct mr_pool_shared;
struct mr_pool_letter;

struct mr_pool {
    struct event_base *base;
    const mr_config *cfg;
    unsigned worker;
    struct mr_pool_shared *shared; /* what the workers' pools share (pool/shared.h) */
    unsigned total;                /* this worker's server connections, logins included */
    unsigned logins;               /* of which logging in */
    unsigned nclosing;      /* of which closing for a login (counted until the server lets go) */
    unsigned login_waiters; /* logins waiting for room */
    mr_srv *closing;        /* those closing */
    mr_pool_user *users;
    mr_pool_wait *wait_head, *wait_tail; /* FIFO */
    struct event *sweep;                 /* idle timeout and lifetime, once a second */
    struct event *kick;                  /* serves the logins waiting, from the loop */
    mr_srv *moving;                      /* leaving for another worker (io_uring: cancelling) */
    struct event *move_timer;            /* tries them again */
    pthread_mutex_t mail_lock;           /* guards the letters */
    struct mr_pool_letter *mail, *mail_tail;
    bool mail_closed;                /* the pool is going: no more letters */
    pthread_mutex_t lock;            /* guards what the snapshots copy */
    uint64_t pins[MR_PIN_REASONS];   /* pins made, by reason */
    uint64_t pinned[MR_PIN_REASONS]; /* sessions pinned now, by reason */
    uint64_t waits, wait_timeouts, evictions, replays, resets;
    uint64_t moves; /* idle connections that came from another worker */
    uint64_t wait_us_sum, wait_us_buckets[MR_POOL_WAIT_BUCKETS]; /* histogram of waits */
};

mr_pool *mr_pool_new(struct event_base *base, const mr_config *cfg, unsigned worker,
                     struct mr_pool_shared *shared);
void mr_pool_free(mr_pool *p);

/* A session of key k starts (logged in) or ends: the pool keeps a key's
 * last connection while sessions of it live, since only a login makes new
 * ones. */
mr_pool_user *mr_pool_user_get(mr_pool *p, const mr_pool_key *k);
void mr_pool_session_add(mr_pool_user *u, int delta);

/* Room to open a connection for a login: true when there is (counted as a
 * login now; mr_pool_login_done ends it), false when the pool is full of
 * connections in use: wait with mr_pool_wait_login. */
bool mr_pool_login_room(mr_pool *p);
/* The login ended: its connection joins the pool in use by the session
 * (returned), or (conn NULL: refused, failed) only its room is given back. */
mr_srv *mr_pool_login_done(mr_pool *p, mr_pool_user *u, mr_conn *conn, uint32_t thread_id,
                           uint64_t session);

/* An idle connection of u for the session: its own last one when idle
 * (nothing to replay, and ROW_COUNT() still its own), else one in the
 * session's schema, else the one given back last. A session without a
 * schema takes only a connection without one (no statement unselects a
 * schema). NULL: none idle. */
mr_srv *mr_pool_take(mr_pool_user *u, uint64_t session, const char *schema);
/* Queues the session (FIFO) until a connection of u is given back, or room
 * for a login (u NULL) frees; the answer comes through ready, at most once,
 * by pool_max_wait. The handle is freed by the pool after ready runs;
 * mr_pool_wait_cancel before that (the session ended). */
mr_pool_wait *mr_pool_wait_for(mr_pool *p, mr_pool_user *u, const char *schema, mr_pool_ready ready,
                               void *arg);
void mr_pool_wait_cancel(mr_pool_wait *w);
/* The session is done with srv: back to the pool (or to the first waiter),
 * or closed when broken or past pool_max_lifetime. srv->conn's callbacks
 * are the pool's from here on. */
void mr_pool_give_back(mr_srv *srv, uint64_t session);
/* srv's connection is gone or unusable: closed and forgotten. */
void mr_pool_drop(mr_srv *srv);

/* Is thread_id one of the pool's server connections (any thread)? Has u's
 * key no connection on any worker, and no login under way or waiting
 * anywhere that could bring one? */
bool mr_pool_holds_thread(mr_pool *p, uint32_t thread_id);
bool mr_pool_user_empty(const mr_pool_user *u);

/* A counter of the pool (or of one of its connections) that the snapshots
 * read, moved under the pool's lock; srv is lent to session now. */
void mr_pool_count(mr_pool *p, uint64_t *counter);
void mr_pool_lent(mr_srv *srv, uint64_t session);

/* Pin bookkeeping (counted per reason for SHOW PINS and /metrics): a
 * session of u is pinned for r (first: it was pinned for nothing before),
 * or no longer (last: nothing pins it now). */
void mr_pool_pin(mr_pool_user *u, mr_pin_reason r, bool first);
void mr_pool_unpin(mr_pool_user *u, mr_pin_reason r, bool last);

/* Snapshots for the admin console and /metrics (any thread). Rows are
 * added to *rows (grown with realloc); false: out of memory. */
bool mr_pool_rows(mr_pool *p, mr_pool_row **rows, size_t *n);
bool mr_pool_srv_rows(mr_pool *p, mr_pool_srv_row **rows, size_t *n);
/* The pool's counters, added into *t (summed over workers). */
typedef struct mr_pool_totals {
    uint64_t pins[MR_PIN_REASONS], pinned[MR_PIN_REASONS];
    uint64_t waits, wait_timeouts, evictions, replays, resets, moves;
    uint64_t connections, idle, logins, waiting;
    uint64_t wait_us_sum, wait_us_buckets[MR_POOL_WAIT_BUCKETS];
} mr_pool_totals;
void mr_pool_counters(mr_pool *p, mr_pool_totals *t);

#endif
