#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the fuzz targets' seed corpus, tests/fuzz/corpus/<target>/.

Every seed is made here, so the corpus can be re-made and reviewed:
protocol packets built by hand in the layouts MariaDB 10.11 and MySQL 8
send, statements and rule texts taken from the unit tests' string
literals, the example rules and the example config. Each target's input
layout (its leading option bytes) is in its opening comment in
tests/fuzz/. Run from anywhere; it replaces the corpus folders.
"""
import hashlib
import pathlib
import re
import os
import shutil
import ssl
import struct
import subprocess
import tempfile
import zlib

import zstandard

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fuzz" / "corpus"
MAX_STATEMENTS = 120  # per SQL target: keeps the corpus small


def pkt(payload, seq=0):
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


def lenenc(n):
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + struct.pack("<H", n)
    return b"\xfd" + struct.pack("<I", n)[:3]


def lstr(s):
    s = s.encode() if isinstance(s, str) else s
    return lenenc(len(s)) + s


def ok(affected=0, insert_id=0, status=0x0002, warnings=0, head=b"\x00"):
    return head + lenenc(affected) + lenenc(insert_id) + struct.pack("<HH", status, warnings)


def err(code=1064, state=b"42000", msg=b"You have an error in your SQL syntax"):
    return b"\xff" + struct.pack("<H", code) + b"#" + state + msg


def eof(status=0x0002, warnings=0):
    return b"\xfe" + struct.pack("<HH", warnings, status)


def greeting(version, caps, ext_caps=0):
    return (b"\x0a" + version + b"\x00" + struct.pack("<I", 42) + b"abcdefgh\x00" +
            struct.pack("<H", caps & 0xffff) + b"\x2d" + struct.pack("<H", 0x0002) +
            struct.pack("<H", caps >> 16) + b"\x15" + b"\x00" * 6 +
            struct.pack("<I", ext_caps) + b"ijklmnopqrst\x00" + b"mysql_native_password\x00")


def handshake(caps, user=b"app", db=b"shop", auth=b"\x01" * 20):
    body = struct.pack("<IIB", caps, 1 << 24, 45) + b"\x00" * 23
    body += user + b"\x00"
    body += lstr(auth) if caps & (1 << 21) else bytes([len(auth)]) + auth
    if caps & (1 << 3):
        body += db + b"\x00"
    if caps & (1 << 19):
        body += b"mysql_native_password\x00"
    return body


def coldef(name, table="t", type_=0xfd, charset=45, flags=1):
    return (lstr("def") + lstr("shop") + lstr(table) + lstr(table) + lstr(name) + lstr(name) +
            b"\x0c" + struct.pack("<HIBHB", charset, 255, type_, flags, 0) + b"\x00\x00")


def coldef_ext(name, info=b"", table="t", type_=0xfc, charset=45, flags=0x90):
    """A column definition under MARIADB_CLIENT_EXTENDED_METADATA: a type-info
    string (key byte, lenenc value: 0 data type name, 1 format name) after
    org_name."""
    return (lstr("def") + lstr("shop") + lstr(table) + lstr(table) + lstr(name) + lstr(name) +
            lstr(info) + b"\x0c" + struct.pack("<HIBHB", charset, 255, type_, flags, 0) +
            b"\x00\x00")


def progress(stage=1, max_stage=2, permille=12345, info=b"copy to tmp table"):
    """A MariaDB progress report: an ERR header with code 0xFFFF."""
    return (b"\xff\xff\xff\x01" + bytes([stage, max_stage]) + struct.pack("<I", permille)[:3] +
            lstr(info))


def bulk_execute(stmt_id, rows, flags=128):
    """COM_STMT_BULK_EXECUTE: statement, flags (128: types sent), the types,
    then per row per parameter an indicator byte (0: a value follows, 1:
    NULL) and the value; every parameter here a LONGLONG."""
    p = struct.pack("<BIH", 0xfa, stmt_id, flags) + b"\x08\x00" * len(rows[0])
    for r in rows:
        for v in r:
            p += b"\x01" if v is None else b"\x00" + struct.pack("<q", v)
    return p


def row(*values):
    return b"".join(b"\xfb" if v is None else lstr(v) for v in values)


def stream(payloads):
    return b"".join(pkt(p, i + 1) for i, p in enumerate(payloads))


def c_strings(text):
    """The C string literals of text, adjacent ones joined, escapes decoded."""
    lit = r'"(?:[^"\\\n]|\\.)*"'
    for m in re.finditer(r"(%s)(?:\s*%s)*" % (lit, lit), text):
        parts = re.findall(lit, m.group(0))
        raw = "".join(p[1:-1] for p in parts)
        try:
            yield raw.encode().decode("unicode_escape").encode("latin-1")
        except (UnicodeDecodeError, UnicodeEncodeError):
            continue


def unit_strings():
    out = []
    for f in sorted((ROOT / "tests" / "unit").glob("test_*.c")):
        out.extend(c_strings(f.read_text(errors="replace")))
    return out


SQL_START = re.compile(rb"^\s*(SELECT|UPDATE|DELETE|INSERT|REPLACE|WITH|SET|CALL|BEGIN|"
                       rb"START|COMMIT|ROLLBACK|CREATE|ALTER|DROP|SHOW|USE|\(|/\*)", re.I)


def statements(strings):
    seen, out = set(), []
    for s in strings:
        if SQL_START.match(s) and s not in seen and len(s) < 600:
            seen.add(s)
            out.append(s)
    return out


def client_hello(max_version=None):
    """The first flight of Python's TLS client (OpenSSL's defaults), with its
    random, session id and X25519 key share made fixed, so the seed is the
    same each time it is made."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if max_version:
        ctx.maximum_version = max_version
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        conn.do_handshake()
    except ssl.SSLWantReadError:
        pass
    h = bytearray(outgoing.read())
    assert h[0] == 0x16 and h[5] == 0x01, "not a ClientHello record"
    h[11:43] = bytes(range(32))                        # random
    sid = h[43]
    h[44:44 + sid] = bytes(range(0x40, 0x40 + sid))     # legacy session id
    p = 44 + sid
    p += 2 + int.from_bytes(h[p:p + 2], "big")          # cipher suites
    p += 1 + h[p]                                       # compression methods
    p += 2
    while p < len(h):
        kind, n = struct.unpack(">HH", h[p:p + 4])
        if kind == 0x33:                                # key_share: each X25519 share
            q = p + 6
            while q < p + 4 + n:
                group, klen = struct.unpack(">HH", h[q:q + 4])
                assert group == 0x1d, "key share of a group other than X25519"
                h[q + 4:q + 4 + klen] = bytes(range(9, 9 + klen))
                q += 4 + klen
        p += 4 + n
    return bytes(h)


