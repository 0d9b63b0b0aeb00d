#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Queue claims with pool = transaction (issue 27): the claim's owner is the session.

A proxy of its own: pool = transaction, pool_size = 2, one worker, proxy_user set, two
queue rules (q_reap with a reaper, timeout 2 s; q_rel without one). Claims are
`UPDATE ... SET owner = CONNECTION_ID()`, which the proxy sends with the session's own id
(the handshake's thread id).
  * W claims rows; O holds its connection in a transaction while X logs in, so the login
    takes the room of W's login connection (closed, gone from PROCESSLIST). W lives on,
    working over the connections O and X share: the reaper (timeout 2 s) must not free
    W's claims, however old, while W lives;
  * W quits: its rows in both tables are back within 1.5 s (no PROCESSLIST wait for a
    connection other sessions use), O's and X's claims are untouched, O and X keep
    working, and no connection is KILLed (the log says none);
  * W2 claims rows, opens a transaction, claims more, and its socket is closed while a
    statement of it runs (SLEEP(1.5)): the pool closes its connection; the committed
    claims stay until that connection is gone from PROCESSLIST, then are released, the
    uncommitted claim rolls back; O's claims are untouched;
  * a claim prepared server-side (COM_STMT_PREPARE) owns its rows by the session's id at
    every execute, also where the statement is prepared again on a connection that never
    saw it, and a second session preparing the same text claims for itself;
  * CONNECTION_ID() in a trigger's or a view's body created through the proxy is stored as
    written (not frozen to the creating session's id);
  * a claim rewritten by a rule (SKIP LOCKED on `SELECT ... FOR UPDATE` naming
    CONNECTION_ID()) reads the session's own id too, and does not pin the session.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN.
"""
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

TIMEOUT_S = 2
COM_QUERY = 3
COM_STMT_PREPARE, COM_STMT_EXECUTE = 0x16, 0x17
PREPARED_CLAIM = (b"UPDATE test.pq_rel SET status = 'claimed', owner = CONNECTION_ID() "
                  b"WHERE owner = 0 AND status = 'unsent' LIMIT 1")
RULES = """
[queue reaped]
table = test.pq_reap
owner_column = owner
status_column = status
claimed_value = claimed
unclaimed_value = unsent
claimed_at_column = claimed_at
timeout = %ds
skip_locked = yes

[queue released]
table = test.pq_rel
owner_column = owner
status_column = status
claimed_value = claimed
unclaimed_value = unsent
""" % TIMEOUT_S


def claim(c, table, n):
    """Claims n rows of table for c's session; the ids it claimed."""
    cur = c.cursor()
    cur.execute("UPDATE %s SET status = 'claimed', owner = CONNECTION_ID(), claimed_at = NOW(6) "
                "WHERE owner = 0 AND status = 'unsent' LIMIT %d" % (table, n))
    cur.execute("SELECT id FROM %s WHERE owner = CONNECTION_ID() AND status = 'claimed' "
                "ORDER BY id" % table)
    return [r[0] for r in cur.fetchall()]


def claimed_by(owner):
    """{table: [ids]} of the rows claimed by owner, read direct."""
    out = {}
    for table in ("pq_reap", "pq_rel"):
        out[table] = [r[0] for r in t.root_query(
            "SELECT id FROM test.%s WHERE owner = %%s AND status = 'claimed' ORDER BY id"
            % table, (owner,))]
    return out


def listed(thread_id):
    return t.root_query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s",
                        (thread_id,))[0][0]


def own_id(c):
    return t.rows(c, "SELECT CONNECTION_ID()")[0][0]


def setup():
    for table in ("pq_reap", "pq_rel"):
        t.root_query("CREATE OR REPLACE TABLE test.%s (id INT PRIMARY KEY, status VARCHAR(16) "
                     "NOT NULL DEFAULT 'unsent', owner BIGINT UNSIGNED NOT NULL DEFAULT 0, "
                     "claimed_at DATETIME(6) NULL) ENGINE=InnoDB" % table)
        t.root_query("INSERT INTO test.%s (id) SELECT seq FROM test.seq_1_to_100" % table)


def released_within(owner, secs):
    """Seconds until owner holds no claim in either table (None: still after secs)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < secs:
        if not any(claimed_by(owner).values()):
            return time.monotonic() - t0
        time.sleep(0.02)
    return None


def check_clean_end(p, w, o, x):
    """W claims, lives past the reaper's timeout without its login connection, quits."""
    wid, oid = own_id(w), own_id(o)
    mine = {"pq_reap": claim(w, "pq_reap", 3), "pq_rel": claim(w, "pq_rel", 3)}
    t.check(len(mine["pq_reap"]) == 3 and len(mine["pq_rel"]) == 3,
            "W claims 3 rows of each table with its own id %d" % wid, mine)
    # X's login needs room: O holds its connection, so W's (idle) is closed for it
    t.rows(o, "BEGIN")
    t.rows(o, "SELECT 1")
    x_conn = p.connect(autocommit=True)
    x.append(x_conn)
    t.rows(o, "COMMIT")
    xid = own_id(x_conn)
    gone = t.wait_until(lambda: listed(wid) == 0, timeout=5)
    t.check(gone, "W's login connection %d is closed to make room for X's login" % wid)
    others = {"o": (oid, claim(o, "pq_rel", 2)), "x": (xid, claim(x_conn, "pq_rel", 2))}
    time.sleep(TIMEOUT_S + 1.5)  # past the timeout and a few reaper rounds (every 0.5 s)
    t.rows(w, "SELECT 1")  # W still works, over a connection the others use too
    t.eq("a live session's claims survive the reaper after its login connection closed",
         mine, claimed_by(wid))
    w.close()
    t0 = time.monotonic()
    took = released_within(wid, 1.5)
    t.check(took is not None, "W's quit releases its rows at once (%s s), without waiting for "
            "a pooled connection" % (None if took is None else "%.2f" % took), claimed_by(wid))
    time.sleep(max(0, 3 - (time.monotonic() - t0)))  # a wait for a connection would end by now
    for name, (oid_, rows) in others.items():
        t.eq("%s's claims are untouched by W's release" % name.upper(),
             {"pq_reap": [], "pq_rel": rows}, claimed_by(oid_))
    t.eq("O still works after W's quit", ((1,),), t.rows(o, "SELECT 1"))
    t.eq("X still works after W's quit", ((1,),), t.rows(x_conn, "SELECT 1"))
    return others


def check_mid_unit(p, o, others):
    """W2's socket closes inside a transaction: the pool closes its connection."""
    w2 = p.connect(autocommit=True)
    w2id = own_id(w2)
    done = claim(w2, "pq_rel", 2)
    t.rows(w2, "BEGIN")
    open_ = claim(w2, "pq_rel", 2)
    t.check(len(done) == 2 and len(open_) == 4, "W2 claims 2 rows, then 2 more in a "
            "transaction", (done, open_))
    w2._execute_command(COM_QUERY, b"SELECT SLEEP(1.5)")  # running when W2 goes
    time.sleep(0.2)
    w2._sock.shutdown(socket.SHUT_RDWR)  # gone mid-unit, no COM_QUIT
    w2._sock.close()
    time.sleep(0.6)
    t.eq("W2's committed claims wait while its statement still runs on the connection the "
         "pool closed", {"pq_reap": [], "pq_rel": done}, claimed_by(w2id))
    took = released_within(w2id, 5)
    t.check(took is not None, "W2's claims are free %s s later, once that connection is gone"
            % (None if took is None else "%.2f" % took), claimed_by(w2id))
    back = t.root_query("SELECT COUNT(*) FROM test.pq_rel WHERE id IN (%s) AND status = "
                        "'unsent' AND owner = 0" % ",".join(str(i) for i in open_))[0][0]
    t.eq("the committed and the rolled back claims of W2 are all unclaimed", 4, back)
    t.eq("O's claims are untouched by W2's end", {"pq_reap": [], "pq_rel": others["o"][1]},
         claimed_by(others["o"][0]))
    t.eq("O still works after W2's end", ((1,),), t.rows(o, "SELECT 1"))


def prepare(c, sql):
    """A server-side prepare of sql (no parameters, no columns): its statement id."""
    c._execute_command(COM_STMT_PREPARE, sql)
    data = c._read_packet().get_all_data()
    ncols, nparams = struct.unpack("<HH", data[5:9])
    if ncols or nparams:
        raise RuntimeError("prepare of %r answered %d columns, %d parameters"
                           % (sql, ncols, nparams))
    return struct.unpack("<I", data[1:5])[0]


def execute(c, stmt_id):
    """Executes a prepared statement without parameters: its affected rows."""
    c._execute_command(COM_STMT_EXECUTE, struct.pack("<IBI", stmt_id, 0, 1))
    return pymysql.protocol.OKPacketWrapper(c._read_packet()).affected_rows


def check_prepared_claims(p):
    """A's login connection goes while its claim is prepared: the execute prepares it
    again elsewhere, still claiming for A; B prepares the same text and claims for B."""
    a, b = p.connect(autocommit=True), p.connect(autocommit=True)
    aid, bid = own_id(a), own_id(b)
    sa = prepare(a, PREPARED_CLAIM)
    first = execute(a, sa)
    t.rows(b, "BEGIN")  # B holds its connection: C's login takes the room of A's
    t.rows(b, "SELECT 1")
    c = p.connect(autocommit=True)
    t.rows(b, "COMMIT")
    gone = t.wait_until(lambda: listed(aid) == 0, timeout=5)
    second = execute(a, sa)  # on a connection that never saw the statement
    sb = prepare(b, PREPARED_CLAIM)
    third = execute(b, sb)
    t.check(gone and (first, second, third) == (1, 1, 1),
            "A's claim prepared once runs on its login connection and, once that is closed "
            "(%s), on another; B prepares the same text" % bool(gone), (first, second, third))
    t.eq("each execute of a prepared claim owns its row by the session's id",
         {"a": 2, "b": 1}, {"a": len(claimed_by(aid)["pq_rel"]),
                            "b": len(claimed_by(bid)["pq_rel"])})
    for conn in (a, b, c):
        conn.close()


def check_rewritten_claim(p, o):
    """SKIP LOCKED is added to the text: the rewrite still reads the session's own id."""
    oid = own_id(o)
    got = t.rows(o, "SELECT id, CONNECTION_ID() FROM test.pq_reap WHERE owner = CONNECTION_ID() "
                 "OR id = 100 ORDER BY id FOR UPDATE")
    t.eq("a rewritten claim (SKIP LOCKED) reads the session's own id", ((100, oid),), got)
    pins = [r for r in p.admin_dicts("SHOW PINS") if str(r.get("reason")) == "connection_id"]
    t.check(not pins or int(pins[0].get("pins_total", 0)) == 0,
            "CONNECTION_ID() in a rewritten claim pins nothing", pins)


def check_stored_bodies(o):
    """A trigger's or a view's CONNECTION_ID() is stored as written (evaluated where it
    runs), not frozen to the creating session's id."""
    t.rows(o, "CREATE OR REPLACE TRIGGER test.pq_owner BEFORE INSERT ON test.pq_rel FOR EACH ROW "
              "SET NEW.claimed_at = NOW(6), NEW.owner = IF(NEW.owner = 1, CONNECTION_ID(), 0)")
    t.rows(o, "CREATE OR REPLACE VIEW test.pq_view AS SELECT CONNECTION_ID() AS c")
    body = t.root_query("SELECT ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE "
                        "TRIGGER_NAME = 'pq_owner'")
    view = t.root_query("SELECT VIEW_DEFINITION FROM information_schema.VIEWS WHERE "
                        "TABLE_NAME = 'pq_view'")
    t.check(body and "connection_id()" in body[0][0].lower() and view and
            "connection_id()" in view[0][0].lower(),
            "CONNECTION_ID() in a trigger's and a view's body is stored as written", (body, view))
    t.root_query("DROP TRIGGER test.pq_owner")
    t.root_query("DROP VIEW test.pq_view")


def main():
    t.needs_own_proxy()
    setup()
    opts = {"pool": "transaction", "pool_size": 2, "pool_max_wait": "3s"}
    p = t.Proxy("pool_queue", rules=RULES, options=opts, own_conn=True, workers=1, admin=True)
    p.start()
    try:
        w, o = p.connect(autocommit=True), p.connect(autocommit=True)
        x = []
        others = check_clean_end(p, w, o, x)
        for c in x:
            c.close()
        check_mid_unit(p, o, others)
        check_rewritten_claim(p, o)
        check_prepared_claims(p)
        check_stored_bodies(o)
        o.close()
        time.sleep(0.3)
        log = p.log_text()
        t.check("killed it" not in log and "KILL CONNECTION" not in log,
                "the queue's release killed no connection",
                [ln for ln in log.splitlines() if "kill" in ln.lower()][:5])
    finally:
        t.eq("proxy exits 0 on SIGTERM", 0, p.stop())
    t.done()


if __name__ == "__main__":
    main()
