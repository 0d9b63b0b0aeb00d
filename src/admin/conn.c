/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/conn.c - one admin console connection: greeting, login with
 * mysql_native_password (switching the client to it when it asks for
 * another plugin), then commands (see admin/admin_impl.h).
 *
 * Admin console thread only; owns every console connection (a list that
 * only this thread touches) and frees each when it ends.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "admin/admin_impl.h"
#include "myrewrite/admin/proto.h"
#include "myrewrite/base/log.h"
#include "myrewrite/net/conn.h"
#include "myrewrite/proto/codec.h"

#define MAX_PACKET (1u << 20) /* console commands are short */
#define SERVER_VERSION "5.7.0-myrewrite-" MYREWRITE_VERSION "-admin"

/* ST_WAITING: a command answers later (a job); no further command is read
 * meanwhile. */
typedef enum conn_state { ST_LOGIN, ST_SWITCHED, ST_READY, ST_WAITING, ST_CLOSING } conn_state;

typedef struct client {
    struct client *next, *prev;
    mr_proxy *p;
    mr_conn *conn;
    uint32_t id;
    conn_state st;
    bool user_ok;     /* the login named admin_user */
    bool logged_in;   /* counted in nready */
    bool in_callback; /* inside on_read: frees wait until it returns */
    mr_admin_addr from;
    mr_admin_job *job;       /* ST_WAITING: the command's work */
    struct event *job_timer; /* ST_WAITING: its limit */
    struct event_base *base;
    uint8_t scramble[MR_ADMIN_SCRAMBLE_LEN];
} client;

static client *clients; /* console thread only; the newest first */
static unsigned nclients, nready;

unsigned mr_admin_conn_ready(void) { return nready; }
unsigned mr_admin_conn_logins(void) { return nclients - nready; }

static void destroy(client *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    nclients--;
    nready -= c->logged_in;
    mr_admin_job_free(c->job);
    if (c->job_timer)
        event_free(c->job_timer);
    mr_conn_free(c->conn);
    free(c);
}

/* Frees a closing connection once its last answer is out. */
static void finish_if_done(client *c)
{
    if (c->st == ST_CLOSING && !c->in_callback && evbuffer_get_length(mr_conn_output(c->conn)) == 0)
        destroy(c);
}

static void close_after_reply(client *c)
{
    c->st = ST_CLOSING;
    mr_conn_read_enable(c->conn, false);
    mr_conn_set_timeout(c->conn, NULL);
}

static void send_buf(client *c, mr_buf *b, uint8_t seq)
{
    if (b->failed) {
        mr_buf_reset(b);
        b->failed = false;
        mr_err_build(b, seq, MR_ER_OUT_OF_MEMORY, "HY000", "out of memory");
    }
    mr_conn_write(c->conn, b->data, b->len);
}

static void send_err(client *c, uint8_t seq, uint16_t code, const char *sqlstate, const char *msg)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_err_build(&b, seq, code, sqlstate, msg);
    send_buf(c, &b, seq);
    mr_buf_free(&b);
}

static void send_ok(client *c, uint8_t seq)
{
    mr_buf b;
    mr_buf_init(&b);
    mr_ok_build(&b, seq, 0, 0, MR_STATUS_AUTOCOMMIT, 0);
    send_buf(c, &b, seq);
    mr_buf_free(&b);
}

static void verify(client *c, const uint8_t *answer, size_t len, uint8_t seq)
{
    const char *pw = c->p->cfg->admin_password;
    bool pw_ok = mr_admin_native_check(pw, c->scramble, answer, len); /* whatever the user */
    if (c->user_ok && pw_ok) {
        c->st = ST_READY;
        c->logged_in = true;
        nready++;
        mr_admin_login_ok(&c->from);
        mr_conn_set_timeout(c->conn, NULL);
        mr_info(0, "admin console: connection %u logged in", c->id);
        send_ok(c, seq);
        return;
    }
    char msg[200], from[64];
    snprintf(msg, sizeof(msg), "Access denied to the myrewrite admin console (using password: %s)",
             len ? "YES" : "NO");
    uint64_t wait = mr_admin_login_failed(&c->from);
    mr_admin_addr_text(&c->from, from, sizeof from);
    mr_warn(0,
            "admin console: connection %u from %s refused: wrong user or password (%s may "
            "try again in %llu ms)",
            c->id, from, from, (unsigned long long)wait);
    send_err(c, seq, MR_ER_ACCESS_DENIED, "28000", msg);
    close_after_reply(c);
}

