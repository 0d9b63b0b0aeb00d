#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""delayed_counters.py - hot counters with and without UPDATE DELAYED, through myrewrite.

Run by bench/delayed_counters.sh, which starts mariadbd and four proxies: one with a
delayed rule on test.counters (key id, column hits, flush_interval 1s), one with the same
rule and group_commit = yes, one with it in mode = memory, one with no rules.
Table: counters (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0), ids 1..1000, InnoDB.

For each number of hot rows H and each number of clients C, the modes one after the
other, each for SECONDS, with C worker processes (multiprocessing, not threads), every
statement on an id picked uniformly from 1..H, autocommit:

  direct   UPDATE counters SET hits = hits + 1 WHERE id = ?          to mariadbd
  proxy    the same statement through the proxy without rules
  delayed  UPDATE DELAYED counters SET hits = hits + 1 WHERE id = ?  through the rule proxy
  group    the same through the group-commit proxy (staged, one multi-row INSERT per batch)
  memory   the same through the memory-mode proxy

With --loadgen (the C program bench/delayed_load.c) the clients are connections driven by
--load-threads threads, one statement in flight on each; without it, one Python process per
client (pymysql), which tops out near 20,000 statements/s on its own here.

With the C load generator, --readers (8) more connections read the hot rows straight from
mariadbd during every run (SELECT hits FROM counters WHERE id = ?, each reader paced at one
read per --read-interval-us at most), and the table reports their p50 and p99 latency; for
each number of hot rows a run of the readers alone ("readers") comes first, the baseline of
the p99_x column.

incr/s counts acknowledged statements (OK packets) over the window, from the common start
to the last acknowledgement. The check compares the growth of SUM(hits), read on a direct
connection once the staging table is empty (staged, group) or after FLUSH DELAYED through the
memory proxy (memory), with the acknowledged increments.

Then the flush rate: N rows (key ids spread over the 1000 counters, delta +1 each) are
inserted straight into the staging table on a direct connection, in multi-row INSERTs inside
one transaction, so the flusher sees them all at once; the time from the COMMIT until the
staging table is empty is polled every 50 ms. A size is skipped when staging it is projected
to take more than 60 s from the previous size.
"""
import argparse
import multiprocessing as mp
import os
import random
import resource
import re
import subprocess
import sys
import time

import pymysql

TABLE = "counters"
STAGING = "counters_delayed"
KEYS = 1000
DDL = ("CREATE TABLE counters (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0) "
       "ENGINE=InnoDB")
MODES = [
    ("direct", "direct", "UPDATE counters SET hits = hits + 1 WHERE id = %d"),
    ("proxy", "plain", "UPDATE counters SET hits = hits + 1 WHERE id = %d"),
    ("delayed", "rule", "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = %d"),
    ("group", "group", "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = %d"),
    ("memory", "memory", "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = %d"),
]
# What the readers send, straight to mariadbd: a point read of one of the hot rows.
READ_SQL = "SELECT hits FROM counters WHERE id = %d"
DRAIN_TIMEOUT = 120.0
STAGE_LIMIT = 60.0
INSERT_BATCH = 5000


def connect(cfg, port, **kw):
    args = dict(host=cfg.host, port=port, user=cfg.user, password=cfg.password,
                database=cfg.db, charset="utf8mb4", autocommit=True, connect_timeout=30,
                read_timeout=600, write_timeout=600)
    args.update(kw)
    return pymysql.connect(**args)


def scalar(cur, sql):
    cur.execute(sql)
    return cur.fetchone()[0]


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0:3]


def cpu_ticks():
    """(busy, total) jiffies of all CPUs, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


def busy_pct(t0, t1):
    return 100.0 * (t1[0] - t0[0]) / max(1, t1[1] - t0[1])


