#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Statements the proxy cannot read, against the real mariadbd, with raw COM_QUERY packets.

Four proxies of the test's own: block rules (and a delayed rule) under the default
unreadable = auto; no rules (auto); block rules with unreadable = pass; no rules with
unreadable = block.
  * a trailing NUL (and NUL + blanks / ';'), which MariaDB ignores, does not hide a statement
    from the block rules: `UPDATE ... \\0` without WHERE and `SELECT SLEEP(100)\\0` are refused,
    and the UPDATE's table is unchanged on the server;
  * each of the 256 byte values appended at the end, after a NUL at the end, or put in the
    middle of the blocked UPDATE: none of them changes the table;
  * unreadable = auto blocks with ERR 1148 saying why and how to change it while a block rule
    is loaded, and relays (the server's own error) without one; explicit pass and block do
    what they say; myrewrite_statements_unreadable_total counts both actions;
  * a DELAYED statement that does not lex gets the proxy's ERR 1235 even under
    unreadable = pass, and with no rule at all, and the server's general log never sees it.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the four proxies take free ports (client
and HTTP).
"""
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import rawproto_lib as raw  # noqa: E402

BLOCK_RULES = """
[block no_sleep]
match = \\bsleep\\s*\\(
message = SLEEP() is not allowed through the proxy

[block no_full_update]
statement = update, delete
where = missing
message = UPDATE and DELETE need a WHERE clause

[delayed ur_counters]
table = test.ur_counters
key = id
columns = hits
mode = memory
flush_interval = 1h
"""

UPDATE = b"UPDATE ur_u SET n = n + 1"


def proxy(name, rules, options=()):
    return t.Proxy("unreadable_" + name, rules=rules,
                   rules_dir=os.path.join(t.TMP, "unreadable_rules_" + name) if rules else None,
                   own_conn=True, http=True, options=options)


PROXIES = [proxy("auto_blocks", BLOCK_RULES), proxy("auto_none", None),
           proxy("pass", BLOCK_RULES, {"unreadable": "pass"}),
           proxy("block", None, {"unreadable": "block"})]
PORTS = [p.port for p in PROXIES]


def metric(i, action):
    body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % PROXIES[i].http_port,
                                  timeout=5).read().decode()
    want = 'myrewrite_statements_unreadable_total{action="%s"} ' % action
    for line in body.splitlines():
        if line.startswith(want):
            return int(line[len(want):])
    return None


def n_now(direct):
    return t.rows(direct, "SELECT n FROM ur_u")[0][0]


def setup():
    d = t.direct(autocommit=True)
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS ur_u")
    cur.execute("CREATE TABLE ur_u (n INT NOT NULL) ENGINE=InnoDB")
    cur.execute("INSERT INTO ur_u VALUES (0)")
    cur.execute("CREATE TABLE IF NOT EXISTS ur_counters (id INT PRIMARY KEY, hits INT NOT NULL)")
    return d


def trailing_nul(direct):
    c = raw.Conn(PORTS[0])
    variants = [UPDATE + b"\0", UPDATE + b"\0 ", UPDATE + b"\0;", UPDATE + b" \0\n",
                UPDATE + b"\0 ;\t\r\n", UPDATE + b"\0\0", UPDATE + b";\0"]
    for q in variants:
        r = c.query(q)
        t.check(r.kind == "err" and r.err[0] == 1148, "refused: %r" % q, r.err)
        t.eq("ur_u unchanged after %r" % q, 0, n_now(direct))
    t0 = time.time()
    r = c.query(b"SELECT SLEEP(100)\0")
    t.check(r.kind == "err" and r.err == (1148, "SLEEP() is not allowed through the proxy"),
            "SELECT SLEEP(100)\\0 gets the block rule's ERR", r.err)
    t.check(time.time() - t0 < 5, "and does not sleep")
    r = c.query(b"SELECT 1\0")
    t.eq("SELECT 1\\0 still runs (the server ignores the NUL)", [b"\x011"], r.rows)
    c.close()


def all_bytes(direct):
    c = raw.Conn(PORTS[0])
    ran = []
    for b in range(256):
        by = bytes([b])
        for where, q in (("end", UPDATE + by), ("after NUL", UPDATE + b"\0" + by),
                         ("middle", b"UPDATE ur_u SET n = n" + by + b" + 1")):
            r = c.query(q)
            if r.kind != "err":
                ran.append((where, b, r.kind))
    t.eq("no byte value at the end, after a NUL or in the middle lets the UPDATE run", [], ran)
    t.eq("ur_u unchanged after 768 variants", 0, n_now(direct))
    c.close()


def policy():
    q = b"SELECT 'abc"
    cases = [(0, "block rules, auto", 1148), (1, "no rules, auto", 1064),
             (2, "block rules, pass", 1064), (3, "no rules, block", 1148)]
    for i, what, code in cases:
        c = raw.Conn(PORTS[i])
        r = c.query(q)
        c.close()
        t.check(r.kind == "err" and r.err[0] == code, "%s: SELECT 'abc gets ERR %d" % (what, code),
                r.err)
        if code == 1148:
            msg = r.err[1]
            t.check("could not read the statement (unterminated string at byte 8)" in msg and
                    "set unreadable = pass" in msg, "%s: the ERR says why and how" % what, msg)
        action = "block" if code == 1148 else "pass"
        t.check((metric(i, action) or 0) >= 1, "%s: counted as action=%s" % (what, action))
    t.eq("block rules, pass: nothing counted as blocked", 0, metric(2, "block"))
    t.eq("no rules, auto: nothing counted as blocked", 0, metric(1, "block"))


def delayed(direct):
    cur = direct.cursor()
    cur.execute("SET GLOBAL log_output = 'TABLE'")
    cur.execute("TRUNCATE mysql.general_log")
    cur.execute("SET GLOBAL general_log = 1")
    try:
        for i, what in ((0, "auto"), (1, "auto without rules"), (2, "pass"),
                        (3, "block without rules")):
            for q in (b"UPDATE DELAYED ur_counters SET hits = hits + 1 WHERE id = 'ur_mark",
                      b"UPDATE DELAYED ur_counters SET hits = hits + 1 WHERE id = 1\0\0ur_mark",
                      b"DELETE DELAYED FROM ur_counters WHERE id = 'ur_mark"):
                c = raw.Conn(PORTS[i])
                r = c.query(q)
                c.close()
                t.check(r.kind == "err" and r.err[0] == 1235 and
                        "could not read this DELAYED statement" in r.err[1],
                        "unreadable = %s: %r gets the proxy's ERR 1235" % (what, q[:40]), r.err)
        time.sleep(0.5)
        seen = t.rows(direct, "SELECT COUNT(*) FROM mysql.general_log "
                      "WHERE argument LIKE '%ur\\_mark%' AND argument NOT LIKE '%general_log%'")
        t.eq("the server never saw an unreadable DELAYED statement", 0, seen[0][0])
    finally:
        cur.execute("SET GLOBAL general_log = 0")
        cur.execute("SET GLOBAL log_output = 'FILE'")


def main():
    if t.DIRECT_ONLY:
        print("ok - skipped: needs proxies of its own")
        sys.exit(77)
    direct = setup()
    for p in PROXIES:
        p.start()
    try:
        trailing_nul(direct)
        all_bytes(direct)
        policy()
        delayed(direct)
    finally:
        for p in PROXIES:
            p.stop(timeout=20)
    t.done()


if __name__ == "__main__":
    main()
