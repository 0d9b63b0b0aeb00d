#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""queue_claims.py - three ways to claim rows of a queue table, through myrewrite.

Run by bench/queue_claims.sh, which starts mariadbd and two proxies: one with a
queue rule on test.q (skip_locked = yes, release on disconnect on), one with no
rules at all. Worker processes (multiprocessing, not threads) claim batches
from the same freshly built 100,000-row table, one mode after the other:

  update_then_select  through the rule proxy:
                      UPDATE q SET status='claimed', owner=CONNECTION_ID(), ... LIMIT 10
                      (autocommit); SELECT id ... WHERE owner=CONNECTION_ID() AND
                      status='claimed'; UPDATE q SET status='sent' WHERE id IN (...)
  for_update          through the proxy WITHOUT rules, so nothing is rewritten:
                      BEGIN; SELECT id FROM q WHERE status='unsent' ORDER BY id
                      LIMIT 10 FOR UPDATE; UPDATE ... status='sent'; COMMIT
  skip_locked         the same statements through the rule proxy, which sends the
                      SELECT as ... FOR UPDATE SKIP LOCKED

The throughput is counted on the server: rows that became 'sent' between the
start and the end of the window, read on a direct connection. Errors
(deadlock 1213, lock wait timeout 1205, others) are counted by the workers.

Then the release latency: a worker claims a batch through the rule proxy and
is killed with SIGKILL; the time from the kill until its rows are 'unsent'
with owner 0 again is polled every 5 ms on a direct connection.
"""
import argparse
import multiprocessing as mp
import os
import queue as queue_mod
import re
import signal
import statistics
import sys
import time

import pymysql

BATCH = 10
ER_LOCK_WAIT_TIMEOUT = 1205
ER_LOCK_DEADLOCK = 1213

CLAIM = ("UPDATE q SET status='claimed', owner=CONNECTION_ID(), claimed_at=NOW(6) "
         "WHERE owner=0 AND status='unsent' LIMIT %d" % BATCH)
MINE = "SELECT id FROM q WHERE owner=CONNECTION_ID() AND status='claimed'"
SEND_MINE = "UPDATE q SET status='sent' WHERE id IN (%s) AND owner=CONNECTION_ID()"
SELECT_FU = "SELECT id FROM q WHERE status='unsent' ORDER BY id LIMIT %d FOR UPDATE" % BATCH
SEND_LOCKED = "UPDATE q SET status='sent' WHERE id IN (%s)"

DDL = """CREATE TABLE %s (
    id INT UNSIGNED NOT NULL PRIMARY KEY,
    status ENUM('unsent','claimed','sent') NOT NULL DEFAULT 'unsent',
    owner INT UNSIGNED NOT NULL DEFAULT 0,
    claimed_at DATETIME(6) NULL,
    payload VARCHAR(100),
    KEY owner_status (owner, status),
    KEY status (status)
) ENGINE=InnoDB"""


def connect(cfg, port, **kw):
    args = dict(host=cfg.host, port=port, user=cfg.user, password=cfg.password,
                database=cfg.db, charset="utf8mb4", autocommit=True, connect_timeout=10,
                read_timeout=300, write_timeout=300)
    args.update(kw)
    return pymysql.connect(**args)


def scalar(cur, sql, params=None):
    cur.execute(sql, params)
    return cur.fetchone()[0]


def id_list(ids):
    return ",".join(str(int(i)) for i in ids)


# ---- the table ---------------------------------------------------------------------

def reset_table(d, rows):
    """A new, full table swapped in for the old one in one RENAME, so that q
    always exists for the proxy's reaper."""
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS q_new, q_old")
    cur.execute(DDL % "q_new")
    # The SEQUENCE engine's seq_1_to_N: one statement, no client-side row building.
    cur.execute("INSERT INTO q_new (id, payload) "
                "SELECT seq, CONCAT('message ', seq, ' to someone') FROM seq_1_to_%d" % rows)
    cur.execute("ANALYZE TABLE q_new")
    cur.fetchall()
    if scalar(cur, "SELECT COUNT(*) FROM information_schema.TABLES "
                   "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'q'"):
        cur.execute("RENAME TABLE q TO q_old, q_new TO q")
        cur.execute("DROP TABLE q_old")
    else:
        cur.execute("RENAME TABLE q_new TO q")