static bool is_native(const mr_admin_login *l)
{
    return !l->plugin || (l->plugin_len == strlen(MR_ADMIN_NATIVE_PLUGIN) &&
                          memcmp(l->plugin, MR_ADMIN_NATIVE_PLUGIN, l->plugin_len) == 0);
}

static void on_login(client *c, const uint8_t *p, size_t n, uint8_t seq)
{
    mr_admin_login l;
    uint8_t next = (uint8_t)(seq + 1);
    if (mr_admin_login_parse(p, n, &l) != MR_OK) {
        send_err(c, next, MR_ER_MALFORMED_PACKET, "08S01", "malformed handshake response");
        close_after_reply(c);
        return;
    }
    if (l.ssl_request) { /* not announced, so not expected */
        send_err(c, next, MR_ER_NOT_SUPPORTED, "08S01", "the admin console does not support TLS");
        close_after_reply(c);
        return;
    }
    const char *user = c->p->cfg->admin_user;
    c->user_ok = l.user_len == strlen(user) && memcmp(l.user, user, l.user_len) == 0;
    if (is_native(&l)) {
        verify(c, l.auth, l.auth_len, next);
        return;
    }
    mr_buf b;
    mr_buf_init(&b);
    mr_admin_auth_switch_build(&b, next, c->scramble);
    send_buf(c, &b, next);
    mr_buf_free(&b);
    c->st = ST_SWITCHED;
}

static void on_read(mr_conn *conn, void *arg);

/* The job's answer, when it is done or its limit passed. */
static void answer_job(client *c, bool limit_passed)
{
    mr_buf b;
    mr_buf_init(&b);
    if (!mr_admin_job_answer(c->job, limit_passed, &b)) {
        mr_buf_free(&b);
        return;
    }
    send_buf(c, &b, 1);
    mr_buf_free(&b);
    mr_admin_job_free(c->job);
    c->job = NULL;
    event_del(c->job_timer);
    c->st = ST_READY;
    mr_conn_read_enable(c->conn, true);
    if (!c->in_callback)
        on_read(c->conn, c); /* commands sent meanwhile wait in the input */
}

static void on_job_limit(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    answer_job(arg, true);
}

void mr_admin_conn_jobs_done(void)
{
    for (client *c = clients, *next; c; c = next) {
        next = c->next;
        if (c->st == ST_WAITING)
            answer_job(c, false);
    }
}

/* A command that answers later: reads stop until its answer is out. */
static void wait_job(client *c, mr_admin_job *job)
{
    struct timeval tv = {MR_ADMIN_JOB_LIMIT_MS / 1000, (MR_ADMIN_JOB_LIMIT_MS % 1000) * 1000};
    if (!c->job_timer)
        c->job_timer = event_new(c->base, -1, 0, on_job_limit, c);
    c->job = job;
    c->st = ST_WAITING;
    mr_conn_read_enable(c->conn, false);
    if (!c->job_timer || event_add(c->job_timer, &tv) != 0)
        answer_job(c, true); /* no timer: "still running" now rather than never */
    else
        answer_job(c, false); /* it may be done already */
}

static void on_command(client *c, const uint8_t *p, size_t n, uint8_t seq)
{
    if (seq != 0 || n == 0) {
        mr_warn(0, "admin console: connection %u broke the protocol; closing it", c->id);
        close_after_reply(c);
        return;
    }
    mr_buf b;
    mr_admin_job *job = NULL;
    switch (p[0]) {
    case MR_COM_QUIT: close_after_reply(c); return;
    case MR_COM_PING:
    case MR_COM_INIT_DB: send_ok(c, 1); return;
    case MR_COM_QUERY:
        mr_buf_init(&b);
        mr_admin_exec(c->p, (const char *)p + 1, n - 1, &b, &job);
        if (job)
            wait_job(c, job);
        else
            send_buf(c, &b, 1);
        mr_buf_free(&b);
        return;
    default:
        send_err(c, 1, MR_ER_UNKNOWN_COM, "08S01",
                 "the admin console answers COM_QUERY, COM_PING, COM_INIT_DB and COM_QUIT only");
    }
}

