#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tls_connect.py - new connections per second, direct vs through myrewrite, over TLS with
and without session resumption, and in plaintext.

Run by bench/tls_overhead.sh after its sysbench part. Each connection is a full login made
with raw sockets (tests/integration/rawproto_lib.py): greeting, SSLRequest, the TLS
handshake (Python's ssl module, the server's certificate as CA), the handshake response
(mysql_native_password), the OK, COM_QUIT. "resumed" hands the previous connection's TLS
session to the next handshake; the resumed share printed is what the server side accepted.
Through the proxy the backend leg is set up as well (TLS too when the server offers it), so
the rate includes the proxy's own connection to the server.

Usage: tls_connect.py --ca CERT --direct PORT --proxy PORT [--seconds S] [--procs N]
Prints: mode, procs, conns/s direct, conns/s proxy, ratio, resumed share direct/proxy.
"""
import argparse
import multiprocessing as mp
import os
import ssl
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import rawproto_lib as raw  # noqa: E402

CLIENT_SSL = 0x800


def login(port, context, session, user, password, db):
    """One login; returns the TLS session (None in plaintext) and whether it was resumed."""
    c = raw.Conn(port, connect=False)
    c.read_greeting()
    reused = False
    if context:
        c.send_payload(struct.pack("<IIB", raw.BASE_FLAGS | CLIENT_SSL, 1 << 30, 45)
                       + b"\x00" * 23)
        c.sock = context.wrap_socket(c.sock, server_hostname="127.0.0.1", session=session)
        reused = c.sock.session_reused
    c.authenticate(user, password, db)
    c.send_command(b"\x01")  # COM_QUIT
    out = c.sock.session if context else None
    c.close()
    return out, reused


def run(args, port, mode, q):
    context = None
    if mode != "plain":
        context = ssl.create_default_context(cafile=args.ca)
        context.check_hostname = False
    n = reused = 0
    session = None
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        s, r = login(port, context, session if mode == "resumed" else None, args.user,
                     args.password, args.db)
        session = s
        n += 1
        reused += r
    q.put((n, reused))


def rate(args, port, mode):
    q = mp.Queue()
    ps = [mp.Process(target=run, args=(args, port, mode, q)) for _ in range(args.procs)]
    for p in ps:
        p.start()
    got = [q.get() for _ in ps]
    for p in ps:
        p.join()
    n = sum(g[0] for g in got)
    return n / args.seconds, sum(g[1] for g in got) / n if n else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ca", required=True)
    ap.add_argument("--direct", type=int, required=True)
    ap.add_argument("--proxy", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--procs", default="1 4")
    ap.add_argument("--user", default=raw.USER)
    ap.add_argument("--password", default=raw.PASSWORD)
    ap.add_argument("--db", default=raw.DB)
    args = ap.parse_args()
    print("%-8s %5s | %10s %10s %6s | %9s %9s" % ("conn", "procs", "direct/s", "proxy/s",
                                                  "ratio", "resumed_d", "resumed_p"))
    for procs in [int(x) for x in args.procs.split()]:
        args.procs = procs
        for mode in ("full", "resumed", "plain"):
            d, rd = rate(args, args.direct, mode)
            p, rp = rate(args, args.proxy, mode)
            print("%-8s %5d | %10.0f %10.0f %6.2f | %8.0f%% %8.0f%%"
                  % (mode, procs, d, p, p / d if d else 0, 100 * rd, 100 * rp), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
