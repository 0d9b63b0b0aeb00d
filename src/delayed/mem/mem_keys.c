/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/mem/mem_keys.c - a memory table's key learned from the schema
 * (delayed/mem_keys.h). Pure but for the mutex: any thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "myrewrite/delayed/mem_keys.h"

static bool take_port(void *arg, const char *schema, const char *table, char *const *cols, size_t n,
                      char *err, size_t errlen)
{
    return mr_dmem_keys_take(arg, schema, table, cols, n, err, errlen);
}

void mr_dmem_keys_init(mr_dmem_keys *k, mr_delayed_def *def)
{
    pthread_mutex_init(&k->lock, NULL);
    k->port = (mr_key_port){.take = take_port, .arg = k};
    atomic_init(&k->known, false);
    k->names = NULL;
    k->n = 0;
    k->def = def;
}

void mr_dmem_keys_free(mr_dmem_keys *k)
{
    for (size_t i = 0; k->names && i < k->n; i++)
        free(k->names[i]);
    free(k->names);
    k->names = NULL;
    k->n = 0;
    pthread_mutex_destroy(&k->lock);
}

bool mr_dmem_keys_known(const mr_dmem_keys *k)
{
    return atomic_load_explicit(&k->known, memory_order_acquire);
}

bool mr_dmem_keys_same(const mr_dmem_keys *k, char *const *cols, size_t n)
{
    if (!mr_dmem_keys_known(k) || k->n != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(k->names[i], cols[i]) != 0)
            return false;
    return true;
}

static char **names_copy(char *const *cols, size_t n)
{
    char **v = calloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        if (!(v[i] = strdup(cols[i]))) {
            while (i--)
                free(v[i]);
            free(v);
            return NULL;
        }
    return v;
}

/* The first worker with the key writes it; the others, serialised by the
 * mutex, find it known and leave it. False when out of memory. */
static bool learn(mr_dmem_keys *k, char *const *cols, size_t n)
{
    bool ok = true;
    pthread_mutex_lock(&k->lock);
    if (!atomic_load_explicit(&k->known, memory_order_relaxed)) {
        char **v = names_copy(cols, n);
        ok = v != NULL;
        if (ok) {
            k->names = v;
            k->n = n;
            if (k->def) {
                k->def->keys = v;
                k->def->nkeys = n;
            }
            /* after the writes above: a reader that sees known sees them */
            atomic_store_explicit(&k->known, true, memory_order_release);
        }
    }
    pthread_mutex_unlock(&k->lock);
    return ok;
}

/* "a, b" into buf (cut at its size). */
static void list_names(char *buf, size_t len, char *const *v, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && at < len; i++) {
        int w = snprintf(buf + at, len - at, "%s%s", i ? ", " : "", v[i]);
        at += w > 0 ? (size_t)w : 0;
    }
}

bool mr_dmem_keys_take(mr_dmem_keys *k, const char *schema, const char *table, char *const *cols,
                       size_t n, char *err, size_t errlen)
{
    if (!mr_dmem_keys_known(k) && !learn(k, cols, n)) {
        snprintf(err, errlen, "DELAYED on %s.%s: out of memory", schema, table);
        return false;
    }
    if (mr_dmem_keys_same(k, cols, n))
        return true;
    char now[200], was[200];
    list_names(now, sizeof now, cols, n);
    list_names(was, sizeof was, k->names, k->n);
    snprintf(err, errlen,
             "myrewrite: the primary key of %s.%s changed since the proxy "
             "started holding its deltas (now (%s), was (%s)); nothing was taken. After a "
             "flush of the deltas held under the old key (FLUSH DELAYED), RELOAD RULES or a "
             "restart picks up the new key",
             schema, table, now, was);
    return false;
}
