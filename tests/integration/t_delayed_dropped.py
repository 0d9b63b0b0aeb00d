#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tables a delayed rule needs, dropped outside the proxy (rules/README.md, "The flush").

  * the staging table of an InnoDB rule dropped: the first UPDATE DELAYED after it gets the
    server's ERR 1146 (nothing was staged), the flusher creates the table again at once and
    logs it, the statements after it are taken and applied exactly; dropped again with no
    statement on it, the next flush round creates it again;
  * the main table dropped with rows staged: they cannot be applied, so they go to the
    dead-letter table (error 1146, the staged row count per key), logged, and the staging
    table is emptied rather than holding them for good;
  * a memory-mode table dropped with keys held: the same, one dead-letter row per key.
Before the fix the staging table was never made again (every statement ERR 1146 for good)
and the staged rows or held keys of a dropped table were retried every round, for good.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

RULES = """
[delayed dropped_staging]
table = test.dr_counters
key = id
columns = n
flush_interval = 1h

[delayed dropped_main]
table = test.dr_gone
key = id
columns = n
flush_interval = 1h

[delayed dropped_memory]
table = test.dr_mem
key = id
columns = n
mode = memory
flush_interval = 1h
"""
TABLES = ("dr_counters", "dr_gone", "dr_mem")


def setup(d):
    cur = d.cursor()
    for name in TABLES:
        cur.execute("DROP TABLE IF EXISTS %s, %s_delayed, %s_delayed_rejected"
                    % (name, name, name))
        cur.execute("CREATE TABLE %s (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0) "
                    "ENGINE=InnoDB" % name)
        cur.execute("INSERT INTO %s (id) VALUES (1), (2), (3)" % name)


def bump(c, table, key, times=1):
    acked = 0
    for _ in range(times):
        acked += c.cursor().execute("UPDATE DELAYED %s SET n = n + 1 WHERE id = %d"
                                    % (table, key))
    return acked


def total(d, table):
    return int(t.rows(d, "SELECT COALESCE(SUM(n), 0) FROM " + table)[0][0])


def staging_dropped(proxy, d):
    c = proxy.connect(autocommit=True)
    acked = bump(c, "dr_counters", 1, 5)
    t.eq("FLUSH DELAYED before the drop is OK", None, t.flush_once(proxy, "dr_counters"))
    d.cursor().execute("DROP TABLE dr_counters_delayed")
    try:
        bump(c, "dr_counters", 1)
        t.not_ok("the statement on the dropped staging table gets an ERR")
    except pymysql.err.MySQLError as e:
        t.eq("the statement on the dropped staging table gets the server's ERR", 1146, e.args[0])
    end, taken = time.time() + 5, False
    while not taken and time.time() < end:
        try:
            acked += bump(c, "dr_counters", 1)
            taken = True
        except pymysql.err.MySQLError:
            time.sleep(0.1)
    t.check(taken, "within 5 s the staging table exists again and statements are taken")
    t.check(proxy.wait_log(r"staging table test\.dr_counters_delayed was dropped outside the "
                           r"proxy; it is created again", 5), "the re-creation is logged")
    acked += bump(c, "dr_counters", 2, 3)
    t.eq("FLUSH DELAYED after the re-creation is OK", None, t.flush_once(proxy, "dr_counters"))
    t.eq("every acknowledged increment applied once", acked, total(d, "dr_counters"))
    # dropped again with no statement on it: the flush round makes it again
    d.cursor().execute("DROP TABLE dr_counters_delayed")
    t.flush_once(proxy, "dr_counters")
    t.eq("the next FLUSH DELAYED is OK", None, t.flush_once(proxy, "dr_counters"))
    acked += bump(c, "dr_counters", 3, 2)
    t.eq("FLUSH DELAYED OK", None, t.flush_once(proxy, "dr_counters"))
    t.eq("... and exact", acked, total(d, "dr_counters"))
    c.close()


def dead_letters(d, table):
    """The rows of table's dead-letter table; () while it does not exist."""
    like = (table + "_delayed_rejected").replace("_", "\\_")
    if not t.rows(d, "SHOW TABLES LIKE '%s'" % like):
        return ()
    return t.rows(d, "SELECT key_values, staged_rows, error_code FROM %s_delayed_rejected "
                     "ORDER BY key_values" % table)


def main_dropped(proxy, d):
    c = proxy.connect(autocommit=True)
    bump(c, "dr_gone", 1, 3)
    bump(c, "dr_gone", 2, 2)
    c.close()
    d.cursor().execute("DROP TABLE dr_gone")
    end, got = time.time() + 10, ()
    while time.time() < end:
        t.flush_once(proxy, "dr_gone")
        got = dead_letters(d, "dr_gone")
        if len(got) == 2:
            break
        time.sleep(0.2)
    t.eq("the staged rows of the dropped table are in its dead-letter table, per key",
         (("(`id`) = ('1')", 3, 1146), ("(`id`) = ('2')", 2, 1146)), got)
    t.eq("its staging table is empty", ((0,),), t.rows(d, "SELECT COUNT(*) FROM dr_gone_delayed"))
    t.check(proxy.wait_log(r"table test\.dr_gone does not exist, so its 5 staged row\(s\) went "
                           r"to test\.dr_gone_delayed_rejected", 5), "the move is logged")


def memory_dropped(proxy, d):
    c = proxy.connect(autocommit=True)
    bump(c, "dr_mem", 1, 4)
    bump(c, "dr_mem", 3, 1)
    c.close()
    d.cursor().execute("DROP TABLE dr_mem")
    t.flush_once(proxy, "dr_mem")
    got = dead_letters(d, "dr_mem")
    t.eq("the held keys of the dropped memory table are in its dead-letter table",
         (("(`id`) = ('1')", 1, 1146), ("(`id`) = ('3')", 1, 1146)), got)
    t.eq("and no longer held: the next FLUSH DELAYED is OK", None, t.flush_once(proxy, "dr_mem"))


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    setup(d)
    proxy = t.Proxy("delayed_dropped", rules=RULES, own_conn=True)
    proxy.start()
    try:
        staging_dropped(proxy, d)
        main_dropped(proxy, d)
        memory_dropped(proxy, d)
    finally:
        proxy.stop(expect=0)
    for name in TABLES:
        d.cursor().execute("DROP TABLE IF EXISTS %s, %s_delayed, %s_delayed_rejected"
                           % (name, name, name))
    t.done()


if __name__ == "__main__":
    main()
