#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""DELAYED rules that name no key, the check of an existing staging table, and the
LOCK TABLES flush of non-transactional tables, on a proxy of its own (proxy_user set,
so the schema cache and the flusher run) in front of the real mariadbd.

  * a rule without `key` stages on the table's primary key read by the schema cache:
    the first statement may be refused with "schema not loaded yet, retry" (nothing
    staged), later ones are staged; every refusal before that is such a retry;
  * 32 concurrent clients of UPDATE DELAYED (+1, -1, IN lists) on a MyISAM table, and
    as many on a MEMORY table with a composite primary key (the rules name no key):
    after the flushes each counter equals the exact sum of the acknowledged increments,
    and DELETE DELAYED removes its rows;
  * the proxy's log shows the MyISAM flush took the LOCK TABLES path;
  * an InnoDB table with a composite primary key and a rule without key: exact sums;
  * a staging table left over without the columns a rule stages into: the flusher
    logs which columns are missing and counts an error in SHOW DELAYED;
  * an ARCHIVE table is refused by the flusher with its reason (when the server has
    the ARCHIVE engine loaded).
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports (client, console).
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

CLIENTS = 32
PER_CLIENT = 60
RULES = """
[delayed my]
table = test.dk_my
columns = hits, misses
flush_interval = 200ms
flush_rows = 300

[delayed mem]
table = test.dk_mem
columns = n
staging_engine = MyISAM
flush_interval = 200ms

[delayed inno]
table = test.dk_inno
columns = n
flush_interval = 200ms

[delayed stale]
table = test.dk_stale
columns = n
flush_interval = 200ms

[delayed arch]
table = test.dk_arch
key = id
columns = n
flush_interval = 200ms
"""
TABLES = ("dk_my, dk_my_delayed, dk_mem, dk_mem_delayed, dk_stale, dk_stale_delayed, "
          "dk_arch, dk_arch_delayed, dk_inno, dk_inno_delayed")


PROXY = t.Proxy("delayed_schema", rules=RULES, own_conn=True, admin=True)
PORT, ADMIN_PORT = PROXY.port, PROXY.admin_port


def setup(d):
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS " + TABLES)
    cur.execute("CREATE TABLE dk_my (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0, "
                "misses BIGINT NOT NULL DEFAULT 0) ENGINE=MyISAM")
    cur.execute("INSERT INTO dk_my (id) SELECT seq FROM seq_1_to_8")
    cur.execute("INSERT INTO dk_my (id) VALUES (100), (101)")
    cur.execute("CREATE TABLE dk_mem (site VARCHAR(10) NOT NULL, day INT NOT NULL, "
                "n BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (site, day)) ENGINE=MEMORY")
    cur.execute("INSERT INTO dk_mem (site, day) VALUES ('a', 1), ('a', 2), ('b''q', 1)")
    cur.execute("CREATE TABLE dk_inno (n BIGINT NOT NULL DEFAULT 0, b INT NOT NULL, "
                "a CHAR(2) NOT NULL, PRIMARY KEY (a, b)) ENGINE=InnoDB")
    cur.execute("INSERT INTO dk_inno (a, b) VALUES ('x', 1), ('x', 2)")
    cur.execute("CREATE TABLE dk_stale (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB")
    # a staging table from some other rule: no `n`, and its key is called k
    cur.execute("CREATE TABLE dk_stale_delayed (seq BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, "
                "k INT NOT NULL, op TINYINT NOT NULL DEFAULT 0, staged_at TIMESTAMP(6)) "
                "ENGINE=InnoDB")
    try:
        cur.execute("CREATE TABLE dk_arch (id INT NOT NULL, n BIGINT NOT NULL) ENGINE=ARCHIVE")
        return True
    except pymysql.err.MySQLError:
        return False  # the ARCHIVE plugin is not loaded here


def send(cur, sql):
    """Sends until staged; returns (rows staged, retries). Only the schema-not-loaded
    refusal may be retried: anything else is a failure."""
    retries = 0
    while True:
        try:
            return cur.execute(sql), retries
        except pymysql.err.MySQLError as e:
            if e.args[0] != 1235 or "schema not loaded yet, retry" not in e.args[1] \
                    or retries > 200:
                raise
            retries += 1
            time.sleep(0.01)


def first_statement(c):
    cur = c.cursor()
    try:
        cur.execute("UPDATE DELAYED dk_my SET hits = hits + 1000 WHERE id = 100")
        t.ok("the first statement on a table without key in its rule is staged or retried")
        first = 1000
    except pymysql.err.MySQLError as e:
        t.check(e.args[0] == 1235 and "schema not loaded yet, retry" in e.args[1] and
                "test.dk_my" in e.args[1],
                "the first statement on a table without key in its rule is staged or retried",
                e.args)
        first = 0
    rows, retries = send(cur, "UPDATE DELAYED dk_my SET hits = hits + 1 WHERE id = 100")
    t.eq("once the key is loaded the statement is staged", 1, rows)
    return first + 1