# ---- worker processes --------------------------------------------------------------

def new_counts():
    return {"batches": 0, "rows": 0, "empty": 0, "deadlock": 0, "lock_wait_timeout": 0,
            "other": 0, "other_msgs": []}


def note_error(counts, e):
    code = e.args[0] if e.args else None
    if code == ER_LOCK_DEADLOCK:
        counts["deadlock"] += 1
    elif code == ER_LOCK_WAIT_TIMEOUT:
        counts["lock_wait_timeout"] += 1
    else:
        counts["other"] += 1
        if len(counts["other_msgs"]) < 3:
            counts["other_msgs"].append("%s" % (e,))


def rollback(cur):
    try:
        cur.execute("ROLLBACK")
    except pymysql.err.MySQLError:
        pass


def step_update_then_select(cur, counts):
    cur.execute(CLAIM)
    cur.execute(MINE)  # also picks up rows left claimed by an earlier failed step
    ids = [r[0] for r in cur.fetchall()]
    if not ids:
        counts["empty"] += 1
        time.sleep(0.01)
        return
    cur.execute(SEND_MINE % id_list(ids))
    counts["batches"] += 1
    counts["rows"] += cur.rowcount


def step_for_update(cur, counts):
    cur.execute("BEGIN")
    cur.execute(SELECT_FU)
    ids = [r[0] for r in cur.fetchall()]
    if ids:
        cur.execute(SEND_LOCKED % id_list(ids))
        n = cur.rowcount
    cur.execute("COMMIT")
    if not ids:
        counts["empty"] += 1
        time.sleep(0.01)
        return
    counts["batches"] += 1
    counts["rows"] += n


STEPS = {"update_then_select": step_update_then_select,
         "for_update": step_for_update,
         "skip_locked": step_for_update}


def worker(cfg, mode, port, ready_q, start, deadline, result_q):
    counts = new_counts()
    try:
        c = connect(cfg, port)
        cur = c.cursor()
        conn_id = scalar(cur, "SELECT CONNECTION_ID()")
    except pymysql.err.MySQLError as e:
        ready_q.put(("failed", str(e)))
        return
    ready_q.put(("ready", conn_id))
    start.wait()
    end = deadline.value
    step = STEPS[mode]
    while time.monotonic() < end:
        try:
            step(cur, counts)
        except pymysql.err.OperationalError as e:
            note_error(counts, e)
            if e.args and e.args[0] in (ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT):
                rollback(cur)
            else:
                break  # the connection is probably gone
        except pymysql.err.MySQLError as e:
            note_error(counts, e)
            rollback(cur)
    result_q.put(counts)
    try:
        c.close()
    except pymysql.err.MySQLError:
        pass


def wait_gone(d, conn_ids, timeout=30.0):
    """Until none of these backend connections is in the processlist."""
    if not conn_ids:
        return True
    cur = d.cursor()
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        left = scalar(cur, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN (%s)"
                      % id_list(conn_ids))
        if left == 0:
            return True
        time.sleep(0.05)
    return False


def sample_trx(cur):
    """(InnoDB transactions in LOCK WAIT, mean row locks held per open transaction) now."""
    cur.execute("SELECT COALESCE(SUM(trx_state = 'LOCK WAIT'), 0), "
                "COALESCE(AVG(trx_rows_locked), 0) FROM information_schema.INNODB_TRX")
    n_wait, rows_locked = cur.fetchone()
    return int(n_wait), float(rows_locked)


