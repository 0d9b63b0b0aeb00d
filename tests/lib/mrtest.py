# SPDX-License-Identifier: Apache-2.0
"""Small helpers shared by the Python integration tests.

Settings come from the environment that tests/lib/env.sh exports, so a test
run by tests/integration/run.sh talks to the same mariadbd and proxy as the
shell tests. Each check prints "ok - ..." or "not ok - ..."; done() exits 1
if any check failed.

Under a sanitizer build every proxy a test starts through Proxy (or runs
once through run_bin) is checked when it ends (stop(), kill9(), wait(), a
failed start(), leaving a `with` block, and done() or the end of the process
for any still running, which get SIGTERM): an exit with SAN_STATUS or a
sanitizer report in the log of that run fails the test.
"""
import atexit
import hashlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

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

# tests/lib/env.sh makes ASan, LeakSanitizer, UBSan and TSan end a process
# they find fault in with this status (MR_SAN_STATUS there), and
# tests/integration/run.sh scans every log a test left with the same pattern
# as SAN_REPORT (mr_sanitizer_report in env.sh).
SAN_STATUS = int(os.environ.get("MR_SAN_STATUS", "66"))
SAN_REPORT = re.compile(r"ERROR: (Address|Leak)Sanitizer|WARNING: ThreadSanitizer|"
                        r"SUMMARY: [A-Za-z]+Sanitizer|[0-9]: runtime error: ")


def sanitizer_report(text, lines=40):
    """The first lines of a sanitizer report in text, or None."""
    m = SAN_REPORT.search(text)
    if not m:
        return None
    start = text.rfind("\n", 0, m.start()) + 1
    return "\n".join(text[start:].splitlines()[:lines])


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


# Ports handed out by free_port() in this process: the kernel may offer a
# port again once its probe socket is closed, before the proxy has bound it.
_handed_ports = set()


