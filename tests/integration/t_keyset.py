#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""paginate rules with strategy = keyset / auto end to end: a proxy of its own (two
workers, pages sent over two connections so bookmarks cross workers) in front of the
real mariadbd.

  * walking every page front to back returns every row once, in order, no duplicates
    and no skips (compared with the whole listing sent direct): ASC, DESC on a
    secondary index, mixed directions, a composite key, a WHERE filter, hostile string
    keys (quotes, backslashes, NUL, multibyte UTF-8) and binary keys;
  * each deep page of a walk is sent as a seek (the proxy's log shows the seek text);
  * a nullable ORDER BY column is refused for keyset: deep pages go as deferred joins,
    rows still right;
  * a write through the proxy drops the table's bookmarks: the next deep page is sent
    untouched (a miss), rows still right, and the page after it seeks again; /metrics
    counts those hits and the miss for the rule and in total;
  * EXPLAIN of the seek texts the proxy sent uses a range on an index, no filesort;
  * a jump to a deep page with no bookmark: auto sends the deferred join, keyset the
    page with its key appended; a bookmark is not used after bookmark_ttl;
  * prepared `LIMIT ?, ?` pages under a keyset rule (mr_stmt_paginate, the C client) are
    prepared as deferred joins and never seek, even once a text walk of the same
    listing has left bookmarks: their rows equal direct ones at every offset.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports (client, HTTP).
"""
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

ROWS = 3000
PAGE = 37
THRESHOLD = 50
BIN = os.environ.get("MR_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                            "myrewrite"))
# MR_BIN_REAL: MR_BIN is tests/lib/env.sh's MR_IO wrapper, the build is beside the binary
STMT_BIN = os.path.join(os.path.dirname(os.path.abspath(os.environ.get("MR_BIN_REAL", BIN))),
                        "tests", "integration",
                        "mr_stmt_paginate")
RULES_DIR = os.path.join(t.TMP, "keyset_rules")
RULES = """
[paginate items]
table = k_items
key = id
threshold = %(th)d
strategy = keyset
log = full

[paginate pairs]
table = k_pairs
key = a, b
threshold = %(th)d
strategy = auto
log = full

[paginate strs]
table = k_str
key = s
threshold = 6
strategy = keyset
log = full

[paginate bins]
table = k_bin
key = b
threshold = 6
strategy = keyset
bookmark_ttl = 1s
log = full

[paginate nokey]
table = k_nokey
threshold = %(th)d
strategy = keyset
log = full

[paginate ps]
table = ps_items
key = id
threshold = %(th)d
strategy = keyset
log = full

[paginate nulls]
table = k_null
key = id
threshold = %(th)d
strategy = keyset
log = full
""" % {"th": THRESHOLD}

HOSTILE = ["plain", "it's", "it''s", "back\\slash", "back\\\\two", "\\'", "'", "''", "\"dq\"",
           "nul\x00inside", "\x00", "tab\there", "new\nline", "caf\u00e9", "\u00e9t\u00e9",
           "\u65e5\u672c\u8a9e", "emoji\U0001F600", "\U0001F600", "%", "_", "a%b_c", "--",
           "/* c */", "#", ";", "x' OR '1'='1", "0x41", "X'41'", "\\0", "\\n", "z", "Z",
           "\u00c5", "\u212b", "a b", "a  b", "`tick`", "\u0000\u00ff", "\u4e00", "last"]


PROXY = t.Proxy("keyset", rules_dir=RULES_DIR, rules=RULES, own_conn=True, http=True)
PORT, HTTP = PROXY.port, PROXY.http_port


def keyset_counts(rule):
    """(hits, misses) of a rule, and of all rules, from /metrics."""
    with urllib.request.urlopen("http://%s:%d/metrics" % (t.HOST, HTTP), timeout=5) as r:
        body = r.read().decode()

    def sample(pattern):
        m = re.search(r"^%s (\d+)$" % pattern, body, re.M)
        return int(m.group(1)) if m else None
    per_rule = 'myrewrite_paginate_rule_pages_total\\{rule="%s",outcome="keyset_%s"\\}'
    return (sample(per_rule % (rule, "hit")), sample(per_rule % (rule, "miss")),
            sample("myrewrite_paginate_keyset_hits_total"),
            sample("myrewrite_paginate_keyset_misses_total"))


def setup(d):
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS k_items, k_pairs, k_str, k_bin, k_null, k_nokey, "
                "ps_items")
    # the table and rows mr_stmt_paginate expects (as t_schema.py makes them)
    cur.execute("CREATE TABLE ps_items (id INT PRIMARY KEY, v INT NOT NULL, name VARCHAR(20) "
                "NOT NULL, UNIQUE KEY (name), KEY (v)) ENGINE=InnoDB")
    cur.execute("INSERT INTO ps_items SELECT seq, seq % 11, CONCAT('n', seq) "
                "FROM seq_1_to_20000")
    cur.execute("CREATE TABLE k_nokey (id INT PRIMARY KEY, score INT NOT NULL, KEY (score))"
                " ENGINE=InnoDB")
    cur.execute("INSERT INTO k_nokey SELECT seq, seq %% 40 FROM seq_1_to_%d" % ROWS)
    cur.execute("CREATE TABLE k_items (id INT PRIMARY KEY, grp INT NOT NULL, score INT NOT NULL,"
                " name VARCHAR(30) NOT NULL, KEY (score), KEY (grp, score)) ENGINE=InnoDB")
    cur.execute("INSERT INTO k_items SELECT seq, seq %% 7, seq %% 100, CONCAT('n', seq)"
                " FROM seq_1_to_%d" % ROWS)
    cur.execute("CREATE TABLE k_pairs (v INT NOT NULL, a INT NOT NULL, b INT NOT NULL,"
                " PRIMARY KEY (a, b), KEY (v)) ENGINE=InnoDB")
    cur.execute("INSERT INTO k_pairs SELECT seq %% 37, seq DIV 100, seq %% 100"
                " FROM seq_1_to_%d" % ROWS)
    cur.execute("CREATE TABLE k_str (s VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
                " NOT NULL PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB")
    cur.executemany("INSERT INTO k_str VALUES (%s, %s)", [(s, i) for i, s in enumerate(HOSTILE)])
    cur.execute("CREATE TABLE k_bin (b VARBINARY(16) NOT NULL PRIMARY KEY, n INT NOT NULL)"
                " ENGINE=InnoDB")
    cur.executemany("INSERT INTO k_bin VALUES (%s, %s)",
                    [(bytes([i, 255 - i, 0, 39, 92]) * (1 + i % 3), i) for i in range(0, 256, 5)])
    cur.execute("CREATE TABLE k_null (id INT PRIMARY KEY, score INT NULL, KEY (score))"
                " ENGINE=InnoDB")
    cur.execute("INSERT INTO k_null SELECT seq, IF(seq %% 5 = 0, NULL, seq %% 50)"
                " FROM seq_1_to_%d" % ROWS)


def log_text():
    time.sleep(0.2)
    return PROXY.log_text()


def sent_texts(rule):
    """The texts the proxy sent for a rule (log = full: `rule R: orig -> sent`)."""
    out = []
    for line in log_text().splitlines():
        m = re.search(r"rule %s: (.*) -> (.*)$" % rule, line)
        if m:
            out.append(m.group(2))
    return out


def walk(conns, sql, page=PAGE):
    """Every page from offset 0 until an empty one, alternating connections."""
    rows, off, i = [], 0, 0
    while True:
        cur = conns[i % len(conns)].cursor()
        cur.execute(sql % {"off": off, "n": page})
        got = cur.fetchall()
        if not got:
            return rows, i + 1
        rows.extend(got)
        off += page
        i += 1


def check_walk(d, conns, rule, via, direct, page=PAGE, seek_expected=True):
    dc = d.cursor()
    dc.execute(direct)
    want = list(dc.fetchall())
    before = len(sent_texts(rule))
    got, pages = walk(conns, via, page)
    t.check(got == want, "walk of every page returns each row once, in order: %s" % via,
            (len(got), len(want), [r for r in got if got.count(r) > 1][:3]))
    sent = sent_texts(rule)[before:]
    threshold = THRESHOLD if rule not in ("strs", "bins") else 6
    deep = sum(1 for k in range(pages) if k * page >= threshold)
    if seek_expected:
        # every page at or past the threshold seeks from the end of the page before it
        # (skip 0); the last, empty, page from the end of the last rows
        seeks = [s for s in sent if "myrewrite_dj" not in s and "((" in s]
        skip0 = [s for s in seeks if s.endswith("LIMIT 0, %d" % page)]
        t.eq("every deep page of the walk is a seek: %s" % via, deep, len(seeks))
        # the last, empty, page seeks from the end of the rows, not of a full page
        t.eq("each from the page just before it: %s" % via,
             deep - (1 if len(want) % page else 0), len(skip0))
    return sent, deep


def explain_uses_index(d, sql, what):
    cur = d.cursor(pymysql.cursors.DictCursor)
    cur.execute("EXPLAIN " + sql)
    plan = cur.fetchall()
    ok = len(plan) == 1 and plan[0]["type"] == "range" and \
        "filesort" not in (plan[0]["Extra"] or "")
    t.check(ok, "EXPLAIN of the %s seek: a range on an index, no filesort" % what,
            (sql, plan))


def walks(d, conns):
    sent, _ = check_walk(d, conns, "items", "SELECT * FROM k_items ORDER BY id LIMIT %(off)d, %(n)d",
                         "SELECT * FROM k_items ORDER BY id")
    seek = [s for s in sent if "LIMIT 0, " in s][-1]
    t.check(re.search(r"WHERE \(\(id > \d+\)\) ORDER BY id LIMIT 0, 37$", seek),
            "the seek of ORDER BY id is id > last id", seek)
    explain_uses_index(d, seek, "primary-key")

    sent, _ = check_walk(d, conns, "items",
                         "SELECT id, name, score FROM k_items AS i WHERE i.grp <> 3 "
                         "ORDER BY i.score DESC LIMIT %(n)d OFFSET %(off)d",
                         "SELECT id, name, score FROM k_items AS i WHERE i.grp <> 3 "
                         "ORDER BY i.score DESC, i.id DESC")
    seek = [s for s in sent if "LIMIT 0, " in s][-1]
    t.check("i.score <= " in seek and "(i.score < " in seek and "i.`id` < " in seek and
            seek.endswith("ORDER BY i.score DESC, i.`id` DESC LIMIT 0, 37"),
            "a DESC column seeks with <, the key appended DESC too", seek)
    explain_uses_index(d, seek, "secondary-index DESC")

    check_walk(d, conns, "items",
               "SELECT it.* FROM k_items it ORDER BY grp, score DESC, id LIMIT %(off)d, %(n)d",
               "SELECT it.* FROM k_items it ORDER BY grp, score DESC, id")
    check_walk(d, conns, "items",
               "SELECT name, id, score FROM k_items ORDER BY score LIMIT %(off)d, %(n)d",
               "SELECT name, id, score FROM k_items ORDER BY score, id")

    sent, _ = check_walk(d, conns, "pairs", "SELECT * FROM k_pairs ORDER BY a, b LIMIT %(off)d, %(n)d",
                         "SELECT * FROM k_pairs ORDER BY a, b")
    seek = [s for s in sent if "LIMIT 0, " in s and "myrewrite_dj" not in s][-1]
    explain_uses_index(d, seek, "composite-key")
    check_walk(d, conns, "pairs",
               "SELECT a, b, v FROM k_pairs WHERE v < 20 ORDER BY a DESC, b DESC "
               "LIMIT %(off)d, %(n)d",
               "SELECT a, b, v FROM k_pairs WHERE v < 20 ORDER BY a DESC, b DESC")
    check_walk(d, conns, "strs", "SELECT s, n FROM k_str ORDER BY s LIMIT %(off)d, %(n)d",
               "SELECT s, n FROM k_str ORDER BY s", page=3)
    check_walk(d, conns, "strs", "SELECT * FROM k_str ORDER BY s DESC LIMIT %(off)d, %(n)d",
               "SELECT * FROM k_str ORDER BY s DESC", page=4)
    check_walk(d, conns, "bins", "SELECT * FROM k_bin ORDER BY b LIMIT %(off)d, %(n)d",
               "SELECT * FROM k_bin ORDER BY b", page=5)
    nokey(d, conns)


def nokey(d, conns):
    """A rule without `key`: the primary key comes from the schema cache. The
    first statement only asks for it (sent as it is); once it is loaded, walks
    seek as with a key in the rule."""
    conns[0].cursor().execute("SELECT * FROM k_nokey ORDER BY score LIMIT 0, 1")
    time.sleep(1)
    check_walk(d, conns, "nokey", "SELECT * FROM k_nokey ORDER BY score LIMIT %(off)d, %(n)d",
               "SELECT * FROM k_nokey ORDER BY score, id")


def nullable(d, conns):
    sql = "SELECT id, score FROM k_null ORDER BY score LIMIT %(off)d, %(n)d"
    sent, deep = check_walk(d, conns, "nulls", sql, "SELECT id, score FROM k_null ORDER BY score, id",
                            page=200, seek_expected=False)
    dj = [s for s in sent if "myrewrite_dj" in s]
    t.check(not any("((" in s for s in sent) and len(dj) == deep,
            "a nullable ORDER BY column: every deep page is a deferred join, never a seek",
            (len(dj), deep, sent[:2]))


def write_drops(d, conns):
    sql = "SELECT * FROM k_items WHERE grp = 2 ORDER BY id LIMIT %d, %d"
    cur = conns[0].cursor()
    dc = d.cursor()

    def page(off):
        before = len(sent_texts("items"))
        cur.execute(sql % (off, PAGE))
        got = cur.fetchall()
        dc.execute(sql % (off, PAGE))
        t.eq("page at %d has the rows sent direct" % off, dc.fetchall(), got)
        return sent_texts("items")[before:]

    c0 = keyset_counts("items")
    for off in range(0, 3 * PAGE, PAGE):
        page(off)
    t.eq("the walk seeks before the write", 1, len(page(3 * PAGE)))
    conns[1].cursor().execute("UPDATE k_items SET name = CONCAT(name, 'w') WHERE id = 1")
    t.eq("after a write through the proxy the next page misses (sent untouched)", [],
         page(4 * PAGE))
    t.eq("and the page after it seeks again", 1, len(page(5 * PAGE)))
    c1 = keyset_counts("items")
    # pages at 74, 111 and 185 seek (hits), 148 follows the write (a miss)
    t.eq("/metrics: the rule's keyset hits +3, misses +1, and the totals the same",
         (3, 1, 3, 1), tuple(b - a for a, b in zip(c0, c1)))


def jumps(d, conns):
    """A deep page with no walk before it: auto sends the deferred join, keyset the page
    itself (with the key appended to its ORDER BY); rows right either way."""
    dc, pc = d.cursor(), conns[0].cursor()
    for rule, via, direct in [
            ("pairs", "SELECT * FROM k_pairs WHERE v <> 11 ORDER BY v LIMIT 900, 25",
             "SELECT * FROM k_pairs WHERE v <> 11 ORDER BY v, a, b LIMIT 900, 25"),
            ("items", "SELECT * FROM k_items WHERE grp <> 6 ORDER BY score LIMIT 900, 25",
             "SELECT * FROM k_items WHERE grp <> 6 ORDER BY score, id LIMIT 900, 25")]:
        before = len(sent_texts(rule))
        pc.execute(via)
        got = pc.fetchall()
        dc.execute(direct)
        t.eq("a jump to a deep page has the rows sent direct: %s" % via, dc.fetchall(), got)
        sent = sent_texts(rule)[before:]
        if rule == "pairs":
            t.check(len(sent) == 1 and "myrewrite_dj" in sent[0],
                    "auto without a bookmark: the deferred join", sent)
        else:
            t.check(len(sent) == 1 and "myrewrite_dj" not in sent[0] and "((" not in sent[0] and
                    sent[0].endswith("ORDER BY score, k_items.`id` LIMIT 900, 25"),
                    "keyset without a bookmark: the page itself, key appended", sent)


def ttl(conns):
    """bookmark_ttl = 1s on k_bin: a bookmark serves at once, not 1 s later."""
    cur = conns[0].cursor()
    sql = "SELECT * FROM k_bin ORDER BY b LIMIT 10, 5"
    cur.execute("SELECT * FROM k_bin ORDER BY b LIMIT 5, 5")  # bookmarks row 10
    cur.fetchall()
    before = len(sent_texts("bins"))
    cur.execute(sql)
    t.eq("a page right after the walk seeks", 1, len(sent_texts("bins")) - before)
    time.sleep(1.2)
    before = len(sent_texts("bins"))
    cur.execute(sql)
    t.eq("after bookmark_ttl the same page is sent untouched", 0,
         len(sent_texts("bins")) - before)


def prepared(d, conns):
    """Prepared pages under a keyset rule: deferred joins, never seeks (the proxy does
    not read COM_STMT_EXECUTE's binary rows, so it has no bookmark of its own for them,
    and a text walk's bookmarks must not be applied to a statement prepared once)."""
    if not os.access(STMT_BIN, os.X_OK):
        t.not_ok("mr_stmt_paginate is built", STMT_BIN)
        return
    # a text walk of the listing the first prepared shape pages: it leaves bookmarks
    check_walk(d, conns, "ps", "SELECT * FROM ps_items ORDER BY id LIMIT %(off)d, %(n)d",
               "SELECT * FROM ps_items ORDER BY id", page=500)
    before = len(sent_texts("ps"))
    r = subprocess.run([STMT_BIN, t.HOST, str(t.DIRECT_PORT), str(PORT), t.USER, t.PASSWORD,
                        t.DB], capture_output=True, text=True, timeout=120)
    sys.stdout.write(r.stdout)
    t.check(r.returncode == 0, "prepared LIMIT ?, ? pages under a keyset rule equal direct ones",
            r.stderr[-1500:])
    sent = sent_texts("ps")[before:]
    t.eq("each of the 3 prepared statements was rewritten once, at prepare", 3, len(sent))
    t.check(all("?) AS myrewrite_dj USING" in s and "((" not in s for s in sent),
            "prepared pages under a keyset rule are deferred joins, not seeks", sent)


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    setup(d)  # an error here fails the test: no skip for a broken setup
    PROXY.start()
    try:
        conns = [t.connect(PORT, autocommit=True), t.connect(PORT, autocommit=True)]
        walks(d, conns)
        ttl(conns)
        jumps(d, conns)
        nullable(d, conns)
        write_drops(d, conns)
        prepared(d, conns)
        for c in conns:
            c.close()
    finally:
        PROXY.stop()
    d.cursor().execute("DROP TABLE IF EXISTS k_items, k_pairs, k_str, k_bin, k_null, ps_items")
    d.close()
    t.done()


if __name__ == "__main__":
    main()
