/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/pool.c - one worker's server connections: keys, idle and busy lists,
 * the queue of waiting sessions, room for logins, idle timeout and lifetime
 * (see pool/pool.h). Worker thread only; the snapshots the console reads
 * are pool/rows.c, the room across workers and the moves between them
 * pool/move.c. About 800 lines, kept whole on purpose: the lists, the
 * waiters, the closes for a login and the sweep change the same counts
 * (each change of one is a change of the room), and split up they would
 * share every static of this file.
 */
#include "pool/pool_impl.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"
#include "myrewrite/pool/stmt_cache.h"

static const char *const pin_names[MR_PIN_REASONS] = {
    "transaction",   "next_transaction", "locked_tables", "user_variable", "temporary_table",
    "prepared",      "prepared_sql",     "lock_function", "found_rows",    "connection_id",
    "session_track", "state_change",     "feature",       "unknown_state", "change_user",
};

const char *mr_pin_reason_name(mr_pin_reason r) { return r < MR_PIN_REASONS ? pin_names[r] : "?"; }

const char *const mr_pool_login_var_names[MR_POOL_LOGIN_VARS] = {
    "character_set_client", "character_set_connection", "character_set_results",
    "collation_connection"};

/* ---- replayable state ---- */

void mr_pool_state_free(mr_pool_state *st)
{
    for (unsigned i = 0; i < st->n; i++) {
        free(st->v[i].name);
        free(st->v[i].value);
    }
    free(st->v);
    memset(st, 0, sizeof *st);
}

void mr_pool_state_clear_vars(mr_pool_state *st)
{
    char schema[sizeof st->schema];
    bool set = st->schema_set;
    memcpy(schema, st->schema, sizeof schema);
    mr_pool_state_free(st);
    memcpy(st->schema, schema, sizeof schema);
    st->schema_set = set;
}

const mr_pool_var *mr_pool_state_get(const mr_pool_state *st, const char *name)
{
    for (unsigned i = 0; i < st->n; i++)
        if (strcmp(st->v[i].name, name) == 0)
            return &st->v[i];
    return NULL;
}

