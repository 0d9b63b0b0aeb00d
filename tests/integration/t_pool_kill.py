#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""KILL [QUERY | CONNECTION] <the handshake's id> from a second session, as drivers cancel.

With pool = transaction a session keeps the id its handshake gave (the thread
id of its login's server connection) while its statements run on whatever
server connection it borrowed, and that login connection may serve another
session meanwhile. The proxy runs with pool_size 2 and two workers: one
server connection per worker, made by the latest login on that worker, so
the sessions below land where the checks need them (asserted on the way, by
SHOW CLIENTS and information_schema.PROCESSLIST):

- C runs SELECT SLEEP(1) on A's login connection (A idle): B's
  KILL QUERY <A's id> is answered OK and C's statement is not touched (a
  relayed KILL would interrupt C);
- A sleeps on that connection and C's statement waits for it: B's
  KILL QUERY <C's id> answers C's statement ERR 1317 at once (direct, it
  was running and is interrupted), and A's is not touched;
- after another login on A's worker closed that connection, A runs
  SELECT SLEEP(10) on another one: B's KILL QUERY <A's id> interrupts it
  (ERR 1317 within 2 s; relayed, the server would answer 1094) and A goes
  on with the same CONNECTION_ID();
- B's KILL CONNECTION <A's id> while A sleeps closes A's connection (2013);
- B's KILL CONNECTION <C's id> while C is idle ends C: its next statement
  gets 2013 or 2006;
- a number that is no session's is the server's to answer: ERR 1094;
- COM_PROCESS_KILL (pymysql's kill(): KILL CONNECTION) of an idle
  session ends it, of a running one closes its connection;
- another account without privileges gets ERR 1095 for B's id, with B's
  number in the message when B runs nothing (the proxy's answer), and B's
  statement is not touched when it runs (a proxy of its own, pool_size 4:
  a connection of each account per worker);
- a storm (before the checks above that close A's login connection): A
  and C take turns on that one connection, A running SELECT 1 and C
  SELECT SLEEP(0.01) in loops, while B sends KILL QUERY <A's id> back to
  back for 1 s: none of C's statements is interrupted. A KILL read while
  A runs reaches the server after A's statement ended, often, and would
  find C's statement there; the target keeps its connection until the
  KILL is answered (with that hold taken out, C's statements got ERR 1317:
  39 and 14 of ~140 in two runs of 1.5 s, 8 of ~100 in a run of 1 s).

The same checks run direct (the model) and through pool = session (ids are
the server's, relayed).

Environment: MR_DIRECT_PORT, MR_BIN, MR_TMP (the proxies take free ports).
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402

NO_SESSION = 4000000000  # no server thread has this id yet


def open_on(px, worker, spare):
    """A session on that worker (connections opened on the way are kept in spare)."""
    for _ in range(4):
        c = px.connect()
        if px.worker_of(c) == worker:
            return c
        spare.append(c)
    raise RuntimeError("no session landed on worker %d" % worker)


def running_on(watcher, text):
    """The server thread id running a statement that starts with text (None: none)."""
    def find():
        r = t.rows(watcher, "SELECT ID FROM information_schema.PROCESSLIST WHERE INFO LIKE %s",
                   (text + "%",))
        return r[0][0] if r else None
    return t.wait_until(find, timeout=5)


class Run(threading.Thread):
    """sql on conn in a thread of its own: result (rows or the error's args), seconds."""

    def __init__(self, conn, sql):
        super().__init__()
        self.conn, self.sql = conn, sql
        self.result = self.seconds = None
        self.start()

    def run(self):
        t0 = time.time()
        try:
            self.result = t.rows(self.conn, self.sql)
        except Exception as e:  # pymysql's errors, and a closed connection
            self.result = e.args
        self.seconds = time.time() - t0


def err_code(result):
    return result[0] if result and isinstance(result[0], int) else None


def check_idle_target(name, a, b, c, px):
    """C runs on A's login connection (pool): KILL QUERY <A's id> must not touch it."""
    run = Run(c, "SELECT SLEEP(1)")
    tid = running_on(b, "SELECT SLEEP(1)")
    if px:
        t.eq("%s: C's statement runs on A's login connection" % name, a.thread_id(), tid)
    t.eq("%s: KILL QUERY <A's id> while A is idle: OK" % name, None,
         t.try_sql(b, "KILL QUERY %d" % a.thread_id()))
    run.join()
    t.eq("%s: C's SLEEP(1) ran whole, not interrupted" % name, ((0,),), run.result)
    t.check(run.seconds >= 0.9, "%s: C slept its 1 s" % name, run.seconds)
    t.eq("%s: A still answers" % name, ((1,),), t.rows(a, "SELECT 1"))


def check_busy_target(name, a, b):
    """A sleeps: KILL QUERY <A's id> interrupts it wherever it runs."""
    run = Run(a, "SELECT SLEEP(10)")
    tid = running_on(b, "SELECT SLEEP(10)")
    t.check(tid is not None, "%s: A's SLEEP(10) is running" % name)
    t0 = time.time()
    t.eq("%s: KILL QUERY <A's id> while A runs: OK" % name, None,
         t.try_sql(b, "KILL QUERY %d" % a.thread_id()))
    run.join(12)
    t.eq("%s: A's statement got ERR 1317" % name, 1317, err_code(run.result))
    t.check(time.time() - t0 < 2, "%s: within 2 s of the KILL" % name, time.time() - t0)
    t.eq("%s: A goes on with its own CONNECTION_ID()" % name, ((a.thread_id(),),),
         t.rows(a, "SELECT CONNECTION_ID()"))
    return tid


class Loop(threading.Thread):
    """sql on conn until stop is set: how many answers were `whole`, how many were
    interrupted (ERR 1317), and anything else."""

    def __init__(self, conn, sql, whole, stop):
        super().__init__()
        self.conn, self.sql, self.want, self.stop = conn, sql, whole, stop
        self.whole = self.killed = 0
        self.other = []
        self.start()

    def run(self):
        while not self.stop.is_set():
            try:
                got = t.rows(self.conn, self.sql)
                if got == self.want:
                    self.whole += 1
                else:
                    self.other.append(got)
            except Exception as e:
                if e.args and e.args[0] == 1317:
                    self.killed += 1
                else:
                    self.other.append(e.args)
                    return


def check_waiting_target(name, a, b, c):
    """A sleeps on the one connection of A's and C's worker (pool); C's statement waits for it
    (direct: runs): B's KILL QUERY <C's id> answers C's statement ERR 1317 at once, and A's
    sleep runs whole. B holds the other connection in a transaction: the pool is shared by the
    workers, and C would borrow B's worker's idle connection instead of waiting."""
    t.rows(b, "BEGIN")
    t.rows(b, "SELECT 1 FROM DUAL")
    ra = Run(a, "SELECT SLEEP(1)")
    t.check(running_on(b, "SELECT SLEEP(1)") is not None, "%s: A sleeps" % name)
    rc = Run(c, "SELECT 'c', SLEEP(1)")
    time.sleep(0.3)  # C's command is in: waiting for a connection (pool), or running
    t0 = time.time()
    t.eq("%s: KILL QUERY <C's id> while C's statement waits or runs: OK" % name, None,
         t.try_sql(b, "KILL QUERY %d" % c.thread_id()))
    rc.join(5)
    t.eq("%s: C's statement got ERR 1317" % name, 1317, err_code(rc.result))
    t.check(time.time() - t0 < 1, "%s: within 1 s of the KILL" % name, time.time() - t0)
    ra.join(5)
    t.eq("%s: A's SLEEP(1) ran whole" % name, ((0,),), ra.result)
    t.rows(b, "COMMIT")
    t.eq("%s: C answers after it" % name, ((1,),), t.rows(c, "SELECT 1"))


def check_kill_storm(name, a, b, c):
    """A and C take turns on one server connection (pool): A runs short statements, C
    SELECT SLEEP(0.01), while B sends KILL QUERY <A's id> back to back for 1 s. A KILL
    read while A runs that reaches the server after A's statement ended would find C's
    there; none of C's statements may be interrupted."""
    stop = threading.Event()
    la = Loop(a, "SELECT 1", ((1,),), stop)
    lc = Loop(c, "SELECT SLEEP(0.01)", ((0,),), stop)
    end = time.time() + 1
    kills = 0
    while time.time() < end:
        got = t.try_sql(b, "KILL QUERY %d" % a.thread_id())
        if got is not None:
            t.not_ok("%s: storm: KILL QUERY <A's id> answered" % name, got)
            break
        kills += 1
    stop.set()
    la.join(5)
    lc.join(5)
    t.log("%s: storm: %d KILLs; A: %d whole, %d interrupted; C: %d whole, %d interrupted"
          % (name, kills, la.whole, la.killed, lc.whole, lc.killed))
    t.check(la.whole > 0 and not la.other, "%s: storm: A went on" % name,
            (la.whole, la.other))
    t.check(lc.whole > 0 and lc.killed == 0 and not lc.other,
            "%s: storm: none of C's statements was touched" % name,
            (lc.whole, lc.killed, lc.other))


def check_kill_connection_busy(name, a, b):
    run = Run(a, "SELECT SLEEP(10)")
    t.check(running_on(b, "SELECT SLEEP(10)") is not None, "%s: A sleeps again" % name)
    t0 = time.time()
    t.eq("%s: KILL CONNECTION <A's id> while A runs: OK" % name, None,
         t.try_sql(b, "KILL CONNECTION %d" % a.thread_id()))
    run.join(12)
    t.eq("%s: A's connection closed mid-statement (2013)" % name, 2013, err_code(run.result))
    t.check(time.time() - t0 < 2, "%s: within 2 s of the KILL" % name, time.time() - t0)


def check_kill_connection_idle(name, c, b):
    t.eq("%s: KILL CONNECTION <C's id> while C is idle: OK" % name, None,
         t.try_sql(b, "KILL CONNECTION %d" % c.thread_id()))
    time.sleep(0.2)
    got = t.try_sql(c, "SELECT 1")
    t.check(got and got[0] in (2013, 2006), "%s: C's next statement: connection gone" % name,
            got)


def try_kill(conn, thread_id):
    """COM_PROCESS_KILL (pymysql's kill()): None when OK, else the error's args."""
    try:
        conn.kill(thread_id)
        return None
    except Exception as e:
        return e.args


def check_process_kill_idle(name, e, b):
    t.eq("%s: COM_PROCESS_KILL <E's id> while E is idle: OK" % name, None,
         try_kill(b, e.thread_id()))
    time.sleep(0.2)
    got = t.try_sql(e, "SELECT 1")
    t.check(got and got[0] in (2013, 2006), "%s: E's next statement: connection gone" % name,
            got)


def check_unknown(name, b):
    got = t.try_sql(b, "KILL QUERY %d" % NO_SESSION)
    t.eq("%s: KILL QUERY of no session: the server's ERR 1094" % name,
         (1094, "Unknown thread id: %d" % NO_SESSION), got)


def check_not_owner(name, port):
    """Another account (no privilege) may not kill B's statement: the server's ERR 1095,
    from the proxy when B runs nothing."""
    b = t.connect(port)
    d = t.connect(port, user="pk_other", password="pk_pw", database=None)
    try:
        t.eq("%s: another user's KILL QUERY <B's id>, B idle: ERR 1095" % name,
             (1095, "You are not owner of thread %d" % b.thread_id()),
             t.try_sql(d, "KILL QUERY %d" % b.thread_id()))
        run = Run(b, "SELECT SLEEP(1)")
        got = t.try_sql(d, "KILL QUERY %d" % b.thread_id())
        run.join()
        t.eq("%s: another user's KILL QUERY <B's id>, B busy: ERR 1095" % name, 1095,
             err_code(got))
        t.eq("%s: B's statement ran whole" % name, ((0,),), run.result)
        t.eq("%s: another user's KILL CONNECTION <B's id>: ERR 1095" % name, 1095,
             err_code(t.try_sql(d, "KILL CONNECTION %d" % b.thread_id())))
        t.eq("%s: B still answers after it" % name, ((1,),), t.rows(b, "SELECT 1"))
        f = t.connect(port)
        try:
            run = Run(b, "SELECT SLEEP(10)")
            t.check(running_on(f, "SELECT SLEEP(10)") is not None, "%s: B sleeps" % name)
            t0 = time.time()
            t.eq("%s: COM_PROCESS_KILL <B's id> from its own account while B runs: OK" % name,
                 None, try_kill(f, b.thread_id()))
            run.join(12)
            t.eq("%s: B's connection closed mid-statement (2013)" % name, 2013,
                 err_code(run.result))
            t.check(time.time() - t0 < 2, "%s: within 2 s of the kill" % name, time.time() - t0)
        finally:
            f.close()
    finally:
        d.close()
        b.close()


def scenario(name, port=None, px=None):
    """px: the pool = transaction proxy whose sessions are placed by worker."""
    spare = []
    try:
        if px:
            b = open_on(px, 1, spare)
            c = open_on(px, 0, spare)
            a = open_on(px, 0, spare)  # its login closes C's: C then runs on A's
        else:
            b, c, a = (t.connect(port) for _ in range(3))
        check_idle_target(name, a, b, c, px)
        check_waiting_target(name, a, b, c)
        check_kill_storm(name, a, b, c)
        if px:
            spare.append(open_on(px, 0, spare))  # its login closes A's login connection
        tid = check_busy_target(name, a, b)
        if px:
            t.check(tid != a.thread_id(), "%s: A's SLEEP ran on another server connection"
                    % name, tid)
        else:
            t.eq("%s: A's SLEEP ran on its own connection" % name, a.thread_id(), tid)
        check_kill_connection_busy(name, a, b)
        check_kill_connection_idle(name, c, b)
        check_unknown(name, b)
        e = spare[-1] if px else t.connect(port)  # px: idle on A's worker, its connection gone
        check_process_kill_idle(name, e, b)
        t.eq("%s: B still answers" % name, ((1,),), t.rows(b, "SELECT 1"))
    finally:
        for x in spare:
            x.close()


def main():
    t.root_query("CREATE USER IF NOT EXISTS 'pk_other'@'%' IDENTIFIED BY 'pk_pw'")
    scenario("direct", port=t.DIRECT_PORT)
    check_not_owner("direct", t.DIRECT_PORT)
    if t.DIRECT_ONLY:
        t.done()
    with t.Proxy("pool_kill", options={"pool": "transaction", "pool_size": 2},
                 workers=2, admin=True) as px:
        scenario("pool = transaction", px=px)
        px.wait_log(r"ended by KILL CONNECTION from another session")
    # two accounts: a connection of each per worker (with one per worker, a login of one
    # account closes the other's)
    with t.Proxy("pool_kill_users", options={"pool": "transaction", "pool_size": 4},
                 workers=2) as px:
        check_not_owner("pool = transaction", px.port)
    with t.Proxy("pool_kill_session", options={"pool": "session"}, workers=2) as px:
        scenario("pool = session", port=px.port)
        check_not_owner("pool = session", px.port)
    t.done()


main()