def children_cpu_s():
    """CPU seconds (user + system) of this process's waited-for children: the load generator."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def pid_cpu_s(pid):
    """CPU seconds (user + system) of process pid so far, from /proc/PID/stat; 0 if unknown."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def proxy_pid(cfg, which):
    """The pid of the proxy a mode goes through (bench/delayed_counters.sh's pid files), or 0."""
    if which == "direct" or not cfg.pid_dir:
        return 0
    try:
        with open(os.path.join(cfg.pid_dir, "dbench_%s.pid" % which)) as f:
            return int(f.read())
    except (OSError, ValueError):
        return 0


def setup(cfg):
    d = connect(cfg, cfg.direct_port)
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS %s, %s" % (TABLE, STAGING))
    cur.execute(DDL)
    cur.execute("INSERT INTO counters (id) SELECT seq FROM seq_1_to_%d" % KEYS)
    d.close()


def total_hits(cur):
    return int(scalar(cur, "SELECT COALESCE(SUM(hits), 0) FROM counters"))


def wait_drained(cur, timeout, interval=0.05):
    """Seconds until the staging table holds no row, or None after timeout."""
    t0 = time.monotonic()
    while True:
        cur.execute("SELECT 1 FROM %s LIMIT 1" % STAGING)
        if cur.fetchone() is None:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            return None
        time.sleep(interval)


# ---- worker processes ----------------------------------------------------------------

def worker(cfg, port, sql, hot, seed, ready, go, start_at, results):
    counts = {"acks": 0, "errors": 0, "msgs": [], "last": 0.0}
    rnd = random.Random(seed)
    try:
        c = connect(cfg, port)
        cur = c.cursor()
    except pymysql.err.MySQLError as e:
        counts["errors"] += 1
        counts["msgs"].append("connect: %s" % (e,))
        ready.put(1)
        results.put(counts)
        return
    ready.put(1)
    go.wait()
    end = start_at.value + cfg.seconds
    while time.time() < start_at.value:
        time.sleep(0.001)
    while time.time() < end:
        try:
            cur.execute(sql % rnd.randint(1, hot))
            counts["acks"] += 1
            counts["last"] = time.time()
        except pymysql.err.MySQLError as e:
            counts["errors"] += 1
            if len(counts["msgs"]) < 3:
                counts["msgs"].append("%s" % (e,))
            if isinstance(e, pymysql.err.OperationalError) and e.args and \
                    e.args[0] in (2006, 2013, 2014):
                try:
                    c.close()
                except Exception:
                    pass
                try:
                    c = connect(cfg, port)
                    cur = c.cursor()
                except pymysql.err.MySQLError:
                    time.sleep(0.05)
    try:
        c.close()
    except Exception:
        pass
    results.put(counts)


def run_cell_c(cfg, port, sql, hot, clients):
    """The C load generator: clients connections over cfg.load_threads threads, and
    cfg.readers paced point readers on mariadbd. Returns (acks, errors, messages, elapsed,
    reads) with reads a dict of the readers' figures (empty without readers)."""
    threads = min(cfg.load_threads, clients)
    argv = [cfg.loadgen, cfg.host, str(port), cfg.user, cfg.password, cfg.db, str(clients),
            str(threads), str(cfg.seconds), str(hot), sql]
    if cfg.readers:
        argv += [str(cfg.readers), str(cfg.direct_port), str(cfg.read_interval_us), READ_SQL]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=cfg.seconds + 300)
    line = out.stdout.strip()
    if out.returncode != 0 or not line.startswith("acks="):
        return 0, 1, ["load generator: %s %s" % (line, out.stderr.strip()[:200])], \
            cfg.seconds, {}
    head, _, first_error = line.partition(" first_error=")
    f = dict(kv.split("=", 1) for kv in head.split())
    msgs = [first_error] if first_error else []
    reads = {k: f[k] for k in ("reads", "read_errors", "read_p50_us", "read_p99_us")
             if k in f and cfg.readers}
    return int(f["acks"]), int(f["errors"]), msgs, float(f["elapsed"]), reads


