#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""DBA rules end to end through a proxy of its own, against the real mariadbd.

Starts myrewrite on its own port with a rules directory written here, then:
  * a digest rewrite changes the statement and keeps hostile literals intact;
  * a regex rewrite moves a query to another table;
  * block rules answer with the DBA's message, and the session goes on;
  * a log_only rule changes nothing;
  * rewrites apply to COM_STMT_PREPARE text, keeping the parameters;
  * a session in gbk (whose characters may end in '\\') gets no rewrites,
    only blocks; SET NAMES switches that both ways;
  * log_sample = 4 logs exactly 3 of 10 matches, log = digest never logs a
    literal, and a rule without log_sample logs every match;
  * SIGHUP under load swaps rules with no failed statement;
  * a broken rules file is refused and the old rules keep working;
  * `myrewrite --check` reports the broken file as file:line.
"""
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
import rawproto_lib as raw  # noqa: E402

BIN = os.environ.get("MR_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                            "myrewrite"))
RULES_DIR = os.path.join(t.TMP, "rules_test")

FIRST_RULES = """
# digest rewrite: literals of the statement fill the replacement's ?
[rewrite upper_names]
pattern = SELECT name FROM rt_items WHERE id = ?
replacement = SELECT UPPER(name) AS name FROM rt_items WHERE id = ?

[regex old_to_new]
match = ^SELECT (.*) FROM rt_old\\b
replace = SELECT $1 FROM rt_new

[block no_delete_without_where]
statement = delete
where = missing
message = DELETE without WHERE is not allowed here; add a WHERE clause

[block no_drop]
match = ^\\s*DROP\\s+TABLE\\s+rt_keep
message = rt_keep must not be dropped through the proxy

[rewrite watch_counts]
pattern = SELECT COUNT(*) FROM rt_items
replacement = SELECT 12345
log_only = yes

# rewrite log sampling: one match in 4 is logged, as its digest (no literals)
[rewrite sampled_digest]
pattern = SELECT v FROM rt_new WHERE v = ?
replacement = SELECT v FROM rt_new WHERE v = ? LIMIT 1
log = digest
log_sample = 4