def client(table, wid, expect, lock, errors):
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    mine = {}
    try:
        for i in range(PER_CLIENT):
            if table == "dk_my":
                k = (wid + i) % 8 + 1
                if i % 7 == 3:
                    ids, sql = [1, 3, 5], "UPDATE DELAYED dk_my SET hits = hits + 2, " \
                        "misses = misses - 1 WHERE id IN (1, 3, 5)"
                    delta = (2, -1)
                elif i % 5 == 4:
                    ids, sql = [k], "UPDATE DELAYED dk_my SET hits = hits - 1 WHERE id = %d" % k
                    delta = (-1, 0)
                else:
                    ids, sql = [k], "UPDATE DELAYED dk_my SET hits = hits + 1 WHERE id = %d" % k
                    delta = (1, 0)
            else:
                key = [("a", 1), ("a", 2), ("b'q", 1)][(wid + i) % 3]
                ids, delta = [key], (3, 0)
                sql = "UPDATE DELAYED dk_mem SET n = n + 3 WHERE day = %d AND site = '%s'" % (
                    key[1], key[0].replace("'", "''"))
            rows, _ = send(cur, sql)
            if rows != len(ids):
                errors.append("rows %d for %s" % (rows, sql))
            for x in ids:
                a, b = mine.get(x, (0, 0))
                mine[x] = (a + delta[0], b + delta[1])
    except pymysql.err.MySQLError as e:
        errors.append(str(e))
    c.close()
    with lock:
        for x, (a, b) in mine.items():
            ea, eb = expect.get(x, (0, 0))
            expect[x] = (ea + a, eb + b)


def concurrent(d, table):
    expect, lock, errors = {}, threading.Lock(), []
    threads = [threading.Thread(target=client, args=(table, w, expect, lock, errors))
               for w in range(CLIENTS)]
    t.run_threads(threads)
    t.eq("%d clients x %d UPDATE DELAYED on %s: all acknowledged with their row counts"
         % (CLIENTS, PER_CLIENT, table), [], errors[:3])
    t.eq("%s's staging table drained" % table, ((0,),),
         t.wait_rows(d, "SELECT COUNT(*) FROM %s_delayed" % table, ((0,),)))
    cur = d.cursor()
    if table == "dk_my":
        sql = "SELECT id, hits, misses FROM dk_my WHERE id <= 8"
        want = {k: expect.get(k, (0, 0)) for k in range(1, 9)}
    else:
        sql = "SELECT site, day, n, 0 FROM dk_mem"
        want = {k: expect.get(k, (0, 0)) for k in [("a", 1), ("a", 2), ("b'q", 1)]}
    # The LOCK TABLES flush empties the staging table before it applies the snapshot: wait
    # for the apply too (up to 10 s), then compare.
    end = time.time() + 10
    while True:
        cur.execute(sql)
        got = {(r[0] if table == "dk_my" else (r[0], r[1])): (r[-2], r[-1])
               for r in cur.fetchall()}
        if got == want or time.time() > end:
            break
        time.sleep(0.1)
    t.eq("every %s counter equals the exact sum of the acknowledged increments" % table,
         want, got)


def deletes(d, c, first):
    cur = c.cursor()
    send(cur, "DELETE DELAYED FROM dk_my WHERE id = 101")
    got = t.wait_rows(d, "SELECT id, hits FROM dk_my WHERE id >= 100", ((100, first),))
    t.eq("DELETE DELAYED removed its row and the first increments were applied once",
         ((100, first),), got)


def innodb_without_key(d, c):
    """The transactional path with the key read from the schema by both sides."""
    cur = c.cursor()
    staged = 0
    for i in range(40):
        rows, _ = send(cur, "UPDATE DELAYED dk_inno SET n = n + %d WHERE b IN (1, 2) AND "
                       "a = 'x'" % (i + 1))
        staged += rows
    t.eq("UPDATE DELAYED with an IN list on a composite primary key staged 2 rows each", 80,
         staged)
    got = t.wait_rows(d, "SELECT b, n FROM dk_inno ORDER BY b", ((1, 820), (2, 820)))
    t.eq("an InnoDB table whose rule names no key gets the exact sums", ((1, 820), (2, 820)), got)


def admin_delayed():
    a = pymysql.connect(host=t.HOST, port=ADMIN_PORT, user="admin", password="adminpw")
    cur = a.cursor()
    cur.execute("SHOW DELAYED")
    names = [c[0] for c in cur.description]
    rows = {r[names.index("rule")]: dict(zip(names, r)) for r in cur.fetchall()}
    a.close()
    return rows


def flusher_checks(archive):
    text = PROXY.log_text()
    t.check("the staging table test.dk_stale_delayed exists without the column(s) id, n" in text,
            "a stale staging table: the log names its missing columns",
            [x for x in text.splitlines() if "dk_stale" in x][:3])
    t.check("delayed my: test.dk_my flushed from test.dk_my_delayed every 200 ms (not "
            "transactional: LOCK TABLES" in text, "the MyISAM table takes the LOCK TABLES path")
    t.eq("a failed staging check is logged once, not every round", 1,
         text.count("delayed stale: the staging table"))
    stale = admin_delayed().get("stale", {})
    t.check(int(stale.get("errors") or 0) >= 1,
            "SHOW DELAYED counts the staging table error on its rule's row", stale)
    if archive:
        t.check("dk_arch is ARCHIVE, which the flusher cannot update" in text,
                "an ARCHIVE table is refused by the flusher with its reason")
    else:
        t.log("the ARCHIVE engine is not loaded: its refusal is not checked")
    t.check("LOCK TABLES" not in [x for x in text.splitlines() if "failed" in x],
            "no LOCK TABLES statement failed")


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    archive = setup(d)  # an error here fails the test: no skip for a broken setup
    PROXY.start()
    try:
        c = t.connect(PORT, autocommit=True)
        first = first_statement(c)
        concurrent(d, "dk_my")
        concurrent(d, "dk_mem")
        deletes(d, c, first)
        innodb_without_key(d, c)
        c.close()
        time.sleep(0.5)
        flusher_checks(archive)
    finally:
        PROXY.stop()
    d.cursor().execute("DROP TABLE IF EXISTS " + TABLES)
    d.close()
    t.done()


if __name__ == "__main__":
    main()
