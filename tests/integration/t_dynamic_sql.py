#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Dynamic SQL through the proxy: EXECUTE IMMEDIATE, PREPARE ... FROM, CALL.

Two proxies in front of the test mariadbd, with the same block rules (UPDATE
and DELETE need a WHERE; DROP TABLE dyn_keep is refused): "refuse" adds
`dynamic = refuse` to the first, "pass" does not.

- The SQL of a string literal is examined by both: EXECUTE IMMEDIATE 'x',
  PREPARE s FROM 'x' (then EXECUTE s), a "..." literal, adjacent literals
  the server joins, escapes the server resolves (\\n between UPDATE and the
  table name). A blocked one gets the rule's ERR and the table is unchanged;
  one with a WHERE runs, and the server changes just that row.
- The session's NO_BACKSLASH_ESCAPES decides what the literal holds: the same
  text 'UPDATE ... -- x\\nWHERE id = 1' is a one-row UPDATE with backslash
  escapes (relayed) and an UPDATE of every row without them (refused); each
  reading is checked against the server itself (direct, rolled back).
- What the text does not show (a user variable, an expression, a hex
  literal, CALL of a procedure, a CALL inside the literal, a compound
  statement, an executable comment that starts EXECUTE IMMEDIATE) is refused
  by the "refuse" proxy with an ERR naming the rule and the table stays as
  it was; the "pass" proxy relays them and the server runs them (the limit
  the README states).

Environment: MR_DIRECT_PORT, MR_BIN, MR_TMP (proxies take free ports).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
from pymysql.constants import CLIENT  # noqa: E402

RULES = """
[block nowhere]
statement = update, delete
where = missing
message = UPDATE and DELETE need a WHERE clause
code = 1227
sqlstate = HY000
%s

[block keep]
pattern = DROP TABLE dyn_keep
message = dyn_keep stays
"""


def reset():
    c = t.direct()
    cur = c.cursor()
    cur.execute("CREATE OR REPLACE TABLE dyn_u (id INT PRIMARY KEY, n INT) ENGINE=InnoDB")
    cur.execute("INSERT INTO dyn_u VALUES (1, 0), (2, 0), (3, 0)")
    cur.execute("CREATE TABLE IF NOT EXISTS dyn_keep (a INT)")
    cur.execute("CREATE OR REPLACE PROCEDURE dyn_p() UPDATE dyn_u SET n = n + 1")
    c.commit()
    c.close()


def table():
    return t.rows(t.direct(), "SELECT id, n FROM dyn_u ORDER BY id")


UNCHANGED = ((1, 0), (2, 0), (3, 0))


def run(px, sqls, mode=None):
    """Runs sqls on one connection; (error code, message) of the first that
    fails, or None."""
    c = px.connect() if px else t.direct()
    try:
        cur = c.cursor()
        if mode:
            cur.execute("SET sql_mode = CONCAT(@@sql_mode, ',%s')" % mode)
        for sql in sqls:
            cur.execute(sql)
        c.commit()
        return None
    except pymysql.MySQLError as e:
        return e.args[0], e.args[1]
    finally:
        c.close()


def direct_affected(sql, mode=None):
    """Rows the server changes for sql, rolled back."""
    c = t.direct()
    try:
        cur = c.cursor()
        if mode:
            cur.execute("SET sql_mode = CONCAT(@@sql_mode, ',%s')" % mode)
        cur.execute("BEGIN")
        n = cur.execute(sql)
        c.rollback()
        return n
    finally:
        c.close()


def refused(px, name, sqls, code, part, mode=None):
    reset()
    err = run(px, sqls, mode)
    t.check(err is not None and err[0] == code and part in err[1],
            "%s: refused with %d (%s)" % (name, code, part), err)
    t.eq("%s: the table is unchanged" % name, UNCHANGED, table())


def relayed(px, name, sqls, want, mode=None):
    reset()
    err = run(px, sqls, mode)
    t.check(err is None, "%s: relayed" % name, err)
    t.eq("%s: the server ran it" % name, want, table())


def literal_forms(px, label):
    block = (1227, "UPDATE and DELETE need a WHERE clause")
    forms = {
        "EXECUTE IMMEDIATE": ["EXECUTE IMMEDIATE 'UPDATE dyn_u SET n = n + 1'"],
        "PREPARE ... FROM": ["PREPARE s FROM 'DELETE FROM dyn_u'", "EXECUTE s"],
        "a \"...\" literal": ['EXECUTE IMMEDIATE "UPDATE dyn_u SET n = 9"'],
        "adjacent literals": ["EXECUTE IMMEDIATE 'UPDATE dyn_u ' 'SET n = 9'"],
        "an escaped newline": ["EXECUTE IMMEDIATE 'UPDATE\\ndyn_u SET n = 9'"],
    }
    for name, sqls in forms.items():
        refused(px, "%s: %s" % (label, name), sqls, *block)
    refused(px, "%s: a pattern rule inside EXECUTE IMMEDIATE" % label,
            ["EXECUTE IMMEDIATE 'drop   table dyn_keep'"], 1148, "dyn_keep stays")
    t.eq("%s: dyn_keep is still there" % label, ((1,),),
         t.rows(t.direct(), "SELECT COUNT(*) FROM information_schema.TABLES"
                " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'dyn_keep'"))
    relayed(px, "%s: EXECUTE IMMEDIATE with a WHERE" % label,
            ["EXECUTE IMMEDIATE 'UPDATE dyn_u SET n = 5 WHERE id = ?' USING 2"],
            ((1, 0), (2, 5), (3, 0)))
    relayed(px, "%s: PREPARE ... FROM with a WHERE, then EXECUTE" % label,
            ["PREPARE s FROM 'UPDATE dyn_u SET n = 7 WHERE id = 3'", "EXECUTE s"],
            ((1, 0), (2, 0), (3, 7)))


