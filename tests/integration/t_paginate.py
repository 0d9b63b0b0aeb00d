#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""paginate rules (deferred join and max_offset) end to end: a proxy of its own with
paginate rules in front of the real mariadbd.

  * 10^6-row tables filled server-side from the Sequence engine (MR_PAGINATE_ROWS);
  * random pages at random depths through the proxy return exactly the rows, in the
    order, of the original query sent direct: WHERE filters, DESC, mixed directions,
    a secondary-index ORDER BY with ties (compared with the order the proxy makes
    total: the key appended in the direction of the last ORDER BY item), a composite key, aliases, column lists and SELECT *
    over a table whose key is not its first column;
  * the proxy's log shows the pages were rewritten (log = full);
  * a page beyond max_offset gets ERR 1235 naming the limit; the page at max_offset
    does not; the same for a prepared `LIMIT ?, ?` at each COM_STMT_EXECUTE, whether the
    offset is bound as an integer or a string, with its types bound or reused, or executed
    by MariaDB's direct execution (statement id -1).
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN (the proxy takes free ports), MR_PAGINATE_SEED,
MR_PAGINATE_ROWS (10^6), MR_PAGINATE_PAGES (25 random pages per shape).
"""
import os
import random
import re
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
import rawproto_lib as rp  # noqa: E402

ROWS = int(os.environ.get("MR_PAGINATE_ROWS", "1000000"))
PAGES = int(os.environ.get("MR_PAGINATE_PAGES", "25"))
MAX_OFFSET = ROWS * 9 // 10  # the items rule's guardrail
RULES_DIR = os.path.join(t.TMP, "paginate_rules")
RULES = """
[paginate items]
table = %s.p_items
key = id
threshold = 100
max_offset = %d
log = full

[paginate pairs]
table = p_pairs
key = a, b
threshold = 100
log = full
""" % (t.DB, MAX_OFFSET)

# (query sent through the proxy, query sent direct): %(off)d / %(n)d are filled in.
# Where the ORDER BY has ties, the direct query carries the key the proxy appends.
SHAPES = [
    ("SELECT * FROM p_items ORDER BY id LIMIT %(off)d, %(n)d", None, ROWS),
    ("SELECT id, name FROM p_items WHERE grp = 3 ORDER BY id DESC LIMIT %(off)d, %(n)d",
     None, ROWS // 7),
    ("SELECT i.id, i.score, UPPER(i.name) AS nm FROM p_items AS i WHERE i.grp <> 2 "
     "ORDER BY i.score DESC LIMIT %(n)d OFFSET %(off)d",
     "SELECT i.id, i.score, UPPER(i.name) AS nm FROM p_items AS i WHERE i.grp <> 2 "
     "ORDER BY i.score DESC, i.id DESC LIMIT %(n)d OFFSET %(off)d", ROWS * 6 // 7),
    ("SELECT id, score FROM p_items it ORDER BY score ASC, id DESC LIMIT %(off)d, %(n)d",
     None, ROWS),
    ("SELECT it.*, it.id * 2 FROM p_items it WHERE name LIKE 'n1%%' AND pad <> 'it''s' "
     "ORDER BY grp, score DESC, id LIMIT %(off)d, %(n)d", None, 11111),
    ("SELECT * FROM p_pairs ORDER BY a DESC, b DESC LIMIT %(off)d, %(n)d", None, ROWS),
    ("SELECT * FROM p_pairs AS p WHERE p.v < 20 ORDER BY p.v, p.a LIMIT %(off)d, %(n)d",
     "SELECT * FROM p_pairs AS p WHERE p.v < 20 ORDER BY p.v, p.a, p.b LIMIT %(off)d, %(n)d",
     ROWS * 20 // 37),
    ("SELECT b, v FROM p_pairs ORDER BY v DESC LIMIT %(off)d, %(n)d",
     "SELECT b, v FROM p_pairs ORDER BY v DESC, a DESC, b DESC LIMIT %(off)d, %(n)d", ROWS),
]


# the one shape whose WHERE tests columns no index holds (name, pad)
UNINDEXED_WHERE = "WHERE name LIKE 'n1%' AND pad <> 'it''s'"


PROXY = t.Proxy("paginate", rules_dir=RULES_DIR, rules=RULES)
PORT = PROXY.port


def setup(d):
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS p_items, p_pairs")
    cur.execute("CREATE TABLE p_items (id INT PRIMARY KEY, grp INT NOT NULL, score INT NOT NULL,"
                " name VARCHAR(30) NOT NULL, pad VARCHAR(60) NOT NULL, KEY (score),"
                " KEY (grp, score)) ENGINE=InnoDB")
    # the key is not the first column: SELECT * must keep the table's column order
    cur.execute("CREATE TABLE p_pairs (v INT NOT NULL, a INT NOT NULL, b INT NOT NULL,"
                " PRIMARY KEY (a, b), KEY (v)) ENGINE=InnoDB")
    cur.execute("INSERT INTO p_items SELECT seq, seq %% 7, seq %% 1000, CONCAT('n', seq),"
                " REPEAT('x', 50) FROM seq_1_to_%d" % ROWS)
    cur.execute("INSERT INTO p_pairs SELECT seq %% 37, seq DIV 100, seq %% 100"
                " FROM seq_1_to_%d" % ROWS)


def pages(d, c, rng):
    dc, pc = d.cursor(), c.cursor()
    checked = 0
    for via, direct, depth in SHAPES:
        direct = direct or via
        bad = []
        for _ in range(PAGES):
            args = {"off": rng.randint(100, min(depth, MAX_OFFSET)), "n": rng.randint(1, 40)}
            dc.execute(direct % args)
            pc.execute(via % args)
            want, got = dc.fetchall(), pc.fetchall()
            if want != got or [x[0] for x in dc.description] != [x[0] for x in pc.description]:
                bad.append(args)
            checked += 1
        t.check(not bad, "same rows and order through the proxy: %s" % via, bad[:3])
    return checked


def rewritten_forms():
    """One rewritten text per shape (LIMIT numbers aside), from the proxy's log."""
    forms = {}
    for line in PROXY.log_lines():
        if " -> " in line and "myrewrite_dj" in line:
            text = line.split(" -> ", 1)[1]
            if re.search(r"LIMIT \?|OFFSET \?", text):
                continue  # a prepared page: EXPLAIN takes no parameters
            forms.setdefault(re.sub(r"LIMIT \d+(, \d+| OFFSET \d+)", "LIMIT", text), text)
    return list(forms.values())


