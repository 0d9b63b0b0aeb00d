#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Group commit for staged UPDATE DELAYED (`group_commit = yes`): autocommit statements of many
sessions staged together, one multi-row INSERT per batch on the proxy's own connections, each
client answered once its batch has committed.

One proxy of its own (proxy_user set, /metrics and the console on) in front of the shared
mariadbd, rules on test.gc_hot (10 hot rows) and test.gc_fresh (a table created after the
proxy started, so its staging table does not exist yet):

  * load: 128 client threads on the 10 hot rows for a few seconds; after FLUSH DELAYED each
    row grew by exactly its acknowledged increments, and the batches held more than one
    statement on average (they were grouped, not one commit each);
  * kill -9 of the proxy during the load, restarted at once on the same port: every
    acknowledged increment is applied exactly once. Statements whose connection broke are in
    doubt. Once the load stopped, table + staging (one consistent snapshot) is what the
    server committed; after the restart's flush the table holds exactly that, and it lies
    between the acknowledged sum and acknowledged + in doubt;
  * transactions: UPDATE DELAYED after BEGIN and with autocommit off is rolled back with the
    client's ROLLBACK (it stays on the client's own connection) and never applied; its OK
    carried the transaction's status; the committed one is applied;
  * a failed batch: with a CHECK constraint added to the staging table and the staging table
    locked, two batches wait; three statements (one over the CHECK) queue behind them and
    become one batch: all three get the server's ERR 4025 prefixed "myrewrite: group commit",
    none of them is staged, the two before are applied;
  * a client that leaves while its batch waits: the batch still commits, the proxy goes on;
  * a fresh staging table: a statement on test.gc_fresh right after the table was created
    (the flusher has not made its staging table yet: the server would answer 1146) waits
    and is answered OK, and is applied; /metrics counts it parked;
  * a very first start without group commit: 16 clients connecting in a tight loop before
    the proxy starts get no 1146 (the listener opens once the flusher has created the
    staging table), and every acknowledged increment is applied;
  * the proxy's own account cannot log in: a grouped statement goes on the client's own
    connection instead (staged, OK), and so does the next;
  * group_commit_timeout (1 s here; own_connection_timeout 20 s), a proxy behind a fault
    relay: (a) the relay stalls the batch's autocommit INSERT (a hung server): the client
    gets ERR 1927 "may or may not have been staged" within the limit; (b) the staging table
    locked: two autocommit batches hang (1927 in doubt: they do land once the lock goes), and
    a batch of two tables behind them, one transaction, hangs on its second INSERT: both its
    statements get ERR 1969 "nothing of it was staged" and none of their rows is ever
    applied; every acknowledged increment is, and each in-doubt one is applied at most once;
  * /metrics and SHOW DELAYED count batches, rows, grouped statements and their wait;
    EXPLAIN REWRITE says "grouped".
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
import rawproto_lib as raw  # noqa: E402
from faultrelay import Fault, FaultRelay  # noqa: E402

HOT = 10
RULES = """
[delayed gc]
table = test.gc_hot
key = id
columns = hits
group_commit = yes
flush_interval = 300ms

[delayed gc_fresh]
table = test.gc_fresh
key = id
columns = hits
group_commit = yes
group_commit_wait = 1ms
flush_interval = 1500ms
"""


def setup():
    d = t.direct(autocommit=True)
    cur = d.cursor()
    for tbl in ("gc_hot", "gc_hot_delayed", "gc_fresh", "gc_fresh_delayed"):
        cur.execute("DROP TABLE IF EXISTS %s" % tbl)
    cur.execute("CREATE TABLE gc_hot (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0) "
                "ENGINE=InnoDB")
    cur.execute("INSERT INTO gc_hot (id) VALUES %s"
                % ",".join("(%d)" % i for i in range(1, HOT + 1)))
    d.close()


def hits(table="gc_hot"):
    d = t.direct(autocommit=True)
    vals = dict(t.rows(d, "SELECT id, hits FROM %s" % table))
    d.close()
    return vals


def flush(proxy, table="gc_hot"):
    c = proxy.connect(autocommit=True)
    c.cursor().execute("FLUSH DELAYED " + table)
    c.close()


def metrics(proxy):
    return t.metrics(proxy, "myrewrite_delayed_group")


