#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""UPDATE DELAYED / DELETE DELAYED in staged mode, end to end: two proxies of its own with
delayed rules, the real mariadbd.

  * every refused form gets ERR 1235 with its reason; a table without a rule gets
    "no delayed rule covers table ...";
  * 32 client threads (own connections, half through each proxy) send increments,
    decrements and IN lists; after a flush each counter equals the exact sum, and
    each OK reported the rows staged;
  * DELETE DELAYED removes its row at the flush, and an add staged before it is dropped;
  * kill -9 of a proxy in the middle of a run, then a restart: each client's counter
    holds every acknowledged increment once (plus at most the one in flight at the kill);
  * FLUSH DELAYED flushes an hourly table now; SHOW DELAYED and /metrics count its
    staged and flushed rows exactly (an IN list stages one row per value), the
    round, its time and duration, and the flush-duration histogram moves;
  * SIGTERM runs a final flush for a table whose interval is an hour.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the two proxies take free ports (B also for
its console and HTTP endpoint).
"""
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
import rawproto_lib as raw  # noqa: E402

CLIENTS = 32
RULES_DIR = os.path.join(t.TMP, "delayed_rules")
PROXIES = [t.Proxy("delayed_proxy_a", rules_dir=RULES_DIR, own_conn=True),
           t.Proxy("delayed_proxy_b", rules_dir=RULES_DIR, own_conn=True, admin=True, http=True)]
PORTS = [p.port for p in PROXIES]
ADMIN_PORT = PROXIES[1].admin_port  # proxy B's console
HTTP_PORT = PROXIES[1].http_port  # proxy B's /metrics
RULES = """
[delayed counters]
table = test.d_counters
key = id
columns = hits, misses
flush_interval = 200ms
flush_rows = 500

