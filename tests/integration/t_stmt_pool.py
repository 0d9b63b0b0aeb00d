#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The pool's prepared statements across server connections, against a real
mariadbd: what src/pool/ and proto/stmt_rewrite.c produce is what the server
accepts, and it answers as one connection would.

One client's commands run two ways: as they are on one direct connection
(the reference), and through mr_stmt_pool_tool (the pool machinery, driven
line by line) over two server connections A and B, the way a pooled session
would borrow them: each statement prepared on demand where it runs (the
prepare's answer consumed), ids rewritten, the parameter types the client
bound last put into an execute that binds none, long data sent again,
RESET / FETCH / CLOSE with the connection's ids, a bulk execute without
types, eviction from a cache of 2 (the evicted statement closed and
prepared again on demand), MariaDB's direct execution (prepare and an
execute naming 0xffffffff in one write, no round trip), and 0xffffffff from
the client: its last prepared, none after a failed prepare. Every result must
be the reference's, byte for byte (binary rows). One control shows the
types matter: the same execute with its id alone rewritten gets another
answer from the server.

This test talks to mariadbd directly (MR_DIRECT_PORT): the proxy does not
use the pool yet. Needs the build's mr_stmt_pool_tool.
"""
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rawproto_lib as rp  # noqa: E402
from rawproto_lib import Conn  # noqa: E402

R = rp.Report("t_stmt_pool")
BIN = os.environ.get("MR_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                            "myrewrite"))
TOOL = os.path.join(os.path.dirname(os.path.abspath(os.environ.get("MR_BIN_REAL", BIN))),
                    "tests", "integration", "mr_stmt_pool_tool")
TABLE = "sp_t_%d" % os.getpid()
LONG, LONGLONG, VAR_STRING, BLOB = rp.TYPE_LONG, rp.TYPE_LONGLONG, rp.TYPE_VAR_STRING, rp.TYPE_BLOB
ANY_ID = 0xFFFFFFFF
MARIADB_CLIENT_STMT_BULK_OPERATIONS = 1 << 2  # of the extended capabilities


class BulkConn(Conn):
    """A connection that asks for MariaDB's bulk execute (the extended
    capabilities in the last 4 filler bytes; CLIENT_LONG_PASSWORD clear)."""

    def handshake_response(self, *args, **kwargs):
        p = bytearray(super().handshake_response(*args, **kwargs))
        flags = struct.unpack_from("<I", p, 0)[0] & ~rp.CLIENT_LONG_PASSWORD
        struct.pack_into("<I", p, 0, flags)
        struct.pack_into("<I", p, 28, MARIADB_CLIENT_STMT_BULK_OPERATIONS)
        return bytes(p)


class Tool:
    def __init__(self):
        self.p = subprocess.Popen([TOOL], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def ask(self, line):
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()
        out = self.p.stdout.readline().decode().split()
        if not out:
            raise rp.ProtoError("mr_stmt_pool_tool ended (exit %s)" % self.p.poll())
        return out

    def send(self, line):
        out = self.ask(line)
        if out[0] != "send":
            raise rp.ProtoError("%s: %s" % (line.split()[0], " ".join(out)))
        return bytes.fromhex(out[1]) if len(out) > 1 else b""

    def close(self):
        self.p.stdin.close()
        return self.p.wait(timeout=10)


def exec_payload(stmt_id, params, bind=True, flags=0, long_data=()):
    """COM_STMT_EXECUTE; params (type, value); bind=False sends no types."""
    p = rp.execute_packet(stmt_id, params, flags, long_data)
    if bind or not params:
        return p
    k = 10 + (len(params) + 7) // 8
    return p[:k] + b"\x00" + p[k + 1 + 2 * len(params):]


def bulk_payload(stmt_id, rows, types=None):
    """COM_STMT_BULK_EXECUTE of (LONG, VAR_STRING) rows; types: send them."""
    p = struct.pack("<BIH", 0xFA, stmt_id, 128 if types else 0)
    if types:
        p += b"".join(bytes([t, 0]) for t in types)
    for i, s in rows:
        p += b"\x00" + struct.pack("<i", i) + b"\x00" + rp.lenenc_int(len(s)) + s.encode()
    return p


def read_prepare_raw(c):
    """A prepare's answer: (the prepare-OK payload or None on ERR, err)."""
    rec = []
    _, p = c.read_packet(rec)
    if p[:1] == b"\xff":
        return None, rp.parse_err(p)
    _, cols, params = struct.unpack_from("<IHH", p, 1)
    for count in (params, cols):
        for _ in range(count):
            c.read_packet(rec)
        if count and not c.deprecate_eof:
            c.read_packet(rec)
    return p, None