class Book:
    """Acknowledged and in-doubt increments per id, counted by the clients."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}
        self.acked_statements = 0
        self.doubt = {}
        self.errors = []
        self.stop = False

    def add(self, book, key, k):
        with self.lock:
            book[key] = book.get(key, 0) + k
            if book is self.acked:
                self.acked_statements += 1


def client(proxy, book, n, reconnect):
    conn = None
    i = 0
    while not book.stop:
        if conn is None:
            try:
                conn = proxy.connect(autocommit=True, connect_timeout=2)
            except (pymysql.err.OperationalError, OSError):
                if not reconnect:
                    return
                time.sleep(0.01)
                continue
        i += 1
        key = 1 + (n + i) % HOT
        k = 1 + (n * 3 + i) % 4
        try:
            conn.cursor().execute("UPDATE DELAYED gc_hot SET hits = hits + %d WHERE id = %d"
                                  % (k, key))
            book.add(book.acked, key, k)
        except pymysql.err.OperationalError as e:
            if e.args[0] not in (2006, 2013, 2014, 1927):
                with book.lock:
                    book.errors.append(repr(e))
            book.add(book.doubt, key, k)  # sent, answer lost: staged or not
            try:
                conn.close()
            except Exception:
                pass
            conn = None
        except Exception as e:  # noqa: BLE001
            with book.lock:
                book.errors.append(repr(e))
            book.add(book.doubt, key, k)
            conn = None


def run_load(proxy, clients, seconds, kill_at=None, reconnect=False):
    book = Book()
    ths = [threading.Thread(target=client, args=(proxy, book, n, reconnect))
           for n in range(clients)]
    for th in ths:
        th.start()
    if kill_at is not None:
        time.sleep(kill_at)
        proxy.kill9()
        t.log("proxy killed -9 under load; restarting")
        proxy.start()
        time.sleep(seconds - kill_at)
    else:
        time.sleep(seconds)
    book.stop = True
    for th in ths:
        th.join()
    return book


def load_exact(proxy):
    before = hits()
    m0 = metrics(proxy)
    book = run_load(proxy, 128, 4.0)
    flush(proxy)
    after = hits()
    got = {i: after[i] - before[i] for i in after}
    want = {i: book.acked.get(i, 0) for i in after}
    t.eq("128 clients, group commit: no client saw an error", [], book.errors[:5])
    t.eq("128 clients on 10 hot rows: every row grew by exactly its acknowledged increments",
         want, got)
    m1 = metrics(proxy)
    batches = m1.get("myrewrite_delayed_group_batches_total", 0) - \
        m0.get("myrewrite_delayed_group_batches_total", 0)
    stmts = m1.get("myrewrite_delayed_group_statements_total", 0) - \
        m0.get("myrewrite_delayed_group_statements_total", 0)
    t.log("load: %d statements acknowledged, %d batches, %.1f statements per batch"
          % (stmts, batches, stmts / batches if batches else 0))
    t.check(batches > 0 and stmts / batches > 1.5,
            "the statements were grouped (more than 1.5 per batch on average)", m1)
    merged = m1.get("myrewrite_delayed_group_merged_total", 0) - \
        m0.get("myrewrite_delayed_group_merged_total", 0)
    t.log("load: %d of the rows merged into another of their key and batch" % merged)
    t.check(merged > 0 and stmts - merged <= batches * 10,
            "the add rows of one key in a batch were merged: at most one row per hot row and "
            "batch was inserted", m1)
    t.eq("/metrics counts each acknowledged statement once as grouped",
         book.acked_statements, stmts)
    rows = m1.get("myrewrite_delayed_group_rows_total", 0) - \
        m0.get("myrewrite_delayed_group_rows_total", 0)
    t.eq("/metrics counts one committed staging row per (single-key) statement", stmts, rows)


def snapshot_committed():
    """table + staging in one consistent snapshot: what the server committed."""
    d = t.direct(autocommit=True)
    cur = d.cursor()
    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    cur.execute("SELECT id, hits FROM gc_hot")
    table = dict(cur.fetchall())
    cur.execute("SELECT id, SUM(hits) FROM gc_hot_delayed GROUP BY id")
    staged = {i: int(s) for i, s in cur.fetchall()}
    cur.execute("COMMIT")
    d.close()
    return {i: table[i] + staged.get(i, 0) for i in table}


def kill_under_load(proxy):
    flush(proxy)
    before = hits()
    book = run_load(proxy, 64, 4.0, kill_at=2.0, reconnect=True)
    committed = snapshot_committed()
    flush(proxy)
    after = hits()
    t.eq("kill -9 under load: no client saw an error other than the cut connection", [],
         book.errors[:5])
    t.eq("after the restart's flush the table holds what the server had committed in "
         "table + staging", committed, after)
    bad = t.applied_within(before, after, book.acked, book.doubt)
    t.eq("every acknowledged increment applied exactly once (acked <= applied <= acked + in "
         "doubt, per row)", {}, bad)
    t.log("kill: %d in doubt, %d acknowledged" % (sum(book.doubt.values()),
                                                  sum(book.acked.values())))


def transactions(proxy):
    flush(proxy)
    before = hits()
    m0 = metrics(proxy).get("myrewrite_delayed_group_statements_total", 0)
    c = proxy.connect(autocommit=True)
    cur = c.cursor()
    cur.execute("BEGIN")
    cur.execute("UPDATE DELAYED gc_hot SET hits = hits + 1000 WHERE id = 1")
    t.check(c.server_status & 0x0001, "UPDATE DELAYED after BEGIN: its OK says in transaction")
    cur.execute("ROLLBACK")
    c.autocommit(False)
    cur.execute("UPDATE DELAYED gc_hot SET hits = hits + 2000 WHERE id = 2")
    c.rollback()
    cur.execute("UPDATE DELAYED gc_hot SET hits = hits + 30 WHERE id = 3")
    c.commit()
    c.autocommit(True)
    cur.execute("UPDATE DELAYED gc_hot SET hits = hits + 4 WHERE id = 4")
    t.check(c.server_status & 0x0002 and not c.server_status & 0x0001,
            "a grouped statement's OK: autocommit on, no transaction", c.server_status)
    t.eq("the grouped statement's affected rows are the rows it staged", 1, cur.rowcount)
    c.close()
    flush(proxy)
    after = hits()
    t.eq("statements in rolled-back transactions never applied; committed and grouped ones "
         "are", {1: 0, 2: 0, 3: 30, 4: 4}, {i: after[i] - before[i] for i in (1, 2, 3, 4)})
    m1 = metrics(proxy).get("myrewrite_delayed_group_statements_total", 0)
    t.eq("only the autocommit statement was grouped", 1.0, m1 - m0)


def send(proxy, sql, out, key):
    c = proxy.connect(autocommit=True)
    try:
        c.cursor().execute(sql)
        out[key] = "OK"
    except pymysql.err.MySQLError as e:
        out[key] = (e.args[0], e.args[1])
    c.close()


def waiting_sessions(proxy, n, timeout=20):
    """Waits until n client sessions wait for their batch (SHOW CLIENTS: waiting)."""
    a = proxy.admin()
    deadline = time.time() + timeout
    got = None
    while time.time() < deadline:
        cur = a.cursor()
        cur.execute("SHOW CLIENTS")
        cols = [c[0] for c in cur.description]
        got = [dict(zip(cols, r))["state"] for r in cur.fetchall()]
        if got.count("waiting") >= n:
            break
        time.sleep(0.05)
    a.close()
    t.check(got and got.count("waiting") >= n, "%d sessions wait for their batch" % n, got)


def failed_batch(proxy):
    flush(proxy)
    before = hits()
    m0 = metrics(proxy).get("myrewrite_delayed_group_failed_total", 0)
    d = t.direct(autocommit=True)
    dc = d.cursor()
    dc.execute("ALTER TABLE gc_hot_delayed ADD CONSTRAINT gc_small CHECK (hits < 1000000)")
    lock = t.direct(autocommit=True)
    lock.cursor().execute("LOCK TABLES gc_hot_delayed WRITE")
    out = {}
    first = [threading.Thread(target=send, args=(
        proxy, "UPDATE DELAYED gc_hot SET hits = hits + %d WHERE id = %d" % (k, k), out, k))
        for k in (5, 6)]
    for k, th in enumerate(first):  # one batch on each own connection, both waiting
        th.start()
        waiting_sessions(proxy, k + 1)
        time.sleep(0.2)
    stmts = {7: 7, 8: 5000000, 9: 9}
    rest = [threading.Thread(target=send, args=(
        proxy, "UPDATE DELAYED gc_hot SET hits = hits + %d WHERE id = %d" % (v, k), out, k))
        for k, v in stmts.items()]
    for th in rest:
        th.start()
    waiting_sessions(proxy, 5)  # all three queued behind the two waiting batches
    time.sleep(0.2)
    lock.cursor().execute("UNLOCK TABLES")
    for th in first + rest:
        th.join()
    lock.close()
    dc.execute("ALTER TABLE gc_hot_delayed DROP CONSTRAINT gc_small")
    d.close()
    t.eq("the two batches before it committed", ("OK", "OK"), (out.get(5), out.get(6)))
    errs = [out.get(k) for k in stmts]
    t.check(all(isinstance(e, tuple) and e[0] == 4025 and
                e[1].startswith("myrewrite: group commit: the batch's staging INSERT failed")
                and "3 statement(s)" in e[1] for e in errs),
            "every member of the failed batch got the server's ERR 4025, prefixed", errs)
    flush(proxy)
    after = hits()
    t.eq("the failed batch staged nothing; the others applied",
         {5: 5, 6: 6, 7: 0, 8: 0, 9: 0}, {k: after[k] - before[k] for k in (5, 6, 7, 8, 9)})
    t.eq("/metrics counts the failed batch", 1.0,
         metrics(proxy).get("myrewrite_delayed_group_failed_total", 0) - m0)


def gone_in_flight(proxy):
    """A client that leaves while its batch waits (the staging table locked): the batch
    still commits, the proxy goes on."""
    flush(proxy)
    before = hits()
    lock = t.direct(autocommit=True)
    lock.cursor().execute("LOCK TABLES gc_hot_delayed WRITE")
    gone = raw.Conn(proxy.port)
    gone.send_command(bytes([raw.COM_QUERY]) +
                      b"UPDATE DELAYED gc_hot SET hits = hits + 11 WHERE id = 10")
    waiting_sessions(proxy, 1)
    gone.close()
    time.sleep(0.3)
    lock.cursor().execute("UNLOCK TABLES")
    lock.close()
    out = {}
    send(proxy, "UPDATE DELAYED gc_hot SET hits = hits + 1 WHERE id = 10", out, 1)
    t.eq("after a client left with its batch in flight, the proxy answers the next", "OK",
         out[1])
    flush(proxy)
    t.eq("the batch of the client that left was committed", 12, hits()[10] - before[10])


def fresh_staging(proxy):
    d = t.direct(autocommit=True)
    d.cursor().execute("CREATE TABLE gc_fresh (id INT PRIMARY KEY, hits BIGINT NOT NULL "
                       "DEFAULT 0) ENGINE=InnoDB")
    d.cursor().execute("INSERT INTO gc_fresh VALUES (1, 0)")
    exists = t.rows(d, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                    "DATABASE() AND TABLE_NAME = 'gc_fresh_delayed'")[0][0]
    d.close()
    t.eq("the fresh table's staging table does not exist yet", 0, exists)
    p0 = metrics(proxy).get("myrewrite_delayed_group_parked_total", 0)
    out = {}
    send(proxy, "UPDATE DELAYED gc_fresh SET hits = hits + 3 WHERE id = 1", out, 1)
    t.eq("a statement before its staging table exists waits and is answered OK", "OK", out[1])
    m = metrics(proxy)
    t.check(m.get("myrewrite_delayed_group_parked_total", 0) - p0 >= 1 and
            m.get("myrewrite_delayed_group_park_wait_seconds_total", 0) > 0,
            "/metrics counts it parked, and its wait", m)
    flush(proxy, "gc_fresh")
    t.eq("... and it is applied", {1: 3}, hits("gc_fresh"))


FIRST_RULES = """
[delayed gc_first]
table = test.gc_first
key = id
columns = hits
flush_interval = 300ms
"""


def first_client(port, book, n):
    conn = None
    while not book.stop:
        if conn is None:
            try:
                conn = t.connect(port, autocommit=True, connect_timeout=1)
            except (pymysql.err.OperationalError, OSError):
                time.sleep(0.001)  # a tight loop: the proxy is starting
                continue
        key = 1 + n % 4
        try:
            conn.cursor().execute("UPDATE DELAYED gc_first SET hits = hits + 1 WHERE id = %d"
                                  % key)
            book.add(book.acked, key, 1)
        except pymysql.err.MySQLError as e:
            with book.lock:
                book.errors.append(e.args)
            time.sleep(0.01)


def first_start():
    """A very first start, staged statements on the clients' own connections (no
    group_commit): the listener opens once the flusher has created the staging table, so
    the first statements do not get the server's 1146."""
    d = t.direct(autocommit=True)
    for sql in ("DROP TABLE IF EXISTS gc_first", "DROP TABLE IF EXISTS gc_first_delayed",
                "CREATE TABLE gc_first (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0) "
                "ENGINE=InnoDB", "INSERT INTO gc_first (id) VALUES (1), (2), (3), (4)"):
        d.cursor().execute(sql)
    first = t.Proxy("group_first", rules=FIRST_RULES, own_conn=True)
    book = Book()
    ths = [threading.Thread(target=first_client, args=(first.port, book, n))
           for n in range(16)]
    for th in ths:
        th.start()
    first.start()
    time.sleep(1.0)
    book.stop = True
    for th in ths:
        th.join()
    c = first.connect(autocommit=True)
    c.cursor().execute("FLUSH DELAYED gc_first")
    c.close()
    got = dict(t.rows(d, "SELECT id, hits FROM gc_first"))
    d.close()
    first.stop()
    t.eq("first start: no statement met a missing staging table", [], book.errors[:5])
    t.check(sum(book.acked.values()) > 0, "first start: statements were staged",
            book.acked)
    t.eq("first start: every acknowledged increment applied",
         {i: book.acked.get(i, 0) for i in (1, 2, 3, 4)}, got)


