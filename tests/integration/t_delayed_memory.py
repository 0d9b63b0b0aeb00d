#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""UPDATE DELAYED / DELETE DELAYED in mode = memory, FLUSH DELAYED through the proxy, and
prepared DELAYED statements in staged mode; a proxy of its own, the real mariadbd.

  * 32 client threads send increments, decrements and IN lists; every OK reports the keys
    touched; after FLUSH DELAYED (sent through the proxy) each counter is the exact sum;
  * SET col = literal: last write wins; a set followed by adds gives set + adds;
  * DELETE DELAYED: a tombstone drops the adds before it; with missing = insert the adds
    after it bring the row back; with missing = ignore an absent key is not inserted;
  * string keys with quotes, backslashes and non-ASCII text, written as '5' or 5, coalesce;
  * a key the server refuses is isolated: the rest of its chunk is written, FLUSH DELAYED
    reports it, and it goes to the dead-letter table m_pages_delayed_rejected (not retried);
  * memory_max_keys: the key past the bound gets its ERR, which wakes the flusher, and after
    that flush there is room again; nothing taken is dropped;
  * a chunk that fails (its row locked past the lock wait timeout) is kept and applied once;
  * a client that disconnects while its FLUSH DELAYED waits for the flusher's job: the job's
    answer finds the session gone, the proxy goes on (and, under ASan, leaks nothing);
  * every refused form gets its error text; FLUSH DELAYED of an unknown table too;
  * prepared UPDATE DELAYED (hand-built COM_STMT_PREPARE / EXECUTE): staged mode stages the
    executed values; memory mode answers each execute itself (types kept across executes,
    NULL and fractional values refused, COM_STMT_CLOSE forgets the statement);
  * flush_early wakes the staged and the memory flusher before an hourly interval;
  * deltas held across a SIGHUP reload are flushed once;
  * a rule without key takes the composite primary key from the schema cache: 8 threads
    retry the documented "schema not loaded yet, retry" ERR and the sums are exact for every
    OK; after an ALTER of the primary key a statement gets "primary key ... changed" until a
    SIGHUP reload, after which the new key is taken;
  * SIGTERM runs a final flush of an hourly table.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
import rawproto_lib as rp  # noqa: E402

CLIENTS = 32
RULES_DIR = os.path.join(t.TMP, "delayed_memory_rules")
PROXY = t.Proxy("delayed_memory_proxy", rules_dir=RULES_DIR, own_conn=True, admin=True)
PORT = PROXY.port
RULES = """
[delayed mem_counters]
table = test.m_counters
key = id
columns = hits, misses
set_columns = note, misses
mode = memory
flush_interval = 200ms

[delayed mem_pages]
table = test.m_pages
key = day, page
columns = views
mode = memory
missing = insert
flush_interval = 1h

[delayed mem_small]
table = test.m_small
key = id
columns = n
mode = memory
memory_max_keys = 3
flush_interval = 1h

[delayed staged_early]
table = test.m_early
key = id
columns = n
flush_interval = 1h
flush_early = 10

[delayed mem_early]
table = test.m_early_mem
key = id
columns = n
mode = memory
flush_interval = 1h
flush_early = 4

[delayed staged_prep]
table = test.m_staged
key = id
columns = n
flush_interval = 1h

[delayed mem_nokey]
table = test.m_nokey
columns = hits
mode = memory
missing = insert
flush_interval = 1h
"""


