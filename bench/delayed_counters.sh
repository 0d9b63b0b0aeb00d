#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# delayed_counters.sh - hot counters: plain UPDATE direct and through myrewrite, versus
# UPDATE DELAYED (staged mode and memory mode) through myrewrite, side by side; then the
# flush rate of staged rows.
#
# Starts a throwaway mariadbd "dbench" and four proxies (tests/lib/env.sh):
#   :26073  rules dir with one delayed rule on test.counters (key id, column hits,
#           flush_interval 1s) and the proxy's own account (proxy_user=app), which the
#           flusher uses;
#   :26074  an empty rules dir: the plain UPDATE of mode (b) goes through it untouched;
#   :26075  the same delayed rule with mode = memory;
#   :26076  the same delayed rule with group_commit = yes (staged, grouped).
# Then bench/delayed_counters.py runs, for hot rows 1 and 10 and each client count,
#   (a) direct    UPDATE counters SET hits = hits + 1 WHERE id = ?    to mariadbd
#   (b) proxy     the same statement through the proxy without rules
#   (c) delayed   UPDATE DELAYED counters SET hits = hits + 1 WHERE id = ?  through the rule proxy
#   (d) group     the same through the group-commit proxy (staged+group)
#   (e) memory    the same through the memory-mode proxy (checked after FLUSH DELAYED)
# with the C load generator (build/delayed_load; BENCH_DRIVER=sysbench for sysbench running
# bench/delayed_counters.lua, plain-text statements, one thread per client; BENCH_DRIVER=python for one pymysql process
# per client instead) for SECONDS each, prints acknowledged increments/s, the ratio to (a)
# and, after the staging table has drained, whether the counters grew by exactly the number
# of acknowledged increments (OK / MISMATCH). Meanwhile 8 readers (threads of the load
# generator) read the hot rows straight from mariadbd, one point read every 2 ms each at most,
# and their p50 / p99 latency is printed next to that of a run of the readers alone.
# Last, the flush rate: 10^5 rows (and 10^6 if staging them is quick enough) inserted
# straight into the staging table in one transaction, timed from the COMMIT until the
# staging table is empty.
#
# Usage: bench/delayed_counters.sh [SECONDS_PER_RUN]        (default 8)
# Env:   BENCH_CLIENTS="32 128" (client processes)  BENCH_HOT="1 10" (hot rows)
#        BENCH_FLUSH_ROWS="100000 1000000"  BENCH_PROXY_THREADS=2 (proxy worker threads)
#        BENCH_DRIVER=c|python|sysbench  BENCH_LOAD_THREADS=2 (load generator threads)
#        BENCH_MODES="direct proxy delayed group memory"  BENCH_READERS=8 (0: no readers)
#        BENCH_READ_INTERVAL_US=2000 (per reader, between the starts of two reads)
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"

COMMAND=$(printf '%q ' "$0" "$@")
for v in BENCH_PROXY_THREADS BENCH_FLUSH_ROWS BENCH_HOT BENCH_CLIENTS BENCH_DRIVER \
    BENCH_LOAD_THREADS BENCH_MODES BENCH_READERS BENCH_READ_INTERVAL_US; do
    [[ -n ${!v:-} ]] && COMMAND="$v=$(printf '%q' "${!v}") $COMMAND"
done

SECS=${1:-8}
CLIENTS=${BENCH_CLIENTS:-"32 128"}
HOT=${BENCH_HOT:-"1 10"}
FLUSH_ROWS=${BENCH_FLUSH_ROWS:-"100000 1000000"}
PROXY_THREADS=${BENCH_PROXY_THREADS:-2}
MR_TMP=$MR_ROOT/.tmp/dbench
MR_DIRECT_PORT=23346
MR_PROXY_PORT=26073
PLAIN_PORT=26074
MEMORY_PORT=26075
GROUP_PORT=26076
DRIVER=${BENCH_DRIVER:-c}
LOAD_THREADS=${BENCH_LOAD_THREADS:-2}
MODES=${BENCH_MODES:-"direct proxy delayed group memory"}
LOADGEN=$MR_BUILD/delayed_load
export MR_TMP MR_DIRECT_PORT MR_PROXY_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT

