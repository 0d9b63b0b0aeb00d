#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A table whose name holds a newline, a carriage return and a terminal escape cannot forge a
line in the proxy's log (base/log.c escapes the text of every line: rules/README.md and the
log's description).

A default delayed rule derives its rule when a DELAYED statement names the table; the table
has no primary key, so the flusher logs "table test.<name> has no primary key" with the name
as information_schema gives it. The log must hold that line once, with \\x0a, \\x0d and \\x1b
where the name has them, and no line may start with the text after the newline.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

FORGED = "1999-01-01T00:00:00.000Z error forged by a table name"
NAME = "esc_t\n" + FORGED + "\r\x1b[2K"
RULES = """
[delayed esc_default]
table = test.*
"""


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    q = "`%s`" % NAME
    d.cursor().execute("DROP TABLE IF EXISTS " + q)
    d.cursor().execute("CREATE TABLE %s (id INT NOT NULL, n INT NOT NULL DEFAULT 0)" % q)
    d.cursor().execute("INSERT INTO %s (id) VALUES (1)" % q)
    t.eq("the server keeps the newline in the name", ((NAME,),),
         t.rows(d, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = "
                   "'test' AND TABLE_NAME LIKE 'esc\\_t%%'"))
    with t.Proxy("log_escape", rules=RULES, own_conn=True) as proxy:
        c = proxy.connect(autocommit=True)
        for _ in range(3):
            try:
                c.cursor().execute("UPDATE DELAYED %s SET n = n + 1 WHERE id = 1" % q)
            except pymysql.err.MySQLError:
                pass  # refused once the derivation failed: the reason names the table
        c.close()
        m = proxy.wait_log(r"has no primary key", 10)
        t.check(m is not None, "the derivation's failure is logged")
        log = proxy.log_text()
        lines = [ln for ln in log.splitlines() if "esc_t" in ln]
        t.check(any("test.esc_t\\x0a" + FORGED + "\\x0d\\x1b[2K has no primary key" in ln
                    for ln in lines), "the name is in the line, escaped", lines)
        t.check(not any(ln.startswith(FORGED[:24]) for ln in log.splitlines()),
                "no line starts with the text after the newline")
        t.check("\r" not in log and "\x1b" not in log, "no carriage return or escape reaches "
                "the log")
        t.eq("the proxy exits 0", 0, proxy.stop())
    d.cursor().execute("DROP TABLE IF EXISTS " + q)
    t.done()


if __name__ == "__main__":
    main()