bool mr_pool_state_set(mr_pool_state *st, const char *name, size_t nlen, const char *value,
                       size_t vlen)
{
    char *n = strndup(name, nlen), *v = strndup(value, vlen);
    if (!n || !v) {
        free(n);
        free(v);
        return false;
    }
    for (char *c = n; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    mr_pool_var *old = (mr_pool_var *)mr_pool_state_get(st, n);
    if (old) {
        free(n);
        free(old->value);
        old->value = v;
        return true;
    }
    if (st->n == st->cap) {
        unsigned cap = st->cap ? st->cap * 2 : 4;
        mr_pool_var *grown = realloc(st->v, cap * sizeof *grown);
        if (!grown) {
            free(n);
            free(v);
            return false;
        }
        st->v = grown;
        st->cap = cap;
    }
    st->v[st->n++] = (mr_pool_var){n, v};
    return true;
}

bool mr_pool_state_copy_vars(mr_pool_state *dst, const mr_pool_state *src)
{
    char schema[sizeof dst->schema];
    bool set = dst->schema_set;
    memcpy(schema, dst->schema, sizeof schema);
    bool ok = mr_pool_state_copy(dst, src);
    memcpy(dst->schema, schema, sizeof schema);
    dst->schema_set = set;
    return ok;
}

bool mr_pool_state_copy(mr_pool_state *dst, const mr_pool_state *src)
{
    mr_pool_state fresh = {0};
    for (unsigned i = 0; i < src->n; i++)
        if (!mr_pool_state_set(&fresh, src->v[i].name, strlen(src->v[i].name), src->v[i].value,
                               strlen(src->v[i].value))) {
            mr_pool_state_free(&fresh);
            return false;
        }
    memcpy(fresh.schema, src->schema, sizeof fresh.schema);
    fresh.schema_set = src->schema_set;
    mr_pool_state_free(dst);
    *dst = fresh;
    return true;
}

/* ---- lists ---- */

void mr_pool_unlink_srv(mr_srv *s, mr_srv **head)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        *head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

void mr_pool_push_srv(mr_srv *s, mr_srv **head)
{
    s->prev = NULL;
    s->next = *head;
    if (*head)
        (*head)->prev = s;
    *head = s;
}

bool mr_pool_key_equal(const mr_pool_key *a, const mr_pool_key *b)
{
    return strcmp(a->user, b->user) == 0 && a->caps == b->caps && a->ext_caps == b->ext_caps &&
           a->tls == b->tls && a->zlib == b->zlib;
}

mr_pool_user *mr_pool_user_get(mr_pool *p, const mr_pool_key *k)
{
    for (mr_pool_user *u = p->users; u; u = u->next)
        if (mr_pool_key_equal(&u->key, k))
            return u;
    mr_pool_skey *sk = mr_pool_skey_get(p->shared, k);
    mr_pool_user *u = sk ? calloc(1, sizeof *u) : NULL;
    if (!u)
        return NULL;
    u->key = *k;
    u->pool = p;
    u->sk = sk;
    pthread_mutex_lock(&p->lock);
    u->next = p->users;
    p->users = u;
    pthread_mutex_unlock(&p->lock);
    return u;
}

static void trim(mr_pool_user *u);

void mr_pool_session_add(mr_pool_user *u, int delta)
{
    pthread_mutex_lock(&u->pool->lock);
    u->sessions = (unsigned)((int)u->sessions + delta);
    pthread_mutex_unlock(&u->pool->lock);
    atomic_fetch_add(&u->sk->sessions, (unsigned)delta);
    if (delta < 0)
        trim(u);
}

/* ---- waiting ---- */

static void wait_unlink(mr_pool_wait *w)
{
    mr_pool *p = w->pool;
    if (w->prev)
        w->prev->next = w->next;
    else
        p->wait_head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        p->wait_tail = w->prev;
    if (w->user) {
        w->user->waiting--;
    } else {
        p->login_waiters--;
        atomic_fetch_sub(&p->shared->login_waiters, 1);
    }
}

/* Counts the wait in the histogram: bucket i holds waits under 1 ms * 4^i. */
static void wait_done(mr_pool_wait *w, bool timed_out)
{
    mr_pool *p = w->pool;
    uint64_t us = (mr_mono_ns() - w->since_ns) / 1000;
    bool first = w->user && mr_pool_first_waiter(p, w->user) == w;
    pthread_mutex_lock(&p->lock);
    wait_unlink(w);
    unsigned b = 0;
    for (uint64_t lim = 1000; b < MR_POOL_WAIT_BUCKETS - 1 && us >= lim; lim *= 4)
        b++;
    p->wait_us_buckets[b]++;
    p->wait_us_sum += us;
    if (timed_out)
        p->wait_timeouts++;
    if (w->user) {
        if (timed_out)
            w->user->wait_timeouts++;
    }
    pthread_mutex_unlock(&p->lock);
    if (w->timer)
        event_free(w->timer);
    if (first) { /* other workers see when this worker's oldest waiter began */
        mr_pool_wait *next = mr_pool_first_waiter(p, w->user);
        mr_pool_oldest(p, w->user, next ? next->since_ns : 0);
    }
}

static void wait_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    mr_pool_wait *w = arg;
    (void)fd;
    (void)what;
    mr_pool_ready ready = w->ready;
    void *rarg = w->arg;
    wait_done(w, true);
    free(w);
    ready(rarg, NULL, true);
}

mr_pool_wait *mr_pool_wait_for(mr_pool *p, mr_pool_user *u, const char *schema, mr_pool_ready ready,
                               void *arg)
{
    mr_pool_wait *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    *w = (mr_pool_wait){.pool = p,
                        .user = u,
                        .schema = schema ? schema : "",
                        .ready = ready,
                        .arg = arg,
                        .since_ns = mr_mono_ns()};
    uint64_t ms = p->cfg->pool_max_wait_ms;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    w->timer = event_new(p->base, -1, 0, wait_timeout_cb, w);
    if (!w->timer || event_add(w->timer, &tv) != 0) {
        if (w->timer)
            event_free(w->timer);
        free(w);
        return NULL;
    }
    pthread_mutex_lock(&p->lock);
    w->prev = p->wait_tail;
    if (p->wait_tail)
        p->wait_tail->next = w;
    else
        p->wait_head = w;
    p->wait_tail = w;
    p->waits++;
    bool first = u && u->waiting == 0;
    if (u) {
        u->waiting++;
        u->waits++;
    } else {
        p->login_waiters++;
        atomic_fetch_add(&p->shared->login_waiters, 1);
    }
    pthread_mutex_unlock(&p->lock);
    if (first)
        mr_pool_oldest(p, u, w->since_ns);
    if (u)
        mr_pool_ask_idle(p, u, w->schema[0]); /* another worker may have one idle */
    else
        event_active(p->kick, EV_TIMEOUT, 1); /* room freed since the caller looked */
    return w;
}

