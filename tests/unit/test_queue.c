/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_queue.c - queue rules: loading and its errors, the statements the
 * release and the reaper send, the server version decision for SKIP
 * LOCKED, and the SKIP LOCKED rewrite in the matcher.
 */
#include "test_rules.h"

#include "myrewrite/proto/server_version.h"
#include "myrewrite/queue/release_sql.h"

static const char *const FULL = "[queue mails]\n"
                                "table = shop.unsent_emails\n"
                                "owner_column = owner\n"
                                "status_column = status\n"
                                "claimed_value = claimed\n"
                                "unclaimed_value = unsent\n"
                                "claimed_at_column = claimed_at\n"
                                "timeout = 90s\n"
                                "skip_locked = yes\n";

static const mr_queue_def *only_queue(const mr_ruleset *rs)
{
    assert_int_equal(mr_ruleset_count(rs), 1);
    const mr_rule *r = mr_ruleset_rule(rs, 0);
    assert_int_equal(r->kind, MR_RULE_QUEUE);
    assert_non_null(r->queue);
    return r->queue;
}

static void loads_full_form(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(FULL);
    const mr_queue_def *q = only_queue(rs);
    assert_string_equal(q->schema, "shop");
    assert_string_equal(q->table, "unsent_emails");
    assert_string_equal(q->owner_column, "owner");
    assert_string_equal(q->claimed_at_column, "claimed_at");
    assert_string_equal(q->unclaimed_owner, "0");
    assert_int_equal(q->timeout_ms, 90000);
    assert_true(q->skip_locked);
    assert_null(q->release);
    assert_true(mr_ruleset_has_queue(rs));
    mr_ruleset_free(rs);
}

static void defaults_and_schema_key(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[queue q]\nschema = shop\ntable = jobs\nowner_column = o\n"
                             "status_column = s\nclaimed_value = c\nunclaimed_value = u\n");
    const mr_queue_def *q = only_queue(rs);
    assert_string_equal(q->schema, "shop");
    assert_int_equal(q->timeout_ms, 600000);
    assert_false(q->skip_locked);
    assert_null(q->claimed_at_column);
    mr_ruleset_free(rs);
    rs = load_ok("[queue q]\ntable = shop.jobs\n"
                 "release = UPDATE shop.jobs SET worker = NULL WHERE worker = {owner}\n");
    assert_string_equal(only_queue(rs)->release,
                        "UPDATE shop.jobs SET worker = NULL WHERE worker = {owner}");
    assert_null(only_queue(rs)->reap);
    mr_ruleset_free(rs);
    rs = load_ok("[queue q]\ntable = shop.jobs\n"
                 "release = UPDATE shop.jobs SET worker = NULL WHERE worker = {owner}\n"
                 "reap = UPDATE shop.jobs SET worker = NULL WHERE worker NOT IN ({live}) "
                 "AND locked_at < {cutoff}\ntimeout = 2m\n");
    assert_string_equal(only_queue(rs)->reap, "UPDATE shop.jobs SET worker = NULL WHERE worker "
                                              "NOT IN ({live}) AND locked_at < {cutoff}");
    assert_int_equal(only_queue(rs)->timeout_ms, 120000);
    mr_ruleset_free(rs);
    rs = load_ok("[queue q]\ntable = shop.jobs\n"
                 "release = UPDATE shop.jobs SET worker = NULL WHERE worker = {owner}\n"
                 "reap = UPDATE shop.jobs SET worker = NULL WHERE worker NOT IN ({live}) "
                 "AND locked_at < {cutoff}\n");
    assert_int_equal(only_queue(rs)->timeout_ms, 600000);
    mr_ruleset_free(rs);
    rs = load_ok("[rewrite a]\npattern = SELECT 1\nreplacement = SELECT 2\n");
    assert_false(mr_ruleset_has_queue(rs));
    mr_ruleset_free(rs);
}

