#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ROW_COUNT() and FOUND_ROWS() right after a statement are the session's own with
pool = transaction (issue 27), whoever used the server connection in between.

A proxy of its own: pool = transaction, pool_size = 1, one worker, so every session runs
on the one server connection. Session A runs a statement, session B runs another on that
connection, then A reads ROW_COUNT() or FOUND_ROWS(): A must read what the same sequence
reads direct (one connection each), for
  * ROW_COUNT() after an UPDATE, an INSERT ... ON DUPLICATE KEY UPDATE, a DELETE, a SELECT
    (-1), an error (-1), a SET (0); FOUND_ROWS() after a SELECT with LIMIT, kept by an
    UPDATE in between;
  * each as a select item alone (its column's name and type as direct), named by AS,
    inside an expression (named: an unnamed one is named after the text sent), and in a
    WHERE clause;
  * a multi-statement text whose second statement reads ROW_COUNT() of its first (the
    server's, on the same connection), and SQL_CALC_FOUND_ROWS followed by FOUND_ROWS()
    (the session keeps its connection: the server's total);
  * ORDER BY ROW_COUNT() and GROUP BY id, FOUND_ROWS() (an expression, not a column's
    position), and the calls inside an executable comment (/*!ROW_COUNT()*/);
  * test.FOUND_ROWS() (a stored function, left to the server) beside FOUND_ROWS ();
  * a prepared SELECT ROW_COUNT(), FOUND_ROWS() executed after A's statement and B's
    (the prepare keeps A's connection), refused by pool = statement.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import rawproto_lib as rp  # noqa: E402
from pymysql.constants import CLIENT  # noqa: E402

# (A's statement, B's statement in between, A's read)
CASES = (
    ("UPDATE test.pc_t SET v = v + 1 WHERE id <= 3", "DELETE FROM test.pc_b WHERE id = 1",
     "SELECT ROW_COUNT()"),
    ("INSERT INTO test.pc_t VALUES (1, 0) ON DUPLICATE KEY UPDATE v = 100",
     "UPDATE test.pc_b SET v = v + 1", "SELECT ROW_COUNT() AS rc, ROW_COUNT() + 1 AS rc1"),
    ("DELETE FROM test.pc_t WHERE id > 8", "INSERT INTO test.pc_b VALUES (100, 0)",
     "SELECT id FROM test.pc_t WHERE id <= ROW_COUNT() ORDER BY id"),
    ("SELECT * FROM test.pc_t", "UPDATE test.pc_b SET v = 7 WHERE id = 2",
     "SELECT ROW_COUNT()"),
    ("SELECT nope FROM test.pc_t", "DELETE FROM test.pc_b WHERE id = 3", "SELECT ROW_COUNT()"),
    ("SET @@session.sql_mode = @@session.sql_mode", "UPDATE test.pc_b SET v = 8",
     "SELECT row_count( ) , 1"),
    ("SELECT * FROM test.pc_t LIMIT 2", "SELECT * FROM test.pc_b", "SELECT FOUND_ROWS()"),
    ("SELECT * FROM test.pc_t LIMIT 4", "SELECT * FROM test.pc_b",
     "UPDATE test.pc_t SET v = 0 WHERE id = 1"),  # FOUND_ROWS() is kept by a write ...
    (None, "SELECT * FROM test.pc_b LIMIT 1", "SELECT FOUND_ROWS() AS f"),  # ... read here
    ("SELECT SQL_CALC_FOUND_ROWS * FROM test.pc_t LIMIT 1", None, "SELECT FOUND_ROWS()"),
    (None, None, "INSERT INTO test.pc_t VALUES (50, 0), (51, 0); SELECT ROW_COUNT()"),
    # outside a select list the value stays an expression: not a column's position
    ("UPDATE test.pc_t SET v = v + 1 WHERE id <= 3", "DELETE FROM test.pc_b WHERE id = 4",
     "SELECT id FROM test.pc_t WHERE id = 1 ORDER BY ROW_COUNT()"),
    ("SELECT * FROM test.pc_t LIMIT 2", "SELECT * FROM test.pc_b",
     "SELECT id FROM test.pc_t WHERE id = 1 GROUP BY id, FOUND_ROWS()"),
    # inside an executable comment's body
    ("UPDATE test.pc_t SET v = v + 1 WHERE id <= 2", "DELETE FROM test.pc_b WHERE id = 5",
     "SELECT /*!ROW_COUNT()*/ AS rc"),
    (None, None, "SELECT /*!CONNECTION_ID()*/ = CONNECTION_ID() AS same"),
    # a stored function of that name is not the native one; a space before ( is
    ("SELECT * FROM test.pc_t LIMIT 3", None, "SELECT test.FOUND_ROWS() AS f, FOUND_ROWS () AS n"),
)


def setup():
    for table in ("pc_t", "pc_b"):
        t.root_query("CREATE OR REPLACE TABLE test.%s (id INT PRIMARY KEY, v INT) ENGINE=InnoDB"
                     % table)
        t.root_query("INSERT INTO test.%s SELECT seq, 0 FROM test.seq_1_to_10" % table)
    t.root_query("CREATE OR REPLACE FUNCTION test.FOUND_ROWS() RETURNS INT RETURN 42")


def run(c, sql):
    """The rows (all results) and the columns' (name, type) of sql, or the error's code."""
    cur = c.cursor()
    try:
        cur.execute(sql)
    except Exception as e:  # noqa: BLE001 - the error is the answer compared
        return ("ERR", e.args[0])
    out = []
    while True:
        desc = tuple((d[0], d[1]) for d in cur.description or ())
        out.append((desc, tuple(cur.fetchall())))
        if not cur.nextset():
            return tuple(out)


def walk(a, b):
    """Runs the cases with sessions a and b; what A read at each."""
    got = []
    for first, between, read in CASES:
        if first:
            run(a, first)
        if between:
            run(b, between)
        got.append(run(a, read))
    return got


def connect(port):
    return t.connect(port, autocommit=True, client_flag=CLIENT.MULTI_STATEMENTS)


def prepared_walk(port):
    """A prepares a statement reading ROW_COUNT() and FOUND_ROWS(), then runs a statement,
    B one in between, and A executes: the rows A's executes read (binary rows)."""
    a, b = rp.Conn(port), rp.Conn(port)
    a.query("SELECT * FROM test.pc_t LIMIT 3")  # FOUND_ROWS() is A's from here
    st = a.prepare("SELECT ROW_COUNT(), FOUND_ROWS()")
    got = []
    for first, between in (("UPDATE test.pc_t SET v = v + 1 WHERE id <= 3",
                            "DELETE FROM test.pc_b WHERE id = 6"),
                           ("SELECT * FROM test.pc_t LIMIT 2", "SELECT * FROM test.pc_b")):
        a.query(first)
        b.query(between)  # through the proxy: waits for A's connection, then an ERR
        r = a.execute(st.stmt_id)
        got.append((r.kind, r.err, tuple(bytes(x) for x in r.rows)))
    a.close()
    b.close()
    return got


def prepared():
    """A prepared statement reads ROW_COUNT() and FOUND_ROWS() at each execute, on the
    connection that runs it: the prepare keeps its session's connection (B waits for
    it, pool_max_wait 1 s, then gets an ERR: A's reads are compared)."""
    setup()
    want = prepared_walk(t.DIRECT_PORT)
    setup()
    opts = {"pool": "transaction", "pool_size": 1, "pool_max_wait": "1s"}
    with t.Proxy("pool_counts_prepared", options=opts, workers=1, admin=True) as p:
        t.eq("a prepared ROW_COUNT(), FOUND_ROWS() reads A's own, as direct", want,
             prepared_walk(p.port))
    p = t.Proxy("pool_counts_stmt", options=dict(opts, pool="statement"), workers=1, through=False)
    with p:
        a = rp.Conn(p.port)
        a.send_command(bytes([rp.COM_STMT_PREPARE]) + b"SELECT ROW_COUNT()")
        r = a.read_prepare(a._logged("prepare"))
        t.check(r.kind == "err" and "pool = statement" in r.err[1],
                "pool = statement refuses a prepare reading ROW_COUNT(): %r" % (r.err,))
        a.close()


def main():
    t.needs_own_proxy()
    setup()
    want = walk(connect(t.DIRECT_PORT), connect(t.DIRECT_PORT))
    setup()
    opts = {"pool": "transaction", "pool_size": 1, "pool_max_wait": "3s"}
    with t.Proxy("pool_counts", options=opts, workers=1, admin=True) as p:
        a, b = connect(p.port), connect(p.port)
        got = walk(a, b)
        for (first, between, read), w, g in zip(CASES, want, got):
            t.eq("A reads %r after its %r and B's %r, as direct" % (read, first, between), w, g)
        servers = p.admin_dicts("SHOW SERVERS")
        t.eq("every session ran on the one server connection", 1, len(servers))
        a.close()
        b.close()
    prepared()
    t.done()


if __name__ == "__main__":
    main()
