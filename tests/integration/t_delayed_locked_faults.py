#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The LOCK TABLES flush path of a MyISAM delayed table (delayed/flush/flush_locked.c) with its
steps made to fail on a connection that stays up: a fault relay between the proxy and
mariadbd rewrites one statement of the flusher so that the server refuses it (another table
name, a syntax error), and the deltas must still be applied exactly once.

  * the DELETE from staging and then the emptying of the snapshot refused: the snapshot's
    rows are still staged, so it must never be applied (before the fix the next round
    applied it and the round after took the same rows again: twice the acknowledged sum);
  * UNLOCK TABLES refused: staging inserts must not wait for the next round (before the
    fix the staging table stayed write-locked and an UPDATE DELAYED hung), and the
    snapshot is applied once;
  * the update of the main table refused before writing (the snapshot is kept for a
    retry), then the rule reloaded away: the old rule applies its snapshot (before the fix
    its rows stayed in the TEMPORARY table, never applied, and went with the connection);
  * a stale snapshot whose emptying is refused again while a reload renames its rule: the
    new rule on the same staging table takes it over and empties it first.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
from faultrelay import Fault, FaultRelay  # noqa: E402

RULE = """
[delayed locked_faults]
table = test.lf_counters
key = id
columns = n
flush_interval = 1h
"""
OTHER = """
[delayed locked_other]
table = test.lf_other
key = id
columns = n
flush_interval = 1h
"""
KEYS, PER_KEY = 5, 4
STAGING = b"`test`.`lf_counters_delayed`"
SNAPSHOT = b"`test`.`lf_counters_delayed_mrsnap`"


def setup(d):
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS lf_counters, lf_counters_delayed, lf_other, "
                "lf_other_delayed")
    for name in ("lf_counters", "lf_other"):
        cur.execute("CREATE TABLE %s (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0) "
                    "ENGINE=MyISAM" % name)
        cur.execute("INSERT INTO %s (id) VALUES %s"
                    % (name, ", ".join("(%d)" % i for i in range(1, KEYS + 1))))


def stage(proxy):
    c = proxy.connect(autocommit=True, read_timeout=10)
    try:
        acked = 0
        for k in range(1, KEYS + 1):
            for _ in range(PER_KEY):
                acked += c.cursor().execute(
                    "UPDATE DELAYED lf_counters SET n = n + 1 WHERE id = %d" % k)
        return acked
    finally:
        c.close()


def flush(proxy):
    """FLUSH DELAYED lf_counters through the proxy: None when OK, else the error code."""
    return t.flush_once(proxy, "lf_counters")


def sums(d):
    return t.rows(d, "SELECT COALESCE(SUM(n), 0), (SELECT COUNT(*) FROM lf_counters_delayed) "
                     "FROM lf_counters")[0]


def reset(d):
    d.cursor().execute("UPDATE lf_counters SET n = 0")


def replace(relay, pattern, replacement):
    return relay.arm(Fault("c2s", action="replace", pattern=pattern, replacement=replacement))


def staging_and_snapshot_delete_refused(proxy, relay, d):
    acked = stage(proxy)
    f1 = replace(relay, b"DELETE FROM " + STAGING + b" WHERE",
                 b"DELETE FROM `test`.`lf_counters_delayeX` WHERE")
    f2 = replace(relay, b"DELETE FROM " + SNAPSHOT,
                 b"DELETE FROM `test`.`lf_counters_delayed_mrsnaX`")
    t.check(flush(proxy) is not None, "FLUSH DELAYED answers ERR when the DELETE from staging "
            "fails")
    t.check(f1.fired.is_set() and f2.fired.is_set(),
            "the DELETE from staging and the emptying of the snapshot were both refused")
    t.eq("nothing applied yet, every row still staged", (0, acked), sums(d))
    t.check(proxy.wait_log(r"could not be emptied; it is never applied", 5),
            "the stale snapshot is logged")
    for i in range(3):
        t.eq("FLUSH DELAYED %d after the failure is OK" % (i + 1), None, flush(proxy))
    t.eq("the staged deltas applied exactly once, staging empty", (acked, 0), sums(d))


