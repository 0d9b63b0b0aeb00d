/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/core/session_impl.h - what the session files share: the session itself, its
 * states and framing, and the functions one half calls in another.
 *
 * Private to src/session/. Everything here runs on the worker thread that
 * owns the session. The files are in rooms, lowest first (src/README.md,
 * "The rooms of session/"); a file uses only its own room and those below,
 * and reaches session/pump/ from below only through ss_up. Among them:
 *   session/core/session.c       states, closing, flow control
 *   session/core/park.c          a session waiting for the background
 *   session/stmt/statement.c     statements meet the front end (rules, digests)
 *   session/stmt/hooks.c         runs the features' hooks (session/core/features.c: the table)
 *   session/conn/auth.c          authentication exchanges: what goes to the server
 *   session/conn/backend_side.c  greeting, backend packets, end of responses
 *   session/pump/client_side.c   handshake check, client packets, commands, a session's start
 *   session/pump/life.c          the backend connection made, a session's end
 */
#ifndef MYREWRITE_SESSION_IMPL_H
#define MYREWRITE_SESSION_IMPL_H

#include <event2/buffer.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "myrewrite/base/clock.h"
#include "myrewrite/feature/feature.h"
#include "myrewrite/net/conn.h"
#include "myrewrite/pool/pool.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/proto/session_track.h"
#include "myrewrite/proto/tracker.h"
#include "myrewrite/session/session.h"
#include "myrewrite/session/worker.h"
#include "myrewrite/stats/client_info.h"
#include "myrewrite/stats/digest_stats.h"

typedef enum session_state {
    SS_CONNECTING, /* backend connect in progress; the client waits */
    SS_GREETING,   /* waiting for the backend's greeting */
    SS_AUTH,       /* relaying the authentication exchange until OK or ERR */
    SS_IDLE,       /* between commands: the client speaks next */
    SS_RESPONSE,   /* relaying the backend's answer to the current command */
    SS_INFILE,     /* relaying LOCAL INFILE contents from the client */
    SS_WAIT_BG,    /* the answer comes from a background job (FLUSH DELAYED), or a
                      parked session waits for the background (a statement for
                      the schema cache): the backend is idle and the client's
                      next command waits */
    SS_CLOSING,    /* flushing a last packet to the client, then free */
    SS_CLOSED,     /* both sockets gone; memory freed from the event loop */
    SS_MAX
} session_state;

/* Where an authentication exchange stands (SS_AUTH, or SS_RESPONSE to a
 * COM_CHANGE_USER): whose packet comes next (session/conn/auth.c). */
typedef enum ss_auth_phase {
    SS_AUTH_RESPONSE_DUE, /* the greeting is out, or TLS started: the client's
                             HandshakeResponse (or SSLRequest) comes next */
    SS_AUTH_CLIENT_TURN,  /* the server asked (auth switch, plugin data): one
                             client packet with sequence id auth_seq */
    SS_AUTH_SERVER_TURN,  /* the client's packet went out: the server speaks */
    SS_AUTH_OVER          /* the server's OK or ERR ended the exchange */
} ss_auth_phase;

/* A session that is closing or closed relays nothing more. Code that calls
 * anything which may close the session checks this before going on. */
#define ALIVE(s) ((s)->state < SS_CLOSING)

/* Framing of one direction: where the current packet stands. */
typedef struct framing {
    uint64_t remaining; /* bytes of the current packet not yet moved */
    bool continuation;  /* the next packet continues a 16 MiB payload */
    bool discard;       /* drop the current packet instead of relaying it */
    bool ends_response; /* the current packet completes the response */
    bool blocked;       /* reading paused: the peer's output is full */
} framing;

/* The statement id a COM_STMT_* command names (p[1..4]); MariaDB's direct
 * execution names SS_STMT_LAST: the statement prepared last. */
#define SS_STMT_LAST 0xffffffffu
#define SS_PRELUDES_MAX                                                                            \
    8 /* preludes ahead of one command: the pool's (reset, SET, schema,                            \
        trackers; a statement prepared on demand and its schema), a claim's, a feature's */
