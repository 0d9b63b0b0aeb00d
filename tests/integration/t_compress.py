#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The compressed protocol (CLIENT_COMPRESS, zlib) on the client's leg,
against the real mariadbd.

A raw client of the test's own speaks the compressed protocol (frames of a
7-byte header and a zlib stream, with a numbering of their own). It checks:
  * the greeting through the proxy offers CLIENT_COMPRESS as the server's
    does; with compression = no it does not, and a client that asks anyway
    gets ERR 1235 saying so;
  * the same statements (small, 100 KB and 5 MB values, 1,000 rows, several
    statements in one, an error, LOAD DATA LOCAL) give the same packets
    through the proxy as direct, both compressed; the proxy's frames are
    numbered on from the client's (1, 2, ... after a command's frame 0);
    replies over 50 bytes come compressed;
  * the bytes a 1,000-row result takes on the client's leg, compressed and
    plain, through the proxy (printed);
  * a frame whose zlib stream is garbage, and one that inflates to less
    than its header says: that connection is closed, another one at the
    same time is not hurt, the proxy goes on;
  * a rewrite rule and a block rule over compression; a client that reads
    a large result late gets all of it;
  * the mariadb CLI with --compress (the status says so) gives the same
    output as direct for large results and loads a 2 MB file with LOAD DATA
    LOCAL; and the same over TLS and compression at once.
Environment: MR_DIRECT_PORT, MR_BIN; the proxies take free ports.
"""
import hashlib
import os
import socket
import struct
import subprocess
import sys
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import rawproto_lib as raw  # noqa: E402

SERVER_TLS = os.path.join(t.TMP, "main", "tls")  # tests/lib/env.sh made this pair
DATA_FILE = os.path.join(t.TMP, "compress_load.csv")
RULES = """
[rewrite z_upper]
pattern = SELECT ? AS z_rw
replacement = SELECT UPPER(?) AS z_rw

