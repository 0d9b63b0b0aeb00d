#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The state-leak test of connection pooling (issue 27): no session ever sees another's state.

CLIENTS pymysql sessions (threads, all connected at once) each run OPS statements drawn at
random (seeded per client: the seed is printed, MR_POOL_STATE_SEED repeats a run) from:
SET SESSION time_zone / sql_mode / wait_timeout, SET NAMES, USE and COM_INIT_DB, SET @u,
CREATE / UPDATE / DROP TEMPORARY TABLE, START TRANSACTION ... COMMIT | ROLLBACK,
SET autocommit = 0 | 1, writes (upserts and deletes of its own rows, an AUTO_INCREMENT
insert), reads, and COM_RESET_CONNECTION. Each session keeps a model of what it set, and
after EVERY statement checks against it: CONNECTION_ID() (one id for the session's life,
the handshake's), @@time_zone, @@sql_mode, @@wait_timeout, the three character sets and
@@collation_connection (from the handshake's character set, which differs between
sessions, and SET NAMES), DATABASE(), @u, @@autocommit, @@in_transaction,
LAST_INSERT_ID(), its own rows of a shared table (with its uncommitted writes), and its
temporary table test.pst_tmp (every session uses that name: seeing another's is a leak).
Affected rows and the insert id of each write come from the statement's own OK.

The same workload runs
  * direct (the model must hold against the server itself: this validates the test),
  * through a proxy with pool = session,
  * through a proxy with pool = transaction and pool_size = POOL_SIZE (4 by default for 40
    sessions: server connections are shared hard); meanwhile a root connection samples the
    server's processlist, and the test account never has more than pool_size connections.
Sessions take a token (at most PINNERS at a time) before they create state that pins
(user variable, temporary table, transaction, autocommit = 0) and give it back once the
pin is gone (COM_RESET_CONNECTION, or the end of the transaction when nothing else pins),
so the pinned sessions never hold all of the pool and the others never wait out
pool_max_wait.

Two controls, direct, prove the checks can fail: a session whose model ignores its own
SET time_zone must see mismatches, and two sessions sharing one server connection with no
state carried over (what a leaking pool does) must see each other's state.
Environment: MR_POOL_STATE_SEED, MR_POOL_STATE_CLIENTS (40), MR_POOL_STATE_OPS (100),
MR_POOL_STATE_POOL_SIZE (4), MR_POOL_STATE_SKIP (ops never drawn, to narrow a failure down).
"""
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402
import pymysql  # noqa: E402

SEED = int(os.environ.get("MR_POOL_STATE_SEED", str(int(time.time()) % 100000)))
CLIENTS = int(os.environ.get("MR_POOL_STATE_CLIENTS", "40"))
OPS = int(os.environ.get("MR_POOL_STATE_OPS", "100"))
POOL_SIZE = int(os.environ.get("MR_POOL_STATE_POOL_SIZE", "4"))
# Ops never drawn, comma-separated (e.g. "reset,tmp_create"): to narrow a failure down.
# Without reset a user variable or a temporary table would pin its session for good.
SKIP = set(filter(None, os.environ.get("MR_POOL_STATE_SKIP", "").split(",")))
if "reset" in SKIP:
    SKIP |= {"user_var", "tmp_create"}
PINNERS = max(1, POOL_SIZE // 2)
DBS = ("test", "pst_a", "pst_b", "pst_c")
TIME_ZONES = ("+00:00", "+01:00", "-05:30", "+09:00", "SYSTEM")
SQL_MODES = ("", "STRICT_TRANS_TABLES", "ANSI_QUOTES,STRICT_ALL_TABLES",
             "PIPES_AS_CONCAT,NO_ENGINE_SUBSTITUTION", "DEFAULT")
# SET NAMES: (character set, its default collation)
NAMES = (("utf8mb4", "utf8mb4_general_ci"), ("latin1", "latin1_swedish_ci"),
         ("utf8mb3", "utf8mb3_general_ci"), ("ascii", "ascii_general_ci"))
# The character set of the handshake (pymysql's charset=): sessions start differently.
HANDSHAKE = (("utf8mb4", "utf8mb4_general_ci"), ("latin1", "latin1_swedish_ci"))
COM_RESET_CONNECTION = 0x1F
ER_NO_SUCH_TABLE = 1146
VARS = ("CONNECTION_ID()", "@@session.time_zone", "@@session.sql_mode",
        "@@session.wait_timeout", "@@character_set_client", "@@character_set_connection",
        "@@character_set_results", "@@collation_connection", "DATABASE()", "@u",
        "@@autocommit", "@@in_transaction", "LAST_INSERT_ID()")
CHECK_VARS = "SELECT " + ", ".join(VARS)


def setup():
    c = t.direct(autocommit=True)
    try:
        cur = c.cursor()
        for db in DBS[1:]:
            cur.execute("CREATE DATABASE IF NOT EXISTS " + db)
        cur.execute("DROP TABLE IF EXISTS test.pst_data, test.pst_auto, test.pst_tmp")
        cur.execute("CREATE TABLE test.pst_data (cid INT, k INT, v INT, PRIMARY KEY (cid, k)) "
                    "ENGINE=InnoDB")
        cur.execute("CREATE TABLE test.pst_auto (id INT AUTO_INCREMENT PRIMARY KEY, cid INT, "
                    "tag VARCHAR(40) UNIQUE) ENGINE=InnoDB")
        cur.execute("SELECT @@global.time_zone, @@global.sql_mode, @@global.wait_timeout")
        return cur.fetchone()
    finally:
        c.close()


def clear_tables():
    """Over root's socket: the test account's connections are counted during a run."""
    t.root_query("DELETE FROM test.pst_data")
    t.root_query("DELETE FROM test.pst_auto")


class Model:
    """What one session set, so what it must see."""

    def __init__(self, cid, handshake, defaults, conn_id):
        self.cid = cid
        self.handshake = handshake
        self.defaults = defaults
        self.conn_id = conn_id
        self.db = "test"
        self.committed = {}  # k -> v
        self.pending = None  # k -> v or None (deleted) while a transaction is open
        self.last_insert_id = 0
        self.reset()

    def reset(self):
        """COM_RESET_CONNECTION (as mariadbd 10.11 does it): session variables back to the
        global values, the character set back to the handshake's, the schema kept, the
        transaction rolled back, user variables and temporary tables gone."""
        self.time_zone, self.sql_mode, self.wait_timeout = self.defaults
        self.names = self.handshake
        self.user_var = None
        self.tmp = None  # n of its temporary table's only row, or None: no table
        self.autocommit = 1
        self.in_tx = 0
        self.explicit_tx = False
        self.pinned_state = False  # a user variable or a temporary table since the reset
        self.pending = None
        self.last_insert_id = 0

    def rows(self):
        view = dict(self.committed)
        for k, v in (self.pending or {}).items():
            if v is None:
                view.pop(k, None)
            else:
                view[k] = v
        return tuple(sorted(view.items()))

    def write(self, k, v):
        """Records a write; returns the affected rows its OK must carry (1 insert, 2 update
        to another value, 1 delete, 0 delete of nothing)."""
        exists = k in dict(self.rows())
        if self.autocommit and not self.explicit_tx:
            if v is None:
                self.committed.pop(k, None)
            else:
                self.committed[k] = v
        else:
            if self.pending is None:
                self.pending = {}
            self.pending[k] = v
            self.in_tx = 1
        if v is None:
            return 1 if exists else 0
        return 2 if exists else 1

    def commit(self):
        for k, v in (self.pending or {}).items():
            if v is None:
                self.committed.pop(k, None)
            else:
                self.committed[k] = v
        self.pending = None
        self.in_tx = 0
        self.explicit_tx = False

    def rollback(self):
        self.pending = None
        self.in_tx = 0
        self.explicit_tx = False

    def expected_vars(self):
        return (self.conn_id, self.time_zone, self.sql_mode, self.wait_timeout,
                self.names[0], self.names[0], self.names[0], self.names[1], self.db,
                self.user_var, self.autocommit, self.in_tx, self.last_insert_id)

    def pins(self):
        return self.pinned_state or self.in_tx or self.explicit_tx or not self.autocommit


class Run:
    """One run of the workload against one port."""

    def __init__(self, name, port, defaults, seed, clients=CLIENTS, ops=OPS, pinners=PINNERS,
                 share=1, ignore=None, max_report=8, console=None):
        self.name = name
        self.port = port
        self.defaults = defaults
        self.seed = seed
        self.n = clients
        self.ops = ops
        self.share = share  # >1: that many sessions share one connection (a leak, on purpose)
        self.ignore = ignore  # a model that ignores this op (a wrong expectation, on purpose)
        self.tokens = threading.BoundedSemaphore(pinners)
        self.mismatches = 0
        self.errors = 0
        self.reports = []
        self.kinds = {}
        self.max_report = max_report
        self.console = console  # a Proxy with a console: what it showed at the first error
        self.console_seen = None
        self.pins = None  # its PinSampler
        self.statements = 0
        self.op_counts = {}
        self.conn_ids = []
        self.lock = threading.Lock()
        self.start = threading.Barrier(clients)

    def mismatch(self, sess, what, expected, actual, kind=None):
        """Counts a mismatch under its kind (what, or for the session state the variables
        that differ) and keeps the first report of each kind."""
        kind = kind or what
        with self.lock:
            self.mismatches += 1
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
            if self.kinds[kind] == 1 and len(self.reports) < self.max_report:
                self.reports.append("client %d (seed %d) after op %d %s: %s\n      expected %r"
                                    "\n      actual   %r" % (
                                        sess.model.cid, sess.seed, len(sess.history),
                                        sess.history[-6:], what, expected, actual))

    def snapshot(self):
        """The console's view of the pool, once (at the first error or a statement waiting
        5 s): why nothing came free."""
        with self.lock:
            if self.console is None or self.console_seen is not None:
                return
            self.console_seen = ""
        out = []
        for sql in ("SHOW POOLS", "SHOW SERVERS", "SHOW PINS"):
            try:
                out.append("%s: %s" % (sql, self.console.admin_dicts(sql)))
            except (pymysql.err.MySQLError, OSError) as e:
                out.append("%s: %r" % (sql, e))
        self.console_seen = "\n   ".join(out)

    def watch(self, sessions, done):
        """Takes the console's snapshot once a statement has waited 5 s (the proxy may not
        live to the error that follows)."""
        while not done.wait(0.5):
            now = time.monotonic()
            if any(x.since is not None and now - x.since > 5 for x in sessions):
                self.snapshot()
                return

    def summary(self):
        """The mismatches by kind, most frequent first."""
        return ", ".join("%s: %d" % kv for kv in sorted(self.kinds.items(),
                                                         key=lambda kv: -kv[1]))

    def go(self):
        conns = []
        sessions = []
        for i in range(self.n):
            if i % self.share == 0:
                hs = HANDSHAKE[(self.seed + i) % len(HANDSHAKE)]
                conn = t.connect(self.port, charset=hs[0], autocommit=True, read_timeout=60)
                conns.append((conn, threading.Lock(), hs))
            conn, lock, hs = conns[-1]
            sessions.append(Session(self, i, conn, lock, hs))
        self.conn_ids = [c.server_thread_id[0] for c, _, _ in conns]
        threads = [threading.Thread(target=s.work) for s in sessions]
        done = threading.Event()
        if self.console is not None:
            threading.Thread(target=self.watch, args=(sessions, done), daemon=True).start()
            self.pins = PinSampler(self.console, sessions)
            self.pins.start()
        secs = t.run_threads(threads)
        done.set()
        if self.pins is not None:
            self.pins.stop()
        for c, _, _ in conns:
            c.close()
        return secs


class Session:
    def __init__(self, run, cid, conn, lock, handshake):
        self.run = run
        self.conn = conn
        self.lock = lock
        self.seed = run.seed * 1000 + cid
        self.rng = random.Random(self.seed)
        self.model = Model(cid, handshake, run.defaults, conn.server_thread_id[0])
        self.history = []
        self.since = None  # when its statement now running began
        self.token = False
        self.tag = 0

    # ---- statements ----

    def sql(self, stmt, args=None):
        with self.run.lock:
            self.run.statements += 1
        cur = self.conn.cursor()
        self.since = time.monotonic()
        cur.execute(stmt, args)
        self.since = None
        return cur

    def reset_connection(self):
        self.conn._execute_command(COM_RESET_CONNECTION, b"")
        self.conn._read_ok_packet()

    # ---- the pinning token ----

    def want_token(self):
        if self.token:
            return True
        self.token = self.run.tokens.acquire(blocking=False)
        return self.token

    def maybe_drop_token(self):
        if self.token and not self.model.pins():
            self.run.tokens.release()
            self.token = False

    # ---- ops ----

    def choices(self):
        m = self.model
        ops = ["time_zone", "sql_mode", "wait_timeout", "names", "use", "init_db", "upsert",
               "upsert", "delete", "insert_auto", "read", "reset"]
        if m.tmp is not None:
            ops += ["tmp_bump", "tmp_drop"]
        if m.explicit_tx or not m.autocommit:
            ops += ["commit", "rollback", "upsert", "upsert"]
        if not m.autocommit and not m.explicit_tx:
            ops += ["autocommit1"]
        if self.token:
            ops += ["reset", "reset"]  # pinned spans stay short
        pinning = ["user_var"]
        if m.tmp is None:
            pinning.append("tmp_create")
        if m.autocommit and not m.explicit_tx:
            pinning += ["start_tx", "autocommit0"]
        return ops, pinning

    def pick(self):
        ops, pinning = self.choices()
        ops = [op for op in ops if op not in SKIP]
        pinning = [op for op in pinning if op not in SKIP]
        op = self.rng.choice(ops + pinning)
        if op in pinning and not self.want_token():
            op = self.rng.choice(ops)
        return op

    def apply(self, op):
        m, r = self.model, self.rng
        if op == "time_zone":
            tz = r.choice(TIME_ZONES)
            self.sql("SET SESSION time_zone = '%s'" % tz)
            if self.run.ignore != "time_zone":
                m.time_zone = tz
        elif op == "sql_mode":
            mode = r.choice(SQL_MODES)
            if mode == "DEFAULT":
                self.sql("SET SESSION sql_mode = DEFAULT")
                m.sql_mode = m.defaults[1]
            else:
                self.sql("SET SESSION sql_mode = '%s'" % mode)
                m.sql_mode = mode
        elif op == "wait_timeout":
            m.wait_timeout = 1000 + r.randrange(30000)
            self.sql("SET SESSION wait_timeout = %d" % m.wait_timeout)
        elif op == "names":
            m.names = r.choice(NAMES)
            self.sql("SET NAMES " + m.names[0])
        elif op == "use":
            m.db = r.choice(DBS)
            self.sql("USE " + m.db)
        elif op == "init_db":
            m.db = r.choice(DBS)
            self.conn.select_db(m.db)
        elif op in ("upsert", "delete"):
            k = r.randrange(6)
            v = None
            if op == "upsert":
                v = r.randrange(1, 10 ** 6)
                while dict(m.rows()).get(k) == v:
                    v += 1
                cur = self.sql("INSERT INTO test.pst_data (cid, k, v) VALUES (%s, %s, %s) "
                               "ON DUPLICATE KEY UPDATE v = VALUES(v)", (m.cid, k, v))
            else:
                cur = self.sql("DELETE FROM test.pst_data WHERE cid = %s AND k = %s", (m.cid, k))
            want = m.write(k, v)
            if cur.rowcount != want:
                self.run.mismatch(self, "affected rows of its own %s" % op, want, cur.rowcount)
        elif op == "insert_auto":
            self.tag += 1
            tag = "%d-%d-%d" % (self.run.seed, m.cid, self.tag)
            cur = self.sql("INSERT INTO test.pst_auto (cid, tag) VALUES (%s, %s)", (m.cid, tag))
            got = self.sql("SELECT id FROM test.pst_auto WHERE tag = %s", (tag,)).fetchall()
            if ((cur.lastrowid,),) != got:
                self.run.mismatch(self, "insert id of its own insert", got, cur.lastrowid)
            m.last_insert_id = cur.lastrowid
            if not m.autocommit:
                m.in_tx = 1
        elif op == "read":
            got = self.sql("SELECT COUNT(*), COALESCE(SUM(v), 0) FROM test.pst_data "
                           "WHERE cid = %s", (m.cid,)).fetchone()
            rows = m.rows()
            want = (len(rows), sum(v for _, v in rows))
            if tuple(int(x) for x in got) != want:
                self.run.mismatch(self, "count and sum of its rows", want, got)
            if not m.autocommit:
                m.in_tx = 1
        elif op == "reset":
            self.reset_connection()
            m.reset()
        elif op == "user_var":
            m.user_var = r.choice((r.randrange(10 ** 9), "s%d-%d" % (m.cid, r.randrange(1000))))
            self.sql("SET @u = %s", (m.user_var,))
            m.pinned_state = True
        elif op == "tmp_create":
            m.tmp = r.randrange(1000)
            self.sql("CREATE TEMPORARY TABLE test.pst_tmp ENGINE=MEMORY "
                     "SELECT %d AS owner, %d AS n" % (m.cid, m.tmp))
            m.pinned_state = True
        elif op == "tmp_bump":
            self.sql("UPDATE test.pst_tmp SET n = n + 1")
            m.tmp += 1
        elif op == "tmp_drop":
            self.sql("DROP TEMPORARY TABLE test.pst_tmp")
            m.tmp = None
        elif op == "start_tx":
            self.sql("START TRANSACTION")
            m.explicit_tx = True
            m.in_tx = 1
        elif op == "autocommit0":
            self.sql("SET autocommit = 0")
            m.autocommit = 0
        elif op == "autocommit1":
            self.sql("SET autocommit = 1")
            m.autocommit = 1
            m.commit()
        elif op == "commit":
            self.sql("COMMIT")
            m.commit()
        elif op == "rollback":
            self.sql("ROLLBACK")
            m.rollback()
        else:
            raise AssertionError(op)

    # ---- the checks after every statement ----

    def check(self):
        m = self.model
        got = self.sql(CHECK_VARS).fetchone()
        got = tuple(v.decode() if isinstance(v, bytes) else v for v in got)
        want = m.expected_vars()
        if got[0] != want[0]:  # counted apart: it would hide the other variables
            self.run.mismatch(self, "CONNECTION_ID() (the handshake's thread id)", want[0],
                              got[0])
        if got[1:] != want[1:]:
            diff = [(VARS[i], want[i], got[i]) for i in range(1, len(VARS)) if want[i] != got[i]]
            self.run.mismatch(self, "session state (name, expected, actual)", want, diff,
                              kind="state " + ",".join(d[0] for d in diff))
        rows = self.sql("SELECT k, v FROM test.pst_data WHERE cid = %s ORDER BY k",
                        (m.cid,)).fetchall()
        if tuple(rows) != m.rows():
            self.run.mismatch(self, "its own rows", m.rows(), rows)
        if not m.autocommit:
            m.in_tx = 1  # that read of an InnoDB table began a transaction
        try:
            tmp = self.sql("SELECT owner, n FROM test.pst_tmp").fetchall()
        except pymysql.err.ProgrammingError as e:
            if e.args[0] != ER_NO_SUCH_TABLE:
                raise
            tmp = "no such table"
        want_tmp = "no such table" if m.tmp is None else ((m.cid, m.tmp),)
        if tmp != want_tmp:
            self.run.mismatch(self, "its temporary table test.pst_tmp", want_tmp, tmp)

    def work(self):
        """The thread: OPS statements, each followed by the checks. Whatever goes wrong
        counts as a mismatch, so a broken thread cannot pass unseen."""
        try:
            self.steps()
        except Exception as e:  # noqa: BLE001 (reported, not swallowed)
            self.run.mismatch(self, "an exception in the client", "none", repr(e))
        if self.token:
            # the connection stays open until every thread is done: what pins it must
            # go with the token, or its server connection stays pinned meanwhile
            try:
                self.reset_connection()
            except pymysql.err.MySQLError:
                pass
            self.run.tokens.release()
            self.token = False

    def steps(self):
        self.first_check()
        for _ in range(self.run.ops):
            op = self.pick()
            self.history.append(op)
            with self.run.lock:
                self.run.op_counts[op] = self.run.op_counts.get(op, 0) + 1
            try:
                with self.lock:
                    self.apply(op)
                    self.check()
            except pymysql.err.MySQLError as e:
                with self.run.lock:
                    self.run.errors += 1
                self.run.snapshot()
                self.run.mismatch(self, "an error", "no error", e.args,
                                  kind="error %s" % (e.args[:1],))
                break
            self.maybe_drop_token()

    def first_check(self):
        try:
            self.run.start.wait(30)
        except threading.BrokenBarrierError:
            pass
        try:
            with self.lock:
                self.check()
        except pymysql.err.MySQLError as e:
            self.run.mismatch(self, "an error on the first check", "no error", e.args)


class ProcesslistSampler(threading.Thread):
    """The most connections of the test account the server held at once, sampled every
    20 ms over a root connection until stop()."""

    def __init__(self):
        super().__init__(daemon=True)
        self.most = 0
        self.samples = 0
        self.halt = threading.Event()
        self.conn = t.root()

    def run(self):
        cur = self.conn.cursor()
        while not self.halt.is_set():
            cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = %s",
                        (t.USER,))
            self.most = max(self.most, cur.fetchone()[0])
            self.samples += 1
            self.halt.wait(0.02)

    def stop(self):
        self.halt.set()
        self.join()
        self.conn.close()


class PinSampler(threading.Thread):
    """The most sessions the proxy's console showed pinned at once (SHOW POOLS' cl_pinned
    of the test account), every 100 ms until stop(), with SHOW PINS at that moment. The
    sessions hold a token while they hold pinning state, so a correct pool never shows more
    pinned sessions than there are tokens: more means a pin that outlived its cause (a
    reset, a commit) or one the workload gave no cause for."""

    def __init__(self, proxy, sessions):
        super().__init__(daemon=True)
        self.proxy = proxy
        self.by_port = {s.conn._sock.getsockname()[1]: s for s in sessions}
        self.most = 0
        self.pins_at_most = None
        self.holders_at_most = None
        self.samples = 0
        self.error = None
        self.halt = threading.Event()

    def run(self):
        try:
            conn = self.proxy.admin()
        except pymysql.err.MySQLError as e:
            self.error = e.args
            return
        cur = conn.cursor(pymysql.cursors.DictCursor)
        try:
            while not self.halt.is_set():
                cur.execute("SHOW POOLS")
                pinned = max([int(r["cl_pinned"]) for r in cur.fetchall()
                              if r["user"] == t.USER] or [0])
                self.samples += 1
                if pinned > self.most:
                    self.most = pinned
                    cur.execute("SHOW PINS")
                    self.pins_at_most = [r for r in cur.fetchall() if int(r["pinned_now"])]
                    self.holders_at_most = self.holders(cur)
                self.halt.wait(0.1)
        except (pymysql.err.MySQLError, KeyError) as e:
            self.error = repr(e)
        finally:
            conn.close()

    def holders(self, cur):
        """Which of the test's sessions hold a server connection now (SHOW SERVERS' session,
        SHOW CLIENTS' address), each with whether it holds a token, whether a statement of
        it is running, and its last ops."""
        cur.execute("SHOW CLIENTS")
        port_of = {(r["worker"], r["id"]): int(str(r["client"]).rsplit(":", 1)[1])
                   for r in cur.fetchall()}
        cur.execute("SHOW SERVERS")
        out = []
        for r in cur.fetchall():
            sess = self.by_port.get(port_of.get((r["worker"], r["session"])))
            if sess is not None:
                out.append("client %d (worker %s, session %s): token %s, statement running "
                           "%s, ops %s" % (sess.model.cid, r["worker"], r["session"], sess.token,
                                           sess.since is not None, sess.history[-6:]))
        return out

    def stop(self):
        self.halt.set()
        self.join()


def workload(name, port, defaults, **kw):
    """Runs the workload once; checks it saw no mismatch and returns the Run."""
    clear_tables()
    r = Run(name, port, defaults, SEED, **kw)
    secs = r.go()
    t.log("%s: %d sessions, %d ops each, %d statements in %.1f s; ops %s" % (
        name, r.n, r.ops, r.statements, secs, sorted(r.op_counts.items())))
    t.check(r.statements >= r.n * r.ops * 3, "%s: %d statements ran (at least 3 per op)"
            % (name, r.statements))
    t.check(r.mismatches == 0, "%s: every session saw only its own state after every "
            "statement (seed %d)" % (name, SEED),
            "%d mismatches (%s), %d errors; the first of each kind:\n   %s" % (
                r.mismatches, r.summary(), r.errors, "\n   ".join(r.reports)))
    if r.console_seen:
        t.log("%s: the console at the first error or 5 s wait:\n   %s" % (name,
                                                                      r.console_seen))
    if r.share == 1:
        t.eq("%s: the sessions' connection ids are distinct" % name, r.n, len(set(r.conn_ids)))
    return r


def controls(defaults):
    """The checks can fail: a wrong model, and two sessions on one server connection."""
    r = Run("control-wrong-model", t.DIRECT_PORT, defaults, 7, clients=1, ops=60,
            ignore="time_zone", max_report=1)
    r.go()
    t.check(r.op_counts.get("time_zone", 0) > 0 and r.mismatches > 0,
            "control: a model that ignores its SET time_zone is caught (%d mismatches after "
            "%d SET time_zone)" % (r.mismatches, r.op_counts.get("time_zone", 0)), r.reports)
    clear_tables()
    r = Run("control-shared", t.DIRECT_PORT, defaults, 11, clients=4, ops=60, share=2,
            max_report=1)
    r.go()
    t.check(r.mismatches > 0, "control: two sessions sharing one server connection without "
            "their state carried over see each other's (%d mismatches)" % r.mismatches,
            r.reports)
    if r.reports:
        t.log("control-shared, the first mismatch: " + r.reports[0])


def main():
    t.log("seed %d (MR_POOL_STATE_SEED=%d repeats it), %d sessions, %d ops each" % (
        SEED, SEED, CLIENTS, OPS))
    defaults = setup()
    controls(defaults)
    workload("direct", t.DIRECT_PORT, defaults)
    if t.DIRECT_ONLY:
        t.done()
    with t.Proxy("pool_state_session", options={"pool": "session"}) as p:
        workload("pool=session", p.port, defaults)
        t.check(p.alive(), "pool=session: the proxy is still running")
    # one worker: each worker lends only its own share of pool_size (pool_size /
    # workers) to its own sessions, so with 2 workers two pinning sessions on one
    # worker would hold its whole share of 2 (doc/pooling.md, "Settings")
    opts = {"pool": "transaction", "pool_size": POOL_SIZE, "pool_max_wait": "20s", "workers": 1}
    with t.Proxy("pool_state_tx", options=opts, admin=True) as p:
        time.sleep(0.2)  # the start-up probe's login
        sampler = ProcesslistSampler()
        sampler.start()
        r = workload("pool=transaction", p.port, defaults, console=p)
        sampler.stop()
        t.check(p.alive(), "pool=transaction: the proxy is still running")
        t.check(sampler.most <= POOL_SIZE,
                "pool=transaction: the server never held more than pool_size (%d) connections "
                "of the test account for %d sessions (most seen: %d in %d samples)" % (
                    POOL_SIZE, CLIENTS, sampler.most, sampler.samples))
        pins = r.pins
        t.check(pins.error is None and pins.samples > 0 and pins.most <= PINNERS,
                "pool=transaction: SHOW POOLS never showed more sessions pinned (most: %d in %d "
                "samples) than hold pinning state (at most %d)" % (pins.most, pins.samples,
                                                                   PINNERS),
                pins.error or "SHOW PINS then: %s\n   the sessions on a server connection then:"
                "\n   %s" % (pins.pins_at_most, "\n   ".join(
                    pins.holders_at_most or ["(none: SHOW SERVERS named no session of the test)"])))
    t.done()


if __name__ == "__main__":
    main()
