/* SPDX-License-Identifier: Apache-2.0 */
/*
 * feature/feature.h - what a feature (paginate, delayed, queue...) may do in
 * a client session: the hooks it registers and the small view of the
 * session they see.
 *
 * The session relays bytes and, at a few points of each command, runs the
 * hooks of every feature in its table (session/core/features.c), in table order.
 * A feature never sees the session itself: it gets an mr_fsession, which
 * says who the session is (id, worker, user, schema, server status) and
 * offers the few things a feature may do to it (answer the client, ask for
 * a background job's answer). Each feature keeps its own per-session state
 * in the slot the session hands it (`void **st`, NULL until the feature
 * makes one; the feature frees it at session_end).
 *
 * Every hook is optional (NULL: not called). All run on the session's
 * worker thread, except mr_fsession.wake, which any thread may call, and
 * the process and rule set hooks (start ... stop, rules_prepare,
 * configure: the main thread).
 * Hooks must not block; work that waits (a flush, a query on the proxy's
 * own connection) goes to a background job, which answers through wake.
 *
 * This header sits below the features in the layer order (src/README.md):
 * the features include it, never the session's headers.
 */
#ifndef MYREWRITE_FEATURE_H
#define MYREWRITE_FEATURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "myrewrite/base/counters.h"
#include "myrewrite/base/proxy.h"
#include "myrewrite/rules/rules.h"

struct event_base;

/* At most this many features in the table (the per-session state slots). */
#define MR_FEATURES_MAX 8
/* A response packet larger than this reaches response_packet as NULL. */
#define MR_FEATURE_PACKET_MAX 16384

/* What a statement or command hook asks the session to do. */
typedef enum mr_hook_action {
    MR_HOOK_PASS,     /* nothing: the next hook runs, then the session goes on */
    MR_HOOK_SEND,     /* send stmt->send (stmt->send_len bytes) to the server instead of
                         the client's text; the response is relayed as usual */
    MR_HOOK_ANSWERED, /* the hook answered the client (send_ok / send_err): nothing goes
                         to the server, the client's packet is dropped */
    MR_HOOK_WAIT_BG,  /* a background job answers later: the session waits in
                         SS_WAIT_BG (reading no further command) until the feature's
                         bg_answer answers; the client's packet is dropped. After the
                         rules, the statement counts as rewritten (the job runs it in
                         another form) and its answer ends the command as a relayed
                         response would (commands, digest latency, command_done) */
    MR_HOOK_PARK,     /* command hooks only: the statement's table key is not known yet
                         (fs->match holds the rules' refusal, res->park set): the session
                         keeps a copy of the packet and runs the command hooks on it again
                         when the schema cache has the table, as it does for a text
                         statement (session/stmt/park_stmt.c); the ERR is the answer when it cannot */
} mr_hook_action;

typedef struct mr_fsession mr_fsession;

/* What a hook may do to the session. Worker thread. */
typedef struct mr_fsession_ops {
    /* An ERR or an OK (affected rows, warnings; the session's own status
     * flags) to the client, as the answer to the command in flight. */
    void (*send_err)(mr_fsession *fs, uint16_t code, const char *sqlstate, const char *msg);
    void (*send_ok)(mr_fsession *fs, uint64_t affected, uint16_t warnings);
    /* The session waits in SS_WAIT_BG and its feature's answer is ready
     * now, on this thread: runs the bg_answer hooks at once (say, from a
     * timer of the feature's). */
    void (*answer_now)(mr_fsession *fs);
    /* From a command hook that passes: a statement of the proxy's sent on
     * the session's backend connection right ahead of the command (one
     * packet, COM_QUERY); its OK or ERR is not relayed, an ERR is logged
     * with `what` (static text). False when it could not be sent (out of
     * memory): the hook must not let the command go without it. */
    bool (*prelude)(mr_fsession *fs, const char *sql, size_t len, const char *what);
} mr_fsession_ops;

