#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""UPDATE DELAYED ... SET col = literal in staged mode (set_columns), end to end: a proxy of
its own with staged delayed rules, the real mariadbd.

  * one client per key sends SET hits = <base>, title = '...' first, then (with 24 other
    clients adding to every key, some through prepared statements) more adds and
    SET title = ...; after the flush each counter is exactly its base plus every add, each
    title the last one its client set: for InnoDB with missing = ignore, InnoDB with
    missing = insert, and MyISAM (the LOCK TABLES path);
  * one client's sequence with sets between adds (+5, SET 100, +2, +3, SET 7, +1 gives 8)
    replayed in seq order across flush chunks of 3 staged rows;
  * prepared: SET title = ? with a NULL value sets NULL; SET hits = ? then adds;
  * missing = insert creates a new key's row from its sets and adds; missing = ignore
    does not; DELETE DELAYED between sets drops what came before it;
  * an existing staging table without the set columns is refused by the check, with the
    missing columns named in the log.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import rawproto_lib as rp  # noqa: E402

KEYS = 8
ADDERS = 24
ROUNDS = 60
RULES_DIR = os.path.join(t.TMP, "delayed_set_rules")
PROXY = t.Proxy("delayed_set_proxy", rules_dir=RULES_DIR, own_conn=True)
PORT = PROXY.port
TABLES = {"s_ignore": ("InnoDB", "ignore"), "s_upsert": ("InnoDB", "insert"),
          "s_myisam": ("MyISAM", "ignore")}
RULE = """
[delayed %(t)s]
table = test.%(t)s
key = id
columns = hits, views
set_columns = title, hits
missing = %(missing)s
flush_interval = 100ms
flush_rows = %(rows)d
"""
OLD_RULE = """
[delayed s_old]
table = test.s_old
key = id
columns = hits
set_columns = title
flush_interval = 100ms
"""


STAGING_TABLES = ("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'test' "
                  "AND TABLE_NAME IN ('s_ignore_delayed', 's_upsert_delayed', "
                  "'s_myisam_delayed', 's_old_delayed')")


def rules_text():
    return "".join(RULE % {"t": name, "missing": missing, "rows": 3 if name == "s_ignore" else 50}
                   for name, (_, missing) in TABLES.items()) + OLD_RULE


def setup(d):
    cur = d.cursor()
    names = list(TABLES) + ["s_old"]
    cur.execute("DROP TABLE IF EXISTS " + ", ".join(names + [n + "_delayed" for n in names]))
    for name, (engine, _) in TABLES.items():
        cur.execute("CREATE TABLE %s (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0, "
                    "views BIGINT NOT NULL DEFAULT 0, title VARCHAR(40) NULL) ENGINE=%s"
                    % (name, engine))
        cur.execute("INSERT INTO %s (id, title) VALUES %s" % (
            name, ", ".join("(%d, 'x')" % k for k in list(range(1, KEYS + 1)) + [50, 51, 52])))
    cur.execute("CREATE TABLE s_old (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0, "
                "title VARCHAR(40)) ENGINE=InnoDB")
    cur.execute("CREATE TABLE s_old_delayed (seq BIGINT UNSIGNED NOT NULL AUTO_INCREMENT "
                "PRIMARY KEY, id INT NOT NULL, hits BIGINT NOT NULL DEFAULT 0, op TINYINT NOT "
                "NULL DEFAULT 0, staged_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6))")


rows = t.rows  # (connection, sql[, args]): a tuple of row tuples


def drained(d, table):
    end = time.time() + 20
    while time.time() < end:
        if rows(d, "SELECT COUNT(*) FROM %s_delayed" % table) == ((0,),):
            return True
        time.sleep(0.1)
    return False


def applied(d, table, sql, want):
    """The rows of sql once the flush has applied. For InnoDB an empty staging table means
    applied (its delete commits with the apply), so the rows are read once. MyISAM's flush
    moves staged rows into a TEMPORARY snapshot before applying them, so staging empties a
    moment before the apply: wait up to 10 s for want, then return whatever is there."""
    got = rows(d, sql)
    end = time.time() + 10
    while TABLES[table][0] != "InnoDB" and got != want and time.time() < end:
        time.sleep(0.1)
        got = rows(d, sql)
    return got


