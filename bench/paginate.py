#!/usr/bin/env python3
"""Deep page latency, direct vs deferred_join vs keyset (see bench/paginate.sh)."""
import argparse
import statistics
import sys
import time

import pymysql

QUERY = "SELECT * FROM pbench ORDER BY id LIMIT %d, %d"


def connect(a, port):
    return pymysql.connect(host=a.host, port=port, user=a.user, password=a.password,
                           database=a.db, autocommit=True)


def setup(a):
    c = connect(a, a.direct_port)
    cur = c.cursor()
    cur.execute("CREATE TABLE IF NOT EXISTS pbench (id INT PRIMARY KEY, k INT NOT NULL,"
                " created INT NOT NULL, pad VARCHAR(480) NOT NULL, KEY (k)) ENGINE=InnoDB")
    cur.execute("SELECT COUNT(*) FROM pbench")
    have = cur.fetchone()[0]
    if have != a.rows:
        t0 = time.monotonic()
        cur.execute("TRUNCATE pbench")
        step = 100000
        for lo in range(0, a.rows, step):
            hi = min(a.rows, lo + step)
            cur.execute("INSERT INTO pbench SELECT seq, seq * 7919 %% 1000003, seq DIV 10,"
                        " REPEAT(CHAR(97 + seq %% 26), 480) FROM seq_%d_to_%d" % (lo + 1, hi))
        print("# filled %d rows in %.0f s" % (a.rows, time.monotonic() - t0), flush=True)
    cur.execute("ANALYZE TABLE pbench")
    cur.fetchall()
    # read the whole table once so every mode starts from a warm buffer pool
    cur.execute("SELECT COUNT(*), SUM(LENGTH(pad)) FROM pbench FORCE INDEX (PRIMARY)")
    cur.fetchall()
    c.close()


def timed(cur, sql):
    t0 = time.perf_counter()
    cur.execute(sql)
    rows = cur.fetchall()
    return (time.perf_counter() - t0) * 1000.0, rows


def repeated(cur, off, a):
    times = []
    rows = None
    for _ in range(a.repeat):
        ms, rows = timed(cur, QUERY % (off, a.page))
        times.append(ms)
    return statistics.median(times), rows


def keyset_walk(a, offsets, direct):
    """Pages from 0 on; the `repeat` pages from the first page boundary at or after each
    offset are timed and checked."""
    cur = connect(a, a.ks_port).cursor()
    want_at = {}
    for off in offsets:
        start = (off + a.page - 1) // a.page * a.page
        for i in range(a.repeat):
            want_at[start + i * a.page] = off
    last = max(want_at)
    times = {off: [] for off in offsets}
    got = {}
    off = 0
    t0 = time.monotonic()
    while off <= last:
        ms, rows = timed(cur, QUERY % (off, a.page))
        if off in want_at:
            times[want_at[off]].append(ms)
            got[off] = rows
        off += a.page
    walk_s = time.monotonic() - t0
    # checked after the walk: a deep direct query between two pages would slow the next one
    bad = 0
    for off, rows in got.items():
        direct.execute(QUERY % (off, a.page))
        bad += direct.fetchall() != rows
    return {o: statistics.median(t) for o, t in times.items()}, bad, walk_s, last // a.page + 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--offsets", required=True)
    p.add_argument("--page", type=int, default=20)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--direct-port", type=int, required=True)
    p.add_argument("--dj-port", type=int, required=True)
    p.add_argument("--ks-port", type=int, required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--setup-only", action="store_true")
    a = p.parse_args()
    if a.setup_only:
        setup(a)
        return 0
    offsets = [int(x) for x in a.offsets.split()]
    direct = connect(a, a.direct_port).cursor()
    dj = connect(a, a.dj_port).cursor()
    res = {}
    bad = 0
    for off in offsets:
        d_ms, d_rows = repeated(direct, off, a)
        j_ms, j_rows = repeated(dj, off, a)
        bad += d_rows != j_rows
        res[off] = [d_ms, j_ms]
    ks, ks_bad, walk_s, pages = keyset_walk(a, offsets, direct)
    print("# %d rows, page %d, median of %d runs per offset; keyset: a walk of %d pages "
          "(%.0f s), %d timed pages from the first page boundary at or after each offset"
          % (a.rows, a.page, a.repeat, pages, walk_s, a.repeat))
    print("%10s %12s %12s %12s %10s %10s %12s" % ("offset", "direct ms", "deferred ms",
                                                  "keyset ms", "direct/dj", "direct/ks",
                                                  "ks/1st page"))
    first = ks[offsets[0]]
    for off in offsets:
        d_ms, j_ms = res[off]
        print("%10d %12.2f %12.2f %12.2f %10.1f %10.1f %12.2f" % (
            off, d_ms, j_ms, ks[off], d_ms / j_ms, d_ms / ks[off], ks[off] / first))
    print("rows differing from direct: deferred_join %d, keyset %d" % (bad, ks_bad))
    return 1 if bad or ks_bad else 0


if __name__ == "__main__":
    sys.exit(main())
