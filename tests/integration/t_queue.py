#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Queue tables end to end: two proxies of its own with a queue rule, the real mariadbd.

  * worker processes claim batches of 10 through the proxies (UPDATE ... owner =
    CONNECTION_ID() ... LIMIT 10), read their rows back, mark each 'sent' only while
    they still own it, recording (id, worker) in a table with a unique key on id;
  * victims claim a batch, stall and are killed -9: their rows are back in the
    queue within 1 s (measured per victim), released by the proxy they used only;
  * a victim connected direct to mariadbd keeps its rows past its death until
    the claim is older than the timeout (3 s), then the reaper releases them;
  * at the end every row is 'sent' and recorded exactly once.
The rule has claim_read_committed = yes: the claims run READ COMMITTED (the sends, inside
BEGIN ... COMMIT, at the session's level), which must not change any of the above.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN, MR_QUEUE_ROWS (default 10000),
MR_QUEUE_WORKERS (default 30); the two proxies take free ports.
"""
import os
import re
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

ROWS = int(os.environ.get("MR_QUEUE_ROWS", "10000"))
WORKERS = int(os.environ.get("MR_QUEUE_WORKERS", "30"))
TIMEOUT_S = 3
RULES_DIR = os.path.join(t.TMP, "queue_rules")
PROXIES = {name: t.Proxy(name, rules_dir=RULES_DIR, own_conn=True)
           for name in ("queue_proxy_a", "queue_proxy_b")}
PORTS = [p.port for p in PROXIES.values()]
RULES = """
[queue jobs]
table = test.q_jobs
owner_column = owner
status_column = status
claimed_value = claimed
unclaimed_value = unsent
claimed_at_column = claimed_at
timeout = %ds
claim_read_committed = yes
""" % TIMEOUT_S

CLAIM = ("UPDATE q_jobs SET status = 'claimed', owner = CONNECTION_ID(), claimed_at = NOW(6) "
         "WHERE owner = 0 AND status = 'unsent' LIMIT 10")
MINE = "SELECT id FROM q_jobs WHERE owner = CONNECTION_ID() AND status = 'claimed'"


# ---- worker processes ----------------------------------------------------------------

def work(port, wid, mode):
    """mode 'run': claim and send until the queue is empty; 'stall': claim one
    batch, say so, and wait to be killed; 'hold': the same, renewing the claim
    time every 0.5 s as a live worker would, so that only its death frees the
    rows (the reaper never sees them older than the timeout)."""
    c = t.connect(port, autocommit=True)
    cur = c.cursor()
    cur.execute("SELECT CONNECTION_ID()")
    print("conn %d" % cur.fetchone()[0], flush=True)
    while True:
        cur.execute(CLAIM)
        if cur.rowcount == 0:
            cur.execute("SELECT COUNT(*) FROM q_jobs WHERE status <> 'sent'")
            if cur.fetchone()[0] == 0:
                return 0
            time.sleep(0.02)
            continue
        cur.execute(MINE)
        ids = [r[0] for r in cur.fetchall()]
        if mode in ("stall", "hold"):
            print("claimed %d" % len(ids), flush=True)
            for _ in range(1200):
                time.sleep(0.5)
                if mode == "hold":
                    cur.execute("UPDATE q_jobs SET claimed_at = NOW(6) WHERE owner = "
                                "CONNECTION_ID() AND status = 'claimed'")
        for i in ids:
            if not send_one(c, cur, i, wid):
                return 3


def send_one(c, cur, i, wid):
    cur.execute("BEGIN")
    cur.execute("UPDATE q_jobs SET status = 'sent' WHERE id = %s AND owner = CONNECTION_ID() "
                "AND status = 'claimed'", (i,))
    if cur.rowcount != 1:
        cur.execute("ROLLBACK")  # no longer ours
        return True
    try:
        cur.execute("INSERT INTO q_sent (id, worker) VALUES (%s, %s)", (i, wid))
    except pymysql.err.IntegrityError as e:
        print("double send of row %d: %s" % (i, e), flush=True)
        cur.execute("ROLLBACK")
        return False
    cur.execute("COMMIT")
    return True


def spawn(port, wid, mode):
    return subprocess.Popen([sys.executable, __file__, "--worker", str(port), str(wid), mode],
                            stdout=subprocess.PIPE, text=True)


def read_line(p, prefix, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([p.stdout], [], [], 0.2)
        if r:
            line = p.stdout.readline()
            if line.startswith(prefix):
                return line.split()[1]
            if not line:
                return None
    return None


# ---- proxies ------------------------------------------------------------------------------

def proxy_log(name):
    return PROXIES[name].log_text()


def releases(name):
    """{backend connection id: rows} from a proxy's release lines."""
    out = {}
    for m in re.finditer(r"queue: released (\d+) rows of \S+ claimed by backend connection (\d+)",
                         proxy_log(name)):
        out[int(m.group(2))] = out.get(int(m.group(2)), 0) + int(m.group(1))
    return out


# ---- the test -------------------------------------------------------------------------------

def setup(c):
    cur = c.cursor()
    cur.execute("DROP TABLE IF EXISTS q_jobs, q_sent")
    cur.execute("CREATE TABLE q_jobs (id INT PRIMARY KEY, status VARCHAR(16) NOT NULL "
                "DEFAULT 'unsent', owner BIGINT UNSIGNED NOT NULL DEFAULT 0, "
                "claimed_at DATETIME(6) NULL, KEY (owner, status)) ENGINE=InnoDB")
    cur.execute("CREATE TABLE q_sent (id INT PRIMARY KEY, worker INT NOT NULL) ENGINE=InnoDB")
    for start in range(0, ROWS, 5000):
        cur.execute("INSERT INTO q_jobs (id) VALUES " +
                    ",".join("(%d)" % i for i in range(start + 1, min(start + 5000, ROWS) + 1)))


def owned(d, conn):
    cur = d.cursor()
    cur.execute("SELECT COUNT(*) FROM q_jobs WHERE owner = %s AND status = 'claimed'", (conn,))
    return cur.fetchone()[0]


def claim_victim(port, wid):
    """A worker that claims one batch through `port` and holds it; (process, conn id, rows)."""
    v = spawn(port, wid, "hold")
    conn = read_line(v, "conn ")
    n = read_line(v, "claimed ")
    if conn is None or n is None:
        v.kill()
        v.wait()
        return None
    return v, int(conn), int(n)


def kill_victim(d, victim):
    """Kills a stalled victim -9; returns the seconds until its rows are unclaimed."""
    v, conn, _ = victim
    t0 = time.time()
    v.send_signal(signal.SIGKILL)
    v.wait()
    while owned(d, conn) and time.time() - t0 < 10:
        time.sleep(0.005)
    return time.time() - t0


def direct_zombie(d):
    """A direct worker claims and dies; the reaper may take its rows only after the timeout."""
    v = spawn(t.DIRECT_PORT, 9999, "stall")
    conn = int(read_line(v, "conn "))
    n = int(read_line(v, "claimed "))
    t0 = time.time()
    v.send_signal(signal.SIGKILL)
    v.wait()
    early = None
    while time.time() - t0 < TIMEOUT_S + 15:
        left = owned(d, conn)
        if left and time.time() - t0 < TIMEOUT_S - 0.3:
            early = left
        if not left:
            break
        time.sleep(0.02)
    return conn, n, early, time.time() - t0, owned(d, conn)


def reaped(conn):
    """[(proxy, rows)] of the reaper's release lines for connection `conn`."""
    out = []
    for name in ("queue_proxy_a", "queue_proxy_b"):
        for m in re.finditer(r"queue reaper: released (\d+) rows of \S+ claimed by connection "
                             r"%d," % conn, proxy_log(name)):
            out.append((name, int(m.group(1))))
    return out


def main():
    os.makedirs(RULES_DIR, exist_ok=True)
    with open(os.path.join(RULES_DIR, "10-queue.rules"), "w") as f:
        f.write(RULES)
    d = t.direct(autocommit=True)
    setup(d)
    proxies = [p.start() for p in PROXIES.values()]
    try:
        run(d)
    finally:
        for p in proxies:
            t.eq("queue proxy exits 0 on SIGTERM", 0, p.stop())


def run(d):
    # the direct zombie first, while nothing else holds claims older than the timeout
    zconn, zrows, early, took, left = direct_zombie(d)
    t.check(early is not None and left == 0 and took >= TIMEOUT_S - 0.2,
            "direct worker's rows kept until the %d s timeout, then reaped" % TIMEOUT_S,
            "rows still held before the timeout: %s; released after %.2f s; left %d"
            % (early, took, left))
    t.log("direct zombie reaped %.2f s after its death (timeout %d s)" % (took, TIMEOUT_S))
    time.sleep(0.2)  # the log line follows the commit
    got = reaped(zconn)
    t.check(len(got) == 1 and got[0][1] == zrows,
            "the zombie's %d rows were reaped once, by one of the two proxies" % zrows, got)

    # victims claim before the workers start, so a fast run cannot empty the queue
    # before they get rows; they are killed while the workers run
    stalled = [(claim_victim(PORTS[k % 2], 1000 + k), k % 2) for k in range(8)]
    t0 = time.time()
    workers = [spawn(PORTS[i % 2], i, "run") for i in range(WORKERS)]
    victims, latencies = [], []
    for v, side in stalled:
        if v is not None:
            time.sleep(0.2)
            latencies.append(kill_victim(d, v))
            victims.append((v[1], v[2], side))
    # and a few of the running workers too, wherever they are
    for p in workers[:3]:
        time.sleep(0.3)
        p.send_signal(signal.SIGKILL)
    codes = [p.wait(300) for p in workers]
    elapsed = time.time() - t0
    t.check(all(c == 0 for c in codes[3:]), "workers finished cleanly (no double send)", codes)
    t.check(len(victims) == 8, "8 victims claimed rows and were killed", victims)
    t.check(latencies and max(latencies) <= 1.0,
            "killed workers' rows back in the queue within 1 s",
            ["%.3f" % x for x in latencies])
    t.log("release after kill -9: max %.3f s, mean %.3f s over %d victims"
          % (max(latencies or [0]), sum(latencies or [0]) / max(len(latencies), 1), len(latencies)))

    cur = d.cursor()
    cur.execute("SELECT status, COUNT(*) FROM q_jobs GROUP BY status")
    t.eq("every row is 'sent'", {"sent": ROWS}, dict(cur.fetchall()))
    cur.execute("SELECT COUNT(*), COUNT(DISTINCT id) FROM q_sent")
    t.eq("every row recorded exactly once", (ROWS, ROWS), cur.fetchone())
    t.log("%d rows through %d workers on 2 proxies in %.1f s: %.0f claimed rows/s"
          % (ROWS, WORKERS, elapsed, ROWS / elapsed))

    a, b = releases("queue_proxy_a"), releases("queue_proxy_b")
    both = set(a) & set(b)
    t.check(not both, "no connection released by both proxies", both)
    for conn, n, side in victims:
        got = (a if side == 0 else b).get(conn)
        t.check(got == n, "victim %d's %d rows released once, by its own proxy" % (conn, n),
                "proxy a: %s, proxy b: %s" % (a.get(conn), b.get(conn)))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        sys.exit(work(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]))
    main()
    t.done()
