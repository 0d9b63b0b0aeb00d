#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""max_offset of a prepared `LIMIT ?, ?` for every parameter type the binary protocol
carries, compared with what the server itself reads (issue 25, item 7).

Each case binds the offset as one MYSQL_TYPE (signed and unsigned integers of each width,
FLOAT, DOUBLE, DECIMAL, NEWDECIMAL, strings written in every way a number can be, dates,
NULL) and executes the same prepared page direct and through a proxy whose rule has
max_offset = 40. The table holds ids 1..100 ordered by id, so the first id of a direct page
tells the offset the server read (MariaDB 10.11 refuses none of them: it converts each
on its own terms). Through the proxy, a value with one plain reading (an integer type,
decimal digits only, NULL) is read as the server reads it:
  * at an offset <= max_offset: the same rows as direct;
  * beyond max_offset (or an empty page direct: past the table): ERR 1235.
Any other value (a sign, a space, a point, an exponent, a date, INT24 or YEAR, which the
server reads as a string) gets ERR 1210 saying what the guard reads; so does an execute
whose offset was sent with COM_STMT_SEND_LONG_DATA or that is larger than relay_buffer.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN (the proxy takes free ports).
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import rawproto_lib as rp  # noqa: E402

MAX_OFFSET = 40
ROWS = 100
RULES = """
[paginate params]
table = %s.pp_items
key = id
max_offset = %d
""" % (t.DB, MAX_OFFSET)
PROXY = t.Proxy("paginate_params", rules=RULES,
                options={"relay_buffer": "64K"})

UNSIGNED = 0x80


def lenenc(b):
    return rp.lenenc_int(len(b)) + b


def date(y, mo, d, h=None, mi=0, s=0, us=None):
    f = struct.pack("<HBB", y, mo, d)
    if h is not None:
        f += struct.pack("<BBB", h, mi, s)
    if us is not None:
        f += struct.pack("<I", us)
    return bytes([len(f)]) + f


def time_value(neg, days, h, mi, s):
    f = struct.pack("<BIBBB", neg, days, h, mi, s)
    return bytes([len(f)]) + f


INTEGER_TYPES = (0x01, 0x02, 0x03, 0x08)
TEXT_TYPES = (0xFD, 0xFE, 0x0F, 0xFC, 0x00, 0xF6)


def plain(typ, value):
    """Has the value one plain reading (the guard's contract)?"""
    if value is None or typ in INTEGER_TYPES:
        return True
    if typ in (0x04, 0x05):
        v = struct.unpack("<f" if typ == 0x04 else "<d", value)[0]
        return v == v and 0 <= v < 2 ** 53 and v == int(v)
    if typ in TEXT_TYPES:
        n, i = rp.read_lenenc(value, 0)
        text = value[i:i + n]
        return text.isdigit() and text.isascii()
    return False


# (label, type, flags, encoded value or None for NULL)
def cases():
    out = []
    for width, typ, fmt in ((1, 0x01, "b"), (2, 0x02, "h"), (4, 0x03, "i"), (8, 0x08, "q"),
                            (4, 0x09, "i"), (2, 0x0D, "h")):
        name = {0x01: "TINY", 0x02: "SHORT", 0x03: "LONG", 0x08: "LONGLONG", 0x09: "INT24",
                0x0D: "YEAR"}[typ]
        for v in (10, 90, -1, -90):
            out.append(("%s %d" % (name, v), typ, 0, struct.pack("<" + fmt, v)))
            out.append(("%s UNSIGNED %d" % (name, v & ((1 << 8 * width) - 1)), typ, UNSIGNED,
                        struct.pack("<" + fmt, v)))
    for v in (10.0, 90.0, 10.5, 90.5, -1.0, 1e30, float("nan")):
        out.append(("FLOAT %r" % v, 0x04, 0, struct.pack("<f", v)))
        out.append(("DOUBLE %r" % v, 0x05, 0, struct.pack("<d", v)))
    texts = ["10", "90", " 90", "90 ", "+90", "-90", "090", "90.0", "90.5", "9e1", "1e3",
             "0x5a", "", "abc", "90abc", "  +90.9e0 ", "18446744073709551615",
             "18446744073709551616", "99999999999999999999999", "-0", "\t90", "1e-3"]
    for typ, name in ((0xFD, "VAR_STRING"), (0xFE, "STRING"), (0x0F, "VARCHAR"),
                      (0xFC, "BLOB"), (0x00, "DECIMAL"), (0xF6, "NEWDECIMAL")):
        for s in texts:
            out.append(("%s %r" % (name, s), typ, 0, lenenc(s.encode())))
    out.append(("DATE 2024-01-02", 0x0A, 0, date(2024, 1, 2)))
    out.append(("DATETIME 2024-01-02 03:04:05", 0x0C, 0, date(2024, 1, 2, 3, 4, 5)))
    out.append(("TIMESTAMP 2024-01-02 03:04:05.6", 0x07, 0, date(2024, 1, 2, 3, 4, 5, 6)))
    out.append(("DATETIME zero", 0x0C, 0, b"\x00"))
    out.append(("TIME 00:01:30", 0x0B, 0, time_value(0, 0, 0, 1, 30)))
    out.append(("NULL", 0x06, 0, None))
    out.append(("NULL bit with LONGLONG type", 0x08, 0, None))
    return out