def reporting(proxy):
    m = metrics(proxy)
    for name in ("batches_total", "rows_total", "merged_total", "statements_total",
                 "wait_seconds_total",
                 "parked_total", "park_wait_seconds_total", "failed_total"):
        t.check("myrewrite_delayed_group_" + name in m, "/metrics has myrewrite_delayed_group_"
                + name, sorted(m))
    a = proxy.admin()
    cur = a.cursor()
    cur.execute("SHOW DELAYED")
    cols = [c[0] for c in cur.description]
    rows = cur.fetchall()
    row = dict(zip(cols, [r for r in rows if r[0] == "gc"][0]))
    fresh = dict(zip(cols, [r for r in rows if r[0] == "gc_fresh"][0]))
    t.check(int(fresh.get("parked") or 0) >= 1 and fresh.get("park_wait_ms") is not None,
            "SHOW DELAYED: parked and park_wait_ms of the rule whose staging table was late",
            fresh)
    t.check(int(row.get("batches") or 0) > 0 and float(row.get("rows_per_batch") or 0) > 1
            and int(row.get("grouped") or 0) > 0 and row.get("group_wait_ms") is not None,
            "SHOW DELAYED: batches, rows_per_batch, grouped, group_wait_ms", row)
    cur.execute("EXPLAIN REWRITE 'UPDATE DELAYED test.gc_hot SET hits = hits + 1 WHERE id = 1'")
    text = "\n".join(r[0] for r in cur.fetchall())
    t.check("grouped" in text, "EXPLAIN REWRITE says grouped", text)
    a.close()


