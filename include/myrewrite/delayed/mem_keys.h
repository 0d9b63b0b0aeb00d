/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/mem_keys.h - the key columns of a memory-mode table whose rule
 * names no `key`: the table's primary key, learned from the schema cache
 * by the first worker that has it (delayed/statement/statement.c), then fixed for the
 * table's life, so that one table never holds key tuples of two shapes.
 * A later statement that finds another primary key in the cache (an
 * ALTER) is refused; RELOAD RULES gives the rule a fresh table
 * (delayed/mem/mem.c).
 *
 * Rules without `key` have no bucket column (the loader refuses it), so
 * the learned columns are the table's whole key.
 *
 * Threads: learned and checked on workers, any number at once; the
 * flusher and configure read the columns once mr_dmem_keys_known. The
 * mutex is taken only until the columns are known: afterwards a statement
 * pays one acquire load and a few name compares.
 */
#ifndef MYREWRITE_DELAYED_MEM_KEYS_H
#define MYREWRITE_DELAYED_MEM_KEYS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "myrewrite/delayed/rule.h"
#include "myrewrite/rules/rules.h"

typedef struct mr_dmem_keys {
    pthread_mutex_t lock; /* orders the learning workers */
    _Atomic bool known;   /* stored (release) once names, n and def's keys are set */
    char **names;         /* owned; written once under lock, then immutable */
    size_t n;
    mr_key_port port;    /* take below on this store, for def->mem_keys */
    mr_delayed_def *def; /* the table's own settings: keys/nkeys point at names once
                            known (NULL: nothing else to fill) */
} mr_dmem_keys;

void mr_dmem_keys_init(mr_dmem_keys *k, mr_delayed_def *def);
void mr_dmem_keys_free(mr_dmem_keys *k);
/* Are the columns learned? (acquire: they may be read after a true) */
bool mr_dmem_keys_known(const mr_dmem_keys *k);
/* Known and the same columns as cols[0..n) (names compare as MySQL's do). */
bool mr_dmem_keys_same(const mr_dmem_keys *k, char *const *cols, size_t n);
/* The primary key a statement was read with (cols[0..n), from the schema
 * cache): learned when none is known yet, else it must be the learned one.
 * False with the message in err when it differs or memory runs out. */
bool mr_dmem_keys_take(mr_dmem_keys *k, const char *schema, const char *table, char *const *cols,
                       size_t n, char *err, size_t errlen);

#endif
