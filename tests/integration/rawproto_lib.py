# SPDX-License-Identifier: Apache-2.0
"""A minimal MySQL/MariaDB client speaking the wire protocol by hand.

Standard library only. It exists so tests can negotiate what the usual
client libraries never ask for (CLIENT_DEPRECATE_EOF), send packets those
libraries would refuse to send, and keep every packet a server (or the
proxy) sends as raw bytes for byte-for-byte comparison.

Every response is recorded as a list of wire packets: (sequence id,
payload). Payloads larger than BIG are recorded as ("#", length, sha1) so
that 16 MiB rows do not have to be kept around.
"""
import hashlib
import os
import re
import socket
import struct
import sys
import time

HOST = os.environ.get("MR_HOST", "127.0.0.1")
DIRECT_PORT = int(os.environ.get("MR_DIRECT_PORT", "23390"))
PROXY_PORT = int(os.environ.get("MR_PROXY_PORT", "26090"))
USER = os.environ.get("MR_USER", "app")
PASSWORD = os.environ.get("MR_PASSWORD", "apppw")
DB = os.environ.get("MR_DB", "test")
DIRECT_ONLY = os.environ.get("MR_DIRECT_ONLY", "0") == "1" or PROXY_PORT == DIRECT_PORT

# ---- protocol constants ----

# Seconds a read may wait; lowered by the test once a peer is seen hanging.
TIMEOUT = 5.0

MAX_PAYLOAD = 0xFFFFFF
BIG = 4096  # payloads above this are recorded as length + sha1

CLIENT_LONG_PASSWORD = 1 << 0  # CLIENT_MYSQL; MariaDB servers clear it
CLIENT_CONNECT_WITH_DB = 1 << 3
CLIENT_COMPRESS = 1 << 5
CLIENT_LOCAL_FILES = 1 << 7
CLIENT_PROTOCOL_41 = 1 << 9
CLIENT_SSL = 1 << 11
CLIENT_TRANSACTIONS = 1 << 13
CLIENT_SECURE_CONNECTION = 1 << 15
CLIENT_MULTI_STATEMENTS = 1 << 16
CLIENT_MULTI_RESULTS = 1 << 17
CLIENT_PS_MULTI_RESULTS = 1 << 18
CLIENT_PLUGIN_AUTH = 1 << 19
CLIENT_CONNECT_ATTRS = 1 << 20
CLIENT_PLUGIN_AUTH_LENENC = 1 << 21
CLIENT_SESSION_TRACK = 1 << 23
CLIENT_DEPRECATE_EOF = 1 << 24
CLIENT_OPTIONAL_RESULTSET_METADATA = 1 << 25
CLIENT_ZSTD_COMPRESSION = 1 << 26
CLIENT_QUERY_ATTRIBUTES = 1 << 27
CLIENT_PROGRESS_OLD = 1 << 29
CLIENT_BIT30 = 1 << 30

# What the proxy clears in the greeting it relays (the shared proxy of the
# suite has no certificate; CLIENT_COMPRESS it offers as the server does;
# MySQL 8's CLIENT_QUERY_ATTRIBUTES and CLIENT_OPTIONAL_RESULTSET_METADATA it
# relays, and mariadbd offers neither), and what it offers of its own (zstd,
# under its default compression = yes: MariaDB never offers it).
PROXY_MASKED_CAPS = (CLIENT_SSL | CLIENT_ZSTD_COMPRESSION |
                     CLIENT_PROGRESS_OLD | CLIENT_BIT30)
PROXY_OFFERED_CAPS = CLIENT_ZSTD_COMPRESSION

# The MariaDB extended capabilities (upper 32 bits, unshifted) the proxy
# relays; it clears the others.
MARIADB_PROGRESS = 1 << 0
MARIADB_BULK = 1 << 2
MARIADB_EXTENDED_METADATA = 1 << 3
MARIADB_CACHE_METADATA = 1 << 4
PROXY_RELAYED_EXT_CAPS = (MARIADB_PROGRESS | MARIADB_BULK | MARIADB_EXTENDED_METADATA |
                          MARIADB_CACHE_METADATA)

