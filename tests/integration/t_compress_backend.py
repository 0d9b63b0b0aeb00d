#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""backend_compress = yes: the backend leg speaks the compressed protocol
(zlib, CLIENT_COMPRESS) with the real mariadbd, whatever the client's leg
speaks.

It checks:
  * the backend session says Compression ON under backend_compress = yes,
    for a plain client, a zlib client and a zstd client, and also with
    TLS toward the backend (backend_tls = prefer); OFF through a proxy
    without it, and direct;
  * a plain raw client gets the same packets as direct, sequence ids
    included (mariadbd numbers the packets inside its frames its own way:
    the proxy numbers them as a plain server would): 1,000 rows, several
    statements in one, an error, prepared statements (binary rows, a
    cursor fetched in parts, an error), LOAD DATA LOCAL, COM_CHANGE_USER;
  * pymysql (which checks every sequence id) writes and reads back a 20 MB
    blob, loads 20,000 rows with LOAD DATA LOCAL, the same as direct;
  * a zlib and a zstd client over it get the same payloads as direct;
  * a paginate rewrite (deferred join) gives direct's rows, and UPDATE
    DELAYED then FLUSH DELAYED (the proxy's own connection, compressed too)
    applies every increment;
  * the mariadb CLI (libmariadb) gives direct's output for large results.
Environment: MR_DIRECT_PORT, MR_BIN; the proxies take free ports.
"""
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import rawproto_lib as raw  # noqa: E402
import t_compress as tc  # noqa: E402
import t_compress_zstd as tz  # noqa: E402

DATA_FILE = os.path.join(t.TMP, "compress_backend_load.csv")
RULES = """
[paginate bc_items]
table = %(db)s.bc_items
key = id
threshold = 100
log = full

[delayed bc_counters]
table = %(db)s.bc_counters
key = id
columns = n
flush_interval = 1h
""" % {"db": t.DB}


def compression(conn):
    return t.rows(conn, "SHOW SESSION STATUS LIKE 'Compression'")[0][1]


def raw_compression(c):
    r = c.query("SHOW SESSION STATUS LIKE 'Compression'")
    return r.rows[0].split(b"\x02", 1)[-1] if r.kind == "rows" else r.err


def check_status(port, tls_port):
    for name, p, want in (("backend_compress = yes", port, "ON"),
                          ("a proxy without it", t.PROXY_PORT, "OFF"),
                          ("direct", t.DIRECT_PORT, "OFF")):
        c = t.connect(p)
        t.eq("plain client, %s: the server's session says Compression" % name, want,
             compression(c))
        c.close()
    c = t.connect(tls_port)
    t.eq("backend_tls = prefer and backend_compress: Compression", "ON", compression(c))
    t.check(t.rows(c, "SHOW SESSION STATUS LIKE 'Ssl_cipher'")[0][1], "... over TLS")
    c.close()
    for kind, make in (("zlib", tc.ZConn), ("zstd", tz.ZstdConn)):
        c = make(port)
        got = raw_compression(c)
        t.check(got == b"ON", "a %s client over backend_compress: Compression ON" % kind, got)
        c.close()


def raw_session(c):
    try:
        c.query("SELECT seq, CONCAT('customer-', seq), seq * 17 % 1000 FROM seq_1_to_1000")
        c.query("SELECT 1; SELECT 2, 'two'; DO 3")
        c.query("SELECT no_such_column FROM DUAL")
        c.query("SELECT REPEAT('r', 3000000) AS big")
        st = c.prepare("SELECT seq, REPEAT('p', seq % 90) FROM seq_1_to_2000 WHERE seq > ?")
        c.execute(st.stmt_id, [(raw.TYPE_LONG, 10)], label="execute binary")
        c.execute(st.stmt_id, [(raw.TYPE_LONG, 1500)], flags=raw.CURSOR_TYPE_READ_ONLY,
                  label="execute cursor")
        for _ in range(3):
            c.fetch(st.stmt_id, 200)
        st2 = c.prepare("SELECT 1 FROM DUAL WHERE ? = (SELECT 1 UNION SELECT 2)")
        c.execute(st2.stmt_id, [(raw.TYPE_LONG, 1)], label="execute error")
        c.must("CREATE OR REPLACE TABLE bc_load (id INT PRIMARY KEY, v VARCHAR(200))")
        rec = c._logged("load data local infile")
        c.send_command(b"\x03LOAD DATA LOCAL INFILE 'bc.csv' INTO TABLE bc_load "
                       b"FIELDS TERMINATED BY ','")
        r = c.read_result(rec)
        if r.kind == "infile":
            with open(DATA_FILE, "rb") as f:
                data = f.read()
            for k in range(0, len(data), 16384):
                c.send_payload(data[k:k + 16384])
            c.send_payload(b"")
            c.read_result(rec)
        c.query("SELECT COUNT(*), MD5(GROUP_CONCAT(v ORDER BY id)) FROM bc_load")
        c.change_user(t.USER, t.PASSWORD, t.DB, "change user")
        c.query("SELECT CURRENT_USER(), DATABASE(), @@in_transaction")
        return c.log
    finally:
        c.close()


def check_raw_same(port):
    want = raw_session(raw.Conn(t.DIRECT_PORT))
    got = raw_session(raw.Conn(port))
    diff = raw.diff_logs(want, got)
    t.check(diff is None, "a plain raw client over a compressed backend leg: the same packets "
            "as direct, sequence ids included (%d responses)" % len(got), diff)
    for kind, make in (("zlib", tc.ZConn), ("zstd", tz.ZstdConn)):
        got = raw_session(make(port))
        t.check(tz.payloads(want) == tz.payloads(got), "a %s client over a compressed backend "
                "leg: the same payloads as direct" % kind,
                [a[0] for a, b in zip(tz.payloads(want), tz.payloads(got)) if a != b][:3])


def pymysql_session(port):
    c = t.connect(port, local_infile=True, max_allowed_packet=64 << 20, autocommit=True)
    cur = c.cursor()
    blob = hashlib.sha256(b"seed").digest() * (20 * 1000 * 1000 // 32)
    cur.execute("CREATE OR REPLACE TABLE bc_blob (id INT PRIMARY KEY, b LONGBLOB)")
    cur.execute("INSERT INTO bc_blob VALUES (1, %s)", (blob,))
    cur.execute("SELECT b, LENGTH(b) FROM bc_blob WHERE id = 1")
    back, n = cur.fetchone()
    cur.execute("DELETE FROM bc_load")
    cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE bc_load FIELDS TERMINATED BY ','",
                (DATA_FILE,))
    cur.execute("SELECT COUNT(*), MD5(GROUP_CONCAT(v ORDER BY id)) FROM bc_load")
    loaded = cur.fetchone()
    c.close()
    return back == blob, n, loaded


def check_pymysql(port):
    want = pymysql_session(t.DIRECT_PORT)
    got = pymysql_session(port)
    t.check(got[0] and got[1] == 20000000, "pymysql over a compressed backend leg: a 20 MB blob "
            "written and read back whole", got[1])
    t.eq("... and LOAD DATA LOCAL of 20,000 rows, as direct", want[2], got[2])


def check_rewrites(proxy):
    d = t.direct(autocommit=True)
    p = t.connect(proxy.port, autocommit=True)
    sql = "SELECT id, v FROM bc_items ORDER BY v LIMIT 1500, 20"
    want = t.rows(d, sql)
    t.eq("a deep page over a compressed backend leg: direct's rows", want, t.rows(p, sql))
    t.check(proxy.wait_log(r"myrewrite_dj"), "... rewritten as a deferred join (the log says)")
    cur = p.cursor()
    for _ in range(9):
        cur.execute("UPDATE DELAYED bc_counters SET n = n + 1 WHERE id = 1")
    t.eq("UPDATE DELAYED staged, not applied yet", ((0,),),
         t.rows(d, "SELECT n FROM bc_counters WHERE id = 1"))
    cur.execute("FLUSH DELAYED %s.bc_counters" % t.DB)
    t.eq("FLUSH DELAYED on the proxy's own (compressed) connection applies each increment once",
         ((9,),), t.rows(d, "SELECT n FROM bc_counters WHERE id = 1"))
    p.close()
    d.close()


def cli(port, sql):
    r = subprocess.run(["mariadb", "--no-defaults", "-h", t.HOST, "-P", str(port), "-u", t.USER,
                        "-p" + t.PASSWORD, t.DB, "-e", sql], capture_output=True, timeout=120)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace")


def check_cli(port):
    sql = ("SELECT MD5(GROUP_CONCAT(seq)) FROM seq_1_to_100000; SELECT LENGTH(REPEAT('xy', "
           "3000000)); SELECT seq, REPEAT('z', seq % 100) FROM seq_1_to_20000")
    want = cli(t.DIRECT_PORT, sql)
    got = cli(port, sql)
    t.check(want[0] == 0 and got[:2] == want[:2], "the mariadb CLI over a compressed backend "
            "leg: the same output as direct (%d bytes)" % len(got[1]), got[2])


def setup():
    with open(DATA_FILE, "w") as f:
        for i in range(20000):
            f.write("%d,backend value %d %s\n" % (i, i, "x" * (i % 60)))
    d = t.direct(autocommit=True)
    cur = d.cursor()
    cur.execute("CREATE OR REPLACE TABLE bc_items (id INT PRIMARY KEY, v INT NOT NULL, "
                "pad VARCHAR(40), KEY (v))")
    cur.execute("INSERT INTO bc_items SELECT seq, seq * 7919 % 5000, REPEAT('i', seq % 40) "
                "FROM seq_1_to_5000")
    cur.execute("CREATE OR REPLACE TABLE bc_counters (id INT PRIMARY KEY, n INT NOT NULL)")
    cur.execute("INSERT INTO bc_counters VALUES (1, 0)")
    d.close()


def main():
    setup()
    proxy = t.Proxy("compress_backend_proxy", rules=RULES, own_conn=True,
                    options={"backend_compress": "yes"})
    tls = t.Proxy("compress_backend_tls_proxy",
                  options={"backend_compress": "yes", "backend_tls": "prefer"})
    with proxy, tls:
        check_status(proxy.port, tls.port)
        check_raw_same(proxy.port)
        check_pymysql(proxy.port)
        check_rewrites(proxy)
        check_cli(proxy.port)
    t.done()


if __name__ == "__main__":
    main()