/* Any thread: tells the session's worker that a background job answered;
 * the worker then runs the bg_answer hooks of its waiting sessions. Valid
 * while the session lives (a job whose session ended must not call it). */
typedef struct mr_fwake {
    void (*fn)(void *arg);
    void *arg;
} mr_fwake;

/* The session as a feature sees it. The session fills in the fixed fields
 * at its start and refreshes the others before each statement hook. */
struct mr_fsession {
    uint64_t id;             /* for log lines */
    unsigned shard;          /* the worker's id (mr_stmt_ctx.shard) */
    mr_stats *stats;         /* the worker's counters (written by this worker only) */
    struct event_base *base; /* the worker's event loop, for a feature's timers */
    mr_fwake wake;
    const mr_fsession_ops *ops;
    /* refreshed before each statement and command hook */
    const char *user, *schema;  /* NULL: none yet */
    uint16_t status;            /* the server's status flags (MR_STATUS_*) */
    unsigned lex_flags;         /* SQL_LEX_NO_BACKSLASH_ESCAPES per the session's sql_mode */
    bool authenticated;         /* the backend accepted the login ... */
    uint32_t backend_thread_id; /* ... and this is its connection id */
    uint32_t own_id;            /* what CONNECTION_ID() gives the session: the thread id
                                   its handshake gave (with pool = transaction not the id
                                   of the server connection it runs on) */
    bool pooled;                /* pool = transaction: its login's server connection
                                   serves other sessions, and may close while it lives */
    uint32_t end_wait_id;       /* at session_end: the server connection of its own whose
                                   end the release of its work must wait for (0: none;
                                   everything it ran has committed or rolled back) */
    uint32_t ext_caps;          /* MariaDB extended capabilities both ends have */
    bool query_attrs;           /* CLIENT_QUERY_ATTRIBUTES negotiated (MySQL 8) */
    const mr_ruleset *rules;    /* the worker's current rule set */
    mr_rules_scratch *scratch;  /* the worker's front-end scratch and match result, */
    mr_match_result *match;     /*   for a hook that runs the rules itself */
};

/* A whole COM_QUERY or COM_STMT_PREPARE. */
typedef struct mr_hook_stmt {
    uint8_t cmd;
    const char *sql; /* the text the server would run */
    size_t len;
    const mr_match_result *res; /* what the rules made of it; NULL before the rules */
    uint64_t attrs;             /* query attributes the client sent with it
                                   (CLIENT_QUERY_ATTRIBUTES): they go only with the
                                   statement on the client's own connection */
    const uint8_t *send;        /* MR_HOOK_SEND: the text to send instead (the hook's
                                   memory, read before the hook's next call) */
    size_t send_len;
} mr_hook_stmt;

/* A response ended (its last packet is classified). */
typedef struct mr_hook_response {
    uint8_t cmd;      /* the command it answered */
    bool ok;          /* it did not end with an ERR */
    uint32_t stmt_id; /* COM_STMT_PREPARE: the statement id it gave */
} mr_hook_response;