void mr_pool_wait_cancel(mr_pool_wait *w)
{
    if (!w)
        return;
    wait_done(w, false);
    free(w);
}

/* The first waiter for u (u NULL: the first waiting to log in). */
mr_pool_wait *mr_pool_first_waiter(mr_pool *p, const mr_pool_user *u)
{
    for (mr_pool_wait *w = p->wait_head; w; w = w->next)
        if (w->user == u)
            return w;
    return NULL;
}

static void answer(mr_pool_wait *w, mr_srv *srv)
{
    mr_pool_ready ready = w->ready;
    void *arg = w->arg;
    wait_done(w, false);
    free(w);
    ready(arg, srv, false);
}

/* ---- connections ---- */

static void idle_read_cb(mr_conn *c, void *arg);
static void idle_event_cb(mr_conn *c, int what, void *arg);
const mr_conn_callbacks mr_pool_idle_callbacks = {idle_read_cb, NULL, idle_event_cb};

/* May srv be closed to make room? Not a key's last one (on any worker)
 * while sessions of the key live: only their logins could make another. */
static bool evictable(const mr_srv *srv)
{
    const mr_pool_skey *sk = srv->user->sk;
    return atomic_load(&sk->sessions) == 0 || atomic_load(&sk->count) > 1;
}

/* The statements prepared on srv: nothing to close on the server, the
 * connection goes. */
static void free_stmts(mr_srv *srv)
{
    if (srv->stmts)
        mr_stmt_cache_clear(srv->stmts);
    free(srv->stmts);
    srv->stmts = NULL;
}

static void close_srv(mr_srv *srv)
{
    mr_pool *p = srv->pool;
    mr_pool_user *u = srv->user;
    pthread_mutex_lock(&p->lock);
    if (srv->idle_ns) {
        mr_pool_unlink_srv(srv, &u->idle);
        u->nidle--;
    } else {
        mr_pool_unlink_srv(srv, &u->busy);
        u->nbusy--;
    }
    p->total--;
    pthread_mutex_unlock(&p->lock);
    atomic_fetch_sub(&u->sk->count, 1);
    mr_pool_shared_count(p->shared, -1, 0, 0);
    if (srv->conn) {
        static const uint8_t quit[5] = {1, 0, 0, 0, 0x01}; /* COM_QUIT, best effort */
        if (srv->idle_ns && mr_conn_pending(srv->conn) == 0) {
            ssize_t n = send(mr_conn_fd(srv->conn), quit, sizeof quit, MSG_NOSIGNAL | MSG_DONTWAIT);
            (void)n;
        }
        mr_conn_free(srv->conn);
    }
    mr_pool_state_free(&srv->state);
    free_stmts(srv);
    free(srv);
}

void mr_pool_drop(mr_srv *srv)
{
    mr_pool *p = srv->pool;
    close_srv(srv);
    mr_pool_room_freed(p);
}

/* ---- making room for a login ----
 *
 * An idle connection closed for a login still counts until the server has
 * let it go: the proxy sends COM_QUIT and waits for the server to close the
 * socket (at most a second), so the login's new connection never makes the
 * server hold more than pool_max_connections of the proxy's at once. */

void mr_pool_srv_free(mr_srv *srv)
{
    if (srv->conn)
        mr_conn_free(srv->conn);
    if (srv->quit_timer)
        event_free(srv->quit_timer);
    mr_pool_state_free(&srv->state);
    free_stmts(srv);
    free(srv);
}

