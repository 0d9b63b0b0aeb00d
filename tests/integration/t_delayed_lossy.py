#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The loss window of a non-transactional (MyISAM) delayed table, held open on purpose: a proxy
of its own, killed -9 while its flusher's rows exist only in the flush snapshot.

  * 8 clients stage 50 UPDATE DELAYED +1 each on their own row (flush_interval = 1h);
  * the test holds LOCK TABLES l_counters READ, so the flusher's UPDATE LOW_PRIORITY of the
    main table waits; FLUSH DELAYED through the proxy: the staging table empties while the
    main table still holds 0 everywhere (the rows are in the TEMPORARY snapshot only);
  * the proxy is killed -9 there, the lock released, the proxy restarted and FLUSH DELAYED
    sent again. The one chunk is all or nothing: every row holds exactly its acknowledged
    count, or every row holds 0 (the chunk was lost); never more than acknowledged. Which
    of the two this server did is logged (rules/README.md, "the loss window").
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

RULES = """
[delayed lossy]
table = test.l_counters
key = id
columns = n
flush_interval = 1h
flush_rows = 1000
"""
PROXY = t.Proxy("lossy_proxy", rules=RULES, own_conn=True)
PORT = PROXY.port
CLIENTS, PER_CLIENT = 8, 50


rows = t.rows  # (connection, sql[, args]): a tuple of row tuples


def setup(d):
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS l_counters, l_counters_delayed")
    cur.execute("CREATE TABLE l_counters (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0) "
                "ENGINE=MyISAM")
    cur.execute("INSERT INTO l_counters (id) VALUES " +
                ", ".join("(%d)" % i for i in range(1, CLIENTS + 1)))


def stage(acked):
    def client(w):
        c = t.connect(PORT, autocommit=True)
        for _ in range(PER_CLIENT):
            if c.cursor().execute("UPDATE DELAYED l_counters SET n = n + 1 WHERE id = %d"
                                  % (w + 1)) == 1:
                acked[w] += 1
        c.close()
    t.run_threads([threading.Thread(target=client, args=(w,)) for w in range(CLIENTS)])


def flush_in_background():
    """FLUSH DELAYED through the proxy on a thread of its own: it waits for the held lock
    and then dies with the proxy."""
    def run():
        try:
            c = t.connect(PORT, autocommit=True)
            c.cursor().execute("FLUSH DELAYED l_counters")
        except pymysql.err.MySQLError:
            pass
    th = threading.Thread(target=run, daemon=True)
    th.start()
    return th


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    setup(d)
    PROXY.start()
    holder = t.direct(autocommit=True)
    try:
        acked = [0] * CLIENTS
        stage(acked)
        t.eq("every statement acknowledged", [PER_CLIENT] * CLIENTS, acked)
        t.eq("the rows are staged", ((CLIENTS * PER_CLIENT,),),
             rows(d, "SELECT COUNT(*) FROM l_counters_delayed"))
        holder.cursor().execute("LOCK TABLES l_counters READ")
        flush_in_background()
        t.eq("under the held lock the flush empties the staging table",
             ((0,),), t.wait_rows(d, "SELECT COUNT(*) FROM l_counters_delayed", ((0,),)))
        t.eq("... while the main table is not yet updated: the rows are in the snapshot only",
             ((0,),), rows(d, "SELECT SUM(n) FROM l_counters"))
        PROXY.kill9()
        time.sleep(0.5)
        holder.cursor().execute("UNLOCK TABLES")
        PROXY.start()
        c = t.connect(PORT, autocommit=True)
        c.cursor().execute("FLUSH DELAYED l_counters")
        c.close()
        got = dict(rows(d, "SELECT id, n FROM l_counters"))
        want = {w + 1: acked[w] for w in range(CLIENTS)}
        # each key is a statement of its own (a multi-key UPDATE refused at
        # one row has written others): a key the server got is applied whole,
        # one whose statement was never sent is lost whole
        t.check(set(got) == set(want) and all(got[k] in (want[k], 0) for k in want),
                "after kill -9 and restart each key is applied whole or lost whole, never "
                "more than acknowledged", got)
        t.eq("the staging table is empty", ((0,),),
             rows(d, "SELECT COUNT(*) FROM l_counters_delayed"))
        t.log("kill -9 inside the loss window: %d of %d keys applied by the server, %d staged "
              "rows lost" % (sum(1 for k in want if got[k]), len(want),
                             sum(want[k] for k in want if not got[k])))
    finally:
        holder.close()
        PROXY.stop()
    t.done()


if __name__ == "__main__":
    main()
