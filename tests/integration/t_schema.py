#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The schema cache end to end: paginate rules without `key` on a proxy of its own
(with proxy_user, so the cache runs) in front of the real mariadbd.

  * the first deep page of a table the cache has not seen passes untouched (the
    lookup never waits), and a later one is rewritten on the table's primary key;
  * a table without a primary key is joined on its unique NOT NULL key; a table
    with neither (only a nullable unique key) is never rewritten, and the log says why;
  * an ALTER through the proxy that moves the primary key to another column and
    drops the old one: no page fails, and the pages after it join on the new key;
  * an ALTER sent direct (not through the proxy) is seen after schema_cache_ttl;
  * prepared `LIMIT ?, ?` / `LIMIT ? OFFSET ?` (mr_stmt_paginate, the C client) are
    rewritten at prepare time and return the direct rows at every offset;
  * every page equals the same query sent direct, row for row (each ORDER BY is total,
    so a page is the same whether the proxy rewrote it or not).
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports (client, HTTP).
"""
import os
import re
import subprocess
import urllib.request
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

BIN = os.environ.get("MR_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                            "myrewrite"))
ROWS = 3000
RULES_DIR = os.path.join(t.TMP, "schema_rules")
RULES = """
[paginate prepared_items]
table = ps_items
key = id
threshold = 100
log = full

