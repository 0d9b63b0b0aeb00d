#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Failure handling, on a private mariadbd ("fault") and a private proxy, both on
# free ports, so that killing the backend does not disturb other tests.
#  (a) backend down at connect time -> ERR (2003, SQLSTATE 08S01) "backend unavailable:", proxy lives
#  (b) backend killed mid-query     -> client errors within 5 s, proxy lives
#  (c) garbage from a client        -> that client is dropped, others unaffected
#  (d) 200 concurrent connect/close loops all succeed, no sessions leak
set -uo pipefail
# shellcheck source=../lib/env.sh
. "$(dirname "$0")/../lib/env.sh"
trap mr_cleanup EXIT

mr_free_port DB_PORT || mr_die "no free port"
mr_free_port FP || mr_die "no free port"
export MR_FAULT_DB_PORT=$DB_PORT
: >"$MR_TMP/fault.log"

mr_start_mariadb fault "$DB_PORT" || mr_die "cannot start mariadbd fault"
if mr_direct_only; then
    FP=$DB_PORT
else
    mr_start_proxy fault "$FP" "$DB_PORT" || mr_die "cannot start proxy fault"
fi
export MR_FAULT_PORT=$FP

proxy_alive() {
    local what=$1
    mr_direct_only && return 0
    if mr_pid_alive "$(mr_proxy_pid fault)"; then
        mr_ok "proxy still running after $what"
    else
        mr_not_ok "proxy died during $what"
        tail -n 30 "$MR_TMP/fault.log"
    fi
}
q() { timeout 20 mariadb --no-defaults --protocol=TCP -h "$MR_HOST" -P "$FP" -u "$MR_USER" -p"$MR_PASSWORD" "$@" 2>&1; }

mr_eq "sanity: query through fault proxy" "1" "$(q -N -e 'select 1')"

# ---------------------------------------------------------------- (a)
echo "# (a) backend down at connect time"
mr_stop_mariadb fault
# Several attempts: each must be refused the same way, and quickly.
bad=0 slowest=0
for i in 1 2 3 4 5; do
    t0=$(date +%s%N)
    out=$(q -e 'select 1'; echo "rc=$?")
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    ((ms > slowest)) && slowest=$ms
    [[ $out =~ ^ERROR\ [0-9]+.*rc=1$ ]] || { bad=$((bad + 1)); echo "   attempt $i: $out"; }
done
mr_eq "mariadb CLI refused with an error 5 times out of 5 (last: ${out%%$'\n'*})" 0 "$bad"
if ((slowest < 5000)); then mr_ok "refusals are fast (slowest ${slowest} ms)"; else mr_not_ok "a refusal took ${slowest} ms"; fi
# What the proxy puts on the wire, and what pymysql (which accepts any error
# code) reports. libmariadb-based clients such as the CLI reject error codes
# from their own client range (2002-2055 or so) when a server sends them and
# show "2027 Received malformed packet" instead, so the exact code is checked
# here rather than through the CLI.
"$MR_PY" - <<'PY'
import os, socket, struct, sys
sys.path.insert(0, os.path.join(os.environ["MR_ROOT"], "tests", "lib"))
import mrtest as t
import pymysql
port = int(os.environ["MR_FAULT_PORT"])
if t.DIRECT_ONLY:
    try:
        socket.create_connection((t.HOST, port), timeout=5)
        t.not_ok("direct: dead backend port still accepts connections")
    except ConnectionRefusedError:
        t.ok("direct: dead backend refuses TCP connections")
