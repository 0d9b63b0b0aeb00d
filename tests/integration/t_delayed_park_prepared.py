#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A prepared UPDATE DELAYED of a mode = memory rule without key, executed while DDL on its
table runs through the proxy (so the schema cache reads the table's key again): the execute
is parked in its session as a text statement is, never refused with "retry"; a proxy of its
own (proxy_user set, delayed_park_timeout = 2s), the real mariadbd, hand-built
COM_STMT_PREPARE / EXECUTE.

  * the DDL (an ALTER TABLE ... COMMENT sent through the proxy) waits for a metadata lock a
    direct connection holds; an execute sent meanwhile gets no answer while the lock is held,
    then OK with its row count once the ALTER is done and the key is loaded again; a COM_PING
    pipelined behind it (one write) is answered after it, in order;
  * held past delayed_park_timeout, the execute gets ERR 1235 "the table's schema could not be
    read in 2.000 s (delayed_park_timeout): ..." naming the table, and is not applied;
  * after FLUSH DELAYED the counter is the exact sum of the acknowledged executes.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
import rawproto_lib as rp  # noqa: E402

RULES = """
[delayed pp_mem]
table = test.pp_mem
columns = n
mode = memory
flush_interval = 1h
"""
PROXY = t.Proxy("delayed_park_prepared", rules=RULES, own_conn=True,
                options=[("delayed_park_timeout", "2s")])
PORT = PROXY.port
STMT = "UPDATE DELAYED pp_mem SET n = n + ? WHERE id = ?"


def setup(d):
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS pp_mem")
    cur.execute("CREATE TABLE pp_mem (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0) "
                "ENGINE=InnoDB")
    cur.execute("INSERT INTO pp_mem (id) VALUES (1), (2)")


def execute(c, stmt_id, delta, label="execute"):
    c.send_command(rp.execute_packet(stmt_id, [(rp.TYPE_LONGLONG, delta), (rp.TYPE_LONG, 1)]))
    return c.read_result(c._logged(label))


def first_ok(c, stmt_id, delta):
    """An execute outside any DDL: OK (it may wait for the first load of the key)."""
    r = execute(c, stmt_id, delta)
    return r.kind == "ok" and r.ok[0] == 1


class DdlBehindLock:
    """A direct connection holds a metadata lock on pp_mem (an open transaction that read
    it); an ALTER through the proxy waits for it, so the proxy holds the table's schema
    cache entry (DDL in flight) until release()."""

    def __init__(self, d, comment):
        self.lock = t.direct(autocommit=False)
        self.lock.cursor().execute("SELECT n FROM pp_mem WHERE id = 2")
        self.result = None
        self.thread = threading.Thread(target=self._alter, args=(comment,))
        self.thread.start()
        self.waiting = self._wait_blocked(d)

    def _alter(self, comment):
        try:
            c = t.connect(PORT, autocommit=True)
            cur = c.cursor()
            cur.execute("SET SESSION lock_wait_timeout = 60")
            cur.execute("ALTER TABLE pp_mem COMMENT '%s'" % comment)
            c.close()
            self.result = "ok"
        except pymysql.err.MySQLError as e:
            self.result = e.args

    def _wait_blocked(self, d):
        cur = d.cursor()
        end = time.time() + 10
        while time.time() < end:
            cur.execute("SELECT COUNT(*) FROM information_schema.processlist WHERE "
                        "info LIKE 'ALTER TABLE pp_mem%' AND state LIKE '%metadata lock%'")
            if cur.fetchone()[0]:
                return True
            time.sleep(0.05)
        return False

    def release(self):
        self.lock.rollback()
        self.lock.close()
        self.thread.join(30)
        return self.result


def parked_then_answered(d, c, stmt_id):
    ddl = DdlBehindLock(d, "one")
    t.check(ddl.waiting, "the ALTER through the proxy waits for the metadata lock")
    t0 = time.time()
    c.sock.sendall(rp.frame(rp.execute_packet(stmt_id, [(rp.TYPE_LONGLONG, 5),
                                                         (rp.TYPE_LONG, 1)]), 0)[0] +
                   rp.frame(bytes([rp.COM_PING]), 0)[0])
    c.sock.settimeout(1.0)
    try:
        early = c.read_result(c._logged("early"))
    except rp.ProtoError:
        early = None
    t.check(early is None, "while the DDL runs the execute is not answered (parked, not "
            "refused with retry)", early.err if early is not None and early.kind == "err"
            else early)
    alter = ddl.release()
    c.sock.settimeout(10)
    if early is None:
        first = c.read_result(c._logged("parked execute"))
    else:
        first = early
    took = time.time() - t0
    second = c.read_result(c._logged("pipelined ping"))
    t.eq("the ALTER through the proxy succeeded", "ok", alter)
    t.check(first.kind == "ok" and first.ok[0] == 1 and took >= 0.9,
            "the parked execute is answered OK with 1 row once the key is read again "
            "(%.2f s)" % took, first.err if first.kind == "err" else first.kind)
    t.eq("a COM_PING pipelined behind it is answered after it", "ok", second.kind)
    return 5 if first.kind == "ok" else 0


def parked_then_timed_out(d, c, stmt_id):
    ddl = DdlBehindLock(d, "two")
    t.check(ddl.waiting, "a second ALTER waits for the metadata lock")
    t0 = time.time()
    c.sock.settimeout(10)
    r = execute(c, stmt_id, 1000, "timed out")
    took = time.time() - t0
    want = ("myrewrite: the table's schema could not be read in 2.000 s "
            "(delayed_park_timeout): schema not loaded yet, retry: the key of test.pp_mem")
    t.check(r.kind == "err" and r.err[0] == 1235 and r.err[1].startswith(want) and
            1.8 <= took < 6, "held past delayed_park_timeout the execute gets its ERR "
            "(%.2f s)" % took, r.err if r.kind == "err" else r.kind)
    t.check(r.kind == "err" and "DDL on test.pp_mem is in flight" in r.err[1],
            "... saying DDL on the table is in flight", r.err if r.kind == "err" else r.kind)
    t.eq("the second ALTER succeeded", "ok", ddl.release())


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    setup(d)
    PROXY.start()
    try:
        c = rp.Conn(PORT)
        st = c.prepare(STMT)
        t.eq("the prepared memory-mode statement has 2 parameters", 2, st.params)
        t.check(first_ok(c, st.stmt_id, 2), "an execute outside DDL is answered OK")
        acked = 2
        acked += parked_then_answered(d, c, st.stmt_id)
        parked_then_timed_out(d, c, st.stmt_id)
        c.sock.settimeout(10)
        r = execute(c, st.stmt_id, 3, "after the DDL")
        t.check(r.kind == "ok" and r.ok[0] == 1, "after the DDL an execute is answered OK",
                r.err if r.kind == "err" else r.kind)
        acked += 3 if r.kind == "ok" else 0
        c.close()
        f = t.connect(PORT, autocommit=True)
        f.cursor().execute("FLUSH DELAYED")
        f.close()
        t.eq("after FLUSH DELAYED the counter is the sum of the acknowledged executes "
             "(the timed-out one not applied)", ((acked,),),
             t.rows(d, "SELECT n FROM pp_mem WHERE id = 1"))
        t.eq("the proxy exits 0 at SIGTERM", 0, PROXY.stop())
    finally:
        PROXY.kill9()
    d.cursor().execute("DROP TABLE IF EXISTS pp_mem")
    d.close()
    t.done()


if __name__ == "__main__":
    main()