def run_cell_sysbench(cfg, port, sql, hot, clients):
    """sysbench with bench/delayed_counters.lua: clients threads, one blocking connection
    and one plain-text statement in flight each. Returns (acks, errors, messages, elapsed,
    reads) like run_cell_c (sysbench has no readers: reads is empty)."""
    lua = os.path.join(os.path.dirname(os.path.abspath(__file__)), "delayed_counters.lua")
    argv = ["sysbench", lua, "--db-driver=mysql", "--mysql-host=" + cfg.host,
            "--mysql-port=%d" % port, "--mysql-user=" + cfg.user,
            "--mysql-password=" + cfg.password, "--mysql-db=" + cfg.db,
            "--mysql-ssl=off", "--threads=%d" % clients, "--time=%d" % round(cfg.seconds),
            "--events=0", "--report-interval=0", "--rand-type=uniform",
            "--hot=%d" % hot, "--stmt=" + sql, "run"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=cfg.seconds + 300)
    events = re.search(r"total number of events:\s+(\d+)", out.stdout)
    elapsed = re.search(r"total time:\s+([\d.]+)s", out.stdout)
    if out.returncode != 0 or not events or not elapsed:
        tail = (out.stdout + out.stderr).strip().splitlines()[-3:]
        return 0, 1, ["sysbench: %s" % " | ".join(tail)], cfg.seconds, {}
    return int(events.group(1)), 0, [], float(elapsed.group(1)), {}


def run_cell(cfg, port, sql, hot, clients):
    if cfg.driver == "sysbench":
        return run_cell_sysbench(cfg, port, sql, hot, clients)
    if cfg.loadgen:
        return run_cell_c(cfg, port, sql, hot, clients)
    ctx = mp.get_context("fork")
    ready, results = ctx.Queue(), ctx.Queue()
    go = ctx.Event()
    start_at = ctx.Value("d", 0.0)
    procs = [ctx.Process(target=worker,
                         args=(cfg, port, sql, hot, 1000 * hot + i, ready, go, start_at,
                               results))
             for i in range(clients)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=120)
    start_at.value = time.time() + 0.2
    go.set()
    got = [results.get(timeout=cfg.seconds + 300) for _ in procs]
    for p in procs:
        p.join()
    acks = sum(g["acks"] for g in got)
    errors = sum(g["errors"] for g in got)
    msgs = [m for g in got for m in g["msgs"]][:3]
    last = max([g["last"] for g in got] + [start_at.value + cfg.seconds])
    elapsed = last - start_at.value
    return acks, errors, msgs, elapsed, {}


def reads_cols(reads, base_p99):
    """The three reader columns of a row: p50, p99, p99 over the no-writer p99."""
    if not reads or reads.get("read_p99_us", "-") == "-":
        return "%8s %8s %6s" % ("-", "-", "-")
    p99 = int(reads["read_p99_us"])
    ratio = "%.2f" % (p99 / base_p99) if base_p99 else "-"
    errs = int(reads.get("read_errors", 0))
    return "%8s %8d %6s%s" % (reads["read_p50_us"], p99, ratio,
                             "  (%d read errors)" % errs if errs else "")


def reader_baseline(cfg, hot):
    """The readers alone for cfg.seconds (no writer): prints its row, returns its p99."""
    if not cfg.loadgen:
        return None
    _, errors, msgs, _, reads = run_cell_c(cfg, cfg.direct_port, READ_SQL, hot, 0)
    print("%4d %7d  %-8s %11s %7s %7d %9s  %-8s %5s %5s %s"
          % (hot, 0, "readers", "-", "-", errors, "-", "-", loadavg()[0], "-",
             reads_cols(reads, int(reads["read_p99_us"]) if reads.get("read_p99_us", "-")
                        != "-" else None)), flush=True)
    for m in msgs:
        print("#   error: %s" % m)
    return int(reads["read_p99_us"]) if reads.get("read_p99_us", "-") != "-" else None