static inline uint32_t ss_stmt_id(const uint8_t *p)
{
    return (uint32_t)p[1] | (uint32_t)p[2] << 8 | (uint32_t)p[3] << 16 | (uint32_t)p[4] << 24;
}

typedef struct ss_pguard ss_pguard;

/* A server-side prepared statement whose text the front end acted on:
 * what each COM_STMT_EXECUTE of it must repeat (session/stmt/prepared.c). */
typedef struct ss_pnote {
    uint32_t id;
    ss_pguard *guard; /* max_offset for its `?` offset (owned; NULL: none) */
    void **fnote;     /* MR_FEATURES_MAX notes, the features' verdict hooks' (owned,
                         each and the array; NULL: none) */
    bool rewritten;   /* a rule of a no_bulk kind (rules/kind.h) rewrote it: no
                         COM_STMT_BULK_EXECUTE of it is relayed */
} ss_pnote;

struct mr_session {
    uint64_t id;
    mr_worker *w;
    struct mr_session *prev, *next; /* worker's list */
    mr_conn *client;                /* owned */
    mr_conn *backend;               /* owned; NULL once closed */
    session_state state;            /* changed only through ss_set_state() */
    mr_tracker tracker;
    framing from_client, from_backend;
    uint8_t seq;                /* sequence id last relayed, either way: an ERR
                                   the proxy injects continues from it */
    uint8_t command;            /* the command being answered */
    uint64_t command_bytes;     /* payload of the current client command so far */
    uint32_t caps;              /* negotiated capabilities */
    uint32_t ext_caps;          /* negotiated MariaDB extended ones (relayed only) */
    uint32_t backend_thread_id; /* the backend's connection id */
    ss_auth_phase auth_phase;   /* changed only in session/conn/auth.c */
    uint8_t auth_seq;           /* the sequence id the client's next auth packet has */
    int8_t login_shift;         /* the client's sequence ids minus the server's during
                                   the login: +1 once the proxy took the client's
                                   SSLRequest, -1 when it sent the server one of its
                                   own, 0 for both or neither */
    bool backend_offers_tls;    /* the backend's greeting had CLIENT_SSL */
    bool compress_offered;      /* the relayed greeting offered CLIENT_COMPRESS */
    bool zstd_offered;          /* ... and CLIENT_ZSTD_COMPRESSION_ALGORITHM */
    bool backend_zlib;          /* backend_compress and the server offers CLIENT_COMPRESS */
    bool client_compress;       /* the client asked for compression: its leg is
                                   compressed once the login succeeds ... */
    uint8_t client_zalgo;       /* ... with this mr_zalgo ... */
    uint8_t client_zlevel;      /* ... at this level (zstd: the client's, at most zstd_max_level) */
    bool backend_compress;      /* the response relayed asks for CLIENT_COMPRESS: the
                                   backend leg is compressed once the login succeeds */
    bool authenticated;         /* the backend accepted the login */
    bool skip_locked;           /* the backend supports FOR UPDATE SKIP LOCKED */
    uint8_t prelude_pending;    /* answers to preludes come first (session/pool/prelude.c) ... */
    const char *prelude_what[SS_PRELUDES_MAX]; /* ... and what each is, oldest first, ... */
    bool prelude_prepare[SS_PRELUDES_MAX];     /* ... answered by a prepare response */
    char *answer_due;    /* pool = statement: a refusal sent once the preludes' answers are in,
                            so the client cannot leave before its connection is clean (owned) */
    ss_pnote pnote_next; /* the COM_STMT_PREPARE going out (session/stmt/prepared.c) */
    ss_pnote *pnotes;    /* prepared statements the front end acted on (owned) */
    size_t npnotes, pnotes_cap;
    bool unexamined_logged;   /* a statement over relay_buffer was logged */
    bool unreadable_logged;   /* an unreadable statement relayed was logged */
    uint32_t plast;           /* id of the last statement prepared (for MariaDB's
                                 direct execution, which names it 0xffffffff) */
    char user[96];            /* authenticated user, for rule filters */
    char schema[200];         /* default schema, for rule filters */
    char pending_user[96];    /* COM_CHANGE_USER: applied on success */
    char pending_schema[200]; /* COM_INIT_DB / USE: applied on success */
    bool user_pending, schema_pending;
    /* The client character set when the byte lexer cannot read it (gbk...,
     * sql/charset_guard.h): statements are then relayed without rewrites.
     * NULL: rewrite as usual. A static name. */
    const char *charset_unsafe;
    const char *server_charset_unsafe; /* the server's default, for COM_RESET_CONNECTION */
    const char *pending_charset;       /* SET NAMES, COM_CHANGE_USER: applied on success */
    bool charset_pending;
    /* What the server's trackers reported in the OKs of a session whose client
     * negotiated CLIENT_SESSION_TRACK (session/conn/backend_side.c): its
     * character_set_client outranks the SET statements the guard reads, its
     * sql_mode gives the lexer ANSI_QUOTES. */
    mr_session_state track;
    mr_digest_entry *digest; /* stats entry of the statement in flight */
    uint64_t ddl_hold;       /* schema cache hold of the DDL in flight (0: none) */
    struct ss_park *park;    /* waiting for the background (session/core/park.c) */
    /* The query-attribute block of the COM_QUERY in the front end (with
     * CLIENT_QUERY_ATTRIBUTES, proto/query_attrs.h): it points into the
     * client's packet or the parked copy while ss_statement_start runs,
     * and goes out again in front of a rewritten text. NULL: none. */
    const uint8_t *qattrs;
    size_t qattrs_len;
    uint64_t qattrs_count; /* attributes in it */
    bool bg_after_rules;   /* SS_WAIT_BG for a statement a hook took after the rules */
    uint64_t command_start_ns;
    mr_fsession fs;                /* what the features' hooks see (session/stmt/hooks.c) */
    void *fstate[MR_FEATURES_MAX]; /* each feature's own state (owned by the feature) */
    uint32_t watchers;             /* bit i: ss_features[i] has response hooks (hooks.c) */
    uint8_t *hook_packet;          /* a response packet a hook reads whole (owned) */
    mr_client_slot slot;           /* what SHOW CLIENTS sees (stats/client_info.h) */
    /* pool = transaction (session/pool/pool_side.c); all unused with pool = session */
    uint32_t backend_caps;      /* the backend leg's capabilities (the pool's add
                                   CLIENT_SESSION_TRACK to the client's) */
    uint8_t login_charset;      /* the handshake's collation id */
    bool pool_login;            /* counted as a login in the pool until it ends */
    struct mr_srv *srv;         /* the server connection borrowed (backend is its conn) */
    struct mr_pool_user *puser; /* the session's key in its worker's pool */
    struct mr_pool_wait *pwait; /* waiting for room to log in, or for a connection */
    mr_pool_state pstate;       /* the system variables the session set */
    uint32_t pins;              /* bit r: pinned for mr_pin_reason r */
    uint32_t hint_maybe;        /* the statement's reasons should a change be reported */
    bool hint_replay_only;      /* the statement changes only what is replayed */
    bool hints_read;            /* the command's text was read for them */
    bool hint_opaque;           /* it runs code elsewhere (CALL, EXECUTE) */
    bool found_rows_ends;       /* the found_rows pin ends with this response */
    bool pstmt_pooled;          /* the pool's prepared statements (MariaDB backend) */
    struct ss_pstmt *pstmt;     /* its prepared statements (session/pool/pool_stmt.c; owned,
                                   NULL until the first COM_STMT_PREPARE) */
    mr_pool_state login_state;  /* the login's character set variables (what a reset restores) */
    bool learn_login;           /* the prelude answered next reports them */
    uint64_t last_insert_id;    /* LAST_INSERT_ID() of the session, from its OKs */
    uint32_t client_thread_id;  /* the thread id the client's greeting gave */
    uint32_t end_wait_id;       /* the connection the pool closed as the session ended
                                   with work or state on it (0: none) */
    bool srv_fresh;             /* srv was borrowed for the command in flight: what it
                                   holds of ROW_COUNT(), FOUND_ROWS() is not the session's */
    bool row_count_known, found_rows_known; /* the session's own, from its answers: */
    int64_t row_count;                      /* ROW_COUNT() after its last statement */
    uint64_t found_rows;                    /* FOUND_ROWS(): rows of its last result set */
    bool pool_view;             /* the backend leg tracks more than the client asked: its
                                   OKs are rewritten to the client's view (pool_view.c) */
    struct mr_track_want *want; /* the client's own session_track_* settings (owned;
                                   NULL: MariaDB's defaults) */
    uint64_t kill_target;       /* the session whose server connection this one's KILL in
                                   flight holds (session/pool/pool_kill.c; 0: none) ... */
    unsigned kill_worker;       /* ... and its worker */
};

