#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The HTTP endpoint (http_listen): /metrics, /health, /ready, through proxies of its own.

  * http_listen is validated (--check) and off by default: no listener; a taken
    port stops the start;
  * /health answers 200 "ok", HEAD has no body, other paths 404, other methods 405;
  * /metrics passes a strict line-format check written here (every sample
    `name{labels} value`, HELP and TYPE before a family's samples, families
    contiguous, counters end in _total) and prometheus_client's parser;
  * myrewrite_commands_total moves by exactly the N statements sent on an
    open connection; a rewrite rule's hit counter and the rewritten counter
    move by the matching statements only; closes are counted by reason;
  * the front end's statement counter moves by exactly the statements sent and
    its time moves; paginate deferred and refused pages move exactly; rule
    reloads are counted as ok and failed; the flush-duration histogram is a
    histogram prometheus_client reads, its +Inf bucket equal to its count;
  * /ready is 200, turns 503 with a one-line reason when this test's own
    mariadbd stops, and 200 again when it is back; bursts of /ready do not
    turn into bursts of backend connections (one check a second at most);
  * docker/healthcheck.sh passes against the endpoint and fails without it, and
    docker/myrewrite.conf serves the address the Dockerfile's HEALTHCHECK uses;
  * the proxy still exits 0 on SIGTERM.
Environment: MR_BIN; its own mariadbd "http" and the proxies take free ports.
"""
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PORT = t.free_port()
HTTP_PORT = t.free_port()
DB_PORT = t.free_port()
DB_NAME = "http"
RULES_DIR = os.path.join(t.TMP, "http_rules")
# One after the other on the same ports: without the endpoint, then with it.
PROXIES = {
    "http_off": t.Proxy("http_off", port=PORT, backend_port=DB_PORT, cwd=ROOT),
    "http_on": t.Proxy("http_on", port=PORT, backend_port=DB_PORT, cwd=ROOT, rules_dir=RULES_DIR,
                       options=[("http_listen", "%s:%d" % (t.HOST, HTTP_PORT))]),
}
RULES = """
[rewrite http_upper]
pattern = SELECT name FROM ht_items WHERE id = ?
replacement = SELECT UPPER(name) AS name FROM ht_items WHERE id = ?