[delayed slow]
table = test.d_slow
key = id
columns = n
flush_interval = 1h
"""
UPD = "UPDATE DELAYED d_counters SET hits = hits %s %d WHERE id %s"


def setup(d):
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS d_counters, d_counters_delayed, d_slow, d_slow_delayed")
    cur.execute("CREATE TABLE d_counters (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0, "
                "misses BIGINT NOT NULL DEFAULT 0, note VARCHAR(20)) ENGINE=InnoDB")
    cur.execute("INSERT INTO d_counters (id) VALUES " +
                ", ".join("(%d)" % i for i in list(range(1, 6)) + list(range(1001, 1033)) +
                          [100, 101]))
    cur.execute("CREATE TABLE d_slow (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB")
    cur.execute("INSERT INTO d_slow VALUES (1, 0)")


def staged_left(d, table="d_counters_delayed"):
    return t.wait_rows(d, "SELECT COUNT(*) FROM %s" % table, ((0,),))


def hits(d, ids):
    cur = d.cursor()
    cur.execute("SELECT id, hits FROM d_counters WHERE id IN (%s)" % ",".join(map(str, ids)))
    return dict(cur.fetchall())


# ---- refusals --------------------------------------------------------------------------------

REFUSED = [
    ("UPDATE DELAYED d_counters SET hits = 5 WHERE id = 1",
     "UPDATE DELAYED on test.d_counters: SET hits = literal needs hits in the rule's "
     "set_columns"),
    ("UPDATE DELAYED d_counters SET hits = misses + 1 WHERE id = 1",
     "UPDATE DELAYED: SET hits = ... must read hits = hits + N, hits = hits - N with N a whole "
     "number or ?, or hits = literal"),
    ("UPDATE DELAYED d_counters SET hits = hits + 1",
     "UPDATE DELAYED needs a WHERE on the key columns"),
    ("UPDATE DELAYED d_counters SET hits = hits + 1 WHERE id > 1",
     "UPDATE DELAYED: WHERE takes key = literal or key IN (...) terms joined by AND"),
    ("UPDATE DELAYED d_counters SET hits = hits + 1 WHERE id = 1 OR id = 2",
     "UPDATE DELAYED: WHERE terms may only be joined by AND"),
    ("UPDATE DELAYED d_counters SET hits = hits + 1 WHERE id = 1 LIMIT 1",
     "UPDATE DELAYED takes no ORDER BY or LIMIT"),
    ("UPDATE DELAYED d_counters SET note = note + 1 WHERE id = 1",
     "UPDATE DELAYED on test.d_counters: note is not one of the rule's columns"),
    ("UPDATE DELAYED d_counters SET hits = hits + 1 WHERE note = 'x'",
     "UPDATE DELAYED on test.d_counters: note is not a key column of the rule"),
    ("UPDATE DELAYED d_counters SET hits = hits + 1.5 WHERE id = 1",
     "UPDATE DELAYED: SET hits = ... must read"),
    ("UPDATE DELAYED d_counters SET hits = hits + 1 WHERE id = (SELECT 1)",
     "UPDATE DELAYED takes no subquery"),
    ("DELETE DELAYED FROM d_counters", "DELETE DELAYED needs a WHERE on the key columns"),
    ("DELETE DELAYED QUICK FROM d_counters WHERE id = 1",
     "DELETE DELAYED takes no modifier other than LOW_PRIORITY"),
    ("UPDATE DELAYED d_other SET hits = hits + 1 WHERE id = 1",
     "no delayed rule covers table test.d_other, so this DELAYED statement was neither staged"),
]


def refusals(port):
    c = t.connect(port, autocommit=True)
    cur = c.cursor()
    for sql, want in REFUSED:
        try:
            cur.execute(sql)
            t.not_ok("refused: %s" % sql, "it succeeded")
        except pymysql.err.MySQLError as e:
            code, msg = e.args[0], e.args[1]
            t.check(code == 1235 and msg.startswith(want), "refused with its reason: %s" % sql,
                    "%s %s" % (code, msg))
    c.close()


# ---- concurrent increments ---------------------------------------------------------------------

def client(port, wid, n, expect, lock, rowcounts):
    """n statements on ids 1..5: +1, -1 and IN lists; records what was acknowledged."""
    c = t.connect(port, autocommit=True)
    cur = c.cursor()
    mine = {}
    bad = 0
    for i in range(n):
        k = (wid + i) % 5 + 1
        if i % 7 == 3:
            ids = [1, 3, 5]
            rows = cur.execute(UPD % ("+", 2, "IN (1, 3, 5)"))
            delta = 2
        elif i % 5 == 4:
            ids, delta = [k], -1
            rows = cur.execute(UPD % ("-", 1, "= %d" % k))
        else:
            ids, delta = [k], 1
            rows = cur.execute(UPD % ("+", 1, "= %d" % k))
        bad += rows != len(ids)
        for x in ids:
            mine[x] = mine.get(x, 0) + delta
    c.close()
    with lock:
        for x, v in mine.items():
            expect[x] = expect.get(x, 0) + v
        rowcounts.append(bad)


def concurrent(d):
    expect, lock, bad = {}, threading.Lock(), []
    threads = [threading.Thread(target=client, args=(PORTS[w % 2], w, 150, expect, lock, bad))
               for w in range(CLIENTS)]
    took = t.run_threads(threads)
    t.eq("every OK reported the rows staged", 0, sum(bad))
    t.check(staged_left(d) == ((0,),), "staging table drained by the flushers")
    t.eq("each counter equals the exact sum", expect, hits(d, range(1, 6)))
    t.log("%d clients x 150 UPDATE DELAYED through 2 proxies in %.2f s" % (CLIENTS, took))


# ---- DELETE DELAYED ----------------------------------------------------------------------------

def deletes(d, port):
    c = t.connect(port, autocommit=True)
    cur = c.cursor()
    cur.execute("UPDATE DELAYED d_counters SET hits = hits + 5 WHERE id = 101")
    cur.execute("DELETE DELAYED FROM d_counters WHERE id IN (100, 101)")
    t.eq("DELETE DELAYED with IN reports 2 rows staged", 2, cur.rowcount)
    c.close()
    got = t.wait_rows(d, "SELECT COUNT(*) FROM d_counters WHERE id IN (100, 101)", ((0,),))
    t.eq("DELETE DELAYED removed both rows at the flush", ((0,),), got)


# ---- kill -9 in the middle ----------------------------------------------------------------------

def killer_client(port, wid, stop, acked, uncertain):
    """+1 on its own row until its connection dies or stop is set."""
    try:
        c = t.connect(port, autocommit=True)
        cur = c.cursor()
    except pymysql.err.MySQLError:
        return
    while not stop.is_set():
        try:
            cur.execute(UPD % ("+", 1, "= %d" % (1001 + wid)))
            acked[wid] += 1
        except pymysql.err.MySQLError:
            uncertain[wid] = 1  # may have committed before the proxy died
            return


def kill_run(d, procs):
    stop = threading.Event()
    acked, uncertain = [0] * CLIENTS, [0] * CLIENTS
    threads = [threading.Thread(target=killer_client, args=(PORTS[0], w, stop, acked, uncertain))
               for w in range(CLIENTS)]
    for th in threads:
        th.start()
    time.sleep(1.5)
    procs[0].kill9()
    stop.set()
    for th in threads:
        th.join()
    procs[0].start()
    t.check(staged_left(d) == ((0,),), "staging table drained after the restart")
    got = hits(d, range(1001, 1001 + CLIENTS))
    wrong = [(w, acked[w], got[1001 + w]) for w in range(CLIENTS)
             if not acked[w] <= got[1001 + w] <= acked[w] + uncertain[w]]
    t.check(not wrong, "after kill -9 and restart every acknowledged increment is applied once",
            wrong)
    t.log("kill -9 after %d acknowledged increments (%d in flight)"
          % (sum(acked), sum(uncertain)))


# ---- FLUSH DELAYED from the admin console -----------------------------------------------------

def show_delayed(a):
    """SHOW DELAYED on proxy B's console, as {rule: {column: value}}."""
    cur = a.cursor()
    cur.execute("SHOW DELAYED")
    cols = [x[0] for x in cur.description]
    return {r[0]: dict(zip(cols, r)) for r in cur.fetchall()}