[paginate every_table]
table = *
threshold = 100
log = full
"""
TABLES = "sc_pk, sc_uniq, sc_heap, sc_alter, sc_direct, ps_items"
# MR_BIN_REAL: MR_BIN is tests/lib/env.sh's MR_IO wrapper, the build is beside the binary
STMT_BIN = os.path.join(os.path.dirname(os.path.abspath(os.environ.get("MR_BIN_REAL", BIN))),
                        "tests", "integration",
                        "mr_stmt_paginate")


PROXY = t.Proxy("schema", rules_dir=RULES_DIR, rules=RULES, own_conn=True, http=True,
                options={"schema_cache_ttl": "1s"})
PORT, HTTP_PORT = PROXY.port, PROXY.http_port


def setup(d):
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS " + TABLES)
    cur.execute("CREATE TABLE sc_pk (v INT NOT NULL, id INT PRIMARY KEY, KEY (v)) ENGINE=InnoDB")
    cur.execute("CREATE TABLE sc_uniq (code INT NOT NULL, v INT NOT NULL, n INT NULL, "
                "UNIQUE KEY (n), UNIQUE KEY (code), KEY (v)) ENGINE=InnoDB")
    cur.execute("CREATE TABLE sc_heap (n INT NULL, v INT NOT NULL, UNIQUE KEY (n)) ENGINE=InnoDB")
    cur.execute("CREATE TABLE sc_alter (id INT PRIMARY KEY, code INT NOT NULL, v INT NOT NULL) "
                "ENGINE=InnoDB")
    cur.execute("CREATE TABLE sc_direct (id INT PRIMARY KEY, code INT NOT NULL, v INT NOT NULL) "
                "ENGINE=InnoDB")
    cur.execute("INSERT INTO sc_pk SELECT seq %% 13, seq FROM seq_1_to_%d" % ROWS)
    cur.execute("INSERT INTO sc_uniq SELECT seq * 7, seq %% 11, seq FROM seq_1_to_%d" % ROWS)
    cur.execute("INSERT INTO sc_heap SELECT seq, seq %% 5 FROM seq_1_to_%d" % ROWS)
    cur.execute("CREATE TABLE ps_items (id INT PRIMARY KEY, v INT NOT NULL, name VARCHAR(20) "
                "NOT NULL, UNIQUE KEY (name), KEY (v)) ENGINE=InnoDB")
    cur.execute("INSERT INTO ps_items SELECT seq, seq % 11, CONCAT('n', seq) "
                "FROM seq_1_to_20000")
    for tb in ("sc_alter", "sc_direct"):
        cur.execute("INSERT INTO %s SELECT seq, %d - seq, seq %% 9 FROM seq_1_to_%d"
                    % (tb, ROWS + 1, ROWS))


def log_text():
    time.sleep(0.1)
    return PROXY.log_text()


def rewrites(marker):
    """Rewritten statements in the log holding `marker`."""
    return sum(1 for line in log_text().splitlines()
               if "myrewrite_dj" in line and marker in line)


def page(d, c, via, direct=None):
    """Runs a page both ways; True when the rows (and column names) are equal."""
    dc, pc = d.cursor(), c.cursor()
    dc.execute(direct or via)
    pc.execute(via)
    return dc.fetchall() == pc.fetchall() and \
        [x[0] for x in dc.description] == [x[0] for x in pc.description]


def until_rewritten(d, c, via, direct, marker, timeout=10):
    """Sends the page until the log shows a rewrite with marker; all pages must match."""
    end = time.time() + timeout
    same = True
    while time.time() < end:
        same &= page(d, c, via, direct)
        if rewrites(marker):
            return same, True
        time.sleep(0.05)
    return same, False


def first_page_untouched(d, c):
    # every ORDER BY here is total, so the page is the same rewritten or not
    q = "SELECT * FROM sc_pk ORDER BY v, id DESC LIMIT 500, 10"
    t.check(page(d, c, q), "the first page of an unseen table is answered")
    t.eq("the first page of an unseen table is not rewritten (the lookup does not wait)",
         0, rewrites("FROM sc_pk"))
    same, done = until_rewritten(d, c, q, None, "USING (`id`)")
    t.check(done, "a later page of sc_pk joins on its primary key id")
    t.check(same, "sc_pk pages equal the direct query (with the key appended)")


def unique_fallback(d, c):
    q = "SELECT v, code FROM sc_uniq WHERE v < 9 ORDER BY v DESC, n LIMIT 300, 25"
    same, done = until_rewritten(d, c, q, None, "USING (`code`)")
    t.check(done, "a table without primary key joins on its unique NOT NULL key (code), "
            "not on the nullable unique key")
    t.check(same, "sc_uniq pages equal the direct query")


def no_key(d, c):
    q = "SELECT * FROM sc_heap ORDER BY v, n LIMIT 400, 5"
    for _ in range(10):
        t.check(page(d, c, q), "sc_heap page equals the direct query") if _ == 9 else page(d, c, q)
        time.sleep(0.05)
    t.eq("a table with only a nullable unique key is never rewritten", 0, rewrites("sc_heap"))
    t.check("sc_heap has no primary key and no unique NOT NULL key" in log_text(),
            "the log says why sc_heap is left alone")


def alter_through_proxy(d, c):
    q = "SELECT * FROM sc_alter ORDER BY v, code LIMIT 1000, 8"
    same, done = until_rewritten(d, c, q, None, "sc_alter JOIN (SELECT `id`")
    t.check(done and same, "before the ALTER, sc_alter joins on id")
    c.cursor().execute("ALTER TABLE sc_alter DROP PRIMARY KEY, DROP COLUMN id, "
                       "ADD PRIMARY KEY (code)")
    errors = []
    after = "SELECT * FROM sc_alter ORDER BY v DESC, code LIMIT 1000, 8"
    end = time.time() + 10
    seen = False
    while time.time() < end and not seen:
        try:
            if not page(d, c, after):
                errors.append("rows differ")
        except pymysql.err.MySQLError as e:
            errors.append(str(e))
        seen = rewrites("sc_alter JOIN (SELECT `code`") > 0
    t.eq("no page fails or differs after the primary key moved (old column dropped)", [],
         errors[:3])
    t.check(seen, "after the ALTER through the proxy, sc_alter joins on its new key code")


def alter_direct(d, c):
    q = "SELECT * FROM sc_direct ORDER BY v, code LIMIT 700, 4"
    same, done = until_rewritten(d, c, q, None, "sc_direct JOIN (SELECT `id`")
    t.check(done and same, "before the direct ALTER, sc_direct joins on id")
    # id stays unique, so a page served with the old key until the TTL is still right
    d.cursor().execute("ALTER TABLE sc_direct DROP PRIMARY KEY, ADD PRIMARY KEY (code), "
                       "ADD UNIQUE KEY (id)")
    same, done = until_rewritten(d, c, q, None, "sc_direct JOIN (SELECT `code`", timeout=15)
    t.check(done, "an ALTER sent direct is seen after schema_cache_ttl (1s here)")
    t.check(same, "sc_direct pages equal the direct query across the change")


def prepared_limit():
    """LIMIT ?, ? through the C client (mysql_stmt_*), compared with direct."""
    if not os.access(STMT_BIN, os.X_OK):
        t.not_ok("mr_stmt_paginate is built", STMT_BIN)
        return
    r = subprocess.run([STMT_BIN, t.HOST, str(t.DIRECT_PORT), str(PORT), t.USER, t.PASSWORD,
                        t.DB], capture_output=True, text=True, timeout=120)
    sys.stdout.write(r.stdout)
    t.check(r.returncode == 0, "prepared LIMIT ?, ? pages equal direct ones", r.stderr[-1500:])
    text = log_text()
    t.check("LIMIT ?, ?) AS myrewrite_dj" in text and "LIMIT ? OFFSET ?) AS myrewrite_dj" in text,
            "the proxy rewrote the prepared LIMIT ?, ? and LIMIT ? OFFSET ? statements")


def metrics():
    body = urllib.request.urlopen("http://%s:%d/metrics" % (t.HOST, HTTP_PORT), timeout=10) \
        .read().decode()
    got = {m.group(1): int(m.group(2)) for m in
           re.finditer(r"^myrewrite_schema_cache_(\w+)_total (\d+)$", body, re.M)}
    # sc_pk, sc_uniq, sc_heap, sc_alter (twice), sc_direct (twice) at least
    t.check(got.get("loads", 0) >= 7 and got.get("hits", 0) > 0 and got.get("misses", 0) >= 4
            and got.get("invalidations", 0) >= 1 and got.get("load_errors", -1) == 0,
            "/metrics counts schema cache loads, hits, misses and the DDL invalidation", got)


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    try:
        setup(d)
    except pymysql.err.MySQLError as e:
        print("skip: cannot fill the tables from seq_1_to_N (%s)" % (e,))
        sys.exit(77)
    PROXY.start()
    try:
        c = t.connect(PORT, autocommit=True)
        first_page_untouched(d, c)
        unique_fallback(d, c)
        no_key(d, c)
        alter_through_proxy(d, c)
        alter_direct(d, c)
        c.close()
        prepared_limit()
        metrics()
    finally:
        PROXY.stop()
    d.cursor().execute("DROP TABLE IF EXISTS " + TABLES)
    d.close()
    t.done()


if __name__ == "__main__":
    main()
