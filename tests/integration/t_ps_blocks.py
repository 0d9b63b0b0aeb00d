#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Prepared compound statements whose result sets come while a cursor of
their own is open: no response is cut short.

A FOR loop over a SELECT, a procedure that opens a cursor and an
sql_mode=ORACLE block with OPEN/FETCH, each run with COM_STMT_EXECUTE:
mariadbd flags every result set from inside them SERVER_STATUS_CURSOR_EXISTS
(for the block's cursor) together with MORE_RESULTS, and sends the rows. A
proxy that took that flag for a cursor opened for the client ended the
response at the column EOF; the rest of it stayed in the proxy's input when
it came in the same read (the client waited forever) and was fed to the
next command's response when it came later.

Each statement runs ROUNDS times per mode, {EOF, DEPRECATE_EOF} x {no
cursor, CURSOR_TYPE_READ_ONLY asked for (the server opens none for these)},
each execution followed by a COM_PING that must get its own OK; a lone
SELECT with a cursor and its COM_STMT_FETCH are interleaved, so a real
cursor still ends its execute response at the column EOF. A read waits at
most 3 s: a stall is reported as a hang. The first round's packets through
the proxy equal mariadbd's, byte for byte.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rawproto_lib as rp  # noqa: E402
from rawproto_lib import Conn  # noqa: E402

rp.TIMEOUT = 3.0
ROUNDS = int(os.environ.get("MR_PS_BLOCK_ROUNDS", "150"))
R = rp.Report("t_ps_blocks")
TAG = "%d" % os.getpid()
TABLE = "psb_t_" + TAG
PROC = "psb_p_" + TAG

BLOCKS = (
    ("for_loop", None,
     "BEGIN NOT ATOMIC FOR r IN (SELECT a FROM %s ORDER BY a) DO SELECT r.a, 'x' AS w;"
     " END FOR; END" % TABLE),
    ("procedure", None, "CALL %s()" % PROC),
    ("oracle_block", "ORACLE",
     "DECLARE CURSOR c IS SELECT a FROM %s WHERE a = 2; v INT; BEGIN OPEN c;"
     " FETCH c INTO v; SELECT v, 'y' AS w FROM DUAL; CLOSE c; END" % TABLE),
)
MODES = ((False, "EOF"), (True, "DEPRECATE_EOF"))
FLAGS = ((0, "no cursor"), (rp.CURSOR_TYPE_READ_ONLY, "cursor asked for"))


def setup():
    c = Conn(rp.DIRECT_PORT)
    c.must("CREATE OR REPLACE TABLE %s (a INT PRIMARY KEY)" % TABLE)
    c.must("INSERT INTO %s VALUES (1), (2), (3)" % TABLE)
    c.must("CREATE OR REPLACE PROCEDURE %s() BEGIN DECLARE c CURSOR FOR SELECT a FROM %s;"
           " OPEN c; SELECT a FROM %s ORDER BY a; SELECT COUNT(*) AS n FROM %s; CLOSE c; END"
           % (PROC, TABLE, TABLE, TABLE))
    c.close()


def teardown():
    c = Conn(rp.DIRECT_PORT)
    c.must("DROP TABLE IF EXISTS %s" % TABLE)
    c.must("DROP PROCEDURE IF EXISTS %s" % PROC)
    c.close()


def one_round(c, stmt, flags, cursor_stmt, first):
    """Executes stmt (rows must follow), pings, runs the real cursor; returns
    what went wrong, or None."""
    c.send_command(rp.execute_packet(stmt, (), flags))
    res = c.read_result(c._logged("execute") if first else [], cursor=False)
    if res.kind != "ok" or res.sets < 1:
        return "execute ended as %s after %d result set(s)" % (res.kind, res.sets)
    if c.ping("ping" if first else None).kind != "ok":
        return "COM_PING after the execute did not get its OK"
    c.send_command(rp.execute_packet(cursor_stmt, (), rp.CURSOR_TYPE_READ_ONLY))
    res = c.read_result(c._logged("cursor") if first else [], cursor=True)
    if res.kind != "cursor":
        return "a lone SELECT with a cursor ended as %s" % res.kind
    res = c.fetch(cursor_stmt, 10, label="fetch")
    if res.kind != "rows" or len(res.rows) != 3:
        return "COM_STMT_FETCH gave %s with %d rows" % (res.kind, len(res.rows))
    return None


def run(port, deprecate_eof, flags, block):
    """Returns (problem or None, packets of the first round)."""
    _, mode, sql = block
    c = Conn(port, deprecate_eof=deprecate_eof)
    try:
        if mode:
            c.must("SET sql_mode = %s" % mode)
        stmt = c.prepare(sql).stmt_id
        cursor_stmt = c.prepare("SELECT a FROM %s ORDER BY a" % TABLE).stmt_id
        for i in range(ROUNDS):
            try:
                problem = one_round(c, stmt, flags, cursor_stmt, i == 0)
            except rp.Timeout as e:
                problem = "HANG: no complete response within %.0f s (%s)" % (rp.TIMEOUT, e)
            except rp.ProtoError as e:
                problem = "%s: %s" % (type(e).__name__, e)
            if problem:
                return "round %d: %s" % (i + 1, problem), c.log
            if i == 0:
                first = list(c.log)
        return None, first
    finally:
        c.close()


def main():
    setup()
    try:
        for deprecate_eof, mode_name in MODES:
            for flags, flag_name in FLAGS:
                for block in BLOCKS:
                    desc = "%s, %s, %s: %d executions" % (block[0], mode_name, flag_name, ROUNDS)
                    direct, dlog = run(rp.DIRECT_PORT, deprecate_eof, flags, block)
                    if direct:
                        R.not_ok(desc + " (direct)", direct)
                        continue
                    if rp.DIRECT_ONLY:
                        R.ok(desc + " (direct)")
                        continue
                    proxy, plog = run(rp.PROXY_PORT, deprecate_eof, flags, block)
                    if proxy:
                        R.not_ok(desc + " through the proxy", proxy)
                        continue
                    R.check(rp.diff_logs(dlog, plog) is None, desc + ", same bytes as direct",
                            rp.diff_logs(dlog, plog))
    finally:
        teardown()
    R.finish()


if __name__ == "__main__":
    main()
