#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Names the proxy writes into its own SQL cannot carry SQL: a user with rights on one schema
only names a column so that an unquoted copy of it would end the staging table's column list
and go on with `SELECT ... FROM secret.s`, then sends UPDATE DELAYED through a proxy whose
default rule covers that schema. The real mariadbd, a proxy of its own:

  1. probe.w3 has the columns id (key), n, `q'x` and `c`` INT) SELECT 1 id,v FROM secret.s #`;
     the user cannot SELECT secret.s (1142);
  2. the first UPDATE DELAYED w3 makes the flusher derive the rule and create w3_delayed on
     the proxy's own connection (proxy_user, which may read secret.s); the secret never
     shows in probe.w3_delayed nor in any probe table, and w3_delayed has the odd columns
     as columns;
  3. staged mode: UPDATE DELAYED adding to n, `q'x` and the odd column (written with its
     backtick doubled), FLUSH DELAYED: each column got its own delta;
  4. memory mode: probe.m3, key `k``'q` read from the schema cache (the rule names none),
     counter `it's`; two UPDATE DELAYED and FLUSH DELAYED add up;
  5. a second proxy whose proxy_user has only the privileges doc/proxy-account.md
     gives for DELAYED (SELECT, INSERT, UPDATE, DELETE, CREATE, LOCK TABLES, CREATE
     TEMPORARY TABLES on the schema): a default rule's derived tables (InnoDB, and MyISAM
     through the LOCK TABLES path) and a memory-mode table are flushed with those.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN, MR_TMP (the proxies take free ports); root over the
test mariadbd's unix socket ($MR_TMP/main/mariadbd.sock).
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

q = t.root_query  # as root over the shared mariadbd's socket
SECRET = 918273645
ODD = "c` INT) SELECT 1 id,v FROM secret.s #"
ODD_Q = "`" + ODD.replace("`", "``") + "`"
RULES = """
[delayed probe_default]
table = probe.*
flush_interval = 1h

[delayed probe_mem]
table = probe.m3
columns = it's
mode = memory
flush_interval = 1h
"""
MIN_RULES = """
[delayed lean_default]
table = lean.*
flush_interval = 1h

[delayed lean_mem]
table = lean.mem
columns = n
mode = memory
flush_interval = 1h
"""
# What doc/proxy-account.md grants for DELAYED on a schema.
MIN_GRANT = ("GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, LOCK TABLES, CREATE TEMPORARY TABLES "
             "ON lean.* TO 'mr_lean'@'%'")


def run(c, sql):
    """The affected rows, or the (code, message) of an error."""
    try:
        with c.cursor() as cur:
            return cur.execute(sql)
    except pymysql.err.MySQLError as e:
        return (e.args[0], e.args[1] if len(e.args) > 1 else "")


def setup():
    c = t.root()
    cur = c.cursor()
    for s in ("probe", "secret", "lean"):
        cur.execute("DROP DATABASE IF EXISTS " + s)
        cur.execute("CREATE DATABASE " + s)
    cur.execute("CREATE TABLE secret.s (id INT PRIMARY KEY, v INT)")
    cur.execute("INSERT INTO secret.s VALUES (1, %d)" % SECRET)
    for u in ("probe_u", "mr_lean"):
        cur.execute("DROP USER IF EXISTS '%s'@'%%'" % u)
    cur.execute("CREATE USER 'probe_u'@'%' IDENTIFIED BY 'probepw'")
    cur.execute("GRANT ALL ON probe.* TO 'probe_u'@'%'")
    cur.execute("CREATE USER 'mr_lean'@'%' IDENTIFIED BY 'leanpw'")
    cur.execute(MIN_GRANT)
    cur.execute("GRANT ALL ON lean.* TO 'probe_u'@'%'")
    c.close()


def user(port, db):
    return t.connect(port, user="probe_u", password="probepw", database=db, autocommit=True)


def wait_table(schema, name, secs=15):
    for _ in range(secs * 20):
        if q("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND "
             "TABLE_NAME = %s", (schema, name))[0][0]:
            time.sleep(0.3)  # the derived rule is published right after
            return True
        time.sleep(0.05)
    return False


def retry(c, sql, want, secs=10):
    """sql until it answers want (a memory rule waits for the schema cache's key)."""
    r = None
    for _ in range(secs * 10):
        r = run(c, sql)
        if r == want:
            return r
        time.sleep(0.1)
    return r


def secret_in_schema(schema):
    """The probe tables and columns whose values hold the secret."""
    found = []
    for (table,) in q("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
                      (schema,)):
        for row in q("SELECT * FROM `%s`.`%s`" % (schema, table.replace("`", "``"))):
            if any(str(v) == str(SECRET) for v in row):
                found.append(table)
    return found


