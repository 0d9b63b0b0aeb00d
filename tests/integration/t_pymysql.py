#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""pymysql through the proxy, compared with the same work done direct.

Covers the text protocol end to end: typed result sets, multi-statement
batches, LOAD DATA LOCAL INFILE, empty results, errors, transactions, the
16 MiB packet-splitting boundaries in both directions, and the small
commands (ping, select_db, autocommit).
"""
import datetime
import decimal
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mrtest as t  # noqa: E402
from pymysql.constants import CLIENT  # noqa: E402
import pymysql  # noqa: E402

MAXP = 0xFFFFFF  # largest payload of one protocol packet
rng = random.Random(20240229)


def fetch(port, sql, args=None, **kw):
    """(description, rows) of one statement on a fresh connection."""
    conn = t.connect(port, **kw)
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args)
            return [d[:2] for d in (cur.description or [])], cur.fetchall()
    finally:
        conn.close()


def both(desc, sql, args=None):
    """Run sql on both paths and compare description and rows."""
    d = fetch(t.DIRECT_PORT, sql, args)
    p = fetch(t.PROXY_PORT, sql, args)
    t.eq(desc + " (%d rows)" % len(d[1]), d, p)
    return p


def setup():
    conn = t.direct(autocommit=True)
    with conn.cursor() as cur:
        for stmt in [
            "DROP TABLE IF EXISTS py_types, py_load_p, py_load_d, py_tx, py_big",
            """CREATE TABLE py_types (
                 id INT PRIMARY KEY, ti TINYINT, si SMALLINT, mi MEDIUMINT, bi BIGINT,
                 ubi BIGINT UNSIGNED, dc DECIMAL(38,10), fl FLOAT, db DOUBLE,
                 dt DATETIME(6), ts TIMESTAMP(6) NULL, d DATE, tm TIME(6), yr YEAR,
                 bt BIT(64), en ENUM('a','b','c'), st SET('x','y','z'),
                 ch CHAR(20), vc VARCHAR(300), tx TEXT, vb VARBINARY(300), bl BLOB,
                 js JSON, u4 VARCHAR(100) CHARACTER SET utf8mb4, l1 VARCHAR(100) CHARACTER SET latin1,
                 ip INET6, uu UUID)""",
            """CREATE TABLE py_load_p (id INT PRIMARY KEY, name VARCHAR(100) CHARACTER SET utf8mb4,
                 val DOUBLE, note TEXT CHARACTER SET utf8mb4, flag TINYINT)""",
            "CREATE TABLE py_load_d LIKE py_load_p",
            "CREATE TABLE py_tx (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
            "CREATE TABLE py_big (id INT PRIMARY KEY, b LONGBLOB)",
        ]:
            cur.execute(stmt)
        rows = []
        for i in range(1, 501):
            nul = (lambda v: None if i % 7 == 0 else v)
            rows.append((
                i, nul(i % 256 - 128), i * 37 % 65536 - 32768, nul(i * 1000), -(2 ** 63) + i,
                2 ** 64 - i, nul(decimal.Decimal("12345678901234567890123456.0123456789") / i),
                i / 4.0, nul(i / 7.0),
                datetime.datetime(2001, 2, 3, 4, 5, 6, i), nul(datetime.datetime(2030, 1, 1, 0, 0, i % 60, i)),
                datetime.date(1000 + i, 1 + i % 12, 1 + i % 28), datetime.timedelta(hours=-i, microseconds=i),
                1901 + i % 255, i * 0x0101010101, "abc"[i % 3], ("x", "x,y", "", "z,y")[i % 4],
                nul("c%d" % i), "v" * (i % 300), nul("t" * i * 3), bytes(rng.randrange(256) for _ in range(i % 300)),
                nul(os.urandom(i * 7)), nul('{"k": %d, "a": [1, null, "s"]}' % i),
                nul("ünï 😀 %d ✓ 中文" % i), "Ä%d" % i,
                nul("2001:db8::%x" % i), nul("12345678-1234-5678-9abc-%012x" % i),
            ))
        cur.executemany("INSERT INTO py_types VALUES (" + ",".join(["%s"] * 27) + ")", rows)
    conn.close()


def test_types():
    both("typed result set via proxy equals direct", "SELECT * FROM py_types ORDER BY id")
    both("expressions and literals", """SELECT 1, -1.5e300, 0.1 + 0.2, NULL, '', X'00FF7F',
        _utf8mb4'😀', CAST(18446744073709551615 AS UNSIGNED), NOW(6) - NOW(6), DATE '2024-02-29',
        TIME '-838:59:59', JSON_OBJECT('a', 1, 'b', JSON_ARRAY()), REPEAT('z', 70000), CONVERT('ÿ' USING latin1)""")
    both("column metadata of a join", "SELECT a.id, b.vc AS renamed, a.js FROM py_types a JOIN py_types b "
         "ON a.id = b.id + 1 WHERE a.id < 50 ORDER BY a.id")
    both("SHOW statements", "SHOW FULL COLUMNS FROM py_types")
    both("a 100k-row result", "SELECT seq, seq * 2, CONCAT('r', seq) FROM seq_1_to_100000")


def test_multi():
    sql = ("SELECT 1 AS a; SELECT 'x' AS b, NULL AS c UNION ALL SELECT 'y', 2; "
           "UPDATE py_types SET ti = ti WHERE id < 10; SELECT * FROM py_types WHERE 1 = 0; "
           "SET @v := 5; SELECT @v")

    def run(port):
        conn = t.connect(port, client_flag=CLIENT.MULTI_STATEMENTS)
        out = []
        with conn.cursor() as cur:
            cur.execute(sql)
            while True:
                out.append((cur.description and [d[0] for d in cur.description], cur.fetchall(), cur.rowcount))
                if not cur.nextset():
                    break
            cur.execute("SELECT 'after'")
            out.append(cur.fetchall())
        conn.close()
        return out

    d, p = run(t.DIRECT_PORT), run(t.PROXY_PORT)
    t.eq("multi-statement result sets via nextset() equal direct (%d sets)" % (len(d) - 1), d, p)
    t.eq("multi-statement produced 6 results then a normal query", 7, len(p))

    # An error in the middle of a batch: results before it arrive, then the
    # error, and the session is still usable afterwards.
    def run_err(port):
        conn = t.connect(port, client_flag=CLIENT.MULTI_STATEMENTS)
        out = []
        with conn.cursor() as cur:
            try:
                cur.execute("SELECT 1; SELECT * FROM no_such_table; SELECT 3")
                out.append(cur.fetchall())
                cur.nextset()
            except pymysql.MySQLError as e:
                out.append(("err", e.args[0]))
            cur.execute("SELECT 4")
            out.append(cur.fetchall())
        conn.close()
        return out

    t.eq("error inside a multi-statement batch, then recovery", run_err(t.DIRECT_PORT), run_err(t.PROXY_PORT))


def test_load_data():
    path = os.path.join(t.TMP, "py_load.tsv")
    with open(path, "w", encoding="utf-8") as f:
        for i in range(1, 50001):
            note = "\\N" if i % 10 == 0 else "note %d: tab\\there, nl\\nhere, emoji 😀, quote ' \"" % i
            f.write("%d\tname-%d-ü\t%r\t%s\t%d\n" % (i, i, i * 1.25 - 3, note, i % 2))

    def load(port, table):
        conn = t.connect(port, local_infile=True, autocommit=True)
        with conn.cursor() as cur:
            n = cur.execute("LOAD DATA LOCAL INFILE %s INTO TABLE " + table + " CHARACTER SET utf8mb4", (path,))
            cur.execute("SHOW WARNINGS")
            warnings = cur.fetchall()
        conn.close()
        return n, warnings

    d = load(t.DIRECT_PORT, "py_load_d")
    p = load(t.PROXY_PORT, "py_load_p")
    t.eq("LOAD DATA LOCAL INFILE affected rows and warnings equal direct", d, p)
    t.eq("LOAD DATA LOCAL INFILE loaded 50000 rows", 50000, p[0])
    conn = t.direct()
    with conn.cursor() as cur:
        cur.execute("CHECKSUM TABLE py_load_d, py_load_p EXTENDED")
        sums = [r[1] for r in cur.fetchall()]
        cur.execute("SELECT COUNT(*), SUM(note IS NULL) FROM py_load_p")
        counts = cur.fetchone()
    conn.close()
    t.eq("checksum of table loaded via proxy equals table loaded direct", sums[0], sums[1])
    t.eq("row count and NULLs of loaded table", (50000, 5000), (counts[0], int(counts[1])))
    os.unlink(path)

    # Without the client capability the server refuses; the same way both paths.
    def refused(port):
        conn = t.connect(port, local_infile=False)
        try:
            with conn.cursor() as cur:
                cur.execute("LOAD DATA LOCAL INFILE '/nonexistent' INTO TABLE py_load_p")
            return "no error"
        except pymysql.MySQLError as e:
            return e.args[0]
        finally:
            conn.close()
    t.eq("LOAD DATA LOCAL without local_infile refused alike", refused(t.DIRECT_PORT), refused(t.PROXY_PORT))


def test_empty_and_errors():
    both("empty result set keeps its columns", "SELECT id, vc, js FROM py_types WHERE 1 = 0")
    both("SHOW that returns no rows", "SHOW TABLES LIKE 'no_such_%'")

    def errors(port):
        conn = t.connect(port)
        out = []
        with conn.cursor() as cur:
            for sql in ["SELECT * FROM no_such_table", "SELEKT 1", "SELECT 1 FROM DUAL WHERE nocol = 1",
                        "INSERT INTO py_tx VALUES (1, 1), (1, 2)", "SELECT 2"]:
                try:
                    cur.execute(sql)
                    out.append(("ok", cur.fetchall()))
                except pymysql.MySQLError as e:
                    out.append(("err", e.args[0], e.args[1][:40]))
            cur.execute("DELETE FROM py_tx")
        conn.close()
        return out
    d, p = errors(t.DIRECT_PORT), errors(t.PROXY_PORT)
    t.eq("errors (codes, messages) and recovery equal direct", d, p)
    t.eq("session still answers after four errors", ("ok", ((2,),)), p[-1])


def test_transactions():
    conn = t.proxy(autocommit=True)
    other = t.direct(autocommit=True)
    with conn.cursor() as cur, other.cursor() as oc:
        cur.execute("DELETE FROM py_tx")
        t.eq("autocommit on at start (server status flag)", True, conn.get_autocommit())
        conn.autocommit(False)
        t.eq("autocommit off after conn.autocommit(False)", False, conn.get_autocommit())
        cur.execute("SELECT @@autocommit")
        t.eq("server agrees autocommit is off", ((0,),), cur.fetchall())
        cur.execute("INSERT INTO py_tx VALUES (1, 10), (2, 20)")
        oc.execute("SELECT COUNT(*) FROM py_tx")
        t.eq("uncommitted rows invisible to another session", ((0,),), oc.fetchall())
        conn.rollback()
        cur.execute("SELECT COUNT(*) FROM py_tx")
        t.eq("rollback discards the rows", ((0,),), cur.fetchall())
        cur.execute("INSERT INTO py_tx VALUES (3, 30)")
        conn.commit()
        oc.execute("SELECT id, v FROM py_tx")
        t.eq("commit makes the row visible", ((3, 30),), oc.fetchall())
        cur.execute("START TRANSACTION")
        cur.execute("UPDATE py_tx SET v = 31")
        cur.execute("SAVEPOINT s1")
        cur.execute("UPDATE py_tx SET v = 32")
        cur.execute("ROLLBACK TO SAVEPOINT s1")
        cur.execute("COMMIT")
        cur.execute("SELECT v FROM py_tx")
        t.eq("savepoint rollback", ((31,),), cur.fetchall())
        conn.autocommit(True)
        t.eq("autocommit back on", True, conn.get_autocommit())
        cur.execute("DELETE FROM py_tx")
    conn.close()
    other.close()


def lenenc_len(n):
    """Size of a length-encoded integer header."""
    if n < 251:
        return 1
    if n < 1 << 16:
        return 3
    if n < 1 << 24:
        return 4
    return 9


def payload(n):
    """n bytes of printable, quote-free data that differs per call."""
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    seed = bytes(rng.choice(alphabet) for _ in range(4096))
    return (seed * (n // len(seed) + 1))[:n]


def read_back(port, row_id):
    conn = t.connect(port)
    with conn.cursor() as cur:
        # b alone, so that the row packet has exactly the planned size.
        cur.execute("SELECT b FROM py_big WHERE id = %s", (row_id,))
        b = cur.fetchone()[0]
        cur.execute("SELECT SHA1(b), LENGTH(b) FROM py_big WHERE id = %s", (row_id,))
        server_sha, n = cur.fetchone()
    conn.close()
    return t.sha1(b), server_sha, n


def test_packet_boundaries():
    conn = t.proxy(autocommit=True)
    cur = conn.cursor()
    cur.execute("DELETE FROM py_big")

    # Client -> server: COM_QUERY payload = 1 command byte + the query text.
    prefix_fmt = "INSERT INTO py_big (id, b) VALUES (%d, '"
    suffix = b"')"
    cases = [("0xFFFFFF-1", MAXP - 1), ("0xFFFFFF", MAXP), ("0xFFFFFF+1", MAXP + 1),
             ("2*0xFFFFFF", 2 * MAXP), ("2*0xFFFFFF+1", 2 * MAXP + 1)]
    for row_id, (label, target) in enumerate(cases, start=1):
        prefix = (prefix_fmt % row_id).encode()
        data = payload(target - 1 - len(prefix) - len(suffix))
        query = prefix + data + suffix
        assert 1 + len(query) == target
        cur.execute(query)
        t.eq("COM_QUERY payload %s (%d bytes) inserted" % (label, target), 1, cur.rowcount)
        want = (t.sha1(data), t.sha1(data), len(data))
        t.eq("read back via proxy, sha1 matches what was sent", want, read_back(t.PROXY_PORT, row_id))
        t.eq("read back direct, sha1 matches", want, read_back(t.DIRECT_PORT, row_id))

    # Server -> client: a one-column row's payload = lenenc header + data.
    for row_id, (label, target) in enumerate([("0xFFFFFF", MAXP), ("2*0xFFFFFF", 2 * MAXP),
                                              ("0xFFFFFF-1", MAXP - 1)], start=100):
        n = target - lenenc_len(target)
        if lenenc_len(n) != lenenc_len(target):
            n = target - lenenc_len(n)
        assert n + lenenc_len(n) == target
        data = payload(n)
        cur.execute("INSERT INTO py_big (id, b) VALUES (%s, %s)", (row_id, data))
        want = (t.sha1(data), t.sha1(data), n)
        t.eq("row payload %s (%d data bytes) via proxy" % (label, n), want, read_back(t.PROXY_PORT, row_id))
        t.eq("row payload %s direct" % label, want, read_back(t.DIRECT_PORT, row_id))

    cur.execute("SELECT 'still alive'")
    t.eq("session usable after the large packets", (("still alive",),), cur.fetchall())
    cur.execute("DELETE FROM py_big")
    conn.close()


def test_small_commands():
    conn = t.proxy()
    conn.ping()
    t.ok("conn.ping() (COM_PING)")
    conn.select_db("mysql")
    with conn.cursor() as cur:
        cur.execute("SELECT DATABASE()")
        t.eq("select_db('mysql') (COM_INIT_DB)", (("mysql",),), cur.fetchall())
        try:
            conn.select_db("no_such_db")
            t.not_ok("select_db of a missing database must fail")
        except pymysql.MySQLError as e:
            t.eq("select_db of a missing database fails with 1049", 1049, e.args[0])
        cur.execute("SELECT DATABASE()")
        t.eq("database unchanged after the failed select_db", (("mysql",),), cur.fetchall())
    conn.select_db(t.DB)
    conn.autocommit(False)
    conn.autocommit(True)
    with conn.cursor() as cur:
        cur.execute("SELECT @@autocommit, DATABASE()")
        t.eq("autocommit toggled and database restored", ((1, t.DB),), cur.fetchall())
    conn.ping()
    t.ok("second ping")
    conn.close()

    # A connection that closes and a client that reconnects via ping().
    conn = t.proxy()
    with conn.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        cid = cur.fetchone()[0]
    killer = t.direct()
    with killer.cursor() as kc:
        # Pass-through: the id seen through the proxy is the backend thread id.
        kc.execute("KILL %d" % cid)
    killer.close()
    try:
        conn.ping(reconnect=False)
        t.not_ok("ping on a killed session should fail")
    except pymysql.MySQLError as e:
        t.ok("ping on a session killed server-side fails (%s)" % e.args[0])
    conn.ping(reconnect=True)
    with conn.cursor() as cur:
        cur.execute("SELECT 1")
        t.eq("reconnect after the kill works", ((1,),), cur.fetchall())
    conn.close()


def main():
    setup()
    for fn in [test_types, test_multi, test_load_data, test_empty_and_errors, test_transactions,
               test_packet_boundaries, test_small_commands]:
        t.log(fn.__name__)
        try:
            fn()
        except Exception as e:  # report and go on: one broken area should not hide the rest
            t.not_ok("%s raised %s: %s" % (fn.__name__, type(e).__name__, e))
    conn = t.direct()
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS py_types, py_load_p, py_load_d, py_tx, py_big")
    conn.close()
    t.done()


if __name__ == "__main__":
    main()