def sql_mode_decides(px):
    text = "EXECUTE IMMEDIATE 'UPDATE dyn_u SET n = n + 1 -- x\\nWHERE id = 1'"
    reset()
    t.eq("backslash escapes: the server updates one row", 1, direct_affected(text))
    t.eq("NO_BACKSLASH_ESCAPES: the server updates every row", 3,
         direct_affected(text, "NO_BACKSLASH_ESCAPES"))
    relayed(px, "backslash escapes: the one-row UPDATE", [text], ((1, 1), (2, 0), (3, 0)))
    refused(px, "NO_BACKSLASH_ESCAPES: the UPDATE of every row", [text], 1227,
            "need a WHERE", "NO_BACKSLASH_ESCAPES")
    # The mode set by an earlier statement of the same text: the literal's token reads
    # alike either way, its contents do not ('# x\n' hides the WHERE without escapes).
    multi = ("SET sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES'); "
             "EXECUTE IMMEDIATE 'UPDATE dyn_u SET n = n + 1 # x\\nWHERE id = 1'")
    reset()
    t.eq("a mode set earlier in the text: the server updates every row", None,
         run_multi(None, multi))
    t.eq("a mode set earlier in the text: every row changed directly",
         ((1, 1), (2, 1), (3, 1)), table())
    reset()
    err = run_multi(px, multi)
    t.check(err is not None and err[0] == 1227 and "need a WHERE" in err[1],
            "a mode set earlier in the text: refused with 1227", err)
    t.eq("a mode set earlier in the text: the table is unchanged", UNCHANGED, table())


def run_multi(px, text):
    """Runs a multi-statement text and reads all its results; (code, message) of an
    error, or None."""
    kw = dict(client_flag=CLIENT.MULTI_STATEMENTS, autocommit=True)
    c = px.connect(**kw) if px else t.direct(**kw)
    try:
        cur = c.cursor()
        cur.execute(text)
        while cur.nextset():
            pass
        return None
    except pymysql.MySQLError as e:
        return e.args[0], e.args[1]
    finally:
        c.close()


HIDDEN = {
    "EXECUTE IMMEDIATE @var": ["SET @q = 'UPDATE dyn_u SET n = 4'", "EXECUTE IMMEDIATE @q"],
    "PREPARE ... FROM @var": ["SET @q = 'UPDATE dyn_u SET n = 4'", "PREPARE s FROM @q",
                              "EXECUTE s"],
    "EXECUTE IMMEDIATE CONCAT()": ["EXECUTE IMMEDIATE CONCAT('UPDATE dyn_u', ' SET n = 4')"],
    "EXECUTE IMMEDIATE of a hex literal": ["EXECUTE IMMEDIATE 0x%s"
                                           % b"UPDATE dyn_u SET n = 4".hex()],
    "CALL": ["CALL dyn_p()"],
    "CALL inside the literal": ["EXECUTE IMMEDIATE 'CALL dyn_p()'"],
    "BEGIN NOT ATOMIC": ["BEGIN NOT ATOMIC UPDATE dyn_u SET n = 4; END"],
    "an executable comment": ["SET @q = 'UPDATE dyn_u SET n = 4'",
                              "/*!EXECUTE IMMEDIATE*/ @q"],
}


def hidden_forms(refuse, passing):
    for name, sqls in HIDDEN.items():
        refused(refuse, "dynamic = refuse: %s" % name, sqls, 1227,
                "myrewrite rule nowhere (dynamic = refuse)")
        reset()
        err = run(passing, sqls)
        changed = table() != UNCHANGED
        t.check(err is None and changed,
                "without dynamic = refuse: %s is relayed and the server runs it" % name,
                (err, table()))


if __name__ == "__main__":
    if t.DIRECT_ONLY:
        print("skip: compares proxies with direct")
        sys.exit(77)
    reset()
    with t.Proxy("dyn_refuse", rules=RULES % "dynamic = refuse") as refuse, \
            t.Proxy("dyn_pass", rules=RULES % "") as passing:
        literal_forms(passing, "without dynamic = refuse")
        literal_forms(refuse, "with dynamic = refuse")
        sql_mode_decides(passing)
        hidden_forms(refuse, passing)
        t.eq("SELECT through the refusing proxy", ((1,),),
             t.rows(refuse.connect(), "EXECUTE IMMEDIATE 'SELECT 1'"))
    c = t.direct()
    c.cursor().execute("DROP TABLE IF EXISTS dyn_u, dyn_keep")
    c.cursor().execute("DROP PROCEDURE IF EXISTS dyn_p")
    c.close()
    t.done()