static void on_packet(client *c, const uint8_t *p, size_t n, uint8_t seq)
{
    switch (c->st) {
    case ST_LOGIN: on_login(c, p, n, seq); break;
    case ST_SWITCHED: verify(c, p, n, (uint8_t)(seq + 1)); break;
    case ST_READY: on_command(c, p, n, seq); break;
    case ST_WAITING:
    case ST_CLOSING: break;
    }
}

/* Handles every whole packet in the input; false when the client must go. */
static bool read_packets(client *c)
{
    struct evbuffer *in = mr_conn_input(c->conn);
    uint8_t hdr[MR_PKT_HEADER];
    mr_pkt_header h;
    while (c->st != ST_CLOSING && c->st != ST_WAITING &&
           evbuffer_copyout(in, hdr, sizeof(hdr)) == sizeof(hdr)) {
        mr_pkt_header_read(hdr, sizeof(hdr), &h);
        if (h.len >= MAX_PACKET) {
            send_err(c, (uint8_t)(h.seq + 1), MR_ER_NET_PACKET_TOO_LARGE, "08S01",
                     "packet too large for the admin console");
            close_after_reply(c);
            return true;
        }
        if (evbuffer_get_length(in) < MR_PKT_HEADER + (size_t)h.len)
            return true;
        const uint8_t *pk = evbuffer_pullup(in, (ev_ssize_t)(MR_PKT_HEADER + h.len));
        if (!pk)
            return false;
        on_packet(c, pk + MR_PKT_HEADER, h.len, h.seq);
        evbuffer_drain(in, MR_PKT_HEADER + (size_t)h.len);
    }
    return true;
}

static void on_read(mr_conn *conn, void *arg)
{
    client *c = arg;
    (void)conn;
    c->in_callback = true;
    bool ok = read_packets(c);
    c->in_callback = false;
    if (!ok)
        destroy(c);
    else
        finish_if_done(c);
}

static void on_drained(mr_conn *conn, void *arg)
{
    (void)conn;
    finish_if_done(arg);
}

static void on_event(mr_conn *conn, int what, void *arg)
{
    client *c = arg;
    (void)conn;
    if (what & MR_CONN_TIMEOUT) {
        mr_admin_count(&mr_admin_stats_mut()->login_timeouts);
        mr_info(0, "admin console: connection %u did not log in in time; closing it", c->id);
    }
    destroy(c);
}

static const mr_conn_callbacks callbacks = {on_read, on_drained, on_event};

static bool greet(client *c)
{
    if (getrandom(c->scramble, sizeof(c->scramble), 0) != (ssize_t)sizeof(c->scramble)) {
        mr_error(0, "admin console: no random bytes for the scramble: %s", strerror(errno));
        return false;
    }
    mr_admin_scramble_fix(c->scramble);
    mr_buf b;
    mr_buf_init(&b);
    mr_admin_greeting_build(&b, SERVER_VERSION, c->id, c->scramble);
    bool ok = !b.failed;
    if (ok)
        mr_conn_write(c->conn, b.data, b.len);
    mr_buf_free(&b);
    return ok;
}

void mr_admin_conn_open(mr_proxy *p, struct event_base *base, int fd, uint32_t id,
                        const mr_admin_addr *from)
{
    client *c = calloc(1, sizeof(*c));
    if (!c || !(c->conn = mr_conn_new(base, fd, &callbacks, c))) {
        free(c);
        close(fd);
        return;
    }
    c->p = p;
    c->id = id;
    c->base = base;
    c->from = *from;
    c->next = clients;
    if (clients)
        clients->prev = c;
    clients = c;
    nclients++;
    if (!greet(c)) {
        destroy(c);
        return;
    }
    uint64_t ms = p->cfg->admin_login_timeout_ms;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    mr_conn_set_timeout(c->conn, &tv);
    mr_conn_set_low_mark(c->conn, 0);
    mr_conn_read_enable(c->conn, true);
}

void mr_admin_conn_evict_login(void)
{
    client *oldest = NULL;
    for (client *c = clients; c; c = c->next)
        if (!c->logged_in)
            oldest = c;
    if (!oldest)
        return;
    mr_admin_count(&mr_admin_stats_mut()->login_evicted);
    /* debug: a flood of sockets would flood the log; /metrics counts them */
    mr_debug(0, "admin console: connection %u had not logged in; closed for a newer one",
             oldest->id);
    destroy(oldest);
}

void mr_admin_conn_close_all(void)
{
    while (clients)
        destroy(clients);
}
