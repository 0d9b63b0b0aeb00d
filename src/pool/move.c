/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool/move.c - what the workers' pools share (see pool/shared.h): the
 * room under pool_max_connections across workers, each key's count (under
 * pool_size), and idle server connections moved from one worker to another
 * by letters.
 *
 * A move: worker B's session waits for key K and B has no idle K
 * connection; B asks a worker A that has one (a letter), A takes it off its
 * idle list and detaches it from its loop (io_uring: once the cancelled
 * recv came back), and posts it to B; B attaches it and lends it to its
 * first waiter. A connection given back goes to the session that has
 * waited longest for its key, on its own worker or another (each worker
 * says when its oldest waiter of each key began).
 */
#include <event2/event.h>
#include <stdlib.h>

#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"
#include "pool/pool_impl.h"

enum { LETTER_ASK, LETTER_CONN, LETTER_EVICT, LETTER_ROOM };

struct mr_pool_letter {
    int kind;
    mr_pool_skey *sk; /* ASK, CONN: the key */
    mr_srv *srv;      /* CONN: the connection, detached */
    unsigned from;    /* ASK: the asking worker */
    bool schema;      /* ASK: its waiter has a schema (takes one with a schema too) */
    unsigned passes;  /* ASK: workers it was passed on to */
    struct mr_pool_letter *next;
};

mr_pool_shared *mr_pool_shared_new(const mr_config *cfg, unsigned nworkers, mr_pool_wake wake,
                                   void *ctx)
{
    mr_pool_shared *sh = calloc(1, sizeof *sh);
    if (!sh)
        return NULL;
    sh->pools = calloc(nworkers ? nworkers : 1, sizeof *sh->pools);
    if (!sh->pools) {
        free(sh);
        return NULL;
    }
    sh->cfg = cfg;
    sh->nworkers = nworkers ? nworkers : 1;
    sh->key_cap = cfg->pool_size ? (unsigned)cfg->pool_size : 1;
    sh->cap = cfg->pool_max_connections ? (unsigned)cfg->pool_max_connections : sh->key_cap;
    sh->wake = wake;
    sh->ctx = ctx;
    pthread_mutex_init(&sh->lock, NULL);
    return sh;
}

void mr_pool_shared_free(mr_pool_shared *sh)
{
    if (!sh)
        return;
    for (mr_pool_skey *k = sh->keys, *next; k; k = next) {
        next = k->next;
        free(k->oldest);
        free(k);
    }
    pthread_mutex_destroy(&sh->lock);
    free(sh->travelling);
    free(sh->pools);
    free(sh);
}

void mr_pool_shared_join(mr_pool_shared *sh, mr_pool *p)
{
    pthread_mutex_lock(&sh->lock);
    sh->pools[p->worker] = p;
    pthread_mutex_unlock(&sh->lock);
}

void mr_pool_shared_leave(mr_pool_shared *sh, mr_pool *p)
{
    pthread_mutex_lock(&sh->lock);
    if (sh->pools[p->worker] == p)
        sh->pools[p->worker] = NULL; /* no letter reaches it from now on */
    pthread_mutex_unlock(&sh->lock);
}

mr_pool_skey *mr_pool_skey_get(mr_pool_shared *sh, const mr_pool_key *k)
{
    pthread_mutex_lock(&sh->lock);
    mr_pool_skey *sk = sh->keys;
    while (sk && !mr_pool_key_equal(&sk->key, k))
        sk = sk->next;
    if (!sk && (sk = calloc(1, sizeof *sk))) {
        sk->key = *k;
        sk->oldest = calloc(sh->nworkers, sizeof *sk->oldest);
        if (sk->oldest) {
            sk->next = sh->keys;
            sh->keys = sk;
        } else {
            free(sk);
            sk = NULL;
        }
    }
    pthread_mutex_unlock(&sh->lock);
    return sk;
}

void mr_pool_shared_count(mr_pool_shared *sh, int total, int logins, int closing)
{
    pthread_mutex_lock(&sh->lock);
    sh->total = (unsigned)((int)sh->total + total);
    sh->logins = (unsigned)((int)sh->logins + logins);
    sh->nclosing = (unsigned)((int)sh->nclosing + closing);
    pthread_mutex_unlock(&sh->lock);
}

