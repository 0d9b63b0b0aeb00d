#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Captures the OK packets test_ok_view.c replays: tests/unit/ok_view_vectors.h.

For one list of statements it opens, on a running mariadbd, one connection
with every session tracker on (as the proxy's pooled connections run) and
one per client kind: its capabilities (CLIENT_SESSION_TRACK or not,
CLIENT_DEPRECATE_EOF or not) and its own session_track_* settings. Each
statement runs on all of them; the OK ending each answer (0x00, or the 0xFE
OK ending a result set under DEPRECATE_EOF) and, for a client without
DEPRECATE_EOF, the EOF packets of a result set are kept from both sides.
The test asserts that mr_ok_for_client (mr_eof_for_client) turns the
all-trackers packet into the direct one. A statement that sets a session_track_* variable also runs on
the all-trackers connection, which then sets its trackers back (what the
proxy would do); the client's settings after it go into the vector.

Every statement gives the same bytes on every run (no ids, no times), but
for one thing: the order of system-variable entries in one OK is the order
of a hash keyed by the variables' addresses in the server (it differs
between the two connections and between server builds); such vectors are
marked order_free and compared with those entries sorted.

    MR_DIRECT_PORT=23412 /usr/bin/python3 tests/unit/gen_ok_view_vectors.py \
        > tests/unit/ok_view_vectors.h && clang-format -i tests/unit/ok_view_vectors.h

(a mariadbd as tests/lib/env.sh's mr_start_mariadb starts it: user app,
database test).
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import rawproto_lib as rp  # noqa: E402

PORT = int(os.environ.get("MR_DIRECT_PORT", "23306"))
ALL_ON = [("session_track_system_variables", "*"), ("session_track_schema", "ON"),
          ("session_track_state_change", "ON"),
          ("session_track_transaction_info", "CHARACTERISTICS")]
TRACK_VARS = ("session_track_system_variables", "session_track_schema",
              "session_track_state_change", "session_track_transaction_info")
DEFAULTS = {"session_track_system_variables":
            "autocommit,character_set_client,character_set_connection,"
            "character_set_results,time_zone",
            "session_track_schema": "ON", "session_track_state_change": "OFF",
            "session_track_transaction_info": "OFF"}

# (statement, {session_track_* variable: the client's value after it})
STATEMENTS = [
    ("SET time_zone='+01:00'", {}),
    ("SET @a=1", {}),
    ("USE mysql", {}),
    ("USE test", {}),
    ("SET NAMES latin1", {}),
    ("SET NAMES utf8mb4", {}),
    ("SET sql_mode='STRICT_TRANS_TABLES'", {}),
    ("CREATE TEMPORARY TABLE okv_tmp (id INT PRIMARY KEY, v INT) ENGINE=InnoDB", {}),
    ("INSERT INTO okv_tmp VALUES (1, 1), (2, 2)", {}),
    ("UPDATE okv_tmp SET v = v + 1", {}),
    ("SELECT v FROM okv_tmp WHERE id = 1", {}),
    ("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", {}),
    ("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", {}),
    ("START TRANSACTION", {}),
    ("SELECT v FROM okv_tmp WHERE id = 1", {}),
    ("UPDATE okv_tmp SET v = v + 1 WHERE id = 1", {}),
    ("COMMIT", {}),
    ("SET autocommit=0", {}),
    ("INSERT INTO okv_tmp VALUES (3, 3)", {}),
    ("ROLLBACK", {}),
    ("SET autocommit=1", {}),
    ("START TRANSACTION READ ONLY", {}),
    ("SELECT 1", {}),
    ("COMMIT", {}),
    ("SET session_track_schema=OFF", {"session_track_schema": "OFF"}),
    ("USE mysql", {}),
    ("SET session_track_schema=ON", {"session_track_schema": "ON"}),
    ("USE test", {}),
    ("SET session_track_state_change=ON", {"session_track_state_change": "ON"}),
    ("SET @b=2", {}),
    ("SET session_track_state_change=OFF", {"session_track_state_change": "OFF"}),
    ("SET session_track_system_variables='time_zone, SQL_MODE'",
     {"session_track_system_variables": "sql_mode,time_zone"}),
    ("SET NAMES latin1", {}),
    ("SET sql_mode=''", {}),
    ("SET time_zone='+02:00'", {}),
    ("SET session_track_system_variables=DEFAULT",
     {"session_track_system_variables": DEFAULTS["session_track_system_variables"]}),
    ("DROP TEMPORARY TABLE okv_tmp", {}),
]

