/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session/stmt/park_stmt.c - a statement the front end marked for parking
 * (res->park: a DELAYED statement whose rule names no key, sent before the
 * schema cache has its table's key, just after a start or a reload, or
 * while DDL on the table runs) waits in its session instead of being
 * refused with "retry": the session is parked (session/core/park.c) with a
 * copy of the statement.
 *
 * The statement meets the front end again (staged or summed as usual) when
 * the cache has loaded a table and at each tick (a lookup also queues
 * again a load that failed). After delayed_park_timeout the client gets
 * the rule's ERR, saying how long it waited and why.
 *
 * A COM_STMT_EXECUTE of a prepared memory-mode DELAYED statement that a
 * feature's command hook could not take for the same reason (MR_HOOK_PARK)
 * is parked the same way: the copy is the execute's packet. Whoever parks
 * it gives the function that runs it again (the front end, or the command
 * hooks), so this file names neither. Runs on the session's worker thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "myrewrite/base/log.h"
#include "session/core/session_impl.h"

struct park_stmt {
    ss_rerun_fn rerun; /* runs it again as it first ran */
    uint8_t cmd;       /* MR_COM_QUERY, MR_COM_STMT_PREPARE or MR_COM_STMT_EXECUTE */
    char *sql;         /* the statement as the client sent it (owned): its query */
    size_t len;        /* attributes (attrs_len bytes, proto/query_attrs.h), then its text;
                          an execute: its whole payload, the command byte first */
    size_t attrs_len;
    uint64_t attrs_count;
    bool again;        /* set when running it again parked it again */
    char why[512];     /* the last refusal: what the cache said */
    uint16_t err_code; /* ... and its code and SQLSTATE */
    char sqlstate[6];
};

/* The wait ended (run, timed out, or the session ended): the copy goes. */
static void end(mr_session *s, void *cookie, uint64_t waited_ns)
{
    struct park_stmt *pk = cookie;
    mr_stat_add(&s->w->stats.delayed_park_wait_us, waited_ns / 1000);
    free(pk->sql);
    free(pk);
}

/* The rule's message after the wait: how long, and what the cache said. */
static void time_out(mr_session *s, void *cookie)
{
    struct park_stmt *pk = cookie;
    char msg[700];
    uint64_t ms = cfg(s)->delayed_park_timeout_ms;
    const char *why = pk->why;
    if (strncmp(why, "myrewrite: ", 11) == 0)
        why += 11;
    snprintf(msg, sizeof msg,
             "myrewrite: the table's schema could not be read in %llu.%03llu s "
             "(delayed_park_timeout): %s",
             (unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000), why);
    uint16_t pk_code = pk->err_code;
    char pk_state[6];
    memcpy(pk_state, pk->sqlstate, sizeof pk_state);
    mr_info(s->id, "a parked DELAYED statement timed out: %s", pk->why);
    mr_stat_add(&s->w->stats.delayed_park_timeouts, 1);
    mr_stat_add(&s->w->stats.statements_blocked, 1);
    ss_park_end(s);
    ss_set_state(s, SS_IDLE);
    ss_send_err(s, 1, pk_code, pk_state, msg);
}

static void run_again(mr_session *s, void *cookie);
static const ss_park_ops park_ops = {run_again, time_out, end};

/* The statement went out as the front end left it: the response is relayed. */
static void relayed(mr_session *s, uint8_t cmd, const char *sql, size_t len)
{
    if (s->w->match.action != MR_ACT_REWRITE) { /* as written (the rules changed meanwhile) */
        mr_buf out;
        mr_buf_init(&out);
        ss_command_build(s, &out, cmd, sql, len, false);
        if (!out.failed)
            mr_conn_write(s->backend, out.data, out.len);
        mr_buf_free(&out);
    }
    mr_tracker_begin(&s->tracker, mr_expect_for_command(cmd));
    ss_set_state(s, SS_RESPONSE);
}

/* A parked execute no hook took when run again (the statement was
 * forgotten meanwhile): it goes to the server as the client sent it. */
