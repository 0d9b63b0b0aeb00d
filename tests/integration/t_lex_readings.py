#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Block rules read a text as the server may read it, against the real mariadbd.

One proxy with a `where = missing` block rule on UPDATE. Raw COM_QUERY packets
(CLIENT_MULTI_STATEMENTS), each case on a fresh connection:
  * the three bypasses of issue 25 items 3-5: ANSI_QUOTES, NO_BACKSLASH_ESCAPES set
    earlier in the same text, and gbk (SET NAMES earlier in the text, from a variable,
    from a prepared statement, and in an earlier text), each hiding
    `UPDATE lx_u SET n = n + 1` behind a quote the byte lexer reads differently: every one
    is refused with the rule's ERR 1148 and lx_u is unchanged on the server;
  * the same texts without the mode change, and ordinary texts with `"`, `\\` and
    multibyte strings, still run (no false refusal where every reading agrees);
  * differential: generated texts over fragments that read differently per mode and
    character set, each run directly (the oracle: did lx_d change, i.e. did the server
    run the UPDATE hidden in it?) and through the proxy under the same session mode or
    character set: no text whose UPDATE the server runs gets through the proxy. The
    refusals of texts the server would not have run it for are counted and printed;
  * a client with CLIENT_SESSION_TRACK: the character set an EXECUTE of a prepared
    SET NAMES gives, as the server's OK reports it, turns rewrites off (gbk) and on again.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes a free port.
"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import rawproto_lib as raw  # noqa: E402

RULES = """
[block no_full_update]
statement = update
where = missing
message = UPDATE needs a WHERE clause

[rewrite upper_w]
pattern = SELECT x FROM lx_w WHERE id = ?
replacement = SELECT UPPER(x) AS x FROM lx_w WHERE id = ?
"""

PROXY = t.Proxy("lex_readings", rules=RULES, own_conn=True)
UPD = b"UPDATE lx_u SET n = n + 1"
DUPD = b"UPDATE lx_d SET n = n + 1"


def n_of(direct, table):
    return t.rows(direct, "SELECT n FROM " + table)[0][0]


def setup():
    d = t.direct(autocommit=True)
    cur = d.cursor()
    for tb in ("lx_u", "lx_d"):
        cur.execute("DROP TABLE IF EXISTS " + tb)
        cur.execute("CREATE TABLE %s (n INT NOT NULL) ENGINE=InnoDB" % tb)
        cur.execute("INSERT INTO %s VALUES (0)" % tb)
    cur.execute("DROP TABLE IF EXISTS lx_w")
    cur.execute("CREATE TABLE lx_w (id INT PRIMARY KEY, x VARCHAR(10)) ENGINE=InnoDB")
    cur.execute("INSERT INTO lx_w VALUES (1, 'abc')")
    return d


def run_text(port, before, text):
    """Runs `before` (texts, each must succeed) then `text` on a fresh connection."""
    c = raw.Conn(port)
    try:
        for b in before:
            r = c.query(b)
            if r.kind == "err":
                return ("setup failed", r.err)
        r = c.query(text)
        return (r.kind, r.err)
    finally:
        c.close()


BYPASSES = [
    ("ANSI_QUOTES set earlier in the text", [],
     b"SET sql_mode='ANSI_QUOTES'; SELECT 1 AS \"a\\\"; " + UPD + b"; -- \""),
    ("ANSI_QUOTES set in an earlier text", [b"SET sql_mode='ANSI_QUOTES'"],
     b"SELECT 1 AS \"a\\\"; " + UPD + b"; -- \""),
    ("NO_BACKSLASH_ESCAPES set earlier in the text", [],
     b"SET sql_mode='NO_BACKSLASH_ESCAPES'; SELECT 'a\\'; " + UPD + b"; -- '"),
    ("gbk by SET NAMES earlier in the text", [],
     b"SET NAMES gbk; SELECT '\xbf\\'; " + UPD + b"; -- '"),
    ("gbk from a variable, earlier in the text", [],
     b"SET @cs = 'gbk'; SET character_set_client = @cs; SELECT '\xbf\\'; " + UPD + b"; -- '"),
    ("gbk from a prepared statement in an earlier text",
     [b"PREPARE s FROM 'SET NAMES gbk'", b"EXECUTE s"],
     b"SELECT '\xbf\\'; " + UPD + b"; -- '"),
    ("sjis by SET NAMES in an earlier text", [b"SET NAMES sjis"],
     b"SELECT '\x81\\'; " + UPD + b"; -- '"),
    ("gbk, then ANSI_QUOTES, in the text: each reading opens the next", [],
     b"SET NAMES gbk; SELECT '\xbf\\'; SET sql_mode = 'ANSI_QUOTES'; SELECT 1 AS \"a\\\"; " + UPD +
     b"; -- \"'"),
    ("gbk: a backtick as the second byte of a name's character", [b"SET NAMES gbk"],
     b"SELECT 1 AS a\x81`; " + UPD + b"; -- `"),
]