[rewrite every_full]
pattern = SELECT v FROM rt_keep WHERE v = ?
replacement = SELECT v FROM rt_keep WHERE v = ? LIMIT 1
log = full
"""

SECOND_RULES = FIRST_RULES.replace("UPPER(name)", "LOWER(name)")

BROKEN_RULES = """
[regex broken]
match = ^SELECT (unclosed
replace = x
"""


def write_rules(name, text):
    os.makedirs(RULES_DIR, exist_ok=True)
    with open(os.path.join(RULES_DIR, name), "w") as f:
        f.write(text)


PROXY = t.Proxy("rules_proxy", rules_dir=RULES_DIR, workers=None)
PORT = PROXY.port


def conn():
    return t.connect(PORT, autocommit=True)


def one(c, sql, *args):
    with c.cursor() as cur:
        cur.execute(sql, args or None)
        return cur.fetchall()


def setup(c):
    for sql in ["DROP TABLE IF EXISTS rt_items, rt_old, rt_new, rt_keep, rt_del",
                "CREATE TABLE rt_items (id INT PRIMARY KEY, name VARCHAR(100)) CHARACTER SET utf8mb4",
                "CREATE TABLE rt_old (v INT)", "CREATE TABLE rt_new (v INT)",
                "CREATE TABLE rt_keep (v INT)", "CREATE TABLE rt_del (v INT)",
                "INSERT INTO rt_old VALUES (1)", "INSERT INTO rt_new VALUES (2)",
                "INSERT INTO rt_del VALUES (1), (2)"]:
        one(c, sql)
    with c.cursor() as cur:
        cur.executemany("INSERT INTO rt_items VALUES (%s, %s)",
                        [(1, "apple"), (2, "O'Brien \\ -- /* x */ 'q'"), (3, "ünï😀")])


def check_rewrites(c):
    t.eq("digest rewrite applies", (("APPLE",),), one(c, "SELECT name FROM rt_items WHERE id = 1"))
    t.eq("digest rewrite matches regardless of spacing/case/comments", (("APPLE",),),
         one(c, "select   name /* hi */ from rt_items where id=1"))
    t.eq("hostile literal keeps its meaning",
         (("O'BRIEN \\ -- /* X */ 'Q'",),), one(c, "SELECT name FROM rt_items WHERE id = %s", 2))
    t.eq("multibyte row", (("ÜNÏ😀",),), one(c, "SELECT name FROM rt_items WHERE id = %s", 3))
    t.eq("other statements untouched", (("apple",),),
         one(c, "SELECT name FROM rt_items WHERE id > 0 AND id = 1"))
    t.eq("regex rewrite applies", ((2,),), one(c, "SELECT v FROM rt_old"))
    t.eq("log_only rule sends the original", ((3,),), one(c, "SELECT COUNT(*) FROM rt_items"))


def expect_block(c, sql, code, text, desc):
    try:
        one(c, sql)
        t.not_ok(desc, "statement was not blocked")
    except pymysql.err.MySQLError as e:
        t.check(e.args[0] == code and text in e.args[1], desc, e.args)


def check_blocks(c):
    expect_block(c, "DELETE FROM rt_del", 1148, "DELETE without WHERE", "block: DELETE without WHERE")
    expect_block(c, "drop table rt_keep", 1148, "rt_keep must not be dropped", "block by regex")
    t.eq("blocked DELETE changed nothing", ((2,),), one(c, "SELECT COUNT(*) FROM rt_del"))
    one(c, "DELETE FROM rt_del WHERE v = 1")
    t.eq("DELETE with WHERE goes through", ((1,),), one(c, "SELECT COUNT(*) FROM rt_del"))
    expect_block(c, "SELECT 1; DELETE FROM rt_del", 1148, "DELETE without WHERE",
                 "a block in a multi-statement blocks the query")
    t.eq("session works after blocks", ((1,),), one(c, "SELECT 1"))


def check_prepared():
    c = raw.Conn(PORT)  # connects and logs in as the test user
    stmt = c.prepare(b"SELECT name FROM rt_items WHERE id = ?")
    t.eq("prepared statement keeps its one parameter", 1, stmt.params)
    res = c.execute(stmt.stmt_id, params=[(raw.TYPE_LONG, 1)])
    t.check(any(b"APPLE" in bytes(r) for r in res.rows),
            "rewrite applies to a prepared statement", res.rows)
    c.close()


def check_charsets():
    """In gbk (a character may end in the byte '\\') rewrites stay off and blocks
    still run; SET NAMES switches the guard both ways, also as mysqldump writes it."""
    offset = os.path.getsize(PROXY.log_path)
    upper = "SELECT name FROM rt_items WHERE id = 1"
    g = pymysql.connect(host=t.HOST, port=PORT, user=t.USER, password=t.PASSWORD,
                        database=t.DB, charset="gbk", autocommit=True)
    t.eq("gbk login: the rewrite does not apply", (("apple",),), one(g, upper))
    expect_block(g, "drop table rt_keep", 1148, "rt_keep must not be dropped",
                 "gbk login: block rules still run")
    one(g, "SET NAMES utf8mb4")
    t.eq("SET NAMES utf8mb4: rewrites apply again", (("APPLE",),), one(g, upper))
    g.close()
    c = conn()
    t.eq("utf8mb4 login: the rewrite applies", (("APPLE",),), one(c, upper))
    one(c, "SET NAMES gbk")
    t.eq("SET NAMES gbk: the rewrite stops", (("apple",),), one(c, upper))
    one(c, "SET NAMES utf8mb4")
    one(c, "/*!40101 SET NAMES gbk */")
    t.eq("SET NAMES in an executable comment is followed", (("apple",),), one(c, upper))
    one(c, "SET character_set_client = utf8mb4")
    t.eq("SET character_set_client = utf8mb4: rewrites again", (("APPLE",),), one(c, upper))
    try:
        one(c, "SET NAMES no_such_charset")
    except pymysql.err.MySQLError:
        pass
    t.eq("a refused SET NAMES changes nothing", (("APPLE",),), one(c, upper))
    one(c, "SET @cs = 'utf8mb4'")
    one(c, "SET character_set_client = @cs")
    t.eq("a character set from a variable is not known: taken as unsafe", (("apple",),),
         one(c, upper))
    one(c, "SET NAMES utf8mb4")
    t.eq("... until a known one is set", (("APPLE",),), one(c, upper))
    c.close()
    lines = wait_log_lines(offset, "client character set is now gbk", 3)
    t.eq("each switch to gbk is logged", 3, len(lines))

def load(stop, errors):
    """Queries in a loop while rules are reloaded; any error is recorded."""
    c = conn()
    while not stop.is_set():
        try:
            r = one(c, "SELECT name FROM rt_items WHERE id = 1")[0][0]
            if r not in ("APPLE", "apple"):
                errors.append("unexpected %r" % r)
        except Exception as e:  # noqa: BLE001 - any failure counts
            errors.append(repr(e))
    c.close()


def log_lines_since(offset, prefix):
    with open(PROXY.log_path) as f:
        f.seek(offset)
        return [line for line in f.read().split("\n") if prefix in line]


def wait_log_lines(offset, prefix, want):
    """The log lines with `prefix` once `want` of them are there (the log is written a
    moment after the statement), and after a pause, to see no more come."""
    end = time.time() + 5
    while time.time() < end and len(log_lines_since(offset, prefix)) < want:
        time.sleep(0.05)
    time.sleep(0.3)
    return log_lines_since(offset, prefix)


def check_log_sampling():
    """log_sample = 4 logs matches 1, 5, 9 of 10 on the connection's worker; log = digest
    never shows a literal; a rule without log_sample logs every match in full."""
    offset = os.path.getsize(PROXY.log_path)
    c = conn()  # one connection: every statement meets the same worker's counters
    for i in range(10):
        one(c, "SELECT v FROM rt_new WHERE v = %d" % (777000 + i))
    for i in range(3):
        one(c, "SELECT v FROM rt_keep WHERE v = %d" % (888000 + i))
    c.close()
    sampled = wait_log_lines(offset, "rule sampled_digest: ", 3)
    t.eq("log_sample = 4 logs 3 of 10 matches", 3, len(sampled))
    # Only the message after the rule name: the timestamp may hold "777" by chance.
    texts = [line.split("rule sampled_digest: ", 1)[1] for line in sampled]
    t.check(all(text == "SELECT v FROM rt_new WHERE v = ?" for text in texts),
            "log = digest logs the digest, never a literal", sampled)
    full = wait_log_lines(offset, "rule every_full: ", 3)
    t.eq("without log_sample every match is logged", 3, len(full))
    t.check(all("8880" in line and "LIMIT 1" in line for line in full),
            "log = full logs the original and the rewritten text", full)


def check_reload(proxy):
    stop, errors = threading.Event(), []
    threads = [threading.Thread(target=load, args=(stop, errors)) for _ in range(4)]
    for th in threads:
        th.start()
    write_rules("10-test.rules", SECOND_RULES)
    proxy.send_signal(signal.SIGHUP)
    time.sleep(1.0)
    for _ in range(3):
        proxy.send_signal(signal.SIGHUP)
        time.sleep(0.2)
    stop.set()
    for th in threads:
        th.join()
    t.eq("no statement failed during reloads", [], errors[:5])
    c = conn()
    t.eq("reloaded rule is in force", (("apple",),),
         one(c, "SELECT name FROM rt_items WHERE id = 1"))
    write_rules("20-broken.rules", BROKEN_RULES)
    proxy.send_signal(signal.SIGHUP)
    time.sleep(0.5)
    t.eq("broken file: old rules keep working", (("apple",),),
         one(c, "SELECT name FROM rt_items WHERE id = 1"))
    with open(PROXY.log_path) as f:
        text = f.read()
    t.check("20-broken.rules:3" in text and "previous rules stay in force" in text,
            "broken reload logged with file:line", text[-800:])
    t.check("rule watch_counts (log only): SELECT COUNT(*) FROM rt_items -> SELECT 12345" in text,
            "log_only logs the original and the text it would have sent")
    c.close()
    chk = subprocess.run([BIN, "--check", "--rules", RULES_DIR, "--backend", "127.0.0.1:1"],
                         capture_output=True, text=True)
    t.check(chk.returncode != 0 and "20-broken.rules:3:" in chk.stderr,
            "--check reports file:line and fails", chk.stderr)


def main():
    if t.DIRECT_ONLY:
        print("skip: needs the proxy")
        sys.exit(77)
    for name in os.listdir(RULES_DIR) if os.path.isdir(RULES_DIR) else []:
        os.unlink(os.path.join(RULES_DIR, name))
    write_rules("10-test.rules", FIRST_RULES)
    setup(t.direct(autocommit=True))
    proxy = PROXY.start()
    try:
        c = conn()
        check_rewrites(c)
        check_blocks(c)
        c.close()
        check_prepared()
        check_charsets()
        check_log_sampling()
        check_reload(proxy)
    finally:
        rc = proxy.stop()
    t.eq("proxy exits 0 on SIGTERM", 0, rc)
    t.done()


if __name__ == "__main__":
    main()
