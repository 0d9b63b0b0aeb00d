#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The admin console cannot be locked out by sockets that never log in, and failed logins
back off per source address.

A proxy with the console and admin_login_timeout = 1s:
  * 40 sockets that connect to the console and never answer its greeting: the
    administrator still logs in at once and SHOW VERSION answers (connections not logged
    in have a quota of their own, 8; a newer one closes the oldest);
  * such a socket is closed by the proxy within about admin_login_timeout (checked below
    3 s; handshake_timeout, the clients' 10 s, no longer applies);
  * 20 logins with a wrong password as fast as they go: the first ones get ERR 1045, and
    once the back-off starts (after 3 failures: 250 ms, doubling) the others get ERR 1129
    "too many failed logins" at once, so at most 6 reach the password check;
  * /metrics counts them: myrewrite_admin_login_failures_total equals the 1045s,
    myrewrite_admin_login_backoff_total the 1129s, evicted and timed-out sockets too;
  * once the wait the last refusal names is over, the right password logs in.
Environment: MR_BIN; the proxy takes free ports in front of the shared mariadbd.
"""
import os
import re
import socket
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402


def metric(proxy, name):
    with urllib.request.urlopen(proxy.http_url("/metrics"), timeout=5) as r:
        m = re.search(r"^%s (\d+)$" % name, r.read().decode(), re.M)
    return int(m.group(1)) if m else None


def idle_console_sockets(proxy, n):
    socks = []
    for _ in range(n):
        s = socket.create_connection((t.HOST, proxy.admin_port), timeout=2)
        socks.append(s)
    return socks


def closed_within(s, seconds):
    """True when the proxy closes s (EOF after its greeting) within seconds."""
    s.settimeout(0.2)
    end = time.time() + seconds
    while time.time() < end:
        try:
            if s.recv(4096) == b"":
                return True
        except socket.timeout:
            pass
        except OSError:
            return True
    return False


def main():
    if t.DIRECT_ONLY:
        print("skip: needs the proxy")
        sys.exit(77)
    proxy = t.Proxy("admin_lockout", admin=True, http=True,
                    options={"admin_login_timeout": "1s"}).start()
    socks = idle_console_sockets(proxy, 40)
    start = time.time()
    try:
        a = proxy.admin()
        version = t.rows(a, "SHOW VERSION")
        a.close()
        t.check(version and time.time() - start < 3,
                "40 sockets that never log in: the administrator logs in at once")
    except pymysql.err.MySQLError as e:
        t.not_ok("40 sockets that never log in: the administrator logs in at once", e)
    for s in socks:
        s.close()
    lone = idle_console_sockets(proxy, 1)[0]
    t.check(closed_within(lone, 3.0),
            "a socket that does not log in is closed within admin_login_timeout")
    lone.close()

    codes = []
    last_msg = ""
    for _ in range(20):
        try:
            proxy.admin(password="wrong").close()
            codes.append(0)
        except pymysql.err.MySQLError as e:
            codes.append(e.args[0])
            last_msg = str(e.args[-1])
    denied, blocked = codes.count(1045), codes.count(1129)
    t.log("20 wrong logins: %d denied (1045), %d refused by the back-off (1129)"
          % (denied, blocked))
    t.check(3 <= denied <= 6 and denied + blocked == 20,
            "wrong logins back off: at most 6 of 20 reach the password check", codes)
    t.check("too many failed logins from 127.0.0.1" in last_msg,
            "the refusal says why and from where", last_msg)
    t.eq("/metrics counts the failed logins", denied,
         metric(proxy, "myrewrite_admin_login_failures_total"))
    t.eq("/metrics counts the logins refused by the back-off", blocked,
         metric(proxy, "myrewrite_admin_login_backoff_total"))
    t.check((metric(proxy, "myrewrite_admin_login_evicted_total") or 0) >= 30,
            "/metrics counts the sockets closed for newer ones")
    t.check((metric(proxy, "myrewrite_admin_login_timeouts_total") or 0) >= 1,
            "/metrics counts the sockets that did not log in in time")

    m = re.search(r"try again in (\d+) ms", last_msg)
    time.sleep((int(m.group(1)) if m else 5000) / 1000.0 + 0.1)
    try:
        a = proxy.admin()
        t.check(t.rows(a, "SHOW VERSION"), "after the wait, the right password logs in")
        a.close()
    except pymysql.err.MySQLError as e:
        t.not_ok("after the wait, the right password logs in", e)
    proxy.stop(expect=0)
    t.done()


if __name__ == "__main__":
    main()
