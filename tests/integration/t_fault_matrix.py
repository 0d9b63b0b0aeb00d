#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Faults between the proxy and mariadbd: what the client sees, what survives.

Each group runs a proxy of its own whose backend address is a cutting relay
(tests/lib/faultrelay.py) in front of the test mariadbd, so the sessions' backend
connections and the proxy's own connections (flushers, queue release) all pass
through it. Timeouts are set low: backend_read_timeout = 2s, own_connection_timeout
= 1s, handshake_timeout = 3s. For every case: the client gets an error within a
bound, never a hang (a lost connection, 2013, where the server's side was cut
mid-command, as direct; ERR 1158 08S01 from the proxy during the login and when
backend_read_timeout ends a stalled answer); a second client works through the same proxy during
the fault and after it; the proxy stays up and exits 0 on SIGTERM.

  auth:      RST / FIN / stall of the HandshakeResponse toward the server
  result:    RST / FIN / stall after 200 KB of a 20 MB SELECT; the sessions' backend
             sockets carry TCP keepalive (ss -o)
  infile:    RST / FIN after 100 KB of a 2 MB LOAD DATA LOCAL
  staged:    the flusher's COMMIT cut before it reaches the server (RST) and its OK cut
             after (RST, and a stall): the sum equals the acknowledged UPDATE DELAYEDs,
             the staging table is empty, nothing applied twice
  memory:    the same for mode = memory, whose flusher cannot tell the two apart: the
             chunk is dropped and logged ("broke during COMMIT ... not retried"), so it is
             applied at most once: cut after COMMIT the sum is exact, cut before it the
             chunk's 100 increments are lost (rules/README.md's loss window), never doubled
  keyset:    RST and stall after 30 KB of a deep keyset page
  queue:     the release UPDATE of a disconnected claimer cut before and after it
             reaches the server: the claims are released (before: at the retry), and a
             retry does not take back rows that another client claimed meanwhile
Environment: MR_DIRECT_PORT, MR_BIN, MR_TMP (proxies and relays take free ports).
"""
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
from faultrelay import Fault, FaultRelay  # noqa: E402

OPTS = [("backend_read_timeout", "2s"), ("own_connection_timeout", "1s"),
        ("handshake_timeout", "3s"), ("connect_timeout", "2s"), ("shutdown_timeout", "3s")]
BOUND_S = 8  # an error must come within this; the longest timeout above is 3 s
# COM_QUERY "COMMIT" as a command of its own (sequence 0): a client's SET AUTOCOMMIT
# does not match it
COMMIT = b"\x07\x00\x00\x00\x03COMMIT"


class Group:
    def __init__(self, name, rules=None):
        self.relay = FaultRelay(t.DIRECT_PORT).start()
        self.proxy = t.Proxy("fm_" + name, backend_port=self.relay.port, rules=rules,
                             own_conn=rules is not None, options=OPTS).start()
        self.name = name

    def connect(self, **kw):
        return self.proxy.connect(autocommit=True, read_timeout=30, write_timeout=30, **kw)

    def second_client(self, when):
        try:
            c = self.connect()
            r = [tuple(x) for x in t.rows(c, "SELECT 41 + 1")]
            c.close()
            t.eq("%s: a second client works %s" % (self.name, when), [(42,)], r)
        except pymysql.MySQLError as e:
            t.not_ok("%s: a second client works %s" % (self.name, when), repr(e))

    def close(self):
        self.relay.stop()
        self.proxy.stop(timeout=20, expect=0, desc="%s: the proxy exits 0 on SIGTERM" % self.name)


def expect_error(desc, fn, codes=(1158, 2013)):
    """fn() must raise a pymysql error with one of codes within BOUND_S."""
    start = time.time()
    err = None
    try:
        fn()
    except pymysql.MySQLError as e:
        err = e
    secs = time.time() - start
    code = err.args[0] if err and err.args else None
    t.check(code in codes, "%s: the client gets an error (%s)" % (desc, err),
            "no error" if err is None else repr(err))
    t.check(secs < BOUND_S, "%s: within %d s (%.1f s)" % (desc, BOUND_S, secs))
    return err


def during_stall(g, fault, fn, desc):
    """Runs fn in a thread; once fault fired, a second client must work."""
    box = {}

    def run():
        box["err"] = expect_error(desc, fn)
    th = threading.Thread(target=run)
    th.start()
    if fault.fired.wait(BOUND_S):
        g.second_client("while a connection is stalled")
    th.join(BOUND_S + 5)
    t.check(not th.is_alive(), "%s: the client is not left hanging" % desc)


# ---- sessions: auth, result set, LOAD DATA LOCAL -------------------------------

def auth_cases():
    g = Group("auth")
    try:
        for action in ("rst", "fin", "stall"):
            f = g.relay.arm(Fault("c2s", action, packet=1, new_only=True))
            err = expect_error("auth %s" % action, lambda: g.connect().close(),
                               codes=(1158, 2013, 2006) if action != "stall" else (1043,))
            if err is not None and err.args[0] == 1158:
                t.check("authentication" in str(err), "auth %s: the ERR says it was during "
                        "authentication" % action, str(err))
            t.check(f.fired.is_set(), "auth %s: the fault fired" % action)
            g.second_client("after auth %s" % action)
    finally:
        g.close()


def keepalive_check(g):
    """backend_keepalive (30s by default): the sessions' backend sockets carry it."""
    c = g.connect()
    out = subprocess.run(["ss", "-tnoH", "state", "established", "( dport = :%d )"
                          % g.relay.port], capture_output=True, text=True).stdout
    c.close()
    lines = out.splitlines()
    t.check(lines and all("keepalive" in x for x in lines),
            "result: the proxy's backend sockets have TCP keepalive on", out)