static void errors(void **state)
{
    (void)state;
    expect_error("[queue q]\nowner_column = o\n",
                 "t.rules:1: [queue q] has no table; queue rules need the table used as a queue\n");
    expect_error("[queue q]\ntable = jobs\nowner_column = o\nstatus_column = s\n"
                 "claimed_value = c\nunclaimed_value = u\n",
                 "t.rules:2: [queue q] needs the table's schema, which the proxy's own connection "
                 "has no default for: write table = shop.jobs, or schema = shop\n");
    expect_error("[queue q]\ntable = a.b.c\n",
                 "t.rules:2: table = 'a.b.c' in [queue q]: expected a table name, or "
                 "schema.table, unquoted\n");
    expect_error("[queue q]\ntable = s.t\nowner_column = o\nstatus_column = s\n"
                 "claimed_value = c\nunclaimed_value = u\ntimeout = 10m\n",
                 "t.rules:7: timeout in [queue q] needs claimed_at_column: a claim's age is read "
                 "from it\n");
    expect_error("[queue q]\ntable = s.t\nowner_column = o\nstatus_column = s\n"
                 "claimed_value = c\nunclaimed_value = u\nclaimed_at_column = at\ntimeout = soon\n",
                 "t.rules:8: timeout = 'soon' in [queue q]: expected a duration above zero, like "
                 "90s, 10m or 1h\n");
    expect_error("[queue q]\ntable = s.t\nrelease = UPDATE t SET o = 0\n",
                 "t.rules:3: release = 'UPDATE t SET o = 0' in [queue q]: expected one SQL "
                 "statement using {owner} for the backend connection id, like UPDATE jobs SET "
                 "worker = NULL WHERE worker = {owner}\n");
    expect_error("[queue q]\ntable = s.t\nrelease = UPDATE t SET o = 0 WHERE o = {owner}\n"
                 "owner_column = o\n",
                 "t.rules:4: owner_column in [queue q] does not apply with release, which "
                 "replaces the column keys (a reaper then needs reap)\n");
    expect_error("[queue q]\ntable = s.t\nrelease = UPDATE t SET o = 0 WHERE o = {owner}\n"
                 "timeout = 5m\n",
                 "t.rules:4: timeout in [queue q] needs reap: with release, only the reap "
                 "template can tell a claim's age\n");
    expect_error("[queue q]\ntable = s.t\nrelease = UPDATE t SET o = 0 WHERE o = {owner}\n"
                 "reap = UPDATE t SET o = 0 WHERE o NOT IN ({live})\n",
                 "t.rules:4: reap = 'UPDATE t SET o = 0 WHERE o NOT IN ({live})' in [queue q]: "
                 "expected one SQL statement using {live} for the list of live connection ids "
                 "and {cutoff} for the claim time limit, like UPDATE jobs SET worker = NULL "
                 "WHERE worker NOT IN ({live}) AND locked_at < {cutoff}\n");
    expect_error("[queue q]\ntable = s.t\nrelease = UPDATE t SET o = 0 WHERE o = {owner}\n"
                 "reap = UPDATE t SET o = 0 WHERE o NOT IN ({live}) AND at < {cutoff}; DO 1\n",
                 "t.rules:4: reap = 'UPDATE t SET o = 0 WHERE o NOT IN ({live}) AND at < "
                 "{cutoff}; DO 1' in [queue q]: expected exactly one SQL statement that lexes "
                 "(with {live} standing for a list of numbers and {cutoff} for a time)\n");
    expect_error("[queue q]\ntable = s.t\nrelease = UPDATE t SET o = 0 WHERE o = {owner}\n"
                 "reap = UPDATE t SET o = 0 WHERE o NOT IN ({live}) AND at < {cutoff}\n"
                 "timeout = never\n",
                 "t.rules:5: timeout = 'never' in [queue q]: expected a duration above zero, "
                 "like 90s, 10m or 1h\n");
    expect_error("[queue q]\ntable = s.t\nowner_column = o\nstatus_column = s\n"
                 "claimed_value = c\nunclaimed_value = u\n"
                 "reap = UPDATE t SET o = 0 WHERE o NOT IN ({live}) AND at < {cutoff}\n",
                 "t.rules:7: reap in [queue q] applies only with release; the column form has "
                 "its own reaper (claimed_at_column)\n");
    expect_error("[queue q]\ntable = s.t\nskip_locked = maybe\n",
                 "t.rules:3: skip_locked = 'maybe' in [queue q]: expected yes or no\n");
    expect_error("[queue q]\ntable = s.t\nowner = o\nrelease = DELETE FROM t WHERE o = {owner}\n",
                 "t.rules:3: unknown key 'owner' in [queue q]; queue rules take: table, "
                 "owner_column, status_column, claimed_value, unclaimed_value, unclaimed_owner, "
                 "claimed_at_column, timeout, release, reap, skip_locked, claim_read_committed, "
                 "enabled, continue, log_only, "
                 "log, log_sample, user, schema\n");
    loaded l = load("[queue q]\ntable = s.t\nstatus_column = s\n");
    assert_null(l.rs);
    assert_int_equal(l.errors, 3); /* owner_column, claimed_value, unclaimed_value */
    assert_non_null(strstr(l.diag, "[queue q] has no owner_column; queue rules need"));
    loaded_free(&l);
}

