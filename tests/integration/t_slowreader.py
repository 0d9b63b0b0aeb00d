#!/usr/bin/python3
"""A slow client reading a ~1 GB result must not make the proxy buffer it.

An unbuffered (SSCursor) client reads 1,000,000 rows of 1000 bytes. For the
first few seconds it reads one row every few milliseconds, far slower than
mariadbd produces them, then it drains the rest at full speed. Meanwhile the
proxy's VmRSS is sampled from /proc: with back-pressure it stays flat; a
proxy that reads the backend regardless would grow by hundreds of MiB.
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
MAX_GROWTH_KIB = 64 * 1024


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
    try:
        with open("/proc/%d/maps" % pid) as f:
            return "libasan" in f.read()
    except OSError:
        return False


def main():
    pid = t.proxy_pid()
    watched = "proxy"
    if pid is None:
        # Direct mode: there is no proxy. Watch mariadbd just to exercise the
        # sampling, without judging its memory.
        pid, watched = t.mariadbd_pid(), "mariadbd (direct mode, not judged)"
    if pid is None:
        t.not_ok("no pid to watch")
        t.done()

    conn = t.proxy(cursorclass=SSCursor, read_timeout=300)
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
        growth = slow_peak - start_rss
        t.check(growth < MAX_GROWTH_KIB, "proxy RSS grew by %d KiB while the client was slow (limit %d KiB)"
                % (growth, MAX_GROWTH_KIB))
        growth = sampler.peak - start_rss
        if sanitized(pid):
            # ASan keeps freed memory in quarantine, so heavy churn raises RSS
            # without any leak; LeakSanitizer judges leaks at exit instead.
            t.ok("proxy RSS grew by %d KiB overall (ASan build: not judged)" % growth)
        else:
            t.check(growth < MAX_GROWTH_KIB, "proxy RSS grew by %d KiB overall (limit %d KiB)"
                    % (growth, MAX_GROWTH_KIB))
        t.check(os.path.exists("/proc/%d" % pid), "proxy still running")
    t.done()


if __name__ == "__main__":
    main()
