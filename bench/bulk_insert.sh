#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bulk_insert.sh - a bulk insert by array binding (MariaDB's COM_STMT_BULK_EXECUTE, one
# execute carrying every row): direct to mariadbd vs through myrewrite, side by side.
#
# Starts a throwaway mariadbd and a proxy (tests/lib/env.sh), then runs build/bulk_insert
# (bench/bulk_insert.c) ROUNDS times on each, alternating, and prints the median time of
# one bulk execute of ROWS rows each way and the proxy/direct ratio.
#
# Usage: bench/bulk_insert.sh [ROWS] [ROUNDS]        (default 100000 rows, 7 rounds)
# Env:   BENCH_DIRECT_PORT=49391  BENCH_PROXY_PORT=49091
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"

ROWS=${1:-100000}
ROUNDS=${2:-7}
MR_TMP=$MR_ROOT/.tmp/bulkbench
MR_DIRECT_PORT=${BENCH_DIRECT_PORT:-49391}
MR_PROXY_PORT=${BENCH_PROXY_PORT:-49091}
export MR_TMP MR_DIRECT_PORT MR_PROXY_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT
GEN=$MR_BUILD/bulk_insert
[[ -x $GEN ]] || mr_die "$GEN not built (cmake --build build --target bulk_insert)"

mr_start_mariadb bulkbench "$MR_DIRECT_PORT" >/dev/null || exit 1
mr_start_proxy bulkbench "$MR_PROXY_PORT" "$MR_DIRECT_PORT" --log-level warn || exit 1

one() { # one PORT: milliseconds of one bulk execute
    "$GEN" "$MR_HOST" "$1" "$MR_USER" "$MR_PASSWORD" "$MR_DB" "$ROWS" 1 |
        awk -F'[= ]' -v rows="$ROWS" '$1 == "ms" && $4 == rows {print $2}'
}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

one "$MR_DIRECT_PORT" >/dev/null # warm the buffer pool and the table's pages
d=() p=()
for ((i = 0; i < ROUNDS; i++)); do
    d+=("$(one "$MR_DIRECT_PORT")")
    p+=("$(one "$MR_PROXY_PORT")")
done
[[ ${d[*]} != *[!0-9.\ ]* && -n ${p[*]// /} ]] || mr_die "a round failed: direct ${d[*]} proxy ${p[*]}"
md=$(printf '%s\n' "${d[@]}" | median)
mp=$(printf '%s\n' "${p[@]}" | median)
printf '%-8s %8s | %12s %12s %6s\n' rows rounds direct_ms proxy_ms ratio
printf '%-8s %8s | %12s %12s %6.2f\n' "$ROWS" "$ROUNDS" "$md" "$mp" \
    "$(awk -v a="$mp" -v b="$md" 'BEGIN {print b ? a / b : 0}')"
echo "# each round: direct ${d[*]}; proxy ${p[*]} (ms)"
echo "# load average while it ran: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