def bypasses(direct):
    for desc, before, text in BYPASSES:
        # the server does run the hidden UPDATE when the text goes to it directly
        kind, err = run_text(raw.DIRECT_PORT, before, text)
        ran = n_of(direct, "lx_u")
        t.check(ran == 1, "directly, the server runs the hidden UPDATE (%s)" % desc, (kind, err))
        direct.cursor().execute("UPDATE lx_u SET n = 0")
        kind, err = run_text(PROXY.port, before, text)
        t.check(kind == "err" and err == (1148, "UPDATE needs a WHERE clause"),
                "through the proxy it is refused by the block rule: " + desc, (kind, err))
        t.eq("lx_u unchanged (%s)" % desc, 0, n_of(direct, "lx_u"))
        direct.cursor().execute("UPDATE lx_u SET n = 0")


GOOD = [
    ("a double-quoted string with an escaped quote", [], b"SELECT \"a\\\"b\"; SELECT 2"),
    ("a single-quoted string with an escaped quote", [], b"SELECT 'a\\'b'; SELECT 2"),
    ("JSON in a string, two statements", [], b"SELECT '{\"a\": \"b\\\\c\"}'; SELECT 2"),
    ("utf8 text and a backslash", [], "SELECT 'caf\u00e9\\\\'; SELECT 2".encode()),
    ("gbk text in a gbk session", [b"SET NAMES gbk"], b"SELECT '\xbf\\'; SELECT 2"),
    ("an UPDATE with WHERE after a mode change", [],
     b"SET sql_mode='ANSI_QUOTES'; UPDATE lx_u SET n = n WHERE \"n\" = 0"),
]


def no_false_refusals():
    for desc, before, text in GOOD:
        kind, err = run_text(PROXY.port, before, text)
        t.check(kind != "err", "runs through the proxy: " + desc, err)


def tracked_charset():
    """The client negotiates CLIENT_SESSION_TRACK (rawproto_lib does): the server reports
    character_set_client in the OK of an EXECUTE of a prepared SET NAMES, which no SET
    statement the proxy reads shows; the rewrite guard follows it both ways."""
    c = raw.Conn(PROXY.port)
    t.check(c.flags & raw.CLIENT_SESSION_TRACK, "the client negotiated session tracking")
    q = b"SELECT x FROM lx_w WHERE id = 1"
    t.eq("utf8mb4: the rewrite applies", [b"\x03ABC"], c.query(q).rows)
    c.must(b"PREPARE p FROM 'SET NAMES gbk'")
    c.must(b"EXECUTE p")
    t.eq("gbk from a prepared statement, as the server reported it: no rewrite",
         [b"\x03abc"], c.query(q).rows)
    c.must(b"PREPARE u FROM 'SET NAMES utf8mb4'")
    c.must(b"EXECUTE u")
    t.eq("utf8mb4 again, as reported: the rewrite applies again", [b"\x03ABC"], c.query(q).rows)
    c.close()
    PROXY.wait_log(r"client character set is now gbk")


# ---- differential --------------------------------------------------------------------------

MODES = [
    ("default", []),
    ("ANSI_QUOTES", [b"SET sql_mode = 'ANSI_QUOTES'"]),
    ("NO_BACKSLASH_ESCAPES", [b"SET sql_mode = 'NO_BACKSLASH_ESCAPES'"]),
    ("ANSI_QUOTES,NO_BACKSLASH_ESCAPES",
     [b"SET sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'"]),
    ("gbk", [b"SET NAMES gbk"]),
    ("sjis", [b"SET NAMES sjis"]),
    ("big5", [b"SET NAMES big5"]),
    ("cp932", [b"SET NAMES cp932"]),
    ("gbk + NO_BACKSLASH_ESCAPES", [b"SET NAMES gbk", b"SET sql_mode = 'NO_BACKSLASH_ESCAPES'"]),
]