def explain_forms(d):
    """The inner query of each deferred join finds its page on an index (an index
    scan, range or ref), not by reading the full rows (type ALL) -- except where the
    WHERE filters on columns no index holds (UNINDEXED_WHERE), which the server can
    only test on the rows, rewritten or not; the outer query reads the page's rows
    by key (eq_ref on the derived table's key)."""
    cur = d.cursor(pymysql.cursors.DictCursor)
    forms = rewritten_forms()
    t.check(len(forms) >= len(SHAPES), "a rewritten form for each shape", len(forms))
    for text in forms:
        scan_ok = UNINDEXED_WHERE in text
        cur.execute("EXPLAIN " + text)
        plan = cur.fetchall()
        inner = [r for r in plan if r["select_type"] == "DERIVED"]
        outer = [r for r in plan if r["select_type"] == "PRIMARY" and
                 not r["table"].startswith("<derived")]
        ok = (len(inner) == 1 and (inner[0]["type"] in ("index", "range", "ref") or scan_ok) and
              len(outer) == 1 and outer[0]["type"] == "eq_ref")
        t.check(ok, "EXPLAIN: the inner query walks an index, the outer reads by key: %s"
                % text[:120], [(r["select_type"], r["table"], r["type"], r["key"],
                                r["Extra"]) for r in plan])


def guardrail(c):
    cur = c.cursor()
    cur.execute("SELECT id FROM p_items ORDER BY id LIMIT %d, 3" % MAX_OFFSET)
    t.eq("the page at max_offset is served",
         tuple((MAX_OFFSET + k,) for k in (1, 2, 3)), cur.fetchall())
    try:
        cur.execute("SELECT id FROM p_items ORDER BY id LIMIT %d, 3" % (MAX_OFFSET + 1))
        t.not_ok("a page beyond max_offset is refused", "it succeeded")
    except pymysql.err.MySQLError as e:
        code, msg = e.args[0], e.args[1]
        t.check(code == 1235 and str(MAX_OFFSET + 1) in msg and str(MAX_OFFSET) in msg and
                "keyset" in msg,
                "a page beyond max_offset gets ERR 1235 naming the limit", (code, msg))
    cur.execute("SELECT 1")
    t.eq("the session goes on after the refusal", ((1,),), cur.fetchall())


def refused(res, offset):
    """True when res is the guardrail's ERR 1235 for a page at offset."""
    return (res.kind == "err" and res.err[0] == 1235 and str(offset) in res.err[1] and
            "%d allowed" % MAX_OFFSET in res.err[1])


