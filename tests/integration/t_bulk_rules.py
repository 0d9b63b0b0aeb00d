#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""COM_STMT_BULK_EXECUTE (MariaDB array binding) of a statement a feature rule
rewrote is refused, and nothing of it is applied; other statements' bulk
executes go to the server.

A proxy of the test's own with a staged and a memory-mode delayed rule and a
paginate rule with max_offset. Over raw sockets (rawproto_lib.py) each
statement is prepared, then one COM_STMT_BULK_EXECUTE of 3 rows is sent by
hand:
  * a prepared UPDATE DELAYED (staged), UPDATE DELAYED (memory) and a page
    `LIMIT ?, 10` under max_offset: ERR 1235 naming array binding, the
    session in step after it (a plain execute of the same statement works),
    and after FLUSH DELAYED the counters hold only the plain executes' adds
    (none of the bulk's rows was applied, let alone twice);
  * a prepared plain INSERT: the bulk's OK says 3 rows and the table has them.

Environment: MR_DIRECT_PORT (mariadbd), MR_TMP, MR_BIN; the proxy takes a free
port.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import rawproto_lib as rp  # noqa: E402
from rawproto_lib import Conn  # noqa: E402

RULES = """
[delayed bk_staged]
table = %(db)s.bk_staged
key = id
columns = n
flush_interval = 1h

[delayed bk_memory]
table = %(db)s.bk_memory
key = id
columns = n
mode = memory
flush_interval = 1h

[paginate bk_pages]
table = %(db)s.bk_items
key = id
threshold = 100
max_offset = 1000
""" % {"db": t.DB}
PROXY = t.Proxy("bulk_rules_proxy", rules=RULES, own_conn=True)
COM_STMT_BULK_EXECUTE = 0xFA
SEND_TYPES = 128  # STMT_BULK_FLAG_CLIENT_SEND_TYPES


def connect():
    """A raw login that negotiates MARIADB_CLIENT_STMT_BULK_OPERATIONS (the
    server refuses a bulk execute from a client that did not)."""
    c = Conn(PROXY.port, connect=False)
    g = c.read_greeting()
    t.check(g["ext_caps"] & rp.MARIADB_BULK, "the proxy's greeting offers bulk operations",
            "0x%08x" % g["ext_caps"])
    hr = bytearray(c.handshake_response(t.USER, t.PASSWORD, t.DB, b"mysql_native_password"))
    struct.pack_into("<I", hr, 28, rp.MARIADB_BULK)
    c.sock.sendall(rp.frame(bytes(hr), 1)[0])
    _, p = c.read_packet([])
    if p[:1] != b"\x00":
        raise rp.ProtoError("login refused: %r" % p[:80])
    return c


def bulk_packet(stmt_id, rows):
    """rows: tuples of ints, every parameter a LONGLONG."""
    p = struct.pack("<BIH", COM_STMT_BULK_EXECUTE, stmt_id, SEND_TYPES)
    p += bytes([rp.TYPE_LONGLONG, 0]) * len(rows[0])
    for row in rows:
        for v in row:
            p += b"\x00" + struct.pack("<q", v)  # indicator 0: a value follows
    return p


def bulk(c, stmt_id, rows):
    c.send_command(bulk_packet(stmt_id, rows))
    return c.read_result(c._logged("bulk execute"))


def setup(d):
    cur = d.cursor()
    for name in ("bk_staged", "bk_memory"):
        cur.execute("CREATE OR REPLACE TABLE %s (id INT PRIMARY KEY, n BIGINT NOT NULL)" % name)
        cur.execute("INSERT INTO %s VALUES (1, 0), (2, 0), (3, 0)" % name)
    cur.execute("CREATE OR REPLACE TABLE bk_items (id INT PRIMARY KEY, v INT)")
    cur.execute("INSERT INTO bk_items SELECT seq, seq FROM seq_1_to_300")
    cur.execute("CREATE OR REPLACE TABLE bk_plain (id BIGINT PRIMARY KEY, n BIGINT)")


def refused(c, what, sql, rows, plain):
    st = c.prepare(sql)
    r = bulk(c, st.stmt_id, rows)
    t.check(r.kind == "err" and r.err[0] == 1235 and "array binding" in r.err[1],
            "%s: bulk execute refused with ERR 1235 naming array binding" % what,
            (r.kind, r.err))
    r = c.execute(st.stmt_id, [(rp.TYPE_LONGLONG, v) for v in plain])
    t.check(r.kind in ("ok", "rows"), "%s: a plain execute after it works (session in step)"
            % what, (r.kind, r.err))


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    setup(d)
    PROXY.start()
    try:
        c = connect()
        refused(c, "staged UPDATE DELAYED", "UPDATE DELAYED bk_staged SET n = n + ? WHERE id = ?",
                [(5, 1), (5, 2), (5, 3)], (1, 1))
        refused(c, "memory UPDATE DELAYED", "UPDATE DELAYED bk_memory SET n = n + ? WHERE id = ?",
                [(5, 1), (5, 2), (5, 3)], (1, 1))
        refused(c, "paginate page under max_offset",
                "SELECT * FROM bk_items ORDER BY id LIMIT ?, 10", [(0,), (200,), (10,)], (200,))
        r = c.query("FLUSH DELAYED")
        t.check(r.kind == "ok", "FLUSH DELAYED", (r.kind, r.err))
        for name in ("bk_staged", "bk_memory"):
            t.eq("%s: only the plain execute's add was applied" % name, ((1, 1), (2, 0), (3, 0)),
                 t.rows(d, "SELECT id, n FROM %s ORDER BY id" % name))
        st = c.prepare("INSERT INTO bk_plain VALUES (?, ?)")
        r = bulk(c, st.stmt_id, [(1, 10), (2, 20), (3, 30)])
        t.check(r.kind == "ok" and r.ok[0] == 3, "plain INSERT: the bulk execute's OK says 3 rows",
                (r.kind, r.err, r.ok))
        t.eq("plain INSERT: the rows are in the table", ((1, 10), (2, 20), (3, 30)),
             t.rows(d, "SELECT id, n FROM bk_plain ORDER BY id"))
        c.close()
    except rp.ProtoError as e:
        t.not_ok("raw protocol exchange", e)
    finally:
        PROXY.stop()
    t.done()


if __name__ == "__main__":
    main()