static void quit_room(evutil_socket_t fd, short what, void *arg)
{
    mr_srv *srv = arg;
    mr_pool *p = srv->pool;
    (void)fd;
    (void)what;
    pthread_mutex_lock(&p->lock);
    mr_pool_unlink_srv(srv, &p->closing);
    p->nclosing--;
    p->total--;
    pthread_mutex_unlock(&p->lock);
    atomic_fetch_sub(&srv->user->sk->count, 1);
    mr_pool_shared_count(p->shared, -1, 0, -1);
    mr_pool_srv_free(srv);
    mr_pool_room_freed(p);
}

/* The server closed its end. mariadbd counts a connection until its thread
 * is done with it, a moment after the socket closes: the room is given a
 * few milliseconds later, so Max_used_connections stays within pool_max_connections. */
static void quit_done(mr_srv *srv)
{
    static const struct timeval linger = {0, 10000};
    mr_conn_free(srv->conn);
    srv->conn = NULL;
    srv->quit_timer = event_new(srv->pool->base, -1, 0, quit_room, srv);
    if (!srv->quit_timer || event_add(srv->quit_timer, &linger) != 0)
        quit_room(-1, 0, srv);
}

static void quit_read_cb(mr_conn *c, void *arg)
{
    (void)arg;
    mr_conn_drain(c, mr_conn_input_length(c)); /* whatever it says, it is going */
}

static void quit_event_cb(mr_conn *c, int what, void *arg)
{
    (void)c;
    (void)what; /* EOF, an error or the second's timeout: gone either way */
    quit_done(arg);
}

static const mr_conn_callbacks quit_callbacks = {quit_read_cb, NULL, quit_event_cb};

static void quit_srv(mr_srv *srv)
{
    static const uint8_t quit[5] = {1, 0, 0, 0, 0x01}; /* COM_QUIT */
    mr_pool *p = srv->pool;
    mr_pool_user *u = srv->user;
    pthread_mutex_lock(&p->lock);
    mr_pool_unlink_srv(srv, &u->idle);
    u->nidle--;
    mr_pool_push_srv(srv, &p->closing);
    p->nclosing++;
    p->evictions++;
    pthread_mutex_unlock(&p->lock);
    mr_pool_shared_count(p->shared, 0, 0, 1);
    struct timeval sec = {1, 0};
    mr_conn_set_callbacks(srv->conn, &quit_callbacks, srv);
    mr_conn_set_timeout(srv->conn, &sec);
    mr_conn_write(srv->conn, quit, sizeof quit);
    mr_conn_read_enable(srv->conn, true);
}

/* Starts closing one idle connection for a login: false when none is idle.
 * A key's last connection goes only when no other is idle: the login is
 * most likely the same user's (one application, one account), and a login
 * that waited for room could not be made otherwise. */
bool mr_pool_evict_one(mr_pool *p)
{
    for (int pass = 0; pass < 2; pass++)
        for (mr_pool_user *u = p->users; u; u = u->next) {
            mr_srv *last = NULL;
            for (mr_srv *s = u->idle; s; s = s->next)
                last = s; /* the one idle longest */
            if (last && (pass == 1 || evictable(last))) {
                quit_srv(last);
                return true;
            }
        }
    return false;
}

bool mr_pool_login_room(mr_pool *p)
{
    if (!mr_pool_shared_room(p->shared, p->login_waiters == 0)) {
        if (mr_pool_needs_eviction(p, true))
            mr_pool_evict_one(p); /* none idle here: kick_cb asks the others once it waits */
        return false;             /* the caller waits: mr_pool_room_freed answers it in turn */
    }
    pthread_mutex_lock(&p->lock);
    p->total++;
    p->logins++;
    pthread_mutex_unlock(&p->lock);
    return true;
}

/* Room for one more connection: the first login waiting here gets it. */
void mr_pool_serve_logins(mr_pool *p)
{
    for (mr_pool_wait *w; (w = mr_pool_first_waiter(p, NULL));) {
        if (!mr_pool_shared_room(p->shared, true))
            return;
        pthread_mutex_lock(&p->lock);
        p->total++;
        p->logins++;
        pthread_mutex_unlock(&p->lock);
        answer(w, NULL);
    }
}

