#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every kind of rewrite over TLS, over compression and over both: one proxy of its own with
tls_cert and compression on, and a rule of each kind, driven by three clients:

  tls        pymysql with an ssl context (TLS on both legs: the server offers it)
  zlib       the mariadb CLI with --compress (the compressed protocol on the client's leg)
  tls+zlib   the mariadb CLI with --compress --ssl

Each client, on one connection: a rewrite rule's statement answers as rewritten; five
UPDATE DELAYED in staged mode and five in memory mode, then FLUSH DELAYED, grow their rows by
exactly 5; two deep pages of a keyset paginate rule equal the same pages sent direct; it
claims queue rows and leaves, and the proxy releases them within 2 s. /metrics shows each
statement rule hit by each client, keyset bookmarks used and the queue rows released.
Environment: MR_DIRECT_PORT (mariadbd, with the TLS pair tests/lib/env.sh made), MR_BIN.
"""
import os
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402

SERVER_TLS = os.path.join(t.TMP, "main", "tls")  # tests/lib/env.sh made this pair
RULES = """
[rewrite rs_upper]
pattern = SELECT ? AS rs_rw
replacement = SELECT UPPER(?) AS rs_rw

[delayed rs_staged]
table = test.rs_staged
key = id
columns = n
flush_interval = 1h

[delayed rs_memory]
table = test.rs_mem
key = id
columns = n
mode = memory
flush_interval = 1h

[paginate rs_pages]
table = test.rs_items
key = id
threshold = 20
strategy = keyset

[queue rs_jobs]
table = test.rs_q
owner_column = owner
status_column = status
claimed_value = claimed
unclaimed_value = unsent
"""
PROXY = t.Proxy("rs_proxy", rules=RULES, own_conn=True, http=True,
                options={"tls_cert": os.path.join(SERVER_TLS, "cert.pem"),
                         "tls_key": os.path.join(SERVER_TLS, "key.pem"),
                         "compression": "yes"})
PAGES = ("SELECT id, v FROM rs_items ORDER BY id LIMIT 50, 10",
         "SELECT id, v FROM rs_items ORDER BY id LIMIT 60, 10")
CLAIM = "UPDATE rs_q SET status = 'claimed', owner = CONNECTION_ID() WHERE owner = 0 LIMIT 5"


def setup():
    d = t.direct(autocommit=True)
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS rs_staged, rs_staged_delayed, rs_mem, rs_items, rs_q")
    for tbl in ("rs_staged", "rs_mem"):
        cur.execute("CREATE TABLE %s (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0)" % tbl)
        cur.execute("INSERT INTO %s (id) VALUES (1), (2), (3)" % tbl)
    cur.execute("CREATE TABLE rs_items (id INT PRIMARY KEY, v VARCHAR(20))")
    cur.execute("INSERT INTO rs_items SELECT seq, CONCAT('v', seq) FROM seq_1_to_200")
    cur.execute("CREATE TABLE rs_q (id INT PRIMARY KEY, status VARCHAR(16) NOT NULL DEFAULT "
                "'unsent', owner BIGINT UNSIGNED NOT NULL DEFAULT 0)")
    cur.execute("INSERT INTO rs_q (id) SELECT seq FROM seq_1_to_30")
    d.close()


def direct_rows(sql):
    return [tuple(str(x) for x in r) for r in t.query(sql)]


def counter(table, key):
    return direct_rows("SELECT n FROM %s WHERE id = %d" % (table, key))[0][0]


def script(key):
    """The statements each client sends, in order, on one connection."""
    return (["SELECT 'abc' AS rs_rw"] +
            ["UPDATE DELAYED rs_staged SET n = n + 1 WHERE id = %d" % key] * 5 +
            ["UPDATE DELAYED rs_mem SET n = n + 1 WHERE id = %d" % key] * 5 +
            ["FLUSH DELAYED"] + list(PAGES) + [CLAIM])


def run_pymysql(key):
    """tls: each statement's rows, as strings."""
    ctx = ssl.create_default_context(cafile=os.path.join(SERVER_TLS, "cert.pem"))
    ctx.check_hostname = False
    c = t.connect(PROXY.port, ssl=ctx, autocommit=True)
    out = []
    for sql in script(key):
        out.append([tuple(str(x) for x in r) for r in t.rows(c, sql)])
    cipher = t.rows(c, "SHOW SESSION STATUS LIKE 'Ssl_cipher'")[0][1]
    conn_id = t.rows(c, "SELECT CONNECTION_ID()")[0][0]
    c.close()
    return out, bool(cipher), conn_id


def run_cli(key, *extra):
    """zlib and tls+zlib: the CLI's output split into the result sets of the statements
    that return rows (a marker SELECT between statements tells them apart)."""
    sql = ";\n".join("%s; SELECT '--next--'" % s for s in script(key)) + \
        "; SELECT CONNECTION_ID();\nstatus"
    r = subprocess.run(["mariadb", "--no-defaults", "-h", t.HOST, "-P", str(PROXY.port),
                        "-u", t.USER, "-p" + t.PASSWORD, "--compress", "-N", "-B", t.DB] +
                       list(extra) + ["-e", sql], capture_output=True, text=True, timeout=120)
    if r.returncode:
        return None, r.stderr, None
    sets, cur = [], []
    lines = r.stdout.splitlines()
    for ln in lines:
        if ln == "--next--":
            sets.append(cur)
            cur = []
        else:
            cur.append(tuple(ln.split("\t")))
    conn_id = cur[0][0] if cur else None
    tls = "--ssl" in extra
    secure = "Compressed" in r.stdout and (not tls or "Cipher in use" in r.stdout)
    return sets, secure, conn_id


def hits():
    got = {}
    for key, v in t.metrics(PROXY).items():
        if key.startswith("myrewrite_rule_hits_total{rule="):
            got[key.split('"')[1]] = v
        elif key.startswith("myrewrite_paginate_keyset_hits_total"):
            got["keyset"] = v
        elif key.startswith("myrewrite_queue_rows_released_total"):
            got["released"] = got.get("released", 0) + v
    return got


def released(conn_id, timeout=2.0):
    end = time.time() + timeout
    while time.time() < end:
        if direct_rows("SELECT COUNT(*) FROM rs_q WHERE owner = %s" % conn_id)[0][0] == "0":
            return True
        time.sleep(0.02)
    return False


def check_client(name, key, run):
    before = hits()
    s0, m0 = counter("rs_staged", key), counter("rs_mem", key)
    sets, secure, conn_id = run(key)
    if sets is None:
        t.not_ok("%s: the client ran its statements" % name, secure)
        return
    t.check(secure, "%s: the transport is what it says (TLS cipher / compressed)" % name, secure)
    t.eq("%s: the rewrite rule's statement answered as rewritten" % name, [("ABC",)], sets[0])
    t.eq("%s: five staged UPDATE DELAYED and FLUSH DELAYED: the row grew by 5" % name,
         int(s0) + 5, int(counter("rs_staged", key)))
    t.eq("%s: five memory-mode UPDATE DELAYED and FLUSH DELAYED: the row grew by 5" % name,
         int(m0) + 5, int(counter("rs_mem", key)))
    n = len(script(key))
    for i, sql in enumerate(PAGES):
        t.eq("%s: deep page %d equals direct" % (name, i + 1), direct_rows(sql), sets[n - 3 + i])
    t.check(released(conn_id), "%s: the queue rows it claimed are released once it left" % name)
    # The release thread adds to its counter after the UPDATE committed: the rows can be
    # seen released a moment before /metrics counts them.
    after = t.wait_until(lambda: (lambda h: h if h.get("released", 0) > before.get(
        "released", 0) else None)(hits()), timeout=2) or hits()
    t.check(after.get("released", 0) > before.get("released", 0),
            "%s: /metrics counts the queue rows released" % name, after)
    for rule in ("rs_upper", "rs_staged", "rs_memory", "rs_pages"):
        t.check(after.get(rule, 0) > before.get(rule, 0), "%s: rule %s was hit" % (name, rule),
                (before.get(rule), after.get(rule)))
    t.check(after.get("keyset", 0) > before.get("keyset", 0),
            "%s: the second deep page was served from a keyset bookmark" % name, after)


def main():
    t.needs_own_proxy()
    setup()
    ca = os.path.join(SERVER_TLS, "cert.pem")
    with PROXY:
        check_client("tls", 1, run_pymysql)
        check_client("zlib", 2, lambda k: run_cli(k))
        check_client("tls+zlib", 3, lambda k: run_cli(k, "--ssl", "--ssl-ca=" + ca))
    t.done()


if __name__ == "__main__":
    main()