else:
    s = socket.create_connection((t.HOST, port), timeout=10)
    s.settimeout(10)
    data = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    s.close()
    if len(data) < 4:
        t.not_ok("proxy sent a packet before closing", data)
    else:
        n, seq = data[0] | data[1] << 8 | data[2] << 16, data[3]
        body = data[4:4 + n]
        t.eq("first packet is ERR with sequence id 0", (0xFF, 0), (body[:1] and body[0], seq))
        code = struct.unpack("<H", body[1:3])[0] if len(body) >= 3 else None
        # ER_SERVER_SHUTDOWN's 1053, as the README's error table says: a
        # code in libmariadb's client range (2000-2999) would be refused by
        # its clients as a malformed packet.
        t.eq("error code 1053 (backend unavailable)", 1053, code)
        t.eq("SQLSTATE 08S01", b"#08S01", body[3:9])
        msg = body[9:].decode("utf-8", "replace")
        t.check(msg.startswith("backend unavailable:"), "message starts with 'backend unavailable:' (%s)" % msg)
        t.eq("connection closed after the ERR", 4 + n, len(data))
try:
    pymysql.connect(host=t.HOST, port=port, user=t.USER, password=t.PASSWORD, connect_timeout=5)
    t.not_ok("pymysql connected to a dead backend")
except pymysql.MySQLError as e:
    if t.DIRECT_ONLY:
        t.eq("direct: pymysql reports 2003", 2003, e.args[0])
    else:
        t.check(e.args[1].startswith("backend unavailable:"),
                "pymysql reports backend unavailable: %r" % (e.args,))
t.done()
PY
[[ $? == 0 ]] || MR__FAILS=$((MR__FAILS + 1))
proxy_alive "connects to a dead backend"
mr_start_mariadb fault "$DB_PORT" >/dev/null 2>&1 || mr_die "cannot restart mariadbd fault"
mr_eq "queries work once the backend is back" "back" "$(q -N -e "select 'back'")"

# ---------------------------------------------------------------- (b)
echo "# (b) backend killed with SIGKILL during SELECT SLEEP(30)"
"$MR_PY" - "$(cat "$MR_TMP/fault/mariadbd.pid")" <<'PY'
import os, signal, sys, threading, time
sys.path.insert(0, os.path.join(os.environ["MR_ROOT"], "tests", "lib"))
import mrtest as t
port = int(os.environ["MR_FAULT_PORT"])
idle = t.connect(port, read_timeout=30)
busy = t.connect(port, read_timeout=30)
result = {}

def long_query():
    try:
        with busy.cursor() as cur:
            cur.execute("SELECT SLEEP(30)")
            result["rows"] = cur.fetchall()
    except Exception as e:
        result["err"] = e
    result["end"] = time.time()

th = threading.Thread(target=long_query)
th.start()
time.sleep(1.0)
killed_at = time.time()
os.kill(int(sys.argv[1]), signal.SIGKILL)
th.join(30)
if "end" not in result:
    t.not_ok("client still waiting 30 s after the backend died")
else:
    secs = result["end"] - killed_at
    err = result.get("err")
    t.check(err is not None, "busy session got an error: %r" % (err,))
    code = err.args[0] if err is not None and err.args else None
    msg = str(err.args[1]) if err is not None and len(err.args) > 1 else ""
    # Either the proxy closed the connection (pymysql: 2013/2006) or it sent an
    # ERR saying so; any code, as long as the message is the proxy's.
    t.check(code in (2013, 2006) or "backend connection lost" in msg,
            "error is a lost connection or 'backend connection lost' ERR: %r" % (err,))
    t.check(secs < 5, "error arrived %.2f s after the kill (< 5 s)" % secs)

# The idle session must notice on its next use, not hang.
start = time.time()
try:
    with idle.cursor() as cur:
        cur.execute("SELECT 1")
    t.not_ok("idle session still answered with the backend dead")
except Exception as e:
    secs = time.time() - start
    code = e.args[0] if e.args else None
    t.check(secs < 5, "idle session fails fast on next use (%.2f s): %r" % (secs, e))
    # A clean close (or an ERR 2013) shows up as 2006/2013 in pymysql; a
    # protocol mix-up would be an InternalError instead.
    t.check(code in (2006, 2013), "idle session error is 2006/2013, got %r" % (code,))
t.done()
PY
[[ $? == 0 ]] || MR__FAILS=$((MR__FAILS + 1))
proxy_alive "backend SIGKILL"
mr_kill_mariadb fault   # no-op if already dead; clears the pid file
mr_start_mariadb fault "$DB_PORT" >/dev/null 2>&1 || mr_die "cannot restart mariadbd fault after SIGKILL"
mr_eq "new session after the backend restart works" "2" "$(q -N -e 'select 1+1')"

