#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""UPDATE DELAYED key values compared as the server compares them (issue 25, item 8): a
DELAYED statement changes exactly the rows a direct UPDATE with the same WHERE changes, or is
refused with ERR 1235 saying which key forms are taken; never a row the statement does not
name (before: `WHERE id = 1.5` was staged as 2 and changed row 2).

A proxy of its own with the schema cache on; rules without `key` (the primary key is read from
the schema), staged and memory mode. Per key type (INT, INT UNSIGNED, DECIMAL(6,2), VARCHAR(8)
in utf8mb4_general_ci, utf8mb4_general_nopad_ci and utf8mb4_bin, DATE, DATETIME) a table and
its direct twin with the same rows; each case is `SET n = n + 2^i WHERE id = <literal>` of
every kind (integers, fractions, exponents, quoted numbers with spaces, signs and letters, hex,
out of range, case and trailing-space variants as each collation compares them, too long, dates
in other forms and past the column's precision). An accepted case is also run direct on the
twin; after FLUSH DELAYED each row of the table must equal its twin's (the powers of 2 tell
which cases reached which row): several spellings of one row's key reach it each once, in both
modes, and spellings the collation keeps apart ('abc' and 'ABC' in utf8mb4_bin, 'abc' and
'abc ' in NO PAD) reach their own rows. The canonical form of each type must be accepted.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import rawproto_lib as rp  # noqa: E402

# type, rows, literals (the first ones marked True must be accepted)
TYPES = {
    "int": ("INT", ["1", "2", "3", "4", "5", "6"],
            [("3", True), ("'5'", True), ("2.0", False), ("1.5", False), ("03", False), ("'4.6'", False),
             ("4.5", False), ("' 4'", False), ("'4abc'", False), ("'3.0'", False),
             ("-1", False), ("1e0", False), ("0x03", False), ("99999999999", False),
             ("'+2'", False), ("2.50", False)]),
    "uint": ("INT UNSIGNED", ["1", "2", "3", "4294967295"],
             [("4294967295", True), ("'2'", True), ("-1", False), ("2.5", False),
              ("4294967296", False), ("'-2'", False), ("18446744073709551615", False)]),
    "dec": ("DECIMAL(6,2)", ["1", "1.5", "2", "2.25", "3.1", "9999.99"],
            [("1.5", True), ("2", True), ("2.25", True), ("'3.1'", True), ("1.505", False),
             ("1.50", False), ("2.250", False),
             ("2.251", False), ("1e0", False), ("0x01", False), ("10000", False),
             ("' 2'", False), ("9999.995", False), ("-1.5", False)]),
    "str": ("VARCHAR(8) COLLATE utf8mb4_general_ci", ["'abc'", "'ABd'", "'x'", "'abcdefgh'",
                                                      "'5'"],
            [("'abc'", True), ("'x'", True), ("5", False),
             ("0x616263", False), ("'AbCdEfGh'", True), ("'ABC'", True), ("'abc '", True)]),
    "nopad": ("VARCHAR(8) COLLATE utf8mb4_general_nopad_ci", ["'abc'", "'abc '", "'x'"],
              [("'abc'", True), ("'ABC '", True), ("'abc  '", True), ("'X'", True), ("5", False)]),
    "bin": ("VARCHAR(8) COLLATE utf8mb4_bin", ["'abc'", "'ABC'", "'x'"],
            [("'abc'", True), ("'ABC'", True), ("'abc '", True), ("'ABC  '", True), ("5", False)]),
    "uca": ("VARCHAR(8) COLLATE utf8mb4_unicode_ci", ["'ss'", "'x'"],
            [("'ss'", True), ("'SS'", True), ("'\u00df'", True), ("'ss '", True), ("5", False)]),
    "lock": ("VARCHAR(8) COLLATE utf8mb4_general_ci", ["'abc'", "'x'"],
             [("'abc'", True), ("'ABC'", True), ("'abc '", True), ("'X'", True), ("5", False)]),
    "date": ("DATE", ["'2024-01-02'", "'2024-02-29'", "'2024-03-01'"],
             [("'2024-01-02'", True), ("'2024-02-29'", True), ("'2024-02-29 00:00:00'", False),
              ("'2024-1-2'", False),
              ("20240102", False), ("'2024-03-01 10:00:00'", False), ("'2024-02-30'", False),
              ("'2024-01-02x'", False)]),
    "dt": ("DATETIME", ["'2024-01-02 03:04:05'", "'2024-01-02 03:04:06'", "'2024-01-02'"],
           [("'2024-01-02 03:04:05'", True), ("'2024-01-02 00:00:00'", True),
            ("'2024-01-02'", False), ("'2024-01-02 03:04:05.000'", False),
            ("'2024-01-02 03:04:05.4'", False),
            ("'2024-01-02 03:04:05.6'", False), ("'2024-01-02 3:04:05'", False),
            ("20240102030405", False)]),
}
MODES = ("staged", "memory")
# Not transactional: staged mode flushes it through the LOCK TABLES snapshot (delayed/flush/flush_locked.c)
ENGINES = {"lock": "MyISAM"}


def table(kind, mode):
    return "dk_%s_%s" % (kind, mode[0])


def rules():
    return "".join("[delayed %s]\ntable = %s.%s\ncolumns = n\nmode = %s\nflush_interval = 1h\n"
                   % (table(k, m), t.DB, table(k, m), m) for k in TYPES for m in MODES)


PROXY = t.Proxy("dkeys", rules=rules(), own_conn=True)
q = t.rows  # (connection, sql): a tuple of row tuples
run = t.try_sql  # (connection, sql): None, or the error's (code, message)