[block z_no_benchmark]
match = \\bbenchmark\\s*\\(
message = BENCHMARK() is not allowed through the proxy
"""


class ZConn(raw.Conn):
    """A raw client that asks for compression and speaks it after login."""

    def __init__(self, port, **kw):
        self.z_on = False
        self.zbuf = bytearray()
        self.zseq = 0
        self.frames = []       # (seq, payload length, uncompressed length) read
        self.wire_frames = []  # each frame read as it came: header and payload
        self.seq_errors = []
        self.wire_in = 0       # bytes of frames read
        super().__init__(port, **kw)
        self.z_on = True

    def handshake_response(self, *args, **kw):
        p = super().handshake_response(*args, **kw)
        self.flags |= raw.CLIENT_COMPRESS
        return struct.pack("<I", self.flags) + p[4:]

    def _read_frame(self):
        h = self._take(7)
        n, seq, ulen = h[0] | h[1] << 8 | h[2] << 16, h[3], h[4] | h[5] << 8 | h[6] << 16
        body = self._take(n)
        self.wire_in += 7 + n
        if seq != self.zseq:
            self.seq_errors.append((self.zseq, seq))
        self.zseq = (seq + 1) & 0xFF
        self.frames.append((seq, n, ulen))
        self.wire_frames.append(bytes(h) + bytes(body))
        self.zbuf += self.inflate(body, ulen) if ulen else body

    def read_wire(self):
        if not self.z_on:
            return super().read_wire()
        while len(self.zbuf) < 4:
            self._read_frame()
        n = self.zbuf[0] | self.zbuf[1] << 8 | self.zbuf[2] << 16
        while len(self.zbuf) < 4 + n:
            self._read_frame()
        seq, payload = self.zbuf[3], bytes(self.zbuf[4:4 + n])
        del self.zbuf[:4 + n]
        return seq, payload

    def inflate(self, body, ulen):
        return zlib.decompress(body)

    def deflate(self, plain):
        return zlib.compress(plain)

    def send_frame(self, plain, compress=True):
        body = self.deflate(plain) if compress and len(plain) >= 50 else plain
        ulen = len(plain) if body is not plain else 0
        self.sock.sendall(struct.pack("<I", len(body))[:3] + bytes([self.zseq]) +
                          struct.pack("<I", ulen)[:3] + body)
        self.zseq = (self.zseq + 1) & 0xFF

    def send_payload(self, payload, seq=None):
        if not self.z_on:
            return super().send_payload(payload, seq)
        if seq == 0:
            self.zseq = 0  # a command starts the frames' numbering again
        data, self.seq = raw.frame(payload, self.seq if seq is None else seq)
        self.send_frame(data)


def greeting_caps(port):
    c = raw.Conn(port, connect=False)
    g = c.read_greeting()
    c.close()
    return g["caps"]


STATEMENTS = [
    "SELECT 1",
    "SELECT REPEAT('a', 100000) AS big",
    "SELECT REPEAT(MD5(RAND()), 1) IS NOT NULL, REPEAT('q', 5 * 1024 * 1024) AS huge",
    "SELECT seq, CONCAT('row ', seq, REPEAT('-', seq % 50)) FROM seq_1_to_1000",
    "SELECT 1; SELECT 2, 'two'; DO 3",
    "SELECT no_such_column FROM DUAL",
]


def run_statements(port):
    c = ZConn(port)
    try:
        for sql in STATEMENTS:
            c.query(sql)
        c.must("CREATE OR REPLACE TABLE z_load (id INT PRIMARY KEY, v VARCHAR(200))")
        rec = c._logged("load data local infile")
        c.send_command(b"\x03LOAD DATA LOCAL INFILE 'z.csv' INTO TABLE z_load "
                       b"FIELDS TERMINATED BY ','")
        r = c.read_result(rec)
        if r.kind == "infile":
            with open(DATA_FILE, "rb") as f:
                data = f.read()
            for k in range(0, len(data), 65536):  # frames of several packets' worth
                c.send_payload(data[k:k + 65536])
            c.send_payload(b"")
            c.read_result(rec)
        c.query("SELECT COUNT(*), SUM(LENGTH(v)) FROM z_load")
        return c.log, c.frames, c.seq_errors
    finally:
        c.close()


def check_same_as_direct(port):
    with open(DATA_FILE, "w") as f:
        for i in range(20000):
            f.write("%d,value %d %s\n" % (i, i, "x" * (i % 60)))
    direct_log, _, direct_errs = run_statements(t.DIRECT_PORT)
    proxy_log, frames, proxy_errs = run_statements(port)
    t.check(not direct_errs, "direct: the server numbers its frames on from the client's",
            direct_errs)
    # Inside frames, mariadbd numbers packets on from its frames' numbering
    # after each flush; the proxy relays the backend's plain numbering.
    # Clients check only the frames' numbers there, so payloads are compared.
    def payloads(log):
        return [(label, [p for _, p in rec]) for label, rec in log]
    t.check(payloads(direct_log) == payloads(proxy_log), "compressed through the proxy: the "
            "same packets as direct (%d responses)" % len(proxy_log),
            [(a, b) for a, b in zip(payloads(direct_log), payloads(proxy_log)) if a != b][:2])
    t.check(not proxy_errs, "the proxy numbers its frames on from the client's", proxy_errs[:5])
    packed = [f for f in frames if f[2]]
    t.check(packed and all(f[2] or f[1] < 50 or f[1] >= f[2] for f in frames),
            "replies over 50 bytes come compressed (%d of %d frames)" % (len(packed), len(frames)))


def leg_bytes(port, compress):
    """Bytes the client's leg carries from the proxy for a 1,000-row result."""
    c = ZConn(port) if compress else raw.Conn(port)
    sql = "SELECT seq, CONCAT('customer-', seq), seq * 17 % 1000, NOW() FROM seq_1_to_1000"
    try:
        if compress:
            before = c.wire_in
            c.query(sql)
            return c.wire_in - before
        before = c.pos
        c.query(sql)
        return c.pos - before
    finally:
        c.close()


def check_bytes(port):
    plain, packed = leg_bytes(port, False), leg_bytes(port, True)
    t.log("1,000-row result on the client's leg: %d bytes plain, %d compressed (%.2f)"
          % (plain, packed, packed / plain))
    t.check(packed < plain / 2, "compression shrinks a 1,000-row result (%d -> %d bytes)"
            % (plain, packed))


def check_corrupt(port):
    for desc, body, ulen in (("garbage instead of zlib", b"\x78\x9c" + b"\x13" * 60, 100),
                             ("inflates to less than declared", zlib.compress(b"\x03" + b"a" * 80),
                              500)):
        bystander = ZConn(port)
        bad = ZConn(port)
        bad.sock.sendall(struct.pack("<I", len(body))[:3] + b"\x00" +
                         struct.pack("<I", ulen)[:3] + body)
        bad.sock.settimeout(10)
        try:
            closed = bad.sock.recv(100) == b""
        except (ConnectionResetError, socket.timeout) as e:
            closed = isinstance(e, ConnectionResetError)
        bad.close()
        t.check(closed, "a frame with %s: that connection is closed" % desc)
        r = bystander.query("SELECT 'still here'")
        t.check(r.kind == "rows" and r.rows == [b"\x0astill here"],
                "a connection beside it is not hurt (%s)" % desc, r.rows)
        bystander.close()


def check_slow_reader(port):
    """A client that reads a large compressed result late: the frames the
    socket did not take at once still go out (never a stalled reply)."""
    c = ZConn(port)
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.send_command(b"\x03SELECT seq, MD5(seq), REPEAT(MD5(seq * 7), 8) FROM seq_1_to_40000")
    time.sleep(1.5)
    r = c.read_result(c._logged("slow"))
    t.check(r.kind == "rows" and len(r.rows) == 40000,
            "a slow reader gets the whole compressed result (%d rows)" % len(r.rows))
    c.close()


def check_rules(port):
    c = ZConn(port)
    r = c.query("SELECT 'abc' AS z_rw")
    t.check(r.kind == "rows" and r.rows == [b"\x03ABC"], "a rewrite rule over compression", r.rows)
    r = c.query("SELECT BENCHMARK(10, 1)")
    t.check(r.kind == "err" and "not allowed" in r.err[1], "a block rule over compression",
            r.err)
    c.close()


def check_refused_when_off(off_port):
    t.check(not greeting_caps(off_port) & raw.CLIENT_COMPRESS,
            "compression = no: the greeting does not offer CLIENT_COMPRESS")
    try:
        ZConn(off_port).close()
        t.not_ok("compression = no: a client that asks anyway is refused")
    except raw.ServerError as e:
        t.check(e.code == 1235 and "compression = no" in str(e),
                "compression = no: a client that asks anyway gets ERR 1235 saying why", e)


def cli(port, *args, sql):
    r = subprocess.run(["mariadb", "--no-defaults", "-h", t.HOST, "-P", str(port), "-u", t.USER,
                        "-p" + t.PASSWORD, "--compress", "--local-infile=1", t.DB] + list(args) +
                       ["-e", sql], capture_output=True, timeout=120)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace")


def check_cli(port, tls_port):
    sql = ("SELECT MD5(GROUP_CONCAT(seq)) FROM seq_1_to_100000; SELECT LENGTH(REPEAT('xy', "
           "3000000)); SELECT seq, REPEAT('z', seq % 100) FROM seq_1_to_20000")
    want = cli(t.DIRECT_PORT, sql=sql)
    got = cli(port, sql=sql)
    t.check(want[0] == 0 and got[:2] == want[:2], "the mariadb CLI with --compress: the same "
            "output as direct (%d bytes, md5 %s)" % (len(got[1]), hashlib.md5(got[1]).hexdigest()),
            got[2])
    rc, out, err = cli(port, sql="status")
    t.check(rc == 0 and b"Compressed" in out, "the CLI's status says the protocol is compressed",
            err)
    rc, out, err = cli(port, sql="DELETE FROM z_load; LOAD DATA LOCAL INFILE '%s' INTO TABLE "
                       "z_load FIELDS TERMINATED BY ','; SELECT COUNT(*) FROM z_load" % DATA_FILE)
    t.check(rc == 0 and out.split()[-1] == b"20000", "LOAD DATA LOCAL of 2 MB with --compress",
            (out[-200:], err))
    rc, out, err = cli(tls_port, "--ssl", "--skip-ssl-verify-server-cert", sql="status")
    t.check(rc == 0 and b"Compressed" in out and b"Cipher in use" in out,
            "TLS and compression at once", (out[-400:], err))
    rc, out, err = cli(tls_port, "--ssl", "--skip-ssl-verify-server-cert", sql=sql)
    t.check(rc == 0 and out == want[1], "the large results over TLS and compression", err)


def main():
    proxy = t.Proxy("compress_proxy", rules=RULES)
    off = t.Proxy("compress_off_proxy", options={"compression": "no"})
    tls = t.Proxy("compress_tls_proxy", options={"tls_cert": os.path.join(SERVER_TLS, "cert.pem"),
                                                 "tls_key": os.path.join(SERVER_TLS, "key.pem")})
    with proxy, off, tls:
        t.check(greeting_caps(t.DIRECT_PORT) & raw.CLIENT_COMPRESS,
                "the server's greeting offers CLIENT_COMPRESS")
        t.check(greeting_caps(proxy.port) & raw.CLIENT_COMPRESS,
                "the proxy's greeting offers it too")
        check_refused_when_off(off.port)
        check_same_as_direct(proxy.port)
        check_bytes(proxy.port)
        check_corrupt(proxy.port)
        check_rules(proxy.port)
        check_slow_reader(proxy.port)
        check_cli(proxy.port, tls.port)
    t.done()


if __name__ == "__main__":
    main()