bool mr_pool_shared_room(mr_pool_shared *sh, bool first)
{
    pthread_mutex_lock(&sh->lock);
    bool ok = first && sh->total < sh->cap;
    if (ok) {
        sh->total++;
        sh->logins++;
    }
    pthread_mutex_unlock(&sh->lock);
    return ok;
}

bool mr_pool_needs_eviction(mr_pool *p, bool arriving)
{
    mr_pool_shared *sh = p->shared;
    unsigned logins = atomic_load(&sh->login_waiters) + arriving;
    pthread_mutex_lock(&sh->lock);
    bool need = logins && sh->total >= sh->cap && sh->nclosing < logins;
    pthread_mutex_unlock(&sh->lock);
    return need;
}

/* ---- letters ---- */

/* Under sh->lock (x cannot go meanwhile). False: x is going. */
static bool post(mr_pool *x, mr_pool_letter letter)
{
    mr_pool_letter *l = malloc(sizeof *l);
    if (!l)
        return false;
    *l = letter;
    l->next = NULL;
    pthread_mutex_lock(&x->mail_lock);
    bool ok = !x->mail_closed;
    if (ok) {
        bool was_empty = !x->mail;
        if (x->mail_tail)
            x->mail_tail->next = l;
        else
            x->mail = l;
        x->mail_tail = l;
        if (was_empty) /* one wake for the letters until it reads them */
            x->shared->wake(x->shared->ctx, x->worker);
    }
    pthread_mutex_unlock(&x->mail_lock);
    if (!ok)
        free(l);
    return ok;
}

/* Can a waiter (with a schema or not) take srv? No schema takes no
 * connection with one: it would run in another's schema. */
static bool usable(const mr_srv *srv, bool schema) { return schema || !srv->state.schema[0]; }

/* x's first idle connection of sk the waiter can take (sk NULL: any idle
 * one). Under x->lock, or on x's worker. */
static mr_srv *find_idle(mr_pool *x, const mr_pool_skey *sk, bool schema)
{
    for (mr_pool_user *u = x->users; u; u = u->next)
        if (!sk || u->sk == sk)
            for (mr_srv *s = u->idle; s; s = s->next)
                if (!sk || usable(s, schema))
                    return s;
    return NULL;
}

/* Has x an idle connection of sk the waiter can take? Under sh->lock. */
static bool has_idle(mr_pool *x, const mr_pool_skey *sk, bool schema)
{
    pthread_mutex_lock(&x->lock);
    bool has = find_idle(x, sk, schema) != NULL;
    pthread_mutex_unlock(&x->lock);
    return has;
}

/* Posts l to the first worker after p's, other than the asker, that has an
 * idle connection of l.sk the waiter can take. */
static void ask(mr_pool *p, mr_pool_letter l)
{
    mr_pool_shared *sh = p->shared;
    pthread_mutex_lock(&sh->lock);
    for (unsigned i = 1; i < sh->nworkers; i++) {
        unsigned to = (p->worker + i) % sh->nworkers;
        mr_pool *x = sh->pools[to];
        if (to != l.from && x && has_idle(x, l.sk, l.schema) && post(x, l))
            break;
    }
    pthread_mutex_unlock(&sh->lock);
}

void mr_pool_ask_idle(mr_pool *p, mr_pool_user *u, bool schema)
{
    ask(p, (mr_pool_letter){.kind = LETTER_ASK, .sk = u->sk, .from = p->worker, .schema = schema});
}

void mr_pool_ask_evict(mr_pool *p)
{
    ask(p, (mr_pool_letter){.kind = LETTER_EVICT, .from = p->worker});
}

void mr_pool_room_freed(mr_pool *p)
{
    mr_pool_shared *sh = p->shared;
    mr_pool_serve_logins(p);
    if (!atomic_load(&sh->login_waiters))
        return;
    pthread_mutex_lock(&sh->lock); /* the rest of the room: logins waiting elsewhere */
    for (unsigned i = 1; i < sh->nworkers && sh->total < sh->cap; i++) {
        mr_pool *x = sh->pools[(p->worker + i) % sh->nworkers];
        if (!x)
            continue;
        pthread_mutex_lock(&x->lock);
        bool waits = x->login_waiters > 0;
        pthread_mutex_unlock(&x->lock);
        if (waits)
            post(x, (mr_pool_letter){.kind = LETTER_ROOM});
    }
    pthread_mutex_unlock(&sh->lock);
}