[paginate http_pages]
table = ht_pages
key = id
threshold = 10
max_offset = 40
"""
BROKEN_RULES = """
[regex http_broken]
match = ^SELECT (unclosed
replace = x
"""


# ---- plumbing ------------------------------------------------------------------------------

def listening(port):
    s = socket.socket()
    s.settimeout(1)
    try:
        s.connect((t.HOST, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def proxy_log(name):
    return PROXIES[name].log_text()


def request(path, method="GET"):
    """(status, headers dict with lower-case names, body text)."""
    c = http.client.HTTPConnection(t.HOST, HTTP_PORT, timeout=10)
    try:
        c.request(method, path)
        r = c.getresponse()
        body = r.read().decode("utf-8")
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        c.close()


def raw_head(path):
    """The bytes a HEAD request gets, read until the server closes (HTTP/1.0)."""
    s = socket.create_connection((t.HOST, HTTP_PORT), timeout=5)
    s.sendall(b"HEAD " + path.encode() + b" HTTP/1.0\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    s.close()
    return data


# ---- the metrics format --------------------------------------------------------------------

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL_VALUE = r'"(?:[^"\\\n]|\\\\|\\"|\\n)*"'
LABELS = r"\{(?:%s=%s(?:,%s=%s)*,?)?\}" % (r"[a-zA-Z_][a-zA-Z0-9_]*", LABEL_VALUE,
                                         r"[a-zA-Z_][a-zA-Z0-9_]*", LABEL_VALUE)
VALUE = r"(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?Inf|NaN)"
SAMPLE = re.compile(r"^(%s)(%s)? (%s)(?: -?\d+)?$" % (NAME, LABELS, VALUE))
HELP = re.compile(r"^# HELP (%s) (.*)$" % NAME)
TYPE = re.compile(r"^# TYPE (%s) (counter|gauge|histogram|summary|untyped)$" % NAME)


def family_of(name, types):
    if name in types:
        return name
    for suffix in ("_bucket", "_count", "_sum"):
        base = name[:-len(suffix)]
        if name.endswith(suffix) and types.get(base) in ("histogram", "summary"):
            return base
    return None


def strict_check(text):
    """Problems with `text` as Prometheus text format 0.0.4; also returns the samples
    as {(name, frozenset(labels)): value}."""
    problems, samples = [], {}
    types, helps, done, current = {}, set(), set(), None
    if not text.endswith("\n"):
        problems.append("does not end with a newline")
    for n, line in enumerate(text.split("\n")[:-1], 1):
        if m := HELP.match(line):
            if m.group(1) in helps:
                problems.append("%d: second HELP for %s" % (n, m.group(1)))
            helps.add(m.group(1))
        elif m := TYPE.match(line):
            name = m.group(1)
            if name in types:
                problems.append("%d: second TYPE for %s" % (n, name))
            if name not in helps:
                problems.append("%d: TYPE %s before its HELP" % (n, name))
            types[name] = m.group(2)
        elif line.startswith("#"):
            problems.append("%d: comment that is neither HELP nor TYPE: %r" % (n, line))
        elif m := SAMPLE.match(line):
            fam = family_of(m.group(1), types)
            if fam is None:
                problems.append("%d: sample %s before its TYPE" % (n, m.group(1)))
                continue
            if fam != current:
                if fam in done:
                    problems.append("%d: family %s is not contiguous" % (n, fam))
                done.add(fam)
                current = fam
            labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)=("(?:[^"\\]|\\.)*")',
                                          m.group(2) or ""))
            key = (m.group(1), labels)
            if key in samples:
                problems.append("%d: duplicate sample %s" % (n, line))
            samples[key] = float(m.group(3))
        else:
            problems.append("%d: not a valid line: %r" % (n, line))
    for name, typ in types.items():
        if not name.startswith("myrewrite_"):
            problems.append("%s: not in the myrewrite_ namespace" % name)
        if typ == "counter" and not name.endswith("_total"):
            problems.append("%s: counter not named *_total" % name)
        if name not in done:
            problems.append("%s: TYPE without samples" % name)
    return problems, samples


def scrape():
    status, headers, body = request("/metrics")
    if status != 200:
        raise RuntimeError("/metrics answered %d" % status)
    problems, samples = strict_check(body)
    if problems:
        raise RuntimeError("bad metrics: %s" % problems[:5])
    return samples


def value(samples, name, **labels):
    key = (name, frozenset((k, '"%s"' % v) for k, v in labels.items()))
    return samples.get(key)


def quiet_scrape():
    """A scrape taken once the counters have stopped moving: a response is counted
    just after its last byte leaves, so the statement that just returned may not be
    counted yet."""
    prev = scrape()
    for _ in range(50):
        time.sleep(0.1)
        cur = scrape()
        if cur == prev:
            return cur
        prev = cur
    return prev


def settle(name, expected, **labels):
    """Scrapes until `name` reaches `expected` (a response is counted just after its
    last byte leaves), then once more to see it stays there. Returns the last value."""
    end = time.time() + 3
    v = None
    while time.time() < end:
        v = value(scrape(), name, **labels)
        if v == expected:
            time.sleep(0.2)
            return value(scrape(), name, **labels)
        time.sleep(0.02)
    return v


# ---- checks -------------------------------------------------------------------------------

def check_config():
    r = t.run_bin(["--config-reference"])
    t.check("| `http_listen` | `` |" in r.stdout, "--config-reference lists http_listen, off")
    r = t.run_bin(["--print-config"], cwd=ROOT)
    t.check("\nhttp_listen = \n" in r.stdout, "http_listen is empty by default", r.stdout)
    for bad in ["nonsense", "/tmp/metrics.sock", "127.0.0.1:0", "127.0.0.1:99999"]:
        r = t.run_bin(["--set", "http_listen=" + bad, "--check"], cwd=ROOT)
        t.check(r.returncode != 0 and "http_listen = '%s'" % bad in r.stderr,
                "--check refuses http_listen=%s" % bad, r.stderr)
    r = t.run_bin(["--set", "http_listen=127.0.0.1:%d" % HTTP_PORT, "--check"], cwd=ROOT)
    t.eq("--check accepts http_listen=127.0.0.1:%d" % HTTP_PORT, 0, r.returncode)
    # The container's config serves what its HEALTHCHECK asks.
    with open(os.path.join(ROOT, "docker", "Dockerfile")) as f:
        dockerfile = f.read()
    m = re.search(r"^ENV MYREWRITE_HTTP=(\S+)$", dockerfile, re.M)
    r = t.run_bin(["--config", os.path.join(ROOT, "docker", "myrewrite.conf"),
                   "--set", "backend=%s:%d" % (t.HOST, DB_PORT), "--set", "rules_dir=rules",
                   "--print-config"], cwd=ROOT)
    t.check(m and "\nhttp_listen = %s\n" % m.group(1) in r.stdout
            and "HEALTHCHECK" in dockerfile and "myrewrite-healthcheck" in dockerfile,
            "docker/myrewrite.conf serves the address the image's HEALTHCHECK checks",
            r.stdout + r.stderr)


def check_port_taken():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((t.HOST, HTTP_PORT))
    s.listen()
    try:
        r = t.run_bin(["--listen", "%s:%d" % (t.HOST, PORT),
                       "--backend", "%s:%d" % (t.HOST, DB_PORT), "--workers", "1",
                       "--set", "http_listen=%s:%d" % (t.HOST, HTTP_PORT)], timeout=20, cwd=ROOT)
        t.check(r.returncode == 1 and "cannot serve HTTP on" in r.stderr,
                "a taken http_listen port stops the start with a message", r.stderr)
    finally:
        s.close()


def check_off_by_default():
    p = PROXIES["http_off"].start()
    t.check(not listening(HTTP_PORT), "no HTTP listener unless http_listen is set")
    t.check("HTTP endpoint" not in proxy_log("http_off"), "no HTTP endpoint logged")
    t.eq("proxy without HTTP exits 0 on SIGTERM", 0, p.stop())


def check_routes():
    status, headers, body = request("/health")
    t.eq("/health answers 200 ok", (200, "ok\n"), (status, body))
    t.check(headers.get("content-type", "").startswith("text/plain"), "/health is text/plain",
            headers)
    status, _, body = request("/health?probe=1")
    t.eq("/health ignores a query string", 200, status)
    head = raw_head("/health")
    t.check(head.startswith(b"HTTP/1.0 200 ") and head.endswith(b"\r\n\r\n")
            and b"Content-Length: 3\r\n" in head, "HEAD /health: headers only", head)
    status, _, body = request("/nope")
    t.eq("/nope answers 404", 404, status)
    status, _, _ = request("/metricsx")
    t.eq("/metricsx answers 404", 404, status)
    status, headers, _ = request("/metrics", "POST")
    t.eq("POST /metrics answers 405 with Allow", (405, "GET, HEAD"),
         (status, headers.get("allow")))


def check_format():
    status, headers, body = request("/metrics")
    t.eq("/metrics answers 200", 200, status)
    t.eq("/metrics content type", "text/plain; version=0.0.4; charset=utf-8",
         headers.get("content-type"))
    problems, samples = strict_check(body)
    t.check(not problems, "/metrics passes the strict line-format check", problems[:10])
    for name in ["myrewrite_connections_accepted_total", "myrewrite_connections_active",
                 "myrewrite_commands_total", "myrewrite_commands_refused_total",
                 "myrewrite_statements_rewritten_total", "myrewrite_statements_blocked_total",
                 "myrewrite_statements_unexamined_total", "myrewrite_bytes_from_clients_total", "myrewrite_bytes_from_backend_total",
                 "myrewrite_workers", "myrewrite_rules_loaded",
                 "myrewrite_queue_rows_released_total", "myrewrite_queue_reaper_runs_total",
                 "myrewrite_frontend_statements_total", "myrewrite_frontend_seconds_total",
                 "myrewrite_paginate_deferred_total", "myrewrite_paginate_refused_total",
                 "myrewrite_paginate_keyset_hits_total", "myrewrite_paginate_keyset_misses_total",
                 "myrewrite_paginate_bookmarks", "myrewrite_delayed_rows_staged_total",
                 "myrewrite_delayed_flush_duration_seconds_count",
                 "myrewrite_delayed_flush_duration_seconds_sum"]:
        t.check(value(samples, name) is not None, "/metrics has %s" % name)
    t.eq("myrewrite_workers is 2", 2.0, value(samples, "myrewrite_workers"))
    t.eq("myrewrite_rules_loaded is 2", 2.0, value(samples, "myrewrite_rules_loaded"))
    t.check(value(samples, "myrewrite_connection_closes_total", reason="client_quit") is not None,
            "closes are labeled by reason")
    t.check(value(samples, "myrewrite_rule_hits_total", rule="http_upper") is not None,
            "rule hits are labeled by rule")
    t.check(value(samples, "myrewrite_rules_reloads_total", result="ok") is not None and
            value(samples, "myrewrite_rules_reloads_total", result="failed") is not None,
            "reloads are labeled by result")
    inf = value(samples, "myrewrite_delayed_flush_duration_seconds_bucket", le="+Inf")
    t.check(inf is not None and
            inf == value(samples, "myrewrite_delayed_flush_duration_seconds_count"),
            "the flush histogram's +Inf bucket equals its count")
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        print("# prometheus_client not installed; only the strict check ran")
        return
    try:
        fams = {f.name: f for f in text_string_to_metric_families(body)}
        t.check("myrewrite_commands" in fams and fams["myrewrite_commands"].type == "counter",
                "prometheus_client parses /metrics", sorted(fams))
        hist = fams.get("myrewrite_delayed_flush_duration_seconds")
        t.check(hist is not None and hist.type == "histogram",
                "prometheus_client reads the flush-duration histogram", sorted(fams))
    except Exception as e:  # the parser raises ValueError and others
        t.not_ok("prometheus_client parses /metrics", repr(e))


def check_counters():
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    cur.execute("DROP TABLE IF EXISTS ht_items")
    cur.execute("CREATE TABLE ht_items (id INT PRIMARY KEY, name VARCHAR(20))")
    cur.execute("INSERT INTO ht_items VALUES (1, 'apple'), (2, 'pear')")
    m0 = quiet_scrape()
    c0 = value(m0, "myrewrite_commands_total")
    t.check(value(m0, "myrewrite_connections_active") >= 1, "an open connection is active")
    for i in range(7):
        cur.execute("SELECT %d" % i)
    t.eq("commands_total moves by exactly the 7 statements sent", c0 + 7,
         settle("myrewrite_commands_total", c0 + 7))
    m1 = quiet_scrape()
    h1 = value(m1, "myrewrite_rule_hits_total", rule="http_upper")
    r1 = value(m1, "myrewrite_statements_rewritten_total")
    c1 = value(m1, "myrewrite_commands_total")
    b1 = value(m1, "myrewrite_bytes_from_clients_total")
    rows = []
    for i in (1, 2, 1):
        cur.execute("SELECT name FROM ht_items WHERE id = %d" % i)
        rows.append(cur.fetchone()[0])
    cur.execute("SELECT name FROM ht_items WHERE id > 0 ORDER BY id")  # no match
    t.eq("the rule rewrote the statements", ["APPLE", "PEAR", "APPLE"], rows)
    t.eq("commands_total moves by 4", c1 + 4, settle("myrewrite_commands_total", c1 + 4))
    m2 = quiet_scrape()
    t.eq("rule hit counter moves by the 3 matching statements", h1 + 3,
         value(m2, "myrewrite_rule_hits_total", rule="http_upper"))
    t.eq("statements_rewritten moves by 3", r1 + 3,
         value(m2, "myrewrite_statements_rewritten_total"))
    t.check(value(m2, "myrewrite_bytes_from_clients_total") > b1, "bytes from clients move")
    u0 = value(m2, "myrewrite_statements_unexamined_total")
    big = []
    for _ in range(2):  # larger than relay_buffer (256K): relayed without meeting http_upper
        cur.execute("SELECT name FROM ht_items WHERE id = 1 /* %s */" % ("x" * 300000))
        big.append(cur.fetchone()[0])
    t.eq("statements over relay_buffer are relayed as sent, not rewritten", ["apple"] * 2, big)
    t.eq("... counted in statements_unexamined", u0 + 2,
         settle("myrewrite_statements_unexamined_total", u0 + 2))
    t.eq("... and logged once for the session", 1,
         proxy_log("http_on").count("larger than relay_buffer"))
    q0 = value(m2, "myrewrite_connection_closes_total", reason="client_quit")
    c.close()  # COM_QUIT
    t.eq("a COM_QUIT counts as reason client_quit", q0 + 1,
         settle("myrewrite_connection_closes_total", q0 + 1, reason="client_quit"))


def check_ops_counters():
    """Front-end statements, paginate outcomes and reloads move by exactly what was
    sent; front-end time moves."""
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    cur.execute("DROP TABLE IF EXISTS ht_pages")
    cur.execute("CREATE TABLE ht_pages (id INT PRIMARY KEY)")
    cur.execute("INSERT INTO ht_pages SELECT seq FROM seq_1_to_60")
    m0 = quiet_scrape()
    names = ["myrewrite_frontend_statements_total", "myrewrite_frontend_seconds_total",
             "myrewrite_paginate_deferred_total", "myrewrite_paginate_refused_total"]
    v0 = [value(m0, n) for n in names]
    for off in (0, 20, 30):
        cur.execute("SELECT id FROM ht_pages ORDER BY id LIMIT %d, 2" % off)
    try:
        cur.execute("SELECT id FROM ht_pages ORDER BY id LIMIT 50, 2")
        t.not_ok("a page beyond max_offset is refused")
    except pymysql.err.MySQLError as e:
        t.eq("a page beyond max_offset is refused", 1235, e.args[0])
    for i in range(6):
        cur.execute("SELECT %d" % i)
    m1 = quiet_scrape()
    v1 = [value(m1, n) for n in names]
    t.eq("frontend_statements moves by exactly the 10 statements sent", 10, v1[0] - v0[0])
    t.check(0 < v1[1] - v0[1] < 1, "frontend_seconds moves by a little", (v0[1], v1[1]))
    t.eq("paginate deferred +2 (offsets 20, 30), refused +1", (2, 1),
         (v1[2] - v0[2], v1[3] - v0[3]))
    per_rule = [value(m1, "myrewrite_paginate_rule_pages_total", rule="http_pages", outcome=o)
                for o in ("deferred", "refused")]
    t.check(per_rule[0] is not None and per_rule[0] >= 2 and per_rule[1] >= 1,
            "per-rule paginate pages are labeled by rule and outcome", per_rule)
    t.eq("no bookmarks without a keyset strategy", 0.0, value(m1, "myrewrite_paginate_bookmarks"))
    c.close()


def check_reload_counters(proxy):
    def reloads():
        m = scrape()
        return (value(m, "myrewrite_rules_reloads_total", result="ok"),
                value(m, "myrewrite_rules_reloads_total", result="failed"))

    def settled_reloads(want):
        end = time.time() + 5
        got = reloads()
        while got != want and time.time() < end:
            time.sleep(0.05)
            got = reloads()
        return got

    ok0, failed0 = reloads()
    h0 = value(scrape(), "myrewrite_rule_hits_total", rule="http_upper")
    t.check(h0 and h0 > 0, "http_upper has hits before the reload", h0)
    proxy.send_signal(signal.SIGHUP)
    t.eq("a good reload counts as ok", (ok0 + 1, failed0), settled_reloads((ok0 + 1, failed0)))
    t.eq("a rule's hits outlive the reload (kept by name)", h0,
         settle("myrewrite_rule_hits_total", h0, rule="http_upper"))
    c = t.connect(PORT, autocommit=True)
    c.cursor().execute("SELECT name FROM ht_items WHERE id = 2")
    c.close()
    t.eq("... and go on from there", h0 + 1,
         settle("myrewrite_rule_hits_total", h0 + 1, rule="http_upper"))
    broken = os.path.join(RULES_DIR, "20-broken.rules")
    with open(broken, "w") as f:
        f.write(BROKEN_RULES)
    proxy.send_signal(signal.SIGHUP)
    t.eq("a broken reload counts as failed", (ok0 + 1, failed0 + 1),
         settled_reloads((ok0 + 1, failed0 + 1)))
    os.unlink(broken)


def wait_ready(want, secs):
    end = time.time() + secs
    status, body = None, None
    while time.time() < end:
        status, _, body = request("/ready")
        if status == want:
            return status, body
        time.sleep(0.2)
    return status, body


def check_ready():
    status, body = wait_ready(200, 5)
    t.eq("/ready is 200 with the backend up", (200, "ready\n"), (status, body))
    before = int(t.root_query("SHOW GLOBAL STATUS LIKE 'Connections'", name=DB_NAME)[0][1])
    for _ in range(30):
        request("/ready")
    after = int(t.root_query("SHOW GLOBAL STATUS LIKE 'Connections'", name=DB_NAME)[0][1])
    # `after` counts its own root connection; the burst took well under 2 s.
    t.check(after - before - 1 <= 3, "30 /ready requests made at most one check a second",
            "backend connections: %d" % (after - before - 1))
    rc, out = t.env_sh("mr_stop_mariadb %s" % DB_NAME)
    t.eq("own mariadbd stopped", 0, rc)
    status, body = wait_ready(503, 5)
    t.eq("/ready turns 503 when the backend stops", 503, status)
    t.check(body.count("\n") == 1 and body.endswith("\n") and "unreachable" in body
            and "%s:%d" % (t.HOST, DB_PORT) in body, "/ready gives a one-line reason", body)
    t.eq("/health stays 200 meanwhile", 200, request("/health")[0])
    rc, out = t.env_sh("mr_start_mariadb %s %d" % (DB_NAME, DB_PORT))
    t.eq("own mariadbd restarted", 0, rc)
    status, body = wait_ready(200, 10)
    t.eq("/ready is 200 again once the backend is back", (200, "ready\n"), (status, body))
    end = time.time() + 3  # the log thread writes a moment later
    while time.time() < end:
        log = proxy_log("http_on")
        if "not ready: backend" in log and "accepts connections again" in log:
            break
        time.sleep(0.1)
    t.check("not ready: backend" in log and "accepts connections again" in log,
            "readiness changes are logged", log[-1000:])


def check_healthcheck_script():
    script = os.path.join(ROOT, "docker", "healthcheck.sh")
    r = subprocess.run(["bash", script, "%s:%d" % (t.HOST, HTTP_PORT)], capture_output=True,
                       text=True)
    t.eq("docker/healthcheck.sh passes against /health", 0, r.returncode)
    return script


def main():
    if t.DIRECT_ONLY:
        print("direct mode: the HTTP endpoint belongs to the proxy")
        sys.exit(77)
    os.makedirs(RULES_DIR, exist_ok=True)
    with open(os.path.join(RULES_DIR, "10-http.rules"), "w") as f:
        f.write(RULES)
    rc, out = t.env_sh("mr_start_mariadb %s %d" % (DB_NAME, DB_PORT))
    if rc:
        print(out)
        t.not_ok("own mariadbd %s on %d starts" % (DB_NAME, DB_PORT))
        t.done()
    p = None
    try:
        check_config()
        check_off_by_default()
        check_port_taken()
        p = PROXIES["http_on"].start()
        t.check(listening(HTTP_PORT), "HTTP listener on %d" % HTTP_PORT)
        check_routes()
        check_format()
        check_counters()
        check_ops_counters()
        check_reload_counters(p)
        check_ready()
        script = check_healthcheck_script()
        t.eq("proxy with HTTP exits 0 on SIGTERM", 0, p.stop())
        p = None
        r = subprocess.run(["bash", script, "%s:%d" % (t.HOST, HTTP_PORT)],
                           capture_output=True, text=True)
        t.check(r.returncode != 0, "docker/healthcheck.sh fails once the proxy is gone")
    finally:
        if p:
            p.stop()
        t.env_sh("mr_stop_mariadb %s" % DB_NAME)
    t.done()


if __name__ == "__main__":
    main()
