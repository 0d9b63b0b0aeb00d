#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""UPDATE DELAYED through a proxy that has just started: a delayed rule that names no `key`
takes the table's primary key from the schema cache, and a statement that arrives before the
cache has it is parked in its session until it does (delayed_park_timeout), never refused.

Runs one proxy of its own (proxy_user set, its /metrics on) in front of the shared mariadbd,
with keyless rules on test.cs_staged (staged mode) and test.cs_mem (memory mode):

  * an earlier deploy: the proxy is started once and stopped, leaving the staging table its
    flusher made (a proxy's very first start creates it only at the flusher's first round).
  * cold start: 32 client threads spin connecting before the proxy exists and send
    `UPDATE DELAYED ... SET hits = hits + k WHERE id = N` the moment it accepts them. Halfway
    the proxy is killed with SIGKILL and started again at once; the clients reconnect and go
    on. No statement may be refused (the old code answered ERR 1235 "schema not loaded yet,
    retry"). After FLUSH DELAYED each counter is checked:
      - staged mode: every acknowledged increment applied exactly once. A statement whose
        connection broke (the kill) is in doubt: its staging INSERT may or may not have been
        committed. Ids with no statement in doubt must equal their acknowledged sum exactly;
        the others lie between it and it plus their increments in doubt.
      - memory mode: what the killed proxy held in memory is lost (rules/README.md, "memory mode", says so), so
        ids written before the kill (1..50) hold at most their acknowledged sum; ids 51..100,
        written only after the kill was sent, reach only the new proxy and must be exact.
  * a table created while its statement is parked: the statement goes on once the cache
    sees the table (read again a second after it did not exist) and is answered OK.
  * the park timeout: a keyless rule on a table that does not exist: the statement waits
    about delayed_park_timeout (2 s here) and gets ERR 1235 naming the table.
    A SELECT pipelined behind a parked statement (one write, raw protocol) is answered after
    it, in order; a client that leaves while its statement is parked ends its session
    cleanly (the proxy, under ASan too, exits 0 at SIGTERM with no leak report).
  * /metrics counts the parked statements, their wait and the timeouts, SHOW STATS on the
    console too; its EXPLAIN REWRITE says a statement on the missing table would be parked.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports (one client port
kept across its restarts, /metrics, the console).
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
import rawproto_lib as raw  # noqa: E402

PORT, HTTP_PORT, ADMIN_PORT = t.free_port(), t.free_port(), t.free_port()
RULES_DIR = os.path.join(t.TMP, "coldstart_rules")
RULES = """
[delayed cs_staged]
table = test.cs_staged
columns = hits
flush_interval = 300ms

[delayed cs_mem]
table = test.cs_mem
columns = hits
mode = memory
flush_interval = 300ms

[delayed cs_late]
table = test.cs_late
columns = hits
mode = memory
flush_interval = 300ms

[delayed cs_nosuch]
table = test.cs_nosuch
columns = hits
mode = memory
"""
IDS = 100          # 1..50 before the kill, 51..100 after it
CLIENTS = 32
PHASE_S = 3.0      # seconds of traffic on each side of the kill
TABLES = ("cs_staged", "cs_staged_delayed", "cs_mem", "cs_late", "cs_nosuch")


def start_proxy():
    """A proxy on the test's one port (clients retry it across the restarts)."""
    return t.Proxy("coldstart_proxy_%d" % start_proxy.n, port=PORT, rules_dir=RULES_DIR,
                   own_conn=True,
                   options=[("delayed_park_timeout", "2s"),
                            ("http_listen", "127.0.0.1:%d" % HTTP_PORT),
                            ("admin_listen", "127.0.0.1:%d" % ADMIN_PORT),
                            ("admin_password", "adminpw")]).start()


start_proxy.n = 0


def setup():
    d = t.direct(autocommit=True)
    cur = d.cursor()
    for tbl in TABLES:
        cur.execute("DROP TABLE IF EXISTS %s" % tbl)
    for tbl in ("cs_staged", "cs_mem"):
        cur.execute("CREATE TABLE %s (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0) "
                    "ENGINE=InnoDB" % tbl)
        cur.execute("INSERT INTO %s (id) VALUES %s" % (
            tbl, ",".join("(%d)" % i for i in range(1, IDS + 1))))
    d.close()


class Load:
    """The clients' shared book: acknowledged and in-doubt sums per (table, id)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}
        self.doubt = {}
        self.refused = []
        self.after_kill = False
        self.stop = False
        self.sent = 0

    def add(self, book, key, k):
        with self.lock:
            book[key] = book.get(key, 0) + k


def client(load, n):
    conn = None
    i = 0
    while not load.stop:
        if conn is None:
            try:
                conn = t.connect(PORT, autocommit=True, connect_timeout=2)
            except (pymysql.err.OperationalError, OSError):
                time.sleep(0.002)  # a tight loop: the proxy is (re)starting
                continue
        i += 1
        tbl = "cs_staged" if (n + i) % 2 else "cs_mem"
        base = 51 if load.after_kill else 1
        key = (tbl, base + (n * 7 + i) % 50)
        k = 1 + (n + i) % 5
        try:
            conn.cursor().execute("UPDATE DELAYED %s SET hits = hits + %d WHERE id = %d"
                                  % (tbl, k, key[1]))
            load.add(load.acked, key, k)
            with load.lock:
                load.sent += 1
        except pymysql.err.OperationalError as e:
            if e.args[0] in (2006, 2013, 2003, 2055):  # the connection broke: in doubt
                load.add(load.doubt, key, k)
                try:
                    conn.close()
                except Exception:
                    pass
                conn = None
            else:
                with load.lock:
                    load.refused.append(str(e))
        except pymysql.err.MySQLError as e:
            with load.lock:
                load.refused.append(str(e))
    if conn:
        conn.close()


def earlier_deploy():
    """Starts and stops a proxy once: its flusher makes the staging table."""
    proxy = start_proxy()
    start_proxy.n += 1
    d = t.direct(autocommit=True)
    end = time.time() + 20
    while time.time() < end and not t.rows(
            d, "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'test' AND "
            "TABLE_NAME = 'cs_staged_delayed'"):
        time.sleep(0.05)
    d.close()
    proxy.stop(timeout=20)


def cold_start():
    load = Load()
    threads = [threading.Thread(target=client, args=(load, n)) for n in range(CLIENTS)]
    for th in threads:
        th.start()  # they spin connecting: the proxy is not there yet
    time.sleep(0.2)
    proxy = start_proxy()
    time.sleep(PHASE_S)
    proxy.kill9()
    load.after_kill = True
    t.log("proxy killed after %d statements; starting it again" % load.sent)
    start_proxy.n += 1
    proxy = start_proxy()
    time.sleep(PHASE_S)
    load.stop = True
    for th in threads:
        th.join()
    t.log("%d statements acknowledged, %d in doubt, %d refused"
          % (load.sent, len(load.doubt), len(load.refused)))
    t.eq("no UPDATE DELAYED was refused through the cold starts", [], load.refused[:5])
    t.check(load.sent > 1000, "the clients kept sending (%d statements)" % load.sent)
    t.eq("FLUSH DELAYED through the restarted proxy answers OK", None, t.flush_until_ok(PORT))
    d = t.direct(autocommit=True)
    got = {}
    for tbl in ("cs_staged", "cs_mem"):
        for id_, hits in t.rows(d, "SELECT id, hits FROM %s" % tbl):
            got[(tbl, id_)] = hits
    staged_left = t.rows(d, "SELECT COUNT(*) FROM cs_staged_delayed")[0][0]
    d.close()
    t.eq("the staging table is empty after FLUSH DELAYED", 0, staged_left)
    bad_staged, bad_mem, exact = [], [], 0
    for id_ in range(1, IDS + 1):
        key = ("cs_staged", id_)
        a, u, g = load.acked.get(key, 0), load.doubt.get(key, 0), got[key]
        if not (a <= g <= a + u) or (u == 0 and g != a):
            bad_staged.append((id_, a, u, g))
        exact += u == 0
        key = ("cs_mem", id_)
        a, u, g = load.acked.get(key, 0), load.doubt.get(key, 0), got[key]
        if (id_ > 50 and g != a) or (id_ <= 50 and not 0 <= g <= a + u):
            bad_mem.append((id_, a, u, g))
    t.eq("staged: every acknowledged increment applied exactly once (%d ids exact, the rest "
         "within their increments in doubt)" % exact, [], bad_staged)
    t.eq("memory: ids written after the kill exact, those before it at most their sum", [],
         bad_mem)
    t.log("statements parked by the restarted proxy: %d" % metric("myrewrite_delayed_parked_total"))
    return proxy


def late_table():
    """A table created (around the proxy) while its statement is parked."""
    out = []

    def run():
        c = t.connect(PORT, autocommit=True)
        t0 = time.time()
        try:
            c.cursor().execute("UPDATE DELAYED cs_late SET hits = hits + 5 WHERE id = 1")
            out.append(("ok", time.time() - t0))
        except pymysql.err.MySQLError as e:
            out.append((str(e), time.time() - t0))
        c.close()
    th = threading.Thread(target=run)
    th.start()
    time.sleep(0.7)
    d = t.direct(autocommit=True)
    d.cursor().execute("CREATE TABLE cs_late (id INT PRIMARY KEY, hits BIGINT NOT NULL "
                       "DEFAULT 0) ENGINE=InnoDB")
    d.cursor().execute("INSERT INTO cs_late (id) VALUES (1)")
    th.join()
    res, took = out[0]
    t.eq("a statement parked on a table not created yet is answered OK once it is", "ok", res)
    t.check(0.6 < took < 2.0, "... after it waited for the table (%.2f s)" % took)
    t.eq("FLUSH DELAYED", None, t.flush_until_ok(PORT))
    t.eq("... and its increment is in the table", ((5,),),
         t.rows(d, "SELECT hits FROM cs_late WHERE id = 1"))
    d.close()


def park_timeout():
    c = t.connect(PORT, autocommit=True)
    t0 = time.time()
    err = None
    try:
        c.cursor().execute("UPDATE DELAYED cs_nosuch SET hits = hits + 1 WHERE id = 1")
    except pymysql.err.MySQLError as e:
        err = e
    took = time.time() - t0
    t.check(err is not None and err.args[0] == 1235,
            "a statement on a table that does not exist gets ERR 1235", err)
    msg = str(err.args[1]) if err else ""
    t.check("could not be read in 2.000 s" in msg and "test.cs_nosuch does not exist" in msg,
            "... saying it waited delayed_park_timeout and that the table does not exist", msg)
    t.check(1.8 < took < 3.5, "... after about the timeout (%.2f s)" % took)
    t.eq("the session goes on after it", ((1,),), t.rows(c, "SELECT 1"))
    c.close()


def park_pipelined_and_gone():
    r = raw.Conn(PORT)
    t0 = time.time()
    r.sock.sendall(raw.frame(bytes([raw.COM_QUERY]) + b"UPDATE DELAYED cs_nosuch SET hits = "
                             b"hits + 1 WHERE id = 1", 0)[0] +
                   raw.frame(bytes([raw.COM_QUERY]) + b"SELECT 42", 0)[0])
    first = r.read_result(r._logged("parked"))
    took = time.time() - t0
    second = r.read_result(r._logged("pipelined"))
    t.check(first.kind == "err" and first.err[0] == 1235 and took > 1.8,
            "a parked statement with a SELECT pipelined behind it: its ERR first (%.2f s)"
            % took, first.err)
    t.check(second.kind != "err" and second.rows and b"42" in bytes(second.rows[0]),
            "... then the pipelined SELECT's rows", second.rows)
    r.close()
    gone = raw.Conn(PORT)
    gone.send_command(bytes([raw.COM_QUERY]) + b"UPDATE DELAYED cs_nosuch SET hits = hits + 1 "
                      b"WHERE id = 2")
    time.sleep(0.3)
    gone.close()  # while parked
    time.sleep(0.3)


def park_metrics():
    return t.metrics(HTTP_PORT, "myrewrite_delayed_park")


def metric(name):
    return int(park_metrics().get(name, 0))


def metrics():
    vals = park_metrics()
    t.check(vals.get("myrewrite_delayed_parked_total", 0) >= 2,
            "/metrics counts the parked statements", vals)
    t.eq("/metrics counts the timeouts", 2.0, vals.get("myrewrite_delayed_park_timeouts_total"))
    t.check(vals.get("myrewrite_delayed_park_wait_seconds_total", 0) >= 2.5,
            "/metrics sums their wait in seconds", vals)
    a = pymysql.connect(host=t.HOST, port=ADMIN_PORT, user="admin", password="adminpw")
    cur = a.cursor()
    cur.execute("SHOW STATS")
    stats = {r[0]: r[1] for r in cur.fetchall()}
    t.eq("SHOW STATS: delayed_park_timeouts", "2", str(stats.get("delayed_park_timeouts")))
    t.check(int(stats.get("delayed_parked", 0)) >= 3 and
            int(stats.get("delayed_park_wait_us", 0)) >= 2500000,
            "SHOW STATS: delayed_parked and delayed_park_wait_us", stats)
    cur.execute("EXPLAIN REWRITE 'UPDATE DELAYED test.cs_nosuch SET hits = hits + 1 WHERE "
                "id = 1'")
    text = "\n".join(r[0] for r in cur.fetchall())
    t.check("action: parked until the schema cache has the table" in text,
            "EXPLAIN REWRITE: the statement would be parked", text)
    a.close()


def main():
    if t.DIRECT_ONLY:
        print("skip: needs the proxy")
        sys.exit(77)
    t.write_rules(RULES_DIR, RULES)
    setup()
    earlier_deploy()
    proxy = cold_start()
    try:
        late_table()
        park_timeout()
        park_pipelined_and_gone()
        metrics()
    finally:
        proxy.stop(timeout=20, expect=0,
                   desc="the proxy exits 0 at SIGTERM (no leak report under ASan)")
        d = t.direct(autocommit=True)
        for tbl in TABLES:
            d.cursor().execute("DROP TABLE IF EXISTS %s" % tbl)
        d.close()
    t.done()


if __name__ == "__main__":
    main()