/* What the front end made of a statement. */
typedef enum stmt_verdict {
    STMT_RELAY,    /* send it (as written or rewritten) and relay the answer */
    STMT_ANSWERED, /* the proxy answered it (a block); nothing goes to the backend */
    STMT_CLOSED,   /* the session had to close */
    STMT_WAITING,  /* the proxy answers later (a feature's background job, a parked
                      DELAYED statement); nothing goes to the backend yet */
} stmt_verdict;

static inline const mr_config *cfg(const mr_session *s) { return s->w->proxy->cfg; }

/* What the rooms below session/pump/ (the top room: the pumps and the
 * worker) need done there, reached through pointers so that no file below
 * names a function above it (scripts/layers.py, ROOMS). mr_worker_start
 * fills them in once, before any worker thread runs; workers only read them.
 * A call through one costs what a direct call does (one indirect call). */
typedef struct ss_upcalls {
    /* an idle session goes on: it reads the client's next command, if any
     * is waiting (ss_pump_client) */
    void (*resume)(mr_session *s);
    /* the backend connection goes: back to the pool, or closed
     * (ss_close_backend) */
    void (*close_backend)(mr_session *s);
    /* the session ends now; its memory goes at the next loop turn (ss_free) */
    void (*free)(mr_session *s);
    /* connect the backend (ss_connect) */
    void (*connect)(mr_session *s);
    /* what a backend connection of the session calls (ss_backend_callbacks) */
    const mr_conn_callbacks *backend_callbacks;
} ss_upcalls;
extern ss_upcalls ss_up;

