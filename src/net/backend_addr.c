/* SPDX-License-Identifier: Apache-2.0 */
/*
 * net/backend_addr.c - where the backend is (net/backend_addr.h): resolved on the main
 * thread at start, then, for a host name, again on a thread of its own
 * every RESOLVE_MS and soon after a connect fails, so the proxy follows a
 * backend whose address changes (a database container restarted by
 * docker compose gets a new one), and every UNRESOLVED_MS while it has
 * never resolved (one that is not up yet when the proxy starts). Workers
 * copy the address under a mutex held for a memcpy.
 */
#include "myrewrite/net/backend_addr.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "myrewrite/base/clock.h"
#include "myrewrite/base/log.h"

#define RESOLVE_MS 10000    /* between lookups of a host name */
#define SUSPECT_GAP_MS 1000 /* at most one extra lookup per second after failed connects */
#define UNRESOLVED_MS 1000  /* between lookups of a name that has never resolved */

static struct {
    pthread_mutex_t lock; /* the fields below but p's address */
    pthread_cond_t cond;
    bool stop, suspect, running;
    bool failing; /* the last lookup failed (warned once until one works) */
    pthread_t thread;
    mr_proxy *p;
    mr_addr a;
} R = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static bool same_addr(const struct sockaddr *x, socklen_t xl, const struct sockaddr_storage *y,
                      socklen_t yl)
{
    return xl == yl && memcmp(x, y, xl) == 0;
}

/* Publishes the first address of `res`, unless the one in use is among
 * them (round-robin DNS answers in turn: staying avoids flapping). True
 * when the address changed. */
static bool publish(mr_proxy *p, const struct addrinfo *res)
{
    bool changed = true;
    pthread_mutex_lock(&p->backend_lock);
    for (const struct addrinfo *r = res; r && changed; r = r->ai_next)
        changed = !same_addr(r->ai_addr, r->ai_addrlen, &p->backend_addr, p->backend_addr_len);
    if (changed) {
        memcpy(&p->backend_addr, res->ai_addr, res->ai_addrlen);
        p->backend_addr_len = res->ai_addrlen;
    }
    pthread_mutex_unlock(&p->backend_lock);
    return changed;
}

bool mr_backend_resolve(mr_proxy *p, const char *spec, char *err, size_t errlen)
{
    mr_addr a;
    if (!mr_addr_parse(spec, &a)) {
        snprintf(err, errlen, "backend '%s' is not host:port or a socket path", spec);
        return false;
    }
    snprintf(p->backend_name, sizeof(p->backend_name), "%s", a.is_unix ? a.path : spec);
    if (a.is_unix) {
        struct sockaddr_un *sun = (struct sockaddr_un *)&p->backend_addr;
        memset(sun, 0, sizeof(*sun));
        sun->sun_family = AF_UNIX;
        strcpy(sun->sun_path, a.path);
        p->backend_addr_len = sizeof(*sun);
        return true;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res;
    p->backend_addr_len = 0;
    int rc = getaddrinfo(a.host, a.port, &hints, &res);
    if (rc != 0) {
        mr_warn(0,
                "backend %s: %s; starting anyway, looking it up every second (clients get "
                "an ERR until it resolves)",
                spec, gai_strerror(rc));
        return true;
    }
    publish(p, res);
    freeaddrinfo(res);
    return true;
}

void mr_backend_addr(mr_proxy *p, struct sockaddr_storage *addr, socklen_t *len)
{
    pthread_mutex_lock(&p->backend_lock);
    memcpy(addr, &p->backend_addr, p->backend_addr_len);
    *len = p->backend_addr_len;
    pthread_mutex_unlock(&p->backend_lock);
}

static bool unresolved(void)
{
    struct sockaddr_storage a;
    socklen_t len;
    mr_backend_addr(R.p, &a, &len);
    return len == 0;
}

static void lookup(void)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res;
    int rc = getaddrinfo(R.a.host, R.a.port, &hints, &res);
    if (rc != 0) {
        if (!R.failing)
            mr_warn(0, "backend %s: %s; %s", R.p->backend_name, gai_strerror(rc),
                    unresolved() ? "still no address to connect to"
                                 : "connecting to the address it had");
        R.failing = true;
        return;
    }
    R.failing = false;
    if (publish(R.p, res)) {
        char ip[INET6_ADDRSTRLEN] = "?";
        const struct sockaddr *sa = res->ai_addr;
        const void *bytes = sa->sa_family == AF_INET
                                ? (const void *)&((const struct sockaddr_in *)sa)->sin_addr
                                : (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
        inet_ntop(sa->sa_family, bytes, ip, sizeof ip);
        mr_info(0, "backend %s now resolves to %s; new connections go there", R.p->backend_name,
                ip);
    }
    freeaddrinfo(res);
}

static void *watch(void *arg)
{
    (void)arg;
    uint64_t last = unresolved() ? 0 : mr_mono_ms();
    pthread_mutex_lock(&R.lock);
    while (!R.stop) {
        uint64_t now = mr_mono_ms();
        uint64_t every = unresolved() ? UNRESOLVED_MS : RESOLVE_MS;
        bool due = now - last >= every || (R.suspect && now - last >= SUSPECT_GAP_MS);
        if (!due) {
            uint64_t gap = R.suspect && SUSPECT_GAP_MS < every ? SUSPECT_GAP_MS : every;
            uint64_t wait = gap - (now - last);
            struct timespec until = mr_deadline_in(CLOCK_MONOTONIC, wait);
            pthread_cond_timedwait(&R.cond, &R.lock, &until);
            continue;
        }
        R.suspect = false;
        pthread_mutex_unlock(&R.lock);
        lookup(); /* blocking: the reason this thread exists */
        last = mr_mono_ms();
        pthread_mutex_lock(&R.lock);
    }
    pthread_mutex_unlock(&R.lock);
    return NULL;
}

/* An IP literal or a socket path never changes: no thread for those. */
static bool is_host_name(const mr_addr *a)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return !a->is_unix && inet_pton(AF_INET, a->host, buf) != 1 &&
           inet_pton(AF_INET6, a->host, buf) != 1;
}

void mr_backend_watch_start(mr_proxy *p, const char *spec)
{
    mr_addr a;
    if (!mr_addr_parse(spec, &a) || !is_host_name(&a))
        return;
    R.p = p;
    R.a = a;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&R.cond, &ca);
    pthread_condattr_destroy(&ca);
    R.running = pthread_create(&R.thread, NULL, watch, NULL) == 0;
    if (!R.running)
        mr_warn(0, "backend %s: no resolver thread; its address stays as resolved at start",
                p->backend_name);
}

void mr_backend_suspect(void)
{
    pthread_mutex_lock(&R.lock);
    if (R.running && !R.suspect) {
        R.suspect = true;
        pthread_cond_signal(&R.cond);
    }
    pthread_mutex_unlock(&R.lock);
}

void mr_backend_watch_stop(void)
{
    pthread_mutex_lock(&R.lock);
    R.stop = true;
    pthread_cond_signal(&R.cond);
    bool running = R.running;
    R.running = false;
    pthread_mutex_unlock(&R.lock);
    if (running)
        pthread_join(R.thread, NULL);
}