/* ---- SQL ------------------------------------------------------------------------ */

static mr_queue_def def(void)
{
    return (mr_queue_def){.schema = "shop",
                          .table = "unsent_emails",
                          .owner_column = "owner",
                          .status_column = "status",
                          .claimed_value = "claimed",
                          .unclaimed_value = "unsent",
                          .unclaimed_owner = "0",
                          .claimed_at_column = "claimed_at",
                          .timeout_ms = 3000};
}

static void expect_sql(char *got, const char *want)
{
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void release_sql(void **state)
{
    (void)state;
    mr_queue_def q = def();
    expect_sql(mr_queue_release_sql(&q, 42),
               "UPDATE `shop`.`unsent_emails` SET `status` = 'unsent', `owner` = 0 "
               "WHERE `owner` = 42 AND `status` = 'claimed'");
    q.table = "we`ird";
    q.claimed_value = "it's \\ done";
    q.unclaimed_owner = "NULL";
    expect_sql(mr_queue_release_sql(&q, 4294967295u),
               "UPDATE `shop`.`we``ird` SET `status` = 'unsent', `owner` = NULL "
               "WHERE `owner` = 4294967295 AND `status` = 'it\\'s \\\\ done'");
    q.unclaimed_owner = "nobody";
    expect_sql(mr_queue_release_sql(&q, 1),
               "UPDATE `shop`.`we``ird` SET `status` = 'unsent', `owner` = 'nobody' "
               "WHERE `owner` = 1 AND `status` = 'it\\'s \\\\ done'");
    q.release = "UPDATE j SET w = NULL WHERE w = {owner} OR prev = {owner}";
    expect_sql(mr_queue_release_sql(&q, 7), "UPDATE j SET w = NULL WHERE w = 7 OR prev = 7");
}

static void reaper_sql(void **state)
{
    (void)state;
    mr_queue_def q = def();
    expect_sql(mr_queue_reap_find_sql(&q),
               "SELECT DISTINCT `owner` FROM `shop`.`unsent_emails` WHERE `status` = 'claimed' "
               "AND `claimed_at` < NOW(6) - INTERVAL 3000000 MICROSECOND");
    expect_sql(mr_queue_reap_sql(&q, 9),
               "UPDATE `shop`.`unsent_emails` SET `status` = 'unsent', `owner` = 0 "
               "WHERE `owner` = 9 AND `status` = 'claimed' "
               "AND `claimed_at` < NOW(6) - INTERVAL 3000000 MICROSECOND");
    expect_sql(mr_queue_lock_sql(&q, 1),
               "SELECT GET_LOCK('myrewrite_reaper_shop.unsent_emails', 0)");
    expect_sql(mr_queue_lock_sql(&q, 0),
               "SELECT RELEASE_LOCK('myrewrite_reaper_shop.unsent_emails')");
    q.table = "a_table_name_long_enough_to_push_the_lock_name_over_64";
    char *lock = mr_queue_lock_sql(&q, 1);
    assert_non_null(lock);
    assert_int_equal(strlen(lock), strlen("SELECT GET_LOCK('myrewrite_reaper_', 0)") + 16);
    free(lock);
    expect_sql(mr_queue_cutoff_sql(&q), "SELECT NOW(6) - INTERVAL 3000000 MICROSECOND");
    q.claimed_at_column = NULL;
    assert_null(mr_queue_reap_find_sql(&q));
    assert_null(mr_queue_reap_sql(&q, 9));
}

static void reap_template_sql(void **state)
{
    (void)state;
    static const uint64_t live[] = {5, 12, 4294967295u};
    const char *tpl = "UPDATE j SET w = NULL, at = NULL WHERE w NOT IN ({live}) AND at < {cutoff}"
                      " AND note <> '{owner}' AND x = '{live'";
    expect_sql(mr_queue_fill_reap(tpl, live, 3, "2026-11-30 11:00:00.250000"),
               "UPDATE j SET w = NULL, at = NULL WHERE w NOT IN (5,12,4294967295) AND at < "
               "TIMESTAMP'2026-11-30 11:00:00.250000' AND note <> '{owner}' AND x = '{live'");
    expect_sql(mr_queue_fill_reap("{live}{cutoff}{live}", live, 1, "x'y"), "5TIMESTAMP'x\\'y'5");
    assert_null(mr_queue_fill_reap(tpl, live, 0, "2026-11-30 11:00:00"));
    expect_sql(mr_queue_fill_release("w = {owner} AND v = '{cutoff}' AND {owner", 3),
               "w = 3 AND v = '{cutoff}' AND {owner");
}

static void quoting(void **state)
{
    (void)state;
    mr_buf b;
    mr_buf_init(&b);
    mr_sql_put_ident(&b, "a`b");
    mr_buf_put(&b, " ", 1);
    mr_sql_put_literal(&b, "x'y\\z");
    mr_buf_put(&b, " ", 1);
    mr_sql_put_value(&b, "-12");
    mr_buf_put(&b, " ", 1);
    mr_sql_put_value(&b, "12a");
    mr_buf_put(&b, "", 1);
    assert_string_equal((const char *)b.data, "`a``b` 'x\\'y\\\\z' -12 '12a'");
    mr_buf_free(&b);
}

/* ---- server version ---------------------------------------------------------------- */

static bool has(const char *v) { return mr_server_has_skip_locked(v, strlen(v)); }

static void version_decision(void **state)
{
    (void)state;
    assert_true(has("5.5.5-10.11.6-MariaDB-0+deb12u1"));
    assert_true(has("5.5.5-10.6.0-MariaDB"));
    assert_false(has("5.5.5-10.5.23-MariaDB"));
    assert_true(has("11.4.2-MariaDB"));
    assert_false(has("10.4.1-MariaDB-log"));
    assert_true(has("8.0.1"));
    assert_false(has("8.0.0-dmr"));
    assert_true(has("8.0.36-0ubuntu0.22.04.1"));
    assert_true(has("8.4.0"));
    assert_false(has("5.7.44-log"));
    assert_false(has("5.5.5"));
    assert_false(has(""));
    assert_false(has("garbage"));
    assert_false(mr_server_has_skip_locked(NULL, 0));
    assert_false(mr_server_has_skip_locked("8.0.36", 3)); /* "8.0": no patch, not 8.0.1 */
}

/* ---- SKIP LOCKED rewrite ------------------------------------------------------------- */

static void skip_locked_rewrite(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok(FULL);
    mr_stmt_ctx yes = {.skip_locked = true, .schema = "shop"};
    mr_stmt_ctx no = {.skip_locked = false, .schema = "shop"};
    mr_stmt_ctx other = {.skip_locked = true, .schema = "other"};
    const char *sel = "SELECT id FROM unsent_emails WHERE status = 'unsent' LIMIT 10 FOR UPDATE";
    expect_sent(
        rs, &yes, sel, MR_ACT_REWRITE,
        "SELECT id FROM unsent_emails WHERE status = 'unsent' LIMIT 10 FOR UPDATE SKIP LOCKED");
    expect_sent(rs, &no, sel, MR_ACT_PASS, sel);
    expect_sent(rs, &other, sel, MR_ACT_PASS, sel);
    expect_sent(rs, &other, "select * from shop.`unsent_emails` for update; select 1",
                MR_ACT_REWRITE,
                "select * from shop.`unsent_emails` for update SKIP LOCKED; select 1");
    expect_sent(rs, &yes, "SELECT * FROM unsent_emails FOR UPDATE NOWAIT", MR_ACT_PASS,
                "SELECT * FROM unsent_emails FOR UPDATE NOWAIT");
    expect_sent(rs, &yes, "SELECT * FROM unsent_emails FOR UPDATE SKIP LOCKED", MR_ACT_PASS,
                "SELECT * FROM unsent_emails FOR UPDATE SKIP LOCKED");
    expect_sent(rs, &yes, "SELECT * FROM unsent_emails LOCK IN SHARE MODE", MR_ACT_PASS,
                "SELECT * FROM unsent_emails LOCK IN SHARE MODE");
    expect_sent(rs, &yes, "SELECT * FROM sent_emails FOR UPDATE", MR_ACT_PASS,
                "SELECT * FROM sent_emails FOR UPDATE");
    expect_sent(rs, &yes, "SELECT * FROM unsent_emails", MR_ACT_PASS,
                "SELECT * FROM unsent_emails");
    expect_sent(rs, &yes, "UPDATE unsent_emails SET owner = 1 WHERE owner = 0", MR_ACT_PASS,
                "UPDATE unsent_emails SET owner = 1 WHERE owner = 0");
    expect_explain_line(rs, &no, sel,
                        "  rule mails (t.rules:1): not matched: the server does "
                        "not take SKIP LOCKED (or its version is unknown)");
    mr_ruleset_free(rs);
}

static void no_rewrite_without_skip_locked(void **state)
{
    (void)state;
    mr_ruleset *rs = load_ok("[queue q]\ntable = shop.jobs\n"
                             "release = UPDATE shop.jobs SET w = 0 WHERE w = {owner}\n");
    mr_stmt_ctx yes = {.skip_locked = true, .schema = "shop"};
    expect_sent(rs, &yes, "SELECT * FROM jobs FOR UPDATE", MR_ACT_PASS,
                "SELECT * FROM jobs FOR UPDATE");
    mr_ruleset_free(rs);
}

/* Applies rs and returns res.read_committed; the text must pass unchanged. */
static bool read_committed(const mr_ruleset *rs, const mr_stmt_ctx *ctx, const char *sql)
{
    mr_rules_scratch *s = mr_rules_scratch_new();
    mr_match_result res = result_new();
    apply_ctx(rs, sql, ctx, s, &res);
    assert_int_equal(res.action, MR_ACT_PASS);
    bool rc = res.read_committed;
    result_free(&res);
    mr_rules_scratch_free(s);
    return rc;
}

static void claim_read_committed(void **state)
{
    (void)state;
    static const char *const rules =
        "[queue mails]\ntable = shop.unsent_emails\nowner_column = owner\n"
        "status_column = status\nclaimed_value = claimed\nunclaimed_value = unsent\n"
        "skip_locked = yes\nclaim_read_committed = yes\n";
    mr_ruleset *rs = load_ok(rules);
    assert_true(only_queue(rs)->claim_read_committed);
    mr_stmt_ctx shop = {.skip_locked = true, .schema = "shop"};
    mr_stmt_ctx other = {.skip_locked = true, .schema = "other"};
    mr_stmt_ctx prep = {.skip_locked = true, .schema = "shop", .prepared = true};
    const char *claim = "UPDATE unsent_emails SET status = 'claimed', owner = CONNECTION_ID() "
                        "WHERE owner = 0 AND status = 'unsent' LIMIT 10";
    assert_true(read_committed(rs, &shop, claim));
    assert_true(read_committed(rs, &other,
                               "/* c */ update shop.`unsent_emails` set status = "
                               "'sent' where id in (1, 2) and owner = connection_id();"));
    assert_false(read_committed(rs, &other, claim)); /* another schema's table */
    /* a prepared claim: the session sends the prelude before each execute */
    assert_true(read_committed(rs, &prep, claim));
    assert_false(read_committed(rs, &shop, "SELECT * FROM unsent_emails WHERE owner = 1"));
    assert_false(read_committed(rs, &shop, "DELETE FROM unsent_emails WHERE owner = 1"));
    assert_false(read_committed(rs, &shop, "UPDATE sent_emails SET owner = 1"));
    assert_false(read_committed(rs, &shop, "UPDATE unsent_emails, other SET owner = 1"));
    assert_false(read_committed(rs, &shop,
                                "UPDATE unsent_emails SET owner = 1 WHERE id IN "
                                "(SELECT id FROM other)"));
    assert_false(read_committed(rs, &shop, "UPDATE unsent_emails SET owner = 1 /*!99999 , x */"));
    /* SET TRANSACTION would cover the first statement of a multi-statement text */
    assert_false(read_committed(rs, &shop, "SELECT 1; UPDATE unsent_emails SET owner = 1"));
    assert_false(read_committed(rs, &shop, "UPDATE unsent_emails SET owner = 1; SELECT 1"));
    /* SKIP LOCKED still applies to the same rule's SELECTs */
    expect_sent(rs, &shop, "SELECT id FROM unsent_emails FOR UPDATE", MR_ACT_REWRITE,
                "SELECT id FROM unsent_emails FOR UPDATE SKIP LOCKED");
    expect_explain_line(rs, &shop, claim,
                        "  rule mails (t.rules:1): matched, the rules go on: "
                        "an UPDATE of the queue table: text kept; sent alone in autocommit mode "
                        "outside a transaction, it runs READ COMMITTED (claim_read_committed)");
    mr_ruleset_free(rs);
    rs = load_ok(FULL); /* claim_read_committed off */
    assert_false(read_committed(rs, &shop, claim));
    mr_ruleset_free(rs);
    rs = load_ok("[queue q]\ntable = shop.jobs\nrelease = UPDATE shop.jobs SET w = 0 WHERE w = "
                 "{owner}\nclaim_read_committed = yes\nlog_only = yes\n");
    assert_false(read_committed(rs, &shop, "UPDATE jobs SET w = 1 LIMIT 1")); /* log_only */
    mr_ruleset_free(rs);
    expect_error("[queue q]\ntable = s.t\nrelease = UPDATE t SET o = 0 WHERE o = {owner}\n"
                 "claim_read_committed = always\n",
                 "t.rules:4: claim_read_committed = 'always' in [queue q]: expected yes or no\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loads_full_form),
        cmocka_unit_test(defaults_and_schema_key),
        cmocka_unit_test(errors),
        cmocka_unit_test(release_sql),
        cmocka_unit_test(reaper_sql),
        cmocka_unit_test(reap_template_sql),
        cmocka_unit_test(quoting),
        cmocka_unit_test(version_decision),
        cmocka_unit_test(skip_locked_rewrite),
        cmocka_unit_test(no_rewrite_without_skip_locked),
        cmocka_unit_test(claim_read_committed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