def run_mode(cfg, ctx, d, mode, port):
    ready_q, result_q = ctx.Queue(), ctx.Queue()
    start = ctx.Event()
    deadline = ctx.Value("d", 0.0)
    procs = [ctx.Process(target=worker, args=(cfg, mode, port, ready_q, start, deadline, result_q),
                         daemon=True)
             for _ in range(cfg.workers)]
    for p in procs:
        p.start()
    conn_ids, failed = [], []
    for _ in procs:
        try:
            kind, val = ready_q.get(timeout=60)
        except queue_mod.Empty:
            failed.append("no answer within 60 s")
            break
        (conn_ids if kind == "ready" else failed).append(val)
    cur = d.cursor()
    if failed:
        for p in procs:
            p.kill()
        raise SystemExit("%s: %d worker(s) could not start: %s" % (mode, len(failed), failed[:3]))

    c0 = scalar(cur, "SELECT COUNT(*) FROM q WHERE status='sent'")
    t0 = time.monotonic()
    deadline.value = t0 + cfg.seconds
    start.set()
    waiting, locked = [], []
    while True:
        left = deadline.value - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(0.5, left))
        if deadline.value - time.monotonic() > 0.1:
            n_wait, rows_locked = sample_trx(cur)
            waiting.append(n_wait)
            locked.append(rows_locked)
    t1 = time.monotonic()  # the count's read view opens when the statement starts
    c1 = scalar(cur, "SELECT COUNT(*) FROM q WHERE status='sent'")

    results = []
    for _ in procs:
        try:
            results.append(result_q.get(timeout=60))
        except queue_mod.Empty:
            break
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.kill()
            p.join()
    unsent = scalar(cur, "SELECT COUNT(*) FROM q WHERE status='unsent'")
    # Let the proxy finish with the sessions that just ended (its release
    # statements touch q) before the table is dropped and built again.
    wait_gone(d, conn_ids)
    time.sleep(0.3)

    total = new_counts()
    for r in results:
        for k, v in r.items():
            total[k] = total[k] + v
    return {"mode": mode, "port": port, "sent": c1 - c0, "secs": t1 - t0,
            "waiting": statistics.mean(waiting) if waiting else 0.0,
            "locked": statistics.mean(locked) if locked else 0.0,
            "rate": (c1 - c0) / (t1 - t0), "reported": len(results), "unsent_left": unsent,
            **total}


# ---- the rewrite, as the server saw it ----------------------------------------------

def probe_select(cfg, port):
    c = connect(cfg, port)
    cur = c.cursor()
    conn_id = scalar(cur, "SELECT CONNECTION_ID()")
    cur.execute("BEGIN")
    cur.execute(SELECT_FU)
    cur.fetchall()
    cur.execute("ROLLBACK")
    c.close()
    return conn_id


def show_rewrite(cfg, d):
    """Turns the general log on for two probe statements and prints what
    mariadbd received from each proxy. True if only the rule proxy added
    SKIP LOCKED."""
    cur = d.cursor()
    old_output = scalar(cur, "SELECT @@GLOBAL.log_output")
    old_on = scalar(cur, "SELECT @@GLOBAL.general_log")
    cur.execute("SET GLOBAL log_output = 'TABLE'")
    cur.execute("SET GLOBAL general_log = ON")
    try:
        with_rule = probe_select(cfg, cfg.rule_port)
        without = probe_select(cfg, cfg.plain_port)
    finally:
        cur.execute("SET GLOBAL general_log = %s" % ("ON" if old_on else "OFF"))
        cur.execute("SET GLOBAL log_output = %s", (old_output,))
    seen = {}
    cur.execute("SELECT thread_id, CONVERT(argument USING utf8mb4) FROM mysql.general_log "
                "WHERE thread_id IN (%s, %s) AND command_type = 'Query' "
                "AND argument LIKE 'SELECT id FROM q %%'", (with_rule, without))
    for tid, arg in cur.fetchall():
        seen[tid] = arg
    if not old_on:
        cur.execute("TRUNCATE TABLE mysql.general_log")
    print("rewrite check (mariadbd general_log: the text the server received):")
    print("  client sent          : %s" % SELECT_FU)
    print("  via :%d (queue rule), backend conn %d: %s"
          % (cfg.rule_port, with_rule, seen.get(with_rule, "(not found)")))
    print("  via :%d (no rules),   backend conn %d: %s"
          % (cfg.plain_port, without, seen.get(without, "(not found)")))
    return (seen.get(with_rule, "").rstrip().endswith("FOR UPDATE SKIP LOCKED")
            and seen.get(without, "").rstrip().endswith("FOR UPDATE"))