void mr_pool_oldest(mr_pool *p, mr_pool_user *u, uint64_t since)
{
    mr_pool_shared *sh = p->shared;
    mr_pool_skey *sk = u->sk;
    pthread_mutex_lock(&sh->lock);
    uint64_t old = sk->oldest[p->worker];
    sk->oldest[p->worker] = since;
    if (!old && since)
        atomic_fetch_add(&sk->waiting, 1);
    else if (old && !since)
        atomic_fetch_sub(&sk->waiting, 1);
    pthread_mutex_unlock(&sh->lock);
}

/* ---- moving a connection ---- */

/* A connection leaves a worker's lists (start) or joins one again, or is
 * closed on its way: KILL must know its thread id meanwhile. */
static void travel(mr_pool_shared *sh, uint32_t id, bool start)
{
    pthread_mutex_lock(&sh->lock);
    if (start && sh->ntravelling == sh->travelling_cap) {
        unsigned cap = sh->travelling_cap ? 2 * sh->travelling_cap : 8;
        uint32_t *t = realloc(sh->travelling, cap * sizeof *t);
        if (t) {
            sh->travelling = t;
            sh->travelling_cap = cap;
        }
    }
    if (start && sh->ntravelling < sh->travelling_cap)
        sh->travelling[sh->ntravelling++] = id;
    for (unsigned i = 0; !start && i < sh->ntravelling; i++)
        if (sh->travelling[i] == id) {
            sh->travelling[i] = sh->travelling[--sh->ntravelling];
            break;
        }
    pthread_mutex_unlock(&sh->lock);
}

bool mr_pool_travelling(const mr_pool_shared *sh, uint32_t thread_id)
{
    for (unsigned i = 0; i < sh->ntravelling; i++)
        if (sh->travelling[i] == thread_id)
            return true;
    return false;
}

/* A connection that left one pool and joined none: closed, its room freed
 * on p. */
static void lost(mr_pool *p, mr_srv *srv, mr_pool_skey *sk)
{
    travel(p->shared, srv->thread_id, false);
    mr_pool_srv_free(srv);
    atomic_fetch_sub(&sk->count, 1);
    mr_pool_shared_count(p->shared, -1, 0, 0);
    mr_pool_room_freed(p);
}

/* Detached now: posted to its worker. Later: tried again on the timer. */
static void try_move(mr_srv *srv)
{
    static const struct timeval soon = {0, 1000};
    mr_pool *p = srv->pool;
    mr_pool_skey *sk = srv->user->sk;
    int r = mr_conn_detach(srv->conn);
    if (r == MR_CONN_DETACH_LATER) {
        event_add(p->move_timer, &soon);
        return;
    }
    pthread_mutex_lock(&p->lock);
    mr_pool_unlink_srv(srv, &p->moving);
    pthread_mutex_unlock(&p->lock);
    bool sent = false;
    if (r == MR_CONN_DETACHED) {
        mr_pool_shared *sh = p->shared;
        srv->pool = NULL;
        srv->user = NULL; /* the receiver's own, once there */
        pthread_mutex_lock(&sh->lock);
        mr_pool *to = sh->pools[srv->move_to];
        sent = to && post(to, (mr_pool_letter){.kind = LETTER_CONN, .sk = sk, .srv = srv});
        pthread_mutex_unlock(&sh->lock);
    } else {
        mr_info(0, "pool: idle server connection %u had bytes waiting; closed, not moved",
                srv->thread_id);
    }
    if (!sent)
        lost(p, srv, sk);
}

void mr_pool_move_retry(evutil_socket_t fd, short what, void *arg)
{
    mr_pool *p = arg;
    (void)fd;
    (void)what;
    for (mr_srv *s = p->moving, *next; s; s = next) {
        next = s->next;
        try_move(s);
    }
}

/* srv, idle on p, leaves for worker `to`. */
static void move(mr_srv *srv, unsigned to)
{
    mr_pool *p = srv->pool;
    mr_pool_user *u = srv->user;
    travel(p->shared, srv->thread_id, true); /* before it leaves the idle list */
    pthread_mutex_lock(&p->lock);
    mr_pool_unlink_srv(srv, &u->idle);
    u->nidle--;
    p->total--;
    mr_pool_push_srv(srv, &p->moving);
    pthread_mutex_unlock(&p->lock);
    srv->move_to = to;
    srv->hops++;
    mr_debug(0, "pool: server connection %u moves from worker %u to worker %u", srv->thread_id,
             p->worker, to);
    try_move(srv);
}