mr_srv *mr_pool_login_done(mr_pool *p, mr_pool_user *u, mr_conn *conn, uint32_t thread_id,
                           uint64_t session)
{
    mr_srv *srv = conn && u ? calloc(1, sizeof *srv) : NULL;
    mr_pool_shared_count(p->shared, srv ? 0 : -1, -1, 0);
    if (srv)
        atomic_fetch_add(&u->sk->count, 1);
    pthread_mutex_lock(&p->lock);
    p->logins--;
    if (srv) {
        srv->conn = conn;
        srv->pool = p;
        srv->user = u;
        srv->thread_id = thread_id;
        srv->born_ns = mr_mono_ns();
        srv->session = srv->last_session = session;
        mr_pool_push_srv(srv, &u->busy);
        u->nbusy++;
    } else {
        p->total--;
    }
    pthread_mutex_unlock(&p->lock);
    if (!srv)
        mr_pool_room_freed(p);
    return srv;
}

static void lend(mr_srv *srv, uint64_t session)
{
    mr_pool_user *u = srv->user;
    pthread_mutex_lock(&srv->pool->lock);
    mr_pool_unlink_srv(srv, &u->idle);
    u->nidle--;
    mr_pool_push_srv(srv, &u->busy);
    u->nbusy++;
    srv->idle_ns = 0;
    srv->session = session;
    pthread_mutex_unlock(&srv->pool->lock);
}

mr_srv *mr_pool_take(mr_pool_user *u, uint64_t session, const char *schema)
{
    mr_srv *pick = NULL, *same = NULL;
    for (mr_srv *s = u->idle; s && !pick; s = s->next) {
        bool here = strcmp(s->state.schema, schema) == 0;
        if (s->last_session == session && (here || schema[0]))
            pick = s;
        else if (!same && here)
            same = s;
    }
    if (!pick)
        pick = same ? same : schema[0] ? u->idle : NULL;
    if (pick)
        lend(pick, session);
    return pick;
}

void mr_pool_give_back(mr_srv *srv, uint64_t session)
{
    mr_pool *p = srv->pool;
    mr_pool_user *u = srv->user;
    uint64_t now = mr_mono_ns();
    uint64_t life = p->cfg->pool_max_lifetime_ms * 1000000ull;
    mr_pool_count(p, &srv->units);
    srv->last_session = session;
    mr_conn_set_callbacks(srv->conn, &mr_pool_idle_callbacks, srv);
    mr_conn_set_timeout(srv->conn, NULL);
    mr_conn_set_read_idle(srv->conn, NULL);
    /* a login of a key at pool_size made one too many: it goes at once */
    bool over = atomic_load(&u->sk->count) > p->shared->key_cap;
    if (srv->broken || over || (life && now - srv->born_ns > life && evictable(srv))) {
        mr_pool_drop(srv);
        return;
    }
    pthread_mutex_lock(&p->lock);
    mr_pool_unlink_srv(srv, &u->busy);
    u->nbusy--;
    mr_pool_push_srv(srv, &u->idle);
    u->nidle++;
    srv->idle_ns = now;
    srv->session = 0;
    srv->hops = 0;
    pthread_mutex_unlock(&p->lock);
    mr_conn_read_enable(srv->conn, true); /* a server that closes it is seen */
    mr_pool_settle(srv);
}

void mr_pool_settle(mr_srv *srv)
{
    mr_pool *p = srv->pool;
    mr_pool_user *u = srv->user;
    mr_pool_wait *w = mr_pool_first_waiter(p, u);
    while (w && !w->schema[0] && srv->state.schema[0]) /* it would run in another's schema */
        do
            w = w->next;
        while (w && w->user != u);
    /* another worker's session that has waited longer goes first (one atomic
     * read when no other worker waits for the key) */
    if (atomic_load_explicit(&u->sk->waiting, memory_order_relaxed) > (w != NULL) &&
        mr_pool_move_out(srv, w ? w->since_ns : 0))
        return;
    if (w) {
        lend(srv, 0);
        answer(w, srv);
        return;
    }
    if (atomic_load_explicit(&p->shared->login_waiters, memory_order_relaxed) &&
        mr_pool_needs_eviction(p, false))
        quit_srv(srv); /* a login waits for room (on any worker) */
    else if (!atomic_load(&u->sk->waiting))
        srv->hops = 0; /* settled where nobody waits: it may move unasked again */
}

