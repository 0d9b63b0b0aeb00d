#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Deep page latency, direct vs deferred_join vs keyset (see bench/paginate.sh)."""
import argparse
import statistics
import sys
import time

import pymysql

# The listings timed, side by side. Ordered by the primary key, the deferred join's inner
# query walks the clustered index, which holds the whole rows, so it saves little. Ordered
# by the secondary index on k (with the key appended, so the order is total), the direct
# page must reach offset + 20 full rows through that index (a clustered-index lookup per
# row) or sort the table, while the inner query of the deferred join walks only the small
# index (k, id) and the outer query reads 20 rows.
LISTINGS = {
    "pk": "SELECT * FROM pbench ORDER BY id LIMIT %d, %d",
    "k": "SELECT * FROM pbench ORDER BY k, id LIMIT %d, %d",
}


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
    cur.execute("SELECT COUNT(*), SUM(k) FROM pbench FORCE INDEX (k)")
    cur.fetchall()
    c.close()


def timed(cur, sql):
    t0 = time.perf_counter()
    cur.execute(sql)
    rows = cur.fetchall()
    return (time.perf_counter() - t0) * 1000.0, rows


def repeated(cur, query, off, a):
    times = []
    rows = None
    for _ in range(a.repeat):
        ms, rows = timed(cur, query % (off, a.page))
        times.append(ms)
    return statistics.median(times), rows


def keyset_walk(a, query, offsets, direct):
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
        ms, rows = timed(cur, query % (off, a.page))
        if off in want_at:
            times[want_at[off]].append(ms)
            got[off] = rows
        off += a.page
    walk_s = time.monotonic() - t0
    # checked after the walk: a deep direct query between two pages would slow the next one
    bad = 0
    for off, rows in got.items():
        direct.execute(query % (off, a.page))
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
    p.add_argument("--listings", default="pk k",
                   help="which of %s to time, in this order" % " ".join(LISTINGS))
    p.add_argument("--setup-only", action="store_true")
    a = p.parse_args()
    if a.setup_only:
        setup(a)
        return 0
    unknown = [n for n in a.listings.split() if n not in LISTINGS]
    if unknown:
        p.error("unknown listing(s) %s: the listings are %s" % (" ".join(unknown),
                                                                " ".join(LISTINGS)))
    offsets = [int(x) for x in a.offsets.split()]
    direct = connect(a, a.direct_port).cursor()
    dj = connect(a, a.dj_port).cursor()
    bad = 0
    for name in a.listings.split():
        bad += run_listing(a, LISTINGS[name], offsets, direct, dj)
    return 1 if bad else 0


def plan(cur, sql):
    """The access path of sql, as EXPLAIN's type / key / Extra of its first row."""
    cur.execute("EXPLAIN " + sql)
    cols = [d[0] for d in cur.description]
    r = dict(zip(cols, cur.fetchone()))
    cur.fetchall()
    return "type=%s key=%s rows=%s extra=%s" % (r["type"], r["key"], r["rows"], r["Extra"])


def run_listing(a, query, offsets, direct, dj):
    res = {}
    bad = 0
    for off in offsets:
        d_ms, d_rows = repeated(direct, query, off, a)
        j_ms, j_rows = repeated(dj, query, off, a)
        bad += d_rows != j_rows
        res[off] = [d_ms, j_ms]
    ks, ks_bad, walk_s, pages = keyset_walk(a, query, offsets, direct)
    deepest = query % (offsets[-1], a.page)
    print()
    print("# " + query % (0, a.page) + "   (offset varies)")
    print("# direct plan at offset %d: %s" % (offsets[-1], plan(direct, deepest)))
    print("# the deferred join's inner query: %s"
          % plan(direct, deepest.replace("SELECT *", "SELECT id", 1)))
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
    print("rows differing from direct: deferred_join %d, keyset %d" % (bad, ks_bad), flush=True)
    return bad + ks_bad


if __name__ == "__main__":
    sys.exit(main())
