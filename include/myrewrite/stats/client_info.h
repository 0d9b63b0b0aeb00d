/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stats/client_info.h - what SHOW CLIENTS reports about each client session,
 * published by the worker that owns the session for the admin console to
 * read.
 *
 * Threads: a session's slot is written by its worker only. Numbers are
 * single-writer relaxed atomics (no lock on the hot path); the strings
 * (user, schema, digest of the latest statement) change under the
 * registry's mutex, once per statement at most, and the console copies
 * every slot of a worker under that same mutex. A slot is linked into its
 * worker's registry while the session lives and unlinked (under the
 * mutex) before its memory goes, so the console never reads freed memory.
 */
#ifndef MYREWRITE_CLIENT_INFO_H
#define MYREWRITE_CLIENT_INFO_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/counters.h"

#define MR_CLIENT_ADDR_MAX 64
#define MR_CLIENT_USER_MAX 96
#define MR_CLIENT_SCHEMA_MAX 200
#define MR_CLIENT_TEXT_MAX 160 /* digest of the latest statement, cut there */

typedef struct mr_client_slot {
    struct mr_client_slot *prev, *next; /* registry list; guarded by its lock */
    /* set before the slot is linked, constant afterwards */
    uint64_t id;
    unsigned worker;
    int64_t connected_at;          /* unix seconds */
    char addr[MR_CLIENT_ADDR_MAX]; /* "ip:port", or "unix" */
    /* single-writer relaxed atomics */
    _Atomic(const char *) state;     /* a static string: "auth", "idle", "query"... */
    _Atomic uint64_t state_since_ms; /* coarse monotonic ms of the latest state change */
    _Atomic uint32_t backend_id;     /* the backend's connection id, 0 until known */
    _Atomic uint8_t command;         /* latest client command byte (COM_...) */
    _Atomic uint8_t has_command;
    mr_counter statements; /* COM_QUERY / COM_STMT_PREPARE seen */
    mr_counter bytes_in;   /* from the client, headers included */
    mr_counter bytes_out;  /* from the backend, headers included */
    /* pool = transaction (session/pool/pool_kill.c): the id a KILL names, set by
     * the worker once; the rest written by killers on other workers under
     * the registry's lock, read by the worker */
    _Atomic uint32_t client_thread_id; /* the id the client's greeting gave, 0 until known */
    _Atomic uint32_t kill_holds;       /* KILLs in flight toward its server connection
                                          (backend_id): the session keeps it meanwhile */
    _Atomic bool kill_close;           /* KILL CONNECTION while it held none: its worker
                                          ends the session */
    _Atomic bool kill_query;           /* KILL QUERY while it held none: a command waiting
                                          for a server connection gets ERR 1317 */
    /* guarded by the registry's lock */
    char user[MR_CLIENT_USER_MAX];
    char schema[MR_CLIENT_SCHEMA_MAX];
    char text[MR_CLIENT_TEXT_MAX];
} mr_client_slot;

/* One worker's live slots. */
typedef struct mr_client_registry {
    pthread_mutex_t lock;
    mr_client_slot *head;
} mr_client_registry;

/* A copy of one slot, taken by the console. */
typedef struct mr_client_row {
    uint64_t id;
    unsigned worker;
    int64_t connected_at;
    char addr[MR_CLIENT_ADDR_MAX];
    const char *state;
    uint64_t state_ms; /* milliseconds in that state so far */
    uint32_t backend_id;
    int command; /* -1: none yet */
    uint64_t statements, bytes_in, bytes_out;
    char user[MR_CLIENT_USER_MAX];
    char schema[MR_CLIENT_SCHEMA_MAX];
    char text[MR_CLIENT_TEXT_MAX];
} mr_client_row;

void mr_client_registry_init(mr_client_registry *r);
void mr_client_registry_destroy(mr_client_registry *r);

/* Worker: fills the constant part from the client socket and links the slot. */
void mr_client_register(mr_client_registry *r, mr_client_slot *s, uint64_t id, unsigned worker,
                        int client_fd);
/* Worker: unlinks the slot; after this the console no longer sees it. */
void mr_client_unregister(mr_client_registry *r, mr_client_slot *s);

/* Worker, hot path, no lock: `name` must be a static string. */
void mr_client_set_state(mr_client_slot *s, const char *name);
void mr_client_set_command(mr_client_slot *s, uint8_t command);
/* Worker, under the lock: the names the session now runs under, and the
 * digest of the statement it just sent. NULL or "" clears. */
void mr_client_set_names(mr_client_registry *r, mr_client_slot *s, const char *user,
                         const char *schema);
void mr_client_set_text(mr_client_registry *r, mr_client_slot *s, const char *text);

/* Any thread: runs fn on each slot of r under the lock (the slot cannot go
 * meanwhile) until it returns true; whether it did. fn must be short and
 * take no other lock. */
bool mr_client_find(mr_client_registry *r, bool (*fn)(mr_client_slot *s, void *arg), void *arg);

/* Console: copies up to `cap` slots into rows; returns how many are live
 * (which may exceed cap: call again with more room). */
size_t mr_client_snapshot(mr_client_registry *r, mr_client_row *rows, size_t cap);

/* The clock the slots use: coarse monotonic milliseconds (a few ns to read;
 * ticks of a few ms are plenty for seconds shown to a human). */
uint64_t mr_client_clock_ms(void);

#endif