# ---- concurrent sets and adds -------------------------------------------------------------

def setter(table, k, barrier, out):
    """Sets the key's base first, then adds and retitles it; out[k] = (adds, last title)."""
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    n = cur.execute("UPDATE DELAYED %s SET hits = %d, title = 'k%d-0' WHERE id = %d"
                    % (table, 1000 * k, k, k))
    barrier.wait()
    adds, title = 0, "k%d-0" % k
    for i in range(1, ROUNDS + 1):
        if i % 4 == 0:
            title = "k%d-%d" % (k, i)
            n += cur.execute("UPDATE DELAYED %s SET title = '%s', views = views + 1 WHERE id = "
                             "%d" % (table, title, k))
        else:
            n += cur.execute("UPDATE DELAYED %s SET hits = hits + 2 WHERE id = %d" % (table, k))
            adds += 2
    c.close()
    out[k] = (adds, title, n)


def adder(table, w, barrier, out):
    """Adds to every key; every third adder through a prepared statement."""
    prepared = w % 3 == 0
    c = rp.Conn(PORT) if prepared else t.connect(PORT, autocommit=True)
    st = c.prepare("UPDATE DELAYED %s SET hits = hits + ? WHERE id = ?" % table) if prepared \
        else None
    barrier.wait()
    mine, bad = {}, 0
    for i in range(ROUNDS):
        k = 1 + (w + i) % KEYS
        delta = 1 + (w + i) % 5
        if prepared:
            r = c.execute(st.stmt_id, [(rp.TYPE_LONGLONG, delta), (rp.TYPE_LONGLONG, k)])
            bad += not (r.kind == "ok" and r.ok[0] == 1)
        else:
            bad += c.cursor().execute("UPDATE DELAYED %s SET hits = hits + %d WHERE id = %d"
                                      % (table, delta, k)) != 1
        mine[k] = mine.get(k, 0) + delta
    c.close()
    out[w] = (mine, bad)


