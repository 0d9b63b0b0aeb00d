#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The HTTP endpoint's bearer token (http_token) and the refusal of an open address without one.

  * http_token set: /metrics without an Authorization header, with another scheme, with a
    wrong token, with the token plus one byte, and with a prefix of it answers 401 with
    WWW-Authenticate: Bearer; with "Bearer <token>" it answers 200 and the metrics;
    /health and /ready answer without a token (left open for orchestrators' probes);
  * no http_token: /metrics answers 200 without a header, as before;
  * http_listen on 0.0.0.0 or [::] without http_token: the proxy refuses to start, exit
    status 1, and its log says what to set (http_token, a loopback address, or
    http_insecure = yes). Nothing is bound off loopback: the check comes first.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN, MR_TMP; the proxies take free ports.
"""
import os
import subprocess
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402

PORT, HTTP_PORT = t.free_port(), t.free_port()
TOKEN = "s3cr3t-Token_42"


def get(path, auth=None):
    """(status, headers, body) of GET path on the test's HTTP port."""
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (HTTP_PORT, path))
    if auth is not None:
        req.add_header("Authorization", auth)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def start(name, extra):
    return t.Proxy("http-token-%s" % name, port=PORT,
                   flags=["--set", "http_listen=127.0.0.1:%d" % HTTP_PORT] + extra).start()


def stop(p):
    p.stop(timeout=20, expect=0, desc="the proxy exits 0 on SIGTERM")


def with_token():
    p = start("token", ["--set", "http_token=%s" % TOKEN])
    try:
        for desc, auth in [("no Authorization header", None), ("Basic scheme", "Basic eDp5"),
                           ("a wrong token", "Bearer nope"),
                           ("the token plus a byte", "Bearer " + TOKEN + "x"),
                           ("a prefix of the token", "Bearer " + TOKEN[:-1]),
                           ("an empty token", "Bearer ")]:
            code, headers, body = get("/metrics", auth)
            t.eq("/metrics with %s: 401" % desc, 401, code)
            t.check((headers.get("WWW-Authenticate") or "").startswith("Bearer"),
                    "/metrics with %s: WWW-Authenticate: Bearer" % desc, headers)
            t.check("myrewrite_" not in body, "/metrics with %s: no metrics in the body" % desc,
                    body)
        code, _, body = get("/metrics", "Bearer " + TOKEN)
        t.eq("/metrics with the token: 200", 200, code)
        t.check("myrewrite_commands_total" in body, "/metrics with the token: the metrics", body)
        code, _, body = get("/metrics", "bearer " + TOKEN)
        t.eq("/metrics: the scheme's case does not matter", 200, code)
        code, _, body = get("/health")
        t.eq("/health without a token: 200", 200, code)
        code, _, body = get("/ready")
        t.eq("/ready without a token: 200", 200, code)
    finally:
        stop(p)


def without_token():
    p = start("open", [])
    try:
        code, _, body = get("/metrics")
        t.eq("no http_token: /metrics without a header answers 200", 200, code)
    finally:
        stop(p)


def refused(addr):
    log_path = os.path.join(t.TMP, "http-token-refused.log")
    args = [t.BIN, "--listen", "%s:%d" % (t.HOST, PORT),
            "--backend", "%s:%d" % (t.HOST, t.DIRECT_PORT), "--workers", "1",
            "--set", "http_listen=%s" % addr]
    with open(log_path, "w") as log:
        try:
            rc = subprocess.run(args, stdout=log, stderr=log, timeout=20).returncode
        except subprocess.TimeoutExpired:
            rc = "still running after 20 s"
    with open(log_path) as f:
        text = f.read()
    t.eq("http_listen = %s without http_token: the proxy does not start" % addr, 1, rc)
    t.check("not a loopback address" in text and "http_token" in text and
            "http_insecure = yes" in text,
            "http_listen = %s: the log says what to set" % addr, text[-1500:])


def main():
    with_token()
    without_token()
    refused("0.0.0.0:%d" % HTTP_PORT)
    refused("[::]:%d" % HTTP_PORT)
    t.done()


if __name__ == "__main__":
    main()