/* session/core/session.c */
const char *ss_state_name(session_state st);
void ss_set_state(mr_session *s, session_state to);
void ss_close(mr_session *s, mr_close_reason why, const char *detail);
void ss_close_after_flush(mr_session *s, mr_close_reason why, const char *detail);
void ss_send_err(mr_session *s, uint8_t seq, uint16_t code, const char *sqlstate, const char *msg);
void ss_client_flow(mr_session *s);
void ss_backend_flow(mr_session *s);
void ss_copy_name(char *dst, size_t cap, const char *src, size_t len, bool *set);

/* session/core/command.c */
/* Appends a command of the session to the backend as
 * packets; a COM_QUERY on a session with CLIENT_QUERY_ATTRIBUTES gets an
 * attribute block: the client's statement's (s->qattrs) for its text
 * rewritten, or an empty one for the proxy's own statement (`own`). */
void ss_command_build(const mr_session *s, mr_buf *out, uint8_t cmd, const void *text, size_t len,
                      bool own);
/* The bytes of a command sent instead of the client's (which are dropped as
 * they come); false when out of memory (the client got an ERR, the session
 * closes). ss_send_instead is this for a rewrite, counted as one. */
bool ss_send_text(mr_session *s, uint8_t cmd, const uint8_t *text, size_t len);
/* The lexer mode of the session's next text, as far as the proxy knows it:
 * NO_BACKSLASH_ESCAPES from the server's status flag, the multibyte rule of
 * the client character set it believes in force. What it cannot vouch for
 * (ANSI_QUOTES, which no status flag tells, and the character set, which a
 * prepared or server-side statement may have changed unseen) is
 * unsure (session/stmt/statement.c): block rules read the text those ways too. */
unsigned ss_lex_flags(const mr_session *s);

/* session/conn/auth.c: is an authentication exchange (login, COM_CHANGE_USER)
 * going on? The greeting went to the client (sequence id seq); the server
 * sent a packet of the exchange (`ends`: its OK or ERR); is the login's
 * HandshakeResponse the client packet due; the client's answer went to the
 * server. Whether a client packet with sequence id seq goes to the server
 * now, waits for the end of the exchange in the client's input, or closed
 * the session (out of order). These move s->auth_phase. */
