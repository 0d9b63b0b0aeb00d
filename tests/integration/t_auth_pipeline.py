#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Commands pipelined into an authentication exchange meet the rules and keep
the session in step; a client asking for MariaDB extensions the greeting hid
is served without them.

A raw-socket client (rawproto_lib.py, mysql_native_password) writes the
handshake response, or a COM_CHANGE_USER's auth-switch reply, and further
commands in one send(), against a proxy of the test's own with a block rule:
  (a) handshake response + an INSERT the rule blocks: the proxy refuses it
      (ERR 1148 after the server's OK) and the table stays empty;
  (b) handshake response + `SELECT n` (one or two of them), on 20 connections,
      12 of them in threads beside clients that keep the proxy busy: each
      answer comes once, in order, and a SELECT sent afterwards gets its own
      answer (the session is in step); the same runs direct as the baseline;
  (c) COM_CHANGE_USER: the auth-switch reply + a blocked INSERT in one send()
      (refused, not run); a refused COM_CHANGE_USER (wrong password) with
      pipelined commands: mariadbd keeps the session (the old user) and runs
      them as the next commands, so the proxy must too, with the rule applied;
      a refused login with a pipelined INSERT: closed, nothing run;
  (d) a handshake response asking for every MariaDB extended capability
      (the greeting offered only those the proxy relays): the login succeeds
      and queries are answered in the plain format, twice (the proxy clears
      what it does not relay before the server sees it);
  (e) an auth-switch reply with a wrong sequence id: ERR 1156, closed, the
      pipelined INSERT behind it not run.

Environment: MR_DIRECT_PORT (mariadbd), MR_TMP, MR_BIN; this test's proxy takes
a free port.
"""
import os
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import rawproto_lib as rp  # noqa: E402
from rawproto_lib import Conn  # noqa: E402

RULES_DIR = os.path.join(t.TMP, "auth_pipeline_rules")
PROXY = t.Proxy("auth_pipeline_proxy", rules_dir=RULES_DIR)
PORT = PROXY.port
TABLE = "ap_blocked"
BLOCK_MSG = "ap_blocked takes no inserts through the proxy"
RULES = """
[block ap_no_insert]
match = ^INSERT INTO %s
message = %s
""" % (TABLE, BLOCK_MSG)
ER_BLOCKED = 1148
ER_ACCESS_DENIED = 1045
ALL_EXT_CAPS = 0xFFFFFFFF  # every MariaDB extended capability (bits 32-63)

rp.TIMEOUT = 4.0  # an answer left behind in the proxy shows up as a timeout


def q(sql):
    return bytes([rp.COM_QUERY]) + sql.encode()


def commands(*payloads):
    return b"".join(rp.frame(p, 0)[0] for p in payloads)


def login_with(port, tail, password=t.PASSWORD, ext_caps=0):
    """Greeting read, then the handshake response and `tail` in one send();
    returns the connection and the server's answer to the login."""
    c = Conn(port, connect=False)
    c.read_greeting()
    hr = bytearray(c.handshake_response(t.USER, password, t.DB, b"mysql_native_password"))
    struct.pack_into("<I", hr, 28, ext_caps)
    c.sock.sendall(rp.frame(bytes(hr), 1)[0] + tail)
    _, p = c.read_packet([])
    return c, p


def value(r):
    """The single value of a one-row result, as text."""
    if r.kind != "rows" or len(r.rows) != 1:
        return ("not one row", r.kind, r.err, len(r.rows))
    n, i = rp.read_lenenc(r.rows[0], 0)
    return r.rows[0][i:i + n].decode()


def in_step(c, n):
    """A SELECT sent now gets exactly its own answer."""
    return value(c.query("SELECT %d" % n)) == str(n)


def table_rows():
    c = t.direct(autocommit=True)
    try:
        return t.rows(c, "SELECT COUNT(*) FROM " + TABLE)[0][0]
    finally:
        c.close()


def clear_table():
    c = t.direct(autocommit=True)
    t.rows(c, "DELETE FROM " + TABLE)
    c.close()


def is_blocked(r):
    return r.kind == "err" and r.err[0] == ER_BLOCKED and BLOCK_MSG in r.err[1]


def part_a():
    clear_table()
    c = Conn(PORT)
    t.check(is_blocked(c.query("INSERT INTO %s VALUES (100)" % TABLE)),
            "(a) the block rule refuses the INSERT sent alone")
    c.close()
    good = 0
    for i in range(5):
        try:
            c, p = login_with(PORT, commands(q("INSERT INTO %s VALUES (%d)" % (TABLE, i))))
            r = c.read_result([])
            if p[:1] == b"\x00" and is_blocked(r) and in_step(c, 1):
                good += 1
            else:
                t.log("(a) connection %d: login %r, pipelined INSERT %s %s" % (i, p[:8], r.kind,
                                                                              r.err))
            c.close()
        except rp.ProtoError as e:
            t.log("(a) connection %d: %s" % (i, e))
    t.eq("(a) an INSERT pipelined after the handshake response is refused by the rule "
         "(connections)", 5, good)
    t.eq("(a) ... and was not run", 0, table_rows())


def one_pipelined(port, n, two):
    """One connection: login + `SELECT n` (and `SELECT n+1`) in one send()."""
    tail = [q("SELECT %d" % n)] + ([q("SELECT %d" % (n + 1))] if two else [])
    try:
        c, p = login_with(port, commands(*tail))
        if p[:1] != b"\x00":
            return "login answered %r" % p[:40]
        got = [value(c.read_result([])) for _ in tail]
        want = [str(n + k) for k in range(len(tail))]
        if got != want:
            return "answers %r, expected %r" % (got, want)
        if not in_step(c, n + 7):
            return "out of step afterwards"
        c.close()
        return None
    except rp.ProtoError as e:
        return "%s" % e


def load(stop, errors):
    try:
        c = t.proxy(autocommit=True)
        while not stop.is_set():
            t.rows(c, "SELECT SLEEP(0.001), REPEAT('x', 2000)")
        c.close()
    except Exception as e:  # noqa: BLE001 - the load's failure is reported, not raised
        errors.append(repr(e))


def pipelined_run(port, label):
    results = []
    for i in range(8):
        results.append(one_pipelined(port, 1000 + i, i % 2 == 1))
    stop = threading.Event()
    load_errors = []
    loaders = [threading.Thread(target=load, args=(stop, load_errors)) for _ in range(4)]
    for th in loaders:
        th.start()
    lock = threading.Lock()

    def worker(i):
        r = one_pipelined(port, 2000 + 10 * i, i % 2 == 0)
        with lock:
            results.append(r)

    t.run_threads([threading.Thread(target=worker, args=(i,)) for i in range(12)])
    stop.set()
    for th in loaders:
        th.join()
    bad = [r for r in results if r]
    t.eq("(b) %s: pipelined SELECTs answered in order, session in step (connections of 20 "
         "that were not)" % label, [], bad)
    return load_errors


def part_b():
    pipelined_run(t.DIRECT_PORT, "direct")
    errors = pipelined_run(PORT, "proxy")
    t.eq("(b) the clients keeping the proxy busy saw no error", [], errors)


def change_user_switch(c, password):
    """Sends COM_CHANGE_USER; returns the auth switch request's (seq, scramble)."""
    auth = rp.native_password(password, c.greeting["scramble"])
    c.send_command(bytes([rp.COM_CHANGE_USER]) + t.USER.encode() + b"\x00" +
                   bytes([len(auth)]) + auth + t.DB.encode() + b"\x00" +
                   struct.pack("<H", 45) + b"mysql_native_password\x00")
    seq, p = c.read_packet([])
    if p[:1] != b"\xfe":
        raise rp.ProtoError("COM_CHANGE_USER answered without an auth switch: %r" % p[:40])
    end = p.index(0, 1)
    return seq, bytes(p[end + 1:]).rstrip(b"\x00")


def change_user_pipelined(port, password, tail):
    """COM_CHANGE_USER whose auth-switch reply goes out with `tail` in one
    send(); returns the connection and the server's answer to the change."""
    c = Conn(port)
    seq, scramble = change_user_switch(c, password)
    c.sock.sendall(rp.frame(rp.native_password(password, scramble), seq + 1)[0] + tail)
    _, p = c.read_packet([])
    return c, p


def part_c_accepted():
    clear_table()
    good = 0
    for i in range(3):
        try:
            c, p = change_user_pipelined(PORT, t.PASSWORD, commands(
                q("INSERT INTO %s VALUES (%d)" % (TABLE, 10 + i))))
            r = c.read_result([])
            if p[:1] == b"\x00" and is_blocked(r) and in_step(c, 3):
                good += 1
            else:
                t.log("(c) change user %d: %r, pipelined INSERT %s %s" % (i, p[:8], r.kind, r.err))
            c.close()
        except rp.ProtoError as e:
            t.log("(c) change user %d: %s" % (i, e))
    t.eq("(c) an INSERT pipelined with COM_CHANGE_USER's auth-switch reply is refused by the "
         "rule (connections)", 3, good)
    t.eq("(c) ... and was not run", 0, table_rows())


def refused_change_user(port):
    """What a refused COM_CHANGE_USER with two pipelined commands gets."""
    try:
        c, p = change_user_pipelined(port, "wrong-password", commands(
            q("SELECT 7"), q("INSERT INTO %s VALUES (20)" % TABLE)))
        out = [rp.parse_err(p)[0] if p[:1] == b"\xff" else p[:1]]
        out.append(value(c.read_result([])))
        r = c.read_result([])
        out.append(r.err[0] if r.kind == "err" else r.kind)
        out.append(in_step(c, 8))
        c.close()
        return out
    except rp.ProtoError as e:
        return "%s" % e


def part_c_refused():
    direct = refused_change_user(t.DIRECT_PORT)
    t.eq("(c) mariadbd keeps a session whose COM_CHANGE_USER it refused and runs the "
         "pipelined commands next", [ER_ACCESS_DENIED, "7", "ok", True], direct)
    clear_table()  # the direct run's INSERT
    t.eq("(c) through the proxy: the refusal, the SELECT's answer, the rule's ERR for the "
         "INSERT, in step", [ER_ACCESS_DENIED, "7", ER_BLOCKED, True], refused_change_user(PORT))
    t.eq("(c) ... the INSERT was not run", 0, table_rows())


def part_c_refused_login():
    clear_table()
    for port, label in ((t.DIRECT_PORT, "mariadbd"), (PORT, "the proxy")):
        try:
            c, p = login_with(port, commands(q("INSERT INTO %s VALUES (30)" % TABLE)),
                              password="wrong-password")
            closed, seen, _ = c.drain_until_closed(5)
            t.check(p[:1] == b"\xff" and rp.parse_err(p)[0] == ER_ACCESS_DENIED and closed and
                    not seen, "(c) %s: a refused login with a pipelined INSERT gets its ERR, "
                    "then the connection closes" % label, (p[:60], closed, seen))
        except rp.ProtoError as e:
            t.not_ok("(c) %s: refused login with a pipelined INSERT" % label, e)
    t.eq("(c) ... the INSERT was not run", 0, table_rows())


def part_d():
    try:
        c, p = login_with(PORT, b"", ext_caps=ALL_EXT_CAPS)
        t.check(p[:1] == b"\x00", "(d) every extended capability asked for: the login "
                "succeeds", p[:120])
        for n in (7, 8):
            r = c.query("SELECT %d" % n)
            t.eq("(d) ... SELECT %d answered as a plain result set" % n, str(n), value(r))
        c.close()
    except rp.ProtoError as e:
        t.not_ok("(d) every extended capability asked for", e)


def part_e():
    clear_table()
    try:
        c = Conn(PORT)
        seq, scramble = change_user_switch(c, t.PASSWORD)
        c.sock.sendall(rp.frame(rp.native_password(t.PASSWORD, scramble), seq + 5)[0] +
                       commands(q("INSERT INTO %s VALUES (40)" % TABLE)))
        _, p = c.read_packet([])
        err = rp.parse_err(p) if p[:1] == b"\xff" else None
        closed, seen, _ = c.drain_until_closed(5)
        t.check(err is not None and err[0] == 1156 and closed and not seen,
                "(e) an auth-switch reply out of order: ERR 1156, then closed", (p[:80], seen))
    except rp.ProtoError as e:
        t.not_ok("(e) an auth-switch reply out of order", e)
    t.eq("(e) ... the INSERT behind it was not run", 0, table_rows())


def main():
    if t.DIRECT_ONLY:
        print("skip: needs a proxy of its own")
        sys.exit(77)
    c = t.direct(autocommit=True)
    t.rows(c, "DROP TABLE IF EXISTS " + TABLE)
    t.rows(c, "CREATE TABLE %s (v INT) ENGINE=InnoDB" % TABLE)
    c.close()
    t.write_rules(RULES_DIR, RULES)
    PROXY.start()
    try:
        part_a()
        part_b()
        part_c_accepted()
        part_c_refused()
        part_c_refused_login()
        part_d()
        part_e()
        t.check(PROXY.alive(), "the proxy is still running")
    finally:
        PROXY.stop(timeout=10)
        c = t.direct(autocommit=True)
        t.rows(c, "DROP TABLE IF EXISTS " + TABLE)
        c.close()
    t.done()


if __name__ == "__main__":
    main()
