/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Authentication: handshake with several plugins, failed logins, and
 * COM_CHANGE_USER including the auth-switch exchange it triggers when the
 * target user has a different plugin.
 */
#include "client_common.h"

#include <stdio.h>
#include <string.h>

static int current_user(struct ctx *c, MYSQL *m, char *user, size_t len)
{
    /* Only the user part: the host part may legitimately differ via a proxy. */
    return q_scalar(c, m, "SELECT SUBSTRING_INDEX(CURRENT_USER(), '@', 1)", user, len);
}

/* Records the current user and insists it is the expected one. */
static int expect_user(struct ctx *c, MYSQL *m, const char *want)
{
    char user[128];
    if (current_user(c, m, user, sizeof user))
        return -1;
    sb_printf(&c->dg, "user=%s;", user);
    if (strcmp(user, want) != 0)
        return fail(c, "expected to be %s, server says %s", want, user);
    return 0;
}

static int login_as(struct ctx *c, const char *user, const char *pw)
{
    struct conn_opts o = {.user = user, .password = pw};
    MYSQL *m = db_open(c, &o);
    if (!m)
        return -1;
    int rc = expect_user(c, m, user);
    mysql_close(m);
    return rc;
}

static int chk_native(struct ctx *c) { return login_as(c, g_cfg.user, g_cfg.password); }

static int chk_ed25519(struct ctx *c) { return login_as(c, "ed", "edpw"); }

static int chk_nopw(struct ctx *c) { return login_as(c, "nopw", ""); }

/* A login that must be refused; records the error the client saw. */
static int refused_login(struct ctx *c, const char *user, const char *pw)
{
    MYSQL *m = db_init();
    struct conn_opts o = {.user = user, .password = pw};
    if (!m)
        return fail(c, "mysql_init failed");
    if (db_connect(m, c->port, &o) == 0) {
        mysql_close(m);
        return fail(c, "login as %s with a wrong password succeeded", user);
    }
    unsigned e = mysql_errno(m);
    sb_printf(&c->dg, "%s: %u %s;", user, e, mysql_sqlstate(m));
    mysql_close(m);
    if (e != 1045)
        return fail(c, "login as %s with wrong password: expected error 1045, got %u", user, e);
    return 0;
}

static int chk_wrong_password(struct ctx *c)
{
    if (refused_login(c, "app", "not-the-password") || refused_login(c, "ed", "nope") ||
        refused_login(c, "nopw", "unexpected"))
        return -1;
    /* Failed logins must not poison later ones (e.g. a shared backend). */
    for (int i = 0; i < 3; i++)
        if (login_as(c, "app", "apppw") || login_as(c, "ed", "edpw"))
            return -1;
    return 0;
}

static int change_to(struct ctx *c, MYSQL *m, const char *user, const char *pw)
{
    if (mysql_change_user(m, user, pw, g_cfg.db) != 0) {
        char what[96];
        snprintf(what, sizeof what, "change_user to %s", user);
        return fail_my(c, m, what);
    }
    return expect_user(c, m, user);
}

static int chk_change_user(struct ctx *c)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    long long gone = -1;
    int rc = q_exec(c, m, "SET @mct_keep = 42");
    rc = rc ? rc : change_to(c, m, "ed", "edpw");
    /* COM_CHANGE_USER resets the session, so the variable must be gone. */
    rc = rc ? rc : q_int(c, m, "SELECT @mct_keep IS NULL", &gone);
    if (rc == 0 && gone != 1)
        rc = fail(c, "user variable survived change_user");
    rc = rc ? rc : change_to(c, m, "app", "apppw");
    rc = rc ? rc : change_to(c, m, "nopw", "");
    rc = rc ? rc : change_to(c, m, "ed", "edpw");
    rc = rc ? rc : change_to(c, m, "app", "apppw");
    rc = rc ? rc : q_exec(c, m, "SELECT 1");
    mysql_close(m);
    return rc;
}

/*
 * What a connection does after a refused COM_CHANGE_USER is up to the
 * server; the proxy must behave the same, so only the class of the outcome
 * is recorded (client-side codes like 2006/2013 both mean "gone").
 */
static void dg_after_failure(struct ctx *c, MYSQL *m)
{
    static const char sql[] = "SELECT SUBSTRING_INDEX(CURRENT_USER(), '@', 1)";
    if (mysql_query(m, sql) == 0) {
        /* Still usable: record whose session it is now. */
        MYSQL_RES *res = mysql_store_result(m);
        MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
        sb_printf(&c->dg, "after=usable as %s;", row && row[0] ? row[0] : "?");
        if (res)
            mysql_free_result(res);
    } else if (mysql_errno(m) >= 2000) {
        sb_printf(&c->dg, "after=gone;");
    } else {
        sb_printf(&c->dg, "after=error %u;", mysql_errno(m));
    }
}

static int failed_change(struct ctx *c, const char *user, const char *pw)
{
    MYSQL *m = db_open(c, NULL);
    if (!m)
        return -1;
    int rc = 0;
    if (mysql_change_user(m, user, pw, g_cfg.db) == 0) {
        rc = fail(c, "change_user to %s with wrong password succeeded", user);
    } else {
        sb_printf(&c->dg, "%s: %u;", user, mysql_errno(m));
        if (mysql_errno(m) != 1045)
            rc = fail(c, "change_user to %s: expected error 1045, got %u %s", user, mysql_errno(m),
                      mysql_error(m));
        dg_after_failure(c, m);
    }
    mysql_close(m);
    return rc;
}

static int chk_change_user_wrong(struct ctx *c)
{
    if (failed_change(c, "app", "wrong") || failed_change(c, "ed", "wrong"))
        return -1;
    return login_as(c, "app", "apppw");
}

void run_auth_checks(void)
{
    check_compare("auth_native_password", chk_native);
    check_compare("auth_ed25519", chk_ed25519);
    check_compare("auth_no_password", chk_nopw);
    check_compare("auth_wrong_password_1045", chk_wrong_password);
    check_compare("change_user_switch_plugins", chk_change_user);
    check_compare("change_user_wrong_password", chk_change_user_wrong);
}
