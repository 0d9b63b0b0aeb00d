#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A default delayed rule (table = dflt.*) deriving each table's rule from the schema, end to
end against the real mariadbd, through a proxy of its own with its own flusher connection:

  1. the first statements on a new table are applied directly (the derived rule is pending):
     the counter changes at once and the OK reports the row changed;
  2. once the flusher has derived the rule (its staging table exists), statements are staged
     (the counter does not move until a flush); 32 clients send increments (INTEGER and
     DECIMAL counters) and a C client sends prepared ones; after FLUSH DELAYED every counter
     equals the exact sum;
  3. a table without a primary key ends refused with the clear reason;
  4. SET col = literal and a column that is not a counter are refused;
  5. kill -9 of the proxy with rows staged; a restart; without any statement on that table,
     FLUSH DELAYED applies them (the flusher adopted the staging table);
  6. an explicit rule for a table of the schema wins over the default rule;
  7. a reload that drops the default rule: the usual refusal, staged rows still flushed;
  8. SHOW DELAYED has a row per derived table under the default rule's row (their sum), and
     /metrics a series per derived staging table, counting exactly the rows staged and
     flushed.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN, MR_BUILD; the proxy takes free ports
(client, console, HTTP).
"""
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

RULES_DIR = os.path.join(t.TMP, "ddefault_rules")
PROXY = t.Proxy("ddefault_proxy", rules_dir=RULES_DIR, own_conn=True, admin=True, http=True)
PORT, ADMIN_PORT, HTTP_PORT = PROXY.port, PROXY.admin_port, PROXY.http_port
SCHEMA = "dflt"
RULES = """
[delayed dflt_default]
table = dflt.*
flush_interval = 1h