BASE_FLAGS = (CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH |
              CLIENT_TRANSACTIONS | CLIENT_MULTI_STATEMENTS | CLIENT_MULTI_RESULTS |
              CLIENT_PS_MULTI_RESULTS | CLIENT_LOCAL_FILES | CLIENT_CONNECT_WITH_DB |
              CLIENT_SESSION_TRACK)

SERVER_MORE_RESULTS_EXISTS = 0x0008
SERVER_STATUS_CURSOR_EXISTS = 0x0040
SERVER_STATUS_LAST_ROW_SENT = 0x0080
SERVER_PS_OUT_PARAMS = 0x1000

COM_QUIT = 0x01
COM_CHANGE_USER = 0x11
COM_INIT_DB = 0x02
COM_QUERY = 0x03
COM_FIELD_LIST = 0x04
COM_STATISTICS = 0x09
COM_PING = 0x0E
COM_BINLOG_DUMP = 0x12
COM_REGISTER_SLAVE = 0x15
COM_STMT_PREPARE = 0x16
COM_STMT_EXECUTE = 0x17
COM_STMT_SEND_LONG_DATA = 0x18
COM_STMT_CLOSE = 0x19
COM_STMT_RESET = 0x1A
COM_SET_OPTION = 0x1B
COM_STMT_FETCH = 0x1C
COM_RESET_CONNECTION = 0x1F

TYPE_LONG = 0x03
TYPE_LONGLONG = 0x08
TYPE_VAR_STRING = 0xFD
TYPE_BLOB = 0xFC

CURSOR_TYPE_READ_ONLY = 1

# Errors whose message names a statement id (see Conn.read_prepare).
ER_UNKNOWN_STMT_HANDLER = 1243
ER_STMT_HAS_NO_OPEN_CURSOR = 1421
STMT_ID_ERRORS = (ER_UNKNOWN_STMT_HANDLER, ER_STMT_HAS_NO_OPEN_CURSOR)


class ProtoError(Exception):
    pass


class Closed(ProtoError):
    pass


class Timeout(ProtoError):
    pass


class ServerError(ProtoError):
    def __init__(self, code, msg):
        super().__init__("server error %d: %s" % (code, msg))
        self.code = code


# ---- small codecs ----

def lenenc_int(v):
    if v < 0xFB:
        return bytes([v])
    if v < 1 << 16:
        return b"\xfc" + struct.pack("<H", v)
    if v < 1 << 24:
        return b"\xfd" + struct.pack("<I", v)[:3]
    return b"\xfe" + struct.pack("<Q", v)


def read_lenenc(p, i):
    """Returns (value, next offset); value None for the NULL marker 0xFB."""
    b = p[i]
    if b < 0xFB:
        return b, i + 1
    if b == 0xFB:
        return None, i + 1
    if b == 0xFC:
        return struct.unpack_from("<H", p, i + 1)[0], i + 3
    if b == 0xFD:
        return p[i + 1] | p[i + 2] << 8 | p[i + 3] << 16, i + 4
    if b == 0xFE:
        return struct.unpack_from("<Q", p, i + 1)[0], i + 9
    raise ProtoError("0xFF is not a length-encoded integer")


def parse_ok(p):
    """OK packet (header 0x00 or 0xFE): (affected, insert_id, status, warnings)."""
    affected, i = read_lenenc(p, 1)
    insert_id, i = read_lenenc(p, i)
    status, warnings = struct.unpack_from("<HH", p, i)
    return affected, insert_id, status, warnings


def parse_err(p):
    code = struct.unpack_from("<H", p, 1)[0]
    msg = p[3:]
    if msg[:1] == b"#":
        msg = msg[6:]
    return code, bytes(msg).decode("utf-8", "replace")


def native_password(password, scramble):
    if not password:
        return b""
    h1 = hashlib.sha1(password.encode()).digest()
    h2 = hashlib.sha1(h1).digest()
    h3 = hashlib.sha1(scramble + h2).digest()
    return bytes(a ^ b for a, b in zip(h1, h3))