SLOW_STAGED = 'myrewrite_delayed_table_rows_staged_total{rule="slow",table="test.d_slow_delayed"}'
SLOW_FLUSHED = 'myrewrite_delayed_table_rows_flushed_total{rule="slow",table="test.d_slow_delayed"}'
FLUSH_HIST = "myrewrite_delayed_flush_duration_seconds"


def flush_command(d):
    cur = d.cursor()
    cur.execute("INSERT INTO d_slow VALUES (2, 0) ON DUPLICATE KEY UPDATE n = 0")
    staged_left(d, "d_slow_delayed")
    time.sleep(1.0)  # both proxies' first rounds (at their start) are over; the next is in 1 h
    a = pymysql.connect(host=t.HOST, port=ADMIN_PORT, user="admin", password="adminpw")
    s0, m0 = show_delayed(a)["slow"], t.metrics(HTTP_PORT)
    c = t.connect(PORTS[1], autocommit=True)
    for _ in range(5):
        c.cursor().execute("UPDATE DELAYED d_slow SET n = n + 2 WHERE id = 2")
    c.cursor().execute("UPDATE DELAYED d_slow SET n = n + 1 WHERE id IN (2, 99)")  # 2 rows
    c.close()
    r = raw.Conn(PORTS[1])  # a prepared statement: 2 rows at each of its 2 executes
    stmt = r.prepare("UPDATE DELAYED d_slow SET n = n + 3 WHERE id IN (2, 99)")
    t.eq("each execute of a prepared DELAYED statement reports its 2 rows staged",
         [2, 2], [r.execute(stmt.stmt_id).ok[0] for _ in range(2)])
    r.close()
    cur.execute("SELECT n FROM d_slow WHERE id = 2")
    t.eq("the hourly table is not flushed by itself", (0,), cur.fetchone())
    s1 = show_delayed(a)["slow"]
    t.eq("SHOW DELAYED: rows_staged moves by the 11 staging rows sent (4 by executes), "
         "nothing flushed yet", (11, 0),
         (s1["rows_staged"] - s0["rows_staged"], s1["rows_flushed"] - s0["rows_flushed"]))
    ac = a.cursor()
    ac.execute("FLUSH DELAYED test.d_slow")
    t.eq("FLUSH DELAYED answers once the round is done", (("flushed",),), ac.fetchall())
    cur.execute("SELECT n FROM d_slow WHERE id = 2")
    t.eq("FLUSH DELAYED applied the staged increments (id 99 has no row: ignored)", (17,),
         cur.fetchone())
    s2, m2 = show_delayed(a)["slow"], t.metrics(HTTP_PORT)
    a.close()
    t.eq("SHOW DELAYED: rows_flushed moves by the 11 rows, one more round, no error",
         (11, 1, 0), (s2["rows_flushed"] - s0["rows_flushed"],
                     s2["flush_rounds"] - s0["flush_rounds"], s2["errors"] - s0["errors"]))
    t.check(s2["table"] == "test.d_slow" and s2["staging_table"] == "test.d_slow_delayed" and
            s2["last_flush"] and s2["last_flush_ms"] is not None and
            0 <= s2["lag_seconds"] < 5 and s2["last_error"] is None,
            "SHOW DELAYED: tables, last flush, its duration and the lag since", s2)
    t.eq("/metrics: the table's staged and flushed rows move by 11",
         (11, 11), (m2[SLOW_STAGED] - m0[SLOW_STAGED], m2[SLOW_FLUSHED] - m0[SLOW_FLUSHED]))
    count = m2[FLUSH_HIST + "_count"]
    t.check(count >= m0[FLUSH_HIST + "_count"] + 1 and
            m2[FLUSH_HIST + '_bucket{le="+Inf"}'] == count and
            m2[FLUSH_HIST + "_sum"] > m0[FLUSH_HIST + "_sum"] and
            m2[FLUSH_HIST + '_bucket{le="0.001"}'] <= m2[FLUSH_HIST + '_bucket{le="5"}'] <= count,
            "/metrics: the flush-duration histogram counts the round, buckets cumulative",
            {k: v for k, v in m2.items() if k.startswith(FLUSH_HIST)})