[delayed dflt_explicit]
table = dflt.explicit_t
key = id
columns = n
staging_table = explicit_t_stage
flush_interval = 1h
"""
CLIENTS, PER_CLIENT, IDS = 32, 40, 10
BUILD = os.environ.get("MR_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build"))


def setup_schema():
    c = t.direct(autocommit=True)
    cur = c.cursor()
    cur.execute("DROP DATABASE IF EXISTS " + SCHEMA)
    cur.execute("CREATE DATABASE " + SCHEMA)
    cur.execute("USE " + SCHEMA)
    cur.execute("CREATE TABLE hits (id INT PRIMARY KEY, n BIGINT NOT NULL DEFAULT 0, "
                "d DECIMAL(20,2) NOT NULL DEFAULT 0, label VARCHAR(20)) ENGINE=InnoDB")
    cur.execute("INSERT INTO hits (id) VALUES " + ", ".join("(%d)" % i for i in range(1, IDS + 1)))
    cur.execute("CREATE TABLE nopk (id INT, n INT) ENGINE=InnoDB")
    cur.execute("INSERT INTO nopk VALUES (1, 0)")
    cur.execute("CREATE TABLE m_counters (id INT PRIMARY KEY, hits BIGINT NOT NULL) ENGINE=InnoDB")
    cur.execute("INSERT INTO m_counters VALUES (57, 0), (58, 0), (59, 0)")
    cur.execute("CREATE TABLE adopt (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB")
    cur.execute("INSERT INTO adopt VALUES (1, 0), (2, 0)")
    cur.execute("CREATE TABLE explicit_t (id INT PRIMARY KEY, n INT NOT NULL, other INT NOT NULL "
                "DEFAULT 0) ENGINE=InnoDB")
    cur.execute("INSERT INTO explicit_t VALUES (1, 0, 0)")
    c.close()


def one(sql):
    return t.query(sql)[0][0]


def px():
    return t.connect(PORT, database=SCHEMA, autocommit=True)


def run(c, sql):
    """Returns the affected rows, or the (code, message) of an error."""
    try:
        with c.cursor() as cur:
            return cur.execute(sql)
    except pymysql.err.MySQLError as e:
        return (e.args[0], e.args[1] if len(e.args) > 1 else "")


def staging_exists(name):
    return one("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = '%s' AND "
               "TABLE_NAME = '%s'" % (SCHEMA, name)) == 1


def wait_ready(staging, secs=10):
    """The staging table exists once the flusher derived the rule; it publishes the rule
    right after, so a short pause later statements are staged."""
    for _ in range(secs * 20):
        if staging_exists(staging):
            time.sleep(0.3)
            return True
        time.sleep(0.05)
    return False


def flush(c, what=""):
    """0 (the OK's affected rows) when the flush is done; else the error."""
    return run(c, "FLUSH DELAYED " + what)


def test_pending_then_staged(c):
    r = run(c, "UPDATE DELAYED hits SET n = n + 5, d = d + 2 WHERE id = 1")
    t.eq("pending: the OK reports the row the UPDATE changed", 1, r)
    t.eq("pending: applied directly (n)", 5, one("SELECT n FROM dflt.hits WHERE id = 1"))
    t.eq("pending: applied directly (d)", "2.00",
         str(one("SELECT d FROM dflt.hits WHERE id = 1")))
    t.check(wait_ready("hits_delayed"), "the flusher derived the rule: hits_delayed exists")
    cols = [r[0] for r in t.query("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE "
                            "TABLE_SCHEMA = 'dflt' AND TABLE_NAME = 'hits_delayed' "
                            "ORDER BY ORDINAL_POSITION")]
    t.check("n" in cols and "d" in cols and "id" in cols and "label" not in cols,
            "staging columns: the key and the integer and DECIMAL counters only", cols)
    r = run(c, "UPDATE DELAYED hits SET n = n + 1 WHERE id = 1")
    t.eq("ready: the OK reports the row staged", 1, r)
    t.eq("ready: the counter waits for the flush", 5, one("SELECT n FROM dflt.hits WHERE id = 1"))
    t.eq("ready: one row staged", 1, one("SELECT COUNT(*) FROM dflt.hits_delayed"))
    t.eq("FLUSH DELAYED dflt.hits answers OK", 0, flush(c, "dflt.hits"))
    t.eq("after the flush", 6, one("SELECT n FROM dflt.hits WHERE id = 1"))
    return 1


def test_concurrent(c):
    before = {r[0]: (r[1], r[2]) for r in t.query("SELECT id, n, d FROM dflt.hits")}
    errors = []
    want = {i: [0, 0] for i in range(1, IDS + 1)}
    lock = threading.Lock()

    def client(k):
        try:
            cc = px()
            mine = {}
            for j in range(PER_CLIENT):
                i = 1 + (k + j) % IDS
                dn, dd = 1 + (k * j) % 7, (k + j) % 3
                r = run(cc, "UPDATE DELAYED hits SET n = n + %d, d = d + %d WHERE id = %d"
                        % (dn, dd, i))
                if r != 1:
                    errors.append(r)
                    continue
                a = mine.setdefault(i, [0, 0])
                a[0] += dn
                a[1] += dd
            cc.close()
            with lock:
                for i, (dn, dd) in mine.items():
                    want[i][0] += dn
                    want[i][1] += dd
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    t.run_threads([threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)])
    t.eq("32 clients: every statement staged", [], errors[:5])
    t.check(one("SELECT COUNT(*) FROM dflt.hits_delayed") > 0, "rows are staged before the flush")
    t.eq("FLUSH DELAYED answers OK", 0, flush(c))
    after = {r[0]: (r[1], r[2]) for r in t.query("SELECT id, n, d FROM dflt.hits")}
    exp = {i: (before[i][0] + want[i][0], before[i][1] + want[i][1]) for i in before}
    t.eq("every counter equals the exact sum", exp, after)
    t.eq("the staging table is empty", 0, one("SELECT COUNT(*) FROM dflt.hits_delayed"))
    return CLIENTS * PER_CLIENT - len(errors)