def result_cases():
    g = Group("result")
    big = "SELECT seq, REPEAT('r', 1000) FROM seq_1_to_20000"
    keepalive_check(g)
    try:
        for action in ("rst", "fin", "stall"):
            c = g.connect()
            f = g.relay.arm(Fault("s2c", action, after_bytes=200000))

            def run(c=c):
                cur = c.cursor()
                cur.execute(big)
                cur.fetchall()
            if action == "stall":
                during_stall(g, f, run, "result stall")
            else:
                expect_error("result %s" % action, run)
            g.relay.disarm()
            c.close()
            g.second_client("after result %s" % action)
    finally:
        g.close()


def infile_cases():
    g = Group("infile")
    t.query("CREATE OR REPLACE TABLE %s.fm_infile (a INT, b VARCHAR(100))" % t.DB)
    fd, path = tempfile.mkstemp(dir=t.TMP, suffix=".tsv")
    with os.fdopen(fd, "w") as fh:
        for i in range(30000):
            fh.write("%d\t%s\n" % (i, "i" * 60))
    try:
        for action in ("rst", "fin"):
            # the mariadb CLI: pymysql's LOAD DATA LOCAL breaks on a reset of its own
            f = g.relay.arm(Fault("c2s", action, after_bytes=100000))
            start = time.time()
            r = subprocess.run(["mariadb", "--no-defaults", "--protocol=TCP", "-h", t.HOST,
                                "-P", str(g.proxy.port), "-u", t.USER, "-p" + t.PASSWORD,
                                "--local-infile=1", t.DB, "-e",
                                "LOAD DATA LOCAL INFILE '%s' INTO TABLE fm_infile" % path],
                               capture_output=True, text=True, timeout=BOUND_S + 20)
            secs = time.time() - start
            t.check(r.returncode != 0 and re.search(r"ERROR (1158|2013)", r.stderr),
                    "infile %s: the client gets an error (%s)" % (action, r.stderr.strip()))
            t.check(secs < BOUND_S, "infile %s: within %d s (%.1f s)" % (action, BOUND_S, secs))
            t.check(f.fired.is_set(), "infile %s: the fault fired mid-upload" % action)
            g.relay.disarm()
            g.second_client("after infile %s" % action)
    finally:
        os.remove(path)
        g.close()
        t.query("DROP TABLE IF EXISTS %s.fm_infile" % t.DB)


# ---- DELAYED, staged and memory ------------------------------------------------

def delayed_rule(name, table, memory):
    return """
[delayed %s]
table = %s.%s
key = id
columns = hits
flush_interval = 60s
%s""" % (name, t.DB, table, "mode = memory\n" if memory else "")


