#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""zstd compression (MySQL 8's CLIENT_ZSTD_COMPRESSION_ALGORITHM) on the
client's leg, against the real mariadbd (which speaks no zstd: the backend
leg stays plain).

A raw client of the test's own logs in with the zstd bit, connect
attributes and the zstd_compression_level byte after them, and then speaks
frames of a 7-byte header and one zstd frame each. It checks:
  * the greeting through the proxy offers zstd under compression = yes and
    zstd, not under zlib (nor zlib under zstd); mariadbd's does not;
  * a client that asks for what is not offered, a level out of 1-22, or the
    zstd bit without its level byte gets an ERR saying so;
  * the same payloads as a plain direct connection for small, 100 KB, 5 MB
    and 17 MiB (more than one packet) values, 1,000 rows, several
    statements in one, an error, LOAD DATA LOCAL sent in zstd frames; the
    proxy's frames are numbered on from the client's and those over 50
    bytes are zstd frames; at levels 1 and 3, and 1,000 rows at level 22
    (on a proxy with zstd_max_level = 22, so the frames are level 22's);
  * zstd_max_level: under the default (3) a client asking for level 22
    gets reply frames byte for byte those a level-3 client gets for the
    same query; with zstd_max_level = 22 its frames differ from level 3's
    (the same payloads inside: it got the level it asked for);
  * a rewritten statement (UPDATE DELAYED staged, then FLUSH DELAYED)
    over zstd applies every increment;
  * a frame that is not zstd closes that connection only;
  * the bytes a 1,000-row result takes on the client's leg: plain, zlib,
    zstd (printed).
Environment: MR_DIRECT_PORT, MR_BIN; the proxies take free ports.
"""
import os
import socket
import struct
import sys

import zstandard

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import rawproto_lib as raw  # noqa: E402
import t_compress as tc  # noqa: E402

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
DATA_FILE = os.path.join(t.TMP, "compress_zstd_load.csv")
RULES = """
[delayed zs_counters]
table = %s.zs_counters
key = id
columns = n
flush_interval = 1h
""" % t.DB


class ZstdConn(tc.ZConn):
    """A raw client that asks for zstd at `level`, with connect attributes
    before the level byte (level=None: the byte is left out)."""

    def __init__(self, port, level=3, **kw):
        self.level = level
        self.zstd_frames = 0  # compressed frames read that are zstd frames
        super().__init__(port, **kw)

    def handshake_response(self, *args, **kw):
        p = raw.Conn.handshake_response(self, *args, **kw)
        self.flags |= raw.CLIENT_ZSTD_COMPRESSION | raw.CLIENT_CONNECT_ATTRS
        attrs = b"".join(raw.lenenc_int(len(x)) + x
                         for x in (b"_client_name", b"t_compress_zstd", b"_pid", b"1"))
        p = struct.pack("<I", self.flags) + p[4:] + raw.lenenc_int(len(attrs)) + attrs
        return p + (bytes([self.level]) if self.level is not None else b"")

    def inflate(self, body, ulen):
        self.zstd_frames += body[:4] == ZSTD_MAGIC
        out = zstandard.ZstdDecompressor().decompress(body, max_output_size=ulen)
        if len(out) != ulen:
            raise raw.ProtoError("a zstd frame inflated to %d bytes, not %d" % (len(out), ulen))
        return out

    def deflate(self, plain):
        return zstandard.ZstdCompressor(level=self.level or 3).compress(plain)


def greeting_caps(port):
    return tc.greeting_caps(port)


def check_greetings(yes, zlib_only, zstd_only):
    Z, C = raw.CLIENT_ZSTD_COMPRESSION, raw.CLIENT_COMPRESS
    t.check(not greeting_caps(t.DIRECT_PORT) & Z, "mariadbd's greeting does not offer zstd")
    caps = greeting_caps(yes)
    t.check(caps & Z and caps & C, "compression = yes: the greeting offers zstd and zlib")
    caps = greeting_caps(zlib_only)
    t.check(caps & C and not caps & Z, "compression = zlib: zlib only")
    caps = greeting_caps(zstd_only)
    t.check(caps & Z and not caps & C, "compression = zstd: zstd only")


def refused(make, code, words, desc):
    try:
        make().close()
        t.not_ok(desc)
    except raw.ServerError as e:
        t.check(e.code == code and all(w in str(e) for w in words), desc, e)


def check_refusals(yes, zlib_only, zstd_only):
    refused(lambda: ZstdConn(zlib_only), 1235, ["no zstd", "compression = no or zlib"],
            "compression = zlib: a zstd client gets ERR 1235 saying so")
    refused(lambda: tc.ZConn(zstd_only), 1235, ["no zlib"],
            "compression = zstd: a zlib client gets ERR 1235 saying so")
    for level in (0, 23):
        refused(lambda: ZstdConn(yes, level=level), 1235, ["%d is out of range" % level, "1 to 22"],
                "zstd_compression_level %d: ERR 1235 saying the range" % level)
    refused(lambda: ZstdConn(yes, level=None), 1835, ["zstd_compression_level byte",
                                                      "missing"],
            "the zstd bit without its level byte: ERR 1835 saying what is missing")
    c = ZstdConn(zstd_only)
    r = c.query("SELECT 'zstd only'")
    t.check(r.kind == "rows" and r.rows == [b"\x09zstd only"], "compression = zstd: a zstd client "
            "logs in and queries", r.rows)
    c.close()


STATEMENTS = tc.STATEMENTS + [
    "SELECT LENGTH(REPEAT('y', 17 << 20)) AS n, REPEAT('y', 17 << 20) AS big",
]


def run_statements(conn):
    c = conn
    try:
        for sql in STATEMENTS:
            c.query(sql)
        c.must("CREATE OR REPLACE TABLE zs_load (id INT PRIMARY KEY, v VARCHAR(200))")
        rec = c._logged("load data local infile")
        c.send_command(b"\x03LOAD DATA LOCAL INFILE 'z.csv' INTO TABLE zs_load "
                       b"FIELDS TERMINATED BY ','")
        r = c.read_result(rec)
        if r.kind == "infile":
            with open(DATA_FILE, "rb") as f:
                data = f.read()
            for k in range(0, len(data), 65536):
                c.send_payload(data[k:k + 65536])
            c.send_payload(b"")
            c.read_result(rec)
        c.query("SELECT COUNT(*), SUM(LENGTH(v)), MD5(GROUP_CONCAT(v ORDER BY id)) FROM zs_load")
        return c.log
    finally:
        c.close()


def payloads(log):
    return [(label, [p for _, p in rec]) for label, rec in log]


def check_same_as_plain(port, uncapped):
    with open(DATA_FILE, "w") as f:
        for i in range(20000):
            f.write("%d,zstd value %d %s\n" % (i, i, "x" * (i % 60)))
    want = payloads(run_statements(raw.Conn(t.DIRECT_PORT)))
    for level in (1, 3):
        c = ZstdConn(port, level=level)
        got = payloads(run_statements(c))
        t.check(want == got, "zstd level %d through the proxy: the same payloads as a plain "
                "direct connection (%d responses, a 17 MiB value among them)" % (level, len(got)),
                [(a[0], len(a[1]), len(b[1])) for a, b in zip(want, got) if a != b][:2])
        t.check(not c.seq_errors, "level %d: the proxy numbers its frames on from the client's"
                % level, c.seq_errors[:5])
        packed = [f for f in c.frames if f[2]]
        t.check(packed and c.zstd_frames == len(packed) and
                all(f[2] or f[1] < 50 or f[1] >= f[2] for f in c.frames),
                "level %d: replies over 50 bytes come as zstd frames (%d of %d frames)"
                % (level, c.zstd_frames, len(c.frames)))
    sql = "SELECT seq, CONCAT('row ', seq, REPEAT('-', seq % 50)) FROM seq_1_to_1000"
    want = raw.Conn(t.DIRECT_PORT)
    want.query(sql)
    want.close()
    c = ZstdConn(uncapped, level=22)  # the default zstd_max_level would make it level 3
    c.query(sql)
    c.close()
    t.check(payloads(want.log) == payloads(c.log) and c.zstd_frames > 0,
            "zstd level 22 (the highest, zstd_max_level = 22): 1,000 rows as direct, in zstd "
            "frames")


# Small enough for mariadbd to write in one go, so the proxy reads it in one
# piece and frames it the same way for every connection: only the level can
# make two replies' frames differ.
CAP_SQL = "SELECT seq, CONCAT('row ', seq, REPEAT('-', seq % 50)) FROM seq_1_to_100"


def reply_frames(port, level):
    """CAP_SQL's reply to a client asking for `level`: its frames as they
    came, and the packets' payloads inside them."""
    c = ZstdConn(port, level=level)
    try:
        before = len(c.wire_frames)
        c.query(CAP_SQL)
        return c.wire_frames[before:], payloads(c.log)
    finally:
        c.close()


def check_level_cap(capped, uncapped):
    at3, plain3 = reply_frames(capped, 3)
    at22, plain22 = reply_frames(capped, 22)
    t.check(plain3 == plain22 and any(f[4:7] != b"\0\0\0" for f in at3),
            "the reply is compressed frames (%d), the same payloads at levels 3 and 22" % len(at3))
    t.check(at22 == at3, "zstd_max_level = 3 (the default): a client asking for level 22 gets "
            "the frames a level-3 client gets, byte for byte (%d and %d bytes)"
            % (sum(map(len, at22)), sum(map(len, at3))))
    at3, plain3 = reply_frames(uncapped, 3)
    at22, plain22 = reply_frames(uncapped, 22)
    t.check(plain3 == plain22 and at22 != at3,
            "zstd_max_level = 22: a client asking for level 22 gets frames of its own level, not "
            "level 3's (%d and %d bytes), the same payloads inside"
            % (sum(map(len, at22)), sum(map(len, at3))))


def check_delayed(port):
    d = t.direct(autocommit=True)
    cur = d.cursor()
    c = ZstdConn(port)
    for _ in range(7):
        r = c.query("UPDATE DELAYED zs_counters SET n = n + 1 WHERE id = 1")
        if r.kind != "ok":
            break
    t.check(r.kind == "ok", "UPDATE DELAYED over zstd is answered OK", r.err)
    cur.execute("SELECT n FROM zs_counters WHERE id = 1")
    t.eq("... and staged, not applied yet", ((0,),), cur.fetchall())
    r = c.query("FLUSH DELAYED %s.zs_counters" % t.DB)
    t.check(r.kind in ("ok", "rows"), "FLUSH DELAYED over zstd answers (%s)" % r.kind, r.err)
    r = c.query("SELECT n FROM zs_counters WHERE id = 1")
    t.check(r.kind == "rows" and r.rows == [b"\x017"], "every increment applied once (n = 7)",
            r.rows)
    c.close()
    d.close()


def check_corrupt(port):
    bystander = ZstdConn(port)
    bad = ZstdConn(port)
    body = ZSTD_MAGIC + b"\x13" * 60
    bad.sock.sendall(struct.pack("<I", len(body))[:3] + b"\x00" + struct.pack("<I", 100)[:3] + body)
    bad.sock.settimeout(10)
    try:
        closed = bad.sock.recv(100) == b""
    except (ConnectionResetError, socket.timeout) as e:
        closed = isinstance(e, ConnectionResetError)
    bad.close()
    t.check(closed, "a frame that is not zstd: that connection is closed")
    r = bystander.query("SELECT 'still here'")
    t.check(r.kind == "rows" and r.rows == [b"\x0astill here"], "a connection beside it is not "
            "hurt", r.rows)
    bystander.close()


def leg_bytes(conn):
    sql = "SELECT seq, CONCAT('customer-', seq), seq * 17 % 1000, NOW() FROM seq_1_to_1000"
    try:
        compressed = isinstance(conn, tc.ZConn)
        before = conn.wire_in if compressed else conn.pos
        conn.query(sql)
        return (conn.wire_in if compressed else conn.pos) - before
    finally:
        conn.close()


def check_bytes(port):
    plain = leg_bytes(raw.Conn(port))
    zl = leg_bytes(tc.ZConn(port))
    zs = leg_bytes(ZstdConn(port, level=3))
    t.log("1,000-row result on the client's leg: %d bytes plain, %d zlib (%.2f), %d zstd level 3 "
          "(%.2f)" % (plain, zl, zl / plain, zs, zs / plain))
    t.check(zs < plain / 2, "zstd shrinks a 1,000-row result (%d -> %d bytes)" % (plain, zs))


def main():
    d = t.direct(autocommit=True)
    cur = d.cursor()
    cur.execute("CREATE OR REPLACE TABLE zs_counters (id INT PRIMARY KEY, n INT NOT NULL)")
    cur.execute("INSERT INTO zs_counters VALUES (1, 0)")
    d.close()
    yes = t.Proxy("compress_zstd_proxy", rules=RULES, own_conn=True)
    zlib_only = t.Proxy("compress_zlib_only_proxy", options={"compression": "zlib"})
    zstd_only = t.Proxy("compress_zstd_only_proxy", options={"compression": "zstd"})
    uncapped = t.Proxy("compress_zstd_uncapped_proxy", options={"zstd_max_level": "22"})
    with yes, zlib_only, zstd_only, uncapped:
        check_greetings(yes.port, zlib_only.port, zstd_only.port)
        check_refusals(yes.port, zlib_only.port, zstd_only.port)
        check_level_cap(yes.port, uncapped.port)
        check_same_as_plain(yes.port, uncapped.port)
        check_delayed(yes.port)
        check_corrupt(yes.port)
        check_bytes(yes.port)
    t.done()


if __name__ == "__main__":
    main()
