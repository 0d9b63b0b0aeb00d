#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# placement.sh - one connection's point-select latency direct, through the
# epoll floor relay and through myrewrite (1 worker), each relay over the
# server's unix socket, with the client, the relay and mariadbd pinned to
# chosen CPUs, one placement after another (doc/benchmarks.md, "One thread over the
# unix socket"). On a 2-CPU VM whose idle CPUs halt, a wakeup that lands on
# the other, idle CPU costs tens of µs: the placement, not the relay, then
# sets a one-thread figure; this shows each relay's figure per placement.
#
# Starts a throwaway mariadbd (tests/lib/env.sh), loads one sysbench table,
# starts the relays, then for each placement runs bench/point_latency.c
# (build/point_latency) ROUNDS times per target, COUNT queries each.
#
# Usage: bench/placement.sh [COUNT] [ROUNDS]
# Env:   BENCH_PLACEMENTS="0/0/0 0/0/1 0/1/1 0/1/0"  (CPU of client/relay/mariadbd)
#        BENCH_ROWS=100000, MR_BIN (the proxy; relay_floor and point_latency next to it)
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"

COUNT=${1:-20000}
ROUNDS=${2:-2}
PLACEMENTS=${BENCH_PLACEMENTS:-"0/0/0 0/0/1 0/1/1 0/1/0"}
ROWS=${BENCH_ROWS:-100000}
BIN_DIR=$(dirname "${MR_BIN_REAL:-$MR_BIN}")
MR_TMP=${MR_TMP:-$MR_ROOT/.tmp/bench}/bench-placement
mr_free_port MR_DIRECT_PORT
mr_free_port MR_PROXY_PORT
export MR_TMP MR_DIRECT_PORT MR_PROXY_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT

mr_start_mariadb bench "$MR_DIRECT_PORT" >/dev/null || exit 1
SOCK=$MR_TMP/bench/mariadbd.sock
MDB_PID=$(cat "$MR_TMP/bench/mariadbd.pid")

floor_port=
mr_free_port floor_port
"$BIN_DIR/relay_floor" "$floor_port" "$SOCK" >>"$MR_TMP/floor.log" 2>&1 &
FLOOR_PID=$!
MR__PROXY_PIDS+=("$FLOOR_PID")
MR_PROXY_LOG_LEVEL=warn mr_start_proxy myrewrite "$MR_PROXY_PORT" "$MR_DIRECT_PORT" \
    --workers 1 --backend "$SOCK" >/dev/null || exit 1
for ((i = 0; i < 50; i++)); do mr_port_listening "$floor_port" && break; sleep 0.1; done

sb() {
    sysbench oltp_point_select --db-driver=mysql --mysql-host="$MR_HOST" \
        --mysql-port="$MR_DIRECT_PORT" --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" \
        --mysql-db="$MR_DB" --tables=1 --table-size="$ROWS" "$1" >/dev/null
}
sb cleanup 2>/dev/null || true
sb prepare || exit 1

T_NAME=(direct floor myrewrite) T_PORT=("$MR_DIRECT_PORT" "$floor_port" "$MR_PROXY_PORT")
pin() { taskset -a -p -c "$2" "$1" >/dev/null; } # every thread of PID
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $COUNT queries, $ROUNDS rounds"
printf '%-16s %-10s | %s\n' "client/relay/mdb" target "mean_us per round"
for pl in $PLACEMENTS; do
    IFS=/ read -r c_cpu r_cpu m_cpu <<<"$pl"
    pin "$MDB_PID" "$m_cpu"
    pin "$FLOOR_PID" "$r_cpu"
    pin "$MR_PROXY_PID" "$r_cpu"
    for ((k = 0; k < ${#T_NAME[@]}; k++)); do
        means=""
        for ((r = 0; r < ROUNDS; r++)); do
            out=$(taskset -c "$c_cpu" "$BIN_DIR/point_latency" "$MR_HOST" "${T_PORT[k]}" \
                "$MR_USER" "$MR_PASSWORD" "$MR_DB" "$COUNT" "$ROWS") || out="mean_us failed"
            means+="$(awk '{print $2}' <<<"$out") "
        done
        printf '%-16s %-10s | %s\n' "$pl" "${T_NAME[k]}" "$means"
    done
done
sb cleanup
