#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Grafana dashboard (dist/grafana/myrewrite.json) asks only for metrics the proxy serves.

A proxy of its own with a delayed, a paginate, a queue and a rewrite rule gets
some traffic of each kind (and a DELAYED delta that overflows its INT at flush, so
the dead-letter counter has a sample); then every myrewrite_* name in every panel's PromQL
expression must be a sample name in /metrics (histogram series by their
_bucket/_sum/_count names, as PromQL uses them). Also: the dashboard is a
Grafana JSON model whose datasource is a variable, not a fixed uid.
Environment: MR_DIRECT_PORT (mariadbd), MR_BIN; the proxy takes free ports.
"""
import http.client
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import mrtest as t  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DASHBOARD = os.path.join(ROOT, "dist", "grafana", "myrewrite.json")


RULES_DIR = os.path.join(t.TMP, "dash_rules")
RULES = """
[rewrite dash_upper]
pattern = SELECT name FROM dash_items WHERE id = ?
replacement = SELECT UPPER(name) AS name FROM dash_items WHERE id = ?

[delayed dash_counters]
table = test.dash_counters
key = id
columns = hits
flush_interval = 200ms

[delayed dash_small]
table = test.dash_small
key = id
columns = n
flush_interval = 200ms

[paginate dash_pages]
table = dash_items
key = id
threshold = 10
max_offset = 40

[queue dash_jobs]
table = test.dash_jobs
owner_column = owner
status_column = status
claimed_value = claimed
unclaimed_value = unsent
claimed_at_column = claimed_at
timeout = 3s
"""

PROXY = t.Proxy("dash", rules_dir=RULES_DIR, own_conn=True, http=True)
PORT, HTTP_PORT = PROXY.port, PROXY.http_port

def setup():
    d = t.direct(autocommit=True)
    cur = d.cursor()
    cur.execute("DROP TABLE IF EXISTS dash_items, dash_counters, dash_counters_delayed, dash_jobs, "
                "dash_small, dash_small_delayed, dash_small_delayed_rejected")
    cur.execute("CREATE TABLE dash_items (id INT PRIMARY KEY, name VARCHAR(20)) ENGINE=InnoDB")
    cur.execute("INSERT INTO dash_items VALUES " +
                ",".join("(%d, 'n%d')" % (i, i) for i in range(1, 101)))
    cur.execute("CREATE TABLE dash_counters (id INT PRIMARY KEY, hits BIGINT NOT NULL DEFAULT 0)"
                " ENGINE=InnoDB")
    cur.execute("INSERT INTO dash_counters (id) VALUES (1), (2)")
    # An INT near its maximum: a delta that fits the column overflows it at flush, and the
    # row goes to the dead-letter table (myrewrite_delayed_rejected_total).
    cur.execute("CREATE TABLE dash_small (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB")
    cur.execute("INSERT INTO dash_small VALUES (1, %d)" % (2147483647 - 10))
    cur.execute("CREATE TABLE dash_jobs (id INT PRIMARY KEY, status VARCHAR(16) NOT NULL "
                "DEFAULT 'unsent', owner BIGINT UNSIGNED NOT NULL DEFAULT 0, "
                "claimed_at DATETIME(6) NULL, KEY (owner, status)) ENGINE=InnoDB")
    cur.execute("INSERT INTO dash_jobs (id) VALUES (1), (2), (3)")
    d.close()


def traffic():
    """One statement of each kind the dashboard graphs."""
    c = t.connect(PORT, autocommit=True)
    cur = c.cursor()
    cur.execute("SELECT name FROM dash_items WHERE id = 7")
    t.eq("the rewrite rule applies", (("N7",),), tuple(cur.fetchall()))
    cur.execute("UPDATE DELAYED dash_counters SET hits = hits + 1 WHERE id = 1")
    cur.execute("UPDATE DELAYED dash_small SET n = n + 1000 WHERE id = 1")
    cur.execute("SELECT id FROM dash_items ORDER BY id LIMIT 5 OFFSET 20")
    t.eq("the paginated page", tuple((i,) for i in range(21, 26)), tuple(cur.fetchall()))
    cur.execute("UPDATE dash_jobs SET status = 'claimed', owner = CONNECTION_ID(), "
                "claimed_at = NOW(6) WHERE owner = 0 AND status = 'unsent' LIMIT 2")
    c.close()  # the queue rule gives the claimed rows back
    d = t.direct(autocommit=True)
    end = time.time() + 10
    while time.time() < end and t.rows(d, "SELECT hits FROM dash_counters WHERE id = 1") != ((1,),):
        time.sleep(0.1)
    t.eq("the DELAYED update was flushed", ((1,),),
         t.rows(d, "SELECT hits FROM dash_counters WHERE id = 1"))
    # The flusher creates the dead-letter table, then moves the row into it.
    end = time.time() + 10
    rejected = "no table"
    while time.time() < end and rejected != ((1,),):
        if t.rows(d, "SHOW TABLES LIKE 'dash_small_delayed_rejected'"):
            rejected = t.rows(d, "SELECT COUNT(*) FROM dash_small_delayed_rejected")
        time.sleep(0.1)
    t.eq("the overflowing delta went to the dead-letter table", ((1,),), rejected)
    d.close()


def scrape():
    conn = http.client.HTTPConnection(t.HOST, HTTP_PORT, timeout=10)
    conn.request("GET", "/metrics")
    r = conn.getresponse()
    body = r.read().decode()
    conn.close()
    t.eq("/metrics answers 200", 200, r.status)
    return {m.group(1) for m in re.finditer(r"^(myrewrite_[a-z_]+)[{ ]", body, re.M)}


def queries(dash):
    """(panel title, expression) of every target, rows' nested panels included."""
    out = []
    for p in dash["panels"]:
        for q in p.get("panels", []) + [p]:
            for tg in q.get("targets", []):
                out.append((q["title"], tg["expr"]))
    return out


