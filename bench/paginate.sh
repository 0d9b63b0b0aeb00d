#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# paginate.sh - deep page latency: the page sent direct to mariadbd, through a paginate
# rule with strategy = deferred_join, and through one with strategy = keyset (a sequential
# walk, as a client paging forward does), at offsets 10, 10^4, 10^5 and 10^6.
#
# Starts a throwaway mariadbd "pbench" (port 23366, its datadir kept in .tmp/pbench so
# the table is built once; the buffer pool is set to BENCH_POOL bytes, 4 GiB by default
# so that every mode reads from memory) and two proxies (tests/lib/env.sh):
#   :26096  [paginate] strategy = deferred_join, threshold 1000
#   :26097  [paginate] strategy = keyset, threshold 1000
# bench/paginate.py fills test.pbench (ROWS rows of about 0.5 KB: INT key, two INT
# columns, one of them, k, with a secondary index, a 480-byte VARCHAR) unless it already
# holds them. Then, for each listing, `SELECT * FROM pbench ORDER BY id LIMIT off, 20`
# ("pk") and `SELECT * FROM pbench ORDER BY k, id LIMIT off, 20` ("k", served by the
# secondary index), it runs each offset REPEAT times direct and through the deferred-join
# proxy, walks the keyset proxy page by page from offset 0 past the deepest offset timing
# the REPEAT pages from each offset on, checks every timed page against the direct rows
# once the walk is over, and prints medians (ms), ratios and EXPLAIN's access paths.
#
# Usage: bench/paginate.sh [REPEAT]        (default 7)
# Env:   BENCH_ROWS=2000000  BENCH_OFFSETS="10 10000 100000 1000000"  BENCH_PAGE=20
#        BENCH_LISTINGS="pk k" (which listings, in this order)
#        BENCH_POOL=4294967296 (innodb_buffer_pool_size; 268435456 leaves most of the table
#        out of the buffer pool, in the OS page cache)
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"

COMMAND=$(printf '%q ' "$0" "$@")
for v in BENCH_LISTINGS BENCH_POOL BENCH_PAGE BENCH_OFFSETS BENCH_ROWS; do
    [[ -n ${!v:-} ]] && COMMAND="$v=$(printf '%q' "${!v}") $COMMAND"
done

REPEAT=${1:-7}
ROWS=${BENCH_ROWS:-2000000}
OFFSETS=${BENCH_OFFSETS:-"10 10000 100000 1000000"}
PAGE=${BENCH_PAGE:-20}
LISTINGS=${BENCH_LISTINGS:-"pk k"}
POOL=${BENCH_POOL:-4294967296}
MR_TMP=$MR_ROOT/.tmp/pbench
MR_DIRECT_PORT=23366
DJ_PORT=26096
KS_PORT=26097
export MR_TMP MR_DIRECT_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT

for s in deferred_join keyset; do
    rm -rf "$MR_TMP/rules_$s"
    mkdir -p "$MR_TMP/rules_$s"
    cat >"$MR_TMP/rules_$s/pbench.rules" <<RULES
[paginate pbench]
table = test.pbench
key = id
threshold = 1000
strategy = $s
RULES
    "$MR_BIN" --rules "$MR_TMP/rules_$s" --check >&2 || mr_die "the $s rule does not load"
done

mr_start_mariadb pbench "$MR_DIRECT_PORT" >/dev/null || mr_die "mariadbd pbench did not start"
mr_mariadb_root pbench -e "SET GLOBAL innodb_buffer_pool_size = $POOL" \
    || mr_die "cannot set the buffer pool size"
PY_ARGS=(--rows "$ROWS" --offsets "$OFFSETS" --page "$PAGE" --repeat "$REPEAT"
    --host "$MR_HOST" --direct-port "$MR_DIRECT_PORT" --dj-port "$DJ_PORT" --ks-port "$KS_PORT"
    --user "$MR_USER" --password "$MR_PASSWORD" --db "$MR_DB")
"$MR_PY" "$MR_ROOT/bench/paginate.py" "${PY_ARGS[@]}" --setup-only || mr_die "table setup failed"
for s in deferred_join keyset; do
    port=$DJ_PORT
    [[ $s == keyset ]] && port=$KS_PORT
    : >"$MR_TMP/pbench_$s.log"
    mr_start_proxy "pbench_$s" "$port" "$MR_DIRECT_PORT" --rules "$MR_TMP/rules_$s" \
        --workers 2 || mr_die "proxy $s did not start"
done

"$MR_PY" "$MR_ROOT/bench/paginate.py" "${PY_ARGS[@]}" --listings "$LISTINGS"
rc=$?

for name in pbench_deferred_join pbench_keyset; do
    # The admin console notice is expected: no admin_password is set.
    n=$(grep -E '^\S+ (warn|error) ' "$MR_TMP/$name.log" | grep -vc 'admin console not started')
    if ((n > 0)); then
        echo "# proxy $name logged $n warning/error line(s), first ones:" >&2
        grep -E '^\S+ (warn|error) ' "$MR_TMP/$name.log" | grep -v 'admin console not started' \
            | head -n 5 >&2
    fi
done
echo
echo "command: ${COMMAND% }"
exit $rc