# Fragments whose reading changes with the mode or the character set.
OPENERS = [b"'", b"\"", b"`", b"'a\\", b"\"a\\", b"'\xbf\\", b"'\x81\\", b"'\xa4\\",
           b"a\x81`", b"'\xbf\\'", b"\"\xbf\\\"", b"`\xbf\\`", b"'a\\'", b"\"a\\\"", b"'\\\\'",
           b"\"\\\\\"", b"'\xbf'", b"x\xbf\\"]
CLOSERS = [b"'", b"\"", b"`", b"-- '", b"-- \"", b"-- `", b"# '", b"/* ' */", b""]
CHANGES = [b"SET sql_mode = 'ANSI_QUOTES'", b"SET sql_mode = 'NO_BACKSLASH_ESCAPES'",
           b"SET sql_mode = DEFAULT", b"SET NAMES gbk", b"SET NAMES sjis", b"SET NAMES big5",
           b"SET NAMES utf8mb4", b"SET NAMES latin1", b"SET @m = 'ANSI_QUOTES'; SET sql_mode = @m",
           b"PREPARE p FROM 'SET NAMES gbk'; EXECUTE p",
           b"SET sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'"]


def gen_text(rnd):
    """One to three pieces (a mode change, or a SELECT ending in a fragment that opens a
    quote in some reading), the UPDATE, and something that may close the quote."""
    parts = []
    for _ in range(rnd.randint(1, 3)):
        if rnd.random() < 0.4:
            parts.append(rnd.choice(CHANGES) + b"; ")
        else:
            parts.append(b"SELECT 1 AS " + rnd.choice([b"a", b"`a`", b"\"a\""]) + b", " +
                         rnd.choice(OPENERS) + b"; ")
    parts.append(DUPD + b"; ")
    parts.append(rnd.choice(CLOSERS))
    return b"".join(parts)


def reset(direct):
    if n_of(direct, "lx_d") != 0:
        direct.cursor().execute("UPDATE lx_d SET n = 0")


def differential(direct):
    rnd = random.Random(int(os.environ.get("MR_LEX_SEED", "2025")))
    per_mode = int(os.environ.get("MR_LEX_TEXTS", "40"))
    bypass, false_refusals, unreadable, total, ran_direct = [], 0, 0, 0, 0
    for name, before in MODES:
        conns = {p: raw.Conn(p) for p in (raw.DIRECT_PORT, PROXY.port)}
        for c in conns.values():
            for b in before:
                c.must(b)
        for _ in range(per_mode):
            text = gen_text(rnd)
            total += 1
            conns[raw.DIRECT_PORT].query(text)
            ran = n_of(direct, "lx_d") > 0
            reset(direct)
            r = conns[PROXY.port].query(text)
            through = n_of(direct, "lx_d") > 0
            reset(direct)
            ran_direct += ran
            if through:
                bypass.append((name, text))
            elif not ran and r.kind == "err" and r.err[1] == "UPDATE needs a WHERE clause":
                false_refusals += 1
            elif not ran and r.kind == "err" and r.err[1].startswith("myrewrite could not read"):
                unreadable += 1
            # a text may change the mode: both sessions start the next one afresh
            for p in list(conns):
                conns[p].close()
                conns[p] = raw.Conn(p)
                for b in before:
                    conns[p].must(b)
        for c in conns.values():
            c.close()
    t.eq("no generated text runs its UPDATE through the proxy (%d texts, %d ran it directly)"
         % (total, ran_direct), [], bypass)
    t.check(ran_direct > total // 10, "the generator does hide runnable UPDATEs (%d of %d)"
            % (ran_direct, total))
    t.log("differential: %d texts, the server ran the UPDATE of %d; of the others the proxy "
          "refused %d by the rule (fail closed) and %d as unreadable"
          % (total, ran_direct, false_refusals, unreadable))


def main():
    direct = setup()
    with PROXY:
        bypasses(direct)
        no_false_refusals()
        tracked_charset()
        differential(direct)
    t.done()


if __name__ == "__main__":
    main()