# ---- final flush ------------------------------------------------------------------------------

def final_flush(d, procs):
    staged_left(d, "d_slow_delayed")  # the first round at start
    c = t.connect(PORTS[1], autocommit=True)
    cur = c.cursor()
    for _ in range(10):
        cur.execute("UPDATE DELAYED d_slow SET n = n + 3 WHERE id = 1")
    c.close()
    time.sleep(0.3)
    cur = d.cursor()
    cur.execute("SELECT n FROM d_slow WHERE id = 1")
    before = cur.fetchone()[0]
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        t.eq("delayed proxy exits 0 on SIGTERM", 0, p.stop())
    cur.execute("SELECT n FROM d_slow WHERE id = 1")
    t.eq("SIGTERM's final flush applied what the hourly flush had not", (0, 30),
         (before, cur.fetchone()[0]))


def main():
    if t.DIRECT_ONLY:
        print("skip: needs its own proxies")
        sys.exit(77)
    os.makedirs(RULES_DIR, exist_ok=True)
    with open(os.path.join(RULES_DIR, "10-delayed.rules"), "w") as f:
        f.write(RULES)
    d = t.direct(autocommit=True)
    setup(d)
    procs = [p.start() for p in PROXIES]
    try:
        got = t.wait_rows(d, "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                          "TABLE_SCHEMA = 'test' AND TABLE_NAME IN ('d_counters_delayed', "
                          "'d_slow_delayed')", ((2,),))
        t.eq("staging tables created at start", ((2,),), got)
        refusals(PORTS[0])
        concurrent(d)
        deletes(d, PORTS[1])
        kill_run(d, procs)
        flush_command(d)
        final_flush(d, procs)
    finally:
        for p in PROXIES:
            p.kill9()
    t.done()


if __name__ == "__main__":
    main()
