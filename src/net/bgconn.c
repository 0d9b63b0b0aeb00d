/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/bgconn.c - a background thread holding the proxy's own libmysqlclient
 * connection: connect with backoff, session setup, a FIFO of jobs and the
 * owner's periodic tick (see net/bgconn.h). A lazy owner's connection opens
 * at its first job or wake and closes after own_connection_idle without one.
 *
 * The thread it starts is the only one that touches the MYSQL handle and
 * runs jobs; other threads only queue jobs and wake it under `lock`. Owns
 * the handle, the job list and copies of the account and address.
 */
#include "myrewrite/net/bgconn.h"

#include <errmsg.h>
#include <errno.h>
#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "myrewrite/base/buf.h"
#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"
#include "myrewrite/net/tls.h"

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 5000
/* A connection not checked for this long is pinged before the next round. */
#define IDLE_PING_MS 1000

typedef struct job {
    mr_bg_job_fn fn;
    void (*drop)(void *arg); /* called for a job never run (NULL: none) */
    void *arg;
    struct job *next;
} job;

struct mr_bgconn {
    mr_bgconn_ops ops;
    char *user, *password;
    mr_backend_tls tls;       /* backend_tls, as for the sessions */
    char *tls_ca;             /* backend_tls_ca */
    char *tls_cert, *tls_key; /* backend_tls_cert, backend_tls_key: "" for none */
    bool compress;            /* backend_compress: the same link as the sessions' */
    mr_addr addr;
    char backend[300];
    unsigned connect_timeout_s;
    unsigned io_timeout_s; /* own_connection_timeout: read and write timeouts */
    uint64_t idle_ms;      /* own_connection_idle: a lazy owner's idle close */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* CLOCK_MONOTONIC */
    job *head, *tail;    /* guarded by lock */
    bool woken, stop;    /* guarded by lock */
    bool wanted;         /* a job or wake since the thread last looked (lock) */
    _Atomic bool connected;
    _Atomic bool resting;             /* no connection because none was needed (not a failure) */
    _Atomic unsigned failed_connects; /* connect attempts that failed, ever */
    MYSQL *db;                        /* thread only */
    bool failing;                     /* the last connect failed (thread only): quieter logs */
    uint64_t checked_ms;              /* when db was last pinged or connected (thread only) */
    uint64_t wanted_ms;               /* the last job or wake the thread saw (thread only) */
    bool ever_wanted;                 /* one was seen at all (thread only) */
    bool nothing_due;                 /* the last tick had no periodic work (thread only) */
};

bool mr_bg_conn_broken(MYSQL *db)
{
    unsigned e = mysql_errno(db);
    return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST || e == CR_CONNECTION_ERROR ||
           e == CR_CONN_HOST_ERROR || e == 1927 /* ER_CONNECTION_KILLED */ ||
           e == 4031 /* ER_CLIENT_INTERACTION_TIMEOUT */ || e == 1053 /* ER_SERVER_SHUTDOWN */;
}

bool mr_bg_query(MYSQL *db, const char *sql, const char *what)
{
    if (mysql_query(db, sql) == 0)
        return true;
    mr_warn(0, "%s failed: %u %s", what, mysql_errno(db), mysql_error(db));
    return false;
}

bool mr_bg_query_buf(MYSQL *db, const mr_buf *b, const char *rule, const char *what)
{
    if (b->failed) {
        mr_error(0, "delayed %s: out of memory, or a name MariaDB cannot take, building %s", rule,
                 what);
        return false;
    }
    if (mysql_real_query(db, (const char *)b->data, (unsigned long)b->len) == 0)
        return true;
    mr_warn(0, "delayed %s: %s failed: %u %s", rule, what, mysql_errno(db), mysql_error(db));
    return false;
}

/* ---- connecting ---------------------------------------------------------------- */

/* Backslash escapes on (sql/quote.c writes literals with them), claims
 * read as committed, and no long waits behind a worker's row locks. */
static bool setup_session(mr_bgconn *b)
{
    static const char *const setup[] = {
        "SET SESSION sql_mode = TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@SESSION.sql_mode, ','),"
        " ',NO_BACKSLASH_ESCAPES,', ','))",
        "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
        "SET SESSION innodb_lock_wait_timeout = 10",
    };
    for (size_t i = 0; i < sizeof setup / sizeof setup[0]; i++)
        if (!mr_bg_query(b->db, setup[i], "own connection setup"))
            return false;
    return true;
}

/* backend_tls for the proxy's own connections: prefer asks for TLS when
 * the server offers it, require insists, verify_ca gives the CA (the
 * library then verifies the chain), verify_identity also the host name.
 * backend_tls_cert is shown as the sessions show it. The library reads the
 * files at each connect, so rotated ones are picked up without a reload. */
