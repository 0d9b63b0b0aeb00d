#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""UPDATE/DELETE DELAYED on a table no delayed rule covers, against the real mariadbd.

Three proxies of the test's own: no rules at all, a rule set without a delayed rule
(one block rule), and a delayed rule for another table.
  * `UPDATE DELAYED` and `DELETE DELAYED` (plain, qualified, inside a multi-statement
    text) get the proxy's ERR 1235 (42000) naming the table, saying no delayed rule
    covers it and giving the default rule to paste (`[delayed test_default]` /
    `table = test.*`), not the server's syntax error;
  * the server never sees them (general log) and the table is unchanged;
  * an UPDATE without DELAYED still reaches the server.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the three proxies take free ports.
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

SETS = [("no rules", None),
        ("no delayed rule", "[block nr_block]\npattern = SELECT 12345\nmessage = no\n"),
        ("a delayed rule for another table",
         "[delayed nr_other]\ntable = test.nr_other\nkey = id\ncolumns = n\n")]
STATEMENTS = [("UPDATE DELAYED nr_c SET n = n + 1 WHERE id = 1 /* nr_mark */", "test.nr_c"),
              ("DELETE DELAYED FROM test.nr_c WHERE id = 1 /* nr_mark */", "test.nr_c"),
              ("update delayed low_priority nr_c set n = n + 5 where id in (1, 2) /* nr_mark */",
               "test.nr_c")]


def setup():
    d = t.direct(autocommit=True)
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS nr_c")
    cur.execute("CREATE TABLE nr_c (id INT PRIMARY KEY, n INT NOT NULL)")
    cur.execute("INSERT INTO nr_c VALUES (1, 10), (2, 20)")
    return d


def start(i, rules):
    return t.Proxy("norule_%d" % i, rules=rules).start()


def refused(port, what):
    c = t.connect(port, autocommit=True, client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS)
    cur = c.cursor()
    texts = STATEMENTS + [("SET @nr = 1; UPDATE DELAYED nr_c SET n = n + 1 WHERE id = 2 "
                           "/* nr_mark */", "test.nr_c")]
    for sql, table in texts:
        try:
            cur.execute(sql)
            while cur.nextset():
                pass
            t.not_ok("%s: %s is refused" % (what, sql[:40]), "it succeeded")
        except pymysql.err.MySQLError as e:
            code, msg = e.args[0], e.args[1]
            t.check(code == 1235 and ("no delayed rule covers table %s," % table) in msg and
                    "[delayed test_default] table = test.*" in msg,
                    "%s: %s gets the proxy's ERR 1235 with the rule to paste" % (what, sql[:40]),
                    e.args)
    cur.execute("UPDATE nr_c SET n = n + 0 WHERE id = 1 /* nr_plain */")
    t.ok("%s: an UPDATE without DELAYED is relayed" % what)
    c.close()


def main():
    if t.DIRECT_ONLY:
        print("ok - skipped: needs proxies of its own")
        sys.exit(77)
    d = setup()
    cur = d.cursor()
    procs = []
    try:
        for i, (_, rules) in enumerate(SETS):
            procs.append(start(i, rules))  # those started are stopped below if one fails
        cur.execute("SET GLOBAL log_output = 'TABLE'")
        cur.execute("TRUNCATE mysql.general_log")
        cur.execute("SET GLOBAL general_log = 1")
        for i, (what, _) in enumerate(SETS):
            refused(procs[i].port, what)
        time.sleep(0.3)
        seen = t.rows(d, "SELECT COUNT(*) FROM mysql.general_log WHERE argument LIKE "
                      "'%nr\\_mark%' AND argument NOT LIKE '%general_log%'")
        t.eq("the server never saw a DELAYED statement", 0, seen[0][0])
        plain = t.rows(d, "SELECT COUNT(*) FROM mysql.general_log WHERE argument LIKE "
                       "'%nr\\_plain%' AND argument NOT LIKE '%general_log%'")
        t.eq("it saw each plain UPDATE", len(SETS), plain[0][0])
    finally:
        cur.execute("SET GLOBAL general_log = 0")
        cur.execute("SET GLOBAL log_output = 'FILE'")
        for p in procs:
            p.stop()
    t.eq("the table is unchanged", ((1, 10), (2, 20)), t.rows(d, "SELECT id, n FROM nr_c ORDER BY id"))
    t.done()


if __name__ == "__main__":
    main()