def test_attack(c):
    t.eq("the user cannot read secret.s", 1142, run(c, "SELECT v FROM secret.s")[0])
    r = run(c, "CREATE TABLE probe.w3 (id INT PRIMARY KEY, n INT NOT NULL DEFAULT 0, "
               "`q'x` INT NOT NULL DEFAULT 0, %s INT NOT NULL DEFAULT 0)" % ODD_Q)
    t.eq("the attack table is made", 0, r)
    t.eq("one row", 1, run(c, "INSERT INTO probe.w3 (id) VALUES (1)"))
    t.eq("first UPDATE DELAYED (the rule is pending): applied directly", 1,
         run(c, "UPDATE DELAYED w3 SET n = n + 1 WHERE id = 1"))
    t.check(wait_table("probe", "w3_delayed"), "the flusher made probe.w3_delayed")
    t.eq("the secret is in no probe table", [], secret_in_schema("probe"))
    cols = [r[0] for r in q("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE "
                            "TABLE_SCHEMA = 'probe' AND TABLE_NAME = 'w3_delayed'")]
    t.check(ODD in cols and "q'x" in cols and "v" not in cols,
            "w3_delayed has the odd names as columns (and no v)", cols)


def test_staged(c):
    sql = ("UPDATE DELAYED w3 SET n = n + 2, `q'x` = `q'x` + 3, %s = %s + 4 WHERE id = 1"
           % (ODD_Q, ODD_Q))
    t.eq("staged UPDATE DELAYED on the odd columns: OK", 1, run(c, sql))
    t.eq("staged: one row in w3_delayed", 1, q("SELECT COUNT(*) FROM probe.w3_delayed")[0][0])
    t.eq("FLUSH DELAYED probe.w3: OK", 0, run(c, "FLUSH DELAYED probe.w3"))
    t.eq("each column got its delta", ((1, 3, 3, 4),),
         q("SELECT id, n, `q'x`, %s FROM probe.w3" % ODD_Q))
    t.eq("after the flush: still no secret in probe", [], secret_in_schema("probe"))


def test_memory(c):
    run(c, "CREATE TABLE probe.m3 (`k``'q` INT PRIMARY KEY, `it's` INT NOT NULL DEFAULT 0, "
           "%s INT NOT NULL DEFAULT 0)" % ODD_Q)
    run(c, "INSERT INTO probe.m3 (`k``'q`) VALUES (1), (2)")
    sql = "UPDATE DELAYED m3 SET `it's` = `it's` + 5 WHERE `k``'q` = 1"
    t.eq("memory: UPDATE DELAYED keyed on `k``'q` (key from the schema cache)", 1,
         retry(c, sql, 1))
    t.eq("memory: a second one", 1, run(c, sql))
    t.eq("memory: nothing applied before the flush", ((1, 0), (2, 0)),
         q("SELECT `k``'q`, `it's` FROM probe.m3 ORDER BY 1"))
    t.eq("FLUSH DELAYED: OK", 0, run(c, "FLUSH DELAYED"))
    t.eq("memory: the sum is applied to its key only", ((1, 10, 0), (2, 0, 0)),
         q("SELECT `k``'q`, `it's`, %s FROM probe.m3 ORDER BY 1" % ODD_Q))
    t.eq("memory: no secret in probe", [], secret_in_schema("probe"))


def test_least_privilege():
    p = t.Proxy("ident_lean_proxy", rules=MIN_RULES,
                options=[("proxy_user", "mr_lean"), ("proxy_password", "leanpw")]).start()
    try:
        c = user(p.port, "lean")
        run(c, "CREATE TABLE hits (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0)")
        run(c, "CREATE TABLE mem (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0)")
        run(c, "CREATE TABLE mya (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0) ENGINE=MyISAM")
        run(c, "INSERT INTO hits VALUES (1, 0)")
        run(c, "INSERT INTO mya VALUES (1, 0)")
        run(c, "INSERT INTO mem VALUES (1, 0)")
        t.eq("lean: first UPDATE DELAYED hits (pending)", 1,
             run(c, "UPDATE DELAYED hits SET n = n + 1 WHERE id = 1"))
        t.check(wait_table("lean", "hits_delayed"),
                "lean: proxy_user with the documented grants made lean.hits_delayed")
        t.eq("lean: staged", 1, run(c, "UPDATE DELAYED hits SET n = n + 6 WHERE id = 1"))
        t.eq("lean: first UPDATE DELAYED mya (pending)", 1,
             run(c, "UPDATE DELAYED mya SET n = n + 1 WHERE id = 1"))
        t.check(wait_table("lean", "mya_delayed"), "lean: made lean.mya_delayed (MyISAM)")
        t.eq("lean: staged (MyISAM)", 1, run(c, "UPDATE DELAYED mya SET n = n + 8 WHERE id = 1"))
        t.eq("lean: memory", 1, retry(c, "UPDATE DELAYED mem SET n = n + 7 WHERE id = 1", 1))
        t.eq("lean: FLUSH DELAYED: OK", 0, run(c, "FLUSH DELAYED"))
        t.eq("lean: staged delta flushed", 7, q("SELECT n FROM lean.hits")[0][0])
        t.eq("lean: memory delta flushed", 7, q("SELECT n FROM lean.mem")[0][0])
        t.eq("lean: MyISAM delta flushed (LOCK TABLES path)", 9, q("SELECT n FROM lean.mya")[0][0])
        t.eq("lean: staging table empty", 0, q("SELECT COUNT(*) FROM lean.hits_delayed")[0][0])
        c.close()
    finally:
        p.stop()


def main():
    setup()
    p = t.Proxy("ident_proxy", rules=RULES, own_conn=True).start()
    try:
        c = user(p.port, "probe")
        test_attack(c)
        test_staged(c)
        test_memory(c)
        c.close()
    finally:
        p.stop()
    test_least_privilege()
    t.done()


if __name__ == "__main__":
    main()