# (name, CLIENT_SESSION_TRACK, CLIENT_DEPRECATE_EOF, its own settings at connect)
CLIENTS = [
    ("default", True, False, {}),
    ("default_eof", True, True, {}),
    ("notrack", False, False, {}),
    ("notrack_eof", False, True, {}),
    ("custom", True, True, {"session_track_system_variables": "sql_mode,time_zone",
                             "session_track_schema": "OFF",
                             "session_track_state_change": "ON",
                             "session_track_transaction_info": "STATE"}),
    ("custom_noeof", True, False, {"session_track_system_variables": "sql_mode,time_zone",
                                   "session_track_schema": "OFF",
                                   "session_track_state_change": "ON",
                                   "session_track_transaction_info": "STATE"}),
    ("allvars", True, True, {"session_track_system_variables": "*",
                              "session_track_transaction_info": "CHARACTERISTICS"}),
]


class Conn(rp.Conn):
    """rawproto_lib's connection with CLIENT_SESSION_TRACK chosen."""

    def __init__(self, track, deprecate_eof):
        self.track = track
        super().__init__(PORT, deprecate_eof=deprecate_eof, db="test")

    def handshake_response(self, *args, **kwargs):
        p = super().handshake_response(*args, **kwargs)
        if not self.track:
            self.flags &= ~rp.CLIENT_SESSION_TRACK
        return struct.pack("<I", self.flags) + p[4:]


def set_all(c, pairs):
    for name, value in pairs:
        c.must("SET %s='%s'" % (name, value))


def ends(c, sql):
    """The packets that end the answer to sql or its result set: ("o", the
    OK), ("e", an EOF) for a client without DEPRECATE_EOF."""
    r = c.query(sql)
    if r.kind == "err":
        raise rp.ServerError(*r.err)
    out = []
    for _, p in r.packets:
        if p[:1] == b"\xfe" and len(p) < 9 and not c.deprecate_eof:
            out.append(("e", p))
    p = r.packets[-1][1]
    if p[:1] == b"\x00" or (c.deprecate_eof and p[:1] == b"\xfe" and len(p) >= 7):
        out.append(("o", p))
    return out


def sysvar_names(p, track):
    """The names of the system-variable entries of an OK, in order."""
    if not track:
        return []
    _, i = rp.read_lenenc(p, 1)
    _, i = rp.read_lenenc(p, i)
    status = struct.unpack_from("<H", p, i)[0]
    i += 4
    if i >= len(p) or not status & 0x4000:
        return []
    n, i = rp.read_lenenc(p, i)
    i += n
    n, i = rp.read_lenenc(p, i)
    end, names = i + n, []
    while i < end:
        kind = p[i]
        n, j = rp.read_lenenc(p, i + 1)
        if kind == 0:
            m, k = rp.read_lenenc(p, j)
            names.append(bytes(p[k:k + m]))
        i = j + n
    return names


def order_free(all_on, direct, track):
    """Do the direct packet's variables come in another order than the
    all-trackers packet's?"""
    mine = [n for n in sysvar_names(all_on, True) if n in sysvar_names(direct, track)]
    return mine != sysvar_names(direct, track)