def runner_cannot_connect():
    """The proxy's own account cannot log in (a wrong proxy_password): the grouped statement
    the runner could not send goes on the client's own connection instead, as without group
    commit, and so does the next; both are staged and answered OK."""
    d = t.direct(autocommit=True)
    before = t.rows(d, "SELECT COALESCE(SUM(hits), 0) FROM gc_hot_delayed WHERE id = 10")[0][0]
    bad = t.Proxy("group_badpw", rules=RULES, options=[("proxy_user", t.USER),
                                                      ("proxy_password", "wrong")])
    bad.start()
    out = {}
    send(bad, "UPDATE DELAYED gc_hot SET hits = hits + 1000 WHERE id = 10", out, 1)
    send(bad, "UPDATE DELAYED gc_hot SET hits = hits + 100 WHERE id = 10", out, 2)
    bad.stop()
    after = t.rows(d, "SELECT COALESCE(SUM(hits), 0) FROM gc_hot_delayed WHERE id = 10")[0][0]
    d.close()
    t.eq("runner cannot connect: both statements answered OK", ("OK", "OK"), (out[1], out[2]))
    t.eq("... and staged on the clients' own connections", 1100, int(after) - int(before))


LIMIT_S = 1.0
LIMIT_RULES = """
[delayed gl]
table = test.gc_hot
key = id
columns = hits
group_commit = yes
group_commit_timeout = 1s
flush_interval = 1h

[delayed gl_other]
table = test.gc_other
key = id
columns = hits
group_commit = yes
group_commit_timeout = 1s
flush_interval = 1h

[delayed gl_dec]
table = test.gc_dec
key = id
columns = hits
set_columns = price
group_commit = yes
flush_interval = 1h
"""


