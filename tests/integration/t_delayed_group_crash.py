#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Group commit (`group_commit = yes`) when mysqld dies under load: kill -9 of the server while
128 clients send UPDATE DELAYED on 10 hot rows, a restart on the same datadir, the clients
reconnecting on their own.

Runs its own mariadbd ("gcrash", so the shared one is never killed) and one proxy with a
grouped staged rule. Every client counts, per row, the increments it was answered OK for
(acknowledged) and those whose answer was an error or a lost connection (in doubt: a batch's
COMMIT cut by the kill may have landed). Afterwards, with the server back and the staging
table flushed:

  * every row grew by at least its acknowledged increments and at most acknowledged + in
    doubt: an acknowledged increment is applied exactly once, a lost answer at most once;
  * the proxy kept running, and statements after the restart were acknowledged again (the
    group connections reconnected);
  * no client saw an error other than a lost connection or the proxy's group-commit ERR
    naming the server's loss.
Environment: MR_BIN; its own mariadbd and the proxy take free ports.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

DB = t.Mariadb("gcrash")
RULES_DIR = os.path.join(t.TMP, "gcrash_rules")
PROXY = t.Proxy("gcrash_proxy", backend_port=DB.port, rules_dir=RULES_DIR, own_conn=True)
HOT, CLIENTS = 10, 128
RULES = """
[delayed gcrash]
table = test.gcr_hot
key = id
columns = hits
group_commit = yes
flush_interval = 300ms
"""
# Errors a client may see while the server is down: the connection to the proxy lost, the
# proxy's backend gone (new logins), the proxy's group-commit ERR carrying the server's loss.
LOST = (2006, 2013, 2014, 1927, 1158, 1043, 2003)


class Book:
    def __init__(self):
        self.lock = threading.Lock()
        self.acked, self.doubt = {}, {}
        self.errors = []
        self.kinds = {}  # (code, message head) -> count, for the log
        self.after_restart = 0
        self.restarted = False
        self.stop = False

    def add(self, which, key, k):
        with self.lock:
            which[key] = which.get(key, 0) + k
            if which is self.acked and self.restarted:
                self.after_restart += 1


def lost(e):
    if e.args and e.args[0] in LOST:
        return True
    # The proxy's answer to the members of a batch the server's loss cut off.
    return "group commit" in str(e) and any(str(c) in str(e) for c in LOST)


def client(book, n):
    conn, i = None, 0
    while not book.stop:
        if conn is None:
            try:
                conn = PROXY.connect(autocommit=True, connect_timeout=2, read_timeout=30)
            except (pymysql.err.MySQLError, OSError):
                time.sleep(0.05)
                continue
        i += 1
        key, k = 1 + (n + i) % HOT, 1 + (n * 3 + i) % 4
        try:
            conn.cursor().execute("UPDATE DELAYED gcr_hot SET hits = hits + %d WHERE id = %d"
                                  % (k, key))
            book.add(book.acked, key, k)
        except pymysql.err.MySQLError as e:
            book.add(book.doubt, key, k)
            kind = (e.args[0] if e.args else None, str(e.args[1] if len(e.args) > 1 else e)[:70])
            with book.lock:
                book.kinds[kind] = book.kinds.get(kind, 0) + 1
            if not lost(e):
                with book.lock:
                    book.errors.append(repr(e))
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass
            conn = None


def hits():
    d = DB.connect(autocommit=True)
    vals = dict(t.rows(d, "SELECT id, hits FROM gcr_hot"))
    d.close()
    return vals


def crash_under_load():
    before = hits()
    book = Book()
    ths = [threading.Thread(target=client, args=(book, n)) for n in range(CLIENTS)]
    for th in ths:
        th.start()
    time.sleep(2.0)
    acked_before = sum(book.acked.values())
    DB.kill9()
    t.log("mariadbd killed -9 under load after %d acknowledged increments" % acked_before)
    t.check(DB.start(), "mariadbd restarted on the same datadir after SIGKILL")
    book.restarted = True
    time.sleep(4.0)
    book.stop = True
    for th in ths:
        th.join()
    t.check(acked_before > 0, "increments were acknowledged before the kill")
    t.check(book.after_restart > 0,
            "statements after the restart are acknowledged again (%d)" % book.after_restart)
    t.eq("no client saw an error other than the server's loss", [], book.errors[:5])
    t.eq("FLUSH DELAYED after the restart", None, t.flush_until_ok(PROXY.port, "gcr_hot"))
    bad = t.applied_within(before, hits(), book.acked, book.doubt)
    t.eq("every acknowledged increment applied exactly once (acked <= applied <= acked + in "
         "doubt, per row)", {}, bad)
    t.log("%d acknowledged, %d in doubt" % (sum(book.acked.values()),
                                             sum(book.doubt.values())))
    for (code, msg), n in sorted(book.kinds.items(), key=lambda kv: -kv[1]):
        t.log("  %5d x %s %s" % (n, code, msg))
    t.check(PROXY.alive(), "the proxy kept running")


def main():
    if t.DIRECT_ONLY:
        print("skip: needs its own proxy and server")
        sys.exit(77)
    t.write_rules(RULES_DIR, RULES, "10-gcrash.rules")
    if not DB.start():
        t.not_ok("own mariadbd %s on %d starts" % (DB.name, DB.port))
        t.done()
    try:
        d = DB.connect(autocommit=True)
        cur = d.cursor()
        cur.execute("DROP TABLE IF EXISTS gcr_hot, gcr_hot_delayed")
        cur.execute("CREATE TABLE gcr_hot (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0) "
                    "ENGINE=InnoDB")
        cur.execute("INSERT INTO gcr_hot (id) VALUES %s"
                    % ",".join("(%d)" % i for i in range(1, HOT + 1)))
        d.close()
        PROXY.start()
        crash_under_load()
        t.eq("proxy exits 0 on SIGTERM after the server crash", 0, PROXY.stop())
    finally:
        PROXY.kill9()
        DB.stop()
    t.done()


if __name__ == "__main__":
    main()
