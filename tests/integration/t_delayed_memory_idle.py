#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The memory-mode DELAYED flusher's own connection opens only for work.

A proxy of this test's own with one memory-mode rule (flush_interval 1s) and
own_connection_idle = 2s, its own connection as an account of this test
(mr_memidle), so SHOW PROCESSLIST tells that connection apart:
  * with no key held, the flusher's connection is gone within the idle time;
  * 100 UPDATE DELAYED through the proxy: the connection is back, the counter
    reaches exactly 100, and the connection is gone again after the idle time;
  * 50 more: back again for that flush, the counter exactly 150, gone again;
  * SIGTERM: the proxy exits 0 and the counter is still 150.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN, MR_TMP; root over the test
mariadbd's unix socket ($MR_TMP/main/mariadbd.sock).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402

q = t.root_query  # as root over the shared mariadbd's socket
OWN, OWN_PW = "mr_memidle", "memidlepw"
RULE = """
[delayed memidle]
table = %s.memidle
key = id
columns = hits
mode = memory
flush_interval = 1s
""" % t.DB


def own_connected():
    return any(r[1] == OWN for r in q("SHOW PROCESSLIST"))


def total():
    return q("SELECT COALESCE(SUM(hits), 0) FROM %s.memidle" % t.DB)[0][0]


def updates(p, n):
    c = p.connect(autocommit=True)
    cur = c.cursor()
    for i in range(n):
        cur.execute("UPDATE DELAYED memidle SET hits = hits + 1 WHERE id = %d" % (i % 10 + 1))
    c.close()


def rounds(p):
    t.check(t.wait_until(lambda: not own_connected(), 5),
            "no key held: the flusher's own connection is closed after own_connection_idle")
    want = 0
    for n in (100, 50):
        updates(p, n)
        want += n
        t.check(t.wait_until(own_connected, 3),
                "%d UPDATE DELAYED: the flusher's connection opens again for them" % n)
        t.check(t.wait_until(lambda: total() == want, 5), "the counters sum to exactly %d" % want,
                "sum %s" % total())
        t.check(t.wait_until(lambda: not own_connected(), 5),
                "after that flush the connection is closed again after the idle time")
    t.eq("nothing lost or applied twice", want, total())
    return want


def main():
    q("DROP USER IF EXISTS '%s'@'%%'" % OWN)
    q("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'" % (OWN, OWN_PW))
    q("GRANT SELECT, INSERT, UPDATE, DELETE ON %s.* TO '%s'@'%%'" % (t.DB, OWN))
    q("CREATE OR REPLACE TABLE %s.memidle (id INT PRIMARY KEY, hits INT NOT NULL)" % t.DB)
    q("INSERT INTO %s.memidle SELECT seq, 0 FROM %s.seq_1_to_10" % (t.DB, t.DB))
    p = t.Proxy("memidle", rules=RULE, options=[("proxy_user", OWN), ("proxy_password", OWN_PW),
                                               ("own_connection_idle", "2s")]).start()
    try:
        want = rounds(p)
    finally:
        p.stop(timeout=20, expect=0, desc="the proxy exits 0 on SIGTERM")
        q("DROP USER IF EXISTS '%s'@'%%'" % OWN)
    t.eq("after shutdown the counters still sum to %d" % want, want, total())
    q("DROP TABLE IF EXISTS %s.memidle" % t.DB)
    t.done()


if __name__ == "__main__":
    main()
