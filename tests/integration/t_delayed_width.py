#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""UPDATE DELAYED values wider than their column are refused when the statement arrives, not
accepted and then sent to the dead-letter table by the flush; a proxy of its own (with the
schema cache on), the real mariadbd.

Four tables, each (id INT PRIMARY KEY, n <type>, lvl TINYINT):
  * w_int   n INT,          staged, with key, set_columns = lvl
  * w_big   n BIGINT,       staged, no key (taken from the schema)
  * w_tiny  n TINYINT,      memory, with key, set_columns = lvl
  * w_uint  n INT UNSIGNED, memory, no key
Once the schema cache has read them (/metrics myrewrite_schema_cache_loads_total):
  * a delta wider than the column can span (n = n + 9223372036854775807 on INT, n - 300 on
    TINYINT, n + 2^64 on BIGINT, n + 4294967296 on INT UNSIGNED) and SET lvl = 128 / -129
    on the TINYINT set column get ERR 1235 naming the column, its type and range and saying
    the statement was not staged; the staging table and SHOW DELAYED rows_staged do not move;
  * prepared: a literal too wide is refused at COM_STMT_PREPARE (staged and memory), and in
    memory mode an executed `?` value too wide is refused at its COM_STMT_EXECUTE;
  * the in-range statements are accepted; FLUSH DELAYED answers OK, every value is exactly
    the sum of the accepted ones, and SHOW DELAYED counts no rejected row.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports (client, console,
HTTP).
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import rawproto_lib as rp  # noqa: E402

# table: (type of n, mode, key given, set_columns)
TABLES = {"w_int": ("INT", "staged", True, True), "w_big": ("BIGINT", "staged", False, False),
          "w_tiny": ("TINYINT", "memory", True, True),
          "w_uint": ("INT UNSIGNED", "memory", False, False)}

rows = t.rows
run = t.try_sql  # (connection, sql): None for OK, else (code, message)


def rules():
    out = []
    for name, (_, mode, key, sets) in TABLES.items():
        out.append("[delayed %s]\ntable = test.%s\ncolumns = n\nmode = %s\nflush_interval = 1h\n"
                   % (name, name, mode))
        if key:
            out.append("key = id\n")
        if sets:
            out.append("set_columns = lvl\n")
    return "".join(out)


PROXY = t.Proxy("dwidth", rules=rules(), rules_file="10-delayed-width.rules", own_conn=True,
                admin=True, http=True)
PORT, HTTP_PORT = PROXY.port, PROXY.http_port


def setup(d):
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS " + ", ".join(
        n + s for n in TABLES for s in ("", "_delayed", "_delayed_rejected")))
    for name, (typ, _, _, _) in TABLES.items():
        cur.execute("CREATE TABLE %s (id INT PRIMARY KEY, n %s NOT NULL DEFAULT 0, lvl TINYINT "
                    "NOT NULL DEFAULT 0) ENGINE=InnoDB" % (name, typ))
        cur.execute("INSERT INTO %s (id) VALUES (1), (2)" % name)


def schema_loads():
    return t.metric(HTTP_PORT, "myrewrite_schema_cache_loads_total") or 0


def warm_up(c):
    """One in-range statement per table; the tables without key answer "retry" until the
    schema cache has read them. Then waits for the cache to hold all four."""
    for name in TABLES:
        deadline = time.time() + 20
        got = run(c, "UPDATE DELAYED %s SET n = n + 1 WHERE id = 1" % name)
        while got is not None and "retry" in got[1] and time.time() < deadline:
            time.sleep(0.1)
            got = run(c, "UPDATE DELAYED %s SET n = n + 1 WHERE id = 1" % name)
        t.eq("%s: the first in-range statement is accepted" % name, None, got)
    deadline = time.time() + 20
    while schema_loads() < len(TABLES) and time.time() < deadline:
        time.sleep(0.1)
    t.log("schema cache loads: %d" % schema_loads())


def staged_count(d, name):
    return rows(d, "SELECT COUNT(*) FROM %s_delayed" % name)[0][0]


def rows_staged():
    return {r["rule"]: r["rows_staged"] for r in PROXY.admin_dicts("SHOW DELAYED")}


def refused(c, d, name, sql, want):
    """sql must get ERR 1235 holding every string of want, and stage nothing."""
    staged = TABLES[name][1] == "staged"
    before = (staged_count(d, name) if staged else None, rows_staged().get(name))
    got = run(c, sql)
    t.check(got is not None and got[0] == 1235 and all(w in got[1] for w in want) and
            "the statement was not staged" in got[1], "%s: %s is refused: %s" % (name, sql,
                                                                                 want[0]), got)
    after = (staged_count(d, name) if staged else None, rows_staged().get(name))
    t.eq("%s: ... and nothing was staged (staging rows, SHOW DELAYED rows_staged)" % name,
         before, after)


def accepted(c, name, sql):
    t.eq("%s: %s is accepted" % (name, sql), None, run(c, sql))