def execute_reusing_types(p, stmt_id, params):
    """COM_STMT_EXECUTE with new-params-bound 0: the values are written for `params`'
    types, which the server and the proxy must take from an earlier execute."""
    full = rp.execute_packet(stmt_id, params)
    flag = 10 + (len(params) + 7) // 8
    p.send_command(full[:flag] + b"\x00" + full[flag + 1 + 2 * len(params):])
    return p.read_result(p._logged("execute, types reused"))


def prepared_guardrail():
    """max_offset for a `?` offset, decided at each COM_STMT_EXECUTE."""
    p = rp.Conn(PORT)
    try:
        st = p.prepare("SELECT id FROM p_items ORDER BY id LIMIT ?, ?")
        text = p.execute(st.stmt_id, [(rp.TYPE_VAR_STRING, str(MAX_OFFSET + 5)),
                                      (rp.TYPE_LONGLONG, 3)])
        t.check(refused(text, MAX_OFFSET + 5), "prepared: an offset bound as a string too",
                (text.kind, text.err))
        # the refused execute was the first to bind types: the server never got them, the
        # client will not send them again, so the proxy puts them in the next one it sends
        owed = execute_reusing_types(p, st.stmt_id, [(rp.TYPE_VAR_STRING, str(MAX_OFFSET - 1)),
                                                      (rp.TYPE_LONGLONG, 2)])
        t.eq("prepared: the next execute gets the types the refused one bound", ("rows", 2),
             (owed.kind, len(owed.rows)))
        at = p.execute(st.stmt_id, [(rp.TYPE_LONGLONG, MAX_OFFSET), (rp.TYPE_LONGLONG, 3)])
        t.eq("prepared: the page at max_offset is served (3 rows)", ("rows", 3),
             (at.kind, len(at.rows)))
        deep = p.execute(st.stmt_id, [(rp.TYPE_LONGLONG, MAX_OFFSET + 1), (rp.TYPE_LONGLONG, 3)])
        t.check(refused(deep, MAX_OFFSET + 1),
                "prepared: an execute beyond max_offset gets ERR 1235 naming the limit",
                (deep.kind, deep.err))
        # the types bound last (by the refused execute) were LONGLONG, LONGLONG
        again = execute_reusing_types(p, st.stmt_id, [(rp.TYPE_LONGLONG, MAX_OFFSET - 1),
                                                      (rp.TYPE_LONGLONG, 2)])
        t.eq("prepared: an execute reusing the types is served", ("rows", 2),
             (again.kind, len(again.rows)))
        again = execute_reusing_types(p, st.stmt_id, [(rp.TYPE_LONGLONG, MAX_OFFSET + 2),
                                                      (rp.TYPE_LONGLONG, 2)])
        t.check(refused(again, MAX_OFFSET + 2), "prepared: ... and refused beyond max_offset",
                (again.kind, again.err))
        st2 = p.prepare("SELECT id FROM p_items WHERE grp <> ? ORDER BY id LIMIT ? OFFSET ?")
        last = p.execute(0xFFFFFFFF, [(rp.TYPE_LONGLONG, 99), (rp.TYPE_LONGLONG, 1),
                                      (rp.TYPE_LONGLONG, MAX_OFFSET + 3)])
        t.check(refused(last, MAX_OFFSET + 3), "prepared: MariaDB's direct execution (id -1) "
                "of LIMIT ? OFFSET ? is held to max_offset", (last.kind, last.err))
        ok = p.execute(st2.stmt_id, [(rp.TYPE_LONGLONG, 99), (rp.TYPE_LONGLONG, 1),
                                     (rp.TYPE_LONGLONG, 10)])
        t.eq("prepared: the session goes on after the refusals", ("rows", 1),
             (ok.kind, len(ok.rows)))
    finally:
        p.close()


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    setup(d)  # an error here fails the test: no skip for a broken setup
    seed = int(os.environ.get("MR_PAGINATE_SEED", str(int(time.time()))))
    t.log("seed %d (MR_PAGINATE_SEED to repeat)" % seed)
    PROXY.start()
    try:
        c = t.connect(PORT, autocommit=True)
        n = pages(d, c, random.Random(seed))
        guardrail(c)
        prepared_guardrail()
        explain_forms(d)
        c.close()
        time.sleep(0.2)
        rewritten = PROXY.log_text().count("myrewrite_dj")
        t.check(rewritten >= n, "the proxy rewrote every page (%d of %d)" % (rewritten, n))
    finally:
        PROXY.stop()
    d.cursor().execute("DROP TABLE IF EXISTS p_items, p_pairs")
    d.close()
    t.done()


if __name__ == "__main__":
    main()
