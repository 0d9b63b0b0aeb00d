#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""FLUSH DELAYED on the admin console does not freeze the console, and answers at its limit.

A proxy with a staged and a memory-mode delayed rule, one pending delta in each table, and a
direct session that holds both tables locked (LOCK TABLES ... WRITE), so both flushers'
rounds wait on the lock:
  * console A sends FLUSH DELAYED; meanwhile console B's SHOW VERSION, SHOW STATS and SHOW
    DELAYED each answer within 1 s (the console's thread does not wait for the flush);
  * A's answer is "still flushing after 10 s" and comes at the stated limit, between 9 and
    12 s, for both flushers together (not 10 s per flusher);
  * once the locks go, FLUSH DELAYED on A answers "flushed" and both rows hold their delta;
  * SHOW VERSION on A answers again after its long command.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402

RULES = """
[delayed af_staged]
table = test.af_staged
key = id
columns = n
flush_interval = 1h

[delayed af_memory]
table = test.af_memory
key = id
columns = n
mode = memory
flush_interval = 1h
"""

one = t.rows  # (connection, sql): a tuple of row tuples


def main():
    if t.DIRECT_ONLY:
        print("skip: needs the proxy")
        sys.exit(77)
    d = t.direct(autocommit=True)
    for tbl in ("af_staged", "af_memory"):
        one(d, "DROP TABLE IF EXISTS %s" % tbl)
        one(d, "CREATE TABLE %s (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB" % tbl)
        one(d, "INSERT INTO %s VALUES (1, 0)" % tbl)
    proxy = t.Proxy("admin_flush", rules=RULES, own_conn=True, admin=True).start()
    c = proxy.connect(autocommit=True)
    one(c, "UPDATE DELAYED af_staged SET n = n + 5 WHERE id = 1")
    one(c, "UPDATE DELAYED af_memory SET n = n + 7 WHERE id = 1")
    # A table lock: the flushers' statements wait for it past the 10 s of their
    # innodb_lock_wait_timeout (a row lock would fail them at the console's limit).
    lock = t.direct(autocommit=True)
    one(lock, "LOCK TABLES af_staged WRITE, af_memory WRITE")

    a, b = proxy.admin(read_timeout=40), proxy.admin(read_timeout=40)
    got = {}

    def long_flush():
        start = time.time()
        try:
            got["answer"] = one(a, "FLUSH DELAYED")
        except Exception as e:  # noqa: BLE001 - the check reports it
            got["answer"] = repr(e)
        got["seconds"] = time.time() - start

    th = threading.Thread(target=long_flush)
    th.start()
    time.sleep(0.5)
    slowest = 0.0
    for sql in ("SHOW VERSION", "SHOW STATS", "SHOW DELAYED") * 2:
        start = time.time()
        one(b, sql)
        slowest = max(slowest, time.time() - start)
        time.sleep(0.3)
    t.log("console B during console A's FLUSH DELAYED: slowest answer %.2f s" % slowest)
    t.check(slowest < 1.0, "a FLUSH DELAYED waiting on a lock does not freeze the other "
            "console sessions (slowest answer %.2f s)" % slowest)
    th.join(40)
    t.log("console A: %r after %.1f s" % (got.get("answer"), got.get("seconds", -1)))
    t.check("still flushing after 10 s" in str(got.get("answer")),
            "FLUSH DELAYED past its limit says it goes on in the background", got)
    t.check(9.0 <= got.get("seconds", 0) < 12.0,
            "that answer comes at the stated 10 s limit, for both flushers together (%.1f s)"
            % got.get("seconds", -1))
    one(lock, "UNLOCK TABLES")
    lock.close()
    start = time.time()
    answer = one(a, "FLUSH DELAYED")
    t.check(answer == (("flushed",),) and time.time() - start < 8,
            "the locks gone, FLUSH DELAYED answers 'flushed'", answer)
    t.eq("the staged delta is applied once", ((5,),), one(d, "SELECT n FROM af_staged"))
    t.eq("the memory-mode delta is applied once", ((7,),), one(d, "SELECT n FROM af_memory"))
    t.check(one(a, "SHOW VERSION"), "console A answers further commands")
    for conn in (a, b, c, d):
        conn.close()
    proxy.stop(expect=0)
    t.done()


if __name__ == "__main__":
    main()