def summary(res):
    """What a result is, to compare: kind, rows (binary, byte for byte), error code."""
    if res.kind == "err":
        return ("err", res.err[0])
    if res.kind == "ok":
        return ("ok", res.ok[0])
    return (res.kind, [bytes(r) for r in res.rows])


class Session:
    """One client: its commands on the reference connection D, and through the
    tool on connections A (0) and B (1)."""

    def __init__(self, conn_class=Conn):
        self.d = conn_class(rp.DIRECT_PORT)
        self.conns = [conn_class(rp.DIRECT_PORT), conn_class(rp.DIRECT_PORT)]
        self.tool = Tool()
        self.dids = {}  # the client's id -> D's
        self.sent = b""  # what the tool gave for the last command

    def close(self):
        for c in [self.d] + self.conns:
            c.close()
        return self.tool.close()

    def prepare(self, sql, k):
        """The client prepares sql; the pool relays it to connection k."""
        text = sql.encode()
        self.d.send_command(bytes([rp.COM_STMT_PREPARE]) + text)
        dp, err = read_prepare_raw(self.d)
        if err:
            raise rp.ServerError(*err)
        c = self.conns[k]
        c.send_command(bytes([rp.COM_STMT_PREPARE]) + text)
        p, err = read_prepare_raw(c)
        if err:
            raise rp.ServerError(*err)
        _, cols, params = struct.unpack_from("<IHH", p, 1)
        cid = int(self.tool.ask("prepare %d %d %s" % (params, cols, text.hex()))[1])
        self.on_prepared(k, cid, p)
        self.dids[cid] = struct.unpack_from("<I", dp, 1)[0]
        return cid

    def on_prepared(self, k, cid, p):
        out = self.tool.ask("prepare-ok %d %d %s" % (k, cid, p.hex()))
        if out[0] != "sid":
            raise rp.ProtoError("prepare-ok: " + " ".join(out))
        for i in range(2, len(out), 2):  # evicted: closed (no answer)
            self.conns[k].send_command(struct.pack("<BI", rp.COM_STMT_CLOSE, int(out[i + 1])))

    def ensure(self, k, cid):
        """Before an execute on connection k: the statement there, prepared on
        demand (the answer is the pool's, not the client's)."""
        if self.tool.ask("find %d %d" % (k, cid))[0] == "hit":
            return False
        c = self.conns[k]
        c.sock.sendall(self.tool.send("prepare-packet %d" % cid))
        p, err = read_prepare_raw(c)
        if err:
            raise rp.ServerError(*err)
        self.on_prepared(k, cid, p)
        return True

    def direct(self, payload, read="result", cursor=False):
        """The client's command on D, with D's id."""
        p = bytearray(payload)
        cid = struct.unpack_from("<I", p, 1)[0]
        struct.pack_into("<I", p, 1, self.dids.get(cid, cid))
        self.d.send_command(bytes(p))
        return self.read(self.d, read, cursor)

    @staticmethod
    def read(c, read, cursor=False):
        if read == "result":
            return c.read_result([], cursor=cursor)
        if read == "rows":
            return c.read_rows([])
        if read == "one":
            return c.read_one([])
        return None

    def pooled(self, k, verb, payload, read="result", cursor=False):
        """The client's command through the tool on connection k."""
        cid = struct.unpack_from("<I", payload, 1)[0]
        if verb in ("exec", "bulk"):
            self.ensure(k, cid)
        self.sent = self.tool.send("%s %d %s" % (verb, k, payload.hex()))
        self.conns[k].sock.sendall(self.sent)
        return self.read(self.conns[k], read, cursor)

    def both(self, k, verb, payload, read="result", cursor=False, what=""):
        want = self.direct(payload, read, cursor)
        got = self.pooled(k, verb, payload, read, cursor)
        if read is None:
            return
        return R.check(summary(got) == summary(want) and got.kind != "err", what,
                       "pooled %r\ndirect %r" % (summary(got), summary(want)))