def free_port():
    """A loopback TCP port that nothing listens on now, never the same twice
    in one process. Picked by the kernel (bind to port 0), so concurrent test
    runs do not collide the way fixed numbers did."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((HOST, 0))
            port = s.getsockname()[1]
        if port not in _handed_ports:
            _handed_ports.add(port)
            return port
    raise RuntimeError("no free loopback port found")


def _file_tail(path, lines=30):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return "(no log: %s)" % e


class Proxy:
    """A myrewrite process of the test's own, on free ports.

    Proxy("name", rules="...") listens on a free port in front of the
    direct mariadbd (backend_port=... for another one), logging into
    $MR_TMP/name.log. rules= is the text start() writes into
    $MR_TMP/name_rules/test.rules (rules_dir= picks the directory, which
    without rules= is used as it is; rules_file= the file's name). own_conn
    gives it proxy_user (the test account) for its own connection; admin=True
    adds the console on a free port (admin_password, default "adminpw"),
    http=True the HTTP endpoint. options is a dict or a list of (key, value)
    pairs passed as --set key=value; flags are further arguments, after the
    fixture's own, so a later --backend or --workers wins. command replaces
    the binary (a list, e.g. an entrypoint and its arguments); backend=False
    leaves --backend to flags; port= reuses a port (another proxy's, once it
    has stopped) instead of picking one; cwd= the directory it runs in, env=
    its environment (default: the test's).

    The ports are known at construction (port, admin_port, http_port), so
    they can be used in rules or options before start(). Used as a context
    manager it starts and stops (SIGTERM) the proxy. A restart appends to the
    log; log_text() reads what the current run wrote.

    Each run ends in _ended(), which fails the test when the run exited with
    SAN_STATUS or left a sanitizer report; done() and the end of the process
    stop (SIGTERM) every run still going, so a test that kills one proxy with
    SIGKILL still has its others checked."""

    def __init__(self, name, backend_port=None, rules_dir=None, rules=None, options=(),
                 flags=(), own_conn=False, admin=False, admin_password="adminpw",
                 http=False, workers=2, log_level="info", command=None, through=True,
                 backend=True, port=None, rules_file="test.rules", cwd=None, env=None):
        self.name = name
        self.port = port or free_port()
        self.backend_port = backend_port or DIRECT_PORT
        self.admin_port = free_port() if admin else None
        self.admin_password = admin_password
        self.http_port = free_port() if http else None
        self.log_path = os.path.join(TMP, name + ".log")
        self.rules = rules
        self.rules_file = rules_file
        self.rules_dir = rules_dir
        if rules is not None and not rules_dir:
            self.rules_dir = os.path.join(TMP, name + "_rules")
        self.through = through
        self.cwd = cwd
        self.env = env
        self.proc = None
        self._log_start = 0
        self._ended_checked = True
        self.argv = self._argv(command, options, flags, own_conn, workers, log_level, backend)

    def _argv(self, command, options, flags, own_conn, workers, log_level, backend):
        argv = list(command or [BIN]) + ["--listen", self.addr]
        if backend:
            argv += ["--backend", "%s:%d" % (HOST, self.backend_port)]
        if workers is not None:
            argv += ["--workers", str(workers)]
        if log_level is not None:
            argv += ["--log-level", log_level]
        if self.rules_dir:
            argv += ["--rules", self.rules_dir]
        sets = []
        if own_conn:
            sets += [("proxy_user", USER), ("proxy_password", PASSWORD)]
        if self.admin_port:
            sets.append(("admin_listen", "%s:%d" % (HOST, self.admin_port)))
            if self.admin_password is not None:
                sets.append(("admin_password", self.admin_password))
        if self.http_port:
            sets.append(("http_listen", self.http_url_addr))
        sets += list(options.items() if isinstance(options, dict) else options)
        for key, value in sets:
            argv += ["--set", "%s=%s" % (key, value)]
        return argv + list(flags)

    @property
    def addr(self):
        return "%s:%d" % (HOST, self.port)

    @property
    def http_url_addr(self):
        return "%s:%d" % (HOST, self.http_port)

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self, timeout=10):
        """Starts the proxy and waits until a client can log in through it
        (through=False: until it accepts TCP connections, for a backend that
        is not reachable yet). Raises, with the log's tail, if it exits or
        never gets there."""
        os.makedirs(TMP, exist_ok=True)
        if self.rules is not None:
            write_rules(self.rules_dir, self.rules, self.rules_file)
        # The first start truncates what an older run left; a restart appends.
        with open(self.log_path, "a" if self.proc else "w") as log:
            self._log_start = log.tell()
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, cwd=self.cwd,
                                         env=self.env)
        self._ended_checked = False
        if self not in _started:
            _started.append(self)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                self._ended(self.proc.returncode)
                raise RuntimeError("proxy %s exited with status %s during startup; %s:\n%s"
                                   % (self.name, self.proc.returncode, self.log_path,
                                      _file_tail(self.log_path)))
            try:
                if self.through:
                    self.connect().close()
                else:
                    socket.create_connection((HOST, self.port), timeout=1).close()
                return self
            except (pymysql.err.OperationalError, OSError):
                time.sleep(0.1)
        self.kill9()
        raise RuntimeError("proxy %s not up on port %d after %d s; %s:\n%s"
                           % (self.name, self.port, timeout, self.log_path,
                              _file_tail(self.log_path)))

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout=None):
        rc = self.proc.wait(timeout)
        self._ended(rc)
        return rc

    def stop(self, timeout=30, expect=None, desc=None):
        """SIGTERM, wait up to timeout seconds, then SIGKILL. Returns the exit
        status (negative: the signal that ended it). With expect set, also
        checks it (desc names the check); a sanitizer's status or report
        fails the test whatever expect says."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log("proxy %s ignored SIGTERM for %d s; killing" % (self.name, timeout))
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        self._ended(rc)
        if expect is not None:
            eq(desc or "proxy %s exits %d on SIGTERM" % (self.name, expect), expect, rc)
        return rc

    def kill9(self):
        """SIGKILL (a crash); returns once it is gone. LeakSanitizer cannot
        run in a killed process, but a report it wrote before still fails."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.kill()
        rc = self.proc.wait()
        self._ended(rc)
        return rc

    def _ended(self, rc):
        """The sanitizer verdict on the run that just ended with status rc,
        once per run."""
        if self._ended_checked:
            return
        self._ended_checked = True
        report = sanitizer_report(self.log_text())
        if rc == SAN_STATUS or report:
            not_ok("proxy %s ended (status %s) without a sanitizer finding" % (self.name, rc),
                   report or "exit status %d is a sanitizer's (MR_SAN_STATUS); %s"
                   % (rc, self.log_path))

    def restart(self, kill=False, timeout=10):
        """Stops (SIGTERM, or SIGKILL with kill=True) and starts again on the
        same ports; returns the exit status of the old process."""
        rc = self.kill9() if kill else self.stop()
        self.start(timeout)
        return rc

    def reload_rules(self, text):
        """Writes text as its rule file and sends SIGHUP, which reloads the rules."""
        write_rules(self.rules_dir, text, self.rules_file)
        self.send_signal(signal.SIGHUP)

    def log_text(self, all_runs=False):
        """What the current run (all_runs: every run) wrote to the log."""
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            if not all_runs:
                f.seek(self._log_start)
            return f.read()

    def log_lines(self, all_runs=False):
        return self.log_text(all_runs).splitlines()

    def wait_log(self, regex, timeout=10):
        """Waits until the current run's log matches regex; returns the match
        or None after timeout seconds."""
        pattern = re.compile(regex, re.M)
        deadline = time.time() + timeout
        while True:
            m = pattern.search(self.log_text())
            if m or time.time() >= deadline:
                return m
            time.sleep(0.1)

    def connect(self, **kw):
        """A pymysql connection through this proxy."""
        return connect(self.port, **kw)

    def admin(self, user="admin", password=None, **kw):
        """A pymysql connection to this proxy's admin console."""
        args = dict(connect_timeout=5, read_timeout=30)
        args.update(kw)
        return pymysql.connect(host=HOST, port=self.admin_port, user=user,
                               password=self.admin_password if password is None else password,
                               **args)

    def worker_of(self, conn):
        """The worker SHOW CLIENTS gives for the session of conn (a pymysql connection)."""
        port = conn._sock.getsockname()[1]
        for r in self.admin_dicts("SHOW CLIENTS"):
            if str(r["client"]).endswith(":%d" % port):
                return int(r["worker"])
        return None

    def admin_dicts(self, sql):
        """The rows of sql on this proxy's console, each a dict by column name, on a
        connection of its own."""
        a = self.admin()
        try:
            cur = a.cursor()
            cur.execute(sql)
            cols = [x[0] for x in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]
        finally:
            a.close()

    def http_url(self, path="/"):
        return "http://%s%s" % (self.http_url_addr, path)


def run_bin(args, timeout=60, **kw):
    """Runs the proxy's binary once with args (--check, --print-config, a start meant to
    fail) and returns the CompletedProcess (text, stdout and stderr captured; kw goes to
    subprocess.run). As for a Proxy, a sanitizer's status or report fails the test."""
    r = subprocess.run([BIN] + list(args), capture_output=True, text=True, timeout=timeout,
                       **kw)
    report = sanitizer_report(r.stdout + r.stderr)
    if r.returncode == SAN_STATUS or report:
        not_ok("myrewrite %s ended (status %d) without a sanitizer finding"
               % (" ".join(args)[:100], r.returncode), report or "exit status %d is a "
               "sanitizer's (MR_SAN_STATUS)" % r.returncode)
    return r


def rows(conn, sql, args=None):
    """The rows of sql on conn, as a tuple of tuples."""
    cur = conn.cursor()
    cur.execute(sql, args)
    return tuple(cur.fetchall())


def try_sql(conn, sql):
    """Runs sql on conn: None when the server answers OK or rows, else the error's args
    (code, message)."""
    try:
        conn.cursor().execute(sql)
        return None
    except pymysql.err.MySQLError as e:
        return e.args


def query(sql, args=None, port=None, **kw):
    """The rows of sql on a connection of its own (autocommit, closed after), to mariadbd
    direct unless port names another server or a proxy."""
    c = connect(port or DIRECT_PORT, autocommit=True, **kw)
    try:
        return rows(c, sql, args)
    finally:
        c.close()


def root(name="main"):
    """A root connection (autocommit) over the unix socket of env.sh's mariadbd NAME (the
    shared one by default), for what the test account may not do."""
    return pymysql.connect(unix_socket=os.path.join(TMP, name, "mariadbd.sock"), user="root",
                           autocommit=True, charset="utf8mb4")


def root_query(sql, args=None, name="main"):
    """The rows of sql on a root connection of its own to mariadbd NAME (see root())."""
    c = root(name)
    try:
        return rows(c, sql, args)
    finally:
        c.close()


def wait_until(cond, timeout=10, step=0.05):
    """Calls cond() every step seconds until it returns a true value or timeout seconds have
    passed; returns that value, or the last one."""
    end = time.time() + timeout
    got = cond()
    while not got and time.time() < end:
        time.sleep(step)
        got = cond()
    return got


def wait_rows(conn, sql, want, timeout=20, step=0.05):
    """Runs sql on conn until its rows equal want or timeout seconds have passed; returns
    the last rows."""
    got = rows(conn, sql)
    end = time.time() + timeout
    while got != want and time.time() < end:
        time.sleep(step)
        got = rows(conn, sql)
    return got


def metrics(http, prefix=""):
    """A proxy's /metrics samples whose name starts with prefix, as {'name{labels}': value}
    (float). http is a Proxy started with http=True, or the port of such an endpoint."""
    url = http.http_url("/metrics") if isinstance(http, Proxy) else \
        "http://%s:%d/metrics" % (HOST, http)
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith(prefix) and not line.startswith("#"):
            key, _, val = line.rpartition(" ")
            out[key] = float(val)
    return out


def metric(http, sample):
    """The value of one /metrics sample ('name' or 'name{labels}' as written there), or
    None when there is no such sample."""
    return metrics(http, sample).get(sample)


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


# Every Proxy started in this process, for end_proxies().
_started = []


def end_proxies():
    """Stops (SIGTERM) every proxy of this process still running and gives
    the sanitizer verdict on each run not yet checked."""
    for p in _started:
        if p.proc is not None and not p._ended_checked:
            p.stop()


def _at_exit():
    """A test that ends without done() (an exception, a skip) still has its
    proxies stopped and checked; a finding then makes the exit status 1."""
    before = _failures
    end_proxies()
    if _failures > before:
        sys.stdout.flush()
        os._exit(1)


atexit.register(_at_exit)


def done():
    end_proxies()
    if _failures:
        print("%d check(s) failed" % _failures, flush=True)
        sys.exit(1)
    print("all checks passed", flush=True)
    sys.exit(0)


def needs_own_proxy():
    """Skips the test (exit 77) in direct mode: it starts a proxy of its own."""
    if DIRECT_ONLY:
        print("skip: needs its own proxy")
        sys.exit(77)


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


_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def env_sh(cmd, **env):
    """Runs a tests/lib/env.sh helper in bash with this test's environment (plus env);
    returns (status, output)."""
    r = subprocess.run(["bash", "-c", '. "%s/tests/lib/env.sh"; %s' % (_ROOT, cmd)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=dict(os.environ, **env))
    return r.returncode, r.stdout


class Mariadb:
    """A mariadbd of the test's own (env.sh's mr_start_mariadb, datadir $MR_TMP/name), on a
    free port unless one is given, for tests that kill or restart the server, which the
    shared one must never be."""

    def __init__(self, name, port=None, **env):
        self.name = name
        self.port = port or free_port()
        self.env = env

    def start(self):
        """Starts it (again, on the same datadir); False with its log printed if it fails."""
        rc, out = env_sh("mr_start_mariadb %s %d" % (self.name, self.port), **self.env)
        if rc:
            print(out)
        return rc == 0

    def kill9(self):
        """SIGKILL straight from here (no shell in between, so it lands when called), then
        waits for it to be gone and clears its pid file."""
        pid = mariadbd_pid(self.name)
        if pid:
            os.kill(pid, signal.SIGKILL)
        env_sh("mr_kill_mariadb %s" % self.name)  # waits until no thread of it is left

    def stop(self):
        env_sh("mr_stop_mariadb %s" % self.name)

    def connect(self, **kw):
        return connect(self.port, **kw)


def flush_until_ok(port, table="", timeout=60):
    """FLUSH DELAYED [table] through the proxy on port until it answers OK (a flusher that
    has to reconnect first answers errors meanwhile); None, or the last error."""
    end, last = time.time() + timeout, None
    while time.time() < end:
        try:
            c = connect(port, autocommit=True)
            try:
                c.cursor().execute(("FLUSH DELAYED " + table).strip())
                return None
            finally:
                c.close()
        except pymysql.err.MySQLError as e:
            last = e
            time.sleep(0.3)
    return last or "timeout"


def flush_once(proxy, table="", read_timeout=20):
    """FLUSH DELAYED [table] once, on a connection of its own to proxy (a Proxy): None when
    it answers OK, else the error code."""
    c = proxy.connect(autocommit=True, read_timeout=read_timeout)
    try:
        c.cursor().execute(("FLUSH DELAYED " + table).strip())
        return None
    except pymysql.err.MySQLError as e:
        return e.args[0]
    finally:
        c.close()


def applied_within(before, after, acked, doubt):
    """Per key, whether the growth after - before lies between the acknowledged increments and
    acknowledged + in doubt; returns {key: (grown, low, high)} for the keys where it does not."""
    bad = {}
    for k in after:
        grown = after[k] - before.get(k, 0)
        lo = acked.get(k, 0)
        hi = lo + doubt.get(k, 0)
        if not lo <= grown <= hi:
            bad[k] = (grown, lo, hi)
    return bad
