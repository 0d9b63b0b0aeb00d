#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TLS between clients and the proxy, against the real mariadbd.

Makes a CA, a server certificate for 127.0.0.1/localhost and client
certificates with the openssl CLI, starts nine proxies of its own and checks:
  * unusable TLS settings (a missing file, a key that does not match, a key
    missing its partner, verify_ca without a CA, an unknown version) fail
    --check, each named;
  * the greeting offers CLIENT_SSL once tls_cert is set;
  * the mariadb CLI with --ssl-verify-server-cert runs a query over TLS (its
    \\s shows the cipher); Ssl_cipher, which reports the backend leg, is empty;
  * pymysql with an ssl context (verifying the proxy's certificate) runs
    queries, a 6 MB result and a 6 MB statement; a plaintext client still works;
  * the SSLRequest and the ClientHello in one send() (both read at once);
  * a hand-made SSLRequest then TLS: the server's packets come with the
    client's sequence ids (OK is 3), and a second connection resumes the
    TLS session;
  * a rewrite rule and a block rule work over TLS;
  * 40 concurrent TLS clients, 50 queries each, all answered in order;
  * garbage instead of a ClientHello: that connection is closed, a TLS client
    at the same time is not hurt;
  * require_tls = yes: a plaintext client gets ERR 3159 (08004); TLS works;
  * an SSLRequest and then no ClientHello: closed at handshake_timeout;
  * tls_ca: no client certificate or one from another CA is refused, a good
    one is accepted;
  * toward the backend (whose greeting offers TLS): a TLS client's leg to it
    is TLS even under backend_tls = off (Ssl_cipher set), a plaintext
    client's is not; backend_tls = verify_identity with the server's CA gives
    a plaintext client an encrypted backend leg (the login's OK keeps the
    client's sequence id 2), a wrong CA fails the login saying why;
  * an account that REQUIRE SSL logs in through the proxy whenever the
    backend leg is TLS (a TLS client, or backend_tls = verify_identity) and
    is refused with ERR 1045, as directly, when it is plain;
  * mr_client_test (libmariadb) over verified TLS, directly and through
    the proxy: the same digests;
  * against a second mariadbd without TLS: backend_tls = require refuses
    with ERR 1053; a TLS client's backend leg is plain, and an account whose
    server plugin asks for the password in clear (PAM: auth_pam must install)
    gets ERR 1251 instead of the password being relayed in clear.
Environment: MR_DIRECT_PORT (the mariadbd with TLS), MR_BIN, MR_TLS_CLIENT_TEST=0 (leave
out the mr_client_test run, a minute or two); the nine proxies and the
mariadbd without TLS take free ports.
"""
import os
import re
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
import rawproto_lib as raw  # noqa: E402

PORT, REQ_PORT, CA_PORT, BT_PORT, BAD_CA_PORT, PLAIN_PORT, BREQ_PORT, CT_PORT = (
    t.free_port() for _ in range(8))
PLAIN_DB_PORT = t.free_port()
PLAIN_DB = "tls_plain"
EXPIRED_DB = t.Mariadb("tls_expired")
EXPIRED_PORT = t.free_port()
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SERVER_CA = os.path.join(t.TMP, "main", "tls", "cert.pem")  # tests/lib/env.sh made it
DIR = os.path.join(t.TMP, "tls_test")
RULES_DIR = os.path.join(t.TMP, "tls_rules")
CLIENT_SSL = 1 << 11

RULES = """
[rewrite tls_upper]
pattern = SELECT ? AS tls_rw
replacement = SELECT UPPER(?) AS tls_rw

[block tls_no_sleep]
match = \\bsleep\\s*\\(
message = SLEEP() is not allowed through the proxy
"""


def path(name):
    return os.path.join(DIR, name)


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True)


def make_certs():
    os.makedirs(DIR, exist_ok=True)
    for ca in ("ca", "rogue"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
                "-subj", "/CN=myrewrite test %s" % ca, "-keyout", path(ca + ".key"),
                "-out", path(ca + ".pem"))
    ext = path("server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, ca, extfile in (("server", "ca", ext), ("client", "ca", None),
                              ("badclient", "rogue", None)):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=%s" % name,
                "-keyout", path(name + ".key"), "-out", path(name + ".csr"))
        args = ["x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".pem"),
                "-CAkey", path(ca + ".key"), "-CAcreateserial", "-days", "30",
                "-out", path(name + ".pem")]
        if extfile:
            args += ["-extfile", extfile]
        openssl(*args)


def make_expired(name="expired"):
    """A server certificate signed by the test CA for 127.0.0.1 that expired yesterday
    (openssl req/x509 cannot date one in the past; python3-cryptography can)."""
    import datetime
    import ipaddress
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID
    with open(path("ca.key"), "rb") as f:
        ca_key = serialization.load_pem_private_key(f.read(), None)
    with open(path("ca.pem"), "rb") as f:
        ca = x509.load_pem_x509_certificate(f.read())
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=30))
            .not_valid_after(now - datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    with open(path(name + ".pem"), "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(path(name + ".key"), "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.TraditionalOpenSSL,
                                  serialization.NoEncryption()))


def check_expired_backend(port):
    """backend_tls = verify_ca toward a server whose certificate expired: the login fails
    with an ERR that names the reason, and the proxy goes on."""
    try:
        t.connect(port).close()
        t.not_ok("backend_tls = verify_ca and a server certificate that expired")
    except pymysql.err.OperationalError as e:
        t.check("certificate has expired" in str(e), "backend_tls = verify_ca with an expired "
                "server certificate: the login fails saying the certificate has expired", e.args)
    try:
        t.connect(port).close()
        t.not_ok("... and so does the next one")
    except pymysql.err.OperationalError as e:
        t.check("certificate has expired" in str(e), "... and so does the next one (the proxy "
                "stays up)", e.args)


def tls_args(*more):
    args = ["--set", "tls_cert=" + path("server.pem"), "--set", "tls_key=" + path("server.key")]
    for m in more:
        args += ["--set", m]
    return args


def ctx(cert=None):
    c = ssl.create_default_context(cafile=path("ca.pem"))
    if cert:
        c.load_cert_chain(path(cert + ".pem"), path(cert + ".key"))
    return c


def tls_connect(port, cert=None, **kw):
    return t.connect(port, ssl=ctx(cert), **kw)


def greeting_caps(port):
    c = raw.Conn(port, connect=False)
    g = c.read_greeting()
    c.close()
    return g["caps"]


def check_cli(port):
    r = subprocess.run(["mariadb", "--no-defaults", "-h", t.HOST, "-P", str(port), "-u", t.USER,
                        "-p" + t.PASSWORD, "--ssl-verify-server-cert", "--ssl-ca=" + path("ca.pem"),
                        t.DB, "-e", "SELECT 40+2 AS answer; \\s"],
                       capture_output=True, text=True, timeout=60)
    t.check(r.returncode == 0 and "42" in r.stdout, "mariadb --ssl-verify-server-cert runs a "
            "query through the proxy", (r.returncode, r.stdout[-500:], r.stderr[-500:]))
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("SSL:")]
    t.check(line and "Cipher in use is" in line[0], "the CLI's status shows the client leg's "
            "cipher", line)


def check_pymysql(port):
    c = tls_connect(port)
    version = c._sock.version()
    t.check(version in ("TLSv1.2", "TLSv1.3"), "pymysql's socket is TLS", version)
    t.eq("a query over TLS", ((7,),), t.rows(c, "SELECT 3+4"))
    t.check(cipher(c), "a TLS client's backend leg is TLS too when the server offers it "
            "(backend_tls = off)")
    big = t.rows(c, "SELECT REPEAT('x', 6000000)")[0][0]
    t.eq("a 6 MB result over TLS", 6000000, len(big))
    payload = "y" * 6000000
    t.eq("a 6 MB statement over TLS", ((6000000,),), t.rows(c, "SELECT LENGTH(%s)", (payload,)))
    c.close()
    p = t.connect(port)
    t.eq("a plaintext client still works", ((1,),), t.rows(p, "SELECT 1"))
    t.eq("... and its backend leg is plain under backend_tls = off", "", cipher(p))
    p.close()


def cipher(conn):
    """Ssl_cipher: it reports the proxy's connection to the server."""
    return t.rows(conn, "SHOW SESSION STATUS LIKE 'Ssl_cipher'")[0][1]


def ssl_request(conn):
    """Sends the 32-byte SSLRequest with the next sequence id."""
    flags = raw.BASE_FLAGS | CLIENT_SSL
    conn.send_payload(struct.pack("<IIB", flags, 1 << 30, 45) + b"\x00" * 23)


def raw_tls(port, context, session=None):
    c = raw.Conn(port, connect=False)
    c.read_greeting()
    ssl_request(c)
    c.sock = context.wrap_socket(c.sock, server_hostname="127.0.0.1", session=session)
    c.authenticate(t.USER, t.PASSWORD, t.DB)
    return c


def check_raw_and_resumption(port):
    context = ctx()
    c = raw_tls(port, context)
    t.eq("over TLS the OK of the login has the client's sequence id 3", 3, c.auth_packets[-1][0])
    res = c.query("SELECT 5")
    t.eq("a query over the raw TLS connection", "rows", res.kind)
    session = c.sock.session
    c.close()
    c2 = raw_tls(port, context, session)
    t.check(c2.sock.session_reused, "a second connection resumes the TLS session")
    c2.close()


def check_coalesced_hello(port):
    """The SSLRequest and the ClientHello in one send(): the proxy reads both
    at once, and the ClientHello must still reach OpenSSL."""
    c = raw.Conn(port, connect=False)
    c.read_greeting()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx().wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = outgoing.read()
    c.sock.sendall(raw.frame(struct.pack("<IIB", raw.BASE_FLAGS | CLIENT_SSL, 1 << 30, 45) +
                             b"\x00" * 23, 1)[0] + hello)
    c.sock.settimeout(10)
    done = False
    try:
        while not done:
            data = c.sock.recv(65536)
            if not data:
                break
            incoming.write(data)
            try:
                tls.do_handshake()
                done = True
            except ssl.SSLWantReadError:
                pass
            c.sock.sendall(outgoing.read())
    except OSError as e:
        t.not_ok("SSLRequest and ClientHello in one send", e)
    t.check(done and tls.version() in ("TLSv1.2", "TLSv1.3"),
            "the SSLRequest and the ClientHello in one send(): the handshake completes")
    c.close()


def check_rules(port):
    c = tls_connect(port)
    t.eq("a rewrite rule over TLS", (("ABC",),), t.rows(c, "SELECT 'abc' AS tls_rw"))
    try:
        t.rows(c, "SELECT SLEEP(0)")
        t.not_ok("a block rule over TLS")
    except pymysql.err.MySQLError as e:
        t.check("SLEEP() is not allowed" in str(e), "a block rule over TLS", e)
    t.eq("the session goes on after the block", ((2,),), t.rows(c, "SELECT 2"))
    c.close()


def check_concurrent(port, nthreads=40, nqueries=50):
    errors = []

    def worker(i):
        try:
            c = tls_connect(port)
            for q in range(nqueries):
                got = t.rows(c, "SELECT %s, %s", (i, q))
                if got != ((i, q),):
                    errors.append((i, q, got))
                    break
            c.close()
        except Exception as e:  # noqa: BLE001
            errors.append((i, repr(e)))

    secs = t.run_threads([threading.Thread(target=worker, args=(i,)) for i in range(nthreads)])
    t.eq("%d concurrent TLS clients, %d queries each, answered in order (%.1f s)"
         % (nthreads, nqueries, secs), [], errors)


def check_garbage(port):
    c = raw.Conn(port, connect=False)
    c.read_greeting()
    ssl_request(c)
    c.sock.sendall(b"GET / HTTP/1.0\r\n\r\n" + b"\x00" * 200)
    good = tls_connect(port)
    c.sock.settimeout(10)
    try:
        closed = c.sock.recv(4096) == b""
    except ConnectionResetError:
        closed = True
    except socket.timeout:
        closed = False
    t.check(closed, "garbage instead of a ClientHello: the connection is closed")
    t.eq("a TLS client at the same time is not hurt", ((9,),), t.rows(good, "SELECT 9"))
    good.close()
    c.close()


def check_bad_settings():
    """Unusable TLS settings are start-up errors, named by --check."""
    cases = [
        (["tls_cert=/nonexistent.pem", "tls_key=" + path("server.key")],
         "tls_cert: cannot use '/nonexistent.pem'"),
        (["tls_cert=" + path("server.pem")], "tls_cert and tls_key go together"),
        (["tls_cert=" + path("server.pem"), "tls_key=" + path("client.key")],
         "tls_key: cannot use"),
        (["require_tls=yes"], "require_tls: yes needs tls_cert and tls_key"),
        (["backend_tls=verify_ca"], "backend_tls = verify_ca needs backend_tls_ca"),
        (["tls_min_version=TLSv1.1"], "expected TLSv1.2 or TLSv1.3"),
    ]
    for sets, want in cases:
        args = ["--check"]
        for kv in sets:
            args += ["--set", kv]
        r = t.run_bin(args, timeout=30)
        t.check(r.returncode == 1 and want in r.stderr, "--check refuses %s: %s"
                % (" ".join(sets), want), (r.returncode, r.stderr))


def check_silent_handshake(port):
    """SSLRequest, then no ClientHello: closed at handshake_timeout (1 s here)."""
    c = raw.Conn(port, connect=False)
    c.read_greeting()
    ssl_request(c)
    c.sock.settimeout(10)
    t0 = time.time()
    try:
        closed = c.sock.recv(4096) == b""
    except ConnectionResetError:
        closed = True
    except socket.timeout:
        closed = False
    secs = time.time() - t0
    t.check(closed and 0.5 <= secs < 5, "no ClientHello after the SSLRequest: closed at "
            "handshake_timeout (%.1f s, not at once)" % secs)
    c.close()


def check_require_tls(port):
    try:
        t.connect(port).close()
        t.not_ok("require_tls: a plaintext client is refused")
    except pymysql.err.OperationalError as e:
        t.check(e.args[0] == 3159 and "requires TLS" in e.args[1],
                "require_tls: a plaintext client gets ERR 3159 saying TLS is required", e.args)
    c = raw.Conn(port, connect=False)
    c.read_greeting()
    try:
        c.authenticate(t.USER, t.PASSWORD, t.DB)
        t.not_ok("require_tls: SQLSTATE 08004")
    except raw.ServerError as e:
        t.check(e.code == 3159 and "#08004" in c.auth_packets[-1][1].decode("latin1"),
                "require_tls: SQLSTATE 08004", (e.args, c.auth_packets))
    c.close()
    c = tls_connect(port)
    t.eq("require_tls: a TLS client works", ((1,),), t.rows(c, "SELECT 1"))
    c.close()


def refused(port, cert):
    """Whether a TLS client with cert is refused by a proxy that is still up: a port nobody
    listens on (pymysql's 2003) or a proxy that no longer greets is no refusal."""
    try:
        c = tls_connect(port, cert)
        t.rows(c, "SELECT 1")
        c.close()
        return False
    except (pymysql.err.OperationalError, ssl.SSLError, OSError) as e:
        if isinstance(e, pymysql.err.OperationalError) and e.args[0] == 2003:
            return False
    try:
        return bool(greeting_caps(port) & CLIENT_SSL)
    except OSError:
        return False


def check_client_certs(port):
    t.check(refused(port, None), "tls_ca: a client without a certificate is refused")
    t.check(refused(port, "badclient"), "tls_ca: a certificate from another CA is refused")
    c = tls_connect(port, "client")
    t.eq("tls_ca: a client with a good certificate works", ((1,),), t.rows(c, "SELECT 1"))
    c.close()


def check_backend_tls(port, bad_ca_port):
    p = t.connect(port)
    t.check(cipher(p), "backend_tls = verify_identity: a plaintext client's backend leg is TLS")
    t.eq("... and queries work", ((6,),), t.rows(p, "SELECT 2*3"))
    p.close()
    c = raw.Conn(port)
    t.eq("... the login's OK comes with the client's sequence id 2", 2, c.auth_packets[-1][0])
    c.close()
    c = tls_connect(port)
    t.check(cipher(c), "... a TLS client's too")
    c.close()
    # The login relayed over the backend's TLS is the session's login too: its
    # schema filters the rules, its capabilities tell the tracker where results end.
    c = t.connect(port)
    try:
        t.rows(c, "SELECT 7 AS tls_blocked")
        t.not_ok("... a rule filtered on the login's schema blocks through it")
    except pymysql.err.MySQLError as e:
        t.check(e.args[0] == 1148, "... a rule filtered on the login's schema blocks through it",
                e.args)
    c.close()
    c = raw.Conn(port, deprecate_eof=True)
    r = c.query("SELECT 1 UNION ALL SELECT 2")
    t.eq("... a CLIENT_DEPRECATE_EOF client gets its rows", "rows", r.kind)
    t.eq("... and stays in step", "rows", c.query("SELECT 3").kind)
    c.close()
    try:
        t.connect(bad_ca_port).close()
        t.not_ok("backend_tls = verify_ca with a CA that did not sign the server's certificate")
    except pymysql.err.OperationalError as e:
        t.check("certificate verify failed" in str(e), "backend_tls = verify_ca with the wrong "
                "CA: the login fails saying the certificate did not verify", e.args)


def login_error(port, **kw):
    """The error number a login as the REQUIRE SSL account gets, or None when it logs in."""
    try:
        t.connect(port, user="tls_only", password="tlsonlypw", database=None, **kw).close()
        return None
    except pymysql.err.OperationalError as e:
        return e.args[0]


def check_require_ssl_account(port, bt_port):
    """An account that REQUIRE SSL: the server sees the backend leg, so it logs in through
    the proxy whenever that leg is TLS, and is refused, as directly, when it is plain."""
    d = t.direct(autocommit=True)
    d.cursor().execute("CREATE OR REPLACE USER 'tls_only'@'%' IDENTIFIED BY 'tlsonlypw' "
                       "REQUIRE SSL")
    d.close()
    server_ctx = ssl.create_default_context(cafile=SERVER_CA)
    t.eq("a REQUIRE SSL account logs in directly over TLS", None,
         login_error(t.DIRECT_PORT, ssl=server_ctx))
    t.eq("... and is refused directly in plaintext (ERR 1045)", 1045, login_error(t.DIRECT_PORT))
    t.eq("through the proxy over TLS it logs in (backend_tls = off: the leg follows the "
         "client)", None, login_error(port, ssl=ctx()))
    c = t.connect(port, user="tls_only", password="tlsonlypw", database=None, ssl=ctx())
    t.eq("... as itself", (("tls_only@%",),), t.rows(c, "SELECT CURRENT_USER()"))
    c.close()
    t.eq("through the proxy in plaintext it is refused as directly (ERR 1045)", 1045,
         login_error(port))
    # 1045 is also a wrong password's answer: without REQUIRE SSL the same login must pass.
    d = t.direct(autocommit=True)
    d.cursor().execute("ALTER USER 'tls_only'@'%' REQUIRE NONE")
    t.eq("... for REQUIRE SSL: with REQUIRE NONE the same plaintext login passes", None,
         login_error(port))
    d.cursor().execute("ALTER USER 'tls_only'@'%' REQUIRE SSL")
    d.close()
    t.eq("a plaintext client logs in as it under backend_tls = verify_identity (the backend "
         "leg is TLS)", None, login_error(bt_port))


def check_client_test(port):
    """mr_client_test (libmariadb, every protocol command, digests compared) with both sides
    over verified TLS: directly to mariadbd, and through the proxy (its two raw_protocol_*
    checks open plain sockets of their own; every libmariadb login is over TLS)."""
    if os.environ.get("MR_TLS_CLIENT_TEST") == "0":
        t.log("mr_client_test over TLS skipped (MR_TLS_CLIENT_TEST=0)")
        return
    prog = os.path.join(os.environ.get("MR_BUILD", os.path.join(ROOT, "build")),
                        "tests", "integration", "mr_client_test")
    if not os.access(prog, os.X_OK):
        t.not_ok("mr_client_test is built (%s)" % prog)
        return
    env = dict(os.environ, MR_PROXY_PORT=str(port), MR_DIRECT_PORT=str(t.DIRECT_PORT),
               MR_TLS_CA_PROXY=path("ca.pem"), MR_TLS_CA_DIRECT=SERVER_CA)
    r = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=600)
    last = (r.stdout.strip().splitlines() or [""])[-1]
    m = re.match(r"mr_client_test: (\d+) passed, (\d+) failed$", last)
    failed = [ln for ln in r.stdout.splitlines() if ln.startswith("not ok")]
    t.check(r.returncode == 0 and m and int(m.group(1)) > 0 and m.group(2) == "0",
            "mr_client_test over TLS on both sides: libmariadb sees the same through the proxy "
            "as directly (%s)" % last, (failed[:10], r.stderr[-800:]))


def handshakes(proxy):
    """myrewrite_tls_handshakes_total by (leg, resumed), from /metrics."""
    body = urllib.request.urlopen(proxy.http_url("/metrics"), timeout=5).read().decode()
    got = {}
    for m in re.finditer(r'^myrewrite_tls_handshakes_total\{leg="(\w+)",resumed="(\w+)"\} (\d+)$',
                         body, re.M):
        got[(m.group(1), m.group(2))] = int(m.group(3))
    return got


def check_backend_resumption(proxy):
    """A new session's backend leg offers the TLS session the server issued to an earlier
    one: the server resumes it instead of a full handshake, and verify_identity holds."""
    before = handshakes(proxy)
    for _ in range(4):
        c = t.connect(proxy.port)
        t.rows(c, "SELECT 1")
        c.close()
    c = tls_connect(proxy.port)
    t.check(cipher(c), "... a TLS client after them gets a TLS backend leg")
    c.close()
    after = handshakes(proxy)
    resumed = after.get(("backend", "yes"), 0) - before.get(("backend", "yes"), 0)
    full = after.get(("backend", "no"), 0) - before.get(("backend", "no"), 0)
    t.check(resumed >= 4, "backend_tls: new sessions' backend legs resume the server's TLS "
            "session (%d of 5 resumed, %d full handshakes)" % (resumed, full), after)
    t.check(after.get(("client", "no"), 0) > before.get(("client", "no"), 0),
            "/metrics counts the client leg's handshakes too", after)


# A rule naming a table without `key`: its key is read as the rules load, so the
# proxy's own connection opens at start (with no such rule it opens none).
OWN_RULES = """
[paginate tls_own]
table = test.tls_own_t
threshold = 100

[block tls_schema_block]
schema = test
pattern = SELECT ? AS tls_blocked
message = blocked for schema test
"""


def check_own_connections():
    """The schema cache's own connection (net/bgconn.c) follows backend_tls."""
    deadline = time.time() + 10
    good = bad = ""
    while time.time() < deadline:
        good = open(os.path.join(t.TMP, "tls_bt_proxy.log")).read()
        bad = open(os.path.join(t.TMP, "tls_badca_proxy.log")).read()
        if "own connection" in good and "own connection" in bad:
            break
        time.sleep(0.2)
    t.check(re_search(r"own connection to \S+ as \S+ up \(connection id \d+, TLS ", good),
            "backend_tls = verify_identity: the proxy's own connection is up over TLS",
            [ln for ln in good.splitlines() if "own connection" in ln])
    t.check(re_search(r"own connection to \S+ as \S+ failed", bad) and
            not re_search(r"own connection .* up ", bad),
            "backend_tls = verify_ca with the wrong CA: the proxy's own connection fails",
            [ln for ln in bad.splitlines() if "own connection" in ln])


def re_search(pattern, text):
    import re
    return re.search(pattern, text) is not None


def env_sh(cmd, **env):
    r = subprocess.run(["bash", "-c", '. "%s/tests/lib/env.sh"; %s' % (ROOT, cmd)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=dict(os.environ, **env))
    return r.returncode, r.stdout


def check_plain_backend(port, breq_port):
    try:
        t.connect(breq_port).close()
        t.not_ok("backend_tls = require and a server without TLS")
    except pymysql.err.OperationalError as e:
        t.check(e.args[0] == 1053 and "does not offer TLS" in e.args[1],
                "backend_tls = require and a server without TLS: ERR 1053 saying so", e.args)
    c = tls_connect(port)
    t.eq("a TLS client in front of a server without TLS: its backend leg is plain", "",
         cipher(c))
    c.close()
    check_cleartext_refused(port)


def check_cleartext_refused(port):
    root = t.connect(PLAIN_DB_PORT)
    try:
        root.cursor().execute("INSTALL SONAME 'auth_pam'")
    except pymysql.err.MySQLError as e:
        if e.args[0] != 1968:  # already installed; Debian's mariadb-server ships auth_pam
            t.not_ok("auth_pam installs in the server without TLS", e)
            root.close()
            return
    root.cursor().execute("CREATE OR REPLACE USER 'tls_pam'@'%' IDENTIFIED VIA pam")
    root.close()
    try:
        tls_connect(port, user="tls_pam", password="x").close()
        t.not_ok("a PAM account over TLS is refused before the password is sent")
    except Exception as e:  # noqa: BLE001 -- a driver that gets the request may fail anyhow
        t.check(isinstance(e, pymysql.err.OperationalError) and e.args[0] == 1251 and
                "in clear text" in e.args[1],
                "a server asking a TLS client for its password in clear gets ERR 1251", repr(e))


def main():
    make_certs()
    check_bad_settings()
    t.write_rules(RULES_DIR, RULES)
    rc, out = env_sh("mr_start_mariadb %s %d" % (PLAIN_DB, PLAIN_DB_PORT), MR_MARIADB_TLS="0")
    if rc:
        print(out)
        t.not_ok("a second mariadbd without TLS starts")
        t.done()
    make_expired()
    EXPIRED_DB.env = {"MR_MARIADB_ARGS": "--ssl-cert=%s --ssl-key=%s --ssl-ca=%s" % (
        path("expired.pem"), path("expired.key"), path("ca.pem"))}
    if not EXPIRED_DB.start():
        t.not_ok("a third mariadbd with an expired certificate starts")
        env_sh("mr_stop_mariadb %s" % PLAIN_DB)
        t.done()
    procs = []
    plain_backend = ["--backend", "%s:%d" % (t.HOST, PLAIN_DB_PORT)]
    proxies = [
        t.Proxy("tls_proxy", port=PORT, rules_dir=RULES_DIR, flags=tls_args(), workers=4),
        t.Proxy("tls_req_proxy", port=REQ_PORT, through=False,
                flags=tls_args("require_tls=yes", "handshake_timeout=1s")),
        t.Proxy("tls_ca_proxy", port=CA_PORT, flags=tls_args("tls_ca=" + path("ca.pem"))),
        t.Proxy("tls_bt_proxy", port=BT_PORT, own_conn=True, rules=OWN_RULES, http=True,
                flags=tls_args("backend_tls=verify_identity", "backend_tls_ca=" + SERVER_CA)),
        t.Proxy("tls_badca_proxy", port=BAD_CA_PORT, own_conn=True, rules=OWN_RULES,
                through=False,
                flags=["--set", "backend_tls=verify_ca", "--set",
                       "backend_tls_ca=" + path("ca.pem")]),
        t.Proxy("tls_plain_proxy", port=PLAIN_PORT, flags=tls_args() + plain_backend),
        t.Proxy("tls_breq_proxy", port=BREQ_PORT, through=False,
                flags=["--set", "backend_tls=require"] + plain_backend),
        t.Proxy("tls_expired_proxy", port=EXPIRED_PORT, through=False,
                backend_port=EXPIRED_DB.port,
                flags=["--set", "backend_tls=verify_ca", "--set",
                       "backend_tls_ca=" + path("ca.pem")]),
        t.Proxy("tls_ct_proxy", port=CT_PORT, flags=tls_args()),
    ]
    try:
        for p in proxies:
            procs.append(p.start())  # those started are stopped below if one fails
        t.check(greeting_caps(PORT) & CLIENT_SSL, "the greeting offers CLIENT_SSL")
        check_cli(PORT)
        check_pymysql(PORT)
        check_raw_and_resumption(PORT)
        check_coalesced_hello(PORT)
        check_rules(PORT)
        check_concurrent(PORT)
        check_garbage(PORT)
        check_require_tls(REQ_PORT)
        check_silent_handshake(REQ_PORT)
        check_client_certs(CA_PORT)
        check_backend_tls(BT_PORT, BAD_CA_PORT)
        check_require_ssl_account(PORT, BT_PORT)
        check_backend_resumption(proxies[3])
        check_own_connections()
        check_plain_backend(PLAIN_PORT, BREQ_PORT)
        check_expired_backend(EXPIRED_PORT)
        check_client_test(CT_PORT)  # last: the longest
    finally:
        for p in procs:
            p.stop(timeout=20)
        env_sh("mr_stop_mariadb %s" % PLAIN_DB)
        EXPIRED_DB.stop()
    t.done()


if __name__ == "__main__":
    main()
