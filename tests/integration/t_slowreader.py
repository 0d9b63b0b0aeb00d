#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A slow client reading a ~1 GB result must not make the proxy buffer it.

An unbuffered (SSCursor) client reads 1,000,000 rows of 1000 bytes. For the
first few seconds it reads one row every few milliseconds, far slower than
mariadbd produces them, then it drains the rest at full speed. Meanwhile the
proxy's VmRSS is sampled from /proc: with back-pressure it stays flat; a
proxy that reads the backend regardless would grow by hundreds of MiB.

The proxy is the test's own, with relay_buffer = 256K: it promises to queue
no more than that toward the slow client before it stops reading mariadbd,
so its RSS may grow by that, plus what one read and the allocator's and
libevent's chunks add (SLACK_KIB), while the client is slow and over the
whole read. Under ASan freed blocks wait in a quarantine before their
memory is reused; it is capped for this proxy (ASAN_OPTIONS) and the cap is
added to the bound.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mrtest as t  # noqa: E402
from pymysql.cursors import SSCursor  # noqa: E402

ROWS = 1000000
WIDTH = 1000
SLOW_SECS = 8.0         # how long the client dawdles
RELAY_BUFFER_KIB = 256
SLACK_KIB = 1024
ASAN_QUARANTINE_KIB = 1024  # quarantine_size_mb=1, and 64 KiB per thread before it


class Sampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.samples = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.peak = max(self.peak, t.rss_kib(self.pid))
                self.samples += 1
            except (OSError, RuntimeError):
                return  # process gone; the test will notice elsewhere
            time.sleep(0.05)


def sanitized(pid):
    """True if the process runs with AddressSanitizer."""
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def own_proxy():
    """The test's proxy, relay_buffer set, ASan's quarantine capped."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ":".join(filter(None, [
        env.get("ASAN_OPTIONS"), "quarantine_size_mb=%d" % (ASAN_QUARANTINE_KIB // 1024),
        "thread_local_quarantine_size_kb=64"]))
    return t.Proxy("slowreader", options={"relay_buffer": "%dK" % RELAY_BUFFER_KIB}, env=env)


def main():
    proxy = None
    if t.DIRECT_ONLY:
        # Direct mode: there is no proxy. Watch mariadbd just to exercise the
        # sampling, without judging its memory.
        pid, port, watched = t.mariadbd_pid(), t.DIRECT_PORT, "mariadbd (direct mode, not judged)"
    else:
        proxy = own_proxy().start()
        pid, port, watched = proxy.pid, proxy.port, "proxy"
    if pid is None:
        t.not_ok("no pid to watch")
        t.done()

    conn = t.connect(port, cursorclass=SSCursor, read_timeout=300)
    cur = conn.cursor()
    # Warm up the session (and the proxy's buffers) before the baseline.
    cur.execute("SELECT REPEAT('y', 100000) FROM seq_1_to_100")
    for _ in cur:
        pass
    start_rss = t.rss_kib(pid)
    sampler = Sampler(pid)
    sampler.peak = start_rss
    sampler.start()

    expected = "x" * WIDTH
    rows = nbytes = bad = 0
    slow_rows = 0
    slow_peak = start_rss
    after = None
    t0 = time.time()
    try:
        cur.execute("SELECT REPEAT('x', %d) FROM seq_1_to_%d" % (WIDTH, ROWS))
        # Slow phase: a trickle of rows.
        while time.time() - t0 < SLOW_SECS:
            row = cur.fetchone()
            if row is None:
                break
            rows += 1
            nbytes += len(row[0])
            bad += row[0] != expected
            time.sleep(0.005)
        slow_rows = rows
        slow_peak = sampler.peak
        # Fast phase: drain.
        while True:
            chunk = cur.fetchmany(5000)
            if not chunk:
                break
            for (v,) in chunk:
                nbytes += len(v)
                bad += v != expected
            rows += len(chunk)
        cur.execute("SELECT 'after'")
        after = tuple(cur.fetchall())
        cur.close()
        conn.close()
    except Exception as e:
        t.not_ok("stream broke after %d rows and %.1f s: %r" % (rows, time.time() - t0, e))
        # The connection is unusable; keep pymysql from trying to drain it.
        if cur._result is not None:
            cur._result.unbuffered_active = False
    secs = time.time() - t0
    sampler.stop.set()
    sampler.join()

    t.log("read %d rows in %.1f s (%d during the slow phase); %s RSS %d KiB at start, "
          "%d KiB peak while slow, %d KiB peak overall (%d samples)"
          % (rows, secs, slow_rows, watched, start_rss, slow_peak, sampler.peak, sampler.samples))
    t.eq("row count", ROWS, rows)
    t.eq("total bytes", ROWS * WIDTH, nbytes)
    t.eq("rows with wrong content", 0, bad)
    t.eq("session usable after the big result", (("after",),), after)
    t.check(sampler.samples > 10, "RSS was sampled (%d samples)" % sampler.samples)
    if watched == "proxy":
        # While the client dawdles mariadbd keeps producing at full speed, so
        # this is where a proxy without back-pressure would balloon.
        limit = RELAY_BUFFER_KIB + SLACK_KIB + (ASAN_QUARANTINE_KIB if sanitized(pid) else 0)
        t.check(slow_peak - start_rss <= limit,
                "proxy RSS grew by %d KiB while the client was slow (relay_buffer %d KiB, "
                "limit %d KiB)" % (slow_peak - start_rss, RELAY_BUFFER_KIB, limit))
        t.check(sampler.peak - start_rss <= limit,
                "proxy RSS grew by %d KiB over the whole read (limit %d KiB)"
                % (sampler.peak - start_rss, limit))
        t.check(proxy.alive(), "proxy still running")
        proxy.stop(expect=0)
    t.done()


if __name__ == "__main__":
    main()