def execute(conn, stmt_id, typ, flags, value):
    """COM_STMT_EXECUTE of (offset typed as asked, count LONGLONG 3)."""
    p = struct.pack("<BIBI", rp.COM_STMT_EXECUTE, stmt_id, 0, 1)
    nulls = 1 if value is None else 0
    p += bytes([nulls]) + b"\x01" + bytes([typ, flags, 0x08, 0])
    p += (value or b"") + struct.pack("<q", 3)
    conn.send_command(p)
    return conn.read_result(conn._logged("execute"))


def outcome(res):
    if res.kind == "err":
        return ("err", res.err[0])
    return ("rows", [r for r in res.rows])


def first_id(rows):
    """The id of a binary row: header byte, a one-byte null bitmap, then the INT."""
    return struct.unpack("<i", bytes(rows[0][2:6]))[0] if rows else None


def long_data(pc, stmt_id):
    """An offset sent with COM_STMT_SEND_LONG_DATA is not in the execute: refused, until
    COM_STMT_RESET clears it on the server."""
    pc.send_command(struct.pack("<BIH", 0x18, stmt_id, 0) + b"90")
    p = struct.pack("<BIBI", rp.COM_STMT_EXECUTE, stmt_id, 0, 1)
    p += b"\x00\x01" + bytes([0xFD, 0, 0x08, 0]) + struct.pack("<q", 3)
    pc.send_command(p)
    res = pc.read_result(pc._logged("execute after long data"))
    t.check(res.kind == "err" and res.err[0] == 1210 and "SEND_LONG_DATA" in res.err[1],
            "an offset sent with COM_STMT_SEND_LONG_DATA gets ERR 1210 naming it",
            (res.kind, res.err))
    pc.send_command(struct.pack("<BI", 0x1A, stmt_id))
    res = pc.read_result(pc._logged("reset"))
    t.eq("COM_STMT_RESET is answered", "ok", res.kind)
    again = outcome(execute(pc, stmt_id, 0x08, 0, struct.pack("<q", 2)))
    t.eq("after COM_STMT_RESET the statement is served", [3, 4, 5],
         [struct.unpack("<i", bytes(r[2:6]))[0] for r in again[1]] if again[0] == "rows"
         else again)


def too_big(pc):
    """An execute larger than relay_buffer (64K here) is not read whole: refused."""
    sql = "SELECT id FROM pp_items WHERE id <> LENGTH(?) ORDER BY id LIMIT ?, ?"
    st = pc.prepare(sql)
    p = struct.pack("<BIBI", rp.COM_STMT_EXECUTE, st.stmt_id, 0, 1)
    p += b"\x00\x01" + bytes([0xFC, 0, 0x08, 0, 0x08, 0])
    p += lenenc(b"x" * 100000) + struct.pack("<qq", 90, 3)
    pc.send_command(p)
    res = pc.read_result(pc._logged("execute over relay_buffer"))
    t.check(res.kind == "err" and res.err[0] == 1210 and "relay_buffer" in res.err[1],
            "an execute larger than relay_buffer gets ERR 1210 naming it", (res.kind, res.err))


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS pp_items")
    cur.execute("CREATE TABLE pp_items (id INT PRIMARY KEY)")
    cur.execute("INSERT INTO pp_items SELECT seq FROM seq_1_to_%d" % ROWS)
    PROXY.start()
    sql = "SELECT id FROM pp_items ORDER BY id LIMIT ?, ?"
    try:
        dc, pc = rp.Conn(t.DIRECT_PORT), rp.Conn(PROXY.port)
        ds, ps = dc.prepare(sql), pc.prepare(sql)
        for label, typ, flags, value in cases():
            dr = outcome(execute(dc, ds.stmt_id, typ, flags, value))
            pres = execute(pc, ps.stmt_id, typ, flags, value)
            pr = outcome(pres)
            if dr[0] == "err":
                t.eq("%s: the server refuses it (ERR %d), so does the proxy" % (label, dr[1]),
                     dr, pr)
                continue
            if not plain(typ, value):
                t.check(pr == ("err", 1210) and "max_offset" in pres.err[1] and
                        "decimal digits" in pres.err[1],
                        "%s: no plain reading: the proxy refuses it with ERR 1210" % label,
                        pres.err if pr[0] == "err" else pr)
                continue
            fid = first_id(dr[1])
            read = fid - 1 if fid is not None else None
            if read is not None and read <= MAX_OFFSET:
                t.eq("%s: the server reads offset %d, within max_offset: same rows"
                     % (label, read), dr, pr)
            else:
                t.check(pr == ("err", 1235),
                        "%s: the server serves offset %s beyond max_offset: the proxy "
                        "refuses it" % (label, read if read is not None else ">= %d" % ROWS),
                        pr)
        long_data(pc, ps.stmt_id)
        too_big(pc)
        # the session and the statement go on
        again = outcome(execute(pc, ps.stmt_id, 0x08, 0, struct.pack("<q", 5)))
        t.eq("the statement is served after every case", [6, 7, 8],
             [struct.unpack("<i", bytes(r[2:6]))[0] for r in again[1]])
        dc.close()
        pc.close()
    finally:
        PROXY.stop()
    cur.execute("DROP TABLE IF EXISTS pp_items")
    d.close()
    t.done()


if __name__ == "__main__":
    main()
