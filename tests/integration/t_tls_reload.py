#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TLS certificates reloaded while clients keep working, and the proxy's own
certificate toward the backend, against the real mariadbd.

Makes a CA and two server certificates (CN reload-A, reload-B) with the
openssl CLI, and a client certificate signed by the test mariadbd's own CA.
One proxy serves TLS from files the test replaces, and checks:
  * clients see reload-A; the files are replaced by reload-B and SIGHUP
    reloads them: new handshakes see reload-B, a connection opened before
    keeps working; a second SIGHUP with nothing changed reloads nothing
    (the log and myrewrite_tls_reloads_total say so);
  * a certificate with another key's file: RELOAD TLS on the console
    answers ERR 3889 naming the mismatch, clients still get reload-B, the
    failure is counted; the good pair back and RELOAD TLS: reload-A again;
  * throughout, four threads open TLS connections and run a statement in a
    loop: none fails;
  * backend_tls_cert: an account that REQUIREs the proxy's certificate
    subject logs in through that proxy over a TLS backend leg, and is
    refused through a proxy that shows no certificate;
  * --check: backend_tls_cert without backend_tls_key is an error naming it.
Environment: MR_DIRECT_PORT (the mariadbd with TLS), MR_BIN; proxies take
free ports.
"""
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

DIR = os.path.join(t.TMP, "tls_reload")
SERVER_DIR = os.path.join(t.TMP, "main", "tls")  # tests/lib/env.sh made the server's pair
SERVER_CA = os.path.join(SERVER_DIR, "cert.pem")
PROXY_SUBJECT = "/CN=myrewrite-proxy"
X509_USER = "tls_reload_x509"


def path(name):
    return os.path.join(DIR, name)


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True)


def signed(name, subject, ca_pem, ca_key, extfile=None):
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
            "-keyout", path(name + ".key"), "-out", path(name + ".csr"))
    args = ["x509", "-req", "-in", path(name + ".csr"), "-CA", ca_pem, "-CAkey", ca_key,
            "-CAcreateserial", "-days", "30", "-out", path(name + ".pem")]
    if extfile:
        args += ["-extfile", extfile]
    openssl(*args)


def make_certs():
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
            "-subj", "/CN=myrewrite reload test ca", "-keyout", path("ca.key"),
            "-out", path("ca.pem"))
    ext = path("server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("reload-A", "reload-B"):
        signed(name, "/CN=" + name, path("ca.pem"), path("ca.key"), ext)
    signed("proxy-client", PROXY_SUBJECT, SERVER_CA, os.path.join(SERVER_DIR, "key.pem"))
    install("reload-A", "reload-A")


def install(cert, key):
    """Replaces the files the proxy reads, each by a rename (as tools that
    rotate certificates do), the key first."""
    for src, dst in ((key + ".key", "live.key"), (cert + ".pem", "live.pem")):
        shutil.copy(path(src), path(dst + ".new"))
        os.replace(path(dst + ".new"), path(dst))


def tls_ctx():
    return ssl.create_default_context(cafile=path("ca.pem"))


def peer_cn(port):
    """The CN of the certificate a new TLS connection through port shows."""
    conn = t.connect(port, ssl=tls_ctx())
    try:
        t.rows(conn, "SELECT 1")
        subject = dict(x[0] for x in conn._sock.getpeercert()["subject"])
        return subject.get("commonName")
    finally:
        conn.close()


class Load:
    """Threads that connect over TLS and run a statement, until stopped."""

    def __init__(self, port, nthreads=4):
        self.port = port
        self.stop_flag = threading.Event()
        self.ok = 0
        self.failures = []
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run) for _ in range(nthreads)]

    def run(self):
        while not self.stop_flag.is_set():
            try:
                conn = t.connect(self.port, ssl=tls_ctx())
                got = t.rows(conn, "SELECT 40 + 2")
                conn.close()
                with self.lock:
                    if got == ((42,),):
                        self.ok += 1
                    else:
                        self.failures.append("answer %r" % (got,))
            except Exception as e:  # every failure is the test's finding
                with self.lock:
                    self.failures.append(repr(e))

    def __enter__(self):
        for th in self.threads:
            th.start()
        return self

    def __exit__(self, *exc):
        self.stop_flag.set()
        for th in self.threads:
            th.join()


def metric(proxy, result):
    return t.metric(proxy, 'myrewrite_tls_reloads_total{result="%s"}' % result)


def reloaded_lines(proxy):
    return proxy.log_text().count("TLS reloaded")


def wait_lines(proxy, n, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline and reloaded_lines(proxy) < n:
        time.sleep(0.05)
    return reloaded_lines(proxy)


def check_sighup(proxy, early):
    t.check(peer_cn(proxy.port) == "reload-A", "clients see the first certificate")
    install("reload-B", "reload-B")
    proxy.send_signal(signal.SIGHUP)
    t.check(wait_lines(proxy, 1) == 1, "SIGHUP reloads the changed files")
    t.check(peer_cn(proxy.port) == "reload-B", "a new handshake after SIGHUP sees the new one")
    t.check(t.rows(early, "SELECT 7") == ((7,),),
            "a connection made before the reload keeps working")
    proxy.send_signal(signal.SIGHUP)
    proxy.wait_log(r"rules reloaded", timeout=10)
    time.sleep(0.5)
    t.check(reloaded_lines(proxy) == 1 and metric(proxy, "ok") == 1,
            "a SIGHUP with no file changed reloads no certificate",
            proxy.log_text()[-800:])


def check_refused(proxy):
    install("reload-A", "reload-B")  # a certificate beside another's key
    admin = proxy.admin()
    try:
        admin.cursor().execute("RELOAD TLS")
        t.not_ok("RELOAD TLS of a mismatched pair is refused")
    except pymysql.MySQLError as e:
        t.check(e.args[0] == 3889 and "mismatch" in e.args[1] and "live.key" in e.args[1],
                "RELOAD TLS of a mismatched pair: ERR 3889 naming the mismatch", e)
    t.check(peer_cn(proxy.port) == "reload-B", "after a refused reload the old pair stays")
    t.check(metric(proxy, "failed") == 1, "the refused reload is counted")
    install("reload-A", "reload-A")
    rows = t.rows(admin, "RELOAD TLS")
    admin.close()
    t.check("TLS reloaded" in rows[0][0], "RELOAD TLS of a good pair succeeds", rows)
    t.check(peer_cn(proxy.port) == "reload-A", "and new handshakes see it")


def check_under_load(proxy):
    early = t.connect(proxy.port, ssl=tls_ctx())
    with Load(proxy.port) as load:
        time.sleep(0.5)
        check_sighup(proxy, early)
        check_refused(proxy)
        time.sleep(0.5)
    early.close()
    t.check(not load.failures and load.ok >= 20,
            "%d TLS connections during the reloads, none failed" % load.ok,
            load.failures[:5])


def check_backend_cert(with_cert, without_cert):
    root = pymysql.connect(unix_socket=os.path.join(t.TMP, "main", "mariadbd.sock"),
                           user="root", autocommit=True)
    cur = root.cursor()
    cur.execute("DROP USER IF EXISTS '%s'@'%%'" % X509_USER)
    cur.execute("CREATE USER '%s'@'%%' IDENTIFIED BY 'x509pw' REQUIRE SUBJECT '%s'"
                % (X509_USER, PROXY_SUBJECT))
    cur.execute("GRANT SELECT ON %s.* TO '%s'@'%%'" % (t.DB, X509_USER))
    root.close()
    try:
        conn = t.connect(with_cert.port, user=X509_USER, password="x509pw")
        cipher = t.rows(conn, "SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        conn.close()
        t.check(cipher and cipher[0][1], "an account requiring the proxy's certificate "
                "logs in through the proxy that shows it (backend leg TLS)", cipher)
    except pymysql.MySQLError as e:
        t.not_ok("an account requiring the proxy's certificate logs in", e)
    try:
        t.connect(without_cert.port, user=X509_USER, password="x509pw").close()
        t.not_ok("without backend_tls_cert the account is refused")
    except pymysql.MySQLError as e:
        t.check(e.args[0] == 1045, "without backend_tls_cert the account is refused", e)


def check_settings():
    r = subprocess.run([t.BIN, "--check", "--set", "backend_tls_cert=" + path("proxy-client.pem")],
                       capture_output=True, text=True)
    t.check(r.returncode != 0 and "backend_tls_cert and backend_tls_key go together" in r.stderr,
            "--check: backend_tls_cert without its key is named", r.stderr)


def main():
    make_certs()
    check_settings()
    backend = ["--set", "backend_tls=verify_identity", "--set", "backend_tls_ca=" + SERVER_CA]
    proxy = t.Proxy("tls_reload_proxy", admin=True, http=True, workers=2,
                    flags=["--set", "tls_cert=" + path("live.pem"),
                           "--set", "tls_key=" + path("live.key")] + backend +
                    ["--set", "backend_tls_cert=" + path("proxy-client.pem"),
                     "--set", "backend_tls_key=" + path("proxy-client.key")])
    plain = t.Proxy("tls_reload_nocert", flags=backend)
    with proxy, plain:
        check_under_load(proxy)
        check_backend_cert(proxy, plain)
    t.done()


if __name__ == "__main__":
    main()