def setup(d):
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS m_counters, m_pages, m_pages_delayed_rejected, m_small, "
                "m_staged, m_staged_delayed, m_early, m_early_delayed, m_early_mem, m_nokey")
    cur.execute("CREATE TABLE m_nokey (site VARCHAR(20), day INT, zone INT NOT NULL DEFAULT 0, "
                "hits BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (site, day)) ENGINE=InnoDB")
    for tbl in ("m_early", "m_early_mem"):
        cur.execute("CREATE TABLE %s (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0) "
                    "ENGINE=InnoDB" % tbl)
        cur.execute("INSERT INTO %s (id) SELECT seq FROM seq_1_to_10" % tbl)
    cur.execute("CREATE TABLE m_counters (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0, "
                "misses BIGINT NOT NULL DEFAULT 0, note VARCHAR(40)) ENGINE=InnoDB")
    cur.execute("INSERT INTO m_counters (id) VALUES " +
                ", ".join("(%d)" % i for i in list(range(1, 11)) + [50, 51, 52, 57, 58, 59, 60]))
    cur.execute("CREATE TABLE m_pages (day DATE, page VARCHAR(100), views BIGINT NOT NULL, "
                "PRIMARY KEY (day, page)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
    cur.execute("CREATE TABLE m_small (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0) "
                "ENGINE=InnoDB")
    cur.execute("INSERT INTO m_small (id) VALUES (1), (2), (3), (4), (5)")
    cur.execute("CREATE TABLE m_staged (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0) "
                "ENGINE=InnoDB")
    cur.execute("INSERT INTO m_staged (id) VALUES (1), (2)")


rows = t.rows  # (connection, sql[, args]): a tuple of row tuples


def flush(c, table=None):
    c.cursor().execute("FLUSH DELAYED" + (" " + table if table else ""))


# ---- refusals --------------------------------------------------------------------------------

REFUSED = [
    ("UPDATE DELAYED m_counters SET hits = hits + 1 WHERE id = 1; SELECT 1",
     "DELAYED on test.m_counters (mode = memory) is not taken in a multi-statement query; "
     "send it on its own"),
    ("UPDATE DELAYED m_counters SET hits = 5 WHERE id = 1",
     "UPDATE DELAYED on test.m_counters: SET hits = literal needs hits in the rule's "
     "set_columns"),
    ("UPDATE DELAYED m_counters SET misses = 'x' WHERE id = 1",
     "UPDATE DELAYED on test.m_counters: misses is a counter column, so SET misses = takes a "
     "whole number"),
    ("UPDATE DELAYED m_counters SET note = note + 1 WHERE id = 1",
     "UPDATE DELAYED on test.m_counters: note is not one of the rule's columns"),
    ("UPDATE DELAYED m_counters SET hits = hits + 1 WHERE id = b'101'",
     "DELAYED in mode = memory: bit literals are not taken"),
    ("UPDATE DELAYED m_counters SET hits = hits + 1 WHERE id = _utf8mb4'1'",
     "DELAYED in mode = memory: a string with a charset introducer (_utf8'...', N'...') is not "
     "taken; send it plain"),
    ("UPDATE DELAYED m_counters SET hits = hits + 99999999999999999999 WHERE id = 1",
     "UPDATE DELAYED: 99999999999999999999 is out of range for a delta"),
    ("UPDATE DELAYED m_staged SET n = 4 WHERE id = 1",
     "UPDATE DELAYED on test.m_staged: SET n = literal needs n in the rule's set_columns"),
    ("FLUSH DELAYED m_nothing",
     "FLUSH DELAYED: no delayed rule for table test.m_nothing"),
    ("FLUSH DELAYED a b",
     "FLUSH DELAYED takes nothing or one table name: FLUSH DELAYED [[schema.]table]"),
]


def refusals():
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    for sql, want in REFUSED:
        try:
            cur.execute(sql)
            t.not_ok("refused: %s" % sql, "it succeeded")
        except pymysql.err.MySQLError as e:
            code, msg = e.args[0], e.args[1]
            t.check(code == 1235 and msg.startswith(want), "refused with its reason: %s" % sql,
                    "%s %s" % (code, msg))
    c.close()


def execute_again(c, stmt_id, params):
    """COM_STMT_EXECUTE with new-params-bound = 0: the values are encoded as `params` say,
    which must be the types of the previous execute, and the types are not sent."""
    p = rp.execute_packet(stmt_id, params)
    nulls = (len(params) + 7) // 8
    p = p[:10 + nulls] + b"\x00" + p[10 + nulls + 1 + 2 * len(params):]
    c.send_command(p)
    return c.read_result(c._logged("execute again"))


def refused_execute(r, want, desc):
    t.check(r.kind == "err" and r.err[0] == 1235 and r.err[1].startswith(want), desc,
            r.err if r.kind == "err" else r.kind)


def prepared(d):
    """Server-side prepared UPDATE DELAYED, hand-built COM_STMT_PREPARE / EXECUTE: staged mode
    stages the executed values; memory mode answers each execute itself."""
    c = rp.Conn(PORT)
    st = c.prepare("UPDATE DELAYED m_staged SET n = n + ? WHERE id = ?")
    t.eq("prepared staged UPDATE DELAYED has 2 parameters", 2, st.params)
    for val, key in ((3, 1), (4, 1), (10, 2)):
        r = c.execute(st.stmt_id, [(rp.TYPE_LONGLONG, val), (rp.TYPE_LONGLONG, key)])
        t.eq("prepared staged execute (%d, %d) reports one row staged" % (val, key), 1,
             r.ok[0] if r.kind == "ok" else r.err)
    m = c.prepare("UPDATE DELAYED m_counters SET hits = hits + ? WHERE id IN (?, ?)")
    t.eq("prepared memory-mode UPDATE DELAYED has 3 parameters, no columns", (3, 0),
         (m.params, m.columns))
    r = c.execute(m.stmt_id, [(rp.TYPE_LONGLONG, 5), (rp.TYPE_LONG, 57),
                              (rp.TYPE_VAR_STRING, "58")])
    t.eq("memory-mode execute answers OK with the 2 keys touched", ("ok", 2),
         (r.kind, r.ok[0] if r.kind == "ok" else r.err))
    r = execute_again(c, m.stmt_id, [(rp.TYPE_LONGLONG, -2), (rp.TYPE_LONG, 58),
                                      (rp.TYPE_VAR_STRING, "59")])
    t.eq("an execute without new types keeps the previous ones", ("ok", 2),
         (r.kind, r.ok[0] if r.kind == "ok" else r.err))
    r = c.execute(m.stmt_id, [(rp.TYPE_LONGLONG, 1), (rp.TYPE_LONGLONG, None),
                              (rp.TYPE_LONGLONG, 57)])
    refused_execute(r, "DELAYED: parameter 2 is NULL; keys and values must not be NULL",
                    "a NULL key is refused with its reason")
    r = c.execute(m.stmt_id, [(rp.TYPE_VAR_STRING, "1.5"), (rp.TYPE_LONGLONG, 57),
                              (rp.TYPE_LONGLONG, 58)])
    refused_execute(r, "UPDATE DELAYED: parameter 1 is not a whole number in the signed 64-bit "
                    "range", "a fractional delta is refused with its reason")
    sn = c.prepare("UPDATE DELAYED m_counters SET note = ?, misses = ? WHERE id = ?")
    r = c.execute(sn.stmt_id, [(rp.TYPE_VAR_STRING, "pre'pared"), (rp.TYPE_LONGLONG, 9),
                               (rp.TYPE_LONGLONG, 57)])
    t.eq("memory-mode prepared SET answers OK", "ok", r.kind)
    # MariaDB's direct execution: PREPARE and an EXECUTE of statement 0xffffffff sent together
    c.send_command(bytes([rp.COM_STMT_PREPARE]) +
                   b"UPDATE DELAYED m_counters SET hits = hits + ? WHERE id = ?")
    c.send_command(rp.execute_packet(0xFFFFFFFF, [(rp.TYPE_LONGLONG, 20),
                                                  (rp.TYPE_LONGLONG, 59)]))
    pr = c.read_prepare(c._logged("direct prepare"))
    r = c.read_result(c._logged("direct execute"))
    t.eq("direct execution (statement 0xffffffff) of a memory-mode statement is answered by "
         "the proxy", ("ok", 2, "ok", 1),
         (pr.kind, pr.params, r.kind, r.ok[0] if r.kind == "ok" else r.err))
    c.send_command(struct.pack("<BI", rp.COM_STMT_CLOSE, m.stmt_id))  # no response
    r = c.execute(m.stmt_id, [(rp.TYPE_LONGLONG, 100), (rp.TYPE_LONGLONG, 57),
                              (rp.TYPE_LONGLONG, 58)])
    t.check(r.kind == "err" and r.err[0] == 1243, "after COM_STMT_CLOSE the id is the server's "
            "again (unknown statement), nothing is added", r.err if r.kind == "err" else r.kind)
    r = c.query("FLUSH DELAYED")
    t.eq("FLUSH DELAYED through the proxy answers OK", "ok", r.kind)
    c.close()
    t.eq("prepared staged increments applied once", ((1, 7), (2, 10)),
         rows(d, "SELECT id, n FROM m_staged ORDER BY id"))
    t.eq("prepared memory-mode increments and sets applied once",
         ((57, 5, 9, "pre'pared"), (58, 3, 0, None), (59, 18, 0, None)),
         rows(d, "SELECT id, hits, misses, note FROM m_counters WHERE id IN (57, 58, 59) "
                 "ORDER BY id"))


def real_driver(d):
    """The same through libmariadb's statement API (tests/integration/delayed_stmt_client.c)."""
    prog = os.path.join(os.environ.get("MR_BUILD", os.path.join(os.path.dirname(__file__), "..",
                                                                 "..", "build")),
                        "tests", "integration", "delayed_stmt_client")
    if not os.path.exists(prog):
        t.not_ok("libmariadb prepared UPDATE DELAYED", "%s is not built" % prog)
        return
    before = rows(d, "SELECT SUM(hits) FROM m_counters WHERE id IN (57, 58, 59)")[0][0]
    out = subprocess.run([prog, t.HOST, str(PORT), t.USER, t.PASSWORD, t.DB],
                         capture_output=True, text=True, timeout=60)
    t.eq("libmariadb: prepare sees 2 parameters and no field, every execute 1 affected row",
         (0, "params=2 fields=0 sum=6050"), (out.returncode, out.stdout.strip()))
    c = t.connect(PORT, autocommit=True)
    flush(c)
    c.close()
    t.eq("libmariadb: every executed value applied once", before + 6050,
         rows(d, "SELECT SUM(hits) FROM m_counters WHERE id IN (57, 58, 59)")[0][0])


# ---- concurrent increments ---------------------------------------------------------------------

UPD = "UPDATE DELAYED m_counters SET hits = hits %s %d WHERE id %s"


def tally(sums, keys, delta):
    """Adds delta to each key's sum."""
    for k in keys:
        sums[k] = sums.get(k, 0) + delta


def merge(expect, mine):
    """One client's sums into everyone's (under the caller's lock)."""
    for k, v in mine.items():
        tally(expect, [k], v)


def client(wid, n, expect, lock, bad):
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    mine, wrong = {}, 0
    for i in range(n):
        k = (wid + i) % 10 + 1
        if i % 7 == 3:
            ids, delta = [2, 4, 6, 8], 3
            got = cur.execute(UPD % ("+", 3, "IN (2, 4, 6, 8)"))
        elif i % 5 == 4:
            ids, delta = [k], -2
            got = cur.execute(UPD % ("-", 2, "= '%d'" % k))
        else:
            ids, delta = [k], 1
            got = cur.execute(UPD % ("+", 1, "= %d" % k))
        wrong += got != len(ids)
        tally(mine, ids, delta)
    c.close()
    with lock:
        merge(expect, mine)
        bad.append(wrong)


def concurrent(d):
    expect, lock, bad = {}, threading.Lock(), []
    threads = [threading.Thread(target=client, args=(w, 300, expect, lock, bad))
               for w in range(CLIENTS)]
    took = t.run_threads(threads)
    t.eq("every OK reported the keys touched", 0, sum(bad))
    c = t.connect(PORT, autocommit=True)
    flush(c, "m_counters")
    c.close()
    got = dict(rows(d, "SELECT id, hits FROM m_counters WHERE id <= 10"))
    t.eq("after FLUSH DELAYED each counter equals the exact sum", expect, got)
    t.log("%d clients x 300 memory-mode UPDATE DELAYED in %.2f s" % (CLIENTS, took))


# ---- SET, DELETE, missing keys -----------------------------------------------------------------

def set_and_delete(d):
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    cur.execute("UPDATE DELAYED m_counters SET note = 'first' WHERE id = 50")
    cur.execute("UPDATE DELAYED m_counters SET note = 'it''s \\\\ last' WHERE id = 50")
    cur.execute("UPDATE DELAYED m_counters SET misses = misses + 4 WHERE id = 51")
    cur.execute("UPDATE DELAYED m_counters SET misses = 100, hits = hits + 1 WHERE id = 51")
    cur.execute("UPDATE DELAYED m_counters SET misses = misses + 5 WHERE id = 51")
    cur.execute("UPDATE DELAYED m_counters SET hits = hits + 7 WHERE id = 52")
    cur.execute("DELETE DELAYED FROM m_counters WHERE id IN (52, 60)")
    t.eq("DELETE DELAYED with IN reports 2 keys", 2, cur.rowcount)
    cur.execute("UPDATE DELAYED m_counters SET hits = hits + 1 WHERE id = 52")
    cur.execute("UPDATE DELAYED m_counters SET hits = hits + 1 WHERE id = 999")
    before = rows(d, "SELECT note FROM m_counters WHERE id = 50")
    flush(c)
    c.close()
    t.eq("SET col = literal waits for the flush", ((None,),), before)
    t.eq("SET col = literal: the last write wins", (("it's \\ last",),),
         rows(d, "SELECT note FROM m_counters WHERE id = 50"))
    t.eq("a set followed by adds gives set + adds", ((1, 105),),
         rows(d, "SELECT hits, misses FROM m_counters WHERE id = 51"))
    t.eq("DELETE DELAYED removed the rows; with missing = ignore later adds do not bring them "
         "back", ((0,),), rows(d, "SELECT COUNT(*) FROM m_counters WHERE id IN (52, 60, 999)"))


def upserts(d):
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    pages = ["/home", "/it's", "/back\\slash", "/caf\u00e9 \u2603"]
    for p in pages:
        esc = p.replace("\\", "\\\\").replace("'", "''")
        for _ in range(3):
            cur.execute("UPDATE DELAYED m_pages SET views = views + 2 WHERE day = '2026-11-30' "
                        "AND page = '%s'" % esc)
    cur.execute("UPDATE DELAYED m_pages SET views = views + 1 WHERE page = '/home' AND "
                "day = '2026-11-30'")
    flush(c, "test.m_pages")
    got = dict(rows(d, "SELECT page, views FROM m_pages WHERE day = '2026-11-30'"))
    want = {p: 6 for p in pages}
    want["/home"] = 7
    t.eq("missing = insert: absent keys inserted, hostile strings intact, keys coalesced", want,
         got)
    cur.execute("DELETE DELAYED FROM m_pages WHERE day = '2026-11-30' AND page = '/home'")
    cur.execute("UPDATE DELAYED m_pages SET views = views + 4 WHERE day = '2026-11-30' AND "
                "page = '/home'")
    flush(c)
    c.close()
    t.eq("missing = insert: adds after a tombstone bring the row back with only them", ((4,),),
         rows(d, "SELECT views FROM m_pages WHERE page = '/home'"))


def poison(d):
    """A key the server refuses (too long for its column) is isolated: the keys flushed with it
    are written, it goes to the dead-letter table m_pages_delayed_rejected (not retried) and
    FLUSH DELAYED says so; the next FLUSH DELAYED answers OK."""
    bad = "/" + "x" * 150  # page is VARCHAR(100): strict mode refuses it
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    for page in ("/good1", bad, "/good2"):
        cur.execute("UPDATE DELAYED m_pages SET views = views + 5 WHERE day = '2026-12-01' AND "
                    "page = '%s'" % page)
    try:
        flush(c, "m_pages")
        t.not_ok("FLUSH DELAYED reports the key the server refused", "it answered OK")
    except pymysql.err.MySQLError as e:
        t.check(e.args[0] == 1235 and e.args[1].startswith(
            "FLUSH DELAYED: 1 staged row(s) could not be applied, the server refused them "
            "(test.m_pages: 1 row(s), last error 1406 ") and
            "they are in test.m_pages_delayed_rejected" in e.args[1],
            "FLUSH DELAYED reports the key the server refused", e.args)
    t.eq("the other keys of that chunk were written", {"/good1": 5, "/good2": 5},
         dict(rows(d, "SELECT page, views FROM m_pages WHERE day = '2026-12-01'")))
    t.eq("the refused key is in the dead-letter table", ((1406, "`views` + 5"),),
         rows(d, "SELECT error_code, `change` FROM m_pages_delayed_rejected"))
    cur.execute("UPDATE DELAYED m_counters SET hits = hits + 1 WHERE id = 3")
    flush(c, "test.m_counters")
    t.ok("FLUSH DELAYED of another table answers OK meanwhile")
    flush(c)
    c.close()
    t.ok("the refused key is not retried: the next FLUSH DELAYED answers OK")


# ---- memory_max_keys ---------------------------------------------------------------------------

def bound(d):
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    for k in (1, 2, 3):
        cur.execute("UPDATE DELAYED m_small SET n = n + 1 WHERE id = %d" % k)
    try:
        cur.execute("UPDATE DELAYED m_small SET n = n + 1 WHERE id = 4")
        t.not_ok("the key past memory_max_keys is refused", "it was taken")
    except pymysql.err.MySQLError as e:
        t.check(e.args[0] == 1235 and e.args[1].startswith(
            "DELAYED on test.m_small: the proxy holds 3 keys of this table in memory, its "
            "memory_max_keys (3); a flush has been asked for, retry shortly"),
            "the key past memory_max_keys is refused with its reason", e.args)
    deadline = time.time() + 10
    while True:  # the refusal woke the flusher: room comes back without FLUSH DELAYED
        try:
            cur.execute("UPDATE DELAYED m_small SET n = n + 1 WHERE id = 4")
            break
        except pymysql.err.MySQLError:
            if time.time() > deadline:
                break
            time.sleep(0.05)
    flush(c)
    c.close()
    t.eq("after the forced flush the new key went in; nothing was dropped",
         ((1, 1), (2, 1), (3, 1), (4, 1), (5, 0)), rows(d, "SELECT id, n FROM m_small ORDER BY id"))


# ---- flush_early -------------------------------------------------------------------------------

def early(d):
    """Hourly tables: flush_early wakes the flushers long before the interval."""
    time.sleep(0.5)  # the first rounds at start are over; the next are an hour away
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    for _ in range(4):  # 8 staged rows: below flush_early = 10
        cur.execute("UPDATE DELAYED m_early SET n = n + 1 WHERE id IN (1, 2)")
    for k in (1, 2, 3):  # 3 keys in memory: below flush_early = 4
        cur.execute("UPDATE DELAYED m_early_mem SET n = n + 1 WHERE id = %d" % k)
    time.sleep(1.0)
    t.eq("below flush_early nothing is flushed before the interval",
         (((0,),), ((0,),)), (rows(d, "SELECT SUM(n) FROM m_early"),
                              rows(d, "SELECT SUM(n) FROM m_early_mem")))
    cur.execute("UPDATE DELAYED m_early SET n = n + 1 WHERE id IN (1, 2)")  # rows 9 and 10
    cur.execute("UPDATE DELAYED m_early_mem SET n = n + 1 WHERE id = 4")    # the 4th key
    c.close()
    t.eq("staged: the 10th staged row woke the flusher", ((10,),),
         t.wait_rows(d, "SELECT SUM(n) FROM m_early", ((10,),)))
    t.eq("memory: the 4th key woke the flusher", ((4,),),
         t.wait_rows(d, "SELECT SUM(n) FROM m_early_mem", ((4,),)))


# ---- a failing chunk ---------------------------------------------------------------------------

def failing_chunk(d):
    """The flusher waits for a row lock past innodb_lock_wait_timeout (10 s on its
    connection): its chunk fails and is rolled back; the next round applies it once."""
    locker = t.direct()
    lcur = locker.cursor()
    lcur.execute("START TRANSACTION")
    lcur.execute("SELECT hits FROM m_counters WHERE id = 9 FOR UPDATE")
    base = lcur.fetchone()[0]
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    for _ in range(5):
        cur.execute("UPDATE DELAYED m_counters SET hits = hits + 10 WHERE id = 9")
    time.sleep(11.5)  # at least one round timed out on the lock
    for _ in range(2):
        cur.execute("UPDATE DELAYED m_counters SET hits = hits + 1 WHERE id = 9")
    locker.rollback()
    locker.close()
    flush(c)
    c.close()
    t.eq("a failed chunk is kept, merged with newer deltas and applied once", ((base + 52,),),
         rows(d, "SELECT hits FROM m_counters WHERE id = 9"))


def waiting_states(ac):
    """The states of the sessions SHOW CLIENTS lists as waiting."""
    cur = ac.cursor()
    cur.execute("SHOW CLIENTS")
    col = [x[0] for x in cur.description].index("state")
    return [r[col] for r in cur.fetchall() if r[col] == "waiting"]


def gone_while_flushing(d):
    """FLUSH DELAYED waits for a job on the flusher's connection, stuck on a row lock; its
    client leaves meanwhile. The job finishes later and wakes nobody; the proxy goes on."""
    locker = t.direct()
    lcur = locker.cursor()
    lcur.execute("START TRANSACTION")
    lcur.execute("SELECT hits FROM m_counters WHERE id = 8 FOR UPDATE")
    base = lcur.fetchone()[0]
    c = t.connect(PORT, autocommit=True)
    c.cursor().execute("UPDATE DELAYED m_counters SET hits = hits + 4 WHERE id = 8")
    c._execute_command(pymysql.constants.COMMAND.COM_QUERY, "FLUSH DELAYED m_counters")
    time.sleep(0.5)  # the job is queued and waits for the lock
    ac = PROXY.admin()
    t.eq("the session waits for the flush job", ["waiting"], waiting_states(ac))
    c._sock.shutdown(socket.SHUT_RDWR)  # gone without reading the answer (or sending COM_QUIT)
    c._sock.close()
    deadline = time.time() + 5
    while waiting_states(ac) and time.time() < deadline:
        time.sleep(0.1)
    t.eq("the session closed while its flush job still ran", [], waiting_states(ac))
    ac.close()
    time.sleep(0.5)
    locker.rollback()
    locker.close()
    c = t.connect(PORT, autocommit=True)
    flush(c, "m_counters")
    t.ok("after the orphaned job, FLUSH DELAYED answers OK")
    c.close()
    t.eq("the increment of the orphaned flush is applied once", ((base + 4,),),
         rows(d, "SELECT hits FROM m_counters WHERE id = 8"))


# ---- reload ------------------------------------------------------------------------------------

def reload(d, proc):
    """Deltas held across a SIGHUP reload of the same rules are flushed once."""
    base = rows(d, "SELECT hits FROM m_counters WHERE id = 10")[0][0]
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    for _ in range(5):
        cur.execute("UPDATE DELAYED m_counters SET hits = hits + 3 WHERE id = 10")
    proc.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    for _ in range(5):
        cur.execute("UPDATE DELAYED m_counters SET hits = hits + 1 WHERE id = 10")
    flush(c)
    c.close()
    t.eq("deltas taken before and after a reload are all flushed, once", ((base + 20,),),
         rows(d, "SELECT hits FROM m_counters WHERE id = 10"))


# ---- a rule without key ----------------------------------------------------------------------

RETRY = "myrewrite: schema not loaded yet, retry"


def send_retrying(cur, sql, retries):
    """Sends sql until it is not refused with the documented retry ERR; returns its result or
    the other error; retries[0] counts the retries."""
    for _ in range(500):
        try:
            return cur.execute(sql)
        except pymysql.err.MySQLError as e:
            if not (e.args[0] == 1235 and e.args[1].startswith(RETRY)):
                return e
            retries[0] += 1
            time.sleep(0.01)
    return "still not loaded"


def nokey_client(wid, expect, lock, bad, retries):
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    mine, wrong, tries = {}, [], [0]
    for i in range(150):
        site = "abc"[(wid + i) % 3]
        if i % 4 == 1:  # the WHERE in the other order, an IN over the second key column
            keys = [(site, 1), (site, 2)]
            got = send_retrying(cur, "UPDATE DELAYED m_nokey SET hits = hits + 2 WHERE day IN "
                                     "(1, 2) AND site = '%s'" % site, tries)
            delta = 2
        else:
            keys, delta = [(site, i % 4)], 1
            got = send_retrying(cur, "UPDATE DELAYED m_nokey SET hits = hits + 1 WHERE site = "
                                     "'%s' AND day = %d" % (site, i % 4), tries)
        if got != len(keys):
            wrong.append(got)
        else:
            tally(mine, keys, delta)
    c.close()
    with lock:
        merge(expect, mine)
        bad.extend(wrong)
        retries[0] += tries[0]


def nokey_concurrent(d):
    """Statements race the first load of the table's key: some get the retry ERR, none is
    lost or doubled, and the tuples follow the primary key's order (site, day)."""
    expect, lock, bad, retries = {}, threading.Lock(), [], [0]
    t.run_threads([threading.Thread(target=nokey_client, args=(w, expect, lock, bad, retries))
                   for w in range(8)])
    t.eq("every keyless memory statement was taken with the keys touched", [], bad[:3])
    c = t.connect(PORT, autocommit=True)
    flush(c, "m_nokey")
    c.close()
    got = {(s, dy): h for s, dy, h in rows(d, "SELECT site, day, hits FROM m_nokey")}
    t.eq("keyless memory rule: after FLUSH DELAYED each (site, day) is the exact sum", expect,
         got)
    t.log("keyless memory rule: %d retries while the key loaded" % retries[0])


def nokey_alter(d, proc):
    """An ALTER of the primary key: the table holds (site, day) tuples, so a statement is
    refused; a reload gives the rule a table that takes the new key."""
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    cur.execute("ALTER TABLE m_nokey DROP PRIMARY KEY, ADD PRIMARY KEY (site, day, zone)")
    sql = "UPDATE DELAYED m_nokey SET hits = hits + 5 WHERE site = 'a' AND day = 1 AND zone = 0"
    got = send_retrying(cur, sql, [0])
    want = ("myrewrite: the primary key of test.m_nokey changed since the proxy started holding "
            "its deltas (now (site, day, zone), was (site, day)); nothing was taken")
    t.check(isinstance(got, pymysql.err.MySQLError) and got.args[0] == 1235 and
            got.args[1].startswith(want), "a changed primary key is refused with its reason",
            got)
    before = rows(d, "SELECT hits FROM m_nokey WHERE site = 'a' AND day = 1")[0][0]
    proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 10
    while time.time() < deadline:
        got = send_retrying(cur, sql, [0])
        if got == 1:
            break
        time.sleep(0.1)
    t.eq("after a reload the new primary key is taken", 1, got)
    flush(c, "m_nokey")
    c.close()
    t.eq("the statement under the new key is flushed once", ((before + 5,),),
         rows(d, "SELECT hits FROM m_nokey WHERE site = 'a' AND day = 1"))


# ---- final flush ------------------------------------------------------------------------------

def final_flush(d, proc):
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    for _ in range(10):
        cur.execute("UPDATE DELAYED m_small SET n = n + 3 WHERE id = 5")
    c.close()
    before = rows(d, "SELECT n FROM m_small WHERE id = 5")
    t.eq("memory-mode proxy exits 0 on SIGTERM", 0, proc.stop())
    t.eq("SIGTERM's final flush wrote what the hourly flush had not", (((0,),), ((30,),)),
         (before, rows(d, "SELECT n FROM m_small WHERE id = 5")))


def main():
    t.needs_own_proxy()
    os.makedirs(RULES_DIR, exist_ok=True)
    with open(os.path.join(RULES_DIR, "10-memory.rules"), "w") as f:
        f.write(RULES)
    d = t.direct(autocommit=True)
    setup(d)
    proc = PROXY.start()
    try:
        refusals()
        prepared(d)
        real_driver(d)
        concurrent(d)
        set_and_delete(d)
        upserts(d)
        poison(d)
        bound(d)
        early(d)
        failing_chunk(d)
        gone_while_flushing(d)
        nokey_concurrent(d)
        reload(d, proc)
        nokey_alter(d, proc)
        final_flush(d, proc)
    finally:
        PROXY.kill9()
    t.done()


if __name__ == "__main__":
    main()