def flush_until(g, table, want):
    """FLUSH DELAYED through the proxy until the table sums to want (10 s)."""
    end = time.time() + 10
    got = None
    while time.time() < end:
        try:
            c = g.connect()
            c.cursor().execute("FLUSH DELAYED")
            c.close()
        except pymysql.MySQLError:
            pass
        got = t.query("SELECT SUM(hits) FROM %s.%s" % (t.DB, table))[0][0]
        if got == want:
            break
        time.sleep(0.3)
    return got


def log_count(g, text, at_least, timeout=5):
    """How often text is in the proxy's log, once it is there at_least times or after
    timeout seconds. The log thread writes a line after the event it tells of: a cut
    before the COMMIT leaves the sum as it was, so flush_until may return before the
    flusher's line is out."""
    end = time.time() + timeout
    while True:
        n = g.proxy.log_text().count(text)
        if n >= at_least or time.time() >= end:
            return n
        time.sleep(0.05)


def acked_updates(g, table, n):
    c = g.connect()
    cur = c.cursor()
    for i in range(n):
        cur.execute("UPDATE DELAYED %s SET hits = hits + 1 WHERE id = %d" % (table, i % 10 + 1))
    c.close()
    return n


def delayed_cases(kind, memory):
    table = "fm_" + kind
    t.query("CREATE OR REPLACE TABLE %s.%s (id INT PRIMARY KEY, hits INT NOT NULL)"
             % (t.DB, table))
    t.query("INSERT INTO %s.%s SELECT seq, 0 FROM %s.seq_1_to_10" % (t.DB, table, t.DB))
    g = Group(kind, rules=delayed_rule(table, table, memory))
    want = 0
    try:
        want += acked_updates(g, table, 1)  # a first round, so the next ones wait for FLUSH
        t.eq("%s: warm-up round" % kind, want, flush_until(g, table, want))
        cases = [("before", "rst"), ("after", "rst"), ("after", "stall")]
        acked = want
        for when, action in cases:
            desc = "%s COMMIT %s %s" % (kind, when, action)
            acked += acked_updates(g, table, 100)
            f = g.relay.arm(Fault("c2s", action, pattern=COMMIT, when=when))
            lost_before = g.proxy.log_text().count("broke during COMMIT")
            # memory mode cannot tell a COMMIT cut before the server from one cut after:
            # it drops the chunk (at most once, rules/README.md "memory mode"), so a cut before
            # loses the chunk's 100 increments; staged mode retries from the staging table
            if not memory or when == "after":
                want += 100
            start = time.time()
            got = flush_until(g, table, want)
            secs = time.time() - start
            t.check(f.fired.is_set(), "%s: the flusher's COMMIT was cut" % desc)
            t.check(secs < BOUND_S, "%s: flushed within %d s (%.1f s)" % (desc, BOUND_S, secs))
            t.eq("%s: the sum is %d (%d acknowledged), never applied twice" % (desc, want, acked),
                 want, got)
            if memory:
                t.eq("%s: the chunk is logged as dropped, not retried" % desc, lost_before + 1,
                     log_count(g, "broke during COMMIT", lost_before + 1))
            g.relay.disarm()
            g.relay.release()
            g.second_client("after %s" % desc)
        # the stalled connection is given up after own_connection_timeout, so the
        # next flush goes through on a new one within flush_until's 10 s
        acked += acked_updates(g, table, 50)
        want += 50
        start = time.time()
        t.eq("%s: after the stall the next flush goes through" % kind, want,
             flush_until(g, table, want))
        secs = time.time() - start
        t.check(secs < BOUND_S, "%s: within %d s (%.1f s)" % (kind, BOUND_S, secs))
        time.sleep(1.5)
        t.eq("%s: nothing applied late or twice" % kind, want,
             t.query("SELECT SUM(hits) FROM %s.%s" % (t.DB, table))[0][0])
        if not memory:
            left = t.query("SELECT COUNT(*) FROM %s.%s_delayed" % (t.DB, table))[0][0]
            t.eq("staged: the staging table is empty", 0, left)
    finally:
        g.close()
        t.query("DROP TABLE IF EXISTS %s.%s" % (t.DB, table))
        t.query("DROP TABLE IF EXISTS %s.%s_delayed" % (t.DB, table))


# ---- keyset page, queue release -----------------------------------------------

