# SPDX-License-Identifier: Apache-2.0
"""group_ab.py - the runs of bench/group_ab.sh: for each round, each proxy build in turn,
one group-commit run of 128 clients, with the CPU of proxy, mariadbd and generator per
acknowledged statement, then an exactness check of the counters.
"""
import argparse
import os
import re
import resource
import socket
import subprocess
import sys
import time
import urllib.request

import pymysql

HOST, USER, PASSWORD, DB = "127.0.0.1", "app", "apppw", "test"
STMT = "UPDATE DELAYED counters SET hits = hits + 1 WHERE id = %d"
CLK = os.sysconf("SC_CLK_TCK")
CLIENTS = 128


def free_port():
    s = socket.socket()
    s.bind((HOST, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def query(c, sql):
    cur = c.cursor()
    cur.execute(sql)
    return cur.fetchall()


def cpu_of(pid):
    """(user, system) CPU seconds of process pid so far."""
    v = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(v[11]) / CLK, int(v[12]) / CLK


def ticks():
    """(busy, total) jiffies of all CPUs."""
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)


def metrics(port):
    text = urllib.request.urlopen("http://%s:%d/metrics" % (HOST, port)).read().decode()

    def get(name):
        m = re.search(r"^myrewrite_delayed_group_%s (\S+)" % name, text, re.M)
        return int(float(m.group(1))) if m else 0
    return get("batches_total"), get("statements_total"), get("merged_total")


def start_proxy(binary, a, rules, port, http_port, log):
    argv = [binary, "--listen", "%s:%d" % (HOST, port), "--backend", "%s:%d" % (HOST, a.db_port),
            "--rules", rules, "--workers", "2", "--set", "proxy_user=" + USER,
            "--set", "proxy_password=" + PASSWORD, "--log-level", "warn"]
    if http_port:
        argv += ["--set", "http_listen=%s:%d" % (HOST, http_port)]
    p = subprocess.Popen(argv, stdout=log, stderr=log)
    for _ in range(100):
        try:
            socket.create_connection((HOST, port)).close()
            return p
        except OSError:
            time.sleep(0.1)
    sys.exit("proxy %s did not start" % binary)


def drive(a, port, clients, threads, secs):
    """(acknowledged, elapsed) of one load run."""
    if a.driver == "sysbench":
        out = subprocess.run(
            ["sysbench", a.lua, "--db-driver=mysql", "--mysql-host=" + HOST,
             "--mysql-port=%d" % port, "--mysql-user=" + USER, "--mysql-password=" + PASSWORD,
             "--mysql-db=" + DB, "--mysql-ssl=off", "--threads=%d" % clients,
             "--time=%d" % round(secs), "--events=0", "--report-interval=0",
             "--rand-type=uniform", "--hot=%d" % a.hot, "--stmt=" + STMT, "run"],
            capture_output=True, text=True)
        n = re.search(r"total number of events:\s+(\d+)", out.stdout)
        el = re.search(r"total time:\s+([\d.]+)s", out.stdout)
        if not n or not el:
            sys.exit("sysbench: " + out.stdout[-300:] + out.stderr[-300:])
        return int(n.group(1)), float(el.group(1))
    out = subprocess.run([a.loadgen, HOST, str(port), USER, PASSWORD, DB, str(clients),
                          str(threads), str(secs), str(a.hot), STMT],
                         capture_output=True, text=True)
    kv = dict(x.split("=", 1) for x in out.stdout.split() if "=" in x)
    if "acks" not in kv or int(kv["errors"]):
        sys.exit("delayed_load: " + out.stdout + out.stderr)
    return int(kv["acks"]), float(kv["elapsed"])


def drain(binary, a, rules, d, log):
    """A proxy of the build flushes what is still staged (the run's own flushed at its stop)."""
    p = None
    for _ in range(600):
        if query(d, "SELECT COUNT(*) FROM counters_delayed")[0][0] == 0:
            break
        if not p:
            p = start_proxy(binary, a, rules, free_port(), 0, log)
        time.sleep(0.1)
    if p:
        p.terminate()
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db-port", type=int, required=True)
    ap.add_argument("--db-pid", type=int, required=True)
    ap.add_argument("--loadgen", required=True)
    ap.add_argument("--lua", required=True)
    ap.add_argument("rounds", type=int)
    ap.add_argument("seconds", type=float)
    ap.add_argument("hot", type=int)
    ap.add_argument("driver", choices=("c", "sysbench"))
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    tmp = os.environ["MR_TMP"]
    d = pymysql.connect(host=HOST, port=a.db_port, user=USER, password=PASSWORD, database=DB,
                        autocommit=True)
    query(d, "DROP TABLE IF EXISTS counters, counters_delayed")
    query(d, "CREATE TABLE counters (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0) "
             "ENGINE=InnoDB")
    query(d, "INSERT INTO counters (id) SELECT seq FROM seq_1_to_1000")
    rules = os.path.join(tmp, "rules")
    os.makedirs(rules, exist_ok=True)
    extra = os.environ.get("GROUP_AB_RULE", "").replace("\\n", "\n")
    with open(os.path.join(rules, "10-ab.rules"), "w") as f:
        f.write("[delayed ab]\ntable = test.counters\nkey = id\ncolumns = hits\n"
                "group_commit = yes\nflush_interval = %s\n%s\n"
                % (os.environ.get("GROUP_AB_FLUSH", "1s"), extra))
    log = open(os.path.join(tmp, "proxies.log"), "a")
    print("# %g s per run, %d clients, hot rows %d, driver %s; load average at start %s"
          % (a.seconds, CLIENTS, a.hot, a.driver, " ".join(open("/proc/loadavg").read().split()[:3])))
    print("# CPU columns: us per acknowledged statement (u = user, s = system); rest: the 2 CPUs'"
          " busy time not in those three processes")
    print("%-32s %8s %6s %6s %6s %6s %6s %6s %6s %5s %7s %7s  %s"
          % ("build", "incr/s", "mr_u", "mr_s", "db_u", "db_s", "gen_u", "gen_s", "rest",
             "cpu%", "st/bat", "mrg/bat", "check"), flush=True)
    acked = 0
    ncpu = os.cpu_count()
    for _ in range(a.rounds):
        for binary in a.binaries:
            port, http_port = free_port(), free_port()
            p = start_proxy(binary, a, rules, port, http_port, log)
            acked += drive(a, port, 16, 1, 1)[0]  # warm-up: connections, staging table
            time.sleep(1.5)
            m0, c0, dc0, t0 = metrics(http_port), cpu_of(p.pid), cpu_of(a.db_pid), ticks()
            g0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            acks, elapsed = drive(a, port, CLIENTS, 2, a.seconds)
            m1, c1, dc1, t1 = metrics(http_port), cpu_of(p.pid), cpu_of(a.db_pid), ticks()
            g1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            p.terminate()
            p.wait()
            acked += acks
            per = 1e6 / acks
            cols = [(c1[0] - c0[0]) * per, (c1[1] - c0[1]) * per,
                    (dc1[0] - dc0[0]) * per, (dc1[1] - dc0[1]) * per,
                    (g1.ru_utime - g0.ru_utime) * per, (g1.ru_stime - g0.ru_stime) * per]
            busy = (t1[0] - t0[0]) / max(1, t1[1] - t0[1])
            rest = busy * ncpu * elapsed * 1e6 / acks - sum(cols)
            batches = max(1, m1[0] - m0[0])
            drain(binary, a, rules, d, log)
            total = query(d, "SELECT CAST(SUM(hits) AS SIGNED) FROM counters")[0][0]
            check = "OK" if total == acked else "MISMATCH (%d, acknowledged %d)" % (total, acked)
            print("%-32s %8.0f %6.1f %6.1f %6.1f %6.1f %6.1f %6.1f %6.1f %5.0f %7.1f %7.1f  %s"
                  % ((binary[-32:], acks / elapsed) + tuple(cols)
                     + (rest, busy * 100, (m1[1] - m0[1]) / batches, (m1[2] - m0[2]) / batches,
                        check)), flush=True)
    print("\ncommand: bench/group_ab.sh %d %g %d %s %s"
          % (a.rounds, a.seconds, a.hot, a.driver, " ".join(a.binaries)))


main()