def timed(proxy, sql, out, key):
    """Runs sql on a connection of its own: out[key] = (code or "OK", message, seconds)."""
    c = proxy.connect(autocommit=True, read_timeout=15)
    start = time.time()
    try:
        c.cursor().execute(sql)
        out[key] = ("OK", "", time.time() - start)
    except pymysql.MySQLError as e:
        out[key] = (e.args[0], str(e.args[1:]), time.time() - start)
    c.close()


def staged_sum(table, i):
    return int(t.query("SELECT COALESCE(SUM(hits), 0) FROM %s_delayed WHERE id = %d"
                           % (table, i))[0][0])


def limit_setup():
    d = t.direct(autocommit=True)
    cur = d.cursor()
    for tbl in ("gc_other", "gc_other_delayed"):
        cur.execute("DROP TABLE IF EXISTS %s" % tbl)
    cur.execute("CREATE TABLE gc_other (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0) "
                "ENGINE=InnoDB")
    cur.execute("INSERT INTO gc_other (id) VALUES (1)")
    for tbl in ("gc_dec", "gc_dec_delayed"):
        cur.execute("DROP TABLE IF EXISTS %s" % tbl)
    cur.execute("CREATE TABLE gc_dec (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0, "
                "price DECIMAL(10,2) NOT NULL DEFAULT 0) ENGINE=InnoDB")
    cur.execute("INSERT INTO gc_dec (id) VALUES (1)")
    d.close()


