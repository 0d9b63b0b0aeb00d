#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A backend that stops reading must make the proxy stop reading the client.

The mirror of t_slowreader, on a compressed backend leg (backend_compress =
yes), where the session's output is put into frames at each flush, so the
output evbuffer alone is empty however far the backend is behind (on
io_uring the same holds for the bytes of a send in flight). A client sends
a 48 MB file with LOAD DATA LOCAL; mariadbd sleeps 6 s on the file's first
line (SLEEP() in the SET clause), reading nothing meanwhile. The proxy's
VmRSS is sampled during that pause: with back-pressure it holds about
relay_buffer of the file (the rest waits in the sockets and the client);
without, it reads the whole file into frames. Then the load must complete
with every line, in order.
"""
import base64
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mrtest as t  # noqa: E402

LINES = 48 * 1024
WIDTH = 1000            # bytes a line, newline included
PAUSE_SECS = 6
JUDGED_SECS = 5.0       # the part of the pause the RSS is judged over
MAX_GROWTH_KIB = 16 * 1024
DATA_FILE = os.path.join(t.TMP, "slowbackend_load.txt")


class Sampler(threading.Thread):
    def __init__(self, pid, until):
        super().__init__(daemon=True)
        self.pid = pid
        self.until = until
        self.peak = 0
        self.samples = 0

    def run(self):
        while time.time() < self.until:
            try:
                self.peak = max(self.peak, t.rss_kib(self.pid))
                self.samples += 1
            except (OSError, RuntimeError):
                return
            time.sleep(0.05)


def write_file():
    """A short first line (the one mariadbd sleeps on), then LINES - 1 lines
    of base64 of random bytes: they compress little, so frames take about
    as much memory as the text."""
    with open(DATA_FILE, "wb") as f:
        f.write(b"s\n")
        for _ in range(LINES - 1):
            f.write(base64.b64encode(os.urandom(WIDTH * 3 // 4))[:WIDTH - 1] + b"\n")


def main():
    write_file()
    with t.Proxy("slowbackend_proxy", options={"backend_compress": "yes"}) as p:
        conn = p.connect(local_infile=True, autocommit=True, read_timeout=120)
        cur = conn.cursor()
        cur.execute("DROP TABLE IF EXISTS sb_load")
        cur.execute("CREATE TABLE sb_load (id INT AUTO_INCREMENT PRIMARY KEY, n INT)")
        cur.execute("SELECT REPEAT('y', 100000) FROM seq_1_to_100")  # warm the buffers
        cur.fetchall()
        start_rss = t.rss_kib(p.pid)
        sampler = Sampler(p.pid, time.time() + JUDGED_SECS)
        sampler.peak = start_rss
        sampler.start()
        t0 = time.time()
        cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE sb_load (@a) "
                    "SET n = IF(LENGTH(@a) = 1, SLEEP(%d), LENGTH(@a))" % (
                        conn.escape(DATA_FILE), PAUSE_SECS))
        secs = time.time() - t0
        sampler.join()
        cur.execute("SELECT COUNT(*), SUM(n), (SELECT n FROM sb_load ORDER BY id LIMIT 1) "
                    "FROM sb_load")
        got = cur.fetchone()
        cur.execute("DROP TABLE sb_load")
        conn.close()
        growth = sampler.peak - start_rss
        t.log("LOAD DATA took %.1f s; proxy RSS %d KiB at start, %d KiB peak in the first "
              "%.0f s of the backend's pause (%d samples)"
              % (secs, start_rss, sampler.peak, JUDGED_SECS, sampler.samples))
        t.check(secs >= PAUSE_SECS, "the backend paused (%.1f s)" % secs)
        t.check(sampler.samples > 10, "RSS was sampled (%d samples)" % sampler.samples)
        t.check(growth < MAX_GROWTH_KIB,
                "proxy RSS grew by %d KiB while the backend read nothing (limit %d KiB)"
                % (growth, MAX_GROWTH_KIB))
        t.eq("every line loaded, the short one first",
             (LINES, (LINES - 1) * (WIDTH - 1), 0), tuple(int(v) for v in got))
        t.check(p.alive(), "proxy still running")
    os.unlink(DATA_FILE)
    t.done()


if __name__ == "__main__":
    main()
