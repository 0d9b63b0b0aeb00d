/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats/client_info.c - the per-session snapshots SHOW CLIENTS reads (see
 * stats/client_info.h). Worker threads write their own slots; the admin console
 * copies them under each worker's registry lock.
 */
#include "myrewrite/stats/client_info.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

uint64_t mr_client_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void mr_client_registry_init(mr_client_registry *r)
{
    pthread_mutex_init(&r->lock, NULL);
    r->head = NULL;
}

void mr_client_registry_destroy(mr_client_registry *r) { pthread_mutex_destroy(&r->lock); }

/* The peer as numbers only (never a DNS lookup on a worker). */
static void peer_name(int fd, char *out, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "";
    snprintf(out, cap, "unknown");
    if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0)
        return;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
        snprintf(out, cap, "%s:%u", host, (unsigned)ntohs(a->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
        snprintf(out, cap, "[%s]:%u", host, (unsigned)ntohs(a->sin6_port));
    } else if (ss.ss_family == AF_UNIX) {
        snprintf(out, cap, "unix");
    }
}

void mr_client_register(mr_client_registry *r, mr_client_slot *s, uint64_t id, unsigned worker,
                        int client_fd)
{
    s->id = id;
    s->worker = worker;
    s->connected_at = (int64_t)time(NULL);
    peer_name(client_fd, s->addr, sizeof s->addr);
    atomic_store_explicit(&s->state, "connecting", memory_order_relaxed);
    atomic_store_explicit(&s->state_since_ms, mr_client_clock_ms(), memory_order_relaxed);
    pthread_mutex_lock(&r->lock);
    s->prev = NULL;
    s->next = r->head;
    if (r->head)
        r->head->prev = s;
    r->head = s;
    pthread_mutex_unlock(&r->lock);
}

void mr_client_unregister(mr_client_registry *r, mr_client_slot *s)
{
    pthread_mutex_lock(&r->lock);
    if (s->prev)
        s->prev->next = s->next;
    else if (r->head == s)
        r->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    pthread_mutex_unlock(&r->lock);
}

void mr_client_set_state(mr_client_slot *s, const char *name)
{
    atomic_store_explicit(&s->state, name, memory_order_relaxed);
    atomic_store_explicit(&s->state_since_ms, mr_client_clock_ms(), memory_order_relaxed);
}

void mr_client_set_command(mr_client_slot *s, uint8_t command)
{
    atomic_store_explicit(&s->command, command, memory_order_relaxed);
    atomic_store_explicit(&s->has_command, 1, memory_order_relaxed);
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

void mr_client_set_names(mr_client_registry *r, mr_client_slot *s, const char *user,
                         const char *schema)
{
    pthread_mutex_lock(&r->lock);
    copy_str(s->user, sizeof s->user, user);
    copy_str(s->schema, sizeof s->schema, schema);
    pthread_mutex_unlock(&r->lock);
}

void mr_client_set_text(mr_client_registry *r, mr_client_slot *s, const char *text)
{
    pthread_mutex_lock(&r->lock);
    copy_str(s->text, sizeof s->text, text);
    pthread_mutex_unlock(&r->lock);
}

static void copy_row(mr_client_row *row, mr_client_slot *s, uint64_t now)
{
    row->id = s->id;
    row->worker = s->worker;
    row->connected_at = s->connected_at;
    memcpy(row->addr, s->addr, sizeof row->addr);
    row->state = atomic_load_explicit(&s->state, memory_order_relaxed);
    uint64_t since = atomic_load_explicit(&s->state_since_ms, memory_order_relaxed);
    row->state_ms = now > since ? now - since : 0;
    row->backend_id = atomic_load_explicit(&s->backend_id, memory_order_relaxed);
    row->command = atomic_load_explicit(&s->has_command, memory_order_relaxed)
                       ? atomic_load_explicit(&s->command, memory_order_relaxed)
                       : -1;
    row->statements = mr_stat_get(&s->statements);
    row->bytes_in = mr_stat_get(&s->bytes_in);
    row->bytes_out = mr_stat_get(&s->bytes_out);
    memcpy(row->user, s->user, sizeof row->user);
    memcpy(row->schema, s->schema, sizeof row->schema);
    memcpy(row->text, s->text, sizeof row->text);
}

size_t mr_client_snapshot(mr_client_registry *r, mr_client_row *rows, size_t cap)
{
    size_t n = 0;
    uint64_t now = mr_client_clock_ms();
    pthread_mutex_lock(&r->lock);
    for (mr_client_slot *s = r->head; s; s = s->next, n++)
        if (n < cap)
            copy_row(&rows[n], s, now);
    pthread_mutex_unlock(&r->lock);
    return n;
}

bool mr_client_find(mr_client_registry *r, bool (*fn)(mr_client_slot *s, void *arg), void *arg)
{
    bool found = false;
    pthread_mutex_lock(&r->lock);
    for (mr_client_slot *s = r->head; s && !found; s = s->next)
        found = fn(s, arg);
    pthread_mutex_unlock(&r->lock);
    return found;
}
