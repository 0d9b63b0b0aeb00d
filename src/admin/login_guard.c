/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/login_guard.c - the console's back-off on failed logins, per source
 * address (see admin/admin_impl.h), and the console's login counters.
 *
 * Each address that failed to log in has an entry: its failures and the
 * time before which a new connection from it is refused at once (ERR
 * 1129). The first FREE_FAILURES failures cost nothing (a mistyped
 * password); each one after doubles the wait, from FIRST_WAIT_MS up to
 * MAX_WAIT_MS. A login that succeeds clears the address; an entry not
 * touched for FORGET_MS is forgotten. A full table gives up its least
 * recently touched entry.
 *
 * Console thread only, but the counters, which /metrics reads (relaxed
 * atomics).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "admin/admin_impl.h"
#include "myrewrite/admin/admin.h"
#include "myrewrite/base/clock.h"

#define ENTRIES 64
#define FREE_FAILURES 3
#define FIRST_WAIT_MS 250
#define MAX_WAIT_MS 5000
#define FORGET_MS 300000

typedef struct entry {
    mr_admin_addr addr;
    unsigned failures;
    uint64_t until_ms; /* refused before this */
    uint64_t touched_ms;
} entry;

static entry table[ENTRIES]; /* console thread only */
static mr_admin_stats stats;

const mr_admin_stats *mr_admin_stats_get(void) { return &stats; }

void mr_admin_count(mr_counter *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

mr_admin_stats *mr_admin_stats_mut(void) { return &stats; }

void mr_admin_addr_of(const struct sockaddr *sa, mr_admin_addr *out)
{
    memset(out, 0, sizeof *out);
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        out->family = AF_INET;
        memcpy(out->bytes, &in->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        out->family = AF_INET6;
        memcpy(out->bytes, &in6->sin6_addr, 16);
    }
}

void mr_admin_addr_text(const mr_admin_addr *a, char *buf, size_t cap)
{
    if (!a->family || !inet_ntop(a->family, a->bytes, buf, (socklen_t)cap))
        snprintf(buf, cap, "an unknown address");
}

static entry *find(const mr_admin_addr *a, uint64_t now)
{
    for (size_t i = 0; i < ENTRIES; i++) {
        entry *e = &table[i];
        if (e->failures && now - e->touched_ms >= FORGET_MS)
            memset(e, 0, sizeof *e);
        if (e->failures && memcmp(&e->addr, a, sizeof *a) == 0)
            return e;
    }
    return NULL;
}

uint64_t mr_admin_login_wait_ms(const mr_admin_addr *a)
{
    uint64_t now = mr_mono_ms();
    const entry *e = find(a, now);
    return e && e->until_ms > now ? e->until_ms - now : 0;
}

static entry *slot(void)
{
    entry *old = &table[0];
    for (size_t i = 0; i < ENTRIES; i++) {
        if (!table[i].failures)
            return &table[i];
        if (table[i].touched_ms < old->touched_ms)
            old = &table[i];
    }
    return old;
}

uint64_t mr_admin_login_failed(const mr_admin_addr *a)
{
    uint64_t now = mr_mono_ms();
    entry *e = find(a, now);
    if (!e) {
        e = slot();
        memset(e, 0, sizeof *e);
        e->addr = *a;
    }
    e->failures++;
    e->touched_ms = now;
    uint64_t wait = 0;
    if (e->failures > FREE_FAILURES) {
        unsigned doublings = e->failures - FREE_FAILURES - 1;
        wait = doublings >= 5 ? MAX_WAIT_MS : (uint64_t)FIRST_WAIT_MS << doublings;
        if (wait > MAX_WAIT_MS)
            wait = MAX_WAIT_MS;
    }
    e->until_ms = now + wait;
    mr_admin_count(&stats.login_failures);
    return wait;
}

void mr_admin_login_ok(const mr_admin_addr *a)
{
    entry *e = find(a, mr_mono_ms());
    if (e)
        memset(e, 0, sizeof *e);
}