def test_prepared(c):
    client = os.path.join(BUILD, "tests", "integration", "delayed_stmt_client")
    if not os.access(client, os.X_OK):
        t.log("skip prepared: %s not built" % client)
        return False
    t.eq("m_counters: first statement applied directly", 1,
         run(c, "UPDATE DELAYED m_counters SET hits = hits + 1 WHERE id = 57"))
    t.check(wait_ready("m_counters_delayed"), "m_counters derived")
    r = subprocess.run([client, t.HOST, str(PORT), t.USER, t.PASSWORD, SCHEMA],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    t.eq("prepared UPDATE DELAYED (execute and execute_direct) staged",
         "params=2 fields=0 sum=6050", r.stdout.strip())
    t.eq("FLUSH DELAYED answers OK", 0, flush(c))
    got = dict(t.query("SELECT id, hits FROM dflt.m_counters"))
    t.eq("prepared: exact sums", {57: 1 + 2683, 58: 1717, 59: 1650}, got)
    return True


def show_delayed():
    """SHOW DELAYED on the console: {(rule, table): {column: value}}."""
    a = pymysql.connect(host=t.HOST, port=ADMIN_PORT, user="admin", password="adminpw")
    try:
        cur = a.cursor()
        cur.execute("SHOW DELAYED")
        cols = [x[0] for x in cur.description]
        return {(r[0], r[1]): dict(zip(cols, r)) for r in cur.fetchall()}
    finally:
        a.close()


def test_stats(hits_staged, prepared):
    """After test_pending_then_staged, test_concurrent and test_prepared (all flushed);
    m_counters is derived only when test_prepared ran."""
    rows = show_delayed()
    mine = {k[1]: v for k, v in rows.items() if k[0] == "dflt_default"}
    tables = ["hits", "m_counters"] if prepared else ["hits"]
    t.eq("SHOW DELAYED: the default rule's row, then one per table it derived, by name",
         ["dflt.*"] + ["dflt." + x for x in tables], list(mine))
    t.eq("SHOW DELAYED: the derived tables' staging tables",
         ["dflt.{table}_delayed"] + ["dflt.%s_delayed" % x for x in tables],
         [v["staging_table"] for v in mine.values()])
    none = {"rows_staged": 0, "rows_flushed": 0}
    hits, mc, total = mine["dflt.hits"], mine.get("dflt.m_counters", none), mine["dflt.*"]
    t.eq("SHOW DELAYED dflt.hits: every row staged through the proxy, all flushed, no error",
         (hits_staged, hits_staged, 0), (hits["rows_staged"], hits["rows_flushed"], hits["errors"]))
    t.check(hits["last_flush"] is not None and hits["flush_rounds"] > 0,
            "SHOW DELAYED dflt.hits: its last flush and rounds", hits)
    t.check(mc["rows_staged"] == mc["rows_flushed"] and (mc["rows_staged"] > 0) == prepared,
            "SHOW DELAYED dflt.m_counters: prepared executes counted, all flushed", mc)
    t.eq("SHOW DELAYED: the default rule's row is the sum of its tables' rows",
         (hits_staged + mc["rows_staged"], hits_staged + mc["rows_flushed"]),
         (total["rows_staged"], total["rows_flushed"]))
    got = t.metrics(HTTP_PORT, "myrewrite_delayed_table_rows_")
    want = {}
    for name in ("staged", "flushed"):
        for tbl in tables:
            n = hits_staged if tbl == "hits" else mc["rows_staged"]
            want['myrewrite_delayed_table_rows_%s_total{rule="dflt_default",'
                 'table="dflt.%s_delayed"}' % (name, tbl)] = n
    t.eq("/metrics: a series per derived staging table, none for the {table} pattern", want,
         {k: v for k, v in got.items() if 'rule="dflt_default"' in k})


def test_nopk(c):
    t.eq("no primary key: the first statement is applied directly", 1,
         run(c, "UPDATE DELAYED nopk SET n = n + 1 WHERE id = 1"))
    r = None
    for _ in range(100):
        r = run(c, "UPDATE DELAYED nopk SET n = n + 1 WHERE id = 1")
        if r != 1:
            break
        time.sleep(0.05)
    t.check(isinstance(r, tuple) and r[0] == 1235 and
            "table dflt.nopk has no primary key; give a [delayed ...] rule with key" in r[1],
            "no primary key: refused with the reason", r)


def test_refusals(c):
    r = run(c, "UPDATE DELAYED hits SET n = 5 WHERE id = 1")
    t.check(isinstance(r, tuple) and r[0] == 1235 and "derived rules have no set_columns" in r[1],
            "SET col = literal refused with the reason", r)
    r = run(c, "UPDATE DELAYED hits SET label = label + 1 WHERE id = 1")
    t.check(isinstance(r, tuple) and r[0] == 1235 and "label" in r[1],
            "a column that is not a derived counter: refused naming it", r)


def test_explicit(c):
    t.eq("explicit rule: the first statement is staged", 1,
         run(c, "UPDATE DELAYED explicit_t SET n = n + 3 WHERE id = 1"))
    t.eq("explicit rule: not applied directly", 0, one("SELECT n FROM dflt.explicit_t"))
    t.eq("explicit rule: staged in its own staging table", 1,
         one("SELECT COUNT(*) FROM dflt.explicit_t_stage"))
    t.check(not staging_exists("explicit_t_delayed"), "no derived staging table for it")
    r = run(c, "UPDATE DELAYED explicit_t SET other = other + 1 WHERE id = 1")
    t.check(isinstance(r, tuple) and r[0] == 1235, "explicit rule's columns apply, not derived "
            "ones", r)
    t.eq("FLUSH DELAYED dflt.explicit_t", 0, flush(c, "dflt.explicit_t"))
    t.eq("explicit rule flushed", 3, one("SELECT n FROM dflt.explicit_t"))


def test_adoption(p, c):
    t.eq("adopt: first statement applied directly", 1,
         run(c, "UPDATE DELAYED adopt SET n = n + 1 WHERE id = 1"))
    t.check(wait_ready("adopt_delayed"), "adopt derived")
    total = {1: 1, 2: 0}
    for k in range(50):
        i = 1 + k % 2
        if run(c, "UPDATE DELAYED adopt SET n = n + %d WHERE id = %d" % (k + 1, i)) == 1:
            total[i] += k + 1
    staged = one("SELECT COUNT(*) FROM dflt.adopt_delayed")
    t.eq("adopt: 50 rows staged before the kill", 50, staged)
    c.close()
    p.restart(kill=True)
    c = px()
    t.eq("after the restart FLUSH DELAYED answers OK", 0, flush(c))
    t.eq("adopted: the staged rows are applied without a statement on the table", total,
         dict(t.query("SELECT id, n FROM dflt.adopt")))
    t.eq("adopted: the staging table is empty", 0, one("SELECT COUNT(*) FROM dflt.adopt_delayed"))
    t.check("adopting dflt.adopt" in p.log_text(), "the proxy logged the adoption")
    return p, c


def test_reload(p, c):
    """A reload that drops the default rule: statements on a derived table get the usual
    refusal, and what it has staged is still flushed."""
    for _ in range(100):  # staged once derived (adopted at the restart: at once)
        if staging_rows_after(c, "UPDATE DELAYED hits SET n = n + 1 WHERE id = 2"):
            break
        time.sleep(0.05)
    before = one("SELECT n FROM dflt.hits WHERE id = 2")
    staged = one("SELECT COUNT(*) FROM dflt.hits_delayed")
    t.check(staged > 0, "hits: a row is staged before the reload", staged)
    p.reload_rules("[delayed dflt_explicit]" + RULES.split("[delayed dflt_explicit]")[1])
    for _ in range(100):
        if "rules reloaded" in p.log_text():
            break
        time.sleep(0.05)
    r = run(c, "UPDATE DELAYED hits SET n = n + 1 WHERE id = 2")
    t.check(isinstance(r, tuple) and r[0] == 1235 and "no delayed rule covers table dflt.hits," in r[1],
            "after a reload without the default rule: the usual refusal", r)
    t.eq("FLUSH DELAYED dflt.hits still answers OK", 0, flush(c, "dflt.hits"))
    t.eq("the rows staged before the reload are applied", before + staged,
         one("SELECT n FROM dflt.hits WHERE id = 2"))


def staging_rows_after(c, sql):
    """Runs sql; true when it was staged (a row more in hits_delayed), not applied."""
    n = one("SELECT COUNT(*) FROM dflt.hits_delayed")
    run(c, sql)
    return one("SELECT COUNT(*) FROM dflt.hits_delayed") > n


def main():
    if t.DIRECT_ONLY:
        t.log("direct mode: nothing to test here (the proxy derives the rules)")
        sys.exit(77)
    setup_schema()
    t.write_rules(RULES_DIR, RULES)
    p = PROXY.start()
    c = px()
    try:
        test_explicit(c)
        staged = test_pending_then_staged(c)
        staged += test_concurrent(c)
        test_stats(staged, test_prepared(c))
        test_nopk(c)
        test_refusals(c)
        p, c = test_adoption(p, c)
        test_reload(p, c)
    finally:
        c.close()
        rc = p.stop()
    t.eq("the proxy exits 0 after SIGTERM (no sanitizer report)", 0, rc)
    t.done()


if __name__ == "__main__":
    main()