def warnings_counted(proxy):
    """A batch whose INSERT warns (a set_columns literal with more decimals than the column
    keeps: Note 1265, the value rounded): the grouped OK counts the warning, as the client's
    own staging INSERT would, and the proxy's log has it (the client's SHOW WARNINGS cannot
    list it)."""
    c = proxy.connect(autocommit=True, read_timeout=15)
    cur = c.cursor()
    cur.execute("UPDATE DELAYED gc_dec SET price = 1.005 WHERE id = 1")
    got = c._result.warning_count if c._result else None
    c.close()
    t.check(got is not None and got >= 1, "a grouped OK carries its batch's warnings (%s)" % got)
    t.check("staging INSERT warned" in proxy.log_text(),
            "the proxy's log has the batch's warning", proxy.log_text()[-2000:])


def in_doubt(desc, r):
    t.check(r[0] == 1927 and "group_commit_timeout" in r[1] and "may or may not" in r[1],
            desc + ": ERR 1927, the batch's commit in flight: may or may not be staged", r)
    t.check(r[2] < LIMIT_S + 2.5, "%s: within the 1 s limit (%.1f s)" % (desc, r[2]))


def stalled_insert(proxy, relay):
    """(a) the batch's autocommit INSERT never reaches the server: a hung connection."""
    before = staged_sum("gc_hot", 4)
    f = Fault("c2s", action="stall", pattern=b"INSERT INTO `test`.`gc_hot_delayed`")
    relay.arm(f)
    out = {}
    timed(proxy, "UPDATE DELAYED gc_hot SET hits = hits + 7 WHERE id = 4", out, 1)
    t.check(f.fired.is_set(), "the relay stalled the batch's INSERT")
    in_doubt("stalled INSERT", out[1])
    relay.disarm()
    relay.release()
    out = {}
    timed(proxy, "UPDATE DELAYED gc_hot SET hits = hits + 1 WHERE id = 5", out, 2)
    t.eq("after the cut, the next grouped statement is answered OK", "OK", out[2][0])
    got = staged_sum("gc_hot", 4) - before
    t.check(got in (0, 7), "the in-doubt increment is staged at most once (%d)" % got)


