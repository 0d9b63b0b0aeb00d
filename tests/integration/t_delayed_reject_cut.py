#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Memory mode's dead-letter write cut off after the server got it (rules/README.md, "A key
the server refuses"): a key whose sum overflows its INT column is refused at flush and moved
to <table>_delayed_rejected by one autocommitted INSERT; a fault relay lets that INSERT reach
mariadbd and resets the connection before its OK comes back. The flusher cannot tell whether
the row was written, so the key is dropped with a log line naming it, and never written
again: after the reconnect and later flushes the dead-letter table holds the key once, and
the other keys of the table are exact. Before the fix the key stayed held, failed again
after the reconnect and was written a second time.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
from faultrelay import Fault, FaultRelay  # noqa: E402

RULES = """
[delayed reject_cut]
table = test.rc_counters
key = id
columns = n
mode = memory
flush_interval = 1h
"""


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS rc_counters, rc_counters_delayed_rejected")
    cur.execute("CREATE TABLE rc_counters (id INT PRIMARY KEY, n INT NOT NULL DEFAULT 0)")
    cur.execute("INSERT INTO rc_counters VALUES (1, 0), (2, 2147483600), (3, 0)")
    relay = FaultRelay(t.DIRECT_PORT).start()
    proxy = t.Proxy("reject_cut", backend_port=relay.port, rules=RULES, own_conn=True)
    proxy.start()
    try:
        c = proxy.connect(autocommit=True)
        for k, delta in ((1, 3), (2, 100), (3, 4)):
            c.cursor().execute("UPDATE DELAYED rc_counters SET n = n + %d WHERE id = %d"
                               % (delta, k))
        c.close()
        f = relay.arm(Fault("c2s", action="rst", when="after",
                            pattern=b"INSERT INTO `test`.`rc_counters_delayed_rejected`"))
        t.check(t.flush_until_ok(proxy.port, "rc_counters", timeout=20) is None,
                "FLUSH DELAYED goes through after the reconnect")
        t.check(f.fired.is_set(), "the dead-letter INSERT reached the server and its answer "
                "was cut")
        t.flush_until_ok(proxy.port, "rc_counters", timeout=10)
        time.sleep(0.3)
        t.flush_until_ok(proxy.port, "rc_counters", timeout=10)
        t.eq("the refused key is in the dead-letter table once",
             (("(`id`) = ('2')", 1264),),
             t.rows(d, "SELECT key_values, error_code FROM rc_counters_delayed_rejected"))
        t.eq("the other keys applied, the refused one untouched",
             ((1, 3), (2, 2147483600), (3, 4)), t.rows(d, "SELECT id, n FROM rc_counters "
                                                          "ORDER BY id"))
        t.check(proxy.wait_log(r"the connection broke while `n` \+ 100 on test\.rc_counters "
                               r"\(`id`\) = \('2'\) .* may or may not be there and is not "
                               r"written again", 5), "the cut write is logged with its key")
    finally:
        relay.disarm()
        proxy.stop(expect=0)
        relay.stop()
    t.done()


if __name__ == "__main__":
    main()