def frame(payload, seq):
    """Wire packets for one payload, split at 16 MiB; returns (bytes, next seq)."""
    out = []
    i = 0
    while True:
        chunk = payload[i:i + MAX_PAYLOAD]
        out.append(struct.pack("<I", len(chunk))[:3] + bytes([seq & 0xFF]))
        out.append(chunk)
        seq += 1
        i += len(chunk)
        if len(chunk) < MAX_PAYLOAD:
            break
    return b"".join(out), seq & 0xFF


def record_of(seq, payload):
    if len(payload) > BIG:
        return (seq, ("#", len(payload), hashlib.sha1(payload).hexdigest()))
    return (seq, bytes(payload))


def parse_greeting(p):
    g = {"raw": bytes(p)}
    g["protocol"] = p[0]
    end = p.index(0, 1)
    g["version"] = bytes(p[1:end])
    i = end + 1
    g["thread_id_off"] = i
    g["thread_id"] = struct.unpack_from("<I", p, i)[0]
    i += 4
    g["scramble1_off"] = i
    scramble = bytes(p[i:i + 8])
    i += 9  # 8 bytes of scramble, one filler
    g["caps_lo_off"] = i
    caps = struct.unpack_from("<H", p, i)[0]
    i += 2
    g["charset"] = g["status"] = g["auth_len"] = 0
    g["ext_caps"] = 0
    g["plugin"] = b""
    g["scramble2_off"] = None
    if i < len(p):
        g["charset"] = p[i]
        g["status"] = struct.unpack_from("<H", p, i + 1)[0]
        g["caps_hi_off"] = i + 3
        caps |= struct.unpack_from("<H", p, i + 3)[0] << 16
        g["auth_len"] = p[i + 5]
        g["reserved"] = bytes(p[i + 6:i + 12])
        g["ext_caps_off"] = i + 12
        g["ext_caps"] = struct.unpack_from("<I", p, i + 12)[0]
        i += 16
        if caps & CLIENT_SECURE_CONNECTION:
            n = max(13, g["auth_len"] - 8)
            g["scramble2_off"] = i
            g["scramble2_len"] = n
            scramble += bytes(p[i:i + n]).rstrip(b"\x00")[:12]
            i += n
        if caps & CLIENT_PLUGIN_AUTH:
            end = p.find(0, i)
            g["plugin"] = bytes(p[i:end if end >= 0 else len(p)])
    g["caps"] = caps
    g["mariadb"] = not (caps & CLIENT_LONG_PASSWORD)
    g["scramble"] = scramble
    return g


# ---- the connection ----

class Result:
    """What one response turned out to be, besides its packets."""

    def __init__(self):
        self.kind = None      # "ok", "err", "rows", "cursor", "infile", "eof", "raw"
        self.status = 0
        self.err = None       # (code, message)
        self.ok = None        # (affected, insert_id, status, warnings)
        self.rows = []        # raw row payloads (or digests for big rows)
        self.row_lengths = []
        self.sets = 0         # result sets seen
        self.stmt_id = None
        self.columns = 0
        self.params = 0
        self.infile = None
        self.packets = []


