#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# queue_claims.sh - claiming rows of a queue table through myrewrite, three ways side by side,
# and how fast the proxy gives back the rows of a worker killed with SIGKILL.
#
# Starts a throwaway mariadbd "qbench" and two proxies (tests/lib/env.sh):
#   :26063  rules dir with one queue rule on test.q, skip_locked = yes, and the proxy's own
#           account (proxy_user=app) so claims are released when a session ends;
#   :26064  an empty rules dir: the for_update mode goes through it, so its
#           SELECT ... FOR UPDATE reaches the server exactly as written.
# Then bench/queue_claims.py runs update_then_select, for_update and skip_locked on the same
# freshly built 100,000-row table (rebuilt before each mode) with BENCH_WORKERS worker
# processes for SECONDS each, prints rows/s (counted on the server), errors and the ratio to
# update_then_select, then the release latency of 10 SIGKILLed workers.
#
# Usage: bench/queue_claims.sh [SECONDS_PER_MODE]        (default 10)
# Env:   BENCH_WORKERS=50 (worker processes)  BENCH_ROWS=100000  BENCH_TRIALS=10
#        BENCH_PROXY_THREADS=2 (proxy worker threads)
set -uo pipefail  # env.sh helpers are not written for set -e
. "$(dirname "$0")/../tests/lib/env.sh"

COMMAND=$(printf '%q ' "$0" "$@")
for v in BENCH_PROXY_THREADS BENCH_TRIALS BENCH_ROWS BENCH_WORKERS; do
    [[ -n ${!v:-} ]] && COMMAND="$v=${!v} $COMMAND"
done

SECS=${1:-10}
WORKERS=${BENCH_WORKERS:-50}
ROWS=${BENCH_ROWS:-100000}
TRIALS=${BENCH_TRIALS:-10}
PROXY_THREADS=${BENCH_PROXY_THREADS:-2}
MR_TMP=$MR_ROOT/.tmp/qbench
MR_DIRECT_PORT=23336
MR_PROXY_PORT=26063
PLAIN_PORT=26064
export MR_TMP MR_DIRECT_PORT MR_PROXY_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT

RULES_QUEUE=$MR_TMP/rules_queue
RULES_NONE=$MR_TMP/rules_none
rm -rf "$RULES_QUEUE" "$RULES_NONE"
mkdir -p "$RULES_QUEUE" "$RULES_NONE"
cat >"$RULES_QUEUE/10-qbench.rules" <<'RULES'
[queue qbench]
table = test.q
owner_column = owner
status_column = status
claimed_value = claimed
unclaimed_value = unsent
claimed_at_column = claimed_at
timeout = 10m
skip_locked = yes
RULES

"$MR_BIN" --rules "$RULES_QUEUE" --check >&2 || mr_die "the queue rule does not load"

mr_start_mariadb qbench "$MR_DIRECT_PORT" >/dev/null || mr_die "mariadbd qbench did not start"
PY_ARGS=(--seconds "$SECS" --workers "$WORKERS" --rows "$ROWS" --trials "$TRIALS"
    --host "$MR_HOST" --direct-port "$MR_DIRECT_PORT" --rule-port "$MR_PROXY_PORT"
    --plain-port "$PLAIN_PORT" --user "$MR_USER" --password "$MR_PASSWORD" --db "$MR_DB"
    --rule-log "$MR_TMP/qbench_rule.log")
# The table exists before the proxies start, so the reaper never misses it.
"$MR_PY" "$MR_ROOT/bench/queue_claims.py" "${PY_ARGS[@]}" --setup-only \
    || mr_die "table setup failed"
# Fresh logs: the Python part reads the rule proxy's release lines.
: >"$MR_TMP/qbench_rule.log"
: >"$MR_TMP/qbench_plain.log"
mr_start_proxy qbench_rule "$MR_PROXY_PORT" "$MR_DIRECT_PORT" --rules "$RULES_QUEUE" \
    --workers "$PROXY_THREADS" --set proxy_user="$MR_USER" --set proxy_password="$MR_PASSWORD" \
    || mr_die "proxy with the queue rule did not start"
mr_start_proxy qbench_plain "$PLAIN_PORT" "$MR_DIRECT_PORT" --rules "$RULES_NONE" \
    --workers "$PROXY_THREADS" \
    || mr_die "proxy without rules did not start"

"$MR_PY" "$MR_ROOT/bench/queue_claims.py" "${PY_ARGS[@]}"
rc=$?

for name in qbench_rule qbench_plain; do
    n=$(grep -cE '^\S+ (warn|error) ' "$MR_TMP/$name.log")
    if ((n > 0)); then
        echo "# proxy $name logged $n warning/error line(s), first ones:" >&2
        grep -E '^\S+ (warn|error) ' "$MR_TMP/$name.log" | head -n 5 >&2
    fi
done
echo
echo "command: ${COMMAND% }"
exit $rc