def keyset_cases():
    t.query("CREATE OR REPLACE TABLE %s.fm_items (id INT PRIMARY KEY, pad VARCHAR(200))"
             % t.DB)
    t.query("INSERT INTO %s.fm_items SELECT seq, REPEAT('k', 200) FROM %s.seq_1_to_20000"
             % (t.DB, t.DB))
    g = Group("keyset", rules="""
[paginate fm_items]
table = %s.fm_items
key = id
threshold = 100
strategy = keyset
""" % t.DB)
    try:
        for action in ("rst", "stall"):
            c = g.connect()
            f = g.relay.arm(Fault("s2c", action, after_bytes=30000))

            def run(c=c):
                cur = c.cursor()
                cur.execute("SELECT id, pad FROM fm_items ORDER BY id LIMIT 5000, 1000")
                cur.fetchall()
            if action == "stall":
                during_stall(g, f, run, "keyset stall")
            else:
                expect_error("keyset %s" % action, run)
            g.relay.disarm()
            c.close()
            c = g.connect()
            r = [tuple(x) for x in t.rows(c, "SELECT id FROM fm_items ORDER BY id LIMIT 5000, 3")]
            c.close()
            t.eq("keyset %s: the next deep page is right" % action, [(5001,), (5002,), (5003,)],
                 r)
    finally:
        g.close()
        t.query("DROP TABLE IF EXISTS %s.fm_items" % t.DB)


def queue_cases():
    t.query("CREATE OR REPLACE TABLE %s.fm_q (id INT PRIMARY KEY, status VARCHAR(10) NOT NULL"
             " DEFAULT 'fmfree', owner INT UNSIGNED NOT NULL DEFAULT 0, claimed_at DATETIME(6))"
             % t.DB)
    t.query("INSERT INTO %s.fm_q (id) SELECT seq FROM %s.seq_1_to_10" % (t.DB, t.DB))
    g = Group("queue", rules="""
[queue fm_q]
table = %s.fm_q
owner_column = owner
status_column = status
claimed_value = fmtaken
unclaimed_value = fmfree
claimed_at_column = claimed_at
timeout = 10m
""" % t.DB)
    claim = ("UPDATE fm_q SET status = 'fmtaken', owner = CONNECTION_ID(), claimed_at = NOW(6) "
             "WHERE owner = 0 AND status = 'fmfree' LIMIT 10")

    def free():
        return t.query("SELECT COUNT(*) FROM %s.fm_q WHERE status = 'fmfree' AND owner = 0"
                        % t.DB)[0][0]
    try:
        for when in ("before", "after"):
            a = g.connect()
            a.cursor().execute(claim)
            t.eq("queue %s: 10 rows claimed" % when, 0, free())
            f = g.relay.arm(Fault("c2s", "rst", pattern=b"'fmfree'", when=when))
            a.close()
            t.check(f.fired.wait(BOUND_S), "queue %s: the release statement was cut" % when)
            end = time.time() + 10
            while free() != 10 and time.time() < end:
                time.sleep(0.1)
            t.eq("queue %s: the claims are released" % when, 10, free())
            b = g.connect()
            b.cursor().execute(claim)
            bid = t.rows(b, "SELECT CONNECTION_ID()")[0][0]
            time.sleep(3)  # the release's retry after its reconnect, if any
            mine = t.query("SELECT COUNT(*) FROM %s.fm_q WHERE status = 'fmtaken'" % t.DB)[0][0]
            t.eq("queue %s: a later claimer's rows are not released by a retry" % when, 10, mine)
            b.close()
            end = time.time() + 10
            while free() != 10 and time.time() < end:
                time.sleep(0.1)
            t.eq("queue %s: its claims are released in turn (owner %s)" % (when, bid), 10, free())
            g.second_client("after queue %s" % when)
    finally:
        g.close()
        t.query("DROP TABLE IF EXISTS %s.fm_q" % t.DB)


def main():
    start = time.time()
    cases = {"auth": auth_cases, "result": result_cases, "infile": infile_cases,
             "staged": lambda: delayed_cases("staged", False),
             "memory": lambda: delayed_cases("memory", True), "keyset": keyset_cases,
             "queue": queue_cases}
    only = os.environ.get("FM_CASES")  # e.g. "staged memory", to run a few by hand
    for name, case in cases.items():
        if not only or name in only.split():
            case()
    t.log("fault matrix took %.0f s" % (time.time() - start))
    t.done()


if __name__ == "__main__":
    main()
