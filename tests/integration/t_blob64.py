#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A 64 MiB random blob inserted through the proxy as a query parameter and
read back through the proxy and direct: every copy must hash the same.

64 MiB of random bytes escape to roughly 65 MiB of query text, i.e. a
COM_QUERY split over four or five protocol packets, and the result row is
split the same way on the way back.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import mrtest as t  # noqa: E402

SIZE = 64 * 1024 * 1024


def read(port):
    conn = t.connect(port)
    with conn.cursor() as cur:
        start = time.time()
        cur.execute("SELECT b FROM blob64 WHERE id = 1")
        b = cur.fetchone()[0]
        secs = time.time() - start
        cur.execute("SELECT SHA1(b), LENGTH(b) FROM blob64 WHERE id = 1")
        server = cur.fetchone()
    conn.close()
    return t.sha1(b), len(b), server, secs


def main():
    data = os.urandom(SIZE)
    want = t.sha1(data)
    t.log("blob sha1 %s" % want)

    conn = t.proxy(autocommit=True)
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS blob64")
        cur.execute("CREATE TABLE blob64 (id INT PRIMARY KEY, b LONGBLOB)")
        start = time.time()
        n = cur.execute("INSERT INTO blob64 (id, b) VALUES (%s, %s)", (1, data))
        t.eq("64 MiB insert through proxy (%.1fs)" % (time.time() - start), 1, n)
    conn.close()

    sha_p, len_p, server_p, secs_p = read(t.PROXY_PORT)
    sha_d, len_d, server_d, secs_d = read(t.DIRECT_PORT)
    t.eq("server stored exactly the bytes sent", (want, SIZE), server_d)
    t.eq("read via proxy (%.1fs): sha1 and length" % secs_p, (want, SIZE), (sha_p, len_p))
    t.eq("read direct (%.1fs): sha1 and length" % secs_d, (want, SIZE), (sha_d, len_d))
    t.eq("server-side SHA1 via proxy equals direct", server_d, server_p)

    # Same blob in the other direction: inserted direct, read via proxy, with
    # the session reused for a small query afterwards.
    conn = t.direct(autocommit=True)
    with conn.cursor() as cur:
        cur.execute("UPDATE blob64 SET b = REVERSE(b) WHERE id = 1")
    conn.close()
    conn = t.proxy()
    with conn.cursor() as cur:
        cur.execute("SELECT b FROM blob64 WHERE id = 1")
        got = cur.fetchone()[0]
        t.eq("server-modified 64 MiB blob read via proxy", t.sha1(data[::-1]), t.sha1(got))
        cur.execute("SELECT 42")
        t.eq("session still usable afterwards", ((42,),), cur.fetchall())
        cur.execute("DROP TABLE blob64")
    conn.close()
    t.done()


if __name__ == "__main__":
    main()