# ---- release latency ------------------------------------------------------------------

def victim(cfg, pipe):
    c = connect(cfg, cfg.rule_port)
    cur = c.cursor()
    conn_id = scalar(cur, "SELECT CONNECTION_ID()")
    cur.execute(CLAIM)
    cur.execute(MINE)
    pipe.send((conn_id, [r[0] for r in cur.fetchall()]))
    time.sleep(600)


def release_trial(cfg, ctx, d):
    ours, theirs = ctx.Pipe()
    p = ctx.Process(target=victim, args=(cfg, theirs), daemon=True)
    p.start()
    if not ours.poll(30):
        p.kill()
        p.join()
        return None
    conn_id, ids = ours.recv()
    cur = d.cursor()
    held = scalar(cur, "SELECT COUNT(*) FROM q WHERE id IN (%s) AND owner=%%s AND status='claimed'"
                  % id_list(ids), (conn_id,)) if ids else 0
    if not ids or held != len(ids):
        p.kill()
        p.join()
        return None
    back_sql = ("SELECT COUNT(*) FROM q WHERE id IN (%s) AND owner=0 AND status='unsent'"
                % id_list(ids))
    t0 = time.perf_counter()
    os.kill(p.pid, signal.SIGKILL)
    latency = None
    while time.perf_counter() - t0 < 10:
        asked = time.perf_counter()  # the poll's read view opens when it starts
        if scalar(cur, back_sql) == len(ids):
            latency = asked - t0
            break
        time.sleep(0.005)
    p.join()
    return conn_id, len(ids), latency


def proxy_delays(log_path):
    """{backend connection id: ms} from the rule proxy's release lines."""
    out = {}
    try:
        with open(log_path, errors="replace") as f:
            text = f.read()
    except OSError:
        return out
    for m in re.finditer(r"queue: released \d+ rows of \S+ claimed by backend connection (\d+) "
                         r"\(rule \S+\), (\d+) ms after its session ended", text):
        out[int(m.group(1))] = int(m.group(2))
    return out


# ---- main -----------------------------------------------------------------------------

