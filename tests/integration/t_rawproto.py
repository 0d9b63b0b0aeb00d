#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The proxy is byte-transparent, checked with a hand-written protocol client.

Client libraries never negotiate CLIENT_DEPRECATE_EOF, so the proxy's
DEPRECATE_EOF paths are only reachable from a client that speaks the wire
protocol itself: rawproto_lib.py is that client.

Each scenario runs four ways, {direct, proxy} x {EOF, DEPRECATE_EOF}, on a
fresh connection, recording every packet the server sends (sequence id and
payload; big payloads as length + sha1). For each EOF mode the proxy's
packets must equal mariadbd's, byte for byte. Masked, because they differ
between any two connections: the CONNECTION_ID() value, the numbers of
COM_STATISTICS, statement ids (mariadbd does not restart its counter per
connection; they are recorded as 1, 2, ... per connection, also inside the
error messages that name them) and the scramble of an auth switch request.

Then checks that only make sense through the proxy: the greeting's masked
capability bits, refused replication commands, a refused SSLRequest and
malformed command packets. With MR_DIRECT_ONLY=1 (or the proxy port equal to
the direct port) those are skipped and the comparisons run direct vs direct.
"""
import os
import re
import signal
import struct
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rawproto_lib as rp  # noqa: E402
from rawproto_lib import Conn  # noqa: E402

R = rp.Report("t_rawproto")
TAG = "%d" % os.getpid()
PROC_TWO = "rp_two_" + TAG
PROC_ERR = "rp_err_" + TAG
PROC_OUT = "rp_out_" + TAG

MODES = ((False, "EOF"), (True, "DEPRECATE_EOF"))
timeouts = 0


def want(c, cond, what):
    if not cond:
        c.problems.append(what)


def make_table(c, rows=1000):
    c.must("CREATE TEMPORARY TABLE rp_t ("
           " id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, i INT, big BIGINT UNSIGNED,"
           " s VARCHAR(64), d DECIMAL(12,3), f DOUBLE, dt DATETIME(6), dd DATE,"
           " b VARBINARY(32), e ENUM('red','green','blue'), n INT NULL)")
    c.must("INSERT INTO rp_t (i, big, s, d, f, dt, dd, b, e, n)"
           " SELECT CAST(seq AS SIGNED) - 500, seq * 4294967296 + seq,"
           " CONCAT('row-', seq, REPEAT('x', seq MOD 40)),"
           " seq / 7, seq * 1.5e10 / 3,"
           " TIMESTAMP'2001-02-03 04:05:06.123456' + INTERVAL seq MINUTE,"
           " DATE'2020-01-01' + INTERVAL seq DAY, UNHEX(SHA1(seq)),"
           " ELT(1 + seq MOD 3, 'red', 'green', 'blue'), IF(seq MOD 5 = 0, NULL, seq)"
           " FROM seq_1_to_%d" % rows)


# ---- scenarios: each gets a fresh authenticated connection ----

def sc_text_rows(c):
    make_table(c)
    r = c.query("SELECT * FROM rp_t ORDER BY id")
    want(c, r.kind == "rows" and len(r.rows) == 1000, "expected 1000 rows, got %s %d"
         % (r.kind, len(r.rows)))
    r = c.query(b"SELECT 1 AS i, -2.5 AS dec_, 'str' AS s, NULL AS nul, X'00FF' AS bin,"
                b" CAST(18446744073709551615 AS UNSIGNED) AS u, 1e300 AS dbl,"
                b" DATE'2020-02-29' AS dt, TIME'-838:59:59' AS tm, JSON_OBJECT('a', 1) AS js,"
                b" _latin1 'caf\xe9' AS l1, _utf8mb4 'caf\xc3\xa9 \xf0\x9f\x98\x80' AS u8")
    want(c, r.kind == "rows" and len(r.rows) == 1, "typed single row")


def sc_empty(c):
    make_table(c, 10)
    r = c.query("SELECT * FROM rp_t WHERE id < 0")
    want(c, r.kind == "rows" and not r.rows, "empty result set")
    r = c.query("SELECT 1 AS x FROM DUAL WHERE 0")
    want(c, r.kind == "rows" and not r.rows, "empty result set from DUAL")


def sc_ok(c):
    make_table(c, 10)
    r = c.query("INSERT INTO rp_t (i, s) VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    want(c, r.kind == "ok" and r.ok[0] == 3 and r.ok[1] > 10, "insert: %r" % (r.ok,))
    r = c.query("UPDATE rp_t SET i = i + 1 WHERE id <= 5")
    want(c, r.kind == "ok" and r.ok[0] == 5, "update affected rows: %r" % (r.ok,))
    c.query("INSERT INTO rp_t (id, i) VALUES (1, 0) ON DUPLICATE KEY UPDATE i = 99")
    c.query("DELETE FROM rp_t WHERE id > 10")
    c.query("SET @rp_x = 1")
    c.query("SELECT 1/0 AS div0")  # a result set with a warning
    c.query("SHOW WARNINGS")


def sc_err(c):
    r = c.query("SELECT * FROM rp_no_such_table")
    want(c, r.kind == "err" and r.err[0] == 1146, "no such table: %r" % (r.err,))
    r = c.query("SELEKT 1")
    want(c, r.kind == "err" and r.err[0] == 1064, "syntax error: %r" % (r.err,))
    r = c.query("SELECT seq, 60 - CAST(seq AS UNSIGNED) AS x FROM seq_1_to_100")
    want(c, r.kind == "err" and len(r.rows) == 60, "ERR after 60 rows: %s %d"
         % (r.kind, len(r.rows)))
    c.query("SELECT 1 AS still_fine")


def sc_wide(c):
    cols = ", ".join("%d AS c%d" % (k, k) for k in range(300))
    r = c.query("SELECT " + cols, label="select 300 columns")
    want(c, r.columns == 300 and len(r.rows) == 1, "300 columns: %d" % r.columns)
    r = c.query("SELECT %s FROM seq_1_to_3 UNION ALL SELECT %s" % (cols, cols),
                label="300 columns, 4 rows")
    want(c, len(r.rows) == 4, "300 columns, 4 rows")


def sc_multi(c):
    make_table(c, 20)
    r = c.query("SELECT 1 AS a, 'x' AS b; UPDATE rp_t SET i = i WHERE id < 5;"
                " SELECT id, s FROM rp_t ORDER BY id LIMIT 3; INSERT INTO rp_t (i) VALUES (7);"
                " SELECT * FROM rp_no_such_table; SELECT 2")
    want(c, r.kind == "err" and r.sets == 2, "multi: kind %s, %d sets" % (r.kind, r.sets))
    r = c.query("SELECT 3 AS a; SELECT 4 AS b; DO 1")
    want(c, r.kind == "ok" and r.sets == 2, "multi ending in OK")


def sc_call(c):
    r = c.query("CALL %s()" % PROC_TWO)
    want(c, r.kind == "ok" and r.sets == 2, "CALL: kind %s, %d sets" % (r.kind, r.sets))
    r = c.query("CALL %s()" % PROC_ERR)
    want(c, r.kind == "err" and r.sets == 1, "CALL with error: %s %d" % (r.kind, r.sets))
    c.query("CALL %s(4, @rp_out); SELECT @rp_out AS out_value" % PROC_OUT)


def sc_session_track(c):
    for sql in ("SET autocommit = 0", "SET time_zone = '+01:00'", "SET NAMES latin1",
                "SET NAMES utf8mb4", "USE test", "BEGIN", "SELECT 1 AS in_trx", "COMMIT",
                "SET autocommit = 1", "SET SESSION session_track_state_change = 1",
                "SET @rp_user_var = 1", "SET SESSION session_track_system_variables = '*'",
                "SET SESSION sql_mode = 'ANSI'", "SET SESSION sql_mode = DEFAULT"):
        c.query(sql)


def sc_init_db(c):
    r = c.simple(rp.COM_INIT_DB, b"information_schema", "init_db information_schema")
    want(c, r.kind == "ok", "init_db information_schema: %s" % r.kind)
    r = c.simple(rp.COM_INIT_DB, b"rp_no_such_db_" + TAG.encode(), "init_db missing")
    want(c, r.kind == "err" and r.err[0] == 1049, "init_db missing: %r" % (r.err,))
    c.simple(rp.COM_INIT_DB, rp.DB.encode(), "init_db back")
    c.query("SELECT DATABASE() AS db")


def sc_ping(c):
    for i in range(3):
        r = c.ping("ping %d" % i)
        want(c, r.kind == "ok", "ping %d: %s" % (i, r.kind))


def sc_statistics(c):
    c.masker = rp.mask_digits
    r = c.simple(rp.COM_STATISTICS, label="statistics")
    c.masker = None
    want(c, r.kind == "raw" and r.rows and r.rows[0].startswith(b"Uptime:"),
         "statistics string: %r" % (r.rows[:1],))
    c.ping()


def sc_field_list(c):
    make_table(c, 3)
    for table, wild in ((b"rp_t", b""), (b"rp_t", b"d%"), (b"rp_no_such_table", b"")):
        c.send_command(bytes([rp.COM_FIELD_LIST]) + table + b"\x00" + wild)
        r = c.read_field_list(c._logged("field_list %s %s" % (table, wild)))
        if table == b"rp_t" and not wild:
            want(c, r.kind == "eof" and r.columns == 11, "field list: %s %d" % (r.kind, r.columns))
    c.ping()


def sc_stmt_cursor(c):
    make_table(c)
    st = c.prepare("SELECT id, i, big, s, d, f, dt, dd, e, n FROM rp_t WHERE id > ? ORDER BY id")
    want(c, st.params == 1 and st.columns == 10, "prepare: %d params %d columns"
         % (st.params, st.columns))
    r = c.execute(st.stmt_id, [(rp.TYPE_LONG, 900)], label="execute binary")
    want(c, r.kind == "rows" and len(r.rows) == 100, "binary rows: %s %d" % (r.kind, len(r.rows)))
    r = c.execute(st.stmt_id, [(rp.TYPE_LONG, 950)], flags=rp.CURSOR_TYPE_READ_ONLY,
                  label="execute cursor")
    want(c, r.kind == "cursor", "cursor opened: %s status 0x%x" % (r.kind, r.status))
    total, batches = 0, 0
    while r.kind in ("cursor", "rows") and batches < 20:
        f = c.fetch(st.stmt_id, 7, "fetch %d" % batches)
        batches += 1
        if f.kind != "rows":
            want(c, False, "fetch %d: %s %r" % (batches, f.kind, f.err))
            break
        want(c, len(f.rows) <= 7, "fetch batch of %d rows" % len(f.rows))
        total += len(f.rows)
        if f.status & rp.SERVER_STATUS_LAST_ROW_SENT:
            break
    want(c, total == 50 and batches == 8, "fetched %d rows in %d batches" % (total, batches))
    r = c.simple(rp.COM_STMT_RESET, struct.pack("<I", st.stmt_id), "stmt_reset")
    want(c, r.kind == "ok", "stmt_reset: %s" % r.kind)
    # fetch after reset: the cursor is gone
    c.fetch(st.stmt_id, 7, "fetch after reset")
    c.send_command(struct.pack("<BI", rp.COM_STMT_CLOSE, st.stmt_id))
    r = c.ping("ping right after stmt_close")
    want(c, r.kind == "ok" and r.packets[0][0] == 1, "ping after close: %s" % r.kind)
    r = c.execute(st.stmt_id, [(rp.TYPE_LONG, 1)], label="execute closed stmt")
    want(c, r.kind == "err", "execute after close gives ERR")
    # A cursor over an empty result, and the cursor flag on a statement
    # without a result set.
    st = c.prepare("SELECT id, s FROM rp_t WHERE id > ?")
    r = c.execute(st.stmt_id, [(rp.TYPE_LONG, 5000)], flags=rp.CURSOR_TYPE_READ_ONLY,
                  label="execute cursor, empty result")
    f = c.fetch(st.stmt_id, 7, "fetch from empty cursor")
    want(c, f.kind == "rows" and not f.rows and f.status & rp.SERVER_STATUS_LAST_ROW_SENT,
         "empty cursor fetch: %s 0x%x" % (f.kind, f.status))
    r = c.execute(st.stmt_id, [(rp.TYPE_LONG, 993)], flags=rp.CURSOR_TYPE_READ_ONLY,
                  label="execute cursor again, 7 rows")
    f = c.fetch(st.stmt_id, 7, "fetch exactly 7")
    f = c.fetch(st.stmt_id, 7, "fetch past the end")
    st2 = c.prepare("DO ?")
    r = c.execute(st2.stmt_id, [(rp.TYPE_LONG, 1)], flags=rp.CURSOR_TYPE_READ_ONLY,
                  label="execute cursor flag on DO")
    want(c, r.kind == "ok", "cursor flag without result set: %s" % r.kind)
    c.ping()


def sc_stmt_long_data(c):
    st = c.prepare("SELECT ? AS blob_param, ? AS int_param, LENGTH(?) AS len")
    chunks = [bytes([65 + k]) * 30000 for k in range(3)]
    for param in (0, 2):
        for ch in chunks:
            c.send_command(struct.pack("<BIH", rp.COM_STMT_SEND_LONG_DATA, st.stmt_id, param) + ch)
    r = c.execute(st.stmt_id, [(rp.TYPE_BLOB, None), (rp.TYPE_LONG, 42), (rp.TYPE_BLOB, None)],
                  label="execute with long data", long_data={0, 2})
    want(c, r.kind == "rows" and len(r.rows) == 1 and r.row_lengths[0] > 90000,
         "long data row: %s %r" % (r.kind, r.row_lengths))
    c.simple(rp.COM_STMT_RESET, struct.pack("<I", st.stmt_id), "stmt_reset")
    r = c.execute(st.stmt_id, [(rp.TYPE_VAR_STRING, "short"), (rp.TYPE_LONG, None),
                               (rp.TYPE_VAR_STRING, "xyz")], label="execute after reset")
    want(c, r.kind == "rows" and len(r.rows) == 1, "execute after reset")


def sc_stmt_call(c):
    st = c.prepare("CALL %s(?, ?)" % PROC_OUT)
    r = c.execute(st.stmt_id, [(rp.TYPE_LONG, 21), (rp.TYPE_LONG, None)], label="execute CALL out")
    want(c, r.kind == "ok" and r.sets == 1, "CALL out params: %s %d" % (r.kind, r.sets))
    st2 = c.prepare("CALL %s()" % PROC_TWO)
    r = c.execute(st2.stmt_id, label="execute CALL two sets")
    want(c, r.kind == "ok" and r.sets == 2, "CALL two sets: %s %d" % (r.kind, r.sets))
    st3 = c.prepare("SELECT ? + 1 AS x, ? AS s")
    for v in (1, 2, None):
        c.execute(st3.stmt_id, [(rp.TYPE_LONGLONG, v), (rp.TYPE_VAR_STRING, "v%s" % v)],
                  label="execute %s" % v)
    r = c.execute(st3.stmt_id, [(rp.TYPE_LONG, 1)], label="execute with too few params")


def sc_load_local(c):
    c.must("CREATE TEMPORARY TABLE rp_load (a INT, b VARCHAR(40))")
    lines = b"".join(b"%d,name-%d\n" % (k, k * k) for k in range(1, 501))
    rec = c._logged("load data local infile")
    c.send_command(b"\x03LOAD DATA LOCAL INFILE 'rp_rows.csv' INTO TABLE rp_load"
                   b" FIELDS TERMINATED BY ','")
    r = c.read_result(rec)
    want(c, r.kind == "infile" and r.infile == b"rp_rows.csv", "infile request: %s %r"
         % (r.kind, r.infile))
    if r.kind == "infile":
        for k in range(0, len(lines), 1000):  # several packets
            c.send_payload(lines[k:k + 1000])
        c.send_payload(b"")
        r = c.read_result(rec)
        want(c, r.kind == "ok" and r.ok[0] == 500, "load data: %s %r" % (r.kind, r.ok))
    c.query("SELECT COUNT(*), SUM(a), MD5(GROUP_CONCAT(b ORDER BY a)) FROM rp_load")
    # An empty file: just the terminating empty packet.
    rec = c._logged("load data local infile (empty)")
    c.send_command(b"\x03LOAD DATA LOCAL INFILE 'rp_empty.csv' INTO TABLE rp_load")
    r = c.read_result(rec)
    if r.kind == "infile":
        c.send_payload(b"")
        r = c.read_result(rec)
    want(c, r.kind == "ok" and r.ok[0] == 0, "empty load data: %s" % r.kind)
    # The file request in the middle of a multi-statement response.
    rec = c._logged("load data inside a multi-statement")
    c.send_command(b"\x03SELECT 1 AS before_load; LOAD DATA LOCAL INFILE 'rp_more.csv'"
                   b" INTO TABLE rp_load FIELDS TERMINATED BY ','; SELECT COUNT(*) FROM rp_load")
    r = c.read_result(rec)
    want(c, r.kind == "infile" and r.sets == 1, "infile request after a result set: %s"
         % r.kind)
    if r.kind == "infile":
        c.send_payload(b"1000,x\n1001,y\n")
        c.send_payload(b"1002,z\n")
        c.send_payload(b"")
        r = c.read_result(rec, r)
        want(c, r.kind == "rows" and r.sets == 2, "multi-statement after load: %s %d"
             % (r.kind, r.sets))
    c.ping()


def sc_change_user(c):
    c.query("SET @rp_before = 1")
    r = c.change_user(rp.USER, rp.PASSWORD, rp.DB, "change_user")
    want(c, r.kind == "ok", "change_user: %s %r" % (r.kind, r.err))
    c.query("SELECT @rp_before AS v, DATABASE() AS db")
    r = c.change_user(rp.USER, rp.PASSWORD, "", "change_user without database")
    c.query("SELECT DATABASE() AS db")
    r = c.change_user(rp.USER, "wrong-" + rp.PASSWORD, rp.DB, "change_user wrong password")
    want(c, r.kind == "err", "change_user with a wrong password: %s" % r.kind)
    log_close(c, "after failed change_user")


def sc_kill_self(c):
    r = c.query("KILL %d" % c.greeting["thread_id"], label="KILL own connection")
    want(c, r.kind == "err", "KILL answers with ERR: %s" % r.kind)
    # Nothing more may arrive; the connection just closes. (A command sent
    # now could race the proxy noticing that the server hung up.)
    closed, seen, _ = c.drain_until_closed(3.0)
    c.log.append(("after KILL", [rp.record_of(s, p) for s, p in seen]
                  + [(-1, b"closed" if closed else b"still open")]))
    c.closed = True


def log_close(c, label):
    """Records whether the connection survived: a COM_PING's answer, or
    "closed" when the server hung up."""
    try:
        c.ping("ping " + label)
    except (rp.Closed, OSError):
        if c.log and c.log[-1][0] == "ping " + label and not c.log[-1][1]:
            c.log.pop()
        c.log.append((label, [(-1, b"closed")]))
        c.closed = True


def sc_reset_connection(c):
    make_table(c, 5)
    c.query("SET @rp_a = 5")
    st = c.prepare("SELECT 1")
    r = c.simple(rp.COM_RESET_CONNECTION, label="reset_connection")
    want(c, r.kind == "ok", "reset_connection: %s" % r.kind)
    r = c.query("SELECT @rp_a AS a")
    want(c, r.kind == "rows" and r.rows == [b"\xfb"], "user variable cleared: %r" % (r.rows,))
    r = c.query("SELECT COUNT(*) FROM rp_t")
    want(c, r.kind == "err" and r.err[0] == 1146, "temporary table dropped")
    r = c.execute(st.stmt_id, label="execute after reset")
    want(c, r.kind == "err", "statement dropped")


def sc_set_option(c):
    r = c.simple(rp.COM_SET_OPTION, struct.pack("<H", 1), "multi statements off")
    want(c, r.kind == "eof", "set_option off: %s" % r.kind)
    r = c.query("SELECT 1; SELECT 2")
    want(c, r.kind == "err", "multi statement refused")
    r = c.simple(rp.COM_SET_OPTION, struct.pack("<H", 0), "multi statements on")
    r = c.query("SELECT 1; SELECT 2")
    want(c, r.kind == "rows" and r.sets == 2, "multi statement accepted again")
    c.simple(rp.COM_SET_OPTION, struct.pack("<H", 7), "bad option")


def sc_big_rows(c):
    n = rp.MAX_PAYLOAD - 4  # 0xFD + 3 length bytes + data = exactly 0xFFFFFF
    r = c.query("SELECT REPEAT('a', %d) AS r" % n)
    want(c, r.row_lengths == [rp.MAX_PAYLOAD], "row of 0xFFFFFF: %r" % (r.row_lengths,))
    lens = [x[1][1] if isinstance(x[1], tuple) else len(x[1]) for x in r.packets]
    want(c, rp.MAX_PAYLOAD in lens and lens[lens.index(rp.MAX_PAYLOAD) + 1] == 0,
         "0xFFFFFF row followed by an empty packet")
    big = (1 << 24) + 4321
    r = c.query("SELECT REPEAT('b', %d) AS r" % big)
    want(c, r.row_lengths == [big + 9], "row > 16 MiB: %r" % (r.row_lengths,))
    r = c.query("SELECT REPEAT('c', %d) AS r UNION ALL SELECT 'small' UNION ALL"
                " SELECT REPEAT('d', %d)" % (big, n - 5))
    want(c, len(r.row_lengths) == 3, "three rows: %r" % (r.row_lengths,))
    st = c.prepare("SELECT REPEAT('e', ?) AS r, 1 AS one")
    c.execute(st.stmt_id, [(rp.TYPE_LONG, big)], label="binary row > 16 MiB")
    c.ping()


def sc_big_query(c):
    for total in (rp.MAX_PAYLOAD, (1 << 24) + 777):
        head, tail = b"\x03SELECT LENGTH('", b"') AS n, 'end' AS e"
        sql = head + b"q" * (total - len(head) - len(tail)) + tail
        assert len(sql) == total
        c.send_command(sql)
        r = c.read_result(c._logged("query of %d bytes" % total))
        want(c, r.kind == "rows" and len(r.rows) == 1, "big query answered: %s %r"
             % (r.kind, r.err))
    c.ping()


def sc_pipeline(c):
    st = c.prepare("SELECT ? + 1 AS x")
    data = b"".join(rp.frame(p, 0)[0] for p in (
        bytes([rp.COM_PING]),
        b"\x03SELECT seq, seq * 2 AS d FROM seq_1_to_50",
        struct.pack("<BI", rp.COM_STMT_CLOSE, st.stmt_id),
        b"\x03SELECT 'after close' AS a; SELECT 'second' AS b"))
    c.sock.sendall(data)
    r1 = c.read_one(c._logged("pipelined ping"))
    r2 = c.read_result(c._logged("pipelined query"))
    r3 = c.read_result(c._logged("pipelined query after stmt_close"))
    want(c, (r1.kind, r2.kind, r3.kind) == ("ok", "rows", "rows") and len(r2.rows) == 50
         and r3.sets == 2, "pipelined responses: %s %s %s" % (r1.kind, r2.kind, r3.kind))
    # Prepare, execute (the id the server will assign), close and ping at once.
    nid = st.stmt_id + 1
    data = b"".join(rp.frame(p, 0)[0] for p in (
        b"\x16SELECT ? * 3 AS y, 'p' AS z",
        rp.execute_packet(nid, [(rp.TYPE_LONG, 14)]),
        struct.pack("<BI", rp.COM_STMT_CLOSE, nid),
        b"\x03SELECT * FROM rp_no_such_table",
        bytes([rp.COM_PING])))
    c.sock.sendall(data)
    p = c.read_prepare(c._logged("pipelined prepare"))
    e = c.read_result(c._logged("pipelined execute"))
    q = c.read_result(c._logged("pipelined error"))
    g = c.read_one(c._logged("pipelined ping 2"))
    want(c, (p.kind, e.kind, q.kind, g.kind) == ("ok", "rows", "err", "ok") and p.stmt_id == nid,
         "second pipeline: %s %s %s %s" % (p.kind, e.kind, q.kind, g.kind))


def sc_connection_id(c):
    cid = str(c.greeting["thread_id"]).encode()
    row = rp.lenenc_int(len(cid)) + cid
    c.masker = lambda p: b"<CONNECTION_ID>" if p == row else p
    r = c.query("SELECT CONNECTION_ID() AS cid")
    c.masker = None
    want(c, r.rows == [row], "CONNECTION_ID() %r equals the greeting's thread id %r"
         % (r.rows, cid))


def sc_auth_switch(c):
    # Claim a plugin the account does not use: the server asks to switch.
    c2 = Conn(c.port, c.deprecate_eof, plugin=b"caching_sha2_password", auth_data=b"\x01" * 32)
    try:
        masked = []
        for seq, p in c2.auth_packets:
            if p[:1] == b"\xfe":
                p = p[:p.index(0, 1) + 1] + b"<scramble>"
            masked.append((seq, p))
        c.log.append(("auth with switch", masked))
        want(c, getattr(c2, "switched_to", None) == b"mysql_native_password",
             "auth switch requested")
        c2.log = c.log
        c2.ping("ping after auth switch")
        c2.query("SELECT CURRENT_USER() AS u")
    finally:
        c2.close()


def sc_auth_empty_db(c):
    c2 = Conn(c.port, c.deprecate_eof, db="")
    try:
        c.log.append(("auth without database", c2.auth_packets))
        c2.log = c.log
        c2.query("SELECT DATABASE() AS db")
    finally:
        c2.close()


SCENARIOS = [
    ("text query, many column types, 1000 rows", sc_text_rows),
    ("empty result set", sc_empty),
    ("OK packets: insert/update affected rows, insert id", sc_ok),
    ("ERR packets", sc_err),
    ("multi-statement: result sets, OKs and an error", sc_multi),
    ("CALL: two result sets, error, out parameter", sc_call),
    ("session state tracking in OK packets", sc_session_track),
    ("result sets of 300 columns", sc_wide),
    ("COM_INIT_DB", sc_init_db),
    ("COM_PING", sc_ping),
    ("COM_STATISTICS", sc_statistics),
    ("COM_FIELD_LIST", sc_field_list),
    ("prepared statement: binary rows, cursor fetch by 7, reset, close + ping", sc_stmt_cursor),
    ("COM_STMT_SEND_LONG_DATA then execute", sc_stmt_long_data),
    ("prepared CALL with out parameter and two result sets", sc_stmt_call),
    ("LOAD DATA LOCAL INFILE", sc_load_local),
    ("COM_RESET_CONNECTION", sc_reset_connection),
    ("COM_SET_OPTION", sc_set_option),
    ("rows of 0xFFFFFF and > 16 MiB (continuation packets)", sc_big_rows),
    ("client packets of 0xFFFFFF and > 16 MiB", sc_big_query),
    ("pipelined commands in one write", sc_pipeline),
    ("CONNECTION_ID() matches the greeting", sc_connection_id),
    ("auth switch request", sc_auth_switch),
    ("connect without a database", sc_auth_empty_db),
    ("COM_CHANGE_USER, also with a wrong password", sc_change_user),
    ("KILL of the own connection", sc_kill_self),
]


def run_scenario(fn, port, dep):
    """Returns (log, problems, error text or None)."""
    c = None
    log = []
    try:
        c = Conn(port, dep)
        c.problems = []
        log = c.log
        log.append(("auth", list(c.auth_packets)))
        c.closed = False
        fn(c)
        if c.closed:
            return log, c.problems, None
        # COM_QUIT: no answer, the connection just closes.
        c.send_command(bytes([rp.COM_QUIT]))
        closed, seen, _ = c.drain_until_closed(2.0)
        log.append(("quit", [rp.record_of(s, p) for s, p in seen] + ([(-1, b"closed")] if closed
                                                                      else [])))
        return log, c.problems, None
    except Exception as e:  # a hang or protocol error ends this scenario only
        global timeouts
        if isinstance(e, rp.Timeout):
            timeouts += 1
            if timeouts == 3:
                rp.TIMEOUT = 1.5
                print("# 3 reads timed out: waiting at most %.1fs from now on" % rp.TIMEOUT,
                      flush=True)
        detail = "%s: %s" % (type(e).__name__, e)
        if not isinstance(e, rp.ProtoError):
            detail += "\n" + traceback.format_exc(limit=3)
        return log, (c.problems if c is not None and hasattr(c, "problems") else []), detail
    finally:
        if c is not None:
            c.close()


def compare_all():
    for dep, mode in MODES:
        for name, fn in SCENARIOS:
            dlog, dprob, derr = run_scenario(fn, rp.DIRECT_PORT, dep)
            ok_direct = derr is None and not dprob
            R.check(ok_direct, "direct [%s] %s" % (mode, name),
                    "\n".join(([derr] if derr else []) + dprob))
            plog, pprob, perr = run_scenario(fn, rp.PROXY_PORT, dep)
            diff = rp.diff_logs(dlog, plog)
            desc = "proxy = direct, byte for byte [%s] %s" % (mode, name)
            if perr is None and diff is None:
                R.ok(desc)
            else:
                R.not_ok(desc, "\n".join(x for x in (perr, diff) if x))


# ---- proxy-only checks ----

def check_greeting():
    d = Conn(rp.DIRECT_PORT, connect=False)
    p = Conn(rp.PROXY_PORT, connect=False)
    try:
        gd, gp = d.read_greeting(), p.read_greeting()
    finally:
        d.close()
        p.close()
    masked_in_direct = gd["caps"] & rp.PROXY_MASKED_CAPS
    masked_only = rp.PROXY_MASKED_CAPS & ~rp.PROXY_OFFERED_CAPS
    R.check(gp["caps"] & masked_only == 0 and
            gp["caps"] & rp.PROXY_OFFERED_CAPS == rp.PROXY_OFFERED_CAPS,
            "proxy greeting: masked capability bits cleared (direct has 0x%08x of them), the "
            "proxy's own offers (zstd) set" % masked_in_direct, "proxy caps 0x%08x" % gp["caps"])
    R.check(gp["caps"] == gd["caps"] & ~rp.PROXY_MASKED_CAPS | rp.PROXY_OFFERED_CAPS,
            "proxy greeting: other capability bits equal to direct",
            "direct 0x%08x proxy 0x%08x" % (gd["caps"], gp["caps"]))
    if gd["mariadb"]:
        R.check(gp["ext_caps"] == gd["ext_caps"] & rp.PROXY_RELAYED_EXT_CAPS,
                "proxy greeting: MariaDB extended capabilities the proxy relays kept, the "
                "others cleared (direct 0x%08x)" % gd["ext_caps"], "proxy 0x%08x" % gp["ext_caps"])
    same = all(gd[k] == gp[k] for k in ("protocol", "version", "charset", "status",
                                        "auth_len", "plugin", "seq"))
    keys = ("version", "charset", "status", "plugin")
    R.check(same, "proxy greeting: version, charset, status, plugin as direct",
            "direct %r\nproxy  %r" % ({k: gd[k] for k in keys}, {k: gp[k] for k in keys}))
    # Whole greeting: direct's bytes with the proxy's thread id and scramble
    # and the masked capabilities must be exactly what the proxy sent.
    exp = bytearray(gd["raw"])
    if len(exp) == len(gp["raw"]):
        o = gd["thread_id_off"]
        exp[o:o + 4] = gp["raw"][o:o + 4]
        o = gd["scramble1_off"]
        exp[o:o + 8] = gp["raw"][o:o + 8]
        if gd["scramble2_off"] is not None:
            o, n = gd["scramble2_off"], gd["scramble2_len"]
            exp[o:o + n] = gp["raw"][o:o + n]
        caps = gd["caps"] & ~rp.PROXY_MASKED_CAPS | rp.PROXY_OFFERED_CAPS
        exp[gd["caps_lo_off"]:gd["caps_lo_off"] + 2] = struct.pack("<H", caps & 0xFFFF)
        if "caps_hi_off" in gd:
            exp[gd["caps_hi_off"]:gd["caps_hi_off"] + 2] = struct.pack("<H", caps >> 16)
        if gd["mariadb"] and "ext_caps_off" in gd:
            exp[gd["ext_caps_off"]:gd["ext_caps_off"] + 4] = struct.pack(
                "<I", gd["ext_caps"] & rp.PROXY_RELAYED_EXT_CAPS)
    diff = rp.diff_logs([("greeting", [(gd["seq"], bytes(exp))])],
                        [("greeting", [(gp["seq"], gp["raw"])])], "expect", "proxy")
    R.check(diff is None, "proxy greeting: identical to direct apart from thread id, scramble"
            " and masked bits", diff)


def check_refused(dep, mode):
    c = Conn(rp.PROXY_PORT, dep)
    try:
        cmds = [
            ("COM_BINLOG_DUMP", struct.pack("<BIHI", rp.COM_BINLOG_DUMP, 4, 0, 4242)
             + b"mysql-bin.000001"),
            ("COM_REGISTER_SLAVE", struct.pack("<BI", rp.COM_REGISTER_SLAVE, 4242)
             + b"\x04host\x00\x00" + struct.pack("<HII", 3306, 0, 0)),
            ("COM_REGISTER_SLAVE of 17 MiB",
             bytes([rp.COM_REGISTER_SLAVE]) + b"z" * ((1 << 24) + 99)),
        ]
        for name, payload in cmds:
            t0 = time.monotonic()
            c.send_command(payload)
            r = c.read_one([])
            took = time.monotonic() - t0
            seq = r.packets[0][0] if r.packets else None
            R.check(r.kind == "err" and r.err[0] == 1047 and seq == 1 and took < 2,
                    "proxy [%s] %s refused with ERR 1047" % (mode, name),
                    "%s %r seq=%s %.2fs %s" % (r.kind, r.err, seq, took,
                                               rp.hexhead(r.packets[0]) if r.packets else ""))
            r = c.ping()
            R.check(r.kind == "ok", "proxy [%s] COM_PING works after %s" % (mode, name),
                    "%s %r" % (r.kind, r.packets[:2]))
        # Refused command and a ping in one write.
        data = rp.frame(cmds[0][1], 0)[0] + rp.frame(bytes([rp.COM_PING]), 0)[0]
        c.sock.sendall(data)
        a, b = c.read_one([]), c.read_one([])
        R.check((a.kind, b.kind) == ("err", "ok"),
                "proxy [%s] refused command then COM_PING in one write: ERR, OK" % mode,
                "%s %s" % (a.kind, b.kind))
        r = c.query("SELECT 'still here' AS s")
        R.check(r.kind == "rows" and len(r.rows) == 1, "proxy [%s] queries work after refusals"
                % mode)
    except rp.ProtoError as e:
        R.not_ok("proxy [%s] refused commands" % mode, "%s: %s" % (type(e).__name__, e))
    finally:
        c.close()


def check_ssl_request():
    c = Conn(rp.PROXY_PORT, connect=False)
    try:
        c.read_greeting()
        flags = rp.BASE_FLAGS | rp.CLIENT_SSL
        t0 = time.monotonic()
        c.send_payload(struct.pack("<IIB", flags, 1 << 30, 45) + b"\x00" * 23)
        closed, seen, _ = c.drain_until_closed(3.0)
        took = time.monotonic() - t0
        first = seen[0] if seen else None
        R.check(first is not None and first[1][:1] == b"\xff" and first[0] == 2,
                "proxy: SSLRequest answered with an ERR packet (seq 2)",
                rp.hexhead(first) if first else "nothing received")
        if first is not None and first[1][:1] == b"\xff":
            print("   # %d %s" % rp.parse_err(first[1]), flush=True)
        R.check(closed and took < 2.0, "proxy: connection closed promptly after SSLRequest",
                "closed=%s after %.2fs, %d packets" % (closed, took, len(seen)))
    finally:
        c.close()


def check_malformed(desc, raw):
    other = Conn(rp.PROXY_PORT, False)
    c = Conn(rp.PROXY_PORT, True)
    try:
        c.sock.sendall(raw)
        closed, seen, took = c.drain_until_closed(3.0)
        R.check(closed and took < 2.0, "proxy: %s closes the connection" % desc,
                "closed=%s after %.2fs; received %s" % (closed, took,
                                                        [rp.hexhead(x) for x in seen]))
        r = other.ping()
        R.check(r.kind == "ok", "proxy: another connection still works after %s" % desc)
        fresh = Conn(rp.PROXY_PORT, False)
        try:
            R.check(fresh.ping().kind == "ok", "proxy: new connections work after %s" % desc)
        finally:
            fresh.close()
    except rp.ProtoError as e:
        R.not_ok("proxy: %s" % desc, "%s: %s" % (type(e).__name__, e))
    finally:
        c.close()
        other.close()


def proxy_checks():
    check_greeting()
    for dep, mode in MODES:
        check_refused(dep, mode)
    check_ssl_request()
    check_malformed("command packet with sequence id 1", b"\x01\x00\x00\x01\x0e")
    check_malformed("command packet with an empty payload", b"\x00\x00\x00\x00")


# ---- setup ----

def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass
    return True


def setup():
    c = Conn(rp.DIRECT_PORT)
    try:
        # Procedures left behind by runs that were killed before teardown.
        r = c.must("SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE"
                   " ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME LIKE 'rp\\_%'")
        for row in r.rows:
            name = row[1:].decode()
            m = re.match(r"rp_(two|err|out)_(\d+)$", name)
            if m and not pid_alive(int(m.group(2))):
                c.must("DROP PROCEDURE IF EXISTS %s" % name)
        for name in (PROC_TWO, PROC_ERR, PROC_OUT):
            c.must("DROP PROCEDURE IF EXISTS %s" % name)
        c.must("CREATE PROCEDURE %s() BEGIN SELECT 1 AS one, 'first' AS label;"
               " SELECT seq, seq * seq AS sq FROM seq_1_to_5; END" % PROC_TWO)
        c.must("CREATE PROCEDURE %s() BEGIN SELECT 1 AS one;"
               " SELECT * FROM rp_no_such_table; END" % PROC_ERR)
        c.must("CREATE PROCEDURE %s(IN a INT, OUT b INT) BEGIN SET b = a * 2; END" % PROC_OUT)
    finally:
        c.close()


def teardown():
    try:
        c = Conn(rp.DIRECT_PORT)
        for name in (PROC_TWO, PROC_ERR, PROC_OUT):
            c.query("DROP PROCEDURE IF EXISTS %s" % name)
        c.close()
    except Exception as e:
        print("# teardown: %s" % e, flush=True)


def on_sigterm(signum, frame):
    raise SystemExit("terminated")


def main():
    signal.signal(signal.SIGTERM, on_sigterm)
    t0 = time.monotonic()
    if rp.DIRECT_ONLY:
        print("# direct only: comparing mariadbd with itself, proxy checks skipped", flush=True)
    try:
        setup()
    except Exception as e:
        R.not_ok("setup (direct connection to %s:%d)" % (rp.HOST, rp.DIRECT_PORT), repr(e))
        R.finish()
    try:
        compare_all()
        if rp.DIRECT_ONLY:
            R.skip("proxy-only checks", "no proxy in direct mode")
        else:
            proxy_checks()
    finally:
        teardown()
    print("# %.1fs" % (time.monotonic() - t0), flush=True)
    R.finish()


if __name__ == "__main__":
    main()
