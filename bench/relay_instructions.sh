#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# relay_instructions.sh - user-space instructions per relayed point select,
# counted by callgrind: a figure the machine's load does not move, unlike
# TPS or CPU time.
#
# Starts a throwaway mariadbd (tests/lib/env.sh) with one sysbench table;
# then for each relay (the epoll floor relay, and each proxy build given)
# runs it under valgrind --tool=callgrind, sends 300 point selects (one
# sysbench thread) to warm up, zeroes the counters, sends EVENTS more and
# prints the instructions the relay process executed, divided by EVENTS.
# The kernel's share (the system calls) is not counted: see strace -c.
#
# Usage: bench/relay_instructions.sh [PROXY_BINARY...]   (default: $MR_BIN)
# Env:   BENCH_EVENTS=3000  BENCH_DIRECT_PORT  MR_TMP
set -uo pipefail
. "$(dirname "$0")/../tests/lib/env.sh"

EVENTS=${BENCH_EVENTS:-3000}
MR_TMP=${MR_TMP:-$MR_ROOT/.tmp/bench}/bench-instructions
MR_DIRECT_PORT=${BENCH_DIRECT_PORT:-23317}
export MR_TMP MR_DIRECT_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
mr_start_mariadb bench "$MR_DIRECT_PORT" >/dev/null || exit 1

sb() { # sb PORT EVENTS CMD
    sysbench oltp_point_select --db-driver=mysql --mysql-host="$MR_HOST" --mysql-port="$1" \
        --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" --mysql-db="$MR_DB" \
        --tables=1 --table-size=10000 --threads=1 --time=0 --events="$2" "$3" >/dev/null
}
sb "$MR_DIRECT_PORT" 1 cleanup 2>/dev/null
sb "$MR_DIRECT_PORT" 1 prepare || exit 1

count() { # count NAME PORT COMMAND...: prints NAME and instructions per query
    local name=$1 port=$2 out=$MR_TMP/$1.cg
    shift 2
    rm -f "$out"*
    valgrind --tool=callgrind --callgrind-out-file="$out" "$@" </dev/null \
        >"$MR_TMP/$name.log" 2>&1 &
    local pid=$! i
    MR__PROXY_PIDS+=("$pid")
    for ((i = 0; i < 100; i++)); do mr_port_listening "$port" && break; sleep 0.2; done
    sb "$port" 300 run
    callgrind_control -z "$pid" >/dev/null
    sb "$port" "$EVENTS" run
    callgrind_control -d "$pid" >/dev/null
    sleep 0.5
    kill "$pid"
    wait "$pid" 2>/dev/null
    awk -v n="$EVENTS" -v name="$name" '/^(summary|totals):/ {if ($2 > ir) ir = $2}
        END {printf "%-24s %8.0f instructions/query\n", name, ir / n}' "$out".*
}

mr_free_port port
count relay_floor "$port" "$(dirname "$MR_BIN")/relay_floor" "$port" "$MR_HOST:$MR_DIRECT_PORT"
[[ $# -gt 0 ]] || set -- "$MR_BIN"
for bin in "$@"; do
    mr_free_port port
    count "$(basename "$bin")" "$port" "$bin" --listen "$MR_HOST:$port" \
        --backend "$MR_HOST:$MR_DIRECT_PORT" --workers 1 --log-level warn
done