typedef enum ss_auth_verdict { AUTH_RELAY, AUTH_HOLD, AUTH_CLOSED } ss_auth_verdict;
bool ss_auth_exchange(const mr_session *s);
void ss_auth_greeting_sent(mr_session *s, uint8_t seq);
void ss_auth_server_packet(mr_session *s, uint8_t seq, bool ends);
bool ss_auth_response_due(const mr_session *s);
void ss_auth_client_sent(mr_session *s);
ss_auth_verdict ss_auth_client_packet(mr_session *s, uint8_t seq);
/* Checks the client's HandshakeResponse (or SSLRequest) before it is
 * relayed: false when the session was answered with an ERR and closes, or
 * when an SSLRequest started TLS (nothing is relayed; the real response
 * comes over TLS). */
bool ss_auth_check_response(mr_session *s, const uint8_t *p, uint32_t len, uint8_t seq);
/* During the login, a client packet whose header heads `in` goes to the
 * server, and a server packet `off` bytes into `in` goes to the client: the
 * sequence ids are moved past the SSLRequest the server did not see. The
 * server's packet's id for the client is returned. */
void ss_auth_shift_to_server(mr_session *s, struct evbuffer *in);
uint8_t ss_auth_shift_to_client(mr_session *s, struct evbuffer *in, size_t off, uint8_t seq);
/* A server packet of the login (its first n bytes at p): false when it asks
 * a client that came over TLS for its password in clear over a plain
 * backend connection; the client then got an ERR and the session closes. */
bool ss_auth_server_check(mr_session *s, const uint8_t *p, size_t n, uint32_t len, uint8_t seq);

/* session/conn/backend_side.c */
extern const mr_conn_callbacks ss_backend_callbacks;
void ss_pump_backend(mr_session *s);
/* The backend connection failed or closed (`what` says how). proxy_gave_up:
 * the proxy ended it itself (backend_read_timeout), so the client gets an ERR
 * saying so even mid-command, where a close by the server is mirrored as a
 * close. */
void ss_backend_failed(mr_session *s, const char *what, bool proxy_gave_up);

/* session/pump/client_side.c */
extern const mr_conn_callbacks ss_client_callbacks;
void ss_pump_client(mr_session *s);

/* session/pump/life.c: the backend connection let go, the session ended,
 * the backend connected (what ss_up's close_backend, free and connect do) */
void ss_close_backend(mr_session *s);
void ss_free(mr_session *s);
void ss_connect(mr_session *s);

/* session/pool/prelude.c: any statement of the proxy's ahead of the command in flight (what: for
 * the log line should it be refused; static text). False when it could
 * not be sent (out of memory, SS_PRELUDES_MAX already pending). */
bool ss_prelude_send(mr_session *s, const char *text, size_t len, const char *what);
/* The same for a command other than COM_QUERY (COM_RESET_CONNECTION,
 * COM_INIT_DB), its argument `len` bytes at data. */
bool ss_prelude_command(mr_session *s, uint8_t cmd, const char *data, size_t len, const char *what);
/* A COM_STMT_PREPARE of text (pool = transaction: a statement prepared on
 * demand, session/pool/pool_stmt.c): its answer is a whole prepare response. */
bool ss_prelude_prepare(mr_session *s, const char *text, size_t len);
/* session/pool/prelude_take.c: the answer of the oldest prelude, taken off
 * the backend's input: 1 taken, 0 not all there yet, -1 closed. */
int ss_prelude_take(mr_session *s, struct evbuffer *in);

/* session/stmt/prepared.c: a COM_STMT_PREPARE's response ended (ok: statement
 * `id`), keeping s->pnote_next when the front end acted on its text; a
 * statement command on a kept id (COM_STMT_EXECUTE: the guardrail, then
 * the features' notes; COM_STMT_BULK_EXECUTE of one a no_bulk rule
 * rewrote: refused; COM_STMT_CLOSE: forgotten); the
 * server dropped every prepared statement (reset, change user, session
 * closed). */
