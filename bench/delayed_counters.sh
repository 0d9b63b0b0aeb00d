#!/usr/bin/env bash
# delayed_counters.sh - hot counters: plain UPDATE direct and through myrewrite, versus
# UPDATE DELAYED (staged mode) through myrewrite, side by side; then the flush rate.
#
# Starts a throwaway mariadbd "dbench" and two proxies (tests/lib/env.sh):
#   :26073  rules dir with one delayed rule on test.counters (key id, column hits,
#           flush_interval 1s) and the proxy's own account (proxy_user=app), which the
#           flusher uses;
#   :26074  an empty rules dir: the plain UPDATE of mode (b) goes through it untouched.
# Then bench/delayed_counters.py runs, for hot rows 1 and 10 and each client count,
#   (a) direct    UPDATE counters SET hits = hits + 1 WHERE id = ?    to mariadbd
#   (b) proxy     the same statement through the proxy without rules
#   (c) delayed   UPDATE DELAYED counters SET hits = hits + 1 WHERE id = ?  through the rule proxy
# with worker processes for SECONDS each, prints acknowledged increments/s, the ratio to (a)
# and, after the staging table has drained, whether the counters grew by exactly the number
# of acknowledged increments (OK / MISMATCH). Last, the flush rate: 10^5 rows (and 10^6 if
# staging them is quick enough) inserted straight into the staging table in one transaction,
# timed from the COMMIT until the staging table is empty.
#
# Usage: bench/delayed_counters.sh [SECONDS_PER_RUN]        (default 8)
# Env:   BENCH_CLIENTS="32 128" (client processes)  BENCH_HOT="1 10" (hot rows)
#        BENCH_FLUSH_ROWS="100000 1000000"  BENCH_PROXY_THREADS=2 (proxy worker threads)
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"

COMMAND=$(printf '%q ' "$0" "$@")
for v in BENCH_PROXY_THREADS BENCH_FLUSH_ROWS BENCH_HOT BENCH_CLIENTS; do
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
export MR_TMP MR_DIRECT_PORT MR_PROXY_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT

RULES_DELAYED=$MR_TMP/rules_delayed
RULES_NONE=$MR_TMP/rules_none
rm -rf "$RULES_DELAYED" "$RULES_NONE"
mkdir -p "$RULES_DELAYED" "$RULES_NONE"
cat >"$RULES_DELAYED/10-dbench.rules" <<'RULES'
[delayed dbench]
table = test.counters
key = id
columns = hits
flush_interval = 1s
RULES

"$MR_BIN" --rules "$RULES_DELAYED" --check >&2 || mr_die "the delayed rule does not load"

mr_start_mariadb dbench "$MR_DIRECT_PORT" >/dev/null || mr_die "mariadbd dbench did not start"
PY_ARGS=(--seconds "$SECS" --clients "$CLIENTS" --hot "$HOT" --flush-rows "$FLUSH_ROWS"
    --host "$MR_HOST" --direct-port "$MR_DIRECT_PORT" --rule-port "$MR_PROXY_PORT"
    --plain-port "$PLAIN_PORT" --user "$MR_USER" --password "$MR_PASSWORD" --db "$MR_DB")
# The table exists before the rule proxy starts, so its flusher finds it at once and
# creates the staging table.
"$MR_PY" "$MR_ROOT/bench/delayed_counters.py" "${PY_ARGS[@]}" --setup-only \
    || mr_die "table setup failed"
: >"$MR_TMP/dbench_rule.log"
: >"$MR_TMP/dbench_plain.log"
mr_start_proxy dbench_rule "$MR_PROXY_PORT" "$MR_DIRECT_PORT" --rules "$RULES_DELAYED" \
    --workers "$PROXY_THREADS" --set proxy_user="$MR_USER" --set proxy_password="$MR_PASSWORD" \
    || mr_die "proxy with the delayed rule did not start"
mr_start_proxy dbench_plain "$PLAIN_PORT" "$MR_DIRECT_PORT" --rules "$RULES_NONE" \
    --workers "$PROXY_THREADS" \
    || mr_die "proxy without rules did not start"

"$MR_PY" "$MR_ROOT/bench/delayed_counters.py" "${PY_ARGS[@]}"
rc=$?

for name in dbench_rule dbench_plain; do
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
