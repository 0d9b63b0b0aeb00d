#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The admin console end to end, through a proxy of its own, against the real mariadbd.

Starts myrewrite on free ports of its own (clients, console) with a rules
directory written here and an admin password, then checks:
  * a wrong admin password or user is refused with 1045, also after an auth
    switch (a client that asks for another plugin is moved to
    mysql_native_password);
  * every command answers a result set with the expected columns and
    plausible values: SHOW VERSION, CONFIG (passwords never shown), RULES (hits
    move), DIGESTS, STATS (`commands` moves by exactly the statements sent),
    BACKENDS, QUEUES, EXPLAIN REWRITE (shows the matched rule);
  * RELOAD RULES: a good set is swapped in ("ok, N rules"); a broken file
    returns its errors as file:line rows and the old rules keep working;
  * unknown commands get ERR 1047 listing the commands; COM_PING and
    COM_INIT_DB answer OK;
  * SHOW DELAYED has its columns and no rows without a delayed rule;
  * SHOW PAGINATION: a paginate rule's deferred and refused pages move by
    exactly the statements sent, the (all) row too;
  * SHOW CLIENTS: the session's user, address, schema, backend connection id,
    state and digest; statements and bytes_in move exactly; a running
    statement shows as `response`; a closed session disappears;
  * the mariadb CLI works against the console;
  * without admin_password the console is not started, the log says why,
    and connecting to it fails while the proxy itself serves.
"""
import decimal
import hashlib
import os
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
import rawproto_lib as raw  # noqa: E402

RULES_DIR = os.path.join(t.TMP, "admin_rules")
ADMIN_USER = "admin"
ADMIN_PASSWORD = "adm-pw-7Qx!"
PROXY = t.Proxy("admin_proxy", rules_dir=RULES_DIR, admin=True, admin_password=ADMIN_PASSWORD)
PORT, ADMIN_PORT = PROXY.port, PROXY.admin_port
# The same ports and log with admin_listen but no admin_password.
NO_PASSWORD = t.Proxy("admin_proxy", port=PORT, rules_dir=RULES_DIR,
                      options=[("admin_listen", "%s:%d" % (t.HOST, ADMIN_PORT))])

RULES = """
[rewrite adm_upper]
pattern = SELECT name FROM adm_items WHERE id = ?
replacement = SELECT UPPER(name) AS name FROM adm_items WHERE id = ?