RULES_DELAYED=$MR_TMP/rules_delayed
RULES_NONE=$MR_TMP/rules_none
RULES_MEMORY=$MR_TMP/rules_memory
RULES_GROUP=$MR_TMP/rules_group
rm -rf "$RULES_DELAYED" "$RULES_NONE" "$RULES_MEMORY" "$RULES_GROUP"
mkdir -p "$RULES_DELAYED" "$RULES_NONE" "$RULES_MEMORY" "$RULES_GROUP"
cat >"$RULES_DELAYED/10-dbench.rules" <<'RULES'
[delayed dbench]
table = test.counters
key = id
columns = hits
flush_interval = 1s
RULES

cat >"$RULES_GROUP/10-dbench.rules" <<'RULES'
[delayed dbench_group]
table = test.counters
key = id
columns = hits
group_commit = yes
flush_interval = 1s
RULES

cat >"$RULES_MEMORY/10-dbench.rules" <<'RULES'
[delayed dbench_memory]
table = test.counters
key = id
columns = hits
mode = memory
flush_interval = 1s
RULES

"$MR_BIN" --rules "$RULES_DELAYED" --check >&2 || mr_die "the delayed rule does not load"
"$MR_BIN" --rules "$RULES_MEMORY" --check >&2 || mr_die "the memory rule does not load"
"$MR_BIN" --rules "$RULES_GROUP" --check >&2 || mr_die "the group rule does not load"
if [[ $DRIVER == sysbench ]]; then
    command -v sysbench >/dev/null || mr_die "sysbench not installed"
    LOADGEN=""
elif [[ $DRIVER == c ]]; then
    [[ -x $LOADGEN ]] || mr_die "$LOADGEN not built (cmake --build build)"
else
    LOADGEN=""
fi

mr_start_mariadb dbench "$MR_DIRECT_PORT" >/dev/null || mr_die "mariadbd dbench did not start"
PY_ARGS=(--seconds "$SECS" --clients "$CLIENTS" --hot "$HOT" --flush-rows "$FLUSH_ROWS"
    --host "$MR_HOST" --direct-port "$MR_DIRECT_PORT" --rule-port "$MR_PROXY_PORT"
    --plain-port "$PLAIN_PORT" --memory-port "$MEMORY_PORT" --group-port "$GROUP_PORT" --user "$MR_USER"
    --password "$MR_PASSWORD" --db "$MR_DB" --loadgen "$LOADGEN" --driver "$DRIVER" --load-threads "$LOAD_THREADS"
    --modes "$MODES" --readers "${BENCH_READERS:-8}"
    --read-interval-us "${BENCH_READ_INTERVAL_US:-2000}")
# The table exists before the rule proxy starts, so its flusher finds it at once and
# creates the staging table.
PY_ARGS+=(--db-pid "$(cat "$MR_TMP/dbench/mariadbd.pid")" --pid-dir "$MR_TMP")
"$MR_PY" "$MR_ROOT/bench/delayed_counters.py" "${PY_ARGS[@]}" --setup-only \
    || mr_die "table setup failed"
: >"$MR_TMP/dbench_rule.log"
: >"$MR_TMP/dbench_plain.log"
: >"$MR_TMP/dbench_memory.log"
: >"$MR_TMP/dbench_group.log"
mr_start_proxy dbench_rule "$MR_PROXY_PORT" "$MR_DIRECT_PORT" --rules "$RULES_DELAYED" \
    --workers "$PROXY_THREADS" --set proxy_user="$MR_USER" --set proxy_password="$MR_PASSWORD" \
    || mr_die "proxy with the delayed rule did not start"
mr_start_proxy dbench_plain "$PLAIN_PORT" "$MR_DIRECT_PORT" --rules "$RULES_NONE" \
    --workers "$PROXY_THREADS" \
    || mr_die "proxy without rules did not start"
mr_start_proxy dbench_memory "$MEMORY_PORT" "$MR_DIRECT_PORT" --rules "$RULES_MEMORY" \
    --workers "$PROXY_THREADS" --set proxy_user="$MR_USER" --set proxy_password="$MR_PASSWORD" \
    || mr_die "proxy with the memory rule did not start"
mr_start_proxy dbench_group "$GROUP_PORT" "$MR_DIRECT_PORT" --rules "$RULES_GROUP" \
    --workers "$PROXY_THREADS" --set proxy_user="$MR_USER" --set proxy_password="$MR_PASSWORD" \
    || mr_die "proxy with the group-commit rule did not start"

"$MR_PY" "$MR_ROOT/bench/delayed_counters.py" "${PY_ARGS[@]}"
rc=$?

for name in dbench_rule dbench_plain dbench_memory dbench_group; do
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