def types_of_sent(s):
    """The new-params-bound flag of the execute the tool sent last (its last packet)."""
    at, last = 0, None
    while at < len(s):
        n = s[at] | s[at + 1] << 8 | s[at + 2] << 16
        last = s[at + 4:at + 4 + n]
        at += 4 + n
    return last


def sc_types():
    s = Session()
    try:
        sql = "SELECT ? AS a, CONCAT(?, 'x') AS b, ? + 1 AS c"
        cid = s.prepare(sql, 0)
        bound = [(LONGLONG, 7), (VAR_STRING, "ab"), (LONG, 41)]
        s.both(0, "exec", exec_payload(cid, bound), what="types bound on A")
        bare = [(LONGLONG, 8), (VAR_STRING, "cd"), (LONG, 5)]
        s.both(1, "exec", exec_payload(cid, bare, bind=False),
               what="no types on B: prepared there on demand, the last types put in")
        R.check(types_of_sent(s.sent)[11] == 1, "the execute sent to B binds the types")
        # the control: the same execute with its id alone rewritten
        c = s.conns[1]
        c.send_command(bytes([rp.COM_STMT_PREPARE]) + sql.encode())
        p, _ = read_prepare_raw(c)
        sid = struct.unpack_from("<I", p, 1)[0]
        c.send_command(exec_payload(sid, bare, bind=False))
        control = c.read_result([])
        want = s.direct(exec_payload(cid, bare, bind=False))
        R.check(summary(control) != summary(want),
                "control: without the types the server answers otherwise",
                "control %r\ndirect %r" % (summary(control), summary(want)))
        c.send_command(struct.pack("<BI", rp.COM_STMT_CLOSE, sid))
        s.both(1, "exec", exec_payload(cid, bare, bind=False),
               what="no types on B again: B has them now")
        R.check(types_of_sent(s.sent)[11] == 0, "the second execute on B goes without types")
        newer = [(VAR_STRING, "9"), (VAR_STRING, "ef"), (VAR_STRING, "3")]
        s.both(1, "exec", exec_payload(cid, newer), what="new types bound on B")
        s.both(0, "exec", exec_payload(cid, newer, bind=False),
               what="no types on A after new ones on B: the new ones put in")
        R.check(types_of_sent(s.sent)[11] == 1 and types_of_sent(s.sent)[12] == VAR_STRING,
                "A gets B's newer types")
    finally:
        R.check(s.close() == 0, "mr_stmt_pool_tool exits 0 (types)")


def long_piece(cid, param, data):
    return struct.pack("<BIH", rp.COM_STMT_SEND_LONG_DATA, cid, param) + data


def sc_long_data():
    s = Session()
    try:
        cid = s.prepare("SELECT LENGTH(?) AS n, MD5(?) AS h, ? AS v", 0)
        pieces = [long_piece(cid, 0, bytes([65 + i]) * 3000) for i in range(3)]
        pieces.append(long_piece(cid, 1, b"tail"))
        for p in pieces:
            s.direct(p, read=None)
            R.check(s.tool.ask("long-data " + p.hex())[0] == "kept", "long data kept")
        params = [(BLOB, None), (VAR_STRING, None), (LONG, 3)]
        s.both(1, "exec", exec_payload(cid, params, long_data=(0, 1)),
               what="long data sent again on B before the execute")
        sent_cmds = []
        at = 0
        while at < len(s.sent):
            n = s.sent[at] | s.sent[at + 1] << 8 | s.sent[at + 2] << 16
            sent_cmds.append(s.sent[at + 4])
            at += 4 + n
        R.check(sent_cmds == [rp.COM_STMT_SEND_LONG_DATA] * 4 + [rp.COM_STMT_EXECUTE],
                "B got the four pieces then the execute", sent_cmds)
        # the server forgets long data at an execute (sql_prepare.cc, reset_stmt_params), and so
        # does the map: the same execute again, its values still left out, is refused alike
        stale = exec_payload(cid, params, long_data=(0, 1))
        want = s.direct(stale)
        got = s.pooled(0, "exec", stale)
        R.check(want.kind == "err" and summary(got) == summary(want),
                "long data is gone after the execute, on the server and in the map",
                (summary(got), summary(want)))
        again = [(BLOB, "short"), (VAR_STRING, "x"), (LONG, 4)]
        s.both(0, "exec", exec_payload(cid, again),
               what="the next execute on A: the pieces are not sent again")
        R.check(s.sent[4] == rp.COM_STMT_EXECUTE, "A got the execute alone")
    finally:
        R.check(s.close() == 0, "mr_stmt_pool_tool exits 0 (long data)")