void ss_prepared_done(mr_session *s, bool ok, uint32_t id);
void ss_prepared_forget_all(mr_session *s);
/* The COM_STMT_PREPARE going out: s->pnote_next starts empty; a page whose
 * `?` offset a rule's max_offset guards is noted (g->rule set). */
void ss_prepared_begin(mr_session *s);
/* Its verdict hooks: what they note is kept with s->pnote_next. */
void ss_prepared_verdict(mr_session *s, const mr_match_result *res);
void ss_prepared_note_guard(mr_session *s, const mr_page_guard *g);
/* p[0..n) of a len-byte command: true when the proxy answered it itself
 * (an execute whose offset is beyond max_offset gets the rule's ERR). */
bool ss_prepared_command(mr_session *s, uint8_t cmd, const uint8_t *p, size_t n, uint32_t len);
/* Is the COM_STMT_EXECUTE starting with head (at least 5 of len bytes) one
 * the guardrail must read whole? */
bool ss_prepared_guarded(mr_session *s, const uint8_t *head, uint32_t len);

/* session/stmt/statement.c */
stmt_verdict ss_statement_start(mr_session *s, uint8_t cmd, const char *sql, size_t len);

/* session/core/counts.c: counts what the front end did with one statement
 * that took `frontend_ns` in mr_rules_apply. */
void ss_count_statement(mr_session *s, const mr_match_result *res, uint64_t frontend_ns);
/* session/stmt/hooks.c: the features' hooks, run in table order (feature/feature.h).
 * ss_hooks_start at the session's start; ss_hooks_view refreshes what the
 * hooks see before a statement or command. A hook's action is acted on by
 * ss_hooks_act (STMT_RELAY for PASS and SEND, which it sent). */
extern const mr_feature *const ss_features[]; /* session/core/features.c */
extern const unsigned ss_nfeatures;
void ss_hooks_start(mr_session *s);
void ss_hooks_view(mr_session *s);
void ss_hooks_ports(mr_session *s, mr_stmt_ctx *ctx);
stmt_verdict ss_hooks_command(mr_session *s, uint8_t cmd, const uint8_t *p, size_t n, uint32_t len);
bool ss_hooks_wants_whole(mr_session *s, uint8_t cmd, const uint8_t *head, uint32_t len);
stmt_verdict ss_hooks_statement(mr_session *s, bool before_rules, mr_hook_stmt *st);
/* The verdict hooks (notes: the COM_STMT_PREPARE's note slots, NULL for a
 * COM_QUERY), and the execute hooks of a statement's notes. */
void ss_hooks_verdict(mr_session *s, const mr_match_result *res, void **notes);
void ss_hooks_execute(mr_session *s, void *const *notes);
/* Some hook watches the response's packets now (a keyset page): then the
 * relay copies packet heads out, since a hook may rearrange the input. */
bool ss_hooks_response_watched(mr_session *s);
/* The backend packet at `pos` (`len` payload bytes, `avail` buffered from
 * pos) starts now: false when a hook wants it whole and it is not all
 * buffered yet. */
bool ss_hooks_response_packet(mr_session *s, struct evbuffer *in, const struct evbuffer_ptr *pos,
                              uint32_t len, size_t avail);
/* The response's last packet was classified (relayed: false), or the
 * response was relayed whole (true). */
void ss_hooks_response_end(mr_session *s, bool relayed);
void ss_hooks_prepared_reset(mr_session *s);
void ss_hooks_end(mr_session *s);
/* A statement goes out as `text` instead of the client's bytes (a rule's
 * rewrite, a hook's MR_HOOK_SEND): STMT_RELAY, or STMT_CLOSED when out of
 * memory (the client got an ERR). */
stmt_verdict ss_send_instead(mr_session *s, uint8_t cmd, const uint8_t *text, size_t len);

/* session/pool/pool_side.c: the session over the pool (pool = transaction); each
 * does nothing with pool = session. May the session connect for its login
 * now (else it waits for room, then connects by ss_connect); the login's
 * HandshakeResponse asks the server for session tracking; the login
 * succeeded (false: out of memory); a command with no server connection
 * heads the input: borrow one (false: wait, or the session closed); what a
 * command or a statement's text tells; an OK's session state; a response
 * ended (the unit may end); the session ends. */