def unlock_refused(proxy, relay, d):
    reset(d)
    acked = stage(proxy)
    f = replace(relay, b"UNLOCK TABLES", b"UNLOCK TABLEX")
    flush(proxy)
    t.check(f.fired.is_set(), "UNLOCK TABLES was refused once")
    c = proxy.connect(autocommit=True, read_timeout=5)
    try:
        t0 = time.time()
        acked += c.cursor().execute("UPDATE DELAYED lf_counters SET n = n + 1 WHERE id = 1")
        t.check(time.time() - t0 < 3, "an UPDATE DELAYED right after is answered at once "
                "(staging is not left locked)", time.time() - t0)
    except pymysql.err.MySQLError as e:
        t.not_ok("an UPDATE DELAYED right after the refused UNLOCK TABLES is answered", e)
    finally:
        c.close()
    for i in range(2):
        t.eq("FLUSH DELAYED %d after the refused UNLOCK is OK" % (i + 1), None, flush(proxy))
    t.eq("every acknowledged delta applied exactly once, staging empty", (acked, 0), sums(d))


def reloaded_away(proxy, relay, d):
    reset(d)
    acked = stage(proxy)
    f = replace(relay, b"UPDATE LOW_PRIORITY `test`.`lf_counters`",
                b"UPDATE LOW_PRIORITY `test`.`lf_counterX`")
    t.check(flush(proxy) is not None, "FLUSH DELAYED answers ERR when the update is refused")
    t.check(f.fired.is_set(), "the update of the main table was refused")
    t.eq("the rows left staging and wait in the snapshot", (0, 0), sums(d))
    proxy.reload_rules(OTHER)
    end, got = time.time() + 10, sums(d)
    while got != (acked, 0) and time.time() < end:
        time.sleep(0.1)
        got = sums(d)
    t.eq("a reload without the rule applies what its snapshot held, once", (acked, 0), got)


def taken_over(proxy, relay, d):
    """A rule renamed by a reload while its snapshot is stale, and the stale snapshot again
    refused when the old rule settles it: the new rule on the same staging table takes the
    snapshot over (its name too) and empties it before its first chunk."""
    proxy.reload_rules(RULE + OTHER)
    end = time.time() + 5
    while flush(proxy) is not None and time.time() < end:
        time.sleep(0.1)  # the rule is back once FLUSH DELAYED lf_counters is OK
    reset(d)
    acked = stage(proxy)
    replace(relay, b"DELETE FROM " + STAGING + b" WHERE",
            b"DELETE FROM `test`.`lf_counters_delayeX` WHERE")
    replace(relay, b"DELETE FROM " + SNAPSHOT, b"DELETE FROM `test`.`lf_counters_delayed_mrsnaX`")
    flush(proxy)
    f = replace(relay, b"DELETE FROM " + SNAPSHOT,
                b"DELETE FROM `test`.`lf_counters_delayed_mrsnaX`")
    proxy.reload_rules(RULE.replace("[delayed locked_faults]", "[delayed locked_renamed]") + OTHER)
    t.check(f.fired.wait(5), "the old rule's settle met a refused DELETE of the snapshot")
    for i in range(2):
        t.eq("FLUSH DELAYED %d under the renamed rule is OK" % (i + 1), None, flush(proxy))
    t.eq("the renamed rule took the stale snapshot over: every delta applied once",
         (acked, 0), sums(d))


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    setup(d)
    relay = FaultRelay(t.DIRECT_PORT).start()
    proxy = t.Proxy("locked_faults", backend_port=relay.port, rules=RULE + OTHER,
                    own_conn=True)
    proxy.start()
    try:
        staging_and_snapshot_delete_refused(proxy, relay, d)
        unlock_refused(proxy, relay, d)
        reloaded_away(proxy, relay, d)
        taken_over(proxy, relay, d)
    finally:
        relay.disarm()
        proxy.stop(expect=0)
        relay.stop()
    t.done()


if __name__ == "__main__":
    main()
