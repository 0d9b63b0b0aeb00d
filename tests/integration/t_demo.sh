#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t_demo.sh - scripts/run.sh's demo, set up from scratch on the test's own
# ports in the background (MR_RUN_DETACH=1), then its printed walkthrough run
# line by line as a person would paste it:
#   * UPDATE DELAYED is answered OK; SHOW DELAYED counts the row staged and not
#     flushed, FLUSH DELAYED flushes it, SHOW DELAYED then counts it flushed and
#     the counter holds it;
#   * UPDATE DELAYED on a table without a delayed rule gets ERR 1235 with the
#     default rule to add;
#   * the deep page through the proxy equals the page sent direct, and so does
#     the next page (a keyset seek); EXPLAIN REWRITE shows the deferred join;
#   * the queue claims of a client that left are given back; /metrics counts
#     the flushed row, the deferred join and the keyset hit;
#   * a second run reuses the schema ("already built") and the account.
# The demo's 10^6-row listing is built here (about 10-20 s).
# Environment: MR_BIN; the demo's MariaDB, proxy, console and /metrics take free
# ports (kept for both runs).
. "$(dirname "$0")/../lib/env.sh"

dir=$MR_TMP/t_demo
mr_free_port db_port && mr_free_port proxy_port && mr_free_port admin_port &&
    mr_free_port http_port || mr_die "no free port"
export MR_RUN_DIR=$dir MR_RUN_DB_PORT=$db_port MR_RUN_PROXY_PORT=$proxy_port
export MR_RUN_ADMIN_PORT=$admin_port MR_RUN_HTTP_PORT=$http_port
export MR_RUN_DETACH=1 MR_RUN_NO_BUILD=1 MR_BIN

stop_all() {
    local pid
    pid=$(cat "$dir/myrewrite.pid" 2>/dev/null) && kill "$pid" 2>/dev/null && mr_wait_gone "$pid" 20
    pid=$(cat "$dir/demo/mariadbd.pid" 2>/dev/null) && kill "$pid" 2>/dev/null && mr_wait_gone "$pid" 30
}
trap stop_all EXIT

# From scratch: a mariadbd left by an earlier run is stopped, its datadir removed.
stop_all
rm -rf "$dir"
t0=$SECONDS
out=$("$MR_ROOT/scripts/run.sh" 2>&1)
rc=$?
mr_eq "the demo starts (exit 0)" 0 "$rc"
((rc == 0)) || { echo "$out"; mr_done; }
mr_match "the schema was built" "demo schema: built in [0-9]+ s" "$out"
echo "# demo set up in $((SECONDS - t0)) s"

walk=$dir/walkthrough.txt
mr_match "the walkthrough is printed" 'P="mariadb -h 127.0.0.1 -P' "$out"
eval "$(grep -E '^[PDA]="mariadb ' "$walk")"
# The walkthrough's line holding $1 (the first one), run as pasted.
run_line() {
    local line
    line=$(grep -F -- "$1" "$walk" | grep -v '^#' | sed -n "${2:-1}p")
    [[ -n $line ]] || { mr_not_ok "walkthrough has a line with: $1"; return; }
    eval "$line" 2>&1
}

got=$(run_line 'UPDATE DELAYED counters')
mr_eq "UPDATE DELAYED is answered OK (no output)" "" "$got"
got=$(run_line 'SELECT n FROM counters' 1)
mr_eq "before the flush the counter is unchanged" $'n\n0' "$got"
got=$(run_line 'SHOW DELAYED' 1)
mr_match "SHOW DELAYED: 1 row staged, 0 flushed" \
    '\| counters +\| demo.counters +\| demo.counters_delayed +\| +1 \| +0 \|' "$got"
got=$(run_line 'FLUSH DELAYED')
mr_eq "FLUSH DELAYED flushes" $'result\nflushed' "$got"
got=$(run_line 'SHOW DELAYED' 2)
mr_match "SHOW DELAYED: 1 row staged, 1 flushed" \
    '\| counters +\| demo.counters +\| demo.counters_delayed +\| +1 \| +1 \|' "$got"
got=$(run_line 'SELECT n FROM counters' 2)
mr_eq "after the flush the counter holds the update" $'n\n1' "$got"
got=$(run_line 'UPDATE DELAYED jobs')
mr_match "no delayed rule: ERR 1235 with the rule to add" \
    'ERROR 1235 \(42000\).*no delayed rule covers table demo.jobs,.*\[delayed demo_default\] table = demo\.\*' \
    "$got"

page="SELECT id, created, price FROM listing ORDER BY created"
for offset in 900000 900010; do
    direct=$($D -N -e "$page LIMIT $offset, 10")
    proxied=$($P -N -e "$page LIMIT $offset, 10")
    mr_eq "the page at $offset through the proxy equals the direct one" "$direct" "$proxied"
    mr_eq "it has 10 rows" 10 "$(wc -l <<<"$proxied")"
done
direct=$(run_line "LIMIT 900000, 10\" | tail" 1)
mr_match "the walkthrough's direct deep page shows its time" '10 rows in set \([0-9.]+ sec\)' "$direct"
last=$(head -n 1 <<<"$direct")
got=$(run_line "LIMIT 900000, 10\" | tail" 2)
mr_eq "the walkthrough's deep page through the proxy ends on the same row" "$last" \
    "$(head -n 1 <<<"$got")"
got=$(run_line "LIMIT 900010, 10\" | tail")
mr_match "the next page shows its time" '10 rows in set \([0-9.]+ sec\)' "$got"
got=$(run_line 'EXPLAIN REWRITE')
mr_match "EXPLAIN REWRITE shows the deferred join" \
    'action: rewrite.*JOIN \(SELECT `id` FROM demo.listing ORDER BY created, demo.listing.`id` LIMIT 900000, 10\) AS myrewrite_dj' \
    "$(tr '\n' ' ' <<<"$got")"

run_line 'UPDATE jobs SET status' >/dev/null
got=$(run_line 'still_claimed')
mr_eq "the claims of the client that left are given back" $'still_claimed\n0' "$got"
got=$(run_line 'curl -s')
mr_match "/metrics: the flushed row" 'myrewrite_delayed_rows_flushed_total 1' "$got"
mr_match "/metrics: the deferred join" 'myrewrite_paginate_deferred_total [1-9]' "$got"
mr_match "/metrics: the keyset seek" 'myrewrite_paginate_keyset_hits_total [1-9]' "$got"
mr_match "/metrics: the released claims" 'myrewrite_queue_rows_released_total 5' "$got"

# A second run reuses what the first made.
kill "$(cat "$dir/myrewrite.pid")" && mr_wait_gone "$(cat "$dir/myrewrite.pid")" 20
out=$("$MR_ROOT/scripts/run.sh" 2>&1)
mr_eq "a second run starts (exit 0)" 0 "$?"
mr_match "it reuses the schema" "demo schema: already built" "$out"
eval "$(grep -E '^[PDA]="mariadb ' "$walk")"
mr_eq "the counter survived the restart" $'n\n1' "$($P -e 'SELECT n FROM counters WHERE id = 1')"
mr_eq "the console answers with the same password" $'result\nflushed' "$($A -e 'FLUSH DELAYED')"
echo "# whole test: $((SECONDS - t0)) s"
mr_done