/* A session ended: a key needs no more idle connections than it has
 * sessions holding none (and pool_min_idle); one more is closed now, so a later login
 * finds room at once instead of waiting for an idle one to be closed
 * (which costs it a round trip to the server). */
static void trim(mr_pool_user *u)
{
    mr_pool *p = u->pool;
    unsigned without = u->sessions > u->nbusy ? u->sessions - u->nbusy : 0; /* hold none now */
    if (u->nidle <= without + p->cfg->pool_min_idle || mr_pool_first_waiter(p, u) ||
        atomic_load(&u->sk->waiting)) /* another worker's session may want it */
        return;
    mr_srv *last = u->idle;
    while (last->next)
        last = last->next; /* the one idle longest */
    if (atomic_load(&p->shared->login_waiters))
        quit_srv(last); /* a login waits: its room once the server let go */
    else
        mr_pool_drop(last);
}

/* An idle connection speaks: a server closing it (wait_timeout's ERR, a
 * KILL) or a reply nobody asked for. Either way it is not lent again. */
static void idle_read_cb(mr_conn *c, void *arg)
{
    mr_srv *srv = arg;
    (void)c;
    mr_info(0, "pool: server connection %u (user %s) spoke while idle; closed", srv->thread_id,
            srv->user->key.user);
    mr_pool_drop(srv);
}

static void idle_event_cb(mr_conn *c, int what, void *arg)
{
    mr_srv *srv = arg;
    (void)c;
    (void)what;
    mr_debug(0, "pool: idle server connection %u closed by the server", srv->thread_id);
    mr_pool_drop(srv);
}

/* Logins wait on p and too few connections are closing for them: one idle
 * here is closed, else another worker is asked to close one. Asked only
 * once the login is queued (counted in login_waiters), since the worker
 * reading the letter checks that a login still needs the room. */
static void make_room(mr_pool *p)
{
    if (p->login_waiters && mr_pool_needs_eviction(p, false) && !mr_pool_evict_one(p))
        mr_pool_ask_evict(p);
}

/* Once a second: idle connections past pool_idle_timeout go, keeping
 * pool_min_idle of each key, and those past pool_max_lifetime (a key's
 * last while its sessions live stays: only a login makes another). */
static void sweep_cb(evutil_socket_t fd, short what, void *arg)
{
    mr_pool *p = arg;
    (void)fd;
    (void)what;
    uint64_t idle = p->cfg->pool_idle_timeout_ms * 1000000ull, now = mr_mono_ns();
    uint64_t life = p->cfg->pool_max_lifetime_ms * 1000000ull;
    for (mr_pool_user *u = p->users; u; u = u->next) {
        for (mr_srv *s = u->idle, *next; s; s = next) {
            next = s->next;
            bool idle_out = idle && now - s->idle_ns > idle && u->nidle > p->cfg->pool_min_idle;
            bool old = life && now - s->born_ns > life;
            if ((idle_out || old) && evictable(s))
                mr_pool_drop(s);
        }
    }
    make_room(p); /* a letter asking for room may have been lost */
}

/* A login waited: room may have come before it was queued, or must be made. */
static void kick_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    mr_pool_serve_logins(arg);
    make_room(arg);
}

mr_pool *mr_pool_new(struct event_base *base, const mr_config *cfg, unsigned worker,
                     mr_pool_shared *shared)
{
    mr_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->base = base;
    p->cfg = cfg;
    p->worker = worker;
    p->shared = shared;
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->mail_lock, NULL);
    p->sweep = event_new(base, -1, EV_PERSIST, sweep_cb, p);
    p->kick = event_new(base, -1, 0, kick_cb, p);
    p->move_timer = event_new(base, -1, 0, mr_pool_move_retry, p);
    struct timeval sec = {1, 0};
    if (!p->sweep || !p->kick || !p->move_timer || event_add(p->sweep, &sec) != 0) {
        mr_pool_free(p);
        return NULL;
    }
    mr_pool_shared_join(shared, p);
    return p;
}