def canonical(p):
    """An OK with its system-variable entries sorted (their order is the
    server's hash order; see above); any other packet as it is."""
    if p[:1] not in (b"\x00", b"\xfe") or len(p) < 9:
        return bytes(p)
    _, i = rp.read_lenenc(p, 1)
    _, i = rp.read_lenenc(p, i)
    if i + 4 >= len(p) or not struct.unpack_from("<H", p, i)[0] & 0x4000:
        return bytes(p)
    n, j = rp.read_lenenc(p, i + 4)
    n, j = rp.read_lenenc(p, j + n)
    entries, k = [], j
    while k < j + n:
        m, e = rp.read_lenenc(p, k + 1)
        entries.append(bytes(p[k:e + m]))
        k = e + m
    names = sorted(x for x in entries if x[0] == 0)
    return bytes(p[:j]) + b"".join(names + [x for x in entries if x[0] != 0])


def read_header(path):
    """The vectors of a header this script wrote: (label, kind, caps, want
    values, all-trackers packet, direct packet)."""
    import re
    text = open(path).read()
    blob = r'((?:"[^"]*"\s*)+),\s*\d+'
    pat = (r'\{\s*"((?:[^"\\]|\\.)*)",\s*\'(.)\',\s*0x([0-9a-f]+)u,\s*\{([^}]*)\},\s*' +
           blob + r',\s*' + blob)

    def unhex(g):
        return bytes.fromhex("".join(re.findall(r"\\x([0-9a-f]{2})", g)))
    return [(m.group(1).replace('\\"', '"'), m.group(2), int(m.group(3), 16),
             tuple(re.findall(r'"([^"]*)"', m.group(4))), unhex(m.group(5)), unhex(m.group(6)))
            for m in re.finditer(pat, text)]


def capture():
    """Every vector, as read_header gives them."""
    vectors = []
    for client in CLIENTS:
        vectors += capture_client(*client)
    return [(label, kind, caps, tuple(want[k] for k in TRACK_VARS), pa, pd)
            for label, kind, caps, want, pa, pd in vectors]


def capture_client(name, track, eof, own):
    want = dict(DEFAULTS, **own)
    a = Conn(True, eof)
    d = Conn(track, eof)
    login = (a.auth_packets[-1][1], d.auth_packets[-1][1])
    set_all(a, ALL_ON)
    set_all(d, own.items())
    caps = d.flags
    out = [("%s: login" % name, "o", caps, dict(DEFAULTS), login[0], login[1])]
    for sql, changes in STATEMENTS:
        pa, pd = ends(a, sql), ends(d, sql)
        want.update(changes)
        if changes:
            set_all(a, ALL_ON)
        if [k for k, _ in pa] != [k for k, _ in pd]:
            raise rp.ProtoError("%s: %s: the answers differ in shape" % (name, sql))
        for (kind, x), (_, y) in zip(pa, pd):
            out.append(("%s: %s" % (name, sql), kind, caps, dict(want), x, y))
    a.close()
    d.close()
    return out


def c_bytes(b):
    return '"' + "".join("\\x%02x" % x for x in b) + '", ' + str(len(b))


def c_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    vectors = capture()
    print("/* SPDX-License-Identifier: Apache-2.0 */")
    print("/* Written by tests/unit/gen_ok_view_vectors.py from mariadbd %s: do not edit. */"
          % rp.Conn(PORT).greeting["version"].decode())
    print("#ifndef MYREWRITE_TEST_OK_VIEW_VECTORS_H")
    print("#define MYREWRITE_TEST_OK_VIEW_VECTORS_H")
    print("static const ok_vector ok_vectors[] = {")
    for label, kind, caps, want, pa, pd in vectors:
        track = bool(caps & rp.CLIENT_SESSION_TRACK) and kind == "o"
        print("{%s, '%s', 0x%08xu, {%s}, %s, %s, %s}," % (
            c_str(label), kind, caps, ", ".join(c_str(v) for v in want),
            c_bytes(pa), c_bytes(pd), "true" if order_free(pa, pd, track) else "false"))
    print("};")
    print("#endif")


if __name__ == "__main__":
    main()