static void set_tls_options(mr_bgconn *b)
{
    if (b->tls == MR_BTLS_OFF)
        return;
    my_bool enforce = b->tls >= MR_BTLS_REQUIRE, verify = b->tls >= MR_BTLS_VERIFY_IDENTITY;
    mysql_ssl_set(b->db, b->tls_key[0] ? b->tls_key : NULL, b->tls_cert[0] ? b->tls_cert : NULL,
                  b->tls >= MR_BTLS_VERIFY_CA ? b->tls_ca : NULL, NULL, NULL);
    mysql_optionsv(b->db, MYSQL_OPT_SSL_ENFORCE, &enforce);
    mysql_optionsv(b->db, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
}

static void set_options(mr_bgconn *b)
{
    unsigned io = b->io_timeout_s;
    unsigned proto = b->addr.is_unix ? MYSQL_PROTOCOL_SOCKET : MYSQL_PROTOCOL_TCP;
    my_bool no = 0;
    mysql_options(b->db, MYSQL_OPT_CONNECT_TIMEOUT, &b->connect_timeout_s);
    mysql_options(b->db, MYSQL_OPT_READ_TIMEOUT, &io);
    mysql_options(b->db, MYSQL_OPT_WRITE_TIMEOUT, &io);
    mysql_options(b->db, MYSQL_OPT_PROTOCOL, &proto);
    mysql_options(b->db, MYSQL_OPT_RECONNECT, &no);
    mysql_options(b->db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (b->compress) /* the flushers' multi-row statements, the schema reads */
        mysql_options(b->db, MYSQL_OPT_COMPRESS, NULL);
    set_tls_options(b);
}

static void drop_connection(mr_bgconn *b)
{
    if (b->db)
        mysql_close(b->db);
    b->db = NULL;
    atomic_store(&b->connected, false);
}

static bool connect_db(mr_bgconn *b)
{
    b->db = mysql_init(NULL);
    if (!b->db)
        return false;
    set_options(b);
    const mr_addr *a = &b->addr;
    bool ok = mysql_real_connect(b->db, a->is_unix ? "localhost" : a->host, b->user, b->password,
                                 NULL, a->is_unix ? 0 : (unsigned)atoi(a->port),
                                 a->is_unix ? a->path : NULL, 0) != NULL;
    if (!ok) {
        mr_log(b->failing ? MR_LOG_DEBUG : MR_LOG_WARN, 0,
               "%s: own connection to %s as %s failed: %u %s; retrying with backoff", b->ops.name,
               b->backend, b->user, mysql_errno(b->db), mysql_error(b->db));
        b->failing = true;
        drop_connection(b);
        return false;
    }
    if (!setup_session(b) || (b->ops.on_connect && !b->ops.on_connect(b->db, b->ops.arg))) {
        drop_connection(b);
        return false;
    }
    const char *cipher = mysql_get_ssl_cipher(b->db);
    mr_info(0, "%s: own connection to %s as %s up (connection id %lu, %s%s)", b->ops.name,
            b->backend, b->user, mysql_thread_id(b->db), cipher ? "TLS " : "no TLS",
            cipher ? cipher : "");
    b->failing = false;
    b->checked_ms = mr_mono_ms();
    atomic_store(&b->connected, true);
    return true;
}

/* ---- the thread ------------------------------------------------------------------ */

/* Sleeps up to ms, or until woken or stopped. False once stopping. */
static bool wait_for(mr_bgconn *b, uint64_t ms)
{
    struct timespec ts = mr_deadline_in(CLOCK_MONOTONIC, ms);
    pthread_mutex_lock(&b->lock);
    while (!b->woken && !b->stop && pthread_cond_timedwait(&b->cond, &b->lock, &ts) != ETIMEDOUT)
        ;
    b->woken = false;
    bool go_on = !b->stop;
    pthread_mutex_unlock(&b->lock);
    return go_on;
}

static job *pop_job(mr_bgconn *b)
{
    pthread_mutex_lock(&b->lock);
    job *j = b->head;
    if (j) {
        b->head = j->next;
        if (!b->head)
            b->tail = NULL;
    }
    pthread_mutex_unlock(&b->lock);
    return j;
}

static void push_front(mr_bgconn *b, job *j)
{
    pthread_mutex_lock(&b->lock);
    j->next = b->head;
    b->head = j;
    if (!b->tail)
        b->tail = j;
    pthread_mutex_unlock(&b->lock);
}

/* Runs queued jobs in order; false when the connection broke. */
static bool run_jobs(mr_bgconn *b)
{
    job *j;
    while ((j = pop_job(b))) {
        if (!j->fn(b->db, j->arg)) {
            push_front(b, j);
            return false;
        }
        free(j);
    }
    return true;
}

/* True when db went away meanwhile (say mysqld restarted): the server's
 * close is only seen on the next use, and that use may be a flush that a
 * client waits for, or the final flush at shutdown; a ping finds it first,
 * so the owner's next tick runs on a fresh connection instead of failing.
 * Ticks that find nothing to do do not touch db, so the ping goes by time
 * since the last check, not since the last tick: at most one a second. */
static bool gone_while_idle(mr_bgconn *b)
{
    uint64_t now = mr_mono_ms();
    if (now - b->checked_ms < IDLE_PING_MS)
        return false;
    b->checked_ms = now;
    return mysql_ping(b->db) != 0 && mr_bg_conn_broken(b->db);
}

/* Notes a job or wake asked for since the last look (wanted_ms). */
static void take_wanted(mr_bgconn *b)
{
    pthread_mutex_lock(&b->lock);
    bool w = b->wanted || b->head;
    b->wanted = false;
    pthread_mutex_unlock(&b->lock);
    if (w) {
        b->wanted_ms = mr_mono_ms();
        b->ever_wanted = true;
    }
}

/* How long a lazy owner's connection (or one whose tick has nothing due)
 * may still stay open without a job or wake; 0: close it, or do not open
 * it. Others: always open. */
static uint64_t idle_left(const mr_bgconn *b)
{
    if (!b->ops.lazy && !b->nothing_due)
        return UINT64_MAX;
    uint64_t since = mr_mono_ms() - b->wanted_ms;
    return b->ever_wanted && since < b->idle_ms ? b->idle_ms - since : 0;
}

/* A lazy owner with no work for own_connection_idle: its connection goes,
 * so the server sees no idle session of the proxy's own. */
static void close_idle(mr_bgconn *b)
{
    mr_info(0,
            "%s: own connection closed after %llu ms without work; it opens again at the "
            "next job",
            b->ops.name, (unsigned long long)b->idle_ms);
    drop_connection(b);
    atomic_store(&b->resting, true);
}

static void *thread_main(void *arg)
{
    mr_bgconn *b = arg;
    uint64_t backoff = BACKOFF_FIRST_MS;
    mysql_thread_init();
    for (;;) {
        take_wanted(b);
        if (!b->db && !idle_left(b)) {
            if (!wait_for(b, 60000))
                break;
            continue;
        }
        bool connecting = !b->db;
        if (connecting && !connect_db(b)) {
            atomic_store(&b->resting, false);
            atomic_fetch_add(&b->failed_connects, 1);
            if (b->ops.on_connect_failed)
                b->ops.on_connect_failed("cannot connect (see the log)", b->ops.arg);
            if (!wait_for(b, backoff))
                break;
            backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
            continue;
        }
        backoff = BACKOFF_FIRST_MS;
        if (connecting)
            atomic_store(&b->resting, false);
        if (gone_while_idle(b)) {
            mr_warn(0, "%s: own connection lost (%u %s, found by a ping); reconnecting",
                    b->ops.name, mysql_errno(b->db), mysql_error(b->db));
            drop_connection(b);
            continue;
        }
        uint64_t delay = 60000;
        bool ok = run_jobs(b);
        if (ok && b->ops.tick) {
            delay = b->ops.tick(b->db, b->ops.arg);
            b->nothing_due = delay == MR_BG_NOTHING_DUE;
            if (b->nothing_due)
                delay = 60000;
        }
        if (!ok || mr_bg_conn_broken(b->db)) {
            mr_warn(0, "%s: own connection lost (%u %s); reconnecting", b->ops.name,
                    mysql_errno(b->db), mysql_error(b->db));
            drop_connection(b);
            delay = 0;
        }
        uint64_t left = b->db ? idle_left(b) : UINT64_MAX;
        if (!left)
            close_idle(b);
        else if (left < delay)
            delay = left;
        if (!wait_for(b, delay))
            break;
    }
    drop_connection(b);
    mysql_thread_end();
    return NULL;
}

/* ---- the API ------------------------------------------------------------------- */

static void bg_free(mr_bgconn *b)
{
    job *j;
    while ((j = b->head)) {
        b->head = j->next;
        if (j->drop)
            j->drop(j->arg);
        free(j);
    }
    pthread_cond_destroy(&b->cond);
    pthread_mutex_destroy(&b->lock);
    free(b->user);
    free(b->password);
    free(b->tls_ca);
    free(b->tls_cert);
    free(b->tls_key);
    free(b);
}

static bool init_sync(mr_bgconn *b)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return false;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    bool ok = pthread_cond_init(&b->cond, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (ok && pthread_mutex_init(&b->lock, NULL) != 0) {
        pthread_cond_destroy(&b->cond);
        ok = false;
    }
    return ok;
}

/* mysql_library_init is not thread-safe: done once, on the main thread. */
static bool library_ready(void)
{
    static bool done;
    if (!done)
        done = mysql_library_init(0, NULL, NULL) == 0;
    return done;
}

static mr_bgconn *bg_new(const mr_config *cfg, const char *backend, const mr_bgconn_ops *ops)
{
    mr_bgconn *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    if (!init_sync(b)) {
        free(b);
        return NULL;
    }
    b->ops = *ops;
    b->user = strdup(cfg->proxy_user);
    b->password = strdup(cfg->proxy_password ? cfg->proxy_password : "");
    b->tls = mr_backend_tls_parse(cfg->backend_tls);
    b->tls_ca = strdup(cfg->backend_tls_ca);
    b->tls_cert = strdup(cfg->backend_tls_cert);
    b->tls_key = strdup(cfg->backend_tls_key);
    b->compress = cfg->backend_compress;
    snprintf(b->backend, sizeof b->backend, "%s", backend);
    uint64_t s = (cfg->connect_timeout_ms + 999) / 1000;
    b->connect_timeout_s = s ? (unsigned)s : 1;
    uint64_t io = (cfg->own_connection_timeout_ms + 999) / 1000;
    b->io_timeout_s = io ? (unsigned)io : 1;
    b->idle_ms = cfg->own_connection_idle_ms ? cfg->own_connection_idle_ms : 1;
    if (!b->user || !b->password || !b->tls_ca || !b->tls_cert || !b->tls_key) {
        bg_free(b);
        return NULL;
    }
    return b;
}

mr_bgconn *mr_bgconn_start(const mr_config *cfg, const char *backend, const mr_bgconn_ops *ops)
{
    if (!cfg->proxy_user || !cfg->proxy_user[0]) {
        mr_warn(0,
                "%s: no proxy_user configured, so the proxy has no connection of its own; "
                "%s is off (set proxy_user and proxy_password)",
                ops->name, ops->name);
        return NULL;
    }
    mr_addr a;
    if (!mr_addr_parse(backend, &a)) {
        mr_error(0, "%s: cannot read backend address '%s'; %s is off", ops->name, backend,
                 ops->name);
        return NULL;
    }
    mr_bgconn *b = library_ready() ? bg_new(cfg, backend, ops) : NULL;
    if (!b) {
        mr_error(0, "%s: cannot start its background thread; %s is off", ops->name, ops->name);
        return NULL;
    }
    b->addr = a;
    b->wanted = !ops->lazy; /* the others connect at once */
    atomic_store(&b->resting, ops->lazy);
    if (pthread_create(&b->thread, NULL, thread_main, b) != 0) {
        mr_error(0, "%s: cannot start its background thread; %s is off", ops->name, ops->name);
        bg_free(b);
        return NULL;
    }
    return b;
}

bool mr_bgconn_submit(mr_bgconn *b, mr_bg_job_fn fn, void *arg)
{
    return mr_bgconn_submit_job(b, fn, NULL, arg);
}

bool mr_bgconn_submit_job(mr_bgconn *b, mr_bg_job_fn fn, void (*drop)(void *arg), void *arg)
{
    job *j = malloc(sizeof *j);
    if (!j)
        return false;
    *j = (job){.fn = fn, .drop = drop, .arg = arg};
    pthread_mutex_lock(&b->lock);
    if (b->tail)
        b->tail->next = j;
    else
        b->head = j;
    b->tail = j;
    b->woken = b->wanted = true;
    pthread_cond_signal(&b->cond);
    pthread_mutex_unlock(&b->lock);
    return true;
}

void mr_bgconn_wake(mr_bgconn *b)
{
    pthread_mutex_lock(&b->lock);
    if (!b->woken) /* else a wake is pending: the thread has not looked since */
        pthread_cond_signal(&b->cond);
    b->woken = b->wanted = true;
    pthread_mutex_unlock(&b->lock);
}

bool mr_bgconn_connected(const mr_bgconn *b) { return atomic_load(&b->connected); }

unsigned mr_bgconn_connect_failures(const mr_bgconn *b) { return atomic_load(&b->failed_connects); }

bool mr_bgconn_usable(const mr_bgconn *b)
{
    return atomic_load(&b->connected) || atomic_load(&b->resting);
}

void mr_bgconn_stop(mr_bgconn *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    b->stop = true;
    pthread_cond_signal(&b->cond);
    pthread_mutex_unlock(&b->lock);
    pthread_join(b->thread, NULL);
    bg_free(b);
}