def setup(d):
    for kind, (typ, keys, _) in TYPES.items():
        for m in MODES:
            for name in (table(kind, m), table(kind, m) + "_twin"):
                q(d, "DROP TABLE IF EXISTS %s, %s_delayed, %s_delayed_rejected"
                  % (name, name, name))
                q(d, "CREATE TABLE %s (id %s PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0) "
                  "ENGINE=%s" % (name, typ, ENGINES.get(kind, "InnoDB")))
                q(d, "INSERT INTO %s (id) VALUES %s" % (name, ", ".join("(%s)" % k
                                                                         for k in keys)))


def warm_up(c):
    """The rules name no key: the first statement of each table may answer "retry" until
    the schema cache has read it. A delta of 0 on the first row changes nothing."""
    for kind, (_, keys, _) in TYPES.items():
        for m in MODES:
            sql = "UPDATE DELAYED %s SET n = n + 0 WHERE id = %s" % (table(kind, m), keys[0])
            deadline = time.time() + 20
            got = run(c, sql)
            while got is not None and "retry" in got[1] and time.time() < deadline:
                time.sleep(0.1)
                got = run(c, sql)
            t.eq("%s: the schema cache has the table" % table(kind, m), None, got)


def too_long(c):
    """Staged: a string longer than the column is refused (the staging INSERT, in the
    client's sql_mode, could cut it to another row's key)."""
    q(c, "SET SESSION sql_mode = ''")  # where the server would cut it silently
    got = run(c, "UPDATE DELAYED %s SET n = n + 1 WHERE id = 'abcdefghi'" % table("str", "staged"))
    t.check(got is not None and got[0] == 1235 and "longer than the column" in got[1],
            "staged: a key longer than its VARCHAR(8) is refused", got)
    q(c, "SET SESSION sql_mode = DEFAULT")


def executed(d):
    """Memory mode judges each COM_STMT_EXECUTE's key values too (the binary protocol)."""
    name = table("int", "memory")
    c = rp.Conn(PROXY.port)
    st = c.prepare("UPDATE DELAYED %s SET n = n + ? WHERE id = ?" % name)
    for label, typ, val, ok in (("DOUBLE 1.5", 0x05, struct.pack("<d", 1.5), False),
                                ("string '4.6'", 0xFD, b"\x034.6", False),
                                ("string '6'", 0xFD, b"\x016", True),
                                ("LONGLONG 4", 0x08, struct.pack("<q", 4), True)):
        p = struct.pack("<BIBI", rp.COM_STMT_EXECUTE, st.stmt_id, 0, 1)
        p += b"\x00\x01" + bytes([0x08, 0, typ, 0]) + struct.pack("<q", 1 << 22) + val
        c.send_command(p)
        r = c.read_result(c._logged("execute " + label))
        if ok:
            t.eq("memory, executed key %s is accepted" % label, "ok", r.kind)
            q(d, "UPDATE %s_twin SET n = n + %d WHERE id = %s" % (name, 1 << 22,
                                                                  label.split()[-1]))
        else:
            t.check(r.kind == "err" and r.err[0] == 1235 and "parameter 2" in r.err[1] and
                    "Keys are taken as" in r.err[1],
                    "memory, executed key %s is refused naming the parameter" % label,
                    r.err if r.kind == "err" else r.kind)
    c.close()


def cases(c, d):
    for kind, (typ, _, lits) in TYPES.items():
        for m in MODES:
            name = table(kind, m)
            for i, (lit, must) in enumerate(lits):
                sql = "UPDATE DELAYED %s SET n = n + %d WHERE id = %s" % (name, 1 << i, lit)
                got = run(c, sql)
                if got is None:
                    direct = run(d, "UPDATE %s_twin SET n = n + %d WHERE id = %s"
                                 % (name, 1 << i, lit))
                    t.eq("%s (%s): WHERE id = %s is staged; the direct UPDATE of the twin "
                         "is accepted too" % (name, typ, lit), None, direct)
                else:
                    t.check(got[0] == 1235 and "Keys are taken as" in got[1] and
                            "Nothing was staged" in got[1],
                            "%s (%s): WHERE id = %s is refused with the forms taken"
                            % (name, typ, lit), got)
                if must:
                    t.eq("%s: the canonical form %s is accepted" % (name, lit), None, got)
            # an IN list with one value that no row's key can equal: refused whole
            bad = [lit for lit, must in lits if not must][0]
            got = run(c, "UPDATE DELAYED %s SET n = n + 1048576 WHERE id IN (%s, %s)"
                      % (name, lits[0][0], bad))
            t.check(got is not None and got[0] == 1235 and "Keys are taken as" in got[1],
                    "%s: IN (%s, %s) is refused whole" % (name, lits[0][0], bad), got)


def compare(d):
    t.eq("FLUSH DELAYED answers OK", None, t.flush_until_ok(PROXY.port))
    for kind in TYPES:
        for m in MODES:
            name = table(kind, m)
            got = q(d, "SELECT id, n FROM %s ORDER BY id" % name)
            want = q(d, "SELECT id, n FROM %s_twin ORDER BY id" % name)
            t.eq("%s: every row changed exactly as by the direct UPDATEs" % name, want, got)


def main():
    t.needs_own_proxy()
    d = t.direct(autocommit=True)
    setup(d)
    PROXY.start()
    try:
        c = t.connect(PROXY.port, autocommit=True)
        warm_up(c)
        cases(c, d)
        too_long(c)
        executed(d)
        compare(d)
        c.close()
    finally:
        PROXY.stop()
    for kind in TYPES:
        for m in MODES:
            name = table(kind, m)
            q(d, "DROP TABLE IF EXISTS %s, %s_twin, %s_delayed, %s_delayed_rejected"
              % (name, name, name, name))
    d.close()
    t.done()


if __name__ == "__main__":
    main()
