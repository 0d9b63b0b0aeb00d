/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delayed/session/session_hooks.c - the delayed feature's hooks in a client session
 * (feature/feature.h): FLUSH DELAYED (delayed/session/session_flush.c), memory-mode
 * statements answered by the proxy itself, their prepared form
 * (delayed/session/session_prepared.c), the staging rows its statements
 * send counted (a prepared one's at each execute), and the staged flusher
 * woken once a statement that asked for it is answered.
 *
 * Session's worker thread; owns the session's ds_session (its slot).
 */
#include "myrewrite/delayed/session_hooks.h"

#include <stdlib.h>

#include "delayed/session/session_impl.h"
#include "myrewrite/base/log.h"
#include "myrewrite/delayed/flush.h"
#include "myrewrite/delayed/staging_sql.h"
#include "myrewrite/proto/codec.h"
#include "myrewrite/stats/rule_stats.h"

static mr_hook_action command(mr_fsession *fs, void **st, uint8_t cmd, const uint8_t *p, size_t n,
                              uint32_t len)
{
    return ds_command(fs, *st, cmd, p, n, len);
}

/* An execute of a kept memory statement is read whole (its values). */
static bool wants_whole(mr_fsession *fs, void **st, uint8_t cmd, const uint8_t *head, uint32_t len)
{
    (void)fs;
    (void)head;
    (void)len;
    const ds_session *d = *st;
    return cmd == MR_COM_STMT_EXECUTE && d && d->dstmts;
}

/* A point read read_pending rewrote: counted for SHOW STATS, /metrics and
 * the rule's SHOW DELAYED row (a prepared one once, at its prepare). */
static void count_read(mr_fsession *fs, const mr_match_result *res)
{
    if (!res->read_pending || res->action != MR_ACT_REWRITE)
        return;
    mr_stat_add(&fs->stats->delayed_read_pending, 1);
    mr_rule_stats *e = mr_rule_stats_of(res->read_pending);
    if (e)
        atomic_fetch_add_explicit(&e->read_pending, 1, memory_order_relaxed);
}

/* A prepared DELAYED statement's staging rows: counted at each execute. */
typedef struct ds_note {
    mr_rule_stats *rule, *table; /* the rule's counters, a derived table's (NULL: none) */
    uint32_t rows;
} ds_note;

/* `rows` staging rows of a DELAYED statement sent, on the rule's counters
 * and, for a derived rule, its table's. */
static void count_staged(mr_fsession *fs, mr_rule_stats *rule, mr_rule_stats *table, uint32_t rows)
{
    mr_stat_add(&fs->stats->delayed_rows_staged, rows);
    if (rule)
        atomic_fetch_add_explicit(&rule->staged, rows, memory_order_relaxed);
    if (table)
        atomic_fetch_add_explicit(&table->staged, rows, memory_order_relaxed);
}

/* Staging rows go out only when the statement is sent (not blocked); a
 * prepared one's at each execute. */
static void verdict(mr_fsession *fs, void **st, const mr_match_result *res, void **note)
{
    (void)st;
    unsigned n = res->nmatched < MR_MATCH_MAX_RULES ? res->nmatched : MR_MATCH_MAX_RULES;
    for (unsigned i = 0; i < n && res->action == MR_ACT_REWRITE; i++) {
        const mr_rule *r = res->matched[i];
        if (r->kind != MR_RULE_DELAYED || r->log_only || !res->staged_rows[i])
            continue;
        if (!note) {
            count_staged(fs, mr_rule_stats_of(r), res->staged_table[i], res->staged_rows[i]);
            continue;
        }
        if (!*note && !(*note = malloc(sizeof(ds_note)))) {
            mr_warn(fs->id, "out of memory: the executes of a prepared DELAYED statement "
                            "are not counted");
            return;
        }
        *(ds_note *)*note =
            (ds_note){mr_rule_stats_of(r), res->staged_table[i], res->staged_rows[i]};
    }
}

static void execute(mr_fsession *fs, void **st, void *note)
{
    (void)st;
    const ds_note *dn = note;
    count_staged(fs, dn->rule, dn->table, dn->rows);
}

static bool stages_rows(const mr_match_result *res)
{
    for (unsigned i = 0; i < res->nmatched; i++)
        if (res->staged_rows[i])
            return true;
    return false;
}

/* After the rules: a memory statement is answered here; a prepared one is
 * kept under the id its stand-in gets, and so is a prepared point read of
 * a memory table (its executes get the SET of what is held first). */
static mr_hook_action statement(mr_fsession *fs, void **st, mr_hook_stmt *stmt)
{
    const mr_match_result *res = stmt->res;
    count_read(fs, res);
    /* A staged rule's flush_early was passed, or a default rule's table is
     * new: the flusher is woken once the server has answered, so that the
     * staging rows of this very statement are committed (in autocommit
     * mode) when it looks. */
    bool keep = res->dmem_prepare || res->dmem_read_prepare, staged = stages_rows(res);
    ds_session *d = res->wake_flusher || keep || staged ? ds_state(st) : *st;
    if (d) {
        d->wake_flusher = res->wake_flusher;
        d->staged = staged;
    } else if (res->wake_flusher)
        mr_delayed_wake(); /* out of memory: now rather than never */
    if (res->action == MR_ACT_DELAYED_MEMORY)
        return ds_memory(fs, res->dmem);
    if (res->dmem_prepare && (!d || !ds_note_prepare(d, stmt->sql, stmt->len, res->dmem_nparams))) {
        fs->ops->send_err(fs, MR_DELAYED_ERR_CODE, MR_DELAYED_SQLSTATE,
                          "DELAYED in mode = "
                          "memory: a prepared statement takes at most 256 parameters");
        return MR_HOOK_ANSWERED;
    }
    if (res->dmem_read_prepare && (!d || !ds_note_read(d, stmt->sql, stmt->len, res->dmem_nparams,
                                                       res->read_set, res->read_set_len))) {
        fs->ops->send_err(fs, MR_DELAYED_ERR_CODE, MR_DELAYED_SQLSTATE,
                          "read_pending in mode = memory: a prepared point read takes at most "
                          "256 parameters");
        return MR_HOOK_ANSWERED;
    }
    return MR_HOOK_PASS;
}

static void command_done(mr_fsession *fs, void **st, const mr_hook_response *r)
{
    (void)fs;
    ds_session *d = *st;
    if (!d)
        return;
    if (d->wake_flusher)
        mr_delayed_wake();
    if (d->staged && !r->ok)
        mr_delayed_setup_now(); /* its staging table may have been dropped: made again */
    d->wake_flusher = d->staged = false;
    if (r->cmd == MR_COM_STMT_PREPARE)
        ds_prepared(d, r->ok, r->stmt_id);
}

static void prepared_reset(mr_fsession *fs, void **st)
{
    (void)fs;
    if (*st)
        ds_forget_all(*st);
}

static mr_hook_action bg_answer(mr_fsession *fs, void **st, mr_hook_stmt *out)
{
    (void)out;
    ds_session *d = *st;
    return d && ds_flush_answer(fs, d) ? MR_HOOK_ANSWERED : MR_HOOK_PASS;
}

static void session_end(mr_fsession *fs, void **st)
{
    (void)fs;
    ds_session *d = *st;
    if (!d)
        return;
    ds_flush_orphan(d);
    ds_forget_all(d);
    free(d);
    *st = NULL;
}

/* The memory tables' shards, one per worker. */
static void start(const mr_proxy *p)
{
    if (!mr_dmem_init(p->nworkers))
        mr_warn(0, "delayed: out of memory for the memory tables; mode = memory rules have no "
                   "flusher and their statements are refused");
}

/* A very first start: the staging tables exist before a statement comes. */
static void before_listen(const mr_proxy *p)
{
    if (!mr_delayed_wait_staging(p->cfg->delayed_park_timeout_ms))
        mr_warn(0, "delayed: the flusher has not set up its staging tables (its connection "
                   "failed, or delayed_park_timeout passed); listening anyway (a staged statement "
                   "on a missing one gets the server's error until it exists)");
}

/* The staged flusher's final flush, then the memory tables'. */
static void stop(const mr_proxy *p)
{
    mr_delayed_stop(p->cfg->shutdown_timeout_ms);
    mr_dmem_stop(p->cfg->shutdown_timeout_ms);
}

/* Memory tables for the set's memory-mode rules (def->mem), before any
 * worker sees it; then the staged flusher follows the set. */
static void rules_prepare(const mr_proxy *p, const mr_ruleset *rs) { mr_dmem_configure(p, rs); }
static void configure(const mr_proxy *p, const mr_ruleset *rs) { mr_delayed_configure(p, rs); }

/* The statement side's ports: the tables default rules derived. */
static void ports(mr_fsession *fs, void **st, mr_stmt_ctx *ctx)
{
    (void)fs;
    (void)st;
    ctx->derived = mr_delayed_derive_port();
}

const mr_feature mr_delayed_feature = {
    .name = "delayed",
    .start = start,
    .before_listen = before_listen,
    .stop = stop,
    .rules_prepare = rules_prepare,
    .configure = configure,
    .ports = ports,
    .command = command,
    .wants_whole = wants_whole,
    .before_rules = ds_flush_statement,
    .statement = statement,
    .verdict = verdict,
    .execute = execute,
    .command_done = command_done,
    .prepared_reset = prepared_reset,
    .bg_answer = bg_answer,
    .session_end = session_end,
};
