#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Settings and limits, each on a proxy of its own in front of the real mariadbd.

  * max_connections: the client past the limit gets ERR 1040, the others work;
  * max_packet_size: a larger command gets ERR 1153 and only that client closes;
  * handshake_timeout: a client that never answers the greeting gets ERR 1043;
  * socket: clients can connect over the unix socket;
  * config files: --check reports file:line errors and exits 1, accepts a good one;
  * --help, --version, --config-reference;
  * docker/compose.yml validates with docker-compose (when installed);
  * the Dockerfile's ENTRYPOINT runs on the host (image paths mapped to the
    repository) and passes the image's HEALTHCHECK command; given
    MYREWRITE_PROXY_USER and a password file it runs with proxy_user set (the
    console's SHOW BACKENDS) and the password on no command line.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxies take free ports.
"""
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
BIN = os.environ.get("MR_BIN", os.path.join(ROOT, "build", "myrewrite"))
PORT = t.free_port()


def Proxy(*args):
    """myrewrite on PORT with extra flags, started (once it accepts TCP connections) and
    stopped with SIGTERM by `with`."""
    return t.Proxy("options_proxy", port=PORT, rules_dir=os.path.join(t.TMP, "no_rules"),
                   flags=args, workers=None, log_level=None, through=False)


def connect(**kw):
    return t.connect(PORT, **kw)


def check_max_connections():
    with Proxy("--set", "max_connections=2") as p:
        a, b = connect(), connect()
        try:
            connect()
            t.not_ok("third connection refused")
        except pymysql.err.MySQLError as e:
            t.check(e.args[0] == 1040 and "max_connections" in e.args[1],
                    "third connection gets ERR 1040", e.args)
        refused = 1
        for _ in range(20):
            try:
                connect().close()
            except pymysql.err.MySQLError:
                refused += 1
        t.eq("20 more clients refused", 21, refused)
        lines = [ln for ln in p.log_lines() if "max_connections (2) reached" in ln]
        t.check(len(lines) == 1, "a flood of refusals is one log line within 10 s", lines[-3:])
        with a.cursor() as c:
            c.execute("SELECT 1")
            t.eq("the others keep working", ((1,),), c.fetchall())
        a.close()
        time.sleep(0.2)
        d = connect()
        t.check(d.open, "a slot freed by a disconnect is reusable")
        d.close()
        b.close()


def check_max_packet_size():
    with Proxy("--set", "max_packet_size=64K") as px:
        a, b = connect(), connect()
        try:
            with a.cursor() as c:
                c.execute("SELECT LENGTH(%s)", ("x" * 100000,))
            t.not_ok("oversized command refused")
        except pymysql.err.MySQLError as e:
            # pymysql may still be writing when the proxy answers and closes;
            # then it reports the lost connection instead of the ERR it missed.
            time.sleep(0.2)
            logged = "packet_too_large" in px.log_text()
            t.check((e.args[0] == 1153 and "max_packet_size" in e.args[1]) or
                    (e.args[0] == 2013 and logged),
                    "oversized command gets ERR 1153 and the client is closed", e.args)
        with b.cursor() as c:
            c.execute("SELECT LENGTH(%s)", ("y" * 60000,))
            t.eq("a command under the limit works on another session", ((60000,),),
                 c.fetchall())
        b.close()


def check_handshake_timeout():
    with Proxy("--set", "handshake_timeout=500ms"):
        s = socket.create_connection((t.HOST, PORT))
        s.settimeout(5)
        data, start = b"", time.monotonic()
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            pass
        elapsed = time.monotonic() - start
        # the greeting, then an ERR packet with code 1043
        glen = struct.unpack("<I", data[:3] + b"\0")[0]
        err = data[4 + glen:]
        t.check(len(err) > 7 and err[4] == 0xFF and struct.unpack("<H", err[5:7])[0] == 1043,
                "silent client gets ERR 1043 after handshake_timeout", data[:80])
        t.check(elapsed < 3, "and is closed promptly (%.1f s)" % elapsed)


def check_unix_socket():
    path = os.path.join(t.TMP, "options_proxy.sock")
    with Proxy("--socket", path):
        c = pymysql.connect(unix_socket=path, user=t.USER, password=t.PASSWORD, database=t.DB)
        with c.cursor() as cur:
            cur.execute("SELECT 42")
            t.eq("query over the unix socket", ((42,),), cur.fetchall())
        c.close()
    t.check(not os.path.exists(path), "socket file removed on exit")


def run(*args):
    return t.run_bin(args, timeout=30)


def check_config_files():
    bad = os.path.join(t.TMP, "bad.conf")
    with open(bad, "w") as f:
        f.write("[myrewrite]\nworkers = two\n# fine\nlisten = 127.0.0.1:6033\nnope = 1\n"
                "[other]\nx = 1\n")
    r = run("--config", bad, "--check")
    t.check(r.returncode == 1 and "bad.conf:2:" in r.stderr and "bad.conf:5:" in r.stderr
            and "bad.conf:6:" in r.stderr, "--check lists every error as file:line", r.stderr)
    good = os.path.join(t.TMP, "good.conf")
    with open(good, "w") as f:
        f.write("[myrewrite]\nbackend = 127.0.0.1:%d\nworkers = 1\nrules_dir = %s\n"
                % (t.DIRECT_PORT, os.path.join(t.TMP, "no_rules")))
    r = run("--config", good, "--check")
    t.check(r.returncode == 0 and "configuration OK" in r.stdout, "--check accepts a good file",
            r.stdout + r.stderr)
    secret = os.path.join(t.TMP, "secret.conf")
    with open(secret, "w") as f:
        f.write("[myrewrite]\nbackend = 127.0.0.1:%d\nrules_dir = %s\nproxy_user = app\n"
                "proxy_password = apppw\n" % (t.DIRECT_PORT, os.path.join(t.TMP, "no_rules")))
    os.chmod(secret, 0o644)
    r = run("--config", secret, "--check")
    t.check(r.returncode == 0 and "secret.conf sets a password and is readable by every user"
            in r.stderr and "mode 644" in r.stderr,
            "a world-readable config file with a password is warned about", r.stderr)
    os.chmod(secret, 0o640)
    r = run("--config", secret, "--check")
    t.check(r.returncode == 0 and "readable" not in r.stderr,
            "no warning once others cannot read it", r.stderr)
    r = run("--config", good, "--workers", "3", "--print-config")
    t.check("workers = 3" in r.stdout, "command line overrides the file", r.stdout)
    r = run("--help")
    t.check(r.returncode == 0 and "--backend" in r.stdout and "--explain" in r.stdout,
            "--help documents the flags")
    r = run("--version")
    t.check(r.returncode == 0 and r.stdout.startswith("myrewrite "), "--version")
    r = run("--config-reference")
    t.check("| `max_packet_size` |" in r.stdout, "--config-reference lists the keys")
    with open(os.path.join(ROOT, "doc", "configuration.md")) as f:
        reference = f.read()
    t.check(r.stdout.strip() in reference,
            "doc/configuration.md's reference is the code's key table, verbatim")


def check_compose():
    if not shutil.which("docker-compose"):
        print("# docker-compose not installed; compose file not validated")
        return
    r = subprocess.run(["docker-compose", "-f", os.path.join(ROOT, "docker", "compose.yml"),
                        "config"], capture_output=True, text=True)
    t.check(r.returncode == 0 and "myrewrite" in r.stdout, "docker/compose.yml validates",
            r.stderr)
    demo = os.path.realpath(os.path.join(ROOT, "docker", "demo"))
    for want, what in (("network_mode: service:app", "the proxy is the app's sidecar"),
                       (os.path.join(demo, "rules") + ":/etc/myrewrite/rules:ro",
                        "it runs the demo's rules (docker/demo/rules)"),
                       (os.path.join(demo, "schema.sql"), "the database gets the demo schema"),
                       (os.path.join(demo, "proxy_password.txt"),
                        "proxy_user's password is a secret, not in the image")):
        t.check(want in r.stdout, "docker/compose.yml: " + what, want)


def dockerfile_line(word):
    """The JSON array after `word` (ENTRYPOINT, HEALTHCHECK ... CMD) in docker/Dockerfile."""
    with open(os.path.join(ROOT, "docker", "Dockerfile")) as f:
        for line in f:
            if line.startswith(word + " "):
                return json.loads(line[line.index("["):])
    return None


def check_entrypoint():
    """The image's ENTRYPOINT (docker/entrypoint.sh), run on the host with the image's
    paths mapped to the repository (binary, docker/myrewrite.conf, rules/) and the
    proxy's own account from the environment and a password file, as compose gives
    them: serves through the proxy, has proxy_user set, shows the password on no
    command line, passes the HEALTHCHECK command; only the addresses are flags."""
    entry = dockerfile_line("ENTRYPOINT")
    script = os.path.join(ROOT, "docker", "entrypoint.sh")
    t.check(entry == ["/usr/local/bin/myrewrite-entrypoint"],
            "the ENTRYPOINT is docker/entrypoint.sh", entry)
    with open(os.path.join(ROOT, "docker", "Dockerfile")) as f:
        t.check("COPY docker/entrypoint.sh /usr/local/bin/myrewrite-entrypoint" in f.read(),
                "the image holds docker/entrypoint.sh as its ENTRYPOINT")
    secret = os.path.join(t.TMP, "entrypoint_proxy_password")
    with open(secret, "w") as f:
        f.write(t.PASSWORD + "\n")
    env = dict(os.environ, MYREWRITE_BIN=BIN,
               MYREWRITE_CONFIG=os.path.join(ROOT, "docker", "myrewrite.conf"),
               MYREWRITE_PROXY_USER=t.USER, MYREWRITE_PROXY_PASSWORD_FILE=secret, TMPDIR=t.TMP)
    p = t.Proxy("options_entrypoint", command=["bash", script],
                rules_dir=os.path.join(ROOT, "rules"), http=True, admin=True,
                admin_password="entrypointpw", workers=None, log_level=None, through=False,
                env=env)
    http = p.http_url_addr
    p.start()
    try:
        c = None
        for _ in range(100):
            try:
                c = t.connect(p.port)
                break
            except pymysql.err.OperationalError:
                time.sleep(0.05)
        t.check(c is not None, "the entrypoint's proxy accepts connections")
        if c:
            with c.cursor() as cur:
                cur.execute("SELECT 1")
                t.eq("a statement through the entrypoint's proxy", ((1,),), cur.fetchall())
            c.close()
        admin = t.connect(p.admin_port, user="admin", password="entrypointpw", database=None)
        backends = t.rows(admin, "SHOW BACKENDS")
        admin.close()
        t.check(backends and backends[0][-1] == "yes",
                "the entrypoint's proxy has proxy_user from the environment", backends)
        with open("/proc/%d/cmdline" % p.pid, "rb") as f:
            argv = f.read()
        real = os.environ.get("MR_BIN_REAL", BIN)  # MR_IO's wrapper (tests/lib/env.sh) execs it
        t.check(argv.startswith(real.encode()) and t.PASSWORD.encode() not in argv,
                "the proxy runs without the password on its command line", argv)
        health = dockerfile_line("HEALTHCHECK")
        check = [os.path.join(ROOT, "docker", "healthcheck.sh") if a.endswith("-healthcheck")
                 else a for a in health]
        r = subprocess.run(check, env=dict(os.environ, MYREWRITE_HTTP=http), capture_output=True,
                           text=True)
        t.eq("the HEALTHCHECK command passes against it", 0, r.returncode)
    finally:
        t.eq("the entrypoint's proxy exits 0 on SIGTERM", 0, p.stop())


def main():
    if t.DIRECT_ONLY:
        print("skip: needs the proxy")
        sys.exit(77)
    os.makedirs(os.path.join(t.TMP, "no_rules"), exist_ok=True)
    check_max_connections()
    check_max_packet_size()
    check_handshake_timeout()
    check_unix_socket()
    check_config_files()
    check_compose()
    check_entrypoint()
    t.done()


if __name__ == "__main__":
    main()