def fmt_ms(x):
    return "%.1f" % (x * 1000.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=50)
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--direct-port", type=int, default=23336)
    ap.add_argument("--rule-port", type=int, default=26063)
    ap.add_argument("--plain-port", type=int, default=26064)
    ap.add_argument("--user", default="app")
    ap.add_argument("--password", default="apppw")
    ap.add_argument("--db", default="test")
    ap.add_argument("--rule-log", default="", help="log file of the rule proxy")
    ap.add_argument("--setup-only", action="store_true",
                    help="only build the table (before the proxies start)")
    cfg = ap.parse_args()
    ctx = mp.get_context("fork")

    d = connect(cfg, cfg.direct_port)
    cur = d.cursor()
    if cfg.setup_only:
        reset_table(d, cfg.rows)
        return 0
    version = scalar(cur, "SELECT VERSION()")
    iso = scalar(cur, "SELECT @@GLOBAL.tx_isolation")
    lwt = scalar(cur, "SELECT @@GLOBAL.innodb_lock_wait_timeout")
    print("server %s, %s, innodb_lock_wait_timeout %s s; %d rows, %d worker processes, "
          "batches of %d, %.0f s per mode" % (version, iso, lwt, cfg.rows, cfg.workers, BATCH,
                                              cfg.seconds))
    print("proxies: :%d with the queue rule (skip_locked = yes), :%d with no rules"
          % (cfg.rule_port, cfg.plain_port))

    reset_table(d, cfg.rows)
    if not show_rewrite(cfg, d):
        print("the rule proxy did not add SKIP LOCKED (or the plain proxy did): "
              "the comparison would be meaningless", file=sys.stderr)
        return 1
    print(flush=True)

    modes = [("update_then_select", cfg.rule_port),
             ("for_update", cfg.plain_port),
             ("skip_locked", cfg.rule_port)]
    res = []
    for mode, port in modes:
        reset_table(d, cfg.rows)
        print("# %s through :%d ..." % (mode, port), file=sys.stderr, flush=True)
        res.append(run_mode(cfg, ctx, d, mode, port))

    base = res[0]["rate"]
    print("%-19s %6s | %9s %6s %8s %6s | %8s %10s %6s | %7s %6s | %7s %9s"
          % ("mode", "proxy", "rows_sent", "secs", "rows/s", "ratio", "deadlock",
             "lock_wt_to", "other", "batches", "empty", "waiting", "locks/trx"))
    for r in res:
        print("%-19s %6s | %9d %6.2f %8.0f %6.2f | %8d %10d %6d | %7d %6d | %7.1f %9.0f"
              % (r["mode"], ":%d" % r["port"], r["sent"], r["secs"], r["rate"],
                 r["rate"] / base if base else float("nan"), r["deadlock"],
                 r["lock_wait_timeout"], r["other"], r["batches"], r["empty"], r["waiting"],
                 r["locked"]))
    for r in res:
        if r["reported"] != cfg.workers:
            print("  note: %s: only %d of %d workers reported their counts"
                  % (r["mode"], r["reported"], cfg.workers))
        if r["unsent_left"] == 0:
            print("  note: %s: the queue ran dry; its rate is a lower bound" % r["mode"])
        for m in r["other_msgs"]:
            print("  %s: other error: %s" % (r["mode"], m))
    print("rows_sent: rows that became 'sent' during the window, counted on the server; "
          "ratio: rows/s over update_then_select's;")
    print("deadlock / lock_wt_to / other: errors 1213 / 1205 / any other seen by the workers; "
          "batches, empty: client-side claims with rows / without;")
    print("waiting, locks/trx: InnoDB transactions in LOCK WAIT and row locks per open "
          "transaction, mean of samples every 0.5 s (information_schema.INNODB_TRX)")
    print(flush=True)

    reset_table(d, cfg.rows)
    trials = []
    for _ in range(cfg.trials):
        t = release_trial(cfg, ctx, d)
        if t is not None:
            trials.append(t)
    time.sleep(0.3)  # the proxy logs a release just after its commit
    delays = proxy_delays(cfg.rule_log) if cfg.rule_log else {}
    lat = [x[2] for x in trials if x[2] is not None]
    print("release latency: SIGKILL of a worker holding a claimed batch (through :%d) -> its rows "
          "'unsent'/owner 0, polled every 5 ms direct" % cfg.rule_port)
    print("  %-5s %12s %5s %12s %16s" % ("trial", "backend_conn", "rows", "latency_ms",
                                         "proxy_log_ms"))
    for k, (conn_id, n, latency) in enumerate(trials, 1):
        print("  %-5d %12d %5d %12s %16s"
              % (k, conn_id, n, fmt_ms(latency) if latency is not None else "> 10000",
                 delays.get(conn_id, "-")))
    if lat:
        print("  min %s ms, median %s ms, max %s ms over %d kills%s"
              % (fmt_ms(min(lat)), fmt_ms(statistics.median(lat)), fmt_ms(max(lat)), len(lat),
                 "" if len(lat) == cfg.trials else " (%d of %d trials failed)"
                 % (cfg.trials - len(lat), cfg.trials)))
    else:
        print("  no release observed")
    print("  proxy_log_ms: the proxy's own figure, from the end of the session to its release")
    return 0 if len(lat) == cfg.trials else 1


if __name__ == "__main__":
    sys.exit(main())
