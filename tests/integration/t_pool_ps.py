#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Server-side prepared statements through pool = transaction, without pins.

A proxy of its own with pool = transaction, pool_size = 2, one worker. The
C client mr_pool_ps_client opens 20 sessions, each prepares three
statements (parameters of several types; an INSERT whose BLOB comes as
long data; a SELECT read through a cursor), and runs them in turn, so that
executes land on server connections that never saw their prepare; it also
resets and closes statements and prepares them again. What it prints
through the proxy must be what it prints direct, line for line, and the
table must hold the same rows. While session 0 holds its cursor open, SHOW
PINS shows one session pinned for `prepared` (and the other sessions still
run on the other connection); afterwards nobody is pinned, and the only
`prepared` pins ever made were the cursors'. With the old behaviour (a
prepare pins its session) the 20 sessions cannot share 2 connections: the
third session's command waits out pool_max_wait and gets ERR 1040.

Also, with a raw client: an execute, fetch and reset of an id never
prepared get the server's ERR 1243 (same code, state and text as direct),
and an execute of 0xFFFFFFFF (MariaDB: the last prepared) runs the
session's last statement.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import rawproto_lib as rp  # noqa: E402

SESSIONS = 20
ROUNDS = 4
CLIENT = os.path.join(os.path.dirname(os.path.abspath(os.environ.get("MR_BIN_REAL", t.BIN))),
                      "tests", "integration", "mr_pool_ps_client")
PROXY = t.Proxy("pool_ps", admin=True, workers=1,
                options={"pool": "transaction", "pool_size": "2", "pool_max_wait": "3s"})
# pool_long_data_max under each execute's first long data piece: every
# insert pins its session from its long data to its execute
TIGHT = t.Proxy("pool_ps_tight", admin=True, workers=1,
                options={"pool": "transaction", "pool_size": "2", "pool_max_wait": "3s",
                         "pool_long_data_max": "200"})
# one server connection: a second login replaces the first session's
ONE = t.Proxy("pool_ps_one", workers=1,
              options={"pool": "transaction", "pool_size": "1", "pool_max_wait": "3s"})
TABLE = "pool_ps_rows"


def reset_table(db):
    cur = db.cursor()
    cur.execute("DROP TABLE IF EXISTS %s" % TABLE)
    cur.execute("CREATE TABLE %s (sess INT, k INT, v VARCHAR(40), b BLOB, "
                "PRIMARY KEY (sess, k))" % TABLE)


def table_rows(db):
    cur = db.cursor()
    cur.execute("SELECT sess, k, v, MD5(b) FROM %s ORDER BY sess, k" % TABLE)
    return cur.fetchall()


def run_client(port, hold=None):
    argv = [CLIENT, t.HOST, str(port), t.USER, t.PASSWORD, t.DB, TABLE, str(SESSIONS),
            str(ROUNDS)]
    if not hold:
        p = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=120)
        return p.returncode, p.stdout, p.stderr
    p = subprocess.Popen(argv + ["hold"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, errors="replace")
    out = []
    for line in p.stdout:
        out.append(line)
        if line == "HOLD\n":
            hold()
            p.stdin.write("go\n")
            p.stdin.flush()
    p.wait(timeout=120)
    return p.returncode, "".join(l for l in out if l != "HOLD\n"), p.stderr.read()


def prepares(db):
    cur = db.cursor()
    cur.execute("SHOW GLOBAL STATUS LIKE 'Com_stmt_prepare'")
    return int(cur.fetchone()[1])


def pins(proxy=PROXY):
    return {r["reason"]: (r["pinned_now"], r["pins_total"])
            for r in proxy.admin_dicts("SHOW PINS")}


def first_difference(a, b):
    al, bl = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(al, bl)):
        if x != y:
            return "line %d: direct %r, pooled %r" % (i + 1, x, y)
    return "direct %d lines, pooled %d lines" % (len(al), len(bl))


def raw_answers(port):
    """An execute, fetch and reset of an id never prepared; then a prepare and
    an execute of 0xFFFFFFFF (the last prepared): what each answers."""
    c = rp.Conn(port)
    got = []
    sid = (77).to_bytes(4, "little")
    for payload, read in ((b"\x17" + sid + b"\x00\x01\x00\x00\x00", c.read_result),
                          (b"\x1c" + sid + (1).to_bytes(4, "little"), c.read_rows),
                          (b"\x1a" + sid, c.read_one)):
        c.send_command(payload)
        r = read([])
        got.append((r.kind, r.err))
    c.send_command(b"\x16SELECT 40 + 2")
    got.append(c.read_prepare([]).kind)
    c.send_command(b"\x17\xff\xff\xff\xff\x00\x01\x00\x00\x00")
    r = c.read_result([])
    got.append((r.kind, r.rows, r.err))
    # a cursor read to its end, a reset (the proxy answers it: the session's
    # status, not the last fetch's), a fetch without a cursor (the server's
    # text names its own id: digits left out)
    c.send_command(b"\x17\xff\xff\xff\xff\x01\x01\x00\x00\x00")
    r = c.read_result([], cursor=True)
    got.append((r.kind, r.status))
    c.send_command(b"\x1c\xff\xff\xff\xff" + (7).to_bytes(4, "little"))
    r = c.read_rows([])
    got.append((r.kind, r.rows, r.status))
    c.send_command(b"\x1a\xff\xff\xff\xff")
    r = c.read_one([])
    got.append((r.kind, r.status, r.ok))
    c.send_command(b"\x1c\xff\xff\xff\xff" + (1).to_bytes(4, "little"))
    r = c.read_rows([])
    got.append((r.kind, r.err and (r.err[0], re.sub(r"[0-9]+", "N", r.err[1]))))
    c.close()
    return got


