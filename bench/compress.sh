#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# compress.sh - a 1,000-row result over the compressed protocol and plain, direct to
# mariadbd and through myrewrite, side by side in one run.
#
# Starts a throwaway mariadbd and two proxies (tests/lib/env.sh): one with its backend leg
# plain, one with backend_compress = yes. Then:
#  1. for each thread count, bench/result_load.c (libmariadb, MYSQL_OPT_COMPRESS or not)
#     against mariadbd and both proxies, rounds interleaved: queries per second and the
#     proxy/direct ratios, plain and zlib on the client's leg;
#  2. bench/compress_legs.py (raw-socket clients: plain, zlib and zstd, which libmariadb
#     does not speak) against the same three: bytes of the answer on the client's leg and
#     on the backend leg (mariadbd's Bytes_sent), and queries per second of BENCH_PY_PROCS
#     Python clients (their parsing bounds the rate: compare the rows with each other).
# The proxy compresses the client's leg itself (zlib level 1, zstd at the client's level, at most
# zstd_max_level: 3 here) and the backend leg, when asked, with zlib level 1.
#
# Usage: bench/compress.sh [SECONDS_PER_RUN]            (default 5)
# Env:   BENCH_THREADS="1 8"  BENCH_ROUNDS=2  BENCH_WORKERS=1 (proxy worker threads)
#        BENCH_PY_PROCS=2
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"

SECS=${1:-5}
THREADS=${BENCH_THREADS:-"1 8"}
ROUNDS=${BENCH_ROUNDS:-2}
WORKERS=${BENCH_WORKERS:-1}
LOAD=$MR_BUILD/result_load
MR_TMP=$MR_ROOT/.tmp/zbench
export MR_TMP
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT
[[ -x $LOAD ]] || { echo "compress.sh: build first ($LOAD is missing)" >&2; exit 1; }
mr_free_port MR_DIRECT_PORT
mr_free_port MR_PROXY_PORT
mr_free_port BC_PORT
mr_start_mariadb zbench "$MR_DIRECT_PORT" >/dev/null || exit 1
mr_start_proxy zbench "$MR_PROXY_PORT" "$MR_DIRECT_PORT" --workers "$WORKERS" \
    --log-level warn || exit 1
mr_start_proxy zbench_bc "$BC_PORT" "$MR_DIRECT_PORT" --workers "$WORKERS" \
    --log-level warn --set backend_compress=yes || exit 1

QUERY="SELECT seq, CONCAT('customer-', seq), seq * 17 % 1000, NOW() FROM seq_1_to_1000"
qps() { # qps PORT THREADS COMPRESS
    "$LOAD" "$MR_HOST" "$1" "$MR_USER" "$MR_PASSWORD" "$MR_DB" "$2" "$SECS" "$3" "$QUERY" |
        sed -n 's/.*qps=\([0-9.]*\).*/\1/p'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b ? a / b : 0}'; }

echo "# libmariadb clients; proxy_bc: backend_compress = yes"
printf '%4s %5s %-10s | %10s %10s %10s %6s %6s\n' thr round client_leg qps_direct qps_proxy \
    qps_proxy_bc ratio ratio_bc
for thr in $THREADS; do
    for ((r = 1; r <= ROUNDS; r++)); do
        for z in 0 1; do
            d=$(qps "$MR_DIRECT_PORT" "$thr" "$z")
            p=$(qps "$MR_PROXY_PORT" "$thr" "$z")
            b=$(qps "$BC_PORT" "$thr" "$z")
            printf '%4s %5s %-10s | %10s %10s %10s %6s %6s\n' "$thr" "$r" \
                "$([[ $z == 1 ]] && echo zlib || echo plain)" "$d" "$p" "$b" "$(ratio "$p" "$d")" \
                "$(ratio "$b" "$d")"
        done
    done
done

echo "# raw-socket Python clients (${BENCH_PY_PROCS:-2} processes): bytes of one answer, q/s"
printf '%-9s %-10s | %11s %12s %8s\n' target client_leg client_bytes backend_bytes qps
for target in direct proxy proxy_bc; do
    case $target in
        direct) port=$MR_DIRECT_PORT modes="plain zlib" ;;
        proxy) port=$MR_PROXY_PORT modes="plain zlib zstd" ;;
        proxy_bc) port=$BC_PORT modes="plain zlib zstd" ;;
    esac
    for mode in $modes; do
        line=$("$MR_PY" "$MR_ROOT/bench/compress_legs.py" "$MR_HOST" "$port" "$mode" \
            "${BENCH_PY_PROCS:-2}" "$SECS" "$QUERY")
        printf '%-9s %-10s | %11s %12s %8s\n' "$target" "$mode" \
            "$(sed -n 's/.*client_leg=\([0-9]*\).*/\1/p' <<<"$line")" \
            "$(sed -n 's/.*backend_leg=\([0-9-]*\).*/\1/p' <<<"$line")" \
            "$(sed -n 's/.*qps=\([0-9.]*\).*/\1/p' <<<"$line")"
    done
done
echo "# load average while it ran: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