class Conn:
    def __init__(self, port, deprecate_eof=False, host=HOST, timeout=None, connect=True,
                 user=USER, password=PASSWORD, db=DB, plugin=b"mysql_native_password",
                 auth_data=None):
        self.port = port
        self.deprecate_eof = deprecate_eof
        self.sock = socket.create_connection((host, port), timeout=timeout or TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0
        self.seq = 0
        self.log = []          # (label, [(seq, payload|digest), ...]) per response
        self.masker = None     # optional payload -> payload, applied when recording
        self.greeting = None
        self.auth_packets = []
        self.flags = 0
        self.stmt_ids = {}
        if connect:
            self.read_greeting()
            self.authenticate(user, password, db, plugin, auth_data)

    # -- raw I/O --

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _fill(self, n):
        while len(self.buf) - self.pos < n:
            if self.pos > (8 << 20):
                del self.buf[:self.pos]
                self.pos = 0
            try:
                chunk = self.sock.recv(max(1 << 20, n - (len(self.buf) - self.pos)))
            except socket.timeout:
                raise Timeout("timed out waiting for the server (%d bytes buffered)"
                                 % (len(self.buf) - self.pos))
            except ConnectionResetError:
                raise Closed("connection reset")
            if not chunk:
                raise Closed("connection closed by peer")
            self.buf += chunk

    def _take(self, n):
        self._fill(n)
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out

    def read_wire(self):
        hdr = self._take(4)
        n = hdr[0] | hdr[1] << 8 | hdr[2] << 16
        return hdr[3], self._take(n)

    def read_packet(self, rec):
        """One logical packet (joining 16 MiB continuations); every wire
        packet goes to rec. Returns (first sequence id, payload)."""
        seq, payload = self.read_wire()
        self._record(rec, seq, payload)
        first = seq
        if len(payload) == MAX_PAYLOAD:
            parts = [payload]
            while len(payload) == MAX_PAYLOAD:
                seq, payload = self.read_wire()
                self._record(rec, seq, payload)
                parts.append(payload)
            payload = b"".join(parts)
        self.seq = (seq + 1) & 0xFF
        return first, payload

    def _record(self, rec, seq, payload):
        if self.masker is not None and len(payload) <= BIG:
            payload = self.masker(payload)
        if payload[:1] == b"\xff" and len(payload) > 3 and \
                struct.unpack_from("<H", payload, 1)[0] in STMT_ID_ERRORS:
            payload = re.sub(rb"\((\d+)\)", lambda m: b"(#%d)" % self.stmt_ids.get(
                int(m.group(1)), 0), payload)
        rec.append(record_of(seq, payload))

    def send_payload(self, payload, seq=None):
        data, self.seq = frame(payload, self.seq if seq is None else seq)
        self.sock.sendall(data)

    def send_command(self, payload):
        self.send_payload(payload, 0)

    # -- handshake --

    def read_greeting(self):
        seq, p = self.read_wire()
        if p[:1] == b"\xff":
            raise ServerError(*parse_err(p))
        self.greeting = parse_greeting(p)
        self.greeting["seq"] = seq
        self.seq = (seq + 1) & 0xFF
        return self.greeting

    def handshake_response(self, user, password, db, plugin, auth_data=None):
        g = self.greeting
        flags = BASE_FLAGS | (CLIENT_DEPRECATE_EOF if self.deprecate_eof else 0)
        if not db:
            flags &= ~CLIENT_CONNECT_WITH_DB
        self.flags = flags
        if auth_data is None:
            auth_data = native_password(password, g["scramble"])
        p = struct.pack("<IIB", flags, 1 << 30, 45) + b"\x00" * 23
        p += user.encode() + b"\x00"
        p += bytes([len(auth_data)]) + auth_data
        if db:
            p += db.encode() + b"\x00"
        p += plugin + b"\x00"
        return p

    def authenticate(self, user, password, db, plugin=b"mysql_native_password",
                     auth_data=None):
        self.send_payload(self.handshake_response(user, password, db, plugin, auth_data))
        rec = self.auth_packets
        while True:
            _, p = self.read_packet(rec)
            if p[:1] == b"\x00":
                return
            if p[:1] == b"\xff":
                raise ServerError(*parse_err(p))
            if p[:1] == b"\xfe":
                end = p.index(0, 1)
                name = bytes(p[1:end])
                data = bytes(p[end + 1:]).rstrip(b"\x00")
                if name != b"mysql_native_password":
                    raise ProtoError("cannot answer auth switch to %r" % name)
                self.switched_to = name
                self.send_payload(native_password(password, data))
                continue
            raise ProtoError("unexpected packet during authentication: %r" % p[:16])

    # -- responses --

    def _terminator(self, p):
        if p[:1] != b"\xfe":
            return False
        return len(p) < MAX_PAYLOAD if self.deprecate_eof else len(p) < 9

    def _status_of_terminator(self, p):
        if self.deprecate_eof and len(p) >= 7:
            return parse_ok(p)[2]
        return struct.unpack_from("<H", p, 3)[0] if len(p) >= 5 else 0

    def _keep_row(self, res, p):
        res.row_lengths.append(len(p))
        res.rows.append(p if len(p) <= BIG else record_of(0, p)[1])

    def read_result(self, rec, res=None, cursor=False):
        """A COM_QUERY / COM_STMT_EXECUTE response, through all result sets.
        Stops early (kind "infile") at a LOCAL INFILE request."""
        res = res or Result()
        res.packets = rec
        while True:
            _, p = self.read_packet(rec)
            if p[:1] == b"\xff":
                res.kind, res.err = "err", parse_err(p)
                return res
            if p[:1] == b"\x00":
                res.kind, res.ok = "ok", parse_ok(p)
                res.status = res.ok[2]
                if res.status & SERVER_MORE_RESULTS_EXISTS:
                    continue
                return res
            if p[:1] == b"\xfb":
                res.kind, res.infile = "infile", bytes(p[1:])
                return res
            ncol, _ = read_lenenc(p, 0)
            res.columns = ncol
            res.sets += 1
            for _ in range(ncol):
                self.read_packet(rec)
            if not self.deprecate_eof:
                _, p = self.read_packet(rec)
                if p[:1] != b"\xfe":
                    raise ProtoError("expected EOF after column definitions: %r" % p[:16])
                res.status = self._status_of_terminator(p)
                if cursor and res.status & SERVER_STATUS_CURSOR_EXISTS:
                    res.kind = "cursor"
                    return res
            pending = None
            if self.deprecate_eof and cursor:
                # No EOF after the metadata, but an opened cursor is still
                # announced by a 0xFE OK carrying SERVER_STATUS_CURSOR_EXISTS.
                _, pending = self.read_packet(rec)
                if self._terminator(pending):
                    st = self._status_of_terminator(pending)
                    if st & SERVER_STATUS_CURSOR_EXISTS:
                        res.kind, res.status = "cursor", st
                        return res
            while True:
                if pending is not None:
                    p, pending = pending, None
                else:
                    _, p = self.read_packet(rec)
                if p[:1] == b"\xff":
                    res.kind, res.err = "err", parse_err(p)
                    return res
                if self._terminator(p):
                    res.status = self._status_of_terminator(p)
                    break
                self._keep_row(res, p)
            res.kind = "rows"
            if res.status & SERVER_MORE_RESULTS_EXISTS:
                continue
            return res

    def read_rows(self, rec):
        """A COM_STMT_FETCH response: rows, then EOF/OK or ERR."""
        res = Result()
        res.packets = rec
        while True:
            _, p = self.read_packet(rec)
            if p[:1] == b"\xff":
                res.kind, res.err = "err", parse_err(p)
                return res
            if self._terminator(p):
                res.kind, res.status = "rows", self._status_of_terminator(p)
                return res
            self._keep_row(res, p)

    def read_one(self, rec):
        """OK / ERR / EOF / a bare string (COM_STATISTICS)."""
        res = Result()
        res.packets = rec
        _, p = self.read_packet(rec)
        if p[:1] == b"\xff":
            res.kind, res.err = "err", parse_err(p)
        elif p[:1] == b"\x00" and len(p) >= 7:
            res.kind, res.ok = "ok", parse_ok(p)
            res.status = res.ok[2]
        elif p[:1] == b"\xfe" and len(p) < MAX_PAYLOAD:
            res.kind = "eof"
            res.status = self._status_of_terminator(p)
        else:
            res.kind = "raw"
            res.rows.append(p)
        return res

    def read_prepare(self, rec):
        res = Result()
        res.packets = rec
        _, p = self.read_packet(rec)
        if p[:1] == b"\xff":
            res.kind, res.err = "err", parse_err(p)
            return res
        if p[:1] != b"\x00":
            raise ProtoError("expected COM_STMT_PREPARE_OK: %r" % p[:16])
        res.kind = "ok"
        res.stmt_id, res.columns, res.params = struct.unpack_from("<IHH", p, 1)
        # Statement ids come from a counter the server does not reset for
        # each connection: record the n-th id of this connection as n.
        nth = self.stmt_ids.setdefault(res.stmt_id, len(self.stmt_ids) + 1)
        rec[-1] = record_of(rec[-1][0], p[:1] + struct.pack("<I", nth) + p[5:])
        for count in (res.params, res.columns):
            if count:
                for _ in range(count):
                    self.read_packet(rec)
                if not self.deprecate_eof:
                    _, p = self.read_packet(rec)
                    if p[:1] != b"\xfe":
                        raise ProtoError("expected EOF after definitions: %r" % p[:16])
        return res

    def read_field_list(self, rec):
        res = Result()
        res.packets = rec
        while True:
            _, p = self.read_packet(rec)
            if p[:1] == b"\xff":
                res.kind, res.err = "err", parse_err(p)
                return res
            if p[:1] == b"\xfe" and len(p) < MAX_PAYLOAD:
                res.kind = "eof"
                return res
            res.columns += 1

    # -- commands (each response goes to self.log under a label) --

    def _logged(self, label):
        rec = []
        self.log.append((label, rec))
        return rec

    def query(self, sql, label=None):
        if isinstance(sql, str):
            sql = sql.encode()
        self.send_command(bytes([COM_QUERY]) + sql)
        label = label or "query " + sql[:60].decode("utf-8", "replace")
        return self.read_result(self._logged(label))

    def simple(self, cmd, arg=b"", label=None):
        self.send_command(bytes([cmd]) + arg)
        return self.read_one(self._logged(label or "cmd 0x%02x" % cmd))

    def must(self, sql):
        r = self.query(sql)
        if r.kind == "err":
            raise ServerError(*r.err)
        return r

    def prepare(self, sql, label=None):
        if isinstance(sql, str):
            sql = sql.encode()
        self.send_command(bytes([COM_STMT_PREPARE]) + sql)
        r = self.read_prepare(self._logged(label or "prepare " + sql[:60].decode()))
        if r.kind == "err":
            raise ServerError(*r.err)
        return r

    def execute(self, stmt_id, params=(), flags=0, label=None, long_data=()):
        """params: list of (type, value) with value None for NULL; indexes in
        long_data were sent with COM_STMT_SEND_LONG_DATA and carry no value."""
        self.send_command(execute_packet(stmt_id, params, flags, long_data))
        return self.read_result(self._logged(label or "execute"),
                                cursor=bool(flags & CURSOR_TYPE_READ_ONLY))

    def fetch(self, stmt_id, rows, label=None):
        self.send_command(struct.pack("<BII", COM_STMT_FETCH, stmt_id, rows))
        return self.read_rows(self._logged(label or "fetch"))

    def ping(self, label="ping"):
        return self.simple(COM_PING, label=label)

    def change_user(self, user, password, db, label):
        """COM_CHANGE_USER with mysql_native_password (and no connect
        attributes, when the login said it sends them); an auth switch
        request is answered and recorded with its scramble masked."""
        auth = native_password(password, self.greeting["scramble"])
        self.send_command(bytes([COM_CHANGE_USER]) + user.encode() + b"\x00" + bytes([len(auth)])
                          + auth + db.encode() + b"\x00" + struct.pack("<H", 45)
                          + b"mysql_native_password\x00"
                          + (b"\x00" if self.flags & CLIENT_CONNECT_ATTRS else b""))
        rec = self._logged(label)
        res = Result()
        res.packets = rec
        while True:
            _, p = self.read_packet(rec)
            if p[:1] == b"\x00":
                res.kind, res.ok = "ok", parse_ok(p)
                return res
            if p[:1] == b"\xff":
                res.kind, res.err = "err", parse_err(p)
                return res
            if p[:1] != b"\xfe":
                raise ProtoError("unexpected packet after COM_CHANGE_USER: %r" % p[:16])
            end = p.index(0, 1)
            rec[-1] = (rec[-1][0], bytes(p[:end + 1]) + b"<scramble>")
            self.switched_to = bytes(p[1:end])
            self.send_payload(native_password(password, bytes(p[end + 1:]).rstrip(b"\x00")))

    def drain_until_closed(self, seconds):
        """Reads until the peer closes; returns (closed, packets seen, elapsed)."""
        start = time.monotonic()
        self.sock.settimeout(0.2)
        seen = []
        while time.monotonic() - start < seconds:
            try:
                seen.append(self.read_wire())
            except Closed:
                return True, seen, time.monotonic() - start
            except ProtoError:
                continue  # timeout slice: keep waiting
            except OSError:
                return True, seen, time.monotonic() - start
        return False, seen, time.monotonic() - start


def execute_packet(stmt_id, params=(), flags=0, long_data=()):
    p = struct.pack("<BIBI", COM_STMT_EXECUTE, stmt_id, flags, 1)
    if params:
        nulls = bytearray((len(params) + 7) // 8)
        types = b""
        values = b""
        for i, (typ, val) in enumerate(params):
            types += bytes([typ, 0])
            if i in long_data:
                continue
            if val is None:
                nulls[i // 8] |= 1 << (i % 8)
            elif typ == TYPE_LONG:
                values += struct.pack("<i", val)
            elif typ == TYPE_LONGLONG:
                values += struct.pack("<q", val)
            else:
                if isinstance(val, str):
                    val = val.encode()
                values += lenenc_int(len(val)) + val
        p += bytes(nulls) + b"\x01" + types + values
    return p


# ---- reporting ----

class Report:
    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0

    def ok(self, desc):
        self.passed += 1
        print("ok - " + desc, flush=True)

    def not_ok(self, desc, detail=None):
        self.failed += 1
        print("not ok - " + desc, flush=True)
        if detail:
            for line in str(detail).splitlines()[:40]:
                print("   " + line, flush=True)

    def skip(self, desc, why):
        print("ok - %s # skip %s" % (desc, why), flush=True)

    def check(self, cond, desc, detail=None):
        if cond:
            self.ok(desc)
        else:
            self.not_ok(desc, detail)
        return bool(cond)

    def finish(self):
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed), flush=True)
        sys.exit(1 if self.failed else 0)


def hexhead(item, n=48):
    seq, payload = item
    if isinstance(payload, tuple):
        return "seq=%d len=%d sha1=%s" % (seq, payload[1], payload[2][:16])
    h = payload[:n].hex(" ")
    return "seq=%d len=%d %s%s" % (seq, len(payload), h, " ..." if len(payload) > n else "")


def diff_logs(a, b, a_name="direct", b_name="proxy"):
    """None when equal, else a human-readable description of the first difference."""
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b):
            extra = b[i] if i >= len(a) else a[i]
            who = b_name if i >= len(a) else a_name
            return "only %s has response #%d (%s): %d packets" % (who, i, extra[0], len(extra[1]))
        (la, pa), (lb, pb) = a[i], b[i]
        if la != lb:
            return "response #%d label differs: %r vs %r" % (i, la, lb)
        for j in range(max(len(pa), len(pb))):
            x = pa[j] if j < len(pa) else None
            y = pb[j] if j < len(pb) else None
            if x != y:
                lines = ["response #%d (%s): packet %d of %d/%d differs"
                         % (i, la, j, len(pa), len(pb))]
                lines.append("  %-6s %s" % (a_name, hexhead(x) if x else "(none)"))
                lines.append("  %-6s %s" % (b_name, hexhead(y) if y else "(none)"))
                if x and y and not isinstance(x[1], tuple) and not isinstance(y[1], tuple):
                    k = next((k for k in range(min(len(x[1]), len(y[1])))
                              if x[1][k] != y[1][k]), min(len(x[1]), len(y[1])))
                    lines.append("  first differing byte at offset %d" % k)
                    lines.append("  %-6s ...%s" % (a_name, x[1][max(0, k - 8):k + 24].hex(" ")))
                    lines.append("  %-6s ...%s" % (b_name, y[1][max(0, k - 8):k + 24].hex(" ")))
                return "\n".join(lines)
    return None


def mask_digits(payload):
    return re.sub(rb"[0-9]+(\.[0-9]+)?", b"N", payload)