def sc_cursor():
    s = Session()
    try:
        cid = s.prepare("SELECT seq FROM seq_1_to_10 WHERE seq > ?", 0)
        s.both(1, "exec", exec_payload(cid, [(LONG, 3)], flags=rp.CURSOR_TYPE_READ_ONLY),
               cursor=True, what="a cursor opened on B")
        fetch = struct.pack("<BII", rp.COM_STMT_FETCH, cid, 4)
        s.both(1, "cmd", fetch, read="rows", what="FETCH with B's id")
        s.both(1, "cmd", struct.pack("<BI", rp.COM_STMT_RESET, cid), read="one",
               what="RESET with B's id")
        want = s.direct(fetch, read="rows")
        got = s.pooled(1, "cmd", fetch, read="rows")
        R.check(summary(got) == summary(want) and got.kind == "err",
                "FETCH after RESET fails alike (the cursor is gone)", (summary(got), summary(want)))
        close = struct.pack("<BI", rp.COM_STMT_CLOSE, cid)
        s.both(1, "cmd", close, read=None)
        R.check(s.conns[1].ping().kind == "ok", "B answers a ping after CLOSE (no answer to it)")
        # the pool still maps the client's id to B's closed one: the server says so
        got = s.pooled(1, "exec", exec_payload(cid, [(LONG, 3)]))
        R.check(got.kind == "err" and got.err[0] == rp.ER_UNKNOWN_STMT_HANDLER,
                "CLOSE went to B's statement: it is unknown now", summary(got))
    finally:
        R.check(s.close() == 0, "mr_stmt_pool_tool exits 0 (cursor)")


def sc_eviction():
    s = Session()
    try:
        ids = [s.prepare("SELECT ? + %d AS v" % i, 0) for i in range(3)]
        # a cache of 2: the first statement left A when the third was prepared
        R.check(s.tool.ask("find 0 %d" % ids[0])[0] == "miss", "the oldest was evicted")
        R.check(s.conns[0].ping().kind == "ok", "A answers a ping after the eviction's CLOSE")
        for cid in ids:  # each prepared again on A in turn, evicting the oldest
            s.both(0, "exec", exec_payload(cid, [(LONG, 10)]), what="bound on A")
        R.check(s.tool.ask("find 0 %d" % ids[0])[0] == "miss", "the first was evicted again")
        s.both(0, "exec", exec_payload(ids[0], [(LONG, 11)], bind=False),
               what="an evicted statement prepared again on A gets its types back")
    finally:
        R.check(s.close() == 0, "mr_stmt_pool_tool exits 0 (eviction)")


def sc_direct_execution():
    s = Session()
    try:
        cid = s.prepare("SELECT ? * 2 AS d, ? AS s", 0)
        s.both(0, "exec", exec_payload(cid, [(LONG, 21), (VAR_STRING, "q")]),
               what="bound on A")
        bare = exec_payload(cid, [(LONG, 50), (VAR_STRING, "r")], bind=False)
        want = s.direct(bare)
        R.check(s.tool.ask("pending 1 %d" % cid)[0] == "ok", "a pending entry on B")
        out = s.tool.send("prepare-packet %d" % cid) + s.tool.send("exec 1 " + bare.hex())
        s.conns[1].sock.sendall(out)  # one write: the prepare, then the execute naming the last
        p, err = read_prepare_raw(s.conns[1])
        R.check(p is not None, "the pipelined prepare succeeds", err)
        sid = int(s.tool.ask("prepare-ok 1 %d %s" % (cid, p.hex()))[1])
        got = s.conns[1].read_result([])
        R.check(summary(got) == summary(want) and got.kind == "rows",
                "the execute naming 0xffffffff, types put in, answers as direct",
                (summary(got), summary(want)))
        R.check(s.tool.ask("find 1 %d" % cid) == ["hit", str(sid)], "B's entry has its real id")
        s.both(1, "exec", bare, what="the next execute on B names its id")
    finally:
        R.check(s.close() == 0, "mr_stmt_pool_tool exits 0 (direct execution)")