def flush_memory(cfg):
    """FLUSH DELAYED through the memory proxy; its duration in seconds (None on error)."""
    t0 = time.monotonic()
    try:
        m = connect(cfg, cfg.memory_port)
        m.cursor().execute("FLUSH DELAYED counters")
        m.close()
    except pymysql.err.MySQLError as e:
        print("#   FLUSH DELAYED failed: %s" % (e,))
        return None
    return time.monotonic() - t0


def counters_part(cfg, d):
    cur = d.cursor()
    ports = {"direct": cfg.direct_port, "plain": cfg.plain_port, "rule": cfg.rule_port,
             "memory": cfg.memory_port, "group": cfg.group_port}
    print("# %g s per run; clients %s; hot rows %s; load average at start %s"
          % (cfg.seconds, cfg.clients, cfg.hot, " ".join(loadavg())))
    print("# clients: %s" % (
        "sysbench (bench/delayed_counters.lua), one thread and blocking connection each, "
        "plain-text statements" if cfg.driver == "sysbench"
        else "C load generator, %d threads, one statement in flight per connection"
        % cfg.load_threads if cfg.loadgen else "one Python process (pymysql) each"))
    if cfg.readers:
        print("# readers: %d connections to mariadbd, each sending %s (an id among the hot "
              "rows) at most every %d us, during every run" % (cfg.readers, READ_SQL,
                                                               cfg.read_interval_us))
    print("%4s %7s  %-8s %11s %7s %7s %9s  %-8s %5s %5s %8s %8s %6s %6s %6s %6s"
          % ("hot", "clients", "mode", "incr/s", "vs_a", "errors", "drain_s", "check", "load1",
             "cpu%", "rd_p50us", "rd_p99us", "p99_x", "gen_us", "db_us", "mr_us"))
    all_ok = True
    for hot in [int(h) for h in cfg.hot.split()]:
        base_p99 = reader_baseline(cfg, hot) if cfg.readers else None
        for clients in [int(c) for c in cfg.clients.split()]:
            base = None
            for name, which, sql in [m for m in MODES if m[0] in cfg.modes.split()]:
                before = total_hits(cur)
                c0 = cpu_ticks()
                mr_pid = proxy_pid(cfg, which)
                g0, d0, m0 = children_cpu_s(), pid_cpu_s(cfg.db_pid), pid_cpu_s(mr_pid)
                acks, errors, msgs, elapsed, reads = run_cell(cfg, ports[which], sql, hot,
                                                              clients)
                cpu = busy_pct(c0, cpu_ticks())
                per = 1e6 / acks if acks else 0.0
                gen_us = (children_cpu_s() - g0) * per
                db_us = (pid_cpu_s(cfg.db_pid) - d0) * per
                mr_us = (pid_cpu_s(mr_pid) - m0) * per if mr_pid else None
                load1 = loadavg()[0]
                if which in ("rule", "group"):
                    drain = wait_drained(cur, DRAIN_TIMEOUT)
                elif which == "memory":
                    drain = flush_memory(cfg)
                else:
                    drain = 0.0
                grown = total_hits(cur) - before
                ok = drain is not None and grown == acks
                all_ok = all_ok and ok
                check = "OK" if ok else "MISMATCH"
                rate = acks / elapsed if elapsed > 0 else 0.0
                if base is None:
                    base = rate
                print("%4d %7d  %-8s %11.0f %7.2f %7d %9s  %-8s %5s %5.0f %s %6.1f %6.1f %6s"
                      % (hot, clients, name, rate, rate / base if base else 0.0, errors,
                         "-" if which not in ("rule", "group", "memory") else
                         ("%.2f" % drain if drain is not None else "timeout"),
                         check, load1, cpu, reads_cols(reads, base_p99), gen_us, db_us,
                         "-" if mr_us is None else "%.1f" % mr_us),
                      flush=True)
                if not ok:
                    print("#   acknowledged %d, SUM(hits) grew by %d" % (acks, grown))
                for m in msgs:
                    print("#   error: %s" % m)
    print("# drain_s: seconds from the end of the delayed (or group) run until the staging "
          "table was empty (flush_interval 1s);")
    print("#   memory: how long FLUSH DELAYED through the memory proxy took after the run")
    if cfg.readers:
        print("# rd_p50us / rd_p99us: the readers' median and 99th percentile latency in us "
              "(send to last row);")
        print("#   p99_x: rd_p99us / the p99 of the 'readers' run (the same readers, no "
              "writer)")
    print("# gen_us / db_us: CPU time (user + system) per acknowledged statement of the load "
          "generator (readers included)")
    print("#   and of mariadbd (its flushes of earlier runs included), in us; mr_us: of the proxy "
          "the run went through")
    print("# load1: 1-minute load average read after the run (it lags and includes earlier "
          "runs);")
    print("#   cpu%%: busy share of all %d CPUs during the run (clients, proxies, mariadbd and "
          "anything else)" % os.cpu_count())
    return all_ok


