#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A server that ends a connection mid-command: the client sees what it sees direct.

A second session KILLs the connection while it runs SELECT SLEEP(10), sent as
a query (text protocol), as a prepared execute (binary protocol) and as an
execute that opens a read-only cursor. mariadbd closes that connection with
no answer; through the proxy the client must get exactly that, the close and
no packet before it (the raw bytes are read to prove no ERR arrives; an ERR
1158 from the proxy used to come first), within a second of the KILL. The
proxy logs the close and counts it (closing (backend_lost), and
myrewrite_connection_closes_total{reason="backend_lost"} on /metrics). pymysql, a
driver, gets 2013 through the proxy as direct. A KILL of its own connection
(KILL CONNECTION_ID()) is answered by the server itself: those packets reach
the client unchanged.

Environment: MR_DIRECT_PORT, MR_BIN, MR_TMP (the proxy takes a free port).
"""
import os
import re
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
import rawproto_lib as raw  # noqa: E402

MODES = ("text", "ps", "cursor")


def connection_id(c):
    r = c.query("SELECT CONNECTION_ID()")
    return int(r.rows[0][1:])  # one lenenc string column of under 251 bytes


def start_sleep(c, mode):
    """Sends SELECT SLEEP(10) without waiting for its answer."""
    if mode == "text":
        c.send_command(bytes([raw.COM_QUERY]) + b"SELECT SLEEP(10)")
        return
    stmt = c.prepare("SELECT SLEEP(10) AS s")
    flags = raw.CURSOR_TYPE_READ_ONLY if mode == "cursor" else 0
    c.send_command(raw.execute_packet(stmt.stmt_id, flags=flags))


def wait_running(killer, cid):
    cur = killer.cursor()
    for _ in range(100):
        cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST"
                    " WHERE ID = %s AND INFO LIKE 'SELECT SLEEP%%'", (cid,))
        if cur.fetchone()[0]:
            return True
        time.sleep(0.05)
    return False


def killed_mid_command(port, mode):
    """(closed, packets seen after the KILL, seconds to the close)."""
    c = raw.Conn(port)
    killer = t.connect(port)
    try:
        cid = connection_id(c)
        start_sleep(c, mode)
        if not wait_running(killer, cid):
            return None
        killer.cursor().execute("KILL %d" % cid)
        return c.drain_until_closed(5)
    finally:
        killer.close()
        c.close()


def check_raw(px):
    for mode in MODES:
        direct = killed_mid_command(t.DIRECT_PORT, mode)
        proxied = killed_mid_command(px.port, mode)
        if direct is None or proxied is None:
            t.not_ok("%s: the SLEEP was seen running before the KILL" % mode)
            continue
        t.eq("%s: direct, the killed connection closes with no packet" % mode,
             (True, []), direct[:2])
        t.eq("%s: through the proxy, the same close with no packet (no ERR 1158)" % mode,
             (True, []), (proxied[0], [(s, bytes(p[:60])) for s, p in proxied[1]]))
        t.check(proxied[2] < 1.0, "%s: the close comes within 1 s of the KILL (%.3f s)"
                % (mode, proxied[2]))


def pymysql_error(port):
    c = t.connect(port, read_timeout=20)
    killer = t.connect(port)
    try:
        cur = c.cursor()
        cur.execute("SELECT CONNECTION_ID()")
        cid = cur.fetchone()[0]
        box = {}

        def run():
            try:
                cur.execute("SELECT SLEEP(10)")
                box["err"] = None
            except pymysql.MySQLError as e:
                box["err"] = e.args[0]
        th = threading.Thread(target=run)
        th.start()
        wait_running(killer, cid)
        killer.cursor().execute("KILL %d" % cid)
        th.join(15)
        return box.get("err")
    finally:
        killer.close()
        c.close()


def check_driver(px):
    direct = pymysql_error(t.DIRECT_PORT)
    proxied = pymysql_error(px.port)
    t.eq("pymysql: direct, the killed query's error is 2013", 2013, direct)
    t.eq("pymysql: through the proxy, the same error", direct, proxied)


def own_kill(port):
    c = raw.Conn(port)
    try:
        r = c.query("KILL CONNECTION_ID()")
        closed, seen, _ = c.drain_until_closed(5)
        return r.kind, r.err, closed, seen
    except raw.Closed:
        return "closed", None, True, []
    finally:
        c.close()


def check_own_kill(px):
    direct = own_kill(t.DIRECT_PORT)
    proxied = own_kill(px.port)
    t.eq("KILL CONNECTION_ID(): the server's own answer reaches the client unchanged",
         direct, proxied)


def backend_lost_closes(px):
    with urllib.request.urlopen(px.http_url("/metrics"), timeout=5) as r:
        text = r.read().decode()
    m = re.search(r'^myrewrite_connection_closes_total\{reason="backend_lost"\} (\d+)$', text, re.M)
    return int(m.group(1)) if m else None


def check_log(px, closes_before):
    log = px.log_text()
    closes = log.count("closing (backend_lost): backend connection lost during")
    t.check(closes >= 4, "the proxy logs each close it mirrored (%d lines)" % closes,
            log[-2000:])
    after = backend_lost_closes(px)
    t.check(after is not None and after - closes_before >= 4,
            "and counts it: closes_total{reason=\"backend_lost\"} %s -> %s"
            % (closes_before, after))


if __name__ == "__main__":
    if t.DIRECT_ONLY:
        print("skip: compares the proxy with direct")
        sys.exit(77)
    with t.Proxy("backend_kill", http=True) as px:
        before = backend_lost_closes(px)
        check_raw(px)
        check_driver(px)
        check_own_kill(px)
        check_log(px, before or 0)
        t.check(px.connect().open, "the proxy serves a new session afterwards")
    t.done()