# ---------------------------------------------------------------- (c)
echo "# (c) garbage from clients while a normal session keeps working"
"$MR_PY" - <<'PY'
import os, random, socket, struct, sys, threading, time
sys.path.insert(0, os.path.join(os.environ["MR_ROOT"], "tests", "lib"))
import mrtest as t
port = int(os.environ["MR_FAULT_PORT"])
rng = random.Random(7)
stop = threading.Event()
good = {"n": 0, "err": None}

def normal_session():
    try:
        conn = t.connect(port)
        with conn.cursor() as cur:
            while not stop.is_set():
                cur.execute("SELECT %s", (good["n"],))
                if cur.fetchone()[0] != good["n"]:
                    raise RuntimeError("wrong answer")
                good["n"] += 1
                time.sleep(0.01)
        conn.close()
    except Exception as e:
        good["err"] = e

def read_packet(s):
    hdr = b""
    while len(hdr) < 4:
        chunk = s.recv(4 - len(hdr))
        if not chunk:
            return None
        hdr += chunk
    n = hdr[0] | hdr[1] << 8 | hdr[2] << 16
    body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        if not chunk:
            return None
        body += chunk
    return body

def wait_closed(s, limit=15.0):
    """Seconds until the peer closed the connection (None if it did not),
    and whether an ERR packet came first."""
    s.settimeout(limit)
    start = time.time()
    saw_err = False
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return time.time() - start, saw_err
            if len(data) > 4 and data[4] == 0xFF:
                saw_err = True
    except ConnectionResetError:
        return time.time() - start, saw_err
    except socket.timeout:
        return None, saw_err

def garbage_case(label, payload_fn, read_greeting=True):
    s = socket.create_connection((t.HOST, port), timeout=10)
    if read_greeting:
        greeting = read_packet(s)
        if not greeting or greeting[0] not in (10, 0xFF):
            t.not_ok("%s: no greeting (%r)" % (label, greeting[:8] if greeting else greeting))
    try:
        s.sendall(payload_fn())
    except OSError:
        pass
    secs, saw_err = wait_closed(s)
    s.close()
    t.check(secs is not None, "%s: connection closed by the server side%s%s" % (
        label, "" if secs is None else " after %.2f s" % secs, " (ERR first)" if saw_err else ""))

# daemon: an exception in the main thread must not leave the script waiting on it.
th = threading.Thread(target=normal_session, daemon=True)
th.start()
time.sleep(0.2)

garbage_case("random bytes instead of the handshake response",
             lambda: bytes(rng.randrange(256) for _ in range(512)))
garbage_case("huge length header (0xFFFFFF) then junk",
             lambda: struct.pack("<I", 0xFFFFFF | (1 << 24)) + os.urandom(64))
garbage_case("text protocol garbage before the greeting was read",
             lambda: b"GET / HTTP/1.0\r\n\r\n" * 4, read_greeting=False)
garbage_case("zero-length packet as handshake response", lambda: b"\x00\x00\x00\x01")

# Connect and vanish, many times: half-made sessions must be cleaned up.
for _ in range(50):
    s = socket.create_connection((t.HOST, port), timeout=5)
    s.close()
c = t.connect(port, connect_timeout=5)
t.eq("after 50 connect-then-close clients a new login is answered", ((1,),),
     t.rows(c, "SELECT 1"))
c.close()

# A logged-in client sends a packet with a wrong sequence number and then
# random junk: the server may answer with an ERR, but the session must end
# or stay sane; either way the proxy and other sessions are unaffected.
conn = t.connect(port)
sock = conn._sock
sock.sendall(b"\x05\x00\x00\x07junk!" + os.urandom(300))
secs, saw_err = wait_closed(sock)
t.check(secs is not None, "authenticated client sending junk is disconnected%s" %
        ("" if secs is None else " after %.2f s" % secs))
try:
    conn.close()
