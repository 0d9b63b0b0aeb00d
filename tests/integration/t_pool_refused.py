#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A command the pool refuses (ERR 1040 after pool_max_wait) is dropped, and the proxy lives on.

pool = transaction, pool_size 2, two workers: two server connections for
the proxy. Session B (the test account) and then D (another account) log in
on the same worker, after another session of D's account on the other worker;
D's login closes B's idle connection to make room, and B's next statement
finds no connection of its account on any worker, and no login under way
that could bring one: it gets ERR 1158 at once saying so (not a wait
of pool_max_wait that could never end in a connection), and its session is
closed so that the driver logs in again. The proxy used to die on the way
(SIGSEGV: the client pump asked the missing server connection how much it
had pending while dropping the refused command); D and the proxy go on.

Environment: MR_DIRECT_PORT, MR_BIN, MR_TMP (the proxy takes a free port).
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402



def main():
    t.needs_own_proxy()
    t.root_query("CREATE USER IF NOT EXISTS 'pk_other'@'%' IDENTIFIED BY 'pk_pw'")
    with t.Proxy("pool_refused", admin=True, workers=2,
                 options={"pool": "transaction", "pool_size": 2, "pool_max_wait": "1s"}) as px:
        b = px.connect()
        spare = []
        for _ in range(4):
            d = px.connect(user="pk_other", password="pk_pw", database=None)
            if px.worker_of(d) == px.worker_of(b):
                break
            spare.append(d)
        t.eq("D is on B's worker", px.worker_of(b), px.worker_of(d))
        started = time.monotonic()
        got = t.try_sql(b, "SELECT 1")
        secs = time.monotonic() - started
        t.check(got is not None and got[0] == 1158 and "reconnect" in str(got[1]) and secs < 0.5,
                "B's statement: ERR 1158 at once, saying to reconnect (%.2f s)" % secs, got)
        t.check(t.wait_until(lambda: not px.alive(), timeout=0.5) is False,
                "the proxy is alive after the refusal")
        again = t.try_sql(b, "SELECT 1")
        t.check(again is not None and again[0] in (2006, 2013),
                "B's session was closed (its next statement: 2006/2013)", again)
        t.eq("D answers", ((1,),), t.rows(d, "SELECT 1"))
        for x in spare + [d, b]:
            x.close()
    t.done()


main()