# ---- flush rate ------------------------------------------------------------------------

def staging_columns(cur):
    cur.execute("SELECT COLUMN_NAME, IS_NULLABLE, COLUMN_DEFAULT, EXTRA "
                "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() "
                "AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION", (STAGING,))
    return cur.fetchall()


def stage(cfg, n):
    """Inserts n staging rows in one transaction; returns (seconds to COMMIT, last seq)."""
    s = connect(cfg, cfg.direct_port, autocommit=False)
    cur = s.cursor()
    t0 = time.monotonic()
    done = 0
    while done < n:
        k = min(INSERT_BATCH, n - done)
        values = ",".join("(%d,1,0)" % ((done + i) % KEYS + 1) for i in range(k))
        cur.execute("INSERT INTO %s (id, hits, op) VALUES %s" % (STAGING, values))
        done += k
    s.commit()
    took = time.monotonic() - t0
    last = scalar(cur, "SELECT MAX(seq) FROM %s" % STAGING)
    s.commit()
    s.close()
    return took, last


def watch_flush(cur, last, timeout, interval=0.05):
    """Polls MIN(seq) of the staging table from the COMMIT on. Returns (seconds until the
    first chunk was gone, rows left then, seconds until empty), None where not reached."""
    t0 = time.monotonic()
    first_min = None
    first = left = None
    while True:
        m = scalar(cur, "SELECT MIN(seq) FROM %s" % STAGING)
        now = time.monotonic() - t0
        if m is None:
            if first is None:
                first, left = now, 0
            return first, left, now
        if first_min is None:
            first_min = m
        elif first is None and m != first_min:
            first, left = now, int(last) - int(m) + 1
        if now > timeout:
            return first, left, None
        time.sleep(interval)


