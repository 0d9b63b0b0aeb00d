#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""compress_legs.py - one query over each leg's protocol: bytes on the wire
and queries per second, with the raw clients of tests/integration (plain,
zlib, or zstd, which no libmariadb speaks).

  compress_legs.py HOST PORT MODE PROCS SECONDS QUERY
    MODE: plain, zlib or zstd (level 3)

Prints one line:
  mode=M client_leg=N backend_leg=N qps=X
client_leg: bytes of the query's answer on the client's socket (frames
included). backend_leg: what the server's own Bytes_sent counter says it
wrote for the answer (mariadbd counts what it puts on its socket: frames
when that leg is compressed), read with SHOW SESSION STATUS before and after
and less the bytes of one such SHOW answer. qps: PROCS processes, each on a
connection of its own, running QUERY for SECONDS (the client is Python: its
parsing bounds the rate, the same for every mode and port).
"""
import multiprocessing
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "lib"))
sys.path.insert(0, os.path.join(here, "..", "tests", "integration"))
import rawproto_lib as raw  # noqa: E402
import t_compress as tc  # noqa: E402
import t_compress_zstd as tz  # noqa: E402


def connect(host, port, mode):
    make = {"plain": raw.Conn, "zlib": tc.ZConn, "zstd": tz.ZstdConn}[mode]
    return make(port, host=host)


def wire_in(c):
    return c.wire_in if isinstance(c, tc.ZConn) else c.pos


def bytes_sent(c):
    r = c.query("SHOW SESSION STATUS LIKE 'Bytes_sent'")
    row = r.rows[0]
    value = row[1 + row[0]:]  # two short length-prefixed strings: name, value
    return int(value[1:1 + value[0]])


def legs(host, port, mode, query):
    c = connect(host, port, mode)
    try:
        c.query(query)  # warm: the first answer may differ (metadata caches)
        b0 = bytes_sent(c)
        w0 = wire_in(c)
        c.query(query)
        client = wire_in(c) - w0
        b1 = bytes_sent(c)
        b2 = bytes_sent(c)
        return client, (b1 - b0) - (b2 - b1)
    finally:
        c.close()


def loop(args):
    host, port, mode, seconds, query = args
    c = connect(host, port, mode)
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        r = c.query(query)
        if r.kind != "rows":
            raise SystemExit("query failed: %r" % (r.err,))
        c.log.clear()
        n += 1
    c.close()
    return n


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    host, port, mode, procs, seconds, query = sys.argv[1:]
    port, procs, seconds = int(port), int(procs), float(seconds)
    client, backend = legs(host, port, mode, query)
    with multiprocessing.Pool(procs) as pool:
        start = time.monotonic()
        done = sum(pool.map(loop, [(host, port, mode, seconds, query)] * procs))
        took = time.monotonic() - start
    print("mode=%s client_leg=%d backend_leg=%d qps=%.1f" % (mode, client, backend, done / took))


if __name__ == "__main__":
    main()
