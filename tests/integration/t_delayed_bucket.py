#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""UPDATE DELAYED with a day/hour bucket column (bucket_column, bucket), end to end: a proxy
of its own, the real mariadbd.

The statements name only page_id; the proxy adds the UTC hour (or day) of the time the
statement was staged (staged mode, by the server's clock) or acknowledged (memory mode, by
the proxy's clock), and missing = insert creates each bucket's row.

  * staged InnoDB (bucket = hour), staged MyISAM (bucket = day, the LOCK TABLES path) and
    memory mode (bucket = hour): 16 clients add to 4 pages, COM_QUERY and prepared; after
    the flush each page's row for the current bucket holds the exact sum, and the row of an
    older bucket of the same page is untouched;
  * a WHERE that names the bucket column is refused.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import datetime
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
import rawproto_lib as rp  # noqa: E402

CLIENTS = 16
ROUNDS = 50
PAGES = 4
RULES_DIR = os.path.join(t.TMP, "delayed_bucket_rules")
PROXY = t.Proxy("delayed_bucket_proxy", rules_dir=RULES_DIR, own_conn=True)
PORT = PROXY.port
# table: (engine, bucket column, its type, bucket, mode, old bucket value)
TABLES = {
    "b_hourly": ("InnoDB", "hr", "DATETIME", "hour", "staged", datetime.datetime(2020, 1, 1, 5)),
    "b_daily": ("MyISAM", "day", "DATE", "day", "staged", datetime.date(2020, 1, 1)),
    "b_mem": ("InnoDB", "hr", "DATETIME", "hour", "memory", datetime.datetime(2020, 1, 1, 5)),
}
RULE = """
[delayed %(t)s]
table = test.%(t)s
key = page_id
columns = views
bucket_column = %(col)s
bucket = %(bucket)s
mode = %(mode)s
missing = insert
flush_interval = %(interval)s
"""


def rules_text():
    return "".join(RULE % {"t": name, "col": v[1], "bucket": v[3], "mode": v[4],
                           "interval": "1h" if v[4] == "memory" else "100ms"}
                   for name, v in TABLES.items())


def utc_bucket(bucket):
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    return now.date() if bucket == "day" else now.replace(minute=0, second=0, microsecond=0)


def setup(d):
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS " + ", ".join(
        n for name in TABLES for n in (name, name + "_delayed")))
    for name, (engine, col, typ, _, _, old) in TABLES.items():
        cur.execute("CREATE TABLE %s (page_id INT NOT NULL, %s %s NOT NULL, views BIGINT NOT "
                    "NULL DEFAULT 0, PRIMARY KEY (page_id, %s)) ENGINE=%s"
                    % (name, col, typ, col, engine))
        cur.execute("INSERT INTO " + name + " VALUES (1, %s, 100)", (old,))


rows = t.rows  # (connection, sql[, args]): a tuple of row tuples


def client(table, w, out):
    prepared = w % 4 == 0
    c = rp.Conn(PORT) if prepared else t.connect(PORT, autocommit=True)
    st = c.prepare("UPDATE DELAYED %s SET views = views + ? WHERE page_id = ?" % table) \
        if prepared else None
    mine, bad = {}, 0
    for i in range(ROUNDS):
        page, delta = 1 + (w + i) % PAGES, 1 + (w * i) % 3
        if prepared:
            r = c.execute(st.stmt_id, [(rp.TYPE_LONGLONG, delta), (rp.TYPE_LONGLONG, page)])
            bad += not (r.kind == "ok" and r.ok[0] == 1)
        else:
            bad += c.cursor().execute("UPDATE DELAYED %s SET views = views + %d WHERE "
                                      "page_id = %d" % (table, delta, page)) != 1
        mine[page] = mine.get(page, 0) + delta
    c.close()
    out[w] = (mine, bad)


def run(d, table):
    engine, col, _, bucket, mode, old = TABLES[table]
    before = utc_bucket(bucket)
    out = {}
    threads = [threading.Thread(target=client, args=(table, w, out)) for w in range(CLIENTS)]
    t.run_threads(threads)
    after = utc_bucket(bucket)
    t.eq("%s: every OK reported one row" % table, 0, sum(b for _, b in out.values()))
    c = t.connect(PORT, autocommit=True)
    c.cursor().execute("FLUSH DELAYED %s" % table)
    c.close()
    if mode == "staged":
        t.eq("%s: staging table drained" % table, ((0,),),
             rows(d, "SELECT COUNT(*) FROM %s_delayed" % table))
    want = {p: sum(m.get(p, 0) for m, _ in out.values()) for p in range(1, PAGES + 1)}
    got = rows(d, "SELECT page_id, %s, views FROM %s WHERE %s <> %%s ORDER BY page_id, %s"
               % (col, table, col, col), (old,))
    buckets = {r[1] for r in got}
    t.check(buckets and buckets <= {before, after},
            "%s (%s, %s): the new rows are in the current UTC %s" % (table, mode, engine, bucket),
            (buckets, before, after))
    sums = {}
    for page, _, views in got:
        sums[page] = sums.get(page, 0) + views
    t.eq("%s: each page's row for the current %s holds the exact sum" % (table, bucket), want,
         sums)
    t.eq("%s: the older bucket's row is untouched" % table, ((1, 100),),
         rows(d, "SELECT page_id, views FROM " + table + " WHERE " + col + " = %s", (old,)))
    t.log("%s: %d clients x %d into %s" % (table, CLIENTS, ROUNDS, sorted(map(str, buckets))))


def refused():
    c = t.connect(PORT, autocommit=True)
    try:
        c.cursor().execute("UPDATE DELAYED b_hourly SET views = views + 1 WHERE page_id = 1 AND "
                           "hr = '2020-01-01 05:00:00'")
        t.not_ok("a WHERE naming the bucket column is refused", "accepted")
    except pymysql.err.MySQLError as e:
        t.check(e.args[0] == 1235 and e.args[1].startswith(
            "UPDATE DELAYED on test.b_hourly: hr is not a key column of the rule"),
            "a WHERE naming the bucket column is refused", e.args)
    c.close()


def main():
    t.needs_own_proxy()
    os.makedirs(RULES_DIR, exist_ok=True)
    with open(os.path.join(RULES_DIR, "10-delayed-bucket.rules"), "w") as f:
        f.write(rules_text())
    d = t.direct(autocommit=True)
    setup(d)
    PROXY.start()
    try:
        want = ((2,),)
        sql = ("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'test' AND "
               "TABLE_NAME IN ('b_hourly_delayed', 'b_daily_delayed')")
        end = time.time() + 20
        while time.time() < end and rows(d, sql) != want:
            time.sleep(0.1)
        t.eq("staging tables there at start", want, rows(d, sql))
        refused()
        for table in TABLES:
            run(d, table)
    finally:
        PROXY.stop()
    t.done()


if __name__ == "__main__":
    main()
