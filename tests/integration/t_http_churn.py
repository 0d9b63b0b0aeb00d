#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The HTTP endpoint under churn: /metrics and /health requests while clients connect and
leave as fast as they can, so descriptor numbers the HTTP thread has just closed are taken
at once by workers' client and backend sockets.

  * every /metrics answer is 200 and carries the connection counter, every /health 200;
  * every client session authenticated and answered SELECT 1;
  * the proxy exits 0 at SIGTERM. Under ThreadSanitizer this is the check that matters:
    libevent's HTTP server closes a socket before it removes it from its epoll set, which
    TSan reports as a race on the descriptor once a worker has reused its number
    (tests/tsan.supp says why it is harmless); any other race stops the proxy (exit 66).
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN, MR_TMP; the proxy takes free ports.
"""
import os
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402

SECONDS = 5.0


def http_loop(proxy, path, out, end):
    while time.time() < end:
        try:
            with urllib.request.urlopen(proxy.http_url(path), timeout=10) as r:
                body = r.read().decode()
                ok = r.status == 200 and (path != "/metrics" or
                                          "myrewrite_connections_accepted_total" in body)
        except OSError as e:
            ok = False
            body = str(e)
        out.append((ok, body[:200]))


def client_loop(proxy, out, end):
    while time.time() < end:
        try:
            c = proxy.connect()
            cur = c.cursor()
            cur.execute("SELECT 1")
            out.append((cur.fetchone() == (1,), ""))
            c.close()
        except Exception as e:  # noqa: BLE001 - any failure is what the check reports
            out.append((False, repr(e)))


def main():
    if t.DIRECT_ONLY:
        print("skip: needs the proxy")
        sys.exit(77)
    proxy = t.Proxy("http-churn", http=True).start()
    end = time.time() + SECONDS
    metrics, health, clients = [], [], []
    ths = [threading.Thread(target=http_loop, args=(proxy, "/metrics", metrics, end)),
           threading.Thread(target=http_loop, args=(proxy, "/health", health, end))]
    ths += [threading.Thread(target=client_loop, args=(proxy, clients, end)) for _ in range(3)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    t.log("%d /metrics, %d /health, %d client sessions" % (len(metrics), len(health),
                                                          len(clients)))
    for name, got in (("/metrics", metrics), ("/health", health), ("client sessions", clients)):
        bad = [b for ok, b in got if not ok]
        t.check(got and not bad, "%s under churn: %d, all answered" % (name, len(got)), bad[:3])
    proxy.stop(timeout=20, expect=0, desc="the proxy exits 0 at SIGTERM (no sanitizer report)")
    t.done()


if __name__ == "__main__":
    main()