def tls_recordings():
    """Whole handshakes (TLS 1.3, and 1.2), one query and a close_notify, as
    an OpenSSL client sent them to fuzz_tls's server, which draws from a
    fixed generator, so they complete the handshake when replayed. Made by
    the fuzz build's fuzz_tls (MR_FUZZ_TLS_RECORD); none without it."""
    build = pathlib.Path(os.environ.get("MR_FUZZ_BUILD", ROOT / "build-fuzz"))
    binary = build / "tests" / "fuzz" / "fuzz_tls"
    if not binary.exists():
        print(f"fuzz_corpus: {binary} not built (scripts/fuzz.sh builds it): "
              "fuzz_tls gets no whole-handshake seeds")
        return []
    with tempfile.TemporaryDirectory() as d:
        prefix = os.path.join(d, "rec")
        subprocess.run([str(binary), "-runs=0"], env=dict(os.environ, MR_FUZZ_TLS_RECORD=prefix),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return [pathlib.Path(prefix + v).read_bytes() for v in ("13", "12")]


def pick(items, n):
    """n items spread over the list (keeps variety, not just the first file)."""
    if len(items) <= n:
        return items
    return [items[i * len(items) // n] for i in range(n)]


# Statements that run SQL of their own (sql/dynamic.h), byte 0 0x20: the
# default schema shop, where the fixed set's keep_orders says dynamic = refuse.
DYNAMIC_SEEDS = [
    b"\x20EXECUTE IMMEDIATE 'UPDATE t SET a = 1'",
    b"\x20PREPARE s FROM 'DELETE FROM t WHERE id = ?'",
    b"\x22EXECUTE IMMEDIATE 'UPDATE\\nt ' \"SET a = 'x\\'\"",
    b"\x20EXECUTE IMMEDIATE 'drop table orders' USING 1",
    b"\x20EXECUTE IMMEDIATE @q",
    b"\x00CALL p(1)",
    b"\x20BEGIN NOT ATOMIC UPDATE t SET a = 1; END",
    b"\x20/*!EXECUTE IMMEDIATE*/ CONCAT('UPDATE t', ' SET a = 1')",
    b"\x20EXECUTE IMMEDIATE 'EXECUTE IMMEDIATE ''CALL p()'''",
]


def write(target, seeds):
    d = OUT / target
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for s in seeds:
        (d / hashlib.sha1(s).hexdigest()[:16]).write_bytes(s)


def write_stmt_pool_seeds(three, qattrs):
    """fuzz_stmt_rewrite and fuzz_stmt_pool (their layouts are in their
    opening comments). three and qattrs: execute bodies after the 10-byte
    head, as fuzz_stmt_execute's seeds."""
    head = struct.pack("<BIBI", 0x17, 9, 0, 1)
    types3 = bytes([8, 0, 253, 0, 1, 0])
    bare3 = head + b"\x04\x00" + three[2 + len(types3):]       # the same values, no types
    qhead = struct.pack("<BIBI", 0x17, 9, 0x08, 1)
    qtypes = b"\x08\x00\x00" + b"\xfd\x00\x00" + b"\xfd\x00" + lstr("trace")
    qbare = qhead + b"\x03\x00\x00" + qattrs[3 + len(qtypes):]  # count, nulls, flag 0, values
    bulk = bulk_execute(9, [(1, 2), (3, None)], flags=0)
    bulk = bulk[:7] + bulk[7 + 4:]                                 # no types: flags 0
    prep_ok = b"\x00" + struct.pack("<IHHBH", 7, 2, 3, 0, 1)
    write("fuzz_stmt_rewrite", [
        b"\x03\x00\x06" + types3 + bare3, b"\x03\x00\x06" + types3 + head + three,
        b"\x02\xc0" + bytes([len(qtypes)]) + qtypes + qbare,
        b"\x02\x01\x04" + b"\x08\x00\x08\x00" + bulk,
        b"\x00\x02\x00" + struct.pack("<BIH", 0x18, 9, 1) + b"long data",
        b"\x01\x02\x00" + struct.pack("<BI", 0x19, 9),
        b"\x03\x02\x00" + struct.pack("<BII", 0x1c, 9, 100),
        b"\x00\x03\x00" + prep_ok, b"\x00\x03\x00" + prep_ok[:9],
    ])
    # op, argument pairs: prepare "SELECT ?, ?" (2 params), execute with types on
    # connection 0, long data, execute without types on connection 1, hold,
    # bulk, close the last, reset the session
    ex2 = struct.pack("<BI", 0, 1) + b"\x00\x01" + bytes([3, 0, 253, 0]) + struct.pack("<i", 5) + lstr("ab")
    bare2 = struct.pack("<BI", 0, 1) + b"\x00\x00" + struct.pack("<i", 6) + lstr("cd")
    bulk2 = struct.pack("<H", 0) + b"\x00" + struct.pack("<i", 1) + b"\x01"
    write("fuzz_stmt_pool", [
        b"\x00\x11" + b"\x03" + bytes([len(ex2)]) + ex2 + b"\x02\x04abcd" +
        b"\x0b" + bytes([len(bare2)]) + bare2 + b"\x0c\x00" + b"\x03" + bytes([len(bare2)]) + bare2 +
        b"\x07" + bytes([len(bulk2)]) + bulk2 + b"\x01\xff\x06\x00",
        b"\x00\x00\x00\x01\x00\x02\x00\x03\x00\x04\x03\x00\x0b\x00\x01\x01\x01\x02" * 3,
    ])


def main():
    strings = unit_strings()
    stmts = statements(strings)
    delayed = [s for s in stmts if b"DELAYED" in s.upper()]
    rules = [s for s in strings if s.startswith(b"[") and b"=" in s]
    example_rules = (ROOT / "rules" / "00-examples.rules").read_bytes()
    config = (ROOT / "dist" / "myrewrite.conf").read_bytes()

    caps41 = 0x000fa685 | (1 << 24)            # MariaDB 10.11's client caps, DEPRECATE_EOF on
    mariadb = greeting(b"5.5.5-10.11.6-MariaDB-0+deb12u1", 0xf7fe | (0x81bf << 16), 0x1d)
    mysql = greeting(b"8.0.36", 0xffff | (0xdfff << 16))
    write("fuzz_codec", [
        pkt(mariadb), pkt(mysql),
        pkt(handshake(caps41), 1), pkt(handshake(caps41 | (1 << 21)), 1),
        pkt(handshake(0x0a00 | 0x8000), 1),
        pkt(struct.pack("<IIB", 0x0a00 | (1 << 11), 1 << 24, 45) + b"\x00" * 23, 1),
        pkt(ok(3, 7, 0x0003, 1), 1), pkt(err(), 1), pkt(eof(), 5),
        pkt(b"\x11app\x00\x14" + b"\x02" * 20 + b"shop\x00\x2d\x00"),
        pkt(ok(1, 0, 0x4002) + b"\x00" + lstr(b"\x00" + lstr(lstr("autocommit") + lstr("ON"))), 1),
        # MariaDB extensions: a response asking for progress, bulk and both metadata
        # extensions; a progress report (read as an ERR); a bulk execute
        pkt(handshake(caps41 & ~1)[:28] + struct.pack("<I", 0x1d) + handshake(caps41 & ~1)[32:], 1),
        pkt(progress(), 3),
        pkt(bulk_execute(1, [(1, 2), (3, None)])),
        # COM_QUERY arguments under CLIENT_QUERY_ATTRIBUTES (MySQL 8): none, and
        # a VARCHAR, a LONGLONG and a NULL attribute before the text
        pkt(b"\x00\x01SELECT 1"),
        pkt(b"\x03\x01\x04\x01" + b"\x0f\x00" + lstr("trace") + b"\x08\x00" + lstr("n") +
            b"\xfe\x00" + lstr("z") + lstr("abc") + struct.pack("<q", 42) + b"SELECT 2"),
    ])

    text_rs = [b"\x02", coldef("id", type_=3, charset=63), coldef("name")]
    rows = [row("1", "a"), row("2", None)]
    streams = {
        # byte 0: bit 7 DEPRECATE_EOF, the rest the mr_expect kind (3 = RESULT)
        "ok": (3, [ok(1)]),
        "err": (3, [err()]),
        "text": (3, text_rs + [eof()] + rows + [eof()]),
        "text_deprecate": (0x80 | 3, text_rs + rows + [ok(head=b"\xfe")]),
        "multi": (3, [ok(1, status=0x000a), b"\x01", coldef("x"), eof(), row("1"), eof()]),
        "infile": (3, [b"\xfbdata.csv", ok(5)]),
        "execute": (4, [b"\x01", coldef("id", type_=3), eof(0x0042)]),
        # a compound statement with an open cursor of its own: CURSOR_EXISTS
        # with MORE_RESULTS in the column EOF, and the rows still follow
        "execute_block": (4, [b"\x01", coldef("a", type_=3), eof(0x006a),
                              b"\x00\x00\x01\x00\x00\x00", eof(0x006a), b"\x01",
                              coldef("n", type_=8), eof(0x006a), b"\x00\x00" + b"\x03" + b"\x00" * 7,
                              eof(0x006a), ok(status=0x0022)]),
        "execute_block_deprecate": (0x80 | 4, [b"\x01", coldef("a", type_=3),
                                               b"\x00\x00\x01\x00\x00\x00",
                                               ok(status=0x004a, head=b"\xfe"),
                                               ok(status=0x0002)]),
        "fetch": (5, [b"\x00\x00\x07\x00\x00\x00", eof(0x0082)]),
        "field_list": (6, [coldef("id"), coldef("name"), eof()]),
        "prepare": (7, [b"\x00\x01\x00\x00\x00\x01\x00\x01\x00\x00\x00\x00",
                        coldef("?"), eof(), coldef("id"), eof()]),
        "prepare_deprecate": (0x80 | 7, [b"\x00\x01\x00\x00\x00\x01\x00\x01\x00\x00\x00\x00",
                                         coldef("?"), coldef("id")]),
        "auth": (8, [b"\xfemysql_native_password\x00" + b"x" * 20, b"\x01\x03", ok()]),
        "one": (2, [b"Uptime: 10  Threads: 1"]),
        # MariaDB extensions (fuzz_tracker.c): bit 4 of byte 0 negotiates
        # MARIADB_CLIENT_PROGRESS, bit 5 MARIADB_CLIENT_CACHE_METADATA
        "progress": (0x10 | 3, [progress(1), progress(2, permille=99000), ok(400000)]),
        "progress_then_err": (0x10 | 3, [progress(), err(1062)]),
        "progress_rows": (0x10 | 3, text_rs + [eof(), row("1", "a"), progress(), eof()]),
        "cached_execute": (0x20 | 4, [b"\x02\x00", eof(), b"\x00\x00\x07\x00\x00\x00", eof()]),
        "cached_execute_deprecate": (0x80 | 0x20 | 4, [b"\x02\x00", b"\x00\x00\x07\x00\x00\x00",
                                                      ok(head=b"\xfe")]),
        "cached_text": (0x20 | 3, [b"\x01\x01", coldef("x"), eof(), row("1"), eof()]),
        "cached_cursor": (0x20 | 4, [b"\x03\x00", eof(0x0042)]),
        "extended_metadata": (3, [b"\x02", coldef_ext("j", b"\x01\x04json"),
                                  coldef_ext("a", b"\x00\x05inet6"), eof(), row("[1]", "::1"),
                                  eof()]),
        "bulk_returning": (4, [b"\x01", coldef("id", type_=3), eof(), b"\x00\x00\xe8\x03\x00\x00",
                               b"\x00\x00\xe9\x03\x00\x00", eof()]),
        # MySQL 8's CLIENT_OPTIONAL_RESULTSET_METADATA (bit 6): metadata_follows
        # after each column count and at byte 12 of a prepare-OK
        "optional_full": (0x40 | 0x80 | 3, [b"\x01\x01", coldef("x"), row("1"), ok(head=b"\xfe")]),
        "optional_none": (0x40 | 3, [b"\x02\x00", eof(), row("1", "a"), eof()]),
        "optional_none_deprecate": (0x40 | 0x80 | 4, [b"\x01\x00", b"\x00\x00\x07\x00\x00\x00",
                                                      ok(head=b"\xfe")]),
        "optional_prepare_none": (0x40 | 7, [b"\x00\x01\x00\x00\x00\x01\x00\x01\x00\x00\x00\x00\x00",
                                             eof(), eof()]),
        "optional_prepare_full": (0x40 | 0x80 | 7,
                                  [b"\x00\x01\x00\x00\x00\x01\x00\x01\x00\x00\x00\x00\x01",
                                   coldef("?"), coldef("id")]),
    }
    seeds = []
    for first, payloads in streams.values():
        seeds.append(bytes([first]) + stream(payloads))
    seeds.append(bytes([3]) + stream([ok(1)]) + bytes([3]) + stream([err()]))  # pipelined
    write("fuzz_tracker", seeds)

    def zframe(plain, seq=0, packed=True, zstd=False):
        body = (zstandard.ZstdCompressor(level=3).compress(plain) if zstd else
                zlib.compress(plain)) if packed else plain
        return (struct.pack("<I", len(body))[:3] + bytes([seq]) +
                struct.pack("<I", len(plain) if packed else 0)[:3] + body)
    query = pkt(b"\x03SELECT seq, REPEAT('x', 80) FROM seq_1_to_100")
    write("fuzz_zframe", [
        zframe(query), zframe(pkt(b"\x03SELECT 1"), packed=False),
        zframe(query, 0) + zframe(pkt(b"a,b\n" * 500, 2), 1),
        zframe(b"\x00" * 4000), zframe(query)[:20],
        zframe(query, zstd=True), zframe(query, 0, zstd=True) +
        zframe(pkt(b"a,b\n" * 500, 2), 1, zstd=True), zframe(b"\x00" * 4000, zstd=True),
    ])

    # fuzz_tls and fuzz_conn_z: byte 0 options, byte 1 k, byte 2 the piece
    # size (tests/fuzz/fuzz_conn.h), then what the hostile peer sends
    hello13, hello12 = client_hello(), client_hello(ssl.TLSVersion.TLSv1_2)
    write("fuzz_tls", [
        b"\x00\x00\x00" + hello13, b"\x00\x05\x00" + hello13,    # pre: the record header
        b"\x04\x05\x00" + hello13, b"\x04\xff\x00" + hello13,    # read behind the SSLRequest
        b"\x00\x00\x00" + hello12, b"\x04\xff\x00" + hello12,
        b"\x02\x00\x00" + hello12,                                # TLS 1.3 only: refused
        b"\x01\x00\x00" + hello13, b"\x03\x00\x00" + hello13,    # a client certificate asked
        b"\x00\x00\x07" + hello13,                                # in 7-byte pieces
        b"\x00\x00\x00" + hello13 + hello13, b"\x00\x00\x00" + hello13[:100],
        b"\x00\x00\x00" + b"\x15\x03\x03\x00\x02\x02\x28",       # an alert first
    ] + tls_recordings())

    rows_pkt = pkt(b"a,b\n" * 500, 2)
    zlib_stream = zframe(query, 0) + zframe(rows_pkt, 1)
    zstd_stream = zframe(query, 0, zstd=True) + zframe(rows_pkt, 1, zstd=True)
    stored = zframe(pkt(b"\x03SELECT 1"), packed=False) + zframe(b"", 1, packed=False)
    bad = bytearray(zframe(query, 2))
    bad[12] ^= 0xff
    write("fuzz_conn_z", [
        b"\x00\x00\x00" + zlib_stream, b"\x01\x00\x00" + zstd_stream,
        b"\x10\x07\x00" + zlib_stream, b"\x11\x14\x03" + zstd_stream,  # a head read plain
        b"\x22\x00\x00" + zlib_stream + zframe(b"\x00" * 200000, 2),   # in_limit 64, READ_SOME
        b"\x41\x00\x00" + zstd_stream + zframe(b"\x00" * 200000, 2, zstd=True),
        b"\x00\x00\x00" + stored + zlib_stream[:30],                  # stored; a cut frame
        b"\x00\x00\x00" + zlib_stream + bytes(bad),                    # a corrupt frame
        # a compressed frame of 0 payload bytes was reported as out of memory, not EPROTO
        b"\x00\x00\x00" + b"\x00\x00\x00\x00\x00\x33\x02",
    ])

    three = (b"\x04\x01" + bytes([8, 0, 253, 0, 1, 0]) + struct.pack("<q", -7) + b"\x03abc")
    date = (b"\x00\x01" + bytes([12, 0, 10, 0]) + b"\x0b\xe8\x07\x03\x0f\x0a\x1e\x05" +
            struct.pack("<I", 123) + b"\x04\xe8\x07\x01\x02")
    nums = (b"\x00\x01" + bytes([1, 0, 2, 0x80, 3, 0, 4, 0, 5, 0]) + b"\xfe\xff\xff" +
            b"\x00\x00\x00\x80" + struct.pack("<f", 1.5) + struct.pack("<d", 2.5))
    # bulk execute bodies after the 10-byte head the target skips: the decoder
    # reads them as an execute's (the proxy never decodes a bulk execute: it
    # relays it or refuses it whole), which must fail or stay in bounds
    bulk = bulk_execute(1, [(1, 2), (3, None), (5, 6)])
    # under CLIENT_QUERY_ATTRIBUTES (byte 1 bit 7; bit 6 PARAMETER_COUNT_AVAILABLE):
    # a count, names after the types, an attribute after the statement's values
    qattrs = (b"\x03\x00\x01" + b"\x08\x00\x00" + b"\xfd\x00\x00" + b"\xfd\x00" + lstr("trace") +
              struct.pack("<q", -7) + lstr("abc") + lstr("xyz"))
    attr_only = b"\x01\x00\x01\xfd\x00" + lstr("k") + lstr("v")
    write("fuzz_stmt_execute", [b"\x03\x03" + three, b"\x02\x02" + date, b"\x05\x05" + nums,
                                b"\x03\x01" + b"\x00\x00" + struct.pack("<q", 1),
                                b"\x02\x02" + bulk[1:], b"\x02\x02" + b"\x00" * 3 + bulk,
                                b"\x02\x82" + qattrs, b"\x02\x82" + b"\x03\x00\x00" + qattrs[17:],
                                b"\x00\xc0" + attr_only])

    write_stmt_pool_seeds(three, qattrs)
    sql_seeds = pick(stmts, MAX_STATEMENTS)

    write("fuzz_sql", [bytes([i % 8]) + s for i, s in enumerate(sql_seeds)])
    write("fuzz_rules_match", [bytes([(i * 37) % 256]) + s for i, s in enumerate(sql_seeds)] +
          [b"\x00SELECT * FROM orders WHERE customer_id = 7",
           b"\x00SELECT x FROM report_rows WHERE y = 1",
           b"\x00SELECT * FROM lines ORDER BY order_id LIMIT 1000, 10",
           b"\x00SELECT * FROM events ORDER BY id LIMIT 500, 10",
           b"\x00UPDATE DELAYED mem SET n = n + 1, title = 'x' WHERE a = 1 AND b = 'q'",
           b"\x00UPDATE DELAYED counters SET hits = hits + 1 WHERE id IN (1, 2, 3)",
           b"\x00UPDATE jobs SET owner = 'w1', status = 'claimed' WHERE status = 'free' LIMIT 1",
           b"\x18SELECT 'unterminated", b"\x00DELETE FROM t"] + DYNAMIC_SEEDS)
    write("fuzz_delayed", [bytes([i % 4]) + s for i, s in enumerate(pick(delayed, 60))] +
          [b"\x00UPDATE DELAYED mem SET n = n + 1, m = m - 2, title = 'it''s' WHERE a = 1 AND b = x'41'",
           b"\x01UPDATE DELAYED mem SET n = n + ? WHERE a = ? AND b = ?",
           b"\x00DELETE DELAYED FROM shop.daily WHERE page = 3 AND lang IN ('en', 'fr')",
           b"\x00UPDATE DELAYED counters SET note = 'x', hits = hits + 1 WHERE id = -5"])
    write("fuzz_server_len", [b"SELECT 1\x00", b"SELECT 1\x00 ;\xa0", b"SELECT 1\x00\x00",
                              b"SELECT 1;", b"\x00"] + pick(stmts, 10))

    write("fuzz_rules_load", [example_rules] + pick(rules, 60))
    write("fuzz_ini", [example_rules, config] + pick(rules, 20))

    admin = [b"SHOW VERSION", b"show rules;", b"SHOW DIGESTS", b"RELOAD RULES",
             b"EXPLAIN REWRITE 'SELECT * FROM t WHERE a = \\'x\\''",
             b"EXPLAIN REWRITE \"SELECT 1\"", b"FLUSH DELAYED shop.counters",
             b"SHOW DELAYED REJECTED t", b"SELECT @@version_comment LIMIT 1",
             b"SET NAMES utf8mb4", b"  ;  ", handshake(0x000aa285),
             handshake(0x000aa285 | (1 << 21)), handshake(0x0a00)]
    write("fuzz_admin", admin)

    # byte 0: 2 column definitions; bytes 1-3: a type and charset for the direct literal
    page = (stream([coldef("id", type_=3, charset=63, flags=1 | 2),
                    coldef("name", type_=0xfd, charset=45, flags=1)]) +
            stream([row("7", "abc"), row("-12", "it's"), eof()]))
    write("fuzz_keyset", [b"\x02\x03\x3f\x00" + page,
                          b"\x02\xf6\x3f\x00-12.50",
                          b"\x02\x0c\x3f\x002024-03-15 10:30:05.000123",
                          b"\x02\xfd\x2d\x00caf\xc3\xa9",
                          b"\x02\xfc\x3f\x00\x00\x01\xff"])

    # byte 0: the client (bit 0 SESSION_TRACK, bits 1-2 transaction info, bit 3 schema,
    # bit 4 state change); byte 1: the length of its variable list, which follows; then
    # an OK as a connection with every tracker on gets it from mariadbd 10.11
    def sysvar(name, value):
        body = lstr(name) + lstr(value)
        return b"\x00" + lenenc(len(body)) + body

    def tracked(state, info=b"", status=0x4002, head=b"\x00"):
        return ok(status=status, head=head) + lstr(info) + lstr(state)

    change = b"\x02\x01\x31"
    names = (sysvar("character_set_results", "latin1") +
             sysvar("character_set_connection", "latin1") +
             sysvar("character_set_client", "latin1") + change)
    trx = b"\x05\x09\x08T_______" + b"\x04\x13\x12START TRANSACTION;"
    seeds = []
    for opt, vars_ in ((0x09, b""), (0x00, b""), (0x1f, b"*"), (0x0b, b"time_zone, sql_mode"),
                       (0x15, b"autocommit,*")):
        head = bytes([opt, len(vars_)]) + vars_
        seeds += [head + tracked(sysvar("time_zone", "+01:00") + change),
                  head + tracked(names),
                  head + tracked(b"\x01\x05\x04test" + change),
                  head + tracked(trx, status=0x4003),
                  head + tracked(b"\x04\x2f\x2dSET TRANSACTION ISOLATION LEVEL SERIALIZABLE;"),
                  head + tracked(change, b"Rows matched: 1  Changed: 1  Warnings: 0"),
                  head + tracked(b"\x05\x09\x08T_R___S_", head=b"\xfe", status=0x4003),
                  head + ok() + lstr(b"Records: 2  Duplicates: 0  Warnings: 0")]
    write("fuzz_ok_view", seeds)


if __name__ == "__main__":
    main()