typedef struct mr_feature {
    const char *name;
    /* The process's life, main thread (core/main.c), each in table order
     * but stop, which runs in reverse. start: once, before the first rule
     * set (the feature's process-wide stores); before_listen: the workers
     * run and the listener opens next (what must exist before a statement
     * comes); drain: shutting down, the workers still run (what waits on
     * the feature is answered); stop: the workers are gone (the feature's
     * threads finish their work within shutdown_timeout and end). */
    void (*start)(const mr_proxy *p);
    void (*before_listen)(const mr_proxy *p);
    void (*drain)(const mr_proxy *p);
    void (*stop)(const mr_proxy *p);
    /* A rule set about to be in force (at start, and at each reload before
     * any other thread sees it): what the feature writes into its rules.
     * Main thread (a reload: under the proxy's reload_lock). */
    void (*rules_prepare)(const mr_proxy *p, const mr_ruleset *rs);
    /* The set is in force: the feature starts or retunes what it runs for
     * it (flushers, reapers, connections of its own). Same thread. */
    void (*configure)(const mr_proxy *p, const mr_ruleset *rs);
    /* The feature's ports for the statement side (mr_stmt_ctx.bookmarks,
     * .derived...): filled into the context before each statement's rules,
     * after its before_rules hooks. */
    void (*ports)(mr_fsession *fs, void **st, mr_stmt_ctx *ctx);
    /* The ports of `--explain`'s statement side (no session; main thread):
     * what ports gives a session that has no state of the feature's. */
    void (*explain_ports)(mr_stmt_ctx *ctx);
    /* The first packet of every command (p: n of its len payload bytes,
     * p[0] the command), before the session looks at it. PASS, ANSWERED
     * (a prepared statement's execute answered here) or PARK. */
    mr_hook_action (*command)(mr_fsession *fs, void **st, uint8_t cmd, const uint8_t *p, size_t n,
                              uint32_t len);
    /* Must the command starting with head (at least 5 of len bytes) be
     * read whole before `command` sees it? (COM_QUERY and COM_STMT_PREPARE
     * always are, up to relay_buffer.) */
    bool (*wants_whole)(mr_fsession *fs, void **st, uint8_t cmd, const uint8_t *head, uint32_t len);
    /* A whole statement before the rules (stmt->res NULL), then after them
     * (the rules did not block it; stmt->res set). Any action. */
    mr_hook_action (*before_rules)(mr_fsession *fs, void **st, mr_hook_stmt *stmt);
    mr_hook_action (*statement)(mr_fsession *fs, void **st, mr_hook_stmt *stmt);
    /* The rules' verdict on a whole statement is final (at least one rule
     * matched, and the statement is not parked), before the session sends
     * it or answers a block: the feature counts what its rules did, and
     * may send a prelude (ops->prelude) ahead of a statement res does not
     * block. note is NULL for a COM_QUERY; for a COM_STMT_PREPARE it is the
     * feature's note on the statement (NULL until the feature makes one):
     * what each COM_STMT_EXECUTE of it must count or repeat. A note is one
     * block from malloc owning nothing; the session keeps it while the
     * server has the statement, then frees it. */
    void (*verdict)(mr_fsession *fs, void **st, const mr_match_result *res, void **note);
    /* A COM_STMT_EXECUTE of a statement the feature noted goes out next
     * (the guardrail let it): count it, send its prelude. */
    void (*execute)(mr_fsession *fs, void **st, void *note);
    /* The response: does the packet starting now go to this feature whole
     * (track_state: the tracker's mr_track_state)? Then it gets it
     * (payload NULL when larger than MR_FEATURE_PACKET_MAX). */
    bool (*response_wants)(mr_fsession *fs, void **st, int track_state);
    void (*response_packet)(mr_fsession *fs, void **st, int track_state, const uint8_t *payload,
                            uint32_t len);
    /* The response's last packet is classified, not yet relayed: the
     * client cannot ask its next command before this returns. */
    void (*response_end)(mr_fsession *fs, void **st, const mr_hook_response *r);
    /* The response is relayed whole; the session goes idle next. */
    void (*command_done)(mr_fsession *fs, void **st, const mr_hook_response *r);
    /* The server dropped every prepared statement of the session
     * (COM_RESET_CONNECTION, COM_CHANGE_USER). */
    void (*prepared_reset)(mr_fsession *fs, void **st);
    /* The session waits in SS_WAIT_BG and a background job answered
     * (somewhere on the worker). PASS: not this feature's answer (yet).
     * ANSWERED: the answer went to the client now; the session reads its
     * next command. SEND: out->send (out->send_len bytes, the hook's memory
     * until its next call) goes to the server as command out->cmd, whose
     * response is relayed as for any statement. */
    mr_hook_action (*bg_answer)(mr_fsession *fs, void **st, mr_hook_stmt *out);
    /* The session ends (any reason, any state): free *st; a job in flight
     * must no longer call wake. */
    void (*session_end)(mr_fsession *fs, void **st);
} mr_feature;

#endif