[block adm_no_drop]
match = ^\\s*DROP\\s+TABLE\\s+adm_keep
message = adm_keep must not be dropped through the proxy
"""

MORE_RULES = """
[rewrite adm_lower]
pattern = SELECT name FROM adm_items WHERE id > ?
replacement = SELECT LOWER(name) AS name FROM adm_items WHERE id > ?
"""

BROKEN_RULES = """
[regex adm_broken]
match = ^SELECT (unclosed
replace = x
"""


def write_rules(name, text):
    os.makedirs(RULES_DIR, exist_ok=True)
    with open(os.path.join(RULES_DIR, name), "w") as f:
        f.write(text)


def admin(password=ADMIN_PASSWORD, user=ADMIN_USER, **kw):
    return pymysql.connect(host=t.HOST, port=ADMIN_PORT, user=user, password=password,
                           connect_timeout=5, read_timeout=30, **kw)


def proxy():
    return t.connect(PORT, autocommit=True)


def query(c, sql):
    """(column names, rows) of one statement."""
    with c.cursor() as cur:
        cur.execute(sql)
        cols = [d[0] for d in cur.description] if cur.description else []
        return cols, cur.fetchall()


def as_dict(c, sql):
    return {r[0]: r[1] for r in query(c, sql)[1]}


def one(c, sql):
    return query(c, sql)[1]


def expect_error(desc, code, text, fn):
    try:
        fn()
        t.not_ok(desc, "no error")
    except pymysql.err.MySQLError as e:
        t.check(e.args[0] == code and text in str(e.args[1]), desc, e.args)


# ---- login ----

def native_token(password, scramble):
    s1 = hashlib.sha1(password.encode()).digest()
    s2 = hashlib.sha1(s1).digest()
    mix = hashlib.sha1(scramble + s2).digest()
    return bytes(a ^ b for a, b in zip(s1, mix))


def read_packet(s):
    def exactly(n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise EOFError("connection closed")
            buf += chunk
        return buf
    hdr = exactly(4)
    n = hdr[0] | hdr[1] << 8 | hdr[2] << 16
    return hdr[3], exactly(n)


def send_packet(s, seq, payload):
    s.sendall(struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload)


def login_with_switch(password):
    """Logs in naming caching_sha2_password; returns (switch packet, final packet)."""
    s = socket.create_connection((t.HOST, ADMIN_PORT), timeout=5)
    try:
        _, greeting = read_packet(s)
        caps = (1 << 9) | (1 << 15) | (1 << 19) | (1 << 21)  # 4.1, secure, plugin, lenenc
        resp = struct.pack("<IIB", caps, 1 << 24, 33) + b"\0" * 23
        resp += ADMIN_USER.encode() + b"\0" + bytes([20]) + b"x" * 20
        resp += b"caching_sha2_password\0"
        send_packet(s, 1, resp)
        seq, switch = read_packet(s)
        if switch[:1] != b"\xfe":
            return switch, b""
        name_end = switch.index(b"\0", 1)
        scramble = switch[name_end + 1:name_end + 21]
        send_packet(s, seq + 1, native_token(password, scramble))
        _, final = read_packet(s)
        return switch, final
    finally:
        s.close()


def check_login():
    expect_error("wrong admin password refused with 1045", 1045, "Access denied",
                 lambda: admin(password="wrong").close())
    expect_error("wrong admin user refused with 1045", 1045, "Access denied",
                 lambda: admin(user="root").close())
    expect_error("empty password refused with 1045", 1045, "using password: NO",
                 lambda: admin(password="").close())
    switch, final = login_with_switch(ADMIN_PASSWORD)
    t.check(switch.startswith(b"\xfemysql_native_password\0") and len(switch) == 1 + 22 + 21,
            "a client asking for another plugin gets an auth switch to native", switch)
    t.check(final[:1] == b"\x00", "after the switch the right password logs in", final)
    _, final = login_with_switch("wrong")
    t.check(final[:1] == b"\xff" and struct.unpack("<H", final[1:3])[0] == 1045,
            "after the switch a wrong password gets 1045", final)


# ---- commands ----

def check_version_config(c):
    cols, rows = query(c, "SHOW VERSION")
    t.eq("SHOW VERSION columns", ["name", "value"], cols)
    v = dict(rows)
    out = subprocess.run([t.BIN, "--version"], capture_output=True, text=True).stdout.split()[-1]
    t.eq("SHOW VERSION version is the binary's", out, v.get("version"))
    t.eq("SHOW VERSION workers", "2", v.get("workers"))
    t.check(int(v.get("uptime_seconds", "-1")) >= 0 and v.get("libevent"),
            "SHOW VERSION uptime and libevent", v)

    cols, rows = query(c, "show config;")
    t.eq("SHOW CONFIG columns", ["key", "value"], cols)
    cfg = dict(rows)
    t.eq("SHOW CONFIG listen", "%s:%d" % (t.HOST, PORT), cfg.get("listen"))
    t.eq("SHOW CONFIG rules_dir", RULES_DIR, cfg.get("rules_dir"))
    t.eq("SHOW CONFIG admin_user", ADMIN_USER, cfg.get("admin_user"))
    t.eq("SHOW CONFIG masks admin_password", "(set, not shown)", cfg.get("admin_password"))
    t.check(all(ADMIN_PASSWORD not in str(r) for r in rows), "the password appears nowhere")


def rules_by_name(c):
    cols, rows = query(c, "SHOW RULES")
    return cols, {r[0]: r for r in rows}


def check_rules_and_digests(c):
    cols, rules = rules_by_name(c)
    t.eq("SHOW RULES columns",
         ["name", "kind", "file", "line", "enabled", "hits", "last_hit"], cols)
    r = rules.get("adm_upper")
    t.check(r and r[1] == "rewrite" and r[2].endswith("10-admin.rules") and r[3] == 2 and
            r[4] == "yes" and r[5] == 0 and r[6] is None, "SHOW RULES: rule before any hit", r)
    t.check(rules.get("adm_no_drop", [None, None])[1] == "block", "SHOW RULES: block rule")
    p = proxy()
    for _ in range(3):
        t.eq("rewrite applies through the proxy", (("APPLE",),),
             one(p, "SELECT name FROM adm_items WHERE id = 1"))
    expect_error("block rule blocks", 1148, "adm_keep", lambda: one(p, "DROP TABLE adm_keep"))
    for i in range(4):
        one(p, "SELECT %d AS adm_digest_probe" % i)
    p.close()
    _, rules = rules_by_name(c)
    r = rules["adm_upper"]
    t.eq("SHOW RULES: hits counted", 3, r[5])
    t.check(r[6] is not None and r[6][:2] == "20", "SHOW RULES: last_hit is a UTC time", r[6])
    t.eq("SHOW RULES: block hit counted", 1, rules["adm_no_drop"][5])

    cols, rows = settled(lambda: query(c, "SHOW DIGESTS"),
                         lambda q: any(r[0] == "SELECT ? AS adm_digest_probe" and r[1] >= 4
                                       for r in q[1]))
    t.eq("SHOW DIGESTS columns",
         ["digest", "count", "total_ms", "avg_us", "max_us", "rewritten", "blocked"], cols)
    d = {r[0]: r for r in rows}
    probe = d.get("SELECT ? AS adm_digest_probe")
    t.check(probe and probe[1] == 4 and probe[5] == 0 and probe[6] == 0,
            "SHOW DIGESTS merges a digest over workers: count 4", probe)
    t.check(probe and isinstance(probe[2], decimal.Decimal) and probe[2] > 0 and
            probe[4] >= probe[3] > 0, "SHOW DIGESTS times are plausible", probe)
    up = d.get("SELECT name FROM adm_items WHERE id = ?")
    t.check(up and up[1] == 3 and up[5] == 3, "SHOW DIGESTS counts rewritten statements", up)
    totals = [r[2] for r in rows]
    t.eq("SHOW DIGESTS sorted by total time", sorted(totals, reverse=True), totals)
    t.check(len(rows) <= 100, "SHOW DIGESTS shows at most 100")


def stats(c):
    return as_dict(c, "SHOW STATS")


def settled(fetch, ready):
    """fetch() once ready(value) holds, or after 3 s. A worker counts a
    statement right after relaying the end of its response, so a reader may
    be a moment early; "exactly N" is then checked on the settled value."""
    deadline = time.time() + 3
    while True:
        v = fetch()
        if ready(v) or time.time() > deadline:
            return v
        time.sleep(0.02)


def check_stats(c):
    cols, rows = query(c, "SHOW STATS")
    t.eq("SHOW STATS columns", ["counter", "value"], cols)
    names = [r[0] for r in rows]
    for n in ("connections_accepted", "connections_active", "commands", "commands_refused",
              "statements_rewritten", "statements_blocked", "bytes_from_clients",
              "bytes_from_backend", "closes_client_quit", "closes_client_gone"):
        t.check(n in names, "SHOW STATS has " + n)
    # What a fresh connection itself sends (pymysql with autocommit=True sends
    # nothing as mariadbd starts in autocommit), measured rather than assumed.
    s0 = stats(c)
    p = proxy()
    time.sleep(0.3)  # anything the connect sent has been counted by now
    s1 = stats(c)
    connect_cmds = s1["commands"] - s0["commands"]
    t.eq("a fresh pymysql connection sends no command", 0, connect_cmds)
    t.eq("connections_accepted moves by one", 1,
         s1["connections_accepted"] - s0["connections_accepted"])
    for i in range(7):
        one(p, "SELECT %d" % i)
    p.ping(reconnect=False)
    s2 = settled(lambda: stats(c), lambda s: s["commands"] >= s1["commands"] + 8)
    time.sleep(0.2)  # nothing else may be counted after the fact
    s2 = stats(c)
    t.eq("commands moves by exactly the statements sent (7 + 1 ping)", 8,
         s2["commands"] - s1["commands"])
    t.check(s2["bytes_from_clients"] > s1["bytes_from_clients"] and
            s2["bytes_from_backend"] > s1["bytes_from_backend"], "bytes in and out move")
    p.close()
    for _ in range(50):
        s3 = stats(c)
        if s3["closes_client_quit"] == s2["closes_client_quit"] + 1:
            break
        time.sleep(0.05)
    t.eq("a COM_QUIT close is counted", s2["closes_client_quit"] + 1, s3["closes_client_quit"])


def backend_connections(c):
    cols, rows = query(c, "SHOW BACKENDS")
    return cols, rows


def check_backends_queues(c):
    held = [proxy(), proxy()]
    want = None
    for _ in range(50):
        cols, rows = backend_connections(c)
        want = rows
        if rows and rows[0][1] == 2:
            break
        time.sleep(0.05)
    t.eq("SHOW BACKENDS columns", ["address", "connections", "proxy_user"], cols)
    t.eq("SHOW BACKENDS: address, the two open connections, no proxy user",
         [("%s:%d" % (t.HOST, t.DIRECT_PORT), 2, "no")], list(want))
    for h in held:
        h.close()
    cols, rows = query(c, "SHOW QUEUES")
    t.eq("SHOW QUEUES columns", ["counter", "value"], cols)
    q = dict(rows)
    t.check(set(q) >= {"release_runs", "rows_released", "reaper_runs", "errors"} and
            all(v == 0 for v in q.values()), "SHOW QUEUES counters, all zero here", q)


def check_explain(c):
    cols, rows = query(c, "EXPLAIN REWRITE 'SELECT name FROM adm_items WHERE id = 42'")
    t.eq("EXPLAIN REWRITE columns", ["explain"], cols)
    lines = [r[0] for r in rows]
    t.check(any(l.strip().startswith("rule adm_upper (") and "matched: rewrite" in l
                for l in lines), "EXPLAIN REWRITE shows the matched rule", lines)
    t.check("text: SELECT UPPER(name) AS name FROM adm_items WHERE id = 42" in lines,
            "EXPLAIN REWRITE shows the rewritten text", lines)
    lines = [r[0] for r in one(c, "explain rewrite 'SELECT ''x'' FROM adm_items';")]
    t.check("action: pass" in lines, "EXPLAIN REWRITE of an unmatched statement: pass", lines)
    expect_error("EXPLAIN REWRITE without a quoted statement", 1064, "EXPLAIN REWRITE",
                 lambda: one(c, "EXPLAIN REWRITE SELECT 1"))


def check_reload(c):
    write_rules("15-more.rules", MORE_RULES)
    cols, rows = query(c, "RELOAD RULES")
    t.eq("RELOAD RULES success: one row", (["result"], (("ok, 3 rules",),)), (cols, rows))
    _, rules = rules_by_name(c)
    t.check("adm_lower" in rules, "the reloaded rule is listed")
    write_rules("20-broken.rules", BROKEN_RULES)
    cols, rows = query(c, "reload rules;")
    t.eq("RELOAD RULES failure: column", ["error"], cols)
    t.check(rows and all(":" in r[0] for r in rows) and
            any("20-broken.rules:3:" in r[0] for r in rows),
            "RELOAD RULES failure returns file:line errors", rows)
    _, rules = rules_by_name(c)
    t.check("adm_lower" in rules and "adm_broken" not in rules, "the old rules stay listed")
    p = proxy()
    t.eq("the old rules keep working", (("APPLE",),),
         one(p, "SELECT name FROM adm_items WHERE id = 1"))
    p.close()
    os.unlink(os.path.join(RULES_DIR, "20-broken.rules"))
    # the log is written by its own thread: give it a moment under load
    logged = False
    for _ in range(50):
        logged = "previous rules stay in force" in PROXY.log_text()
        if logged:
            break
        time.sleep(0.1)
    t.check(logged, "the failed reload is logged too")


def check_misc(c):
    expect_error("unknown command: 1047 listing the commands", 1047, "SHOW RULES",
                 lambda: one(c, "SELECT 1"))
    try:
        one(c, "SHOW NONSENSE")
    except pymysql.err.MySQLError as e:
        t.check(e.args[0] == 1047 and "EXPLAIN REWRITE" in e.args[1] and
                "RELOAD RULES" in e.args[1], "the error lists every command", e.args)
    cols, rows = query(c, "SHOW DELAYED")
    t.eq("SHOW DELAYED columns, no rows without a delayed rule",
         (["rule", "table", "staging_table", "rows_staged", "rows_flushed", "flush_rounds",
           "last_flush", "last_flush_ms", "lag_seconds", "errors", "last_error", "rows_rejected",
           "batches", "rows_per_batch", "grouped", "group_wait_ms", "parked", "park_wait_ms",
           "read_pending"], ()),
         (cols, rows))
    expect_error("FLUSH DELAYED with no delayed rule", 1047, "nothing to flush",
                 lambda: one(c, "FLUSH DELAYED"))
    c.ping(reconnect=False)
    t.ok("COM_PING answers OK")
    c.select_db("anything")
    t.ok("COM_INIT_DB answers OK")
    t.eq("the session goes on", ["counter", "value"], query(c, "SHOW STATS")[0])


PAGE_RULES = """
[paginate adm_pages]
table = adm_pages
key = id
threshold = 10
max_offset = 40
"""


def pagination(c):
    cols, rows = query(c, "SHOW PAGINATION")
    return cols, {r[0]: r for r in rows}


def check_pagination(c):
    """Per rule: deep pages sent as a deferred join and pages refused beyond max_offset
    move by exactly the statements sent; the (all) row sums the workers' counters."""
    write_rules("30-pages.rules", PAGE_RULES)
    t.eq("RELOAD RULES with a paginate rule", (("ok, 4 rules",),), one(c, "RELOAD RULES"))
    cols, rows = pagination(c)
    t.eq("SHOW PAGINATION columns",
         ["rule", "table", "threshold", "max_offset", "hits", "deferred", "refused",
          "keyset_hits", "keyset_misses", "bookmarks"], cols)
    t.eq("SHOW PAGINATION rows: the rule in force and the total", ["adm_pages", "(all)"],
         sorted(rows, key=lambda k: k != "adm_pages"))
    r0, a0 = rows["adm_pages"], rows["(all)"]
    t.eq("the rule's settings", ("adm_pages", 10, 40), (r0[1], int(r0[2]), int(r0[3])))
    p = proxy()
    shallow = one(p, "SELECT id FROM adm_pages ORDER BY id LIMIT 2, 3")
    deep = [one(p, "SELECT id FROM adm_pages ORDER BY id LIMIT %d, 3" % off) for off in (20, 30)]
    expect_error("a page beyond max_offset is refused", 1235, "deeper than the 40 allowed",
                 lambda: one(p, "SELECT id FROM adm_pages ORDER BY id LIMIT 45, 3"))
    p.close()
    t.eq("pages come back right", (((3,), (4,), (5,)), [((21,), (22,), (23,)), ((31,), (32,),
                                                                               (33,))]),
         (shallow, deep))
    _, rows = pagination(c)
    r1, a1 = rows["adm_pages"], rows["(all)"]
    t.eq("deferred +2, refused +1 for the rule, hits +3",
         (2, 1, 3), (int(r1[5]) - int(r0[5]), int(r1[6]) - int(r0[6]), int(r1[4]) - int(r0[4])))
    t.eq("the (all) row moves the same",
         (2, 1), (int(a1[5]) - int(a0[5]), int(a1[6]) - int(a0[6])))
    t.eq("keyset counters and bookmarks: none without a keyset strategy", ("0", "0", "0"),
         (str(a1[7]), str(a1[8]), str(a1[9])))
    check_prepared_pages(c, r1, a1)
    os.unlink(os.path.join(RULES_DIR, "30-pages.rules"))
    t.eq("RELOAD RULES without it", (("ok, 3 rules",),), one(c, "RELOAD RULES"))
    _, rows = pagination(c)
    t.eq("SHOW PAGINATION lists only rules in force", ["(all)"], list(rows))


def check_prepared_pages(c, r1, a1):
    """A prepared page meets the rule once, at COM_STMT_PREPARE; each COM_STMT_EXECUTE
    sends the deferred join again and is counted as one; an execute whose `?` offset is
    beyond max_offset is refused and counted as one refusal."""
    p = raw.Conn(PORT)
    deep = p.prepare("SELECT id FROM adm_pages ORDER BY id LIMIT 20, 3")
    by_param = p.prepare("SELECT id FROM adm_pages ORDER BY id LIMIT ?, 3")
    got = [p.execute(deep.stmt_id).rows, p.execute(deep.stmt_id).rows,
           p.execute(by_param.stmt_id, params=[(raw.TYPE_LONG, 30)]).rows]
    too_deep = p.execute(by_param.stmt_id, params=[(raw.TYPE_LONG, 45)])
    t.eq("prepared: an execute beyond max_offset is refused with 1235", ("err", 1235),
         (too_deep.kind, too_deep.err[0] if too_deep.err else None))
    p.send_command(struct.pack("<BI", raw.COM_STMT_CLOSE, deep.stmt_id))  # no answer
    t.eq("the session goes on after COM_STMT_CLOSE", 1, len(p.must("SELECT 1").rows))
    p.close()
    t.eq("prepared pages come back right", 3, len([r for r in got if len(r) == 3]))
    _, rows = pagination(c)
    r2, a2 = rows["adm_pages"], rows["(all)"]
    t.eq("prepared: deferred +3 (one per execute), refused +1, hits +2 (one per prepare)",
         (3, 1, 2), (int(r2[5]) - int(r1[5]), int(r2[6]) - int(r1[6]), int(r2[4]) - int(r1[4])))
    t.eq("prepared: the (all) row's deferred +3, refused +1", (3, 1),
         (int(a2[5]) - int(a1[5]), int(a2[6]) - int(a1[6])))


def clients(c):
    cols, rows = query(c, "SHOW CLIENTS")
    return cols, {int(r[0]): dict(zip(cols, r)) for r in rows}


def check_clients(c):
    """A session's row: who, from where, which schema and backend connection, its state
    and latest statement (as a digest), statements and bytes moving exactly."""
    p = proxy()
    one(p, "USE " + t.DB)
    conn_id = one(p, "SELECT CONNECTION_ID()")[0][0]
    local = "%s:%d" % p._sock.getsockname()[:2]
    cols, rows = clients(c)
    t.eq("SHOW CLIENTS columns",
         ["id", "user", "client", "schema", "backend_id", "worker", "state", "state_seconds",
          "command", "last_statement", "statements", "bytes_in", "bytes_out", "connected_at"],
         cols)
    mine = [r for r in rows.values() if r["client"] == local]
    t.eq("one row for the proxy connection", 1, len(mine))
    if not mine:
        return
    r0 = mine[0]
    t.eq("user, schema and backend connection id",
         (t.USER, t.DB, conn_id, "idle", "COM_QUERY", "SELECT CONNECTION_ID()"),
         (r0["user"], r0["schema"], int(r0["backend_id"]), r0["state"], r0["command"],
          r0["last_statement"]))
    t.check(int(r0["worker"]) in (0, 1) and r0["connected_at"], "worker and connect time", r0)
    for i in range(3):
        one(p, "SELECT %d" % i)
    time.sleep(0.1)
    r1 = clients(c)[1][int(r0["id"])]
    t.eq("statements move by exactly the 3 sent", 3, int(r1["statements"]) - int(r0["statements"]))
    # "SELECT 0" is 13 bytes with its header; each answer is a small result set
    t.eq("bytes_in moves by the 3 COM_QUERY packets", 3 * 13,
         int(r1["bytes_in"]) - int(r0["bytes_in"]))
    t.check(int(r1["bytes_out"]) > int(r0["bytes_out"]), "bytes_out moves", (r0, r1))
    done = []
    sleeper = threading.Thread(target=lambda: done.append(one(p, "SELECT SLEEP(1.5)")))
    sleeper.start()
    time.sleep(0.8)
    busy = clients(c)[1][int(r0["id"])]
    sleeper.join()
    t.check(busy["state"] == "response" and busy["last_statement"] == "SELECT SLEEP(?)" and
            0.5 <= float(busy["state_seconds"]) < 1.5,
            "a running statement shows as response, with its digest and time so far", busy)
    p.close()
    time.sleep(0.2)
    t.check(int(r0["id"]) not in clients(c)[1], "a closed session is gone from SHOW CLIENTS")


def check_cli():
    r = subprocess.run(["mariadb", "-h", t.HOST, "-P", str(ADMIN_PORT), "-u", ADMIN_USER,
                        "-p" + ADMIN_PASSWORD, "--batch", "-e", "SHOW RULES; SHOW STATS"],
                       capture_output=True, text=True, timeout=30)
    t.check(r.returncode == 0 and r.stdout.startswith("name\tkind\tfile\tline") and
            "adm_upper\trewrite" in r.stdout and "\ncommands\t" in r.stdout,
            "the mariadb CLI runs console commands", (r.returncode, r.stdout[:500], r.stderr))


def check_no_password():
    NO_PASSWORD.start()
    try:
        text = NO_PASSWORD.log_text()
        t.check("admin console not started: admin_password is empty" in text,
                "without a password the log says why the console is off", text[-500:])
        try:
            admin().close()
            t.not_ok("connecting to the console fails without a password")
        except pymysql.err.OperationalError as e:
            t.check(e.args[0] == 2003, "connecting to the console fails without a password",
                    e.args)
        c = proxy()
        t.eq("the proxy itself serves", ((1,),), one(c, "SELECT 1"))
        c.close()
    finally:
        t.eq("proxy without console exits 0", 0, NO_PASSWORD.stop())


def setup_tables():
    c = t.direct(autocommit=True)
    for sql in ["DROP TABLE IF EXISTS adm_items, adm_keep, adm_pages",
                "CREATE TABLE adm_items (id INT PRIMARY KEY, name VARCHAR(50))",
                "CREATE TABLE adm_keep (v INT)",
                "CREATE TABLE adm_pages (id INT PRIMARY KEY)",
                "INSERT INTO adm_pages SELECT seq FROM seq_1_to_60",
                "INSERT INTO adm_items VALUES (1, 'apple'), (2, 'Pear')"]:
        one(c, sql)
    c.close()


def main():
    if t.DIRECT_ONLY:
        print("skip: needs the proxy")
        sys.exit(77)
    for name in os.listdir(RULES_DIR) if os.path.isdir(RULES_DIR) else []:
        os.unlink(os.path.join(RULES_DIR, name))
    write_rules("10-admin.rules", RULES)
    setup_tables()
    PROXY.start()
    try:
        check_login()
        c = admin()
        check_version_config(c)
        check_rules_and_digests(c)
        check_stats(c)
        check_backends_queues(c)
        check_explain(c)
        check_reload(c)
        check_misc(c)
        check_pagination(c)
        check_clients(c)
        check_cli()
        held = admin()  # open across shutdown: the console must not hold it up
    finally:
        rc = PROXY.stop()
    t.eq("proxy with an open console connection exits 0 on SIGTERM", 0, rc)
    try:
        held.close()
    except pymysql.err.MySQLError:
        pass  # the console closed it at shutdown
    check_no_password()
    t.done()


if __name__ == "__main__":
    main()