bool ss_pool_may_connect(mr_session *s);
void ss_pool_login_caps(mr_session *s, bool server_tracks, uint8_t charset);
bool ss_pool_logged_in(mr_session *s);
bool ss_pool_attach(mr_session *s);
void ss_pool_command(mr_session *s, uint8_t cmd);
void ss_pool_statement(mr_session *s, const char *sql, size_t len, unsigned lex_flags, bool own);
/* pool = statement: does the client's text say it would pin its session?
 * Then it was answered with an ERR naming pool = transaction, and is not
 * sent. */
bool ss_pool_refuses(mr_session *s, const char *sql, size_t len, unsigned lex_flags);
/* Sends a refusal held back until the preludes were answered (if any). */
void ss_pool_answer_due(mr_session *s);
/* The client's own text goes out with its CONNECTION_ID() as the session's
 * stable id (the handshake's thread id), and, on a connection borrowed for
 * it, ROW_COUNT() and FOUND_ROWS() as the session's own values (pool/hints.h):
 * STMT_RELAY either way. */
stmt_verdict ss_pool_own_id(mr_session *s, uint8_t cmd, const char *sql, size_t len,
                            unsigned lex_flags);
/* A rewritten text with its CONNECTION_ID() (and, on a connection borrowed
 * for it, ROW_COUNT() and FOUND_ROWS()) as the session's own, into out:
 * false when it has none (or out of memory: the text then goes as it is,
 * and CONNECTION_ID() pins the session for connection_id). */
bool ss_pool_own_text(mr_session *s, uint8_t cmd, const uint8_t *text, size_t len, mr_buf *out);
/* The server connection whose end the release of the session's work must
 * wait for (mr_fsession.end_wait_id): with pool = session its own; pooled,
 * the one it held when it ended mid-unit or pinned (the pool closes it), or
 * 0 when it ended between units. */
uint32_t ss_pool_end_wait(mr_session *s);
void ss_pool_ok_state(mr_session *s, const uint8_t *state, size_t n);
/* The state block of the OK to one of the pool's own preludes: the
 * variables it set are the session's and its connection's. */
void ss_pool_prelude_state(mr_session *s, const uint8_t *state, size_t n);
void ss_pool_response_done(mr_session *s, bool ok);
void ss_pool_unit_end(mr_session *s);
void ss_pool_session_end(mr_session *s);
void ss_pool_pin(mr_session *s, mr_pin_reason r);
void ss_pool_unpin(mr_session *s, mr_pin_reason r);
/* The command whose header h heads the client's input is dropped as it comes
 * (it was answered instead). */
void ss_pool_drop_command(mr_session *s, const mr_pkt_header *h);
/* session/pool/pool_stmt.c: server-side prepared statements over the pool; each
 * does nothing with pool = session. The greeting (payload p) the client
 * gets, masked further; is the client's command read whole
 * (cmd: its first byte); a COM_STMT_PREPARE (p: n of its len bytes) and the
 * text that goes out for it (a rule's rewrite); a command is sent (a
 * prepare's answer comes); the first packet of a prepare's answer (payload
 * len bytes at off of in, avail there; false: wait for more); a statement
 * command (true: answered, nothing is sent); a packet of the answer to an
 * on-demand prepare (a mr_track_result); a response ended; the server
 * dropped the session's statements (its COM_RESET_CONNECTION or
 * COM_CHANGE_USER); the pool's reset of srv; the session ends. */
void ss_pstmt_greeting(mr_session *s, uint8_t *p, mr_greeting *g);
bool ss_pstmt_wants_whole(const mr_session *s, uint8_t cmd);
bool ss_pstmt_prepare(mr_session *s, const uint8_t *p, size_t n, uint32_t len);
void ss_pstmt_text(mr_session *s, const char *text, size_t len);
void ss_pstmt_sent(mr_session *s, uint8_t cmd);
bool ss_pstmt_prepare_answer(mr_session *s, struct evbuffer *in, size_t off, uint32_t len,
                             size_t avail);