void mr_pool_free(mr_pool *p)
{
    if (!p)
        return;
    if (p->sweep && p->kick && p->move_timer)
        mr_pool_shared_leave(p->shared, p);
    mr_pool_mail_close(p); /* no more letters; connections on their way here are closed */
    while (p->wait_head) {
        mr_pool_wait *w = p->wait_head;
        mr_pool_ready ready = w->ready;
        void *arg = w->arg;
        wait_done(w, true);
        free(w);
        ready(arg, NULL, true);
    }
    while (p->closing) { /* counted out as quit_room does (before their users go) */
        mr_srv *s = p->closing;
        mr_pool_unlink_srv(s, &p->closing);
        p->nclosing--;
        p->total--;
        atomic_fetch_sub(&s->user->sk->count, 1);
        mr_pool_shared_count(p->shared, -1, 0, -1);
        mr_pool_srv_free(s);
    }
    for (mr_pool_user *u = p->users, *next; u; u = next) {
        next = u->next;
        while (u->idle)
            close_srv(u->idle);
        while (u->busy)
            close_srv(u->busy);
        free(u);
    }
    if (p->sweep)
        event_free(p->sweep);
    if (p->kick)
        event_free(p->kick);
    if (p->move_timer)
        event_free(p->move_timer);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->mail_lock);
    free(p);
}

static bool in_list(const mr_srv *s, uint32_t thread_id)
{
    for (; s; s = s->next)
        if (s->thread_id == thread_id)
            return true;
    return false;
}

/* Lent, idle, leaving for another worker or closing for a login. */
static bool pool_holds(mr_pool *x, uint32_t thread_id)
{
    pthread_mutex_lock(&x->lock);
    bool found = in_list(x->moving, thread_id) || in_list(x->closing, thread_id);
    for (mr_pool_user *u = x->users; u && !found; u = u->next)
        found = in_list(u->busy, thread_id) || in_list(u->idle, thread_id);
    pthread_mutex_unlock(&x->lock);
    return found;
}

/* Every worker's pool and the connections between them, under the shared
 * lock: no connection starts or ends a move meanwhile, so none is missed. */
bool mr_pool_holds_thread(mr_pool *p, uint32_t thread_id)
{
    mr_pool_shared *sh = p->shared;
    pthread_mutex_lock(&sh->lock);
    bool found = mr_pool_travelling(sh, thread_id) || pool_holds(p, thread_id);
    for (unsigned i = 0; i < sh->nworkers && !found; i++)
        found = sh->pools[i] && sh->pools[i] != p && pool_holds(sh->pools[i], thread_id);
    pthread_mutex_unlock(&sh->lock);
    return found;
}

bool mr_pool_user_empty(const mr_pool_user *u)
{
    mr_pool_shared *sh = u->pool->shared;
    if (u->nidle + u->nbusy > 0 || atomic_load(&u->sk->count) > 0)
        return false;
    pthread_mutex_lock(&sh->lock);
    bool none = sh->logins == 0 && atomic_load(&sh->login_waiters) == 0 && sh->nclosing == 0;
    pthread_mutex_unlock(&sh->lock);
    return none;
}

void mr_pool_count(mr_pool *p, uint64_t *counter)
{
    pthread_mutex_lock(&p->lock);
    (*counter)++;
    pthread_mutex_unlock(&p->lock);
}

void mr_pool_lent(mr_srv *srv, uint64_t session)
{
    pthread_mutex_lock(&srv->pool->lock);
    srv->session = session;
    pthread_mutex_unlock(&srv->pool->lock);
}

void mr_pool_pin(mr_pool_user *u, mr_pin_reason r, bool first)
{
    mr_pool *p = u->pool;
    pthread_mutex_lock(&p->lock);
    p->pins[r]++;
    p->pinned[r]++;
    u->pinned += first;
    pthread_mutex_unlock(&p->lock);
}

void mr_pool_unpin(mr_pool_user *u, mr_pin_reason r, bool last)
{
    mr_pool *p = u->pool;
    pthread_mutex_lock(&p->lock);
    if (p->pinned[r])
        p->pinned[r]--;
    u->pinned -= last && u->pinned;
    pthread_mutex_unlock(&p->lock);
}