except Exception:
    pass

time.sleep(0.5)
stop.set()
th.join(10)
t.check(good["err"] is None and good["n"] > 10,
        "concurrent normal session kept working (%d queries, error %r)" % (good["n"], good["err"]))
t.done()
PY
[[ $? == 0 ]] || MR__FAILS=$((MR__FAILS + 1))
proxy_alive "garbage clients"
if ! mr_direct_only; then
    echo "   proxy log, last lines:"
    tail -n 5 "$MR_TMP/fault.log" | sed 's/^/   | /'
fi

# ---------------------------------------------------------------- (d)
echo "# (d) 200 concurrent connections, open/close in a loop"
"$MR_PY" - "$(mr_proxy_pid fault)" <<'PY'
import os, sys, threading, time
sys.path.insert(0, os.path.join(os.environ["MR_ROOT"], "tests", "lib"))
import mrtest as t
port = int(os.environ["MR_FAULT_PORT"])
db_port = int(os.environ["MR_FAULT_DB_PORT"])
proxy_pid = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] and not t.DIRECT_ONLY else None
N, ROUNDS = 200, 5

def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))

# One long-lived monitor session: a fresh probe per call would itself linger
# in Threads_connected for a moment after closing and skew the count.
monitor = t.connect(db_port, autocommit=True)

def connected():
    with monitor.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE 'Threads_connected'")
        return int(cur.fetchone()[1]) - 1  # minus the monitor

base_threads = connected()
base_fds = nfds(proxy_pid) if proxy_pid else None
barrier = threading.Barrier(N)
errors, ok_count, peak = [], [0], [0]
lock = threading.Lock()

def worker(i):
    for r in range(ROUNDS):
        try:
            barrier.wait(30)  # everyone connects at the same moment
            conn = t.connect(port, connect_timeout=20)
            with conn.cursor() as cur:
                cur.execute("SELECT %s + %s", (i, r))
                if cur.fetchone()[0] != i + r:
                    raise RuntimeError("wrong result")
            barrier.wait(30)  # ... and all are open at once before closing
            conn.close()
            with lock:
                ok_count[0] += 1
        except Exception as e:
            with lock:
                errors.append("%d/%d: %r" % (i, r, e))
            try:
                barrier.abort()
            except Exception:
                pass
            return

start = time.time()
threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(N)]
for th in threads:
    th.start()
for th in threads:
    th.join(120)
secs = time.time() - start
# Root causes first: one failure breaks the barrier for everybody else.
errors.sort(key=lambda e: "BrokenBarrierError" in e)
t.check(not errors, "%d x %d concurrent sessions succeeded in %.1f s (%d errors%s)" % (
    N, ROUNDS, secs, len(errors), ": " + "; ".join(errors[:5]) if errors else ""))
t.eq("all sessions completed", N * ROUNDS, ok_count[0])

# Closed clients must release their backend sessions (and the proxy its fds).
deadline = time.time() + 10
while time.time() < deadline and connected() > base_threads:
    time.sleep(0.2)
left = connected()
t.eq("backend sessions back to baseline", base_threads, left)
if left != base_threads:
    with monitor.cursor() as cur:
        cur.execute("SELECT ID, USER, HOST, COMMAND, TIME, STATE, INFO FROM information_schema.PROCESSLIST")
        for row in cur.fetchall():
            print("   ", row)
if proxy_pid:
    while time.time() < deadline and nfds(proxy_pid) > base_fds:
        time.sleep(0.2)
    t.check(nfds(proxy_pid) <= base_fds, "proxy fds back to baseline (%d -> %d)" % (base_fds, nfds(proxy_pid)))
t.done()
PY
[[ $? == 0 ]] || MR__FAILS=$((MR__FAILS + 1))
proxy_alive "200-connection churn"

# SIGTERM with nothing in flight: the proxy must exit 0.
if ! mr_direct_only; then
    if mr_stop_proxy fault; then mr_ok "proxy exits 0 on SIGTERM"; else mr_not_ok "proxy SIGTERM exit"; fi
fi
mr_done