def concurrent(d, table):
    barrier = threading.Barrier(KEYS + ADDERS)
    sets, adds = {}, {}
    threads = [threading.Thread(target=setter, args=(table, k, barrier, sets))
               for k in range(1, KEYS + 1)]
    threads += [threading.Thread(target=adder, args=(table, w, barrier, adds))
                for w in range(ADDERS)]
    took = t.run_threads(threads)
    t.eq("%s: every adder's OK reported one row staged" % table, 0,
         sum(bad for _, bad in adds.values()))
    t.eq("%s: every setter's OKs reported one row each" % table, [ROUNDS + 1] * KEYS,
         [sets[k][2] for k in range(1, KEYS + 1)])
    t.check(drained(d, table), "%s: staging table drained" % table)
    want = []
    for k in range(1, KEYS + 1):
        total = 1000 * k + sets[k][0] + sum(m.get(k, 0) for m, _ in adds.values())
        want.append((k, total, ROUNDS // 4, sets[k][1]))
    t.eq("%s: each counter is its SET base plus every add after it, each title the last set"
         % table, tuple(want),
         applied(d, table, "SELECT id, hits, views, title FROM %s WHERE id <= %d ORDER BY id"
                 % (table, KEYS), tuple(want)))
    t.log("%s: %d clients x %d UPDATE DELAYED (sets and adds) in %.2f s"
          % (table, KEYS + ADDERS, ROUNDS, took))


# ---- one client's sequence -----------------------------------------------------------------

def sequence(d, table):
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    for sql in ("SET hits = hits + 5", "SET hits = 100", "SET hits = hits + 2",
                "SET hits = hits + 3", "SET hits = 7, title = 'seq'", "SET hits = hits + 1",
                "SET views = views + 4"):
        cur.execute("UPDATE DELAYED %s %s WHERE id = 50" % (table, sql))
    # a delete drops the sets before it; with missing = insert the sets after it make the row
    cur.execute("UPDATE DELAYED %s SET title = 'gone', hits = 9 WHERE id = 51" % table)
    cur.execute("DELETE DELAYED FROM %s WHERE id = 51" % table)
    cur.execute("UPDATE DELAYED %s SET hits = hits + 3, title = 'again' WHERE id = 51" % table)
    cur.execute("UPDATE DELAYED %s SET hits = 40, title = 'new' WHERE id = 60" % table)
    cur.execute("UPDATE DELAYED %s SET hits = hits + 2 WHERE id = 60" % table)
    c.close()
    p = rp.Conn(PORT)
    st = p.prepare("UPDATE DELAYED %s SET title = ?, hits = hits + ? WHERE id = ?" % table)
    r1 = p.execute(st.stmt_id, [(rp.TYPE_VAR_STRING, None), (rp.TYPE_LONGLONG, 6),
                                (rp.TYPE_LONGLONG, 52)])
    sh = p.prepare("UPDATE DELAYED %s SET hits = ? WHERE id = ?" % table)
    r2 = p.execute(sh.stmt_id, [(rp.TYPE_LONGLONG, -20), (rp.TYPE_LONGLONG, 52)])
    r3 = p.execute(st.stmt_id, [(rp.TYPE_VAR_STRING, "it's"), (rp.TYPE_LONGLONG, 1),
                                (rp.TYPE_LONGLONG, 52)])
    p.close()
    t.eq("%s: prepared SET executes report one row staged each" % table, [1, 1, 1],
         [r.ok[0] if r.kind == "ok" else r.err for r in (r1, r2, r3)])
    t.check(drained(d, table), "%s: staging table drained after the sequence" % table)
    upsert = TABLES[table][1] == "insert"
    want = [(50, 8, 4, "seq"), (51, 3, 0, "again") if upsert else None, (52, -19, 0, "it's")]
    want += [(60, 42, 0, "new")] if upsert else []
    want = tuple(w for w in want if w)
    t.eq("%s: sets and adds replayed in seq order (missing = %s)" % (table, TABLES[table][1]),
         want, applied(d, table, "SELECT id, hits, views, title FROM %s WHERE id >= 50 "
                       "ORDER BY id" % table, want))
    d.cursor().execute("UPDATE %s SET title = 'x' WHERE id = 52" % table)
    p = rp.Conn(PORT)
    st = p.prepare("UPDATE DELAYED %s SET title = ? WHERE id = ?" % table)
    p.execute(st.stmt_id, [(rp.TYPE_VAR_STRING, None), (rp.TYPE_LONGLONG, 52)])
    p.close()
    t.check(drained(d, table), "%s: staging table drained after the NULL set" % table)
    t.eq("%s: a prepared SET title = NULL sets NULL" % table, ((None,),),
         applied(d, table, "SELECT title FROM %s WHERE id = 52" % table, ((None,),)))


def old_staging_table(d):
    cur = d.cursor()
    cur.execute("INSERT INTO s_old VALUES (1, 0, NULL)")
    c = t.connect(PORT, autocommit=True)
    c.cursor().execute("UPDATE DELAYED s_old SET hits = hits + 1 WHERE id = 1")
    c.close()
    time.sleep(0.5)
    log = PROXY.log_text()
    t.check("staging table test.s_old_delayed exists without the column(s) title_set, "
            "set_mask that this rule stages into" in log,
            "a staging table without the set columns is refused, the columns named")
    t.eq("nothing is flushed from it", ((0,),), rows(d, "SELECT hits FROM s_old WHERE id = 1"))


def main():
    t.needs_own_proxy()
    os.makedirs(RULES_DIR, exist_ok=True)
    with open(os.path.join(RULES_DIR, "10-delayed-set.rules"), "w") as f:
        f.write(rules_text())
    d = t.direct(autocommit=True)
    setup(d)
    PROXY.start()
    try:
        end = time.time() + 20
        want = ((len(TABLES) + 1,),)
        while time.time() < end and rows(d, STAGING_TABLES) != want:
            time.sleep(0.1)
        t.eq("staging tables there at start", want, rows(d, STAGING_TABLES))
        for table in TABLES:
            concurrent(d, table)
            sequence(d, table)
        old_staging_table(d)
    finally:
        PROXY.stop()
    t.done()


if __name__ == "__main__":
    main()
