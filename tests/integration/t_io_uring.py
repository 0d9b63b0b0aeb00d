#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""io = io_uring (net/conn_uring.c): the socket layer's io_uring backend.

A proxy of the test's own with io = io_uring and two workers. It checks:
  * each worker runs on its ring: the debug log says "running (io_uring)"
    for both and the process holds two io_uring file descriptors;
  * results of 1 byte to 8 MB give the same bytes as direct, and eight
    connections pulling 8 MB each at once (more than the 4 MiB of provided
    buffers a worker has, so the receives run dry and are armed again) all
    get theirs whole;
  * a slow reader of a ~100 MB result: the backend's conn is paused (its
    receive cancelled) and the proxy's memory stays within 64 MiB of where
    it started; every row arrives intact once the client reads on;
  * a client that closes mid-result (EOF) and one that resets its
    connection (SO_LINGER 0: ECONNRESET) do not hurt the proxy;
  * 300 connections opened and closed in turn, 40 held open at once (file
    descriptor numbers reused while earlier receives end), each answers its
    own query;
  * TLS and the compressed protocol (the mariadb CLI with --compress) work
    as they do on epoll;
  * io = something else is refused at start with a message naming the two
    values.
Environment: MR_DIRECT_PORT, MR_BIN; the proxy takes free ports.
"""
import os
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mrtest as t  # noqa: E402
from pymysql.cursors import SSCursor  # noqa: E402

SERVER_TLS = os.path.join(t.TMP, "main", "tls")  # tests/lib/env.sh made this pair


def ring_fds(pid):
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:[io_uring]":
                n += 1
        except OSError:
            pass
    return n


def digest_of(conn, sql):
    rows = t.rows(conn, sql)
    return t.sha1(repr(rows))


def check_rings(p):
    m = p.wait_log(r"worker 1 running \((io_uring|epoll)\)", 10)
    lines = [ln for ln in p.log_lines() if "running (" in ln]
    t.check(len([ln for ln in lines if "running (io_uring)" in ln]) == 2,
            "both workers run on io_uring", "\n".join(lines) or repr(m))
    t.eq("the proxy holds one io_uring fd per worker", 2, ring_fds(p.pid))


def check_sizes(p):
    direct = t.direct()
    c = p.connect()
    for n in (1, 100, 4095, 4096, 16384, 16385, 65536, 1000000, 8000000):
        sql = "SELECT REPEAT('a', %d) AS v, %d AS n" % (n, n)
        t.eq("a %d-byte value as direct" % n, digest_of(direct, sql), digest_of(c, sql))
    sql = "SELECT seq, REPEAT(CHAR(65 + seq % 26), 300) FROM seq_1_to_20000"
    t.eq("20,000 rows as direct", digest_of(direct, sql), digest_of(c, sql))
    c.close()
    direct.close()


def check_parallel(p):
    sql = "SELECT seq, REPEAT('z', 8000) FROM seq_1_to_1000"  # ~8 MB each
    want = digest_of(t.direct(), sql)
    got = []

    def pull():
        c = p.connect(read_timeout=120)
        got.append(digest_of(c, sql))
        c.close()

    t.run_threads([threading.Thread(target=pull) for _ in range(8)])
    t.check(len(got) == 8 and all(g == want for g in got),
            "eight connections pulling 8 MB at once each get all of it",
            "%d of 8 matched" % sum(g == want for g in got))


def check_slow_reader(p):
    conn = p.connect(cursorclass=SSCursor, read_timeout=300)
    cur = conn.cursor()
    start = t.rss_kib(p.pid)
    cur.execute("SELECT seq, REPEAT('x', 1000) FROM seq_1_to_100000")
    peak, rows, bad = start, 0, 0
    t0 = time.time()
    for row in cur:
        rows += 1
        if row[1] != "x" * 1000 or row[0] != rows:
            bad += 1
        if time.time() - t0 < 4.0:
            time.sleep(0.002)
            if rows % 50 == 0:
                peak = max(peak, t.rss_kib(p.pid))
    conn.close()
    t.check(rows == 100000 and bad == 0, "a slow reader gets all 100,000 rows intact",
            "rows=%d bad=%d" % (rows, bad))
    t.check(peak - start < 64 * 1024, "while it dawdles the proxy grows by less than 64 MiB",
            "grew by %d KiB" % (peak - start))


def check_eof_and_reset(p):
    c = p.connect(cursorclass=SSCursor, read_timeout=30)
    cur = c.cursor()
    cur.execute("SELECT seq, REPEAT('e', 1000) FROM seq_1_to_200000")
    for _ in range(10):
        cur.fetchone()
    c._sock.close()  # mid-result, the rest unread
    s = socket.create_connection((t.HOST, p.port))
    s.recv(1024)  # the greeting
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()  # RST
    time.sleep(0.5)
    t.check(p.alive(), "the proxy survives a close mid-result and a reset")
    c = p.connect()
    t.eq("and answers the next client", ((7,),), t.rows(c, "SELECT 7"))
    c.close()


def check_churn(p):
    wrong = 0
    for i in range(300):
        c = p.connect()
        if t.rows(c, "SELECT %d" % i) != ((i,),):
            wrong += 1
        c.close()
    held = [p.connect() for _ in range(40)]
    for i, c in enumerate(held):
        if t.rows(c, "SELECT %d + 1000" % i) != ((i + 1000,),):
            wrong += 1
    for c in held:
        c.close()
    t.eq("300 connections in turn and 40 at once answer their own queries", 0, wrong)


def check_tls(p):
    ctx = ssl.create_default_context(cafile=os.path.join(SERVER_TLS, "cert.pem"))
    ctx.check_hostname = False
    c = p.connect(ssl=ctx)
    version = c._sock.version() if hasattr(c._sock, "version") else None
    want = digest_of(t.direct(), "SELECT REPEAT('t', 300000)")
    got = digest_of(c, "SELECT REPEAT('t', 300000)")
    c.close()
    t.check(version is not None and version.startswith("TLS"), "a TLS client logs in",
            repr(version))
    t.eq("and reads a 300 KB value as direct", want, got)


def check_compress(p):
    def cli(port, sql):
        r = subprocess.run(["mariadb", "--no-defaults", "-h", t.HOST, "-P", str(port), "-u",
                            t.USER, "-p" + t.PASSWORD, "--compress", "-N", t.DB, "-e", sql],
                           capture_output=True, timeout=60)
        return r.returncode, r.stdout, r.stderr
    rc, out, err = cli(p.port, "status")
    t.check(rc == 0 and b"Compressed" in out,
            "the mariadb CLI with --compress through the proxy: its status says compressed", err)
    sql = "SELECT seq, REPEAT('c', 2000) FROM seq_1_to_3000"
    want, got = cli(t.DIRECT_PORT, sql), cli(p.port, sql)
    t.check(got[0] == 0 and got[1] == want[1], "its 6 MB result as direct",
            "rc=%d, %d bytes against %d" % (got[0], len(got[1]), len(want[1])))


def check_refused():
    bad = t.Proxy("io_uring_bad", options={"io": "kqueue"})
    try:
        bad.start(timeout=5)
        t.not_ok("io = kqueue is refused")
        bad.stop()
    except RuntimeError as e:
        t.check("expected epoll or io_uring" in str(e), "io = kqueue is refused, naming the two",
                str(e)[-300:])


def main():
    if t.DIRECT_ONLY:
        print("direct mode: nothing to test without a proxy")
        sys.exit(77)
    opts = {"io": "io_uring", "tls_cert": os.path.join(SERVER_TLS, "cert.pem"),
            "tls_key": os.path.join(SERVER_TLS, "key.pem")}
    p = t.Proxy("io_uring", options=opts, log_level="debug")
    try:
        p.start()
    except RuntimeError as e:
        if "built without io_uring" in str(e):
            print("skip: this build has no io_uring (liburing was not found)")
            sys.exit(77)
        raise
    try:
        check_rings(p)
        check_sizes(p)
        check_parallel(p)
        check_slow_reader(p)
        check_eof_and_reset(p)
        check_churn(p)
        check_tls(p)
        check_compress(p)
        t.check(p.alive(), "the proxy is still up")
        t.eq("it stops cleanly on SIGTERM", 0, p.stop())
    finally:
        p.stop()
    check_refused()
    t.done()


main()