def statements(c, d):
    refused(c, d, "w_int", "UPDATE DELAYED w_int SET n = n + 9223372036854775807 WHERE id = 1",
            ["the delta 9223372036854775807 is wider than column n can span",
             "int(11): -2147483648 to 2147483647, a width of 4294967295", "test.w_int"])
    refused(c, d, "w_int", "UPDATE DELAYED w_int SET n = n - 4294967296 WHERE id IN (1, 2)",
            ["the delta -4294967296 is wider than column n"])
    refused(c, d, "w_int", "UPDATE DELAYED w_int SET lvl = 128 WHERE id = 1",
            ["SET lvl = 128 is out of range for column lvl", "tinyint(4): -128 to 127"])
    accepted(c, "w_int", "UPDATE DELAYED w_int SET n = n - 2 WHERE id = 1")
    accepted(c, "w_int", "UPDATE DELAYED w_int SET lvl = -128 WHERE id = 2")
    refused(c, d, "w_big", "UPDATE DELAYED w_big SET n = n + 18446744073709551616 WHERE id = 1",
            ["the delta 18446744073709551616 is wider than column n",
             "bigint(20): -9223372036854775808 to 9223372036854775807"])
    accepted(c, "w_big", "UPDATE DELAYED w_big SET n = n + 9223372036854775807 WHERE id = 2")
    refused(c, d, "w_tiny", "UPDATE DELAYED w_tiny SET n = n + 256 WHERE id = 1",
            ["the delta 256 is wider than column n", "tinyint(4): -128 to 127, a width of 255",
             "(mode = memory)"])
    refused(c, d, "w_tiny", "UPDATE DELAYED w_tiny SET n = n - 300 WHERE id = 2",
            ["the delta -300 is wider than column n"])
    refused(c, d, "w_tiny", "UPDATE DELAYED w_tiny SET lvl = -129 WHERE id = 2",
            ["SET lvl = -129 is out of range for column lvl"])
    accepted(c, "w_tiny", "UPDATE DELAYED w_tiny SET n = n - 27, lvl = 127 WHERE id = 2")
    refused(c, d, "w_uint", "UPDATE DELAYED w_uint SET n = n + 4294967296 WHERE id = 1",
            ["the delta 4294967296 is wider than column n",
             "int(10) unsigned: 0 to 4294967295"])


def prepare_refused(c, sql, want):
    try:
        c.prepare(sql)
        t.not_ok("PREPARE %s is refused" % sql, "it was prepared")
    except rp.ServerError as e:
        t.check(e.code == 1235 and want in str(e) and "not staged" in str(e),
                "PREPARE %s is refused" % sql, str(e))


def prepared(d):
    c = rp.Conn(PORT)
    prepare_refused(c, "UPDATE DELAYED w_int SET n = n + 9999999999 WHERE id = ?",
                    "the delta 9999999999 is wider than column n")
    prepare_refused(c, "UPDATE DELAYED w_tiny SET n = n + 300 WHERE id = ?",
                    "the delta 300 is wider than column n")
    st = c.prepare("UPDATE DELAYED w_uint SET n = n + ? WHERE id = ?")
    before = rows_staged().get("w_uint")
    r = c.execute(st.stmt_id, [(rp.TYPE_LONGLONG, 4294967296), (rp.TYPE_LONGLONG, 1)])
    t.check(r.kind == "err" and r.err[0] == 1235 and
            "the delta 4294967296 (parameter 1) is wider than column n" in r.err[1] and
            "not staged" in r.err[1], "w_uint: an executed value too wide is refused", r.err
            if r.kind == "err" else r.kind)
    t.eq("w_uint: ... and nothing was staged", before, rows_staged().get("w_uint"))
    r = c.execute(st.stmt_id, [(rp.TYPE_LONGLONG, 6), (rp.TYPE_LONGLONG, 2)])
    t.eq("w_uint: an executed value in range is accepted", ("ok", 1),
         (r.kind, r.ok[0] if r.kind == "ok" else r.err))
    c.close()


def results(c, d):
    t.eq("FLUSH DELAYED answers OK: nothing goes to a dead-letter table", None,
         run(c, "FLUSH DELAYED"))
    want = {"w_int": ((1, -1, 0), (2, 0, -128)), "w_big": ((1, 1, 0), (2, 9223372036854775807, 0)),
            "w_tiny": ((1, 1, 0), (2, -27, 127)), "w_uint": ((1, 1, 0), (2, 6, 0))}
    for name, w in want.items():
        t.eq("%s: the accepted statements are applied, the refused ones are not" % name, w,
             rows(d, "SELECT id, n, lvl FROM %s ORDER BY id" % name))
    shown = {r["rule"]: r["rows_rejected"] for r in PROXY.admin_dicts("SHOW DELAYED")}
    t.eq("SHOW DELAYED counts no rejected row", {n: 0 for n in TABLES},
         {n: shown.get(n) for n in TABLES})


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    setup(d)
    PROXY.start()
    try:
        end = time.time() + 20  # the flusher makes the staging tables
        while time.time() < end and rows(d, "SELECT COUNT(*) FROM information_schema.TABLES "
                                            "WHERE TABLE_SCHEMA = 'test' AND TABLE_NAME IN "
                                            "('w_int_delayed', 'w_big_delayed')") != ((2,),):
            time.sleep(0.1)
        c = t.connect(PORT, autocommit=True)
        warm_up(c)
        statements(c, d)
        prepared(d)
        results(c, d)
        c.close()
    finally:
        PROXY.stop()
    t.done()


if __name__ == "__main__":
    main()
