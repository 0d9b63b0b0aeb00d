#!/usr/bin/env bash
# proxy_overhead.sh - sysbench through myrewrite vs direct to mariadbd, side by side.
#
# Starts a throwaway mariadbd and the proxy (tests/lib/env.sh), loads one
# sysbench table, then for each workload and thread count alternates
# direct and proxied runs on the same data (ROUNDS times each) and prints
# median TPS, p95 latency, proxy/direct ratio and the proxy's CPU time per
# query over the proxied runs, split into user time (the proxy's own code)
# and system time (the kernel's socket work on the proxy's behalf).
#
# Usage: bench/proxy_overhead.sh [SECONDS_PER_RUN] [ROUNDS]
# Env:   BENCH_THREADS="1 8 32"  BENCH_TESTS="oltp_point_select oltp_read_only"
#        BENCH_ROWS=100000  BENCH_WORKERS=1 (proxy worker threads)
#        BENCH_BACKEND=tcp|unix (how the proxy reaches mariadbd; clients use TCP)
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"

SECS=${1:-10}
ROUNDS=${2:-3}
THREADS=${BENCH_THREADS:-"1 8 32"}
TESTS=${BENCH_TESTS:-"oltp_point_select oltp_read_only"}
ROWS=${BENCH_ROWS:-100000}
WORKERS=${BENCH_WORKERS:-1}
MR_TMP=$MR_ROOT/.tmp/bench
MR_DIRECT_PORT=${BENCH_DIRECT_PORT:-23316}
MR_PROXY_PORT=${BENCH_PROXY_PORT:-26043}
export MR_TMP MR_DIRECT_PORT MR_PROXY_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT

mr_start_mariadb bench "$MR_DIRECT_PORT" >/dev/null
backend_args=()
if [[ ${BENCH_BACKEND:-tcp} == unix ]]; then
    backend_args=(--backend "$MR_TMP/bench/mariadbd.sock")
fi
mr_start_proxy bench "$MR_PROXY_PORT" "$MR_DIRECT_PORT" --workers "$WORKERS" --log-level warn \
    "${backend_args[@]}"
PROXY_PID=$MR_PROXY_PID
CLK_TCK=$(getconf CLK_TCK)

sb() { # sb TEST PORT THREADS CMD
    sysbench "$1" --db-driver=mysql --mysql-host="$MR_HOST" --mysql-port="$2" \
        --mysql-user="$MR_USER" --mysql-password="$MR_PASSWORD" --mysql-db="$MR_DB" \
        --tables=1 --table-size="$ROWS" --threads="$3" --time="$SECS" \
        --percentile=95 --report-interval=0 "$4"
}

proxy_usr_ticks() { awk '{print $14}' "/proc/$PROXY_PID/stat"; }
proxy_sys_ticks() { awk '{print $15}' "/proc/$PROXY_PID/stat"; }
per_query_us() { awk -v t="$1" -v q="$2" -v hz="$CLK_TCK" 'BEGIN {print q ? t / hz * 1e6 / q : 0}'; }

echo "# preparing sbtest1 with $ROWS rows" >&2
sb oltp_point_select "$MR_DIRECT_PORT" 1 cleanup >/dev/null 2>&1 || true
sb oltp_point_select "$MR_DIRECT_PORT" 1 prepare >/dev/null

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

printf '%-18s %4s | %10s %10s %6s | %8s %8s | %8s %8s\n' test thr "tps_direct" "tps_proxy" ratio \
    "p95d_ms" "p95p_ms" "usr_us/q" "sys_us/q"
for test in $TESTS; do
    for thr in $THREADS; do
        dt=() pt=() dl=() pl=() usr=0 sys=0 queries=0
        for ((r = 0; r < ROUNDS; r++)); do
            out=$(sb "$test" "$MR_DIRECT_PORT" "$thr" run)
            dt+=("$(awk '/transactions:/ {gsub(/\(/,"",$3); print $3}' <<<"$out")")
            dl+=("$(awk '/95th percentile:/ {print $3}' <<<"$out")")
            u0=$(proxy_usr_ticks) s0=$(proxy_sys_ticks)
            out=$(sb "$test" "$MR_PROXY_PORT" "$thr" run)
            u1=$(proxy_usr_ticks) s1=$(proxy_sys_ticks)
            pt+=("$(awk '/transactions:/ {gsub(/\(/,"",$3); print $3}' <<<"$out")")
            pl+=("$(awk '/95th percentile:/ {print $3}' <<<"$out")")
            q=$(awk '/queries:/ && !/performed/ {print $2; exit}' <<<"$out")
            errs=$(awk '/ignored errors:/ {print $3}' <<<"$out")
            [[ ${errs:-0} == 0 ]] || echo "# warning: $errs ignored errors through the proxy" >&2
            usr=$((usr + u1 - u0)) sys=$((sys + s1 - s0))
            queries=$((queries + q))
        done
        d=$(printf '%s\n' "${dt[@]}" | median)
        p=$(printf '%s\n' "${pt[@]}" | median)
        printf '%-18s %4s | %10.0f %10.0f %6.2f | %8s %8s | %8.1f %8.1f\n' "$test" "$thr" "$d" "$p" \
            "$(awk -v a="$p" -v b="$d" 'BEGIN {print a / b}')" \
            "$(printf '%s\n' "${dl[@]}" | median)" "$(printf '%s\n' "${pl[@]}" | median)" \
            "$(per_query_us "$usr" "$queries")" "$(per_query_us "$sys" "$queries")"
    done
done
sb oltp_point_select "$MR_DIRECT_PORT" 1 cleanup >/dev/null