def empty_command_closes(port):
    """A command packet with no payload on a session holding no server
    connection (nothing pins it now): closed, as with one."""
    c = rp.Conn(port)
    c.query("SELECT 1")  # answered: the connection went back to the pool
    c.sock.sendall(b"\x00\x00\x00\x00")
    c.sock.settimeout(3)
    try:
        got = c.sock.recv(100)
    except OSError as e:
        got = repr(e)
    c.close()
    return got


def gone_table(port, d):
    """A statement prepared, its table dropped, executed (through ONE: on a
    server connection that never saw it, after another login took the
    only one): the answer."""
    cur = d.cursor()
    cur.execute("CREATE TABLE IF NOT EXISTS pool_ps_gone (a INT)")
    a = rp.Conn(port)
    a.send_command(b"\x16SELECT a FROM pool_ps_gone")
    prep = a.read_prepare([])
    cur.execute("DROP TABLE pool_ps_gone")
    other = rp.Conn(port)
    other.query("SELECT 1")
    a.send_command(b"\x17" + prep.stmt_id.to_bytes(4, "little") + b"\x00\x01\x00\x00\x00")
    r = a.read_result([])
    a.close()
    other.close()
    return r.kind, r.err


def main():
    if not os.access(CLIENT, os.X_OK):
        t.not_ok("mr_pool_ps_client is built", CLIENT)
        t.done()
    d = t.direct()
    reset_table(d)
    rc, want, err = run_client(t.DIRECT_PORT)
    t.check(rc == 0 and want.endswith("END\n"), "the client runs direct", err or want[-500:])
    want_rows = table_rows(d)
    t.check(len(want_rows) == SESSIONS * ROUNDS, "direct: every row inserted", len(want_rows))
    reset_table(d)
    with PROXY:
        seen = {}

        def during_cursor():
            seen["pins"] = pins()

        before = prepares(d)
        rc, got, err = run_client(PROXY.port, hold=during_cursor)
        made = prepares(d) - before
        client_made = 4 * SESSIONS
        print("# server prepares: %d for the clients' %d" % (made, client_made))
        t.check(made > client_made,
                "statements were prepared again on connections that lacked them",
                "%d prepares for the clients' %d" % (made, client_made))
        t.check(rc == 0, "the client runs through pool = transaction", err[-500:])
        t.check(got == want, "every answer through the pool is the direct one (%d lines)"
                % len(want.splitlines()), first_difference(want, got))
        t.check(table_rows(d) == want_rows, "the table holds the same rows")
        during = seen.get("pins", {})
        t.check(during.get("prepared", (0, 0))[0] == 1,
                "while session 0's cursor is open it is pinned for prepared", during)
        after = pins()
        t.check(after.get("prepared", (1, 0))[0] == 0, "nobody is pinned after", after)
        # the cursors: session 0's and each other session's (each read to its end)
        t.check(after.get("prepared", (0, 0))[1] == SESSIONS,
                "prepared pins were made only for the %d cursors" % SESSIONS, after)
        others = {k: v for k, v in after.items() if v[1] and k != "prepared"}
        t.check(not others, "no other pin reason", others)
        got = empty_command_closes(PROXY.port)
        t.check(got == b"", "an empty command packet closes an unattached pooled session", got)
        direct_raw = raw_answers(t.DIRECT_PORT)
        pooled_raw = raw_answers(PROXY.port)
        t.check(pooled_raw == direct_raw,
                "unknown ids (execute, fetch, reset) and 0xFFFFFFFF answer as direct",
                "direct %r\npooled %r" % (direct_raw, pooled_raw))
    want_gone = gone_table(t.DIRECT_PORT, d)
    with ONE:
        got_gone = gone_table(ONE.port, d)
    t.check(got_gone == want_gone and want_gone[0] == "err",
            "an execute whose statement cannot be prepared again gets the prepare's ERR, as "
            "direct", "direct %r, pooled %r" % (want_gone, got_gone))
    reset_table(d)
    with TIGHT:
        rc, got, err = run_client(TIGHT.port)
        t.check(rc == 0 and got == want,
                "long data past pool_long_data_max: every answer is the direct one",
                first_difference(want, got) + " " + err[-300:])
        t.check(table_rows(d) == want_rows, "long data past pool_long_data_max: the same rows")
        after = pins(TIGHT)
        t.check(after.get("prepared") == (0, SESSIONS * ROUNDS + SESSIONS),
                "a prepared pin for each insert's long data past the limit and each cursor, "
                "none left", after)
    d.cursor().execute("DROP TABLE IF EXISTS %s" % TABLE)
    t.done()


if __name__ == "__main__":
    main()