def sc_last_prepared():
    """MariaDB's 0xffffffff names the last statement prepared; after a failed
    prepare, none (the server and the map alike)."""
    s = Session()
    try:
        cid = s.prepare("SELECT ? + 1 AS v", 0)
        want = s.d.send_command(exec_payload(ANY_ID, [(LONG, 5)])) or s.d.read_result([])
        got = s.pooled(1, "exec", exec_payload(cid, [(LONG, 5)]))  # prepared on B on demand
        R.check(summary(got) == summary(want) and got.kind == "rows",
                "0xffffffff on D runs the last prepared", (summary(got), summary(want)))
        got = s.pooled(1, "exec", exec_payload(ANY_ID, [(LONG, 6)]))
        want = s.d.send_command(exec_payload(ANY_ID, [(LONG, 6)])) or s.d.read_result([])
        R.check(summary(got) == summary(want) and got.kind == "rows",
                "0xffffffff through the map: the client's last, B's id",
                (summary(got), summary(want)))
        bad = bytes([rp.COM_STMT_PREPARE]) + b"SELEC nonsense"
        for c in (s.d, s.conns[0]):
            c.send_command(bad)
            p, err = read_prepare_raw(c)
            R.check(p is None, "a prepare of bad SQL fails")
        s.tool.ask("prepare-failed")
        want = s.d.send_command(exec_payload(ANY_ID, [(LONG, 7)])) or s.d.read_result([])
        R.check(want.kind == "err" and want.err[0] == rp.ER_UNKNOWN_STMT_HANDLER,
                "the server: no last statement after a failed prepare", summary(want))
        out = s.tool.ask("exec 1 " + exec_payload(ANY_ID, [(LONG, 7)]).hex())
        R.check(out[0] == "err", "the map: no last statement either", out)
    finally:
        R.check(s.close() == 0, "mr_stmt_pool_tool exits 0 (last prepared)")


def sc_bulk():
    s = Session(BulkConn)
    try:
        s.d.must("CREATE TABLE %s (id INT, s VARCHAR(20))" % TABLE)
        cid = s.prepare("INSERT INTO %s VALUES (?, ?)" % TABLE, 0)
        s.both(0, "bulk", bulk_payload(cid, [(1, "a"), (2, "b")], types=(LONG, VAR_STRING)),
               read="one", what="bulk with types on A")
        s.both(1, "bulk", bulk_payload(cid, [(3, "c"), (4, "d")]), read="one",
               what="bulk without types on B: the types put in")
        R.check(s.sent[4 + 5] & 128, "the bulk sent to B has SEND_TYPES_TO_SERVER")
        r = s.d.query("SELECT GROUP_CONCAT(id, s ORDER BY id, s) FROM %s" % TABLE)
        # each bulk ran twice: on D, and through the pool, so every row is there twice
        R.check(r.kind == "rows" and b"1a,1a,2b,2b,3c,3c,4d,4d" in bytes(r.rows[0]),
                "every row inserted, with its text", r.rows)
    except rp.ServerError as e:
        R.not_ok("bulk", e)
    finally:
        try:
            s.d.query("DROP TABLE IF EXISTS %s" % TABLE)
        finally:
            R.check(s.close() == 0, "mr_stmt_pool_tool exits 0 (bulk)")


def main():
    if not os.access(TOOL, os.X_OK):
        R.not_ok("mr_stmt_pool_tool is built", TOOL)
        R.finish()
    for sc in (sc_types, sc_long_data, sc_cursor, sc_eviction, sc_direct_execution,
               sc_last_prepared, sc_bulk):
        try:
            sc()
        except (rp.ProtoError, OSError) as e:
            R.not_ok(sc.__name__, "%s: %s" % (type(e).__name__, e))
    R.finish()


if __name__ == "__main__":
    main()
