#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pool = statement (issue 27): the connection goes back after every statement, and a
statement whose words would pin its session is refused.

A proxy of its own: pool = statement, pool_size = 1, one worker, the console on.
  * two sessions interleave autocommit statements on the one server connection (SHOW
    SERVERS: one); each still reads its own CONNECTION_ID() and time zone;
  * BEGIN, START TRANSACTION, XA START, SET autocommit = 0, LOCK TABLES, SET TRANSACTION,
    PREPARE ... FROM, SET @x, SELECT ... INTO @x, CREATE TEMPORARY TABLE, GET_LOCK(),
    SQL_CALC_FOUND_ROWS each get ERR 1235 naming pool = transaction, and nothing was run
    (no transaction open, @x still NULL, no temporary table, the lock free, no row
    written), while the other session is served at once (nothing pinned);
  * SET autocommit = 1, BEGIN NOT ATOMIC ... END and SET SESSION time_zone run; a
    client that turns autocommit off at login (pymysql's default) is refused;
  * only the reply tells (a procedure that opens a transaction): the session is pinned
    as with pool = transaction (SHOW PINS: transaction, pinned_now 1) until its COMMIT.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402

ER_NOT_SUPPORTED = 1235
REFUSED = (
    "BEGIN",
    "START TRANSACTION READ ONLY",
    "XA START 'ps1'",
    "SET autocommit = 0",
    "SET @@session.autocommit = OFF",
    "LOCK TABLES test.ps_t WRITE",
    "SET TRANSACTION ISOLATION LEVEL READ COMMITTED",
    "PREPARE ps_s FROM 'SELECT 1'",
    "SET @ps_x = 1",
    "SELECT 5 INTO @ps_x",
    "CREATE TEMPORARY TABLE test.ps_tmp (i INT)",
    "SELECT GET_LOCK('ps_lock', 0)",
    "SELECT SQL_CALC_FOUND_ROWS * FROM test.ps_t LIMIT 1",
    "INSERT INTO test.ps_t VALUES (99); SET @ps_x = 2",
)
ALLOWED = (
    "SET autocommit = 1",
    "BEGIN NOT ATOMIC SELECT 1; END",
    "SET SESSION time_zone = '+03:00'",
)


def try_connect(port):
    try:
        return t.connect(port, autocommit=True)
    except Exception:  # noqa: BLE001 - not up yet
        return None


def setup():
    t.root_query("CREATE OR REPLACE TABLE test.ps_t (i INT PRIMARY KEY) ENGINE=InnoDB")
    t.root_query("INSERT INTO test.ps_t VALUES (1), (2)")
    t.root_query("CREATE OR REPLACE PROCEDURE test.ps_open() START TRANSACTION")
    t.root_query("GRANT EXECUTE ON PROCEDURE test.ps_open TO %s@'%%'" % t.USER)


def check_refused(p, a, b):
    for sql in REFUSED:
        err = t.try_sql(a, sql)
        t.check(err is not None and err[0] == ER_NOT_SUPPORTED and "pool = transaction" in err[1],
                "pool = statement refuses %r with ERR 1235 naming pool = transaction" % sql, err)
        t.eq("after %r the other session is served at once" % sql, ((1,),),
             t.rows(b, "SELECT 1"))
        state = t.rows(a, "SELECT @@in_transaction, @ps_x, IS_FREE_LOCK('ps_lock'), "
                       "(SELECT COUNT(*) FROM test.ps_t), @@autocommit")
        t.eq("nothing of %r was run" % sql, ((0, None, 1, 2, 1),), state)
    t.check(t.try_sql(a, "SELECT * FROM test.ps_tmp") is not None,
            "no temporary table was created")


def main():
    t.needs_own_proxy()
    setup()
    opts = {"pool": "statement", "pool_size": 1, "pool_max_wait": "2s"}
    # through=False: the fixture's own login check is pymysql's default, autocommit off
    with t.Proxy("pool_statement", options=opts, workers=1, admin=True, through=False) as p:
        a = t.wait_until(lambda: try_connect(p.port), timeout=10)
        b = p.connect(autocommit=True)
        try:
            p.connect().close()
            err = None
        except Exception as e:  # noqa: BLE001 - the refusal is what is checked
            err = e.args
        t.check(err is not None and err[0] == 1235, "a client that turns autocommit off at "
                "login (pymysql's default) is refused", err)
        ids = (t.rows(a, "SELECT CONNECTION_ID()"), t.rows(b, "SELECT CONNECTION_ID()"))
        for sql in ALLOWED:
            t.eq("pool = statement runs %r" % sql, None, t.try_sql(a, sql))
        t.eq("B still reads its own id after A's statements", ids[1],
             t.rows(b, "SELECT CONNECTION_ID()"))
        t.eq("A keeps its time zone over the shared connection", (("+03:00",),),
             t.rows(a, "SELECT @@time_zone"))
        t.eq("B's time zone is its own", (("SYSTEM",),), t.rows(b, "SELECT @@time_zone"))
        check_refused(p, a, b)
        t.eq("one server connection served both", 1, len(p.admin_dicts("SHOW SERVERS")))
        t.rows(a, "CALL test.ps_open()")  # only the reply says a transaction is open
        pins = [r for r in p.admin_dicts("SHOW PINS") if r.get("reason") == "transaction"]
        t.check(len(pins) == 1 and int(pins[0]["pinned_now"]) == 1,
                "a transaction only the reply told of pins the session, as pool = transaction",
                pins)
        t.rows(a, "COMMIT")
        t.eq("after its COMMIT the other session is served", ((1,),), t.rows(b, "SELECT 1"))
        a.close()
        b.close()
    t.done()


if __name__ == "__main__":
    main()