bool mr_pool_move_out(mr_srv *srv, uint64_t than)
{
    mr_pool *p = srv->pool;
    mr_pool_user *u = srv->user;
    mr_pool_shared *sh = p->shared;
    if (srv->hops >= sh->nworkers) /* it went round unasked: stays until lent or asked for */
        return false;
    unsigned to = p->worker;
    pthread_mutex_lock(&sh->lock);
    uint64_t best = than;
    for (unsigned i = 0; i < sh->nworkers; i++) {
        uint64_t since = u->sk->oldest[i];
        if (i != p->worker && since && (!best || since < best)) {
            best = since;
            to = i;
        }
    }
    pthread_mutex_unlock(&sh->lock);
    if (to == p->worker)
        return false;
    move(srv, to);
    return true;
}

/* A connection from another worker: attached here, then lent like one
 * given back. */
static void arrive(mr_pool *p, mr_srv *srv, mr_pool_skey *sk)
{
    mr_pool_user *u = mr_pool_user_get(p, &sk->key);
    if (!u || !mr_conn_attach(srv->conn, p->base)) {
        mr_warn(0, "pool: out of memory taking server connection %u from another worker; closed",
                srv->thread_id);
        lost(p, srv, sk);
        return;
    }
    srv->pool = p;
    srv->user = u;
    mr_conn_set_callbacks(srv->conn, &mr_pool_idle_callbacks, srv);
    pthread_mutex_lock(&p->lock);
    mr_pool_push_srv(srv, &u->idle);
    u->nidle++;
    p->total++;
    p->moves++;
    srv->idle_ns = mr_mono_ns();
    pthread_mutex_unlock(&p->lock);
    travel(p->shared, srv->thread_id, false); /* once on the idle list */
    mr_conn_read_enable(srv->conn, true);     /* a server that closes it is seen */
    mr_pool_settle(srv);
}

/* Another worker's session waits for sk: one of p's idle ones it can take
 * goes to that worker, however often it moved before (a letter is always
 * honoured; only unasked moves are bounded). None left (lent since the
 * letter was posted): the request goes on to a worker that has one. */
static void give_idle(mr_pool *p, mr_pool_letter *l)
{
    mr_srv *srv = find_idle(p, l->sk, l->schema);
    if (srv)
        move(srv, l->from);
    else if (atomic_load(&l->sk->waiting) && ++l->passes < p->shared->nworkers)
        ask(p, *l);
}

static void read_letter(mr_pool *p, mr_pool_letter *l)
{
    switch (l->kind) {
    case LETTER_ASK: give_idle(p, l); break;
    case LETTER_CONN: arrive(p, l->srv, l->sk); break;
    case LETTER_EVICT:
        if (mr_pool_needs_eviction(p, false))
            mr_pool_evict_one(p);
        break;
    default: mr_pool_serve_logins(p); break;
    }
}

void mr_pool_mail(mr_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mail_lock);
    mr_pool_letter *l = p->mail;
    p->mail = p->mail_tail = NULL;
    pthread_mutex_unlock(&p->mail_lock);
    while (l) {
        mr_pool_letter *next = l->next;
        read_letter(p, l);
        free(l);
        l = next;
    }
}

void mr_pool_mail_close(mr_pool *p)
{
    pthread_mutex_lock(&p->mail_lock);
    p->mail_closed = true;
    mr_pool_letter *l = p->mail;
    p->mail = p->mail_tail = NULL;
    pthread_mutex_unlock(&p->mail_lock);
    for (mr_pool_letter *next; l; l = next) {
        next = l->next;
        if (l->kind == LETTER_CONN) {
            travel(p->shared, l->srv->thread_id, false);
            atomic_fetch_sub(&l->sk->count, 1);
            mr_pool_shared_count(p->shared, -1, 0, 0);
            mr_pool_srv_free(l->srv);
        }
        free(l);
    }
    while (p->moving) {
        mr_srv *s = p->moving;
        mr_pool_unlink_srv(s, &p->moving);
        travel(p->shared, s->thread_id, false);
        atomic_fetch_sub(&s->user->sk->count, 1);
        mr_pool_shared_count(p->shared, -1, 0, 0);
        mr_pool_srv_free(s);
    }
}
