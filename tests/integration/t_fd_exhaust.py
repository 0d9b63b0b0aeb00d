#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The proxy out of file descriptors, and the HTTP endpoint's connection cap.

A proxy started with a descriptor limit of 128 (prlimit; its start raises the soft limit
to the hard one, which is 128 too) and http_max_connections far above it. Idle sockets to
the HTTP port use up its descriptors. Then, for 3 s:
  * the proxy's CPU time (utime + stime of /proc/PID/stat) grows by less than 0.5 s and its
    log by fewer than 30 lines (each listener logs its first failure, then one line each
    10 s): it neither spins on accept nor floods the log;
  * a new client gets ERR 1040 "out of file descriptors" (within the time the listener's
    pause lasts, 1 s at most) instead of hanging, and so does a new console connection;
  * a session opened before goes on answering.
Then the idle sockets are closed: a new client is served again (SELECT 1), /health
answers 200, and the log says the listeners accept again.

A second proxy with http_max_connections = 8: eight idle sockets fill the endpoint, a
ninth request gets 503 at once while the descriptor count of the proxy stays put, and
once one idle socket goes /health answers 200 again.
Environment: MR_BIN; the proxies take free ports in front of the shared mariadbd.
"""
import http.client
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

LIMIT = 128
MEASURE_S = 3.0


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def idle_sockets(port, n):
    """Up to n connected sockets that send nothing (connects the backlog cannot take fail)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.settimeout(0.5)
        try:
            s.connect((t.HOST, port))
            socks.append(s)
        except OSError:
            s.close()
    return socks


def get(port, path, timeout=5):
    """(status, body) of one HTTP GET; status None when the connection failed."""
    try:
        c = http.client.HTTPConnection(t.HOST, port, timeout=timeout)
        c.request("GET", path)
        r = c.getresponse()
        out = (r.status, r.read().decode(errors="replace"))
        c.close()
        return out
    except (OSError, http.client.HTTPException) as e:
        return (None, repr(e))


def connect_error(fn):
    """(errno, message, seconds) of a connect expected to be refused."""
    start = time.time()
    try:
        fn().close()
        return (0, "connected", time.time() - start)
    except pymysql.err.MySQLError as e:
        return (e.args[0], str(e.args[-1]), time.time() - start)


def exhaustion():
    proxy = t.Proxy("fd_exhaust", admin=True, http=True,
                    command=["prlimit", "--nofile=%d:%d" % (LIMIT, LIMIT), t.BIN],
                    options={"http_max_connections": 10000, "http_timeout": "60s"}).start()
    pid = proxy.pid
    t.check(proxy.wait_log(r"descriptor limit %d \(was %d\): room for about" % (LIMIT, LIMIT)),
            "the start logs the descriptor limit and the clients it has room for")
    before = proxy.connect()
    socks = idle_sockets(proxy.http_port, LIMIT + 40)
    time.sleep(0.5)  # the HTTP thread accepts what it can, then fails
    t.log("%d idle sockets to the HTTP port; the proxy has %d descriptors open"
          % (len(socks), open_fds(pid)))
    t.check(open_fds(pid) >= LIMIT - 2, "the idle sockets use up the proxy's descriptors")
    t0, cpu0, lines0 = time.time(), cpu_seconds(pid), len(proxy.log_lines())
    refused = connect_error(lambda: proxy.connect(connect_timeout=5, read_timeout=5))
    console = connect_error(lambda: proxy.admin(connect_timeout=5, read_timeout=5))
    served = t.rows(before, "SELECT 41 + 1") == ((42,),)
    time.sleep(max(0.0, MEASURE_S - (time.time() - t0)))
    cpu, lines = cpu_seconds(pid) - cpu0, len(proxy.log_lines()) - lines0
    t.log("during %.1f s out of descriptors: %.2f s of CPU, %d log lines" % (MEASURE_S, cpu,
                                                                            lines))
    t.check(cpu < 0.5, "out of descriptors, the proxy does not spin (%.2f s CPU in %.1f s)"
            % (cpu, MEASURE_S))
    t.check(lines < 30, "out of descriptors, the log does not flood (%d lines)" % lines,
            "\n".join(proxy.log_lines()[lines0:lines0 + 10]))
    t.check(refused[0] == 1040 and "file descriptors" in refused[1] and refused[2] < 3,
            "a new client gets ERR 1040 'out of file descriptors' at once, not a hang",
            refused)
    t.check(console[0] == 1040 and console[2] < 3,
            "a new console connection gets ERR 1040 at once, not a hang", console)
    t.check(served, "a session opened before goes on answering")
    for s in socks:
        s.close()
    deadline = time.time() + 10
    ok = False
    while time.time() < deadline and not ok:
        try:
            c = proxy.connect(connect_timeout=3)
            ok = t.rows(c, "SELECT 1") == ((1,),)
            c.close()
        except pymysql.err.MySQLError:
            time.sleep(0.2)
    t.check(ok, "descriptors free again: a new client is served")
    t.eq("descriptors free again: /health answers", 200, get(proxy.http_port, "/health")[0])
    t.check(proxy.wait_log(r"HTTP listener: accepting again after", 5),
            "the log says the HTTP listener accepts again")
    t.check(proxy.wait_log(r"client listener: accepting again after", 5),
            "the log says the client listener accepts again")
    status, body = get(proxy.http_port, "/metrics")
    counts = {k: int(v) for k, v in re.findall(r"^myrewrite_accept_(\w+)_total (\d+)$", body,
                                              re.M)}
    t.check(status == 200 and counts.get("failures", 0) >= 3 and counts.get("refused", 0) >= 2
            and counts.get("pauses", 0) >= 3,
            "/metrics counts the failed accepts, the refused clients and the pauses", counts)
    before.close()
    proxy.stop(expect=0)


def http_cap():
    proxy = t.Proxy("fd_http_cap", http=True, options={"http_max_connections": 8}).start()
    pid = proxy.pid
    socks = idle_sockets(proxy.http_port, 8)
    time.sleep(0.3)
    fds = open_fds(pid)
    status, body = get(proxy.http_port, "/health", timeout=3)
    t.check(status == 503 and "http_max_connections" in body,
            "past http_max_connections a request gets 503 at once", (status, body))
    more = idle_sockets(proxy.http_port, 40)
    time.sleep(0.3)
    t.check(open_fds(pid) <= fds + 2,
            "idle sockets past the cap take no descriptors of the proxy (%d, then %d)"
            % (fds, open_fds(pid)))
    for s in more + socks[:1]:
        s.close()
    deadline = time.time() + 5
    status = None
    while time.time() < deadline and status != 200:
        status = get(proxy.http_port, "/health", timeout=3)[0]
        time.sleep(0.1)
    t.eq("one idle socket gone: /health answers again", 200, status)
    for s in socks[1:]:
        s.close()
    proxy.stop(expect=0)


def main():
    if t.DIRECT_ONLY:
        print("skip: needs the proxy")
        sys.exit(77)
    exhaustion()
    http_cap()
    t.done()


if __name__ == "__main__":
    main()
