#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Keys the server refuses at flush go to a dead-letter table, the rest is applied: a proxy
of its own with DELAYED rules on INT counters, the real mariadbd.

For a staged InnoDB table, a staged MyISAM table (the LOCK TABLES path) and a memory-mode
table, each in turn:
  * 8 client threads add to keys 1..8 while one more client adds 1000 twice to key 9, whose
    value is near INT's maximum: each statement is in range, their sum overflows at flush;
  * FLUSH DELAYED (through the proxy) answers an ERR naming the table, the row count and
    the dead-letter table; every other key holds exactly its sum; key 9 is untouched;
  * `<table>_delayed_rejected` holds key 9's change with error 1264; staging is empty;
  * SHOW DELAYED (admin console) counts the rejected rows, SHOW DELAYED REJECTED lists the
    key with its error, /metrics has myrewrite_delayed_rejected_total{table=...};
  * a later FLUSH DELAYED with good deltas answers OK and applies them.
Also: two BIGINT deltas whose sum passes the signed 64-bit range are refused as 1690 without
sending a wrapped value.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports (client,
console, HTTP).
"""
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

RULES_DIR = os.path.join(t.TMP, "dreject_rules")
PROXY = t.Proxy("dreject_proxy", rules_dir=RULES_DIR, own_conn=True, admin=True, http=True)
PORT, HTTP_PORT = PROXY.port, PROXY.http_port
INT_MAX = 2147483647
NEAR = INT_MAX - 1500
TABLES = {"r_inno": ("InnoDB", "staged"), "r_myisam": ("MyISAM", "staged"),
          "r_mem": ("InnoDB", "memory")}
RULE = """
[delayed %(t)s]
table = test.%(t)s
key = id
columns = n
mode = %(mode)s
flush_interval = 1h
"""
EXTRA = """
[delayed r_big]
table = test.r_big
key = id
columns = n
flush_interval = 1h
"""
THREADS = 8
PER_THREAD = 40

rows = t.rows


def setup(d):
    cur = d.cursor()
    names = list(TABLES) + ["r_big"]
    cur.execute("DROP TABLE IF EXISTS " + ", ".join(
        names + [n + "_delayed" for n in names] + [n + "_delayed_rejected" for n in names]))
    for name, (engine, _) in TABLES.items():
        cur.execute("CREATE TABLE %s (id INT PRIMARY KEY, n INT NOT NULL DEFAULT 0) ENGINE=%s"
                    % (name, engine))
        cur.execute("INSERT INTO %s VALUES %s, (9, %d)"
                    % (name, ", ".join("(%d, 0)" % k for k in range(1, 9)), NEAR))
    cur.execute("CREATE TABLE r_big (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0)")
    cur.execute("INSERT INTO r_big VALUES (1, 0), (2, 0)")


def flush(c, table):
    """FLUSH DELAYED table through the proxy: None for OK, else (code, message)."""
    try:
        c.cursor().execute("FLUSH DELAYED " + table)
        return None
    except pymysql.err.MySQLError as e:
        return e.args


def adder(table, seed, out, errors):
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    rnd = random.Random(seed)
    mine = {}
    try:
        for _ in range(PER_THREAD):
            k, v = rnd.randint(1, 8), rnd.randint(1, 3)
            cur.execute("UPDATE DELAYED %s SET n = n + %d WHERE id = %d" % (table, v, k))
            mine[k] = mine.get(k, 0) + v
    except Exception as e:  # noqa: BLE001
        errors.append(repr(e))
    finally:
        c.close()
    out.append(mine)


def overflow_one(d, table):
    kind = "%s %s" % (TABLES[table][1], TABLES[table][0])
    out, errors = [], []
    threads = [threading.Thread(target=adder, args=(table, 7 * i + 1, out, errors))
               for i in range(THREADS)]
    bad = t.connect(PORT, autocommit=True)
    for th in threads:
        th.start()
    for _ in range(2):
        bad.cursor().execute("UPDATE DELAYED %s SET n = n + 1000 WHERE id = 9" % table)
    for th in threads:
        th.join()
    t.eq("%s: every increment was acknowledged" % kind, [], errors)
    want = {k: 0 for k in range(1, 9)}
    for m in out:
        for k, v in m.items():
            want[k] += v
    want[9] = NEAR
    rows_want = 2 if TABLES[table][1] == "staged" else 1  # memory mode: one key, composed
    got = flush(bad, table)
    t.check(got is not None and got[0] == 1235 and
            "%d staged row(s) could not be applied" % rows_want in got[1] and "test.%s" % table in got[1] and
            "test.%s_delayed_rejected" % table in got[1] and "1264" in got[1],
            "%s: FLUSH DELAYED answers an ERR naming the table, the rows and where they are"
            % kind, got)
    deadline = time.time() + 10
    have = dict(rows(d, "SELECT id, n FROM %s" % table))
    while have != want and time.time() < deadline:  # MyISAM: staging empties before the apply
        time.sleep(0.1)
        have = dict(rows(d, "SELECT id, n FROM %s" % table))
    t.eq("%s: every other key holds exactly its sum, the refused key is untouched" % kind,
         want, have)
    if TABLES[table][1] == "staged":
        t.eq("%s: staging is empty" % kind, ((0,),),
             rows(d, "SELECT COUNT(*) FROM %s_delayed" % table))
    dl = rows(d, "SELECT key_values, `change`, staged_rows, error_code, error_message FROM "
                 "%s_delayed_rejected" % table)
    t.check(len(dl) == 1 and dl[0][0] == "(`id`) = ('9')" and dl[0][1] == "`n` + 2000" and
            dl[0][2] == rows_want and dl[0][3] == 1264 and "Out of range" in dl[0][4],
            "%s: the refused key's change is in the dead-letter table with its error" % kind, dl)
    shown = {r["rule"]: r for r in PROXY.admin_dicts("SHOW DELAYED")}
    t.eq("%s: SHOW DELAYED counts the rejected rows" % kind, rows_want,
         shown.get(table, {}).get("rows_rejected"))
    listed = PROXY.admin_dicts("SHOW DELAYED REJECTED test.%s" % table)
    t.check(len(listed) == 1 and listed[0]["key_values"] == "(`id`) = ('9')" and
            listed[0]["error_code"] == 1264 and
            listed[0]["dead_letter_table"] == "test.%s_delayed_rejected" % table,
            "%s: SHOW DELAYED REJECTED lists the key with its error" % kind, listed)
    t.eq("%s: /metrics counts the rejected rows" % kind, rows_want,
         t.metric(HTTP_PORT, 'myrewrite_delayed_rejected_total{table="test.%s"}' % table))
    bad.cursor().execute("UPDATE DELAYED %s SET n = n + 5 WHERE id = 1" % table)
    t.eq("%s: the next FLUSH DELAYED with good deltas answers OK" % kind, None,
         flush(bad, table))
    deadline = time.time() + 10
    while rows(d, "SELECT n FROM %s WHERE id = 1" % table)[0][0] != want[1] + 5 and \
            time.time() < deadline:
        time.sleep(0.1)
    t.eq("%s: and applies them" % kind, want[1] + 5,
         rows(d, "SELECT n FROM %s WHERE id = 1" % table)[0][0])
    bad.close()


def bigint_sum(d):
    c = t.connect(PORT, autocommit=True)
    for _ in range(2):
        c.cursor().execute("UPDATE DELAYED r_big SET n = n + 9223372036854775807 WHERE id = 1")
    c.cursor().execute("UPDATE DELAYED r_big SET n = n + 3 WHERE id = 2")
    got = flush(c, "r_big")
    t.check(got is not None and "1690" in got[1],
            "BIGINT: two deltas summing past 64 bits are refused as 1690", got)
    t.eq("BIGINT: the key is untouched, the other applied", {1: 0, 2: 3},
         dict(rows(d, "SELECT id, n FROM r_big")))
    t.eq("BIGINT: the dead-letter row", ((1690, 2),),
         rows(d, "SELECT error_code, staged_rows FROM r_big_delayed_rejected"))
    c.close()


def main():
    t.needs_own_proxy()
    os.makedirs(RULES_DIR, exist_ok=True)
    with open(os.path.join(RULES_DIR, "10-delayed-reject.rules"), "w") as f:
        f.write("".join(RULE % {"t": n, "mode": m} for n, (_, m) in TABLES.items()) + EXTRA)
    d = t.direct(autocommit=True)
    setup(d)
    PROXY.start()
    try:
        end = time.time() + 20
        while time.time() < end and rows(d, "SELECT COUNT(*) FROM information_schema.TABLES "
                                            "WHERE TABLE_SCHEMA = 'test' AND TABLE_NAME = "
                                            "'r_big_delayed'") != ((1,),):
            time.sleep(0.1)
        for table in TABLES:
            overflow_one(d, table)
        bigint_sum(d)
    finally:
        PROXY.stop()
    t.done()


if __name__ == "__main__":
    main()