def flush_part(cfg, d):
    cur = d.cursor()
    print()
    print("# staging table, as the proxy created it:")
    cur.execute("SHOW CREATE TABLE %s" % STAGING)
    for line in cur.fetchone()[1].splitlines():
        print("#   " + line)
    cols = {r[0]: r for r in staging_columns(cur)}
    for need in ("id", "hits", "op"):
        if need not in cols:
            print("# staging table has no column %s; flush rate not measured" % need)
            return False
    left = [c for c, nullable, default, extra in cols.values()
            if c not in ("id", "hits", "op") and nullable == "NO" and default is None
            and "auto_increment" not in extra.lower()]
    if left:
        print("# staging columns %s need values; flush rate not measured" % ", ".join(left))
        return False
    print("# rows are staged as INSERT INTO %s (id, hits, op) VALUES (k, 1, 0), ... with %d "
          "rows per statement, keys 1..%d round robin, one transaction" % (STAGING,
                                                                          INSERT_BATCH, KEYS))
    print("%9s %9s %10s %8s %9s %11s %11s  %-8s %5s"
          % ("rows", "stage_s", "stage_r/s", "start_s", "flush_s", "flush_r/s", "steady_r/s",
             "check", "load1"))
    all_ok = True
    prev = None
    for n in [int(x) for x in cfg.flush_rows.split()]:
        if prev is not None:
            projected = prev[1] * n / prev[0]
            if projected > STAGE_LIMIT:
                print("%9d   skipped: staging projected at %.0f s (> %.0f s)"
                      % (n, projected, STAGE_LIMIT))
                continue
        if wait_drained(cur, DRAIN_TIMEOUT) is None:
            print("# staging table not empty before the run; stopping")
            return False
        before = total_hits(cur)
        took, last = stage(cfg, n)
        first, left, flush = watch_flush(cur, last, max(DRAIN_TIMEOUT, n / 1000.0))
        steady = "-"
        if flush is not None and first is not None and left and flush > first:
            steady = "%.0f" % (left / (flush - first))
        load1 = loadavg()[0]
        grown = total_hits(cur) - before
        ok = flush is not None and grown == n
        all_ok = all_ok and ok
        print("%9d %9.2f %10.0f %8s %9s %11s %11s  %-8s %5s"
              % (n, took, n / took, "-" if first is None else "%.2f" % first,
                 "timeout" if flush is None else "%.2f" % flush,
                 "-" if not flush else "%.0f" % (n / flush), steady,
                 "OK" if ok else "MISMATCH", load1), flush=True)
        if not ok:
            print("#   staged %d, SUM(hits) grew by %d" % (n, grown))
        prev = (n, took)
    print("# flush_s: from the COMMIT of the staging transaction until the staging table was "
          "empty, polled every 50 ms;")
    print("#   it includes up to one flush_interval (1s) before the flusher's next round.")
    print("# start_s: from the COMMIT until the first chunk (flush_rows, default 10000) was "
          "gone;")
    print("#   steady_r/s: rows left at that moment / (flush_s - start_s), the rate once "
          "flushing.")
    return all_ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--clients", default="32 128")
    ap.add_argument("--hot", default="1 10")
    ap.add_argument("--flush-rows", default="100000 1000000")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--direct-port", type=int, default=23346)
    ap.add_argument("--rule-port", type=int, default=26073)
    ap.add_argument("--plain-port", type=int, default=26074)
    ap.add_argument("--memory-port", type=int, default=26075)
    ap.add_argument("--group-port", type=int, default=26076)
    ap.add_argument("--loadgen", default="", help="the C load generator (delayed_load)")
    ap.add_argument("--load-threads", type=int, default=2)
    ap.add_argument("--driver", default="c", choices=["c", "python", "sysbench"])
    ap.add_argument("--modes", default="direct proxy delayed group memory")
    ap.add_argument("--readers", type=int, default=8,
                    help="point readers on mariadbd during every run (C load generator only)")
    ap.add_argument("--read-interval-us", type=int, default=2000,
                    help="each reader sends at most one read per this many microseconds")
    ap.add_argument("--user", default="app")
    ap.add_argument("--password", default="apppw")
    ap.add_argument("--db", default="test")
    ap.add_argument("--db-pid", type=int, default=0, help="mariadbd's pid, for db_us")
    ap.add_argument("--pid-dir", default="", help="where the proxies' pid files are, for mr_us")
    ap.add_argument("--setup-only", action="store_true",
                    help="create the counters table and exit")
    cfg = ap.parse_args()
    if cfg.setup_only:
        setup(cfg)
        return 0
    if not cfg.loadgen or cfg.driver == "sysbench":
        cfg.readers = 0  # the readers are threads of the C load generator
    d = connect(cfg, cfg.direct_port)
    # The rule proxy's flusher creates the staging table; give it a moment after start.
    cur = d.cursor()
    for _ in range(100):
        if scalar(cur, "SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                       "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '%s'" % STAGING):
            break
        time.sleep(0.1)
    else:
        print("# the proxy did not create %s within 10 s" % STAGING)
        return 1
    t0 = time.monotonic()
    ok = counters_part(cfg, d)
    ok = flush_part(cfg, d) and ok
    print("# load average at end %s; total %.0f s" % (" ".join(loadavg()),
                                                      time.monotonic() - t0))
    d.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
