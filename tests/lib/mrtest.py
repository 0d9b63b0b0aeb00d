"""Small helpers shared by the Python integration tests.

Settings come from the environment that tests/lib/env.sh exports, so a test
run by tests/integration/run.sh talks to the same mariadbd and proxy as the
shell tests. Each check prints "ok - ..." or "not ok - ..."; done() exits 1
if any check failed.
"""
import hashlib
import os
import socket
import subprocess
import sys
import time

import pymysql

HOST = os.environ.get("MR_HOST", "127.0.0.1")
DIRECT_PORT = int(os.environ.get("MR_DIRECT_PORT", "23306"))
PROXY_PORT = int(os.environ.get("MR_PROXY_PORT", "26033"))
USER = os.environ.get("MR_USER", "app")
PASSWORD = os.environ.get("MR_PASSWORD", "apppw")
DB = os.environ.get("MR_DB", "test")
TMP = os.environ.get(
    "MR_TMP", os.path.join(os.path.dirname(__file__), "..", "..", ".tmp", "it"))
DIRECT_ONLY = os.environ.get("MR_DIRECT_ONLY", "0") == "1"
BIN = os.environ.get("MR_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                            "myrewrite"))

_failures = 0


def connect(port=None, **kw):
    """A pymysql connection; port defaults to the proxy."""
    args = dict(host=HOST, port=port or PROXY_PORT, user=USER, password=PASSWORD,
                database=DB, charset="utf8mb4", connect_timeout=10,
                read_timeout=120, write_timeout=120)
    args.update(kw)
    return pymysql.connect(**args)


def direct(**kw):
    return connect(DIRECT_PORT, **kw)


def proxy(**kw):
    return connect(PROXY_PORT, **kw)


def write_rules(rules_dir, text, name="test.rules"):
    """Writes one rule file into rules_dir (made if missing); returns the dir."""
    os.makedirs(rules_dir, exist_ok=True)
    with open(os.path.join(rules_dir, name), "w") as f:
        f.write(text)
    return rules_dir


def start_proxy(port, log_path, rules_dir=None, own_conn=False, extra=(), workers=2,
                through=True):
    """A proxy of the test's own on `port` in front of the direct mariadbd,
    logging at info into log_path (truncated); own_conn gives it proxy_user
    (the test account) for its background connection. Returns the process
    once a client can log in through it (through=False: once it accepts TCP
    connections, for a backend that is not reachable yet); raises if it
    exits or never does."""
    args = [BIN, "--listen", "%s:%d" % (HOST, port),
            "--backend", "%s:%d" % (HOST, DIRECT_PORT),
            "--workers", str(workers), "--log-level", "info"]
    if rules_dir:
        args += ["--rules", rules_dir]
    if own_conn:
        args += ["--set", "proxy_user=%s" % USER, "--set", "proxy_password=%s" % PASSWORD]
    log_file = open(log_path, "w")
    p = subprocess.Popen(args + list(extra), stdout=log_file, stderr=log_file)
    for _ in range(100):
        if p.poll() is not None:
            raise RuntimeError("proxy on port %d exited (%s): see %s" % (port, p.returncode,
                                                                        log_path))
        try:
            if through:
                connect(port).close()
            else:
                socket.create_connection((HOST, port), timeout=1).close()
            return p
        except (pymysql.err.OperationalError, OSError):
            time.sleep(0.1)
    p.kill()
    raise RuntimeError("proxy on port %d did not come up: see %s" % (port, log_path))


def rows(conn, sql, args=None):
    """The rows of sql on conn, as a tuple of tuples."""
    cur = conn.cursor()
    cur.execute(sql, args)
    return tuple(cur.fetchall())


def run_threads(threads):
    """Starts every thread, waits for all; returns the seconds it took."""
    t0 = time.time()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.time() - t0


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def ok(desc):
    print("ok - " + desc, flush=True)


def not_ok(desc, detail=None):
    global _failures
    _failures += 1
    print("not ok - " + desc, flush=True)
    if detail:
        print("   " + str(detail)[:2000], flush=True)


def check(cond, desc, detail=None):
    if cond:
        ok(desc)
    else:
        not_ok(desc, detail)
    return bool(cond)


def eq(desc, expected, actual):
    if expected == actual:
        ok(desc)
        return True
    not_ok(desc, "expected %r\n   actual   %r" % (_short(expected), _short(actual)))
    return False


def _short(v):
    s = repr(v)
    return s if len(s) < 600 else s[:600] + "...(%d chars)" % len(s)


def sha1(data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha1(data).hexdigest()


def done():
    if _failures:
        print("%d check(s) failed" % _failures, flush=True)
        sys.exit(1)
    print("all checks passed", flush=True)
    sys.exit(0)


def proxy_pid(name="main"):
    """PID of a proxy started by mr_start_proxy, or None (direct mode)."""
    if DIRECT_ONLY:
        return None
    pid = os.environ.get("MR_PROXY_PID") if name == "main" else None
    if not pid:
        try:
            with open(os.path.join(TMP, name + ".pid")) as f:
                pid = f.read().strip()
        except OSError:
            return None
    return int(pid) if pid else None


def mariadbd_pid(name="main"):
    try:
        with open(os.path.join(TMP, name, "mariadbd.pid")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def rss_kib(pid):
    """Resident set size of pid in KiB, from /proc/PID/status."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS for pid %d" % pid)