def check_model(dash):
    names = [v["name"] for v in dash["templating"]["list"]]
    t.check("datasource" in names, "the dashboard has a datasource variable", names)
    uids = {json.dumps(p.get("datasource")) for p in dash["panels"] if p["type"] != "row"}
    t.eq("every panel uses the datasource variable",
         {json.dumps({"type": "prometheus", "uid": "${datasource}"})}, uids)
    titles = " ".join(p["title"] for p in dash["panels"]).lower()
    for topic in ("connections", "commands", "bytes", "rule hits", "flush", "pagination",
                  "queue", "closes", "errors"):
        t.check(topic in titles, "a panel about %s" % topic, titles)


def main():
    with open(DASHBOARD) as f:
        dash = json.load(f)
    check_model(dash)
    setup()
    t.write_rules(RULES_DIR, RULES)
    p = PROXY.start()
    wanted = {n for _, e in queries(dash) for n in re.findall(r"myrewrite_[a-z_]+", e)}
    try:
        traffic()
        # The flusher counts a dead-letter row just after moving it: allow it a moment.
        end = time.time() + 5
        served = scrape()
        while time.time() < end and wanted - served:
            time.sleep(0.2)
            served = scrape()
    finally:
        p.stop(timeout=20)
    used = set()
    for title, expr in queries(dash):
        names = set(re.findall(r"myrewrite_[a-z_]+", expr))
        t.check(names, "panel %r queries a myrewrite metric" % title, expr)
        for n in sorted(names - served):
            t.not_ok("panel %r: %s is in /metrics" % (title, n), expr)
        used |= names
    t.check(len(used) >= 30, "the dashboard uses %d metric names" % len(used))
    t.eq("every metric name the dashboard uses is served", [], sorted(used - served))
    t.done()


if __name__ == "__main__":
    main()
