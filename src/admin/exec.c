/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/exec.c - dispatch of the admin console's commands (see
 * admin/admin_impl.h), and the answers that need no state: errors, OK, the
 * version comment the mariadb CLI asks for.
 *
 * Admin console thread; owns nothing beyond one call.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin_impl.h"
#include "myrewrite/admin/cmd.h"
#include "myrewrite/admin/proto.h"
#include "myrewrite/delayed/flush_request.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/net/tls_reload.h"
#include "myrewrite/proto/codec.h"

#define ER_PARSE_ERROR 1064

void mr_admin_error(mr_buf *out, uint16_t code, const char *sqlstate, const char *msg)
{
    mr_err_build(out, 1, code, sqlstate, msg);
}

void mr_admin_lines_result(mr_buf *out, const char *column, char *text)
{
    mr_col col = {column, MR_COL_TEXT};
    mr_resultset rs;
    mr_rs_begin(&rs, out, 1, &col, 1);
    while (text && *text) {
        char *nl = strchr(text, '\n');
        if (nl)
            *nl = '\0';
        const char *v = text;
        mr_rs_row(&rs, &v);
        text = nl ? nl + 1 : text + strlen(text);
    }
    mr_rs_end(&rs);
}

static void unknown(mr_buf *out)
{
    char msg[512];
    snprintf(msg, sizeof(msg), "unknown admin command; the commands are: %s", mr_admin_cmd_list());
    mr_admin_error(out, MR_ER_UNKNOWN_COM, "42000", msg);
}

/* RELOAD TLS: the certificate files read again whether or not they changed
 * (SIGHUP reads only changed ones); a pair that does not load is an error
 * and the one in force stays. */
static void reload_tls(mr_proxy *p, mr_buf *out)
{
    char msg[600];
    switch (mr_tls_reload(p, false, msg, sizeof(msg))) {
    case MR_TLS_RELOADED:
    case MR_TLS_UNCHANGED: mr_admin_lines_result(out, "result", msg); return;
    case MR_TLS_REFUSED:
    case MR_TLS_NONE: mr_admin_error(out, MR_ER_TLS_RELOAD, "HY000", msg); return;
    }
}

/* FLUSH DELAYED [table]: a round of every flusher now (delayed/flush_request.h),
 * answered when done or after MR_ADMIN_JOB_LIMIT_MS; the console serves
 * its other connections meanwhile. */
struct mr_admin_job {
    mr_dflush_req *req;
};

static void flush_delayed(const mr_buf *arg, mr_buf *out, mr_admin_job **job)
{
    const char *table = arg->len ? (const char *)arg->data : "";
    bool no_flusher = false; /* unset when calloc fails */
    mr_admin_job *j = calloc(1, sizeof *j);
    if (j && (j->req = mr_dflush_req_start(table, true, true, mr_admin_wake, NULL, &no_flusher))) {
        *job = j;
        return;
    }
    free(j);
    if (no_flusher)
        mr_admin_error(out, MR_ER_UNKNOWN_COM, "42000",
                       "nothing to flush: no [delayed] rule is in force, or proxy_user is not "
                       "set so the proxy has no connection of its own");
    else
        mr_admin_error(out, MR_ER_OUT_OF_MEMORY, "HY000", "out of memory");
}

bool mr_admin_job_answer(mr_admin_job *j, bool limit_passed, mr_buf *out)
{
    mr_dflush_outcome o;
    if (!mr_dflush_req_outcome(j->req, &o) && !limit_passed)
        return false;
    char msg[600];
    if (o.rejected && (o.result == 0 || o.result == 2)) {
        snprintf(msg, sizeof msg,
                 "FLUSH DELAYED: %" PRIu64 " staged row(s) could not be "
                 "applied, the server refused them (%s; SHOW DELAYED REJECTED lists them)",
                 o.rejected, o.where);
        mr_admin_error(out, MR_DELAYED_ERR_CODE, "HY000", msg);
    } else if (o.result == 0) {
        mr_admin_lines_result(out, "result", "flushed");
    } else if (o.result == 1) {
        snprintf(msg, sizeof msg, "still flushing after %d s; it goes on in the background",
                 MR_ADMIN_JOB_LIMIT_MS / 1000);
        mr_admin_lines_result(out, "result", msg);
    } else {
        mr_admin_error(out, MR_DELAYED_ERR_CODE, "HY000",
                       "FLUSH DELAYED: a chunk failed (see the log and SHOW DELAYED); its "
                       "deltas are kept and retried at the next round");
    }
    return true;
}

