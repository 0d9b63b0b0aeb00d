#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""read_pending on delayed rules: a point read of the counters by the full key through the
proxy returns the table's value plus the deltas still pending. A proxy of its own
(proxy_user, the console and /metrics), the real mariadbd.

  * staged mode, under load: 4 writer threads send UPDATE DELAYED increments on two keys
    while 3 readers read them through the proxy (two in text, one prepared: hand-built
    COM_STMT_PREPARE / EXECUTE), and the flusher applies and deletes every 100 ms. Every
    read is at least what was acknowledged when it was sent and at most what had been sent
    when it returned (a staging INSERT may commit before its OK reaches the client);
  * memory mode, the same with two text readers and a prepared one (flushes every 100 ms,
    each chunk writing its mark): every read is at least what was acknowledged when it was
    sent, and above what had been sent when it returned in at most 1 % of reads (a read
    taken before a chunk started and run after that chunk committed: a whole flush
    transaction inside one read's trip), for the text reads and the prepared ones each;
  * exactness with two key columns, two counters, a NULL counter, the column names and
    types the client sees, a staged and a held DELETE DELAYED (no row), a prepared read
    with its parameters in order; in memory mode a prepared read adds what is held for the
    key bound at each execute (another key, a key with nothing held, a held delete, NULL,
    after the flush: the table's value, nothing counted twice);
  * a rule without read_pending, and shapes that are not a plain point read (LIMIT, a
    range, an alias, FOR UPDATE): untouched, the table's
    value without the pending deltas;
  * EXPLAIN REWRITE shows the decision; SHOW DELAYED and /metrics count the rewrites.
MR_TEST_READ_PENDING=no writes the rules without read_pending: the load checks must then
fail (the reads lag), which shows that they test the feature.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import rawproto_lib as rp  # noqa: E402

READ_PENDING = os.environ.get("MR_TEST_READ_PENDING", "yes")
SECONDS = 4.0
RULES = """
[delayed rp_staged]
table = test.rp_staged
key = id
columns = total
flush_interval = 100ms
read_pending = {rp}

[delayed rp_mem]
table = test.rp_mem
key = id
columns = total
mode = memory
flush_interval = 100ms
read_pending = {rp}

[delayed rp_pairs]
table = test.rp_pairs
key = a, b
columns = n, m
flush_interval = 1h
read_pending = {rp}

[delayed rp_mem_hold]
table = test.rp_mem_hold
key = id
columns = n
mode = memory
flush_interval = 1h
read_pending = {rp}

[delayed rp_plain]
table = test.rp_plain
key = id
columns = n
flush_interval = 1h
""".format(rp=READ_PENDING)
PROXY = t.Proxy("read_pending_proxy", rules=RULES, own_conn=True, admin=True, http=True)


def setup():
    d = t.direct(autocommit=True)
    cur = d.cursor()
    for tbl in ("rp_staged", "rp_mem", "rp_pairs", "rp_mem_hold", "rp_plain"):
        cur.execute("DROP TABLE IF EXISTS %s, %s_delayed" % (tbl, tbl))
    cur.execute("DROP TABLE IF EXISTS myrewrite_read_marks")
    cur.execute("CREATE TABLE rp_staged (id INT PRIMARY KEY, total BIGINT NOT NULL) "
                "ENGINE=InnoDB")
    cur.execute("CREATE TABLE rp_mem (id INT PRIMARY KEY, total BIGINT NOT NULL) ENGINE=InnoDB")
    cur.execute("CREATE TABLE rp_pairs (a INT, b VARCHAR(8), n INT NOT NULL, m INT NULL, "
                "note VARCHAR(8), PRIMARY KEY (a, b)) ENGINE=InnoDB")
    cur.execute("CREATE TABLE rp_mem_hold (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB")
    cur.execute("CREATE TABLE rp_plain (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB")
    cur.execute("INSERT INTO rp_staged VALUES (1, 0), (2, 1000)")
    cur.execute("INSERT INTO rp_mem VALUES (1, 0), (2, 1000)")
    cur.execute("INSERT INTO rp_pairs VALUES (1, 'x', 10, NULL, 'a'), (1, 'y', 20, 5, 'b'), "
                "(2, 'x', 30, 1, 'c')")
    cur.execute("INSERT INTO rp_mem_hold VALUES (1, 100), (2, 200)")
    cur.execute("INSERT INTO rp_plain VALUES (1, 7)")
    d.close()


class Book:
    """Per key: increments sent (started) and acknowledged (OK received)."""

    def __init__(self, base):
        self.lock = threading.Lock()
        self.base = dict(base)
        self.started = {k: 0 for k in base}
        self.acked = {k: 0 for k in base}
        self.reads = 0
        self.low = []        # reads below what was acknowledged when they were sent
        self.high = []       # reads above what had been sent when they returned
        self.above_acked = 0  # reads above what was acknowledged when they returned
        self.errors = []
        self.by_how = {}     # reads per kind of reader (text, prepared)

    def bounds_before(self, k):
        with self.lock:
            return self.base[k] + self.acked[k]

    def bounds_after(self, k):
        with self.lock:
            return self.base[k] + self.acked[k], self.base[k] + self.started[k]

    def judge(self, k, lo, v, how):
        acked_now, sent_now = self.bounds_after(k)
        with self.lock:
            self.reads += 1
            self.by_how[how] = self.by_how.get(how, 0) + 1
            if v < lo:
                self.low.append((how, k, lo, v))
            if v > sent_now:
                self.high.append((how, k, sent_now, v))
            if v > acked_now:
                self.above_acked += 1


def writer(table, book, stop, seed):
    c = PROXY.connect(autocommit=True)
    cur = c.cursor()
    i = seed
    try:
        while not stop.is_set():
            k = 1 + i % 2
            i += 1
            with book.lock:
                book.started[k] += 1
            cur.execute("UPDATE DELAYED %s SET total = total + 1 WHERE id = %d" % (table, k))
            with book.lock:
                book.acked[k] += 1
    except Exception as e:  # noqa: BLE001
        book.errors.append(repr(e))
    c.close()


def text_reader(table, book, stop, seed):
    c = PROXY.connect(autocommit=True)
    cur = c.cursor()
    i = seed
    try:
        while not stop.is_set():
            k = 1 + i % 2
            i += 1
            lo = book.bounds_before(k)
            cur.execute("SELECT total FROM %s WHERE id = %d" % (table, k))
            book.judge(k, lo, int(cur.fetchone()[0]), "text")
    except Exception as e:  # noqa: BLE001
        book.errors.append(repr(e))
    c.close()


def binary_bigint(row):
    """The one integer of a binary result row: header 0x00, a null bitmap byte, then 8 bytes
    for a BIGINT (what read_pending returns) or 4 for an INT (the column untouched)."""
    if row[1] & 0x04:
        return None
    body = bytes(row[2:])
    return struct.unpack("<q" if len(body) == 8 else "<i", body)[0]


def prepared_reader(table, book, stop, seed):
    c = rp.Conn(PROXY.port)
    try:
        st = c.prepare("SELECT total FROM %s WHERE id = ?" % table)
        i = seed
        while not stop.is_set():
            k = 1 + i % 2
            i += 1
            lo = book.bounds_before(k)
            r = c.execute(st.stmt_id, [(rp.TYPE_LONGLONG, k)])
            if r.kind != "rows" or len(r.rows) != 1:
                book.errors.append("prepared read: %s %s" % (r.kind, r.err))
                break
            book.judge(k, lo, binary_bigint(r.rows[0]), "prepared")
    except Exception as e:  # noqa: BLE001
        book.errors.append(repr(e))
    c.close()


def under_load(table, readers):
    book = Book({1: 0, 2: 1000})
    stop = threading.Event()
    threads = [threading.Thread(target=writer, args=(table, book, stop, s)) for s in range(4)]
    threads += [threading.Thread(target=fn, args=(table, book, stop, s))
                for s, fn in enumerate(readers)]
    for th in threads:
        th.start()
    time.sleep(SECONDS)
    stop.set()
    for th in threads:
        th.join(60)
    return book


def flushed_rows(rule):
    a = PROXY.admin()
    cur = a.cursor()
    cur.execute("SHOW DELAYED")
    cols = [c[0] for c in cur.description]
    row = dict(zip(cols, [r for r in cur.fetchall() if r[0] == rule][0]))
    a.close()
    return row


def staged_load():
    book = under_load("rp_staged", [text_reader, text_reader, prepared_reader])
    t.eq("staged load: no client error", [], book.errors[:3])
    t.log("staged: %d reads, %d increments acknowledged, %d reads above the acknowledged "
          "count at their return (their INSERT committed, its OK on the way)"
          % (book.reads, sum(book.acked.values()), book.above_acked))
    t.check(book.reads > 100, "staged load: the readers read", book.reads)
    t.check(int(flushed_rows("rp_staged")["rows_flushed"] or 0) > 0,
            "staged load: the flusher applied rows meanwhile", flushed_rows("rp_staged"))
    t.eq("staged: no read below what was acknowledged when it was sent", [], book.low[:5])
    t.eq("staged: no read above what had been sent when it returned", [], book.high[:5])


def memory_load():
    book = under_load("rp_mem", [text_reader, text_reader, prepared_reader])
    t.eq("memory load: no client error", [], book.errors[:3])
    t.log("memory: %d reads (%s), %d increments acknowledged, %d above what had been sent, "
          "%d above the acknowledged count"
          % (book.reads, book.by_how, sum(book.acked.values()), len(book.high),
             book.above_acked))
    t.check(book.reads > 100, "memory load: the readers read", book.reads)
    t.check(book.by_how.get("prepared", 0) > 50, "memory load: the prepared reader read",
            book.by_how)
    for how in ("text", "prepared"):
        low = [x for x in book.low if x[0] == how]
        high = [x for x in book.high if x[0] == how]
        n = book.by_how.get(how, 0)
        t.eq("memory, %s reads: none below what was acknowledged when it was sent" % how, [],
             low[:5])
        t.check(len(high) * 100 <= n,
                "memory, %s reads: above what had been sent in at most 1 %% of reads: a chunk "
                "in flight is counted only when the read's snapshot lacks its mark, so only "
                "a read taken before its chunk started and run after it committed counts it "
                "twice" % how, (len(high), n, high[:5]))
    d = t.direct(autocommit=True)
    marks = t.rows(d, "SELECT COUNT(*), MAX(seq) FROM myrewrite_read_marks")[0]
    d.close()
    t.check(marks[0] >= 1 and (marks[1] or 0) > 0,
            "memory: the flusher's chunks wrote their marks (myrewrite_read_marks)", marks)


def one_row(sql):
    c = PROXY.connect(autocommit=True)
    cur = c.cursor()
    cur.execute(sql)
    rows = cur.fetchall()
    desc = [(d[0], d[1]) for d in cur.description]
    c.close()
    return rows, desc


def sends(sql):
    c = PROXY.connect(autocommit=True)
    c.cursor().execute(sql)
    c.close()


def exact_staged():
    sends("UPDATE DELAYED rp_pairs SET n = n + 3, m = m + 4 WHERE a = 1 AND b = 'x'")
    sends("UPDATE DELAYED rp_pairs SET n = n - 1 WHERE b = 'y' AND a = 1")
    sends("UPDATE DELAYED rp_pairs SET n = n + 2, m = m + 2 WHERE a = 1 AND b = 'y'")
    rows, desc = one_row("SELECT n, m, a, b FROM rp_pairs WHERE a = 1 AND b = 'x'")
    t.eq("two keys, two counters: n adds its pending 3, NULL m stays NULL (as the flush "
         "leaves it), the key columns as stored", ((13, None, 1, "x"),), rows)
    t.eq("the columns keep their names; a counter is a BIGINT (8)",
         [("n", 8), ("m", 8), ("a", 3), ("b", 253)], desc)
    rows, desc = one_row("SELECT `M`, N FROM test.rp_pairs WHERE b = 'y' AND a = 1")
    t.eq("names as written, schema-qualified, key terms in any order", ((7, 21),), rows)
    t.eq("... and their names as written", ["M", "N"], [d[0] for d in desc])
    rows, _ = one_row("SELECT n FROM rp_pairs WHERE a = 1 AND b = 'x' LIMIT 1")
    t.eq("LIMIT: not a plain point read, untouched (the table's value)", ((10,),), rows)
    rows, _ = one_row("SELECT n FROM rp_pairs p WHERE a = 1 AND b = 'x'")
    t.eq("an alias: untouched", ((10,),), rows)
    rows, _ = one_row("SELECT n FROM rp_pairs WHERE a = 1 AND b >= 'x' ORDER BY b")
    t.eq("a range: untouched", ((10,), (20,)), rows)
    c = PROXY.connect(autocommit=False)
    cur = c.cursor()
    cur.execute("SELECT n FROM rp_pairs WHERE a = 1 AND b = 'x' FOR UPDATE")
    t.eq("FOR UPDATE: untouched", ((10,),), cur.fetchall())
    c.rollback()
    c.close()
    rows, _ = one_row("SELECT note, n FROM rp_pairs WHERE a = 1 AND b = 'x'")
    t.eq("a column that is not a counter or key: untouched", (("a", 10),), rows)
    # prepared: the `?` stay in their order
    c = rp.Conn(PROXY.port)
    st = c.prepare("SELECT n FROM rp_pairs WHERE a = ? AND b = ?")
    t.eq("prepared read: 2 parameters, 1 column", (2, 1), (st.params, st.columns))
    r = c.execute(st.stmt_id, [(rp.TYPE_LONGLONG, 1), (rp.TYPE_VAR_STRING, "y")])
    t.eq("prepared read adds the pending deltas", [21],
         [binary_bigint(x) for x in r.rows] if r.kind == "rows" else r.err)
    # DELETE DELAYED: the key reads as no row until the flush, which deletes it
    sends("DELETE DELAYED FROM rp_pairs WHERE a = 2 AND b = 'x'")
    sends("UPDATE DELAYED rp_pairs SET n = n + 5 WHERE a = 2 AND b = 'x'")
    r = c.execute(st.stmt_id, [(rp.TYPE_LONGLONG, 2), (rp.TYPE_VAR_STRING, "x")])
    t.eq("a key with a DELETE DELAYED staged reads as no row (prepared)", ("rows", 0),
         (r.kind, len(r.rows)))
    c.close()
    rows, _ = one_row("SELECT n FROM rp_pairs WHERE a = 2 AND b = 'x'")
    t.eq("... and in text", (), rows)
    sends("FLUSH DELAYED rp_pairs")
    d = t.direct(autocommit=True)
    t.eq("after the flush the table holds what the reads said",
         [(1, "x", 13, None), (1, "y", 21, 7)],
         [tuple(r) for r in t.rows(d, "SELECT a, b, n, m FROM rp_pairs ORDER BY a, b")])
    d.close()
    rows, _ = one_row("SELECT n FROM rp_pairs WHERE a = 1 AND b = 'y'")
    t.eq("after the flush nothing is pending: the table's value", ((21,),), rows)


def untouched_rule():
    sends("UPDATE DELAYED rp_plain SET n = n + 5 WHERE id = 1")
    rows, desc = one_row("SELECT n FROM rp_plain WHERE id = 1")
    t.eq("a rule without read_pending: the table's value, without the pending 5", ((7,),),
         rows)
    t.eq("... its column as the server describes it (INT, 3)", [("n", 3)], desc)


def exact_memory():
    sends("UPDATE DELAYED rp_mem_hold SET n = n + 4 WHERE id = 1")
    sends("UPDATE DELAYED rp_mem_hold SET n = n - 1 WHERE id = '1'")
    rows, desc = one_row("SELECT n FROM rp_mem_hold WHERE id = 1")
    t.eq("memory mode: the table's 100 plus the 3 held", ((103,),), rows)
    t.eq("memory mode: the column keeps its name, a BIGINT", [("n", 8)], desc)
    c = rp.Conn(PROXY.port)
    st = c.prepare("SELECT n FROM rp_mem_hold WHERE id = ?")
    t.eq("memory mode, prepared read: 1 parameter, 1 column", (1, 1), (st.params, st.columns))

    def read(key, typ=rp.TYPE_LONGLONG):
        r = c.execute(st.stmt_id, [(typ, key)])
        return [binary_bigint(x) for x in r.rows] if r.kind == "rows" else r.err

    t.eq("memory mode, prepared: the table's 100 plus the 3 held for the key bound", [103],
         read(1))
    t.eq("... the key bound as a string", [103], read("1", rp.TYPE_VAR_STRING))
    t.eq("... another key bound, nothing held for it: its table value", [200], read(2))
    sends("UPDATE DELAYED rp_mem_hold SET n = n + 10 WHERE id = 2")
    t.eq("... the next execute sees what was taken since", [210], read(2))
    t.eq("... and the first key again its own", [103], read(1))
    t.eq("... a NULL key: no row", [], read(None))
    sends("DELETE DELAYED FROM rp_mem_hold WHERE id = 2")
    rows, _ = one_row("SELECT n FROM rp_mem_hold WHERE id = 2")
    t.eq("memory mode: a key with a DELETE DELAYED held reads as no row", (), rows)
    t.eq("... prepared too", [], read(2))
    t.eq("... the other key is unaffected", [103], read(1))
    sends("FLUSH DELAYED rp_mem_hold")
    d = t.direct(autocommit=True)
    t.eq("memory mode: after the flush the table holds what the reads said", [(1, 103)],
         [tuple(r) for r in t.rows(d, "SELECT id, n FROM rp_mem_hold ORDER BY id")])
    d.close()
    t.eq("memory mode, prepared, after the flush: the table's value, nothing counted twice",
         [103], read(1))
    # MariaDB's direct execution: PREPARE and an EXECUTE of statement 0xffffffff sent together
    sends("UPDATE DELAYED rp_mem_hold SET n = n + 6 WHERE id = 1")
    c.send_command(bytes([rp.COM_STMT_PREPARE]) + b"SELECT n FROM rp_mem_hold WHERE id = ?")
    c.send_command(rp.execute_packet(0xFFFFFFFF, [(rp.TYPE_LONGLONG, 1)]))
    pr = c.read_prepare(c._logged("direct prepare"))
    r = c.read_result(c._logged("direct execute"))
    t.eq("memory mode, direct execution (statement 0xffffffff): the held 6 added",
         ("ok", "rows", [109]), (pr.kind, r.kind, [binary_bigint(x) for x in r.rows]
                                 if r.kind == "rows" else r.err))
    c.close()
    sends("FLUSH DELAYED rp_mem_hold")


def reporting():
    t.check((t.metric(PROXY, "myrewrite_delayed_read_pending_total") or 0) > 100,
            "/metrics counts the rewritten reads",
            t.metric(PROXY, "myrewrite_delayed_read_pending_total"))
    t.check(int(flushed_rows("rp_staged")["read_pending"] or 0) > 100,
            "SHOW DELAYED counts them per rule", flushed_rows("rp_staged"))
    t.eq("SHOW DELAYED: a rule without read_pending counts none", "0",
         str(flushed_rows("rp_plain")["read_pending"]))
    a = PROXY.admin()
    cur = a.cursor()
    cur.execute("EXPLAIN REWRITE 'SELECT n FROM test.rp_pairs WHERE a = 1 AND b = ''x'''")
    text = "\n".join(r[0] for r in cur.fetchall())
    t.check("read pending: yes (rule rp_pairs" in text, "EXPLAIN REWRITE shows read pending",
            text)
    cur.execute("EXPLAIN REWRITE 'SELECT n FROM test.rp_pairs WHERE a = 1'")
    text = "\n".join(r[0] for r in cur.fetchall())
    t.check("read_pending: not rewritten (the WHERE does not give every key column)" in text,
            "EXPLAIN REWRITE says why a read is untouched", text)
    a.close()


def main():
    setup()
    with PROXY:
        staged_load()
        memory_load()
        exact_staged()
        untouched_rule()
        exact_memory()
        reporting()
    t.done()


if __name__ == "__main__":
    main()