bool ss_pstmt_command(mr_session *s, uint8_t cmd, const uint8_t *p, size_t n, uint32_t len);
int ss_pstmt_prelude_packet(mr_session *s, const uint8_t *p, uint32_t len);
/* An on-demand prepare failed: the next ERR the client gets is its ERR
 * (the packet `len` bytes at `off` of the backend's input, all there, is
 * replaced as ss_pool_view replaces one). */
bool ss_pstmt_err_due(const mr_session *s);
void ss_pstmt_replace_err(mr_session *s, struct evbuffer **in, struct evbuffer_iovec *first,
                          size_t off, uint32_t len, uint8_t seq);
void ss_pstmt_response_done(mr_session *s, bool ok);
void ss_pstmt_forget(mr_session *s);
/* session/pool/srv_reset.c */
void ss_pstmt_srv_reset(mr_srv *srv);
void ss_pstmt_free(mr_session *s);
bool ss_pstmt_answer_due(const mr_session *s);

/* session/pool/pool_view.c: the OK or EOF just classified (payload `len` bytes at
 * `move` of the backend's input, `avail` there) is replaced by the client's
 * view of it when that differs: true when it was (the bytes before it went
 * out, and *in is the input evbuffer now). */
bool ss_pool_view(mr_session *s, struct evbuffer **in, struct evbuffer_iovec *first, size_t move,
                  uint32_t len, uint8_t seq, size_t avail);

/* session/pool/pool_kill.c: a COM_QUERY `KILL ... <id>` whose id is a session of
 * this proxy's (pool = transaction): true when taken (*v the verdict), false
 * to go on as usual (relayed as written). The answer to the KILL sent came,
 * or the killer ends: the hold on the target's connection goes. Before the
 * session gives its connection back: true when a KILL of it is on its way
 * (the connection stays). */
bool ss_pool_kill(mr_session *s, uint8_t cmd, const char *sql, size_t len, unsigned lex_flags,
                  stmt_verdict *v);
/* COM_PROCESS_KILL (payload p, len bytes) is KILL CONNECTION: the same, as
 * the text `KILL <id>` when its id is a session's. */
bool ss_pool_process_kill(mr_session *s, const uint8_t *p, uint32_t len, stmt_verdict *v);
void ss_pool_kill_done(mr_session *s);
/* session/pool/kill_holds.c: the unit of work ends; true when a KILL holds
 * the session's server connection (it is kept until the KILL's answer). */
bool ss_pool_kill_holds(mr_session *s);

/* session/core/park.c: the session waits for the background in SS_WAIT_BG
 * (ss_park: false when out of memory, nothing changed). `cookie` is the
 * parker's: when the background signals, ops->retry(s, cookie); after
 * timeout_ms, at a tick, ops->timed_out(s, cookie) instead; either may end
 * the wait (ss_park_end, which calls ops->end with the time waited and lets
 * go of the park). A session left idle then reads on (ss_up.resume). */
typedef struct ss_park_ops {
    void (*retry)(mr_session *s, void *cookie);
    void (*timed_out)(mr_session *s, void *cookie);
    void (*end)(mr_session *s, void *cookie, uint64_t waited_ns);
} ss_park_ops;
bool ss_park(mr_session *s, const ss_park_ops *ops, void *cookie, uint64_t timeout_ms);
/* The cookie when s is parked by ops, else NULL. */
void *ss_parked(const mr_session *s, const ss_park_ops *ops);
void ss_park_end(mr_session *s);
/* The session ends: its park goes with it. */
void ss_park_free(mr_session *s);

/* session/stmt/park_stmt.c: the front end marked the statement for parking
 * (res->park): true when the session now holds a copy of it in
 * SS_WAIT_BG (or, running it again, still does); false when it cannot
 * (delayed_park_timeout = 0, out of memory): res's ERR is the answer.
 * rerun runs the copy again as it first ran (an execute: its whole
 * payload; a statement: its text, the query attributes in s->qattrs). */
typedef stmt_verdict (*ss_rerun_fn)(mr_session *s, uint8_t cmd, const char *sql, size_t len);
bool ss_park_statement(mr_session *s, uint8_t cmd, const char *sql, size_t len,
                       const mr_match_result *res, ss_rerun_fn rerun);

#endif