static void relay_execute(mr_session *s, const char *p, size_t n)
{
    mr_buf out;
    mr_buf_init(&out);
    ss_command_build(s, &out, (uint8_t)p[0], p + 1, n - 1, true);
    if (!out.failed)
        mr_conn_write(s->backend, out.data, out.len);
    mr_buf_free(&out);
    mr_tracker_begin(&s->tracker, mr_expect_for_command((uint8_t)p[0]));
    ss_set_state(s, SS_RESPONSE);
}

/* Runs the copy as it first ran: a statement through the front end, an
 * execute through the command hooks. */
static stmt_verdict run_copy(mr_session *s, const struct park_stmt *pk)
{
    if (pk->cmd == MR_COM_STMT_EXECUTE)
        return pk->rerun(s, pk->cmd, pk->sql, pk->len);
    size_t head = pk->attrs_len;
    s->qattrs = head ? (const uint8_t *)pk->sql : NULL; /* as the client's packet had them */
    s->qattrs_len = head;
    s->qattrs_count = pk->attrs_count;
    return pk->rerun(s, pk->cmd, pk->sql + head, pk->len - head);
}

/* Runs the parked statement through the front end again; it may park once
 * more (the table is still unknown), be answered, or go to the server. */
static void run_again(mr_session *s, void *cookie)
{
    struct park_stmt *pk = cookie;
    pk->again = false;
    ss_set_state(s, SS_IDLE);
    uint64_t start = s->command_start_ns;
    s->command_start_ns = mr_mono_ns(); /* the front end's own time, not the wait */
    size_t head = pk->attrs_len;
    stmt_verdict v = run_copy(s, pk);
    s->command_start_ns = start; /* the command's latency includes the wait */
    if (ss_parked(s, &park_ops) == pk &&
        !(v == STMT_WAITING && pk->again)) { /* neither ended nor still parked */
        uint8_t cmd = pk->cmd;
        char *sql = pk->sql;
        size_t len = pk->len;
        pk->sql = NULL;
        ss_park_end(s);
        if (ALIVE(s) && v == STMT_RELAY && cmd == MR_COM_STMT_EXECUTE)
            relay_execute(s, sql, len);
        else if (ALIVE(s) && v == STMT_RELAY)
            relayed(s, cmd, sql + head, len - head);
        free(sql);
    }
    s->qattrs = NULL;
    s->qattrs_len = 0;
    s->qattrs_count = 0;
}

bool ss_park_statement(mr_session *s, uint8_t cmd, const char *sql, size_t len,
                       const mr_match_result *res, ss_rerun_fn rerun)
{
    struct park_stmt *again = ss_parked(s, &park_ops);
    if (again) { /* run again and still unknown */
        snprintf(again->why, sizeof again->why, "%s", res->message);
        again->again = true;
        ss_set_state(s, SS_WAIT_BG);
    } else {
        uint64_t ms = cfg(s)->delayed_park_timeout_ms;
        size_t head = s->qattrs_len; /* the client's query attributes go with it */
        struct park_stmt *pk = ms ? calloc(1, sizeof *pk) : NULL;
        if (!pk)
            return false; /* refused at once, as the message says */
        pk->sql = malloc(head + len ? head + len : 1);
        if (!pk->sql) {
            free(pk);
            return false;
        }
        if (head)
            memcpy(pk->sql, s->qattrs, head);
        memcpy(pk->sql + head, sql, len);
        pk->len = head + len;
        pk->attrs_len = head;
        pk->attrs_count = s->qattrs_count;
        pk->cmd = cmd;
        pk->rerun = rerun;
        snprintf(pk->why, sizeof pk->why, "%s", res->message);
        pk->err_code = res->err_code;
        memcpy(pk->sqlstate, res->sqlstate, sizeof pk->sqlstate);
        if (!ss_park(s, &park_ops, pk, ms)) {
            free(pk->sql);
            free(pk);
            return false;
        }
        mr_stat_add(&s->w->stats.delayed_parked, 1);
        mr_debug(s->id, "DELAYED statement parked: %s", pk->why);
    }
    s->from_client.discard = true; /* the packet is drained; the copy is run again */
    s->digest = NULL;
    return true;
}
