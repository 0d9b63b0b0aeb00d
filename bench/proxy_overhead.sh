#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# proxy_overhead.sh - sysbench direct to mariadbd, through the floor relays
# and through myrewrite (io = epoll and io = io_uring), side by side in one run.
#
# Starts a throwaway mariadbd (tests/lib/env.sh), the epoll floor relay
# (bench/relay_floor.c), the io_uring floor relay (bench/relay_floor_uring.c,
# when built) and myrewrite (1 worker) with io = epoll ("myrewrite") and with
# io = io_uring ("mr_uring", when built with it), each in front of it once per backend
# kind (TCP, and the server's unix socket), loads one sysbench table, then
# for each thread count runs every target in turn, ROUNDS times, so that the
# machine's drift hits all of them alike. Per thread count and target it
# prints the median TPS and its range, the ratio to direct (taken per round
# against that round's direct run: median and range), the median p95 and its
# ratio to direct, the microseconds a relay adds per query (1/tps_relay -
# 1/tps_direct, per round, median: the latency it adds at one thread), and
# the relay process's CPU time per query (utime+stime from /proc/PID/stat
# over its runs / the queries of those runs), split into user and system.
#
# Usage: bench/proxy_overhead.sh [SECONDS_PER_RUN] [ROUNDS]
# Env:   BENCH_THREADS="1 8 32"  BENCH_TESTS=oltp_point_select
#        BENCH_BACKENDS="tcp unix"  (which backend legs the relays use)
#        BENCH_TARGETS="floor uring myrewrite mr_uring"  (which relays; direct always runs)
#        BENCH_ROWS=100000  BENCH_WORKERS=1 (proxy worker threads)
#        BENCH_DIRECT_PORT, BENCH_PROXY_PORT (the first proxy; others are free ports)
#        MR_BIN (the proxy; the relays are looked for next to it)
#        BENCH_MR_BASE=/path/to/other/myrewrite: also runs that build, as
#        "base-<backend>" (and "base_uring-<backend>" with io = io_uring when
#        mr_uring is a target), to compare two builds in the same run
# Pinned: `taskset -c 0 bench/proxy_overhead.sh ...` puts every process it
# starts (they inherit the mask) on one CPU, so no wakeup crosses CPUs and the
# one-thread figures show what each path costs, free of where the scheduler
# placed client, relay and server (doc/benchmarks.md, "One thread over the unix socket").
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"

SECS=${1:-10}
ROUNDS=${2:-3}
THREADS=${BENCH_THREADS:-"1 8 32"}
TESTS=${BENCH_TESTS:-"oltp_point_select"}
BACKENDS=${BENCH_BACKENDS:-"tcp unix"}
WANT=${BENCH_TARGETS:-"floor uring myrewrite mr_uring"}
ROWS=${BENCH_ROWS:-100000}
WORKERS=${BENCH_WORKERS:-1}
RELAY_DIR=${BENCH_RELAY_DIR:-$(dirname "${MR_BIN_REAL:-$MR_BIN}")}
MR_TMP=${MR_TMP:-$MR_ROOT/.tmp/bench}/bench-overhead
MR_DIRECT_PORT=${BENCH_DIRECT_PORT:-23316}
MR_PROXY_PORT=${BENCH_PROXY_PORT:-26043}
export MR_TMP MR_DIRECT_PORT MR_PROXY_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT

mr_start_mariadb bench "$MR_DIRECT_PORT" >/dev/null || exit 1
SOCK=$MR_TMP/bench/mariadbd.sock
CLK_TCK=$(getconf CLK_TCK)

# Targets: parallel arrays of name, port and pid (pid empty for direct).
T_NAME=(direct) T_PORT=("$MR_DIRECT_PORT") T_PID=("")

