#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The pool's behaviour, pool = transaction (issue 27), each part on a proxy of its own.

pool_size = 1, one worker, pool_max_wait = 1.5 s (console and HTTP endpoint on):
  * pool_max_wait: while A holds the only server connection in a transaction, B's
    statement waits (SHOW POOLS: cl_waiting 1, maxwait_ms growing) and gets ERR 1040 after
    about pool_max_wait, not a hang; once A commits, B's next statement works;
  * waiting sessions are served in arrival order: five sessions whose INSERTs arrive
    0.1 s apart while A holds the connection land in that order;
  * a login needs room under pool_size: while A holds the connection a new client's login
    waits, and completes once A commits;
  * pins: a user variable, a temporary table, GET_LOCK() each keep the session on its
    connection (another session's statement gets ERR 1040), SHOW PINS counts the reason
    (pinned_now 1), and COM_RESET_CONNECTION unpins (the other session is served,
    pinned_now back to 0, pins_total kept);
  * SHOW POOLS at the end: wait_timeouts counts exactly the ERR 1040s caused, waits_total
    at least the waits, nobody waiting or pinned, sv_max 1; /metrics has myrewrite_pool_*.
pool_size = 2: a pinned session's statements all run on one server connection (the
server's processlist, not CONNECTION_ID(), which the proxy keeps stable) while another
session works on the other, and its user variable survives.
pool_idle_timeout = 1 s, pool_min_idle = 1, a test account of its own: the server
connections the logins left are closed down to one, which stays; the sessions still work.
pool_max_lifetime = 1 s: the connection a session used is not reused once it is older.
"""
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

ER_CON_COUNT = 1040
COM_RESET_CONNECTION = 0x1F
MAX_WAIT = 1.5
POOL_USER, POOL_PASSWORD = "pb_user", "pbpw"
PIN_CASES = (  # (what the test does, the SHOW PINS reason it looks for, the statement)
    ("a user variable", r"^user_variable$", "SET @pb_x = 1"),
    ("a temporary table", r"^temporary_table$", "CREATE TEMPORARY TABLE test.pb_tmp (i INT)"),
    ("GET_LOCK()", r"^lock_function$", "SELECT GET_LOCK('pb_lock', 0)"),
)


def setup():
    t.root_query("CREATE OR REPLACE TABLE test.pb_order (id INT AUTO_INCREMENT PRIMARY KEY, "
                 "who INT)")
    t.root_query("CREATE OR REPLACE USER %s@'%%' IDENTIFIED BY %s", (POOL_USER, POOL_PASSWORD))
    t.root_query("GRANT ALL ON test.* TO %s@'%%'" % POOL_USER)


def reset_connection(conn):
    conn._execute_command(COM_RESET_CONNECTION, b"")
    conn._read_ok_packet()


def timed(conn, sql):
    """(seconds, None or the error's args) of one statement."""
    t0 = time.monotonic()
    err = t.try_sql(conn, sql)
    return time.monotonic() - t0, err


def console(p, sql):
    """The console's rows of sql as dicts, or None (reported) when it refuses it."""
    try:
        return p.admin_dicts(sql)
    except pymysql.err.MySQLError as e:
        t.not_ok("the console answers %s" % sql, e.args)
        return None


def pool_row(p, user=t.USER):
    rows = console(p, "SHOW POOLS") or []
    mine = [r for r in rows if r.get("user") == user]
    return mine[0] if len(mine) == 1 else None


def pin_row(p, reason_re):
    rows = console(p, "SHOW PINS") or []
    mine = [r for r in rows if re.search(reason_re, str(r.get("reason")), re.I)]
    return mine[0] if len(mine) == 1 else None


def still_running(p):
    t.check(p.alive(), "proxy %s is still running" % p.name,
            p.proc.returncode if p.proc else None)


def expect_1040(desc, conn):
    """conn's statement waits about pool_max_wait and gets ERR 1040."""
    secs, err = timed(conn, "SELECT 1")
    t.check(err is not None and err[0] == ER_CON_COUNT and MAX_WAIT * 0.8 <= secs < MAX_WAIT + 3,
            "%s: ERR 1040 after %.2f s (pool_max_wait %.1f s)" % (desc, secs, MAX_WAIT), err)


def expect_served(desc, conn):
    secs, err = timed(conn, "SELECT 1")
    t.check(err is None and secs < MAX_WAIT * 0.8, "%s (%.2f s)" % (desc, secs), err)


def check_max_wait(p, a, b):
    t.rows(a, "START TRANSACTION")
    t.rows(a, "SELECT 1")
    out = {}
    th = threading.Thread(target=lambda: out.update(r=timed(b, "SELECT 1")))
    th.start()
    time.sleep(0.8)
    row = pool_row(p)
    t.check(row is not None and int(row["cl_waiting"]) == 1 and int(row["cl_active"]) >= 1
            and 400 <= int(row["maxwait_ms"]) < MAX_WAIT * 1000,
            "SHOW POOLS while B waits: cl_waiting 1, cl_active >= 1, maxwait_ms about 800",
            row)
    th.join()
    secs, err = out["r"]
    t.check(err is not None and err[0] == ER_CON_COUNT and MAX_WAIT * 0.8 <= secs < MAX_WAIT + 3,
            "a statement waiting for the connection A holds gets ERR 1040 after %.2f s "
            "(pool_max_wait %.1f s), not a hang" % (secs, MAX_WAIT), err)
    t.check(err is not None and "pool_max_wait" in str(err[1]),
            "the ERR 1040 names pool_max_wait", err)
    t.rows(a, "COMMIT")
    expect_served("once A commits, B's next statement is served at once", b)


def check_order(p, a, waiters):
    t.rows(a, "START TRANSACTION")
    t.rows(a, "SELECT 1")
    errs = []

    def insert(i, c):
        e = t.try_sql(c, "INSERT INTO test.pb_order (who) VALUES (%d)" % i)
        if e:
            errs.append((i, e))

    threads = []
    for i, c in enumerate(waiters):
        th = threading.Thread(target=insert, args=(i, c))
        th.start()
        threads.append(th)
        time.sleep(0.1)
    time.sleep(0.2)
    row = pool_row(p)
    t.check(row is not None and int(row["cl_waiting"]) == len(waiters),
            "SHOW POOLS: %d sessions waiting" % len(waiters), row)
    t.rows(a, "COMMIT")
    for th in threads:
        th.join()
    t.eq("the waiting sessions are all served", [], errs)
    got = [r[0] for r in t.root_query("SELECT who FROM test.pb_order ORDER BY id")]
    t.eq("waiting sessions are served in arrival order", list(range(len(waiters))), got)


def check_login_waits(p, a):
    """A login needs room under pool_size: while A holds the only connection, a new client's
    login waits, and completes once A commits."""
    t.rows(a, "START TRANSACTION")
    t.rows(a, "SELECT 1")
    out = {}

    def login():
        t0 = time.monotonic()
        try:
            c = p.connect(autocommit=True)
            out["rows"] = t.rows(c, "SELECT 1")
            c.close()
        except pymysql.err.MySQLError as e:
            out["err"] = e.args
        out["secs"] = time.monotonic() - t0

    th = threading.Thread(target=login)
    th.start()
    time.sleep(0.6)
    t.check(th.is_alive(), "a login while the pool is full waits for room", out)
    t.rows(a, "COMMIT")
    th.join()
    t.check(out.get("rows") == ((1,),) and out["secs"] < MAX_WAIT,
            "and completes once A commits (%.2f s)" % out.get("secs", -1), out)


def check_pins(p, pinner, other):
    caused = 0
    for what, reason_re, sql in PIN_CASES:
        t.rows(pinner, sql)
        expect_1040("%s pins the session: another session's statement waits" % what, other)
        caused += 1
        row = pin_row(p, reason_re)
        t.check(row is not None and int(row["pinned_now"]) == 1 and int(row["pins_total"]) >= 1,
                "SHOW PINS has a reason /%s/ for %s with pinned_now 1" % (reason_re, what),
                console(p, "SHOW PINS"))
        reset_connection(pinner)
        expect_served("after COM_RESET_CONNECTION the other session is served", other)
        row = pin_row(p, reason_re)
        t.check(row is not None and int(row["pinned_now"]) == 0 and int(row["pins_total"]) >= 1,
                "SHOW PINS after the reset: pinned_now 0, pins_total kept", row)
    t.eq("after the reset the user variable is gone", ((None,),), t.rows(pinner, "SELECT @pb_x"))
    return caused


def small_pool():
    opts = {"pool": "transaction", "pool_size": 1, "pool_max_wait": "1500ms"}
    with t.Proxy("pool_basic_1", options=opts, workers=1, admin=True, http=True) as p:
        a, b = p.connect(autocommit=True), p.connect(autocommit=True)
        waiters = [p.connect(autocommit=True) for _ in range(5)]
        check_max_wait(p, a, b)
        check_order(p, a, waiters)
        check_login_waits(p, a)
        timeouts = 1 + check_pins(p, a, b)
        row = pool_row(p)
        t.check(row is not None and int(row["wait_timeouts"]) == timeouts and
                int(row["waits_total"]) >= timeouts + len(waiters) and
                int(row["cl_waiting"]) == 0 and int(row["cl_pinned"]) == 0 and
                int(row["sv_max"]) == 1 and row["pool_mode"] == "transaction",
                "SHOW POOLS: wait_timeouts %d, waits_total >= %d, none waiting or pinned, "
                "sv_max 1" % (timeouts, timeouts + len(waiters)), row)
        series = t.metrics(p, "myrewrite_pool_")
        t.check(series, "/metrics has myrewrite_pool_* series", sorted(series)[:20])
        for c in [a, b] + waiters:
            c.close()
        still_running(p)


def server_thread(conn, tag):
    """The server's id (its processlist) of the connection that runs conn's next
    statement."""
    th = threading.Thread(target=lambda: t.rows(conn, "SELECT SLEEP(0.4) /* %s */" % tag))
    th.start()
    ids = t.wait_until(lambda: t.root_query(
        "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE %s AND "
        "ID <> CONNECTION_ID()", ("%" + tag + "%",)), timeout=3, step=0.02)
    th.join()
    return ids[0][0] if ids else None


def check_pinned_connection():
    opts = {"pool": "transaction", "pool_size": 2, "pool_max_wait": "3s"}
    with t.Proxy("pool_basic_2", options=opts, workers=1) as p:
        pinned, other = p.connect(autocommit=True), p.connect(autocommit=True)
        t.rows(pinned, "SET @pb_x = 42")
        first = server_thread(pinned, "pb-pin-1")
        for _ in range(5):
            t.rows(other, "START TRANSACTION")
            t.rows(other, "SELECT 1")
            t.rows(other, "COMMIT")
        t.rows(other, "START TRANSACTION")
        t.rows(other, "SELECT 1")
        again = server_thread(pinned, "pb-pin-2")
        t.rows(other, "COMMIT")
        used = server_thread(other, "pb-other")
        t.check(first is not None and again == first and used not in (None, first),
                "a pinned session keeps its server connection (%s, %s) while another session "
                "works on the other one (%s)" % (first, again, used))
        t.eq("its user variable is intact", ((42,),), t.rows(pinned, "SELECT @pb_x"))
        pinned.close()
        other.close()
        still_running(p)


def pool_user_connections():
    return t.root_query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s",
                        (POOL_USER,))[0][0]


def check_idle_timeout():
    opts = {"pool": "transaction", "pool_size": 4, "pool_idle_timeout": "1s",
            "pool_min_idle": 1}
    with t.Proxy("pool_basic_3", options=opts, workers=1, admin=True) as p:
        conns = [p.connect(user=POOL_USER, password=POOL_PASSWORD, autocommit=True)
                 for _ in range(3)]
        for c in conns:
            t.rows(c, "START TRANSACTION")
            t.rows(c, "SELECT 1")
        t.eq("three transactions at once hold three server connections", 3,
             pool_user_connections())
        for c in conns:
            t.rows(c, "COMMIT")
        t0 = time.monotonic()
        left = t.wait_until(lambda: pool_user_connections() <= 1, timeout=6)
        secs = time.monotonic() - t0
        t.check(left and 0.8 <= secs, "pool_idle_timeout 1 s closes the idle server "
                "connections (after %.1f s)" % secs, pool_user_connections())
        time.sleep(1.5)
        t.eq("pool_min_idle 1 keeps one of them", 1, pool_user_connections())
        servers = console(p, "SHOW SERVERS") or []
        mine = [r for r in servers if r.get("user") == POOL_USER]
        t.check(len(mine) == 1 and mine[0].get("state") == "idle",
                "SHOW SERVERS lists that one, idle", servers)
        for c in conns:
            t.eq("a session whose connection was closed still works", ((1,),),
                 t.rows(c, "SELECT 1"))
            c.close()
        still_running(p)


def check_max_lifetime():
    opts = {"pool": "transaction", "pool_size": 2, "pool_max_lifetime": "1s"}
    with t.Proxy("pool_basic_4", options=opts, workers=1) as p:
        c = p.connect(autocommit=True)
        first = server_thread(c, "pb-life-1")
        time.sleep(1.2)
        # only a login opens a connection (the proxy holds no password), and a user's
        # last connection stays while its sessions live: a second client's login
        # brings the connection that replaces the old one
        d = p.connect(autocommit=True)
        time.sleep(1.2)  # the once-a-second sweep closes the old one, idle
        t.rows(c, "SELECT 1")
        later = server_thread(c, "pb-life-2")
        d.close()
        gone = t.root_query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s",
                            (first,))[0][0] if first else None
        t.check(first is not None and later not in (None, first) and gone == 0,
                "pool_max_lifetime 1 s: the old connection (%s) is closed once back idle, the "
                "next statement runs on another (%s)" % (first, later))
        c.close()
        still_running(p)


def main():
    t.needs_own_proxy()
    setup()
    for part in (small_pool, check_pinned_connection, check_idle_timeout, check_max_lifetime):
        try:
            part()
        except (pymysql.err.MySQLError, RuntimeError, OSError) as e:
            t.not_ok("%s ran to its end" % part.__name__, repr(e))

    t.done()


if __name__ == "__main__":
    main()
