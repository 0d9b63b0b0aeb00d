#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The proxy's own account does nothing that no rule needs; proxies of this test's own.

  * no rules, proxy_user set (an account of this test, mr_quiet): 20 rounds of
    CREATE TABLE / INSERT / ALTER / SELECT ... LIMIT 5000, 10 / DROP through the proxy;
    the server's general log (log_output = TABLE) holds no statement of mr_quiet, and
    SHOW PROCESSLIST shows no connection of it;
  * a paginate rule without key on one keyless table (the schema cache must read its key),
    own_connection_idle = 2s: the same rounds on other (keyless) tables plus 30 deep pages
    of the rule's table; mr_quiet reads information_schema about that table only, its
    connection shows in SHOW PROCESSLIST while it loads and is gone after the idle time,
    and "has no primary key" is logged once, for that table only;
  * a delayed rule (with key, so no schema cache): the flusher's own connection is open
    while the rule is in force; after a SIGHUP reload to no rules it is closed within
    own_connection_idle (2s), and SIGTERM's final flush still runs (it is not given up as
    "not done within the shutdown timeout").
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN, MR_TMP (the proxies take free ports); root over
the test mariadbd's unix socket ($MR_TMP/main/mariadbd.sock).
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402

PORT, RULE_PORT = t.free_port(), t.free_port()
q = t.root_query  # as root over the shared mariadbd's socket
OWN = "mr_quiet"
OWN_PW = "quietpw"
RULE = """
[paginate quiet_keyless]
table = %s.q_keyless
threshold = 100
""" % t.DB


def setup_account():
    q("DROP USER IF EXISTS '%s'@'%%'" % OWN)
    q("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'" % (OWN, OWN_PW))
    q("GRANT SELECT, INSERT, UPDATE, DELETE, CREATE ON %s.* TO '%s'@'%%'" % (t.DB, OWN))


def start(port, name, rules_text, extra=()):
    rules_dir = os.path.join(t.TMP, "quiet-%s-rules" % name)
    os.makedirs(rules_dir, exist_ok=True)
    for f in os.listdir(rules_dir):
        os.remove(os.path.join(rules_dir, f))
    if rules_text:
        t.write_rules(rules_dir, rules_text)
    p = t.Proxy("quiet-%s" % name, port=port, rules_dir=rules_dir, flags=list(extra),
                options=[("proxy_user", OWN), ("proxy_password", OWN_PW)]).start()
    return p, p.log_path


def stop(p):
    p.stop(timeout=20, expect=0, desc="the proxy exits 0 on SIGTERM")


def general_log_on():
    q("SET GLOBAL general_log = OFF")
    q("SET GLOBAL log_output = 'TABLE'")
    q("TRUNCATE TABLE mysql.general_log")
    q("SET GLOBAL general_log = ON")


def general_log_off():
    q("SET GLOBAL general_log = OFF")


def own_statements():
    return q("SELECT command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log "
             "WHERE user_host LIKE %s ORDER BY event_time", (OWN + "[%",))


def own_connections():
    return [r for r in q("SHOW PROCESSLIST") if r[1] == OWN]


def rounds(port, prefix, n=20):
    c = t.connect(port, autocommit=True)
    cur = c.cursor()
    for i in range(n):
        name = "%s_%d" % (prefix, i)
        cur.execute("CREATE TABLE %s (a INT, b VARCHAR(20))" % name)
        cur.execute("INSERT INTO %s VALUES (1, 'x'), (2, 'y'), (3, 'z')" % name)
        cur.execute("ALTER TABLE %s ADD COLUMN c INT" % name)
        cur.execute("SELECT a, b FROM %s ORDER BY a LIMIT 5000, 10" % name)
        cur.fetchall()
        cur.execute("DROP TABLE %s" % name)
    c.close()


def no_rules():
    p, log_path = start(PORT, "none", None)
    try:
        general_log_on()
        rounds(PORT, "q_round")
        time.sleep(0.5)
        general_log_off()
        stmts = own_statements()
        t.eq("no rules: the proxy's own account sent the server nothing (general log)", 0,
             len(stmts))
        if stmts:
            t.log("first of them: %r" % (stmts[:5],))
        t.eq("no rules: no connection of the proxy's own account (SHOW PROCESSLIST)", [],
             own_connections())
    finally:
        general_log_off()
        stop(p)