start_relay() { # start_relay BINARY NAME BACKEND
    local port
    mr_free_port port || return 1
    "$RELAY_DIR/$1" "$port" "$3" >>"$MR_TMP/$2.log" 2>&1 &
    local pid=$!
    MR__PROXY_PIDS+=("$pid")
    for ((i = 0; i < 50; i++)); do
        mr_port_listening "$port" && break
        sleep 0.1
    done
    T_NAME+=("$2") T_PORT+=("$port") T_PID+=("$pid")
}

first_proxy=1
for be in $BACKENDS; do
    if [[ $be == unix ]]; then spec=$SOCK; else spec=$MR_HOST:$MR_DIRECT_PORT; fi
    for t in $WANT; do
        case $t in
        floor) start_relay relay_floor "floor-$be" "$spec" ;;
        uring)
            if [[ -x $RELAY_DIR/relay_floor_uring ]]; then
                start_relay relay_floor_uring "uring-$be" "$spec"
            else
                echo "# relay_floor_uring not built (no liburing): skipped" >&2
            fi ;;
        myrewrite)
            if ((first_proxy)); then port=$MR_PROXY_PORT; else mr_free_port port; fi
            first_proxy=0
            extra=()
            [[ $be == unix ]] && extra=(--backend "$SOCK")
            MR_PROXY_LOG_LEVEL=warn mr_start_proxy "myrewrite-$be" "$port" "$MR_DIRECT_PORT" \
                --workers "$WORKERS" "${extra[@]}" >/dev/null || exit 1
            T_NAME+=("myrewrite-$be") T_PORT+=("$port") T_PID+=("$MR_PROXY_PID")
            if [[ -n ${BENCH_MR_BASE:-} ]]; then
                mr_free_port port
                MR_BIN=$BENCH_MR_BASE MR_PROXY_LOG_LEVEL=warn mr_start_proxy "base-$be" "$port" \
                    "$MR_DIRECT_PORT" --workers "$WORKERS" "${extra[@]}" >/dev/null || exit 1
                T_NAME+=("base-$be") T_PORT+=("$port") T_PID+=("$MR_PROXY_PID")
            fi ;;
        mr_uring)
            mr_free_port port
            extra=()
            [[ $be == unix ]] && extra=(--backend "$SOCK")
            MR_PROXY_LOG_LEVEL=warn mr_start_proxy "mr_uring-$be" "$port" "$MR_DIRECT_PORT" \
                --workers "$WORKERS" --set io=io_uring "${extra[@]}" >/dev/null ||
                { echo "# myrewrite with io = io_uring did not start: skipped" >&2; continue; }
            T_NAME+=("mr_uring-$be") T_PORT+=("$port") T_PID+=("$MR_PROXY_PID")
            if [[ -n ${BENCH_MR_BASE:-} ]]; then
                mr_free_port port
                MR_BIN=$BENCH_MR_BASE MR_PROXY_LOG_LEVEL=warn mr_start_proxy "base_uring-$be" \
                    "$port" "$MR_DIRECT_PORT" --workers "$WORKERS" --set io=io_uring \
                    "${extra[@]}" >/dev/null ||
                    { echo "# the base build with io = io_uring did not start: skipped" >&2; continue; }
                T_NAME+=("base_uring-$be") T_PORT+=("$port") T_PID+=("$MR_PROXY_PID")
            fi ;;
        esac
    done
