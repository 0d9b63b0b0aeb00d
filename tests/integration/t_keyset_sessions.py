#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Keyset bookmarks never cross accounts, nor a session with temporary tables (issue 25,
item 2): a proxy with a keyset rule on ks_items, and a second account.

  * a session whose TEMPORARY ks_items (other ids) shadows the real table walks its pages;
    then sessions of the other account and of the same account walk and jump into the
    real table: every page equals the same page sent direct (before the fix, a deep page
    was sought from the temporary table's keys and came back empty);
  * a session that creates a temporary ks_items after the real table was bookmarked gets
    its own table's rows at deep pages, as direct; after COM_RESET_CONNECTION (its
    temporary table gone) its pages seek again;
  * bookmarks still cross sessions of one account (a deep page of a second session is a
    seek), but not accounts (the other account's first deep page is not a seek).
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

ROWS = 300
PAGE = 20
THRESHOLD = 30
OTHER, OTHER_PW = "mr_ks_other", "ks_other_pw"
RULES_DIR = os.path.join(t.TMP, "keyset_sessions_rules")
RULES = """
[paginate items]
table = ks_items
key = id
threshold = %d
strategy = keyset
log = full
""" % THRESHOLD
PROXY = t.Proxy("keyset_sessions", rules_dir=RULES_DIR, rules=RULES)
LISTING = "SELECT id, v FROM ks_items ORDER BY id LIMIT %d, %d"
TEMP = ("CREATE TEMPORARY TABLE ks_items (id INT PRIMARY KEY, v INT NOT NULL) "
        "SELECT seq + 5000 AS id, seq AS v FROM seq_1_to_%d" % ROWS)


def root():
    """The server's root over its socket: the test account cannot grant."""
    return pymysql.connect(unix_socket=os.path.join(t.TMP, "main", "mariadbd.sock"),
                           user="root", autocommit=True, charset="utf8mb4")


q = t.rows  # (connection, sql): a tuple of row tuples


def seeks():
    """The seeks the proxy sent so far (log = full shows each text it sent)."""
    time.sleep(0.2)  # the log thread writes after the page is answered
    return sum(1 for line in PROXY.log_text().splitlines()
               if "ks_items" in line and "((id > " in line)


def page(via, direct, off, what):
    got, want = q(via, LISTING % (off, PAGE)), q(direct, LISTING % (off, PAGE))
    t.eq("%s: the page at offset %d equals direct" % (what, off), want, got)


def walk(via, direct, what, offsets=range(0, 200, PAGE)):
    for off in offsets:
        page(via, direct, off, what)


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    q(d, "DROP TABLE IF EXISTS ks_items")
    q(d, "CREATE TABLE ks_items (id INT PRIMARY KEY, v INT NOT NULL)")
    q(d, "INSERT INTO ks_items SELECT seq, seq * 3 FROM seq_1_to_%d" % ROWS)
    r = root()
    q(r, "DROP USER IF EXISTS '%s'@'%%'" % OTHER)
    q(r, "CREATE USER '%s'@'%%' IDENTIFIED BY '%s'" % (OTHER, OTHER_PW))
    q(r, "GRANT SELECT, CREATE TEMPORARY TABLES ON %s.* TO '%s'@'%%'" % (t.DB, OTHER))
    PROXY.start()
    try:
        other = dict(user=OTHER, password=OTHER_PW, autocommit=True)
        # 1. the other account shadows ks_items and walks its own table
        shadow, shadow_d = t.connect(PROXY.port, **other), t.direct(**other)
        q(shadow, TEMP)
        q(shadow_d, TEMP)
        walk(shadow, shadow_d, "a session with a temporary ks_items")
        t.eq("a session with temporary tables is never sought", 0, seeks())
        # 2. both accounts jump to deep pages of the real table, then walk it
        for name, kw in (("the test account", {"autocommit": True}), ("the other account", other)):
            c, cd = t.connect(PROXY.port, **kw), t.direct(**kw)
            for off in (40, 100, 160):
                page(c, cd, off, "%s, a jump after the shadow's walk" % name)
            walk(c, cd, "%s, a walk of the real table" % name)
            c.close()
            cd.close()
        # 3. bookmarks cross sessions of one account, not accounts
        before = seeks()
        mine, mine_d = t.connect(PROXY.port, autocommit=True), t.direct(autocommit=True)
        page(mine, mine_d, 180, "a second session of the test account")
        t.eq("a deep page of another session of the same account seeks", before + 1, seeks())
        walk(mine, mine_d, "the test account, on to the end", range(200, 300, PAGE))
        # the other account's bookmarks end at 200: 260 is further than the threshold
        # from any of them, and the test account's bookmark at 260 is not its own
        fresh, fresh_d = t.connect(PROXY.port, **other), t.direct(**other)
        before = seeks()
        page(fresh, fresh_d, 260, "the other account, past its own bookmarks")
        t.eq("the other account's page is not sought from the test account's bookmarks",
             before, seeks())
        # 4. a temporary ks_items created after the real table was bookmarked
        q(mine, TEMP)
        q(mine_d, TEMP)
        before = seeks()
        for off in (60, 180, 200):
            page(mine, mine_d, off, "a session whose temporary ks_items came later")
        t.eq("... and none of its pages is sought", before, seeks())
        mine._execute_command(0x1F, b"")  # COM_RESET_CONNECTION
        mine._read_ok_packet()
        mine_d.close()
        mine_d = t.direct(autocommit=True)
        # its CREATE TEMPORARY named ks_items, a write for the bookmarks: the page at 160
        # is a miss that leaves a bookmark, which the page at 180 seeks from
        page(mine, mine_d, 160, "after COM_RESET_CONNECTION (its temporary table gone)")
        before = seeks()
        page(mine, mine_d, 180, "after COM_RESET_CONNECTION, the next page")
        t.eq("after COM_RESET_CONNECTION its deep pages seek again", before + 1, seeks())
        for c in (shadow, shadow_d, mine, mine_d, fresh, fresh_d):
            c.close()
    finally:
        PROXY.stop()
    q(d, "DROP TABLE IF EXISTS ks_items")
    q(r, "DROP USER IF EXISTS '%s'@'%%'" % OTHER)
    r.close()
    d.close()
    t.done()


if __name__ == "__main__":
    main()
