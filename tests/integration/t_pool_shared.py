#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The pool is shared by the worker threads: an idle server connection moves to the worker
whose session waits for it (pool = transaction, workers = 2).

Each part has its own proxy, pool_max_wait 1s, and a root connection that samples the server's
processlist every 20 ms: the test account never holds more than pool_size connections.

 1. pool_size 4, six sessions (three on each worker). Two of worker 1's sessions open a
    transaction (pinned, holding worker 1's two connections); worker 1's third session runs a
    statement: it is served by a connection moved from worker 0 (where two sit idle), at once,
    and myrewrite_pool_moves_total counts the move. Before the pool was shared it waited
    pool_max_wait and got ERR 1040. The moved connection keeps its leg (Ssl_cipher,
    Compression) and carries a 300 KB value; SHOW SERVERS shows it on worker 1, SHOW POOLS
    the account's 2 active and 2 idle connections. Run plain, with backend_tls = prefer, with
    backend_compress = yes, and both.
 2. pool_size 3, two sessions of the test account on one worker and B on the other, then D of
    another account on B's worker: D's login closes B's worker's idle connection to make room
    (the account has others, on the first worker). B's next statement is served by one of its
    idle connections, moved; before, it got ERR 1158 ("no server connection left ...
    reconnect") although the other worker had idle ones.
 3. pool_size 4, eight sessions (four on each worker), two of worker 1's pinned in a
    transaction throughout; the six others run 20 statements each at once: every statement is
    answered (none waits past pool_max_wait while a connection is free on the other worker),
    and each answer is the session's own.
 4. pool_size 2, pool_max_connections 4, two sessions of another account, then two of the
    test account in a transaction, and a third: its login closes one of the other account's
    idle connections to make room and makes the test account's third connection, which is
    closed once its login ends (before, it stayed). The server holds at most 4 connections of
    both together throughout, and once the login is done at most 2 of each; the five sessions
    then run 10 statements each at once, all answered, with at most 2 connections of each
    account on the server.

Environment: MR_DIRECT_PORT, MR_BIN, MR_TMP (the proxy takes free ports).
"""
import os
import sys
import threading
import time

import pymysql

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402

OPTS = {"pool": "transaction", "pool_max_wait": "1s"}


class Sampler:
    """Counts the connections of users (the test account by default) in the server's
    processlist every 20 ms."""

    def __init__(self, users=(t.USER,)):
        self.users = users
        self.most = 0
        self.samples = 0
        self.stop = threading.Event()
        self.conn = t.root()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def sample(self):
        cur = self.conn.cursor()
        cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER IN %s",
                    (self.users,))
        self.most = max(self.most, cur.fetchone()[0])
        self.samples += 1

    def run(self):
        while not self.stop.is_set():
            self.sample()
            time.sleep(0.02)

    def end(self, pool_size, what):
        self.stop.set()
        self.thread.join()
        self.sample()  # and the state at the end
        self.conn.close()
        t.check(self.samples > 0 and self.most <= pool_size,
                "%s: the server never held more than %d connections of %s "
                "(most %d in %d samples)" % (what, pool_size, " and ".join(self.users),
                                             self.most, self.samples))


def by_worker(px, n):
    """n sessions, sorted by the worker they landed on."""
    conns = [px.connect() for _ in range(n)]
    on = {0: [], 1: []}
    for c in conns:
        t.eq("a first statement", ((1,),), t.rows(c, "SELECT 1"))
        on.setdefault(px.worker_of(c), []).append(c)
    return conns, on


def value(conn, sql):
    """The one value sql gives on conn, or the error's (code, message)."""
    try:
        cur = conn.cursor()
        cur.execute(sql)
        return cur.fetchone()[0]
    except pymysql.err.MySQLError as e:
        return e.args


def own_numbers(i, c, count, bad):
    """Session i selects count numbers of its own; a wrong answer goes to bad."""
    for j in range(count):
        n = i * 1000 + j
        got = value(c, "SELECT %d" % n)
        if got != n:
            bad.append((i, j, got))
            return


def timed(conn, sql):
    started = time.monotonic()
    got = value(conn, sql)
    return got, time.monotonic() - started


def moved_to_waiter(extra, leg):
    with t.Proxy("pool_shared_1_" + leg.replace(" ", "_"), admin=True, http=True, workers=2,
                 options=dict(OPTS, pool_size=4, **extra)) as px:
        sampler = Sampler()
        conns, on = by_worker(px, 6)
        t.eq("three sessions on each worker", [3, 3], [len(on[0]), len(on[1])])
        for c in on[1][:2]:
            t.rows(c, "BEGIN")
            t.rows(c, "SELECT 1 FROM DUAL")
        waiter = on[1][2]
        got, secs = timed(waiter, "SELECT 42")
        t.check(got == 42 and secs < 0.5,
                "%s: worker 1's third session is served while its worker's connections are "
                "pinned (%.2f s)" % (leg, secs), got)
        moves = t.metric(px, "myrewrite_pool_moves_total")
        t.check(moves is not None and moves >= 1, "%s: myrewrite_pool_moves_total counts it" % leg,
                moves)
        # the moved connection carries the backend leg as it was: TLS, compression, and a
        # result of several packets larger than one read
        t.eq("%s: its leg" % leg, extra_status(extra),
             value(waiter, "SELECT CONCAT((SELECT VARIABLE_VALUE FROM "
                   "information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_cipher') <> '',"
                   "(SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE "
                   "VARIABLE_NAME = 'Compression'))"))
        big = value(waiter, "SELECT REPEAT('x', 300000)")
        t.check(big == "x" * 300000, "%s: a 300 KB value through it" % leg, str(big)[:80])
        servers = px.admin_dicts("SHOW SERVERS")
        on1 = sum(1 for r in servers if int(r["worker"]) == 1)
        t.check(len({r["thread_id"] for r in servers}) == 4 and on1 >= 3,
                "%s: SHOW SERVERS: four connections, three or more on worker 1 (its pinned two and "
                "the moved one)" % leg, servers)
        pools = [r for r in px.admin_dicts("SHOW POOLS") if r["user"] == t.USER]
        t.eq("%s: SHOW POOLS: 6 sessions, 2 connections active and 2 idle" % leg, [(6, 2, 2)],
             [(int(r["cl_active"]), int(r["sv_active"]), int(r["sv_idle"])) for r in pools])
        for c in on[1][:2]:
            t.rows(c, "COMMIT")
        for c in on[0]:
            t.eq("%s: worker 0's sessions still served" % leg, 7, value(c, "SELECT 7"))
        sampler.end(4, "part 1 (%s)" % leg)
        for c in conns:
            c.close()


def extra_status(extra):
    return "%d%s" % (extra.get("backend_tls") == "prefer",
                     "ON" if extra.get("backend_compress") == "yes" else "OFF")


def moved_not_1158():
    t.root_query("CREATE USER IF NOT EXISTS 'ps_other'@'%' IDENTIFIED BY 'ps_pw'")
    with t.Proxy("pool_shared_2", admin=True, workers=2, options=dict(OPTS, pool_size=3)) as px:
        sampler = Sampler()
        conns, on = by_worker(px, 3)
        t.eq("two sessions on one worker, one on the other", [1, 2],
             sorted([len(on[0]), len(on[1])]))
        bw = 0 if len(on[0]) == 1 else 1
        b = on[bw][0]
        for _ in range(4):
            d = px.connect(user="ps_other", password="ps_pw", database=None)
            if px.worker_of(d) == bw:
                break
            d.close()
        t.eq("D is on B's worker", bw, px.worker_of(d))
        got, secs = timed(b, "SELECT 43")
        t.check(got == 43 and secs < 0.5,
                "B is served by the account's connection on the other worker, not ERR 1158 "
                "(%.2f s)" % secs, got)
        for c in on[1 - bw]:
            t.eq("the other worker's sessions are served", 44, value(c, "SELECT 44"))
        t.eq("D is served", 45, value(d, "SELECT 45"))
        sampler.end(3, "part 2")
        for c in conns + [d]:
            c.close()


def spread_with_pins():
    with t.Proxy("pool_shared_3", admin=True, http=True, workers=2,
                 options=dict(OPTS, pool_size=4)) as px:
        sampler = Sampler()
        conns, on = by_worker(px, 8)
        t.eq("four sessions on each worker", [4, 4], [len(on[0]), len(on[1])])
        pinned = on[1][:2]
        for c in pinned:
            t.rows(c, "BEGIN")
            t.rows(c, "SELECT 1 FROM DUAL")
        busy = on[0] + on[1][2:]
        bad = []

        t.run_threads([threading.Thread(target=own_numbers, args=(i, c, 20, bad))
                       for i, c in enumerate(busy)])
        t.check(not bad, "120 statements of 6 sessions on both workers all answered, each its "
                "own, with 2 of worker 1's sessions pinned", bad[:3])
        for c in pinned:
            t.eq("the pinned session still holds its transaction", ((1,),),
                 t.rows(c, "SELECT @@in_transaction"))
            t.rows(c, "COMMIT")
        sampler.end(4, "part 3")
        for c in conns:
            c.close()


def server_count(user):
    return t.root_query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s",
                        (user,))[0][0]


def per_user_and_total():
    users = (t.USER, "ps_other")
    with t.Proxy("pool_shared_4", workers=2,
                 options=dict(OPTS, pool_size=2, pool_max_connections=4)) as px:
        both = Sampler(users)
        conns = [px.connect(user="ps_other", password="ps_pw", database=None)
                 for _ in range(2)]
        apps = [px.connect() for _ in range(2)]
        for c in apps:  # pinned: the next login makes room by closing ps_other's
            t.rows(c, "BEGIN")
            t.rows(c, "SELECT 1 FROM DUAL")
        # no statement at login (pymysql's SET autocommit): it would wait for the
        # account's two connections, held by the transactions until the COMMITs below
        apps.append(px.connect(autocommit=None))
        settled = t.wait_until(lambda: max(server_count(u) for u in users) <= 2, timeout=3)
        t.check(settled, "each user's connections come down to pool_size (2) once the login "
                "that made one too many is done", [server_count(u) for u in users])
        for c in apps[:2]:
            t.rows(c, "COMMIT")
        conns += apps
        apps, others = Sampler(), Sampler(("ps_other",))
        bad = []

        t.run_threads([threading.Thread(target=own_numbers, args=(i, c, 10, bad))
                       for i, c in enumerate(conns)])
        t.check(not bad, "50 statements of 2 and 3 sessions of 2 users all answered", bad[:3])
        apps.end(2, "part 4, statements")
        others.end(2, "part 4, statements")
        both.end(4, "part 4 (pool_max_connections)")
        for c in conns:
            c.close()


def main():
    t.needs_own_proxy()
    moved_to_waiter({}, "plain")
    moved_to_waiter({"backend_tls": "prefer"}, "TLS")
    moved_to_waiter({"backend_compress": "yes"}, "compressed")
    moved_to_waiter({"backend_tls": "prefer", "backend_compress": "yes"}, "TLS and compressed")
    moved_not_1158()
    spread_with_pins()
    per_user_and_total()
    t.done()


main()