done
NT=${#T_NAME[@]}

sb() { # sb TEST PORT THREADS CMD
    sysbench "$1" --db-driver=mysql --mysql-host="$MR_HOST" --mysql-port="$2" \
        --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" --mysql-db="$MR_DB" \
        --tables=1 --table-size="$ROWS" --threads="$3" --time="$SECS" \
        --percentile=95 --report-interval=0 "$4"
}
ticks() { [[ -n $1 ]] && awk '{print $14, $15}' "/proc/$1/stat" || echo "0 0"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
range() { sort -g | awk -v f="${1:-%.2f}" 'NR==1 {lo=$1} {hi=$1} END {printf f "-" f, lo, hi}'; }
col() { tr ' ' '\n' <<<"$1" | grep -v '^$'; } # one value a line

echo "# preparing sbtest1 with $ROWS rows" >&2
sb oltp_point_select "$MR_DIRECT_PORT" 1 cleanup >/dev/null 2>&1 || true
sb oltp_point_select "$MR_DIRECT_PORT" 1 prepare >/dev/null || exit 1
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $SECS s runs, $ROUNDS rounds" >&2

printf '%-18s %3s | %7s %13s | %5s %11s | %6s %5s | %7s | %6s %6s %6s\n' target thr tps \
    "tps_range" ratio "ratio_range" p95_ms p95_r "+us/q" usr_us sys_us cpu_us
for test in $TESTS; do
    echo "# $test"
    for thr in $THREADS; do
        declare -A tps=() p95=() ratio=() p95r=() addus=() usr=() sys=() qs=()
        for ((r = 0; r < ROUNDS; r++)); do
            for ((k = 0; k < NT; k++)); do
                read -r u0 s0 <<<"$(ticks "${T_PID[k]}")"
                out=$(sb "$test" "${T_PORT[k]}" "$thr" run)
                read -r u1 s1 <<<"$(ticks "${T_PID[k]}")"
                t=$(awk '/transactions:/ {gsub(/\(/,"",$3); print $3}' <<<"$out")
                l=$(awk '/95th percentile:/ {print $3}' <<<"$out")
                q=$(awk '/queries:/ && !/performed/ {print $2; exit}' <<<"$out")
                errs=$(awk '/ignored errors:/ {print $3}' <<<"$out")
                [[ ${errs:-0} == 0 ]] || echo "# warning: $errs ignored errors via ${T_NAME[k]}" >&2
                [[ -n $t ]] || { echo "# ${T_NAME[k]}: sysbench failed" >&2; t=0 l=0 q=0; }
                tps[$k]+="$t " p95[$k]+="$l "
                usr[$k]=$(( ${usr[$k]:-0} + u1 - u0 )) sys[$k]=$(( ${sys[$k]:-0} + s1 - s0 ))
                qs[$k]=$(( ${qs[$k]:-0} + q ))
                if ((k == 0)); then dt=$t dl=$l; continue; fi
                ratio[$k]+="$(awk -v a="$t" -v b="$dt" 'BEGIN {printf "%.3f", b ? a / b : 0}') "
                p95r[$k]+="$(awk -v a="$l" -v b="$dl" 'BEGIN {printf "%.3f", b ? a / b : 0}') "
                addus[$k]+="$(awk -v a="$t" -v b="$dt" 'BEGIN {printf "%.2f", a && b ? (1 / a - 1 / b) * 1e6 * '"$thr"' : 0}') "
            done
        done
        for ((k = 0; k < NT; k++)); do
            cpu() { awk -v t="$1" -v q="${qs[$k]}" -v hz="$CLK_TCK" 'BEGIN {printf "%.1f", q ? t / hz * 1e6 / q : 0}'; }
            if ((k == 0)); then rm="1.00" rr="" pr="1.00" au="0" cu="-" cs="-" ct="-"
            else
                rm=$(col "${ratio[$k]}" | median) rr=$(col "${ratio[$k]}" | range)
                pr=$(col "${p95r[$k]}" | median) au=$(col "${addus[$k]}" | median)
                cu=$(cpu "${usr[$k]}") cs=$(cpu "${sys[$k]}") ct=$(cpu $(( usr[$k] + sys[$k] )))
            fi
            printf '%-18s %3s | %7.0f %13s | %5.2f %11s | %6s %5.2f | %7.1f | %6s %6s %6s\n' \
                "${T_NAME[k]}" "$thr" "$(col "${tps[$k]}" | median)" "$(col "${tps[$k]}" | range %.0f)" \
                "$rm" "$rr" "$(col "${p95[$k]}" | median)" "$pr" "$au" "$cu" "$cs" "$ct"
        done
        unset tps p95 ratio p95r addus usr sys qs
    done
done
sb oltp_point_select "$MR_DIRECT_PORT" 1 cleanup >/dev/null
