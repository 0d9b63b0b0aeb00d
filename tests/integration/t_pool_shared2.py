#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The pool shared by 2 workers: an idle connection on the other worker is found (a login
waiting for room gets it closed; a session waiting for its key gets it moved) however many
times it moved before."""
import os
import sys
import time

import pymysql

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402


def value(conn, sql):
    try:
        cur = conn.cursor()
        cur.execute(sql)
        return cur.fetchone()[0]
    except pymysql.err.MySQLError as e:
        return e.args


def on_worker(px, w, **kw):
    """A session on worker w, and the others made on the way (kept open)."""
    keep = []
    for _ in range(20):
        c = px.connect(autocommit=True, **kw)
        if px.worker_of(c) == w:
            return c, keep
        keep.append(c)
    raise SystemExit("no session on worker %d" % w)


def login_evicts_other_worker():
    """pool_size 1: each login needs the one idle connection closed, often on the other
    worker (asked by letter before the login was queued)."""
    opts = {"pool": "transaction", "pool_size": 1, "pool_max_wait": "1s"}
    with t.Proxy("shared2a", admin=True, workers=2, options=opts) as px:
        keep, refused, slow = [], 0, 0
        for _ in range(8):
            started = time.monotonic()
            try:
                keep.append(px.connect(autocommit=True))
            except pymysql.err.MySQLError as e:
                refused += 1
                print("refused", e.args)
            slow += time.monotonic() - started > 0.5
        t.check(refused == 0 and slow == 0,
                "8 logins in turn each get the room of the one idle connection at once "
                "(%d refused, %d slow)" % (refused, slow))
        for c in keep:
            c.close()


def moved_connection_moves_again():
    """A connection moved 1->0->1 (each time its waiter had no schema so could not take it)
    still moves to a waiter with its schema on the other worker."""
    opts = {"pool": "transaction", "pool_size": 1, "pool_max_connections": 10,
            "pool_max_wait": "1s"}
    with t.Proxy("shared2b", admin=True, workers=2, options=opts) as px:
        keep = [px.connect(autocommit=True)]
        n, s = {}, {}
        for w in (0, 1):
            n[w], k = on_worker(px, w, database=None)
            keep += k + [n[w]]
            s[w], k = on_worker(px, w)
            keep += k + [s[w]]
        time.sleep(0.3)
        x = int(px.admin_dicts("SHOW SERVERS")[0]["worker"])
        value(n[1 - x], "SELECT 1")  # ERR after 1 s: the moved one has a schema
        value(n[x], "SELECT 1")
        started = time.monotonic()
        got = value(s[1 - x], "SELECT 42")
        secs = time.monotonic() - started
        t.check(got == 42 and secs < 0.5,
                "a session with schema test on worker %d is served by the idle connection "
                "on worker %d (%.2f s)" % (1 - x, x, secs), got)
        for c in keep:
            c.close()


def main():
    t.needs_own_proxy()
    login_evicts_other_worker()
    moved_connection_moves_again()
    t.done()


if __name__ == "__main__":
    main()