def keyless_reports(log_path):
    with open(log_path) as f:
        return [line for line in f if "has no primary key" in line]


def with_rule():
    q("DROP TABLE IF EXISTS %s.q_keyless" % t.DB)
    q("CREATE TABLE %s.q_keyless (a INT, b VARCHAR(20))" % t.DB)
    q("INSERT INTO %s.q_keyless VALUES (1, 'x'), (2, 'y')" % t.DB)
    # The rule names its table without `key`: the proxy reads that table's key as the
    # rules load, so its own connection opens at start for it and for nothing else.
    general_log_on()
    p, log_path = start(RULE_PORT, "rule", RULE, ["--set", "own_connection_idle=2s"])
    try:
        t.check(wait_for_connections(True, 5),
                "rule: the own connection opens at start for the table the rule names")
        c = t.connect(RULE_PORT, autocommit=True)
        cur = c.cursor()
        for _ in range(30):
            cur.execute("SELECT a, b FROM q_keyless ORDER BY a LIMIT 5000, 10")
            cur.fetchall()
        c.close()
        rounds(RULE_PORT, "q_rule_round", 5)
        time.sleep(0.5)
        general_log_off()
        reads = [s for s in own_statements() if "information_schema" in s[1].lower()]
        t.check(reads, "rule: the rule's table was read from information_schema", reads)
        others = [s for s in reads if "q_keyless" not in s[1]]
        t.eq("rule: no other table was read from information_schema", [], others)
        time.sleep(3.5)
        t.eq("rule: the own connection is closed after own_connection_idle (2s)", [],
             own_connections())
        reports = keyless_reports(log_path)
        t.eq("rule: 'has no primary key' logged once, for the rule's table", 1, len(reports))
        t.check(all("q_keyless" in r for r in reports), "rule: the report names q_keyless",
                reports)
    finally:
        general_log_off()
        stop(p)
        q("DROP TABLE IF EXISTS %s.q_keyless" % t.DB)


DELAYED_RULE = """
[delayed quiet_counts]
table = %s.q_counts
key = id
columns = n
flush_interval = 1h
""" % t.DB


def wait_for_connections(want, seconds):
    seen = own_connections()
    end = time.time() + seconds
    while bool(seen) != want and time.time() < end:
        time.sleep(0.1)
        seen = own_connections()
    return seen


def rules_removed():
    q("DROP TABLE IF EXISTS %s.q_counts" % t.DB)
    q("CREATE TABLE %s.q_counts (id INT PRIMARY KEY, n INT NOT NULL)" % t.DB)
    p, log_path = start(RULE_PORT, "delayed", DELAYED_RULE,
                        ["--set", "own_connection_idle=2s"])
    try:
        t.check(wait_for_connections(True, 5),
                "delayed rule: the flusher's own connection is open")
        time.sleep(2.5)
        t.check(own_connections(), "delayed rule: it stays open while the rule is in force")
        os.remove(os.path.join(t.TMP, "quiet-delayed-rules", "test.rules"))
        p.send_signal(signal.SIGHUP)
        time.sleep(1)
        t.eq("rules reloaded to none: the own connection is closed after own_connection_idle",
             [], wait_for_connections(False, 4))
    finally:
        stop(p)
        with open(log_path) as f:
            text = f.read()
        t.check("final flush not done" not in text,
                "shutdown after the idle close: the final flush is waited for, not given up")
        q("DROP TABLE IF EXISTS %s.q_counts" % t.DB)
        q("DROP TABLE IF EXISTS %s.q_counts_delayed" % t.DB)


def main():
    setup_account()
    try:
        no_rules()
        with_rule()
        rules_removed()
    finally:
        q("DROP USER IF EXISTS '%s'@'%%'" % OWN)
    t.done()


if __name__ == "__main__":
    main()
