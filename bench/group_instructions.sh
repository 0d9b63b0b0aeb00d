#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# group_instructions.sh - user-space instructions per grouped UPDATE DELAYED, counted by
# callgrind (the machine's load does not move them, unlike throughput or CPU time), for each
# proxy build given.
#
# Starts a throwaway mariadbd (tests/lib/env.sh) with test.counters (1,000 rows); for each
# build, a proxy under valgrind --tool=callgrind (instrumentation off) with a staged delayed
# rule with group_commit = yes and group_commit_rows = ROWS (small, so that every build runs
# batches of about that size: instructions per statement depend on statements per batch);
# 128 clients (build/delayed_load, 2 threads) on 10 hot rows for 3 s to warm up; then the
# counters are zeroed, instrumentation switched on, the same load runs for SECONDS and the
# profile is dumped. Prints the instructions of the whole proxy process (workers, group
# runners, flusher) divided by the statements acknowledged, and statements per batch from
# /metrics; the profile stays in $MR_TMP for callgrind_annotate. The kernel's share (the
# system calls) is not counted: see strace -c.
#
# Usage: bench/group_instructions.sh [SECONDS] [ROWS] [PROXY_BINARY...]  (10, 8, $MR_BIN)
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"
SECS=${1:-10}
ROWS=${2:-8}
shift 2 2>/dev/null
BINS=("$@")
((${#BINS[@]})) || BINS=("$MR_BIN")
MR_TMP=$MR_ROOT/.tmp/group-instructions
export MR_TMP
rm -rf "$MR_TMP"
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT
command -v valgrind >/dev/null || mr_die "valgrind not installed"
LOAD=$MR_BUILD/delayed_load
[[ -x $LOAD ]] || mr_die "$LOAD not built"
mr_free_port D
export MR_DIRECT_PORT=$D
mr_start_mariadb groupins "$D" >/dev/null || mr_die "mariadbd did not start"
mariadb -h"$MR_HOST" -P"$D" -u"$MR_USER" -p"$MR_PASSWORD" "$MR_DB" -e "DROP TABLE IF EXISTS
    counters, counters_delayed; CREATE TABLE counters (id INT PRIMARY KEY, hits BIGINT NOT NULL
    DEFAULT 0); INSERT INTO counters (id) SELECT seq FROM seq_1_to_1000" || mr_die "setup"
RULES=$MR_TMP/rules
mkdir -p "$RULES"
printf '[delayed gi]\ntable = test.counters\nkey = id\ncolumns = hits\ngroup_commit = yes\ngroup_commit_rows = %s\nflush_interval = 1s\n' \
    "$ROWS" >"$RULES/10-gi.rules"
T="UPDATE DELAYED counters SET hits = hits + 1 WHERE id = %d"
group_metrics() {  # batches statements
    curl -s "http://$MR_HOST:$1/metrics" |
        awk '/^myrewrite_delayed_group_batches_total /{b=$2} /^myrewrite_delayed_group_statements_total /{s=$2} END{print b+0, s+0}'
}
printf '%-40s %12s %10s %12s %8s\n' build instructions statements per_stmt st/bat
i=0
for bin in "${BINS[@]}"; do
    i=$((i + 1))
    out=$MR_TMP/callgrind.$i.out
    wrap=$MR_TMP/vg$i.sh
    printf '#!/bin/sh\nexec valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=%s "%s" "$@"\n' \
        "$out" "$bin" >"$wrap"
    chmod +x "$wrap"
    mr_free_port P
    mr_free_port H
    MR_BIN=$wrap mr_start_proxy "gi$i" "$P" "$D" --rules "$RULES" --workers 2 \
        --set proxy_user="$MR_USER" --set proxy_password="$MR_PASSWORD" \
        --set http_listen="$MR_HOST:$H" >/dev/null || mr_die "proxy $bin did not start"
    pid=$(cat "$MR_TMP/gi$i.pid")
    "$LOAD" "$MR_HOST" "$P" "$MR_USER" "$MR_PASSWORD" "$MR_DB" 128 2 3 10 "$T" >/dev/null
    sleep 1
    read -r b0 s0 < <(group_metrics "$H")
    callgrind_control -z "$pid" >/dev/null 2>&1
    callgrind_control -i on "$pid" >/dev/null 2>&1
    "$LOAD" "$MR_HOST" "$P" "$MR_USER" "$MR_PASSWORD" "$MR_DB" 128 2 "$SECS" 10 "$T" >/dev/null
    callgrind_control -i off "$pid" >/dev/null 2>&1
    read -r b1 s1 < <(group_metrics "$H")
    callgrind_control -d "$pid" >/dev/null 2>&1
    sleep 1
    ir=$(callgrind_annotate "$out".1 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",", "", $1); print $1}')
    n=$((s1 - s0))
    batches=$((b1 - b0))
    printf '%-40s %12s %10s %12s %8s\n' "$bin" "$ir" "$n" \
        "$(awk -v a="$ir" -v b="$n" 'BEGIN{printf "%.0f", b ? a / b : 0}')" \
        "$(awk -v a="$n" -v b="$batches" 'BEGIN{printf "%.1f", b ? a / b : 0}')"
    kill -TERM "$pid" 2>/dev/null
    mr_wait_gone "$pid" 30 || kill -KILL "$pid" 2>/dev/null
done
echo "command: bench/group_instructions.sh $SECS $ROWS ${BINS[*]}"
