#!/usr/bin/env bash
# compress.sh - a 1,000-row result over the compressed protocol and plain, direct to
# mariadbd and through myrewrite, side by side in one run.
#
# Starts a throwaway mariadbd and a proxy (tests/lib/env.sh), then for each thread count
# runs bench/result_load.c (libmariadb, MYSQL_OPT_COMPRESS or not) against both, rounds
# interleaved, and prints queries per second and the proxy/direct ratio for plain and
# compressed. The proxy compresses the client's leg itself (zlib level 1); its backend leg
# is plain. Bytes on the leg: tests/integration/t_compress.py prints them.
#
# Usage: bench/compress.sh [SECONDS_PER_RUN]            (default 5)
# Env:   BENCH_THREADS="1 8"  BENCH_ROUNDS=2  BENCH_WORKERS=1 (proxy worker threads)
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
mr_start_mariadb zbench "$MR_DIRECT_PORT" >/dev/null || exit 1
mr_start_proxy zbench "$MR_PROXY_PORT" "$MR_DIRECT_PORT" --workers "$WORKERS" \
    --log-level warn || exit 1

QUERY="SELECT seq, CONCAT('customer-', seq), seq * 17 % 1000, NOW() FROM seq_1_to_1000"
qps() { # qps PORT THREADS COMPRESS
    "$LOAD" "$MR_HOST" "$1" "$MR_USER" "$MR_PASSWORD" "$MR_DB" "$2" "$SECS" "$3" "$QUERY" |
        sed -n 's/.*qps=\([0-9.]*\).*/\1/p'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b ? a / b : 0}'; }

printf '%4s %5s %-10s | %10s %10s %6s\n' thr round protocol qps_direct qps_proxy ratio
for thr in $THREADS; do
    for ((r = 1; r <= ROUNDS; r++)); do
        for z in 0 1; do
            d=$(qps "$MR_DIRECT_PORT" "$thr" "$z")
            p=$(qps "$MR_PROXY_PORT" "$thr" "$z")
            printf '%4s %5s %-10s | %10s %10s %6s\n' "$thr" "$r" \
                "$([[ $z == 1 ]] && echo compressed || echo plain)" "$d" "$p" "$(ratio "$p" "$d")"
        done
    done
done
echo "# load average while it ran: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