def locked_staging(proxy):
    """(b) batches hang on a locked staging table: autocommit ones in doubt, a transaction
    cut before its COMMIT stages nothing."""
    flush(proxy)  # what earlier parts staged is applied before the counts start
    base = {"hot": hits(), "other": hits("gc_other")}
    lock = t.direct(autocommit=True)
    lock.cursor().execute("LOCK TABLES gc_hot_delayed WRITE")
    out = {}
    first = [threading.Thread(target=timed, args=(proxy, "UPDATE DELAYED gc_hot SET hits = hits "
                                                  "+ %d WHERE id = %d" % (1000 * i, i), out, i))
             for i in (1, 2)]
    for n, th in enumerate(first):  # one at a time: a batch each, one on each connection
        th.start()
        waiting_sessions(proxy, n + 1)
        time.sleep(0.1)
    behind = [threading.Thread(target=timed, args=(proxy, sql, out, key)) for sql, key in (
        ("UPDATE DELAYED gc_other SET hits = hits + 5 WHERE id = 1", "c"),
        ("UPDATE DELAYED gc_hot SET hits = hits + 3 WHERE id = 3", "d"))]
    for th in behind:
        th.start()
    for th in first + behind:
        th.join()
    for i in (1, 2):
        in_doubt("locked staging table, batch %d" % i, out[i])
    for key in ("c", "d"):
        r = out[key]
        t.check(r[0] == 1969 and "nothing of it was staged" in r[1],
                "transaction batch cut before its COMMIT (%s): ERR 1969, nothing staged" % key, r)
        t.check(r[2] < 2 * LIMIT_S + 3, "... within two limits (its own and the batch ahead of "
                "it: %.1f s)" % r[2])
    lock.cursor().execute("UNLOCK TABLES")
    lock.close()
    flush(proxy)
    flush(proxy, "gc_other")
    hot, other = hits(), hits("gc_other")
    t.eq("the cut transaction's rows are never applied (gc_other, gc_hot id 3)",
         (0, 0), (other[1] - base["other"][1], hot[3] - base["hot"][3]))
    got = (hot[1] - base["hot"][1], hot[2] - base["hot"][2])
    t.check(all(g in (0, w) for g, w in zip(got, (1000, 2000))),
            "the in-doubt increments are applied at most once each %s" % (got,))


def batch_limit():
    limit_setup()
    relay = FaultRelay(t.DIRECT_PORT).start()
    proxy = t.Proxy("group_limit", backend_port=relay.port, rules=LIMIT_RULES, own_conn=True,
                    admin=True, options=[("own_connection_timeout", "20s")])
    proxy.start()
    try:
        time.sleep(0.5)  # the flusher made the staging tables
        out = {}
        timed(proxy, "UPDATE DELAYED gc_hot SET hits = hits + 1 WHERE id = 5", out, 0)
        t.eq("group_commit_timeout: a batch that commits in time is answered OK", "OK", out[0][0])
        warnings_counted(proxy)
        stalled_insert(proxy, relay)
        locked_staging(proxy)
    finally:
        relay.stop()
        proxy.stop(expect=0, desc="group_commit_timeout: the proxy exits 0 at SIGTERM")


def main():
    if t.DIRECT_ONLY:
        print("skip: needs the proxy")
        sys.exit(77)
    setup()
    first_start()
    proxy = t.Proxy("group", rules=RULES, own_conn=True, http=True, admin=True,
                    options=[("delayed_park_timeout", "5s")])
    proxy.start()
    try:
        time.sleep(0.5)  # the flusher made gc_hot's staging table
        load_exact(proxy)
        transactions(proxy)
        failed_batch(proxy)
        gone_in_flight(proxy)
        fresh_staging(proxy)
        reporting(proxy)
        kill_under_load(proxy)
    finally:
        proxy.stop(expect=0, desc="the proxy exits 0 at SIGTERM")
    runner_cannot_connect()
    batch_limit()
    t.done()


if __name__ == "__main__":
    main()
