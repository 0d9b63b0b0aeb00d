#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Queue tables, the paths t_queue.py does not take; three proxies of its own, the real mariadbd.

  * give-up: a session ends while its backend connection waits on a row lock; the
    proxy's account may not KILL it (no CONNECTION ADMIN), so the connection stays
    listed; after 30 s the proxy gives up and leaves the rows to the reaper, which
    releases them once the connection is gone (started first, checked last);
  * KILL of a client's backend connection from another connection: the session ends
    with its backend lost and the rows are released, by connection id, once;
  * KILL of the proxy's own connection: it reconnects and the next release works;
  * a release-template rule with a `reap` template: a live owner's old claims stay,
    a dead direct owner's claims go only after the timeout, a session's go at once;
  * a proxy whose account lacks PROCESS: it refuses to reap (log line, counter on
    /metrics) and a live direct owner's old claims stay claimed;
  * claim_read_committed: a claim sent alone in autocommit mode runs READ COMMITTED
    (a trigger records its transaction's level from INNODB_TRX) and its affected-rows
    count reaches the client; inside a transaction or with autocommit off it runs at the
    session's level, and nothing leaks into the statements after it.
"""
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.dirname(__file__))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402
import rawproto_lib as raw  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DB_NAME = os.environ.get("MR_QPATHS_DB_NAME", "main")  # the env.sh name of mariadbd
TIMEOUT_S = 2
GIVE_UP_S = 30  # GIVE_UP_MS in src/queue/release.c

RULES_AB = """
[queue jobs]
table = test.qp_jobs
owner_column = owner
status_column = status
claimed_value = claimed
unclaimed_value = unsent
claimed_at_column = claimed_at
timeout = %(t)ds

[queue iso]
table = test.qp_iso
owner_column = owner
status_column = status
claimed_value = claimed
unclaimed_value = unsent
claim_read_committed = yes

[queue tpl]
table = test.qp_tpl
release = UPDATE test.qp_tpl SET worker = NULL, locked_at = NULL WHERE worker = {owner} AND done = 0
reap = UPDATE test.qp_tpl SET worker = NULL, locked_at = NULL
    WHERE worker NOT IN ({live}) AND locked_at < {cutoff} AND done = 0
timeout = %(t)ds
""" % {"t": TIMEOUT_S}

RULES_C = """
[queue np]
table = test.qp_np
owner_column = owner
status_column = status
claimed_value = claimed
unclaimed_value = unsent
claimed_at_column = claimed_at
timeout = 1s
"""

# (table, claim time, rows)
CLAIM = ("UPDATE %s SET status = 'claimed', owner = CONNECTION_ID(), claimed_at = %s "
         "WHERE owner = 0 AND status = 'unsent' LIMIT %d")
# (claim time, rows)
CLAIM_TPL = ("UPDATE qp_tpl SET worker = CONNECTION_ID(), locked_at = %s "
             "WHERE worker IS NULL AND done = 0 LIMIT %d")
NOW = "NOW(6)"
HOUR_AGO = "NOW(6) - INTERVAL 1 HOUR"


# ---- plumbing ------------------------------------------------------------------------------

def db_root(sql):
    """A statement as mariadbd's root (GRANT needs it)."""
    return t.root_query(sql, name=DB_NAME)


def proxy(name, rules, user, password, http=False):
    return t.Proxy(name, rules=rules, rules_file="10-queue.rules", http=http,
                   options=[("proxy_user", user), ("proxy_password", password)])


PROXIES = {
    "qp_proxy_a": proxy("qp_proxy_a", RULES_AB, t.USER, t.PASSWORD),
    "qp_proxy_b": proxy("qp_proxy_b", RULES_AB, "qp_nokill", "qp_nokillpw"),
    "qp_proxy_c": proxy("qp_proxy_c", RULES_C, "qp_noproc", "qp_noprocpw", http=True),
}
PORT_A = PROXIES["qp_proxy_a"].port  # proxy_user app
PORT_B = PROXIES["qp_proxy_b"].port  # proxy_user qp_nokill
PORT_C = PROXIES["qp_proxy_c"].port  # proxy_user qp_noproc
HTTP_C = PROXIES["qp_proxy_c"].http_port


def proxy_log(name):
    return PROXIES[name].log_text()


def wait_for(cond, timeout, step=0.005):
    """Polls cond() until true; the seconds it took, or None."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        if cond():
            return time.time() - t0
        time.sleep(step)
    return None


def scalar(d, sql, args=None):
    cur = d.cursor()
    cur.execute(sql, args)
    return cur.fetchone()[0]


def owned(d, table, conn, col="owner"):
    return scalar(d, "SELECT COUNT(*) FROM %s WHERE %s = %%s" % (table, col), (conn,))


def released_lines(name, conn):
    return [int(m.group(1)) for m in re.finditer(
        r"queue: released (\d+) rows of \S+ claimed by backend connection %d " % conn,
        proxy_log(name))]


# ---- setup ---------------------------------------------------------------------------------

def setup(d):
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS qp_jobs, qp_tpl, qp_np, qp_lockme, qp_iso")
    for table in ("qp_jobs", "qp_np"):
        cur.execute("CREATE TABLE %s (id INT PRIMARY KEY, status VARCHAR(16) NOT NULL DEFAULT "
                    "'unsent', owner BIGINT UNSIGNED NOT NULL DEFAULT 0, claimed_at DATETIME(6) "
                    "NULL, KEY (owner, status)) ENGINE=InnoDB" % table)
        cur.execute("INSERT INTO %s (id) SELECT seq FROM seq_1_to_200" % table)
    cur.execute("CREATE TABLE qp_tpl (id INT PRIMARY KEY, worker BIGINT NULL, locked_at "
                "DATETIME(6) NULL, done TINYINT NOT NULL DEFAULT 0, KEY (worker)) ENGINE=InnoDB")
    cur.execute("INSERT INTO qp_tpl (id) SELECT seq FROM seq_1_to_200")
    cur.execute("CREATE TABLE qp_iso (id INT PRIMARY KEY, status VARCHAR(16) NOT NULL DEFAULT "
                "'unsent', owner BIGINT UNSIGNED NOT NULL DEFAULT 0, iso VARCHAR(32) NULL, "
                "KEY (owner, status)) ENGINE=InnoDB")
    cur.execute("INSERT INTO qp_iso (id) SELECT seq FROM seq_1_to_20")
    # records the isolation level of the transaction that updates a row
    cur.execute("CREATE TRIGGER qp_iso_t BEFORE UPDATE ON qp_iso FOR EACH ROW BEGIN "
                "DO SLEEP(0.15); SET NEW.iso = (SELECT trx_isolation_level FROM "
                "information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID()); END")
    cur.execute("CREATE TABLE qp_lockme (id INT PRIMARY KEY) ENGINE=InnoDB")
    cur.execute("INSERT INTO qp_lockme VALUES (1)")
    # qp_nokill sees every connection but may not kill other users' ones;
    # qp_noproc may update the tables but sees only its own connections
    for user, grants in (("qp_nokill", ["SELECT, UPDATE, PROCESS ON *.*"]),
                         ("qp_noproc", ["SELECT, UPDATE ON test.*"])):
        db_root("CREATE OR REPLACE USER '%s'@'%%' IDENTIFIED BY '%spw'" % (user, user))
        for g in grants:
            db_root("GRANT %s TO '%s'@'%%'" % (g, user))


# ---- give-up: started first, checked last ----------------------------------------------------

def stuck_victim(port):
    """Claims 10 rows through `port`, then blocks on a row lock; run as a child process."""
    c = t.connect(port, autocommit=True)
    cur = c.cursor()
    cur.execute("SET SESSION innodb_lock_wait_timeout = 120")
    cur.execute(CLAIM % ("qp_jobs", NOW, 10))
    cur.execute("SELECT CONNECTION_ID()")
    print("conn %d" % cur.fetchone()[0], flush=True)
    cur.execute("SELECT id FROM qp_lockme WHERE id = 1 FOR UPDATE")
    return 0


def start_give_up(d):
    holder = t.direct(autocommit=False)
    holder.cursor().execute("SELECT id FROM qp_lockme WHERE id = 1 FOR UPDATE")
    v = subprocess.Popen([sys.executable, __file__, "--stuck", str(PORT_B)],
                         stdout=subprocess.PIPE, text=True)
    conn = int(v.stdout.readline().split()[1])
    waiting = wait_for(lambda: scalar(d, "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                                         "WHERE ID = %s AND INFO LIKE '%%qp_lockme%%'", (conn,)),
                       10, 0.02)
    t.check(waiting is not None, "the stuck victim waits on the row lock")
    t.eq("the stuck victim claimed 10 rows", 10, owned(d, "qp_jobs", conn))
    v.send_signal(signal.SIGKILL)
    v.wait()
    return holder, conn, time.time()


def finish_give_up(d, holder, conn, killed_at):
    # well before the give-up: still listed, not killed (1095), nothing released
    t.check(owned(d, "qp_jobs", conn) == 10, "rows of a still-listed connection stay claimed")
    left = killed_at + GIVE_UP_S + 1.5 - time.time()
    if left > 0:
        time.sleep(left)
    log = proxy_log("qp_proxy_b")
    t.check(re.search(r"KILL CONNECTION %d failed: 1095" % conn, log),
            "the proxy's KILL of the other user's connection is refused (1095), and logged")
    t.check(("backend connection %d still exists %d s after its session ended; its claims are "
             "left to the reaper" % (conn, GIVE_UP_S)) in log,
            "after %d s the proxy gives up on connection %d and says so" % (GIVE_UP_S, conn))
    t.eq("nothing released while the connection was listed", 10, owned(d, "qp_jobs", conn))
    t.eq("no release on disconnect for it", [], released_lines("qp_proxy_b", conn))
    holder.rollback()  # the blocked statement ends, finds its client gone, the connection goes
    took = wait_for(lambda: owned(d, "qp_jobs", conn) == 0, TIMEOUT_S + 10, 0.02)
    t.check(took is not None, "once the connection is gone, the reaper releases its rows",
            "still owned after %d s" % (TIMEOUT_S + 10))
    time.sleep(0.2)
    reaped = [int(m.group(1)) for name in ("qp_proxy_a", "qp_proxy_b") for m in re.finditer(
        r"queue reaper: released (\d+) rows of test.qp_jobs claimed by connection %d," % conn,
        proxy_log(name))]
    t.eq("the reaper released the 10 rows once", [10], reaped)
    holder.close()


# ---- KILL of a session's backend connection, and of the proxy's own -------------------------

def killed_backend(d):
    c = t.connect(PORT_A, autocommit=True)
    cur = c.cursor()
    cur.execute(CLAIM % ("qp_jobs", NOW, 10))
    conn = scalar(c, "SELECT CONNECTION_ID()")
    t.eq("a session through the proxy claimed 10 rows", 10, owned(d, "qp_jobs", conn))
    d.cursor().execute("KILL %d" % conn)
    took = wait_for(lambda: owned(d, "qp_jobs", conn) == 0, 5)
    t.check(took is not None and took <= 1.0,
            "rows of a session whose backend connection was KILLed are back within 1 s",
            "took %s s" % took)
    t.log("release after KILL of the backend connection: %.3f s" % (took or -1))
    try:
        c.ping(reconnect=False)
        alive = True
    except pymysql.err.Error:
        alive = False
    t.check(not alive, "the client's session ended with its backend connection")
    time.sleep(0.5)
    t.eq("released once, by connection id", [10], released_lines("qp_proxy_a", conn))


def own_connection_ids(name):
    return [int(x) for x in re.findall(r"queue release: own connection to \S+ as \S+ up "
                                       r"\(connection id (\d+)[,)]", proxy_log(name))]


def killed_own_connection(d):
    before = own_connection_ids("qp_proxy_a")
    t.check(len(before) == 1, "proxy a logged its own connection's id", before)
    d.cursor().execute("KILL %d" % before[-1])
    # the reaper's next round (every 500 ms) meets the dead connection
    back = wait_for(lambda: len(own_connection_ids("qp_proxy_a")) == 2, 5, 0.05)
    t.check(back is not None, "the proxy reconnects its own connection after a KILL",
            own_connection_ids("qp_proxy_a"))
    t.check("queue release: own connection lost" in proxy_log("qp_proxy_a"),
            "the lost own connection is logged")
    c = t.connect(PORT_A, autocommit=True)
    c.cursor().execute(CLAIM % ("qp_jobs", NOW, 10))
    conn = scalar(c, "SELECT CONNECTION_ID()")
    c.close()
    took = wait_for(lambda: owned(d, "qp_jobs", conn) == 0, 5)
    t.check(took is not None and took <= 1.0, "after the reconnect a release works (within 1 s)",
            "took %s s" % took)
    time.sleep(0.3)
    t.eq("... once", [10], released_lines("qp_proxy_a", conn))


# ---- the reap template -----------------------------------------------------------------------

def reap_template(d):
    tpl_owned = lambda conn: owned(d, "qp_tpl", conn, "worker")  # noqa: E731
    # a live owner whose claims are an hour old: never reaped
    live = t.direct(autocommit=True)
    live.cursor().execute(CLAIM_TPL % (HOUR_AGO, 5))
    live_id = scalar(live, "SELECT CONNECTION_ID()")
    # a dead direct owner: its row marked done stays, the others go after the timeout
    z = t.direct(autocommit=True)
    z.cursor().execute(CLAIM_TPL % (NOW, 5))
    z_id = scalar(z, "SELECT CONNECTION_ID()")
    z.cursor().execute("UPDATE qp_tpl SET done = 1 WHERE worker = CONNECTION_ID() LIMIT 1")
    z.close()
    t0 = time.time()
    # a session through the proxy: released at once by the release template
    s = t.connect(PORT_A, autocommit=True)
    s.cursor().execute(CLAIM_TPL % (NOW, 5))
    s_id = scalar(s, "SELECT CONNECTION_ID()")
    t.eq("the proxied session claimed 5 qp_tpl rows", 5, tpl_owned(s_id))
    s.close()
    took = wait_for(lambda: tpl_owned(s_id) == 0, 5)
    t.check(took is not None and took <= 1.0, "release template: claims back within 1 s",
            "took %s s" % took)
    t.eq("5 live rows, claimed an hour ago", 5, tpl_owned(live_id))
    early = None
    while time.time() - t0 < TIMEOUT_S - 0.3:
        if tpl_owned(z_id) != 5:
            early = time.time() - t0
        time.sleep(0.05)
    t.check(early is None, "the dead owner's rows stay until the %d s timeout" % TIMEOUT_S,
            "changed after %s s" % early)
    took = wait_for(lambda: tpl_owned(z_id) == 1, TIMEOUT_S + 5, 0.02)
    t.check(took is not None, "then the reap template releases them, all but the done one")
    t.log("reap template: dead owner's rows released %.2f s after its claim (timeout %d s)"
          % (time.time() - t0, TIMEOUT_S))
    time.sleep(0.6)  # one more reaper round
    t.eq("the live owner's old claims are never reaped", 5, tpl_owned(live_id))
    t.eq("the done row keeps its owner", 1, tpl_owned(z_id))
    lines = [int(m.group(1)) for name in ("qp_proxy_a", "qp_proxy_b") for m in re.finditer(
        r"queue reaper: released (\d+) rows of test.qp_tpl claimed before \S+ \S+ by "
        r"connections that are gone \(rule tpl, reap template\)", proxy_log(name))]
    t.eq("one reaper line, for 4 rows", [4], lines)
    live.close()


# ---- no PROCESS privilege --------------------------------------------------------------------

def no_process(d):
    live = t.direct(autocommit=True)
    live.cursor().execute(CLAIM % ("qp_np", HOUR_AGO, 5))
    live_id = scalar(live, "SELECT CONNECTION_ID()")
    t.eq("a live direct owner holds 5 hour-old qp_np claims", 5, owned(d, "qp_np", live_id))
    refused = wait_for(lambda: (t.metric(HTTP_C, "myrewrite_queue_no_process_total") or 0) >= 1,
                       10, 0.1)
    t.check(refused is not None, "myrewrite_queue_no_process_total counts the refusal")
    time.sleep(3)  # timeout 1 s, rounds every 250 ms: a reaper would have run by now
    t.eq("without PROCESS, the live owner's claims are not reaped", 5,
         owned(d, "qp_np", live_id))
    log = proxy_log("qp_proxy_c")
    t.check("queue: proxy_user lacks the PROCESS privilege" in log and
            "the reaper are refused until it is granted" in log,
            "the refusal is logged, saying why")
    t.eq("... once, not at every retry", 1, log.count("lacks the PROCESS privilege"))
    t.check("queue reaper: released" not in log, "no reaper round ran")
    t.eq("myrewrite_queue_reaper_runs_total", 0,
         t.metric(HTTP_C, "myrewrite_queue_reaper_runs_total"))
    live.close()


# ---- claim_read_committed ---------------------------------------------------------------------

def fetch(c, sql, args=None):
    cur = c.cursor()
    cur.execute(sql, args)
    return cur.fetchall()


def claim_step(c, step, rows):
    """Claims `rows` qp_iso rows as status `step`; the rows changed."""
    return c.cursor().execute("UPDATE qp_iso SET status = %s, owner = CONNECTION_ID() "
                              "WHERE owner = 0 AND status = 'unsent' LIMIT %s", (step, rows))


def levels(d, step):
    """The isolation levels the trigger saw for the rows of `step`. InnoDB refreshes
    INNODB_TRX at most every 100 ms, so the trigger sleeps 150 ms before it looks."""
    return [r[0] for r in fetch(d, "SELECT iso FROM qp_iso WHERE status = %s", (step,))]


def claim_isolation(d):
    b = t.connect(PORT_A, autocommit=True)
    t.eq("the client gets the claim's affected rows", 2, claim_step(b, "s1", 2))
    t.eq("a claim sent alone in autocommit mode runs READ COMMITTED", ["READ COMMITTED"] * 2,
         levels(d, "s1"))
    claim_step(b, "s2", 1)
    t.eq("... every time", ["READ COMMITTED"], levels(d, "s2"))
    b.begin()
    claim_step(b, "s3", 1)
    b.commit()
    t.eq("a claim inside a transaction runs at the session's level (nothing leaked)",
         ["REPEATABLE READ"], levels(d, "s3"))
    b.cursor().execute("SET autocommit = 0")
    claim_step(b, "s4", 1)
    b.commit()
    t.eq("a claim with autocommit off runs at the session's level", ["REPEATABLE READ"],
         levels(d, "s4"))
    b.close()
    claim_step(d, "s5", 1)
    t.eq("control: the same claim sent direct runs REPEATABLE READ", ["REPEATABLE READ"],
         levels(d, "s5"))
    prepared_claim_isolation(d)
    t.check("SET TRANSACTION ISOLATION LEVEL READ COMMITTED refused" not in
            proxy_log("qp_proxy_a"), "the proxy never had its SET TRANSACTION refused")


def prepared_claim_isolation(d):
    """A server-side prepared claim gets the prelude before each COM_STMT_EXECUTE."""
    c = raw.Conn(PORT_A)
    stmt = c.prepare("UPDATE qp_iso SET status = ?, owner = CONNECTION_ID() "
                     "WHERE owner = 0 AND status = 'unsent' LIMIT ?")

    def execute(step):
        res = c.execute(stmt.stmt_id, params=[(raw.TYPE_VAR_STRING, step), (raw.TYPE_LONG, 1)])
        return res.ok[0] if res.kind == "ok" else res.err

    t.eq("a prepared claim's execute gets its own OK (1 row)", 1, execute("s6"))
    t.eq("a prepared claim executed in autocommit mode runs READ COMMITTED",
         ["READ COMMITTED"], levels(d, "s6"))
    execute("s7")
    t.eq("... at every execute", ["READ COMMITTED"], levels(d, "s7"))
    c.must("BEGIN")
    execute("s8")
    c.must("COMMIT")
    t.eq("a prepared claim inside a transaction runs at the session's level",
         ["REPEATABLE READ"], levels(d, "s8"))
    t.eq("the session goes on after the prelude", 1, execute("s9"))
    c.close()


# ---- main ------------------------------------------------------------------------------------

def main():
    d = t.direct(autocommit=True)
    setup(d)
    proxies = [p.start() for p in PROXIES.values()]
    try:
        holder, conn, killed_at = start_give_up(d)
        claim_isolation(d)
        killed_backend(d)
        killed_own_connection(d)
        reap_template(d)
        no_process(d)
        finish_give_up(d, holder, conn, killed_at)
    finally:
        for p in proxies:
            t.eq("queue proxy exits 0 on SIGTERM", 0, p.stop())
        for user in ("qp_nokill", "qp_noproc"):
            db_root("DROP USER IF EXISTS '%s'@'%%'" % user)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--stuck":
        sys.exit(stuck_victim(int(sys.argv[2])))
    main()
    t.done()