void mr_admin_job_free(mr_admin_job *j)
{
    if (!j)
        return;
    mr_dflush_req_release(j->req);
    free(j);
}

static void version_comment(mr_buf *out)
{
    mr_col col = {"@@version_comment", MR_COL_TEXT};
    const char *v = "myrewrite admin console";
    mr_resultset rs;
    mr_rs_begin(&rs, out, 1, &col, 1);
    mr_rs_row(&rs, &v);
    mr_rs_end(&rs);
}

static void run(mr_proxy *p, mr_admin_cmd cmd, const mr_buf *arg, mr_buf *out, mr_admin_job **job)
{
    switch (cmd) {
    case MR_ADM_SHOW_VERSION: mr_admin_show_version(p, out); return;
    case MR_ADM_SHOW_CONFIG: mr_admin_show_config(p, out); return;
    case MR_ADM_SHOW_RULES: mr_admin_show_rules(p, out); return;
    case MR_ADM_SHOW_DIGESTS: mr_admin_show_digests(p, out); return;
    case MR_ADM_SHOW_STATS: mr_admin_show_stats(p, out); return;
    case MR_ADM_SHOW_BACKENDS: mr_admin_show_backends(p, out); return;
    case MR_ADM_SHOW_QUEUES: mr_admin_show_queues(p, out); return;
    case MR_ADM_SHOW_DELAYED: mr_admin_show_delayed(p, out); return;
    case MR_ADM_SHOW_PAGINATION: mr_admin_show_pagination(p, out); return;
    case MR_ADM_SHOW_CLIENTS: mr_admin_show_clients(p, out); return;
    case MR_ADM_SHOW_POOLS: mr_admin_show_pools(p, out); return;
    case MR_ADM_SHOW_SERVERS: mr_admin_show_servers(p, out); return;
    case MR_ADM_SHOW_PINS: mr_admin_show_pins(p, out); return;
    case MR_ADM_FLUSH_DELAYED: flush_delayed(arg, out, job); return;
    case MR_ADM_SHOW_DELAYED_REJECTED:
        mr_admin_show_delayed_rejected(arg->len ? (const char *)arg->data : "", out);
        return;
    case MR_ADM_RELOAD_RULES: mr_admin_reload_rules(p, out); return;
    case MR_ADM_RELOAD_TLS: reload_tls(p, out); return;
    case MR_ADM_EXPLAIN_REWRITE:
        mr_admin_explain(p, (const char *)arg->data, arg->len - 1, out); /* without the NUL */
        return;
    case MR_ADM_VERSION_COMMENT: version_comment(out); return;
    case MR_ADM_SET:
    case MR_ADM_EMPTY: mr_ok_build(out, 1, 0, 0, MR_STATUS_AUTOCOMMIT, 0); return;
    case MR_ADM_BAD_ARGUMENT:
        mr_admin_error(out, ER_PARSE_ERROR, "42000",
                       "EXPLAIN REWRITE takes one quoted statement: EXPLAIN REWRITE 'SELECT ...'");
        return;
    default: break;
    }
    unknown(out);
}

void mr_admin_exec(mr_proxy *p, const char *sql, size_t len, mr_buf *out, mr_admin_job **job)
{
    mr_buf arg;
    mr_buf_init(&arg);
    mr_admin_cmd cmd = mr_admin_cmd_parse(sql, len, &arg);
    if (arg.failed) {
        mr_admin_error(out, MR_ER_OUT_OF_MEMORY, "HY000", "out of memory");
    } else {
        run(p, cmd, &arg, out, job);
    }
    mr_buf_free(&arg);
}
