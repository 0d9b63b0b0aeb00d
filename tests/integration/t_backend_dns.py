#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The proxy follows a backend host name whose address changes (a database container
restarted by docker compose comes back on a new address).

The test names the backend through a line of its own in /etc/hosts (it needs root;
the line is removed at the end), starts a proxy with `--backend NAME:PORT`, then:
  * with NAME at 127.0.0.1 (mariadbd), statements work;
  * NAME moved to 127.0.0.9, where nothing listens: within the resolver's 10 s new
    connections get "backend unavailable", the log names the new address, and a
    connection opened before keeps working on the old one;
  * NAME moved back: the failed connects make the proxy look again at once, and new
    connections work within 3 s;
  * a proxy started with a name that does not resolve yet (a database container not up):
    it starts, clients get "backend unavailable: ... does not resolve", /etc/hosts gains
    the name, and new connections work within 3 s.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes a free port.
"""
import fcntl
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

# Names of this run's own, so that two runs on one machine do not move each other's.
NAME = "myrewrite-it-backend-%d" % os.getpid()
LATE = "myrewrite-it-late-%d" % os.getpid()
HOSTS = "/etc/hosts"
PROXY = t.Proxy("backend_dns", backend=False, flags=["--backend", "%s:%d" % (NAME, t.DIRECT_PORT)])
PORT = PROXY.port
# Started once PROXY has stopped, on the same port.
LATE_PROXY = t.Proxy("backend_dns_late", port=PORT, backend=False, through=False,
                     flags=["--backend", "%s:%d" % (LATE, t.DIRECT_PORT)])


def set_hosts(ip, name=NAME):
    """Points name at ip (None: removes it), keeping every other line. Under a lock on
    the file, so that another run's edit at the same moment is not lost."""
    with open(HOSTS, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        lines = [line for line in f.read().splitlines() if not line.endswith(" " + name)]
        if ip:
            lines.append("%s %s" % (ip, name))
        f.seek(0)
        f.write("\n".join(lines) + "\n")
        f.truncate()


def works():
    try:
        c = t.connect(PORT)
        with c.cursor() as cur:
            cur.execute("SELECT 1")
            ok = cur.fetchone() == (1,)
        c.close()
        return ok
    except pymysql.err.MySQLError as e:
        return e


def wait_for(want_ok, seconds):
    """Seconds until a new connection works (want_ok) or fails with the proxy's
    "backend unavailable"; None if that never happens within `seconds`."""
    t0 = time.time()
    while time.time() - t0 < seconds:
        r = works()
        if (r is True) == want_ok and (want_ok or "backend unavailable" in str(r)):
            return time.time() - t0
        time.sleep(0.25)
    return None


def log_text():
    return PROXY.log_text()


def late_name():
    """A backend name that resolves only after the proxy started."""
    set_hosts(None, LATE)
    t0 = time.time()
    subprocess.run(["getent", "hosts", LATE], stdout=subprocess.DEVNULL)
    if time.time() - t0 > 2:  # this machine's DNS answers slowly: the proxy's start would wait
        t.log("skip the late-name part: looking up an absent name took %.1f s here"
              % (time.time() - t0))
        return
    LATE_PROXY.start()
    try:
        r = works()
        t.check("backend unavailable" in str(r) and "does not resolve" in str(r),
                "a name that does not resolve yet: the proxy runs, clients get why", r)
        set_hosts("127.0.0.1", LATE)
        took = wait_for(True, 10)
        t.check(took is not None and took < 3, "once the name resolves, new connections work "
                "within 3 s (%s s)" % (None if took is None else round(took, 1)))
    finally:
        set_hosts(None, LATE)
        rc = LATE_PROXY.stop()
    t.eq("that proxy exits 0 on SIGTERM", 0, rc)


def main():
    t.needs_own_proxy()
    if not os.access(HOSTS, os.W_OK):
        print("skip: %s is not writable (run as root)" % HOSTS)
        sys.exit(77)
    set_hosts("127.0.0.1")
    rc = None
    try:
        PROXY.start()
        t.eq("through a backend host name: statements work", True, works())
        old = t.connect(PORT, autocommit=True)
        set_hosts("127.0.0.9")
        took = wait_for(False, 15)
        t.check(took is not None, "NAME moved: new connections get \"backend unavailable\" "
                "within the resolver's 10 s (%s s)" % (None if took is None else round(took, 1)))
        t.check("now resolves to 127.0.0.9" in log_text(), "the log names the new address")
        with old.cursor() as cur:
            cur.execute("SELECT 2")
            t.eq("a connection opened before keeps working", (2,), cur.fetchone())
        old.close()
        set_hosts("127.0.0.1")
        took = wait_for(True, 10)
        t.check(took is not None and took < 3, "NAME moved back: failed connects make the "
                "proxy look again, new connections work within 3 s (%s s)"
                % (None if took is None else round(took, 1)))
        t.check("now resolves to 127.0.0.1" in log_text(), "the log names the address again")
    finally:
        set_hosts(None)
        rc = PROXY.stop()
    t.eq("proxy exits 0 on SIGTERM", 0, rc)
    late_name()
    t.done()


if __name__ == "__main__":
    main()
