#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# queue_load.sh - what limits queue claims: the C load generator (bench/queue_load.c, one
# thread and one libmysqlclient connection per worker) against mariadbd directly and through
# myrewrite side by side, under REPEATABLE READ and READ COMMITTED, with the CPU each process
# used and the InnoDB transactions seen waiting on a lock.
#
# Starts a throwaway mariadbd "qload" and two proxies with the queue rule of
# bench/queue_claims.sh (release on disconnect on, skip_locked = yes): "proxy" as it is,
# "proxy_rc" with claim_read_committed = yes added. For every mode and isolation level, the
# 100,000-row table of bench/queue_claims.py is rebuilt, then the generator runs SECONDS
# with WORKERS threads, direct and through the proxy (the claim mode under REPEATABLE READ
# also through proxy_rc).
# Columns: rows claimed and sent per second (counted by the generator from the rows its
# 'sent' UPDATEs changed), the CPU seconds of mariadbd, the proxy and the generator during
# the run, divided by the run's length (2.00 = both cores), and the transactions in LOCK WAIT
# in information_schema.INNODB_TRX, sampled every second (mean).
#
# Usage: bench/queue_load.sh [SECONDS]           (default 8)
# Env:   BENCH_WORKERS=50  BENCH_BATCH=10  BENCH_PROXY_THREADS=2
#        MR_BUILD=build-rel for a Release proxy (the figures in doc/benchmarks.md use one)
set -uo pipefail
. "$(dirname "$0")/../tests/lib/env.sh"

COMMAND=$(printf '%q ' "$0" "$@")
for v in MR_BUILD BENCH_PROXY_THREADS BENCH_BATCH BENCH_WORKERS; do
    [[ -n ${!v:-} ]] && COMMAND="$v=${!v} $COMMAND"
done
SECS=${1:-8}
WORKERS=${BENCH_WORKERS:-50}
BATCH=${BENCH_BATCH:-10}
PROXY_THREADS=${BENCH_PROXY_THREADS:-2}
MR_TMP=$MR_ROOT/.tmp/qload
MR_DIRECT_PORT=23337
MR_PROXY_PORT=26065
RC_PORT=26066
export MR_TMP MR_DIRECT_PORT MR_PROXY_PORT
mkdir -p "$MR_TMP"
trap mr_cleanup EXIT

GEN=$MR_TMP/queue_load
# shellcheck disable=SC2046
cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror $(mariadb_config --cflags) \
    "$MR_ROOT/bench/queue_load.c" -o "$GEN" $(mariadb_config --libs) -lpthread \
    || mr_die "cannot build the load generator"

RULES=$MR_TMP/rules
RULES_RC=$MR_TMP/rules_rc
rm -rf "$RULES" "$RULES_RC"
mkdir -p "$RULES" "$RULES_RC"
cat >"$RULES/10-qbench.rules" <<'RULES'
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
{ cat "$RULES/10-qbench.rules"; echo "claim_read_committed = yes"; } >"$RULES_RC/10-qbench.rules"

mr_start_mariadb qload "$MR_DIRECT_PORT" >/dev/null || mr_die "mariadbd qload did not start"
reset_table() {
    "$MR_PY" "$MR_ROOT/bench/queue_claims.py" --setup-only --seconds 1 --workers 1 \
        --rows 100000 --trials 1 --host "$MR_HOST" --direct-port "$MR_DIRECT_PORT" \
        --rule-port "$MR_PROXY_PORT" --plain-port "$MR_PROXY_PORT" --user "$MR_USER" \
        --password "$MR_PASSWORD" --db "$MR_DB" --rule-log /dev/null
}
reset_table || mr_die "table setup failed"
: >"$MR_TMP/qload_proxy.log"
: >"$MR_TMP/qload_proxy_rc.log"
mr_start_proxy qload_proxy "$MR_PROXY_PORT" "$MR_DIRECT_PORT" --rules "$RULES" \
    --workers "$PROXY_THREADS" --set proxy_user="$MR_USER" --set proxy_password="$MR_PASSWORD" \
    || mr_die "proxy did not start"
mr_start_proxy qload_proxy_rc "$RC_PORT" "$MR_DIRECT_PORT" --rules "$RULES_RC" \
    --workers "$PROXY_THREADS" --set proxy_user="$MR_USER" --set proxy_password="$MR_PASSWORD" \
    || mr_die "proxy_rc did not start"
DB_PID=$(cat "$MR_TMP/qload/mariadbd.pid")
declare -A PROXY_PID=([proxy]=$(cat "$MR_TMP/qload_proxy.pid")
                      [proxy_rc]=$(cat "$MR_TMP/qload_proxy_rc.pid"))

# utime + stime of a process, in clock ticks
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

sql() { mariadb --no-defaults -h "$MR_HOST" -P "$MR_DIRECT_PORT" -u "$MR_USER" \
    -p"$MR_PASSWORD" -N -e "$1"; }

# run MODE ISOLATION PORT LABEL
run() {
    local mode=$1 iso=$2 port=$3 label=$4 out db0 px0 db1 px1 t0 t1 waits=() gen_cpu
    local ppid=${PROXY_PID[$label]:-0}
    reset_table || mr_die "table reset failed"
    db0=$(cpu_ticks "$DB_PID")
    px0=$(cpu_ticks "$ppid")
    t0=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o "$MR_TMP/gen.time" \
        "$GEN" "$MR_HOST" "$port" "$MR_USER" "$MR_PASSWORD" "$MR_DB" "$mode" "$WORKERS" \
        "$SECS" "$iso" "$BATCH" >"$MR_TMP/gen.out" 2>"$MR_TMP/gen.err" &
    local gen=$!
    sleep 1.5
    while kill -0 "$gen" 2>/dev/null; do
        waits+=("$(sql "SELECT SUM(trx_state = 'LOCK WAIT') FROM information_schema.INNODB_TRX")")
        sleep 1
    done
    wait "$gen" || { cat "$MR_TMP/gen.err" >&2; mr_die "generator failed ($mode $iso $label)"; }
    t1=$(date +%s.%N)
    db1=$(cpu_ticks "$DB_PID")
    px1=$(cpu_ticks "$ppid")
    out=$(cat "$MR_TMP/gen.out")
    gen_cpu=$(awk '{print $1 + $2}' "$MR_TMP/gen.time")
    local hz
    hz=$(getconf CLK_TCK)
    awk -v o="$out" -v l="$label" -v t0="$t0" -v t1="$t1" -v db=$((db1 - db0)) \
        -v px=$((px1 - px0)) -v g="$gen_cpu" -v hz="$hz" -v w="${waits[*]:-0}" -v m="$mode" \
        -v i="$iso" 'BEGIN {
            split(o, f, " "); n = split(w, ws, " "); s = 0; for (k = 1; k <= n; k++) s += ws[k];
            d = t1 - t0;
            printf "%-13s %-2s %-8s | %7d %7.0f | %5.2f %5.2f %5.2f | %6.1f | %s %s %s\n", m, i, l,
                f[4], f[6], db / hz / d, px / hz / d, g / d, s / (n ? n : 1),
                f[8], f[9], f[10] }'
}

echo "queue claims, $WORKERS threads, batches of $BATCH, $SECS s per run, proxy: $MR_BIN"
echo "mode          is target   |    rows  rows/s | mysqld proxy   gen | lockwt | deadlock timeout other"
for cfg in "claim rr" "claim rc" "claim_rc_next rr" "for_update rr" "for_update rc" \
           "skip_locked rr" "skip_locked rc"; do
    # shellcheck disable=SC2086
    set -- $cfg
    run "$1" "$2" "$MR_DIRECT_PORT" direct
    run "$1" "$2" "$MR_PROXY_PORT" proxy
    [[ $1 == claim && $2 == rr ]] && run "$1" "$2" "$RC_PORT" proxy_rc
done
for name in qload_proxy qload_proxy_rc; do
    n=$(grep -E '^\S+ (warn|error) ' "$MR_TMP/$name.log" | grep -vc 'admin console not started')
    ((n > 0)) && { echo "# $name logged $n warning/error line(s):" >&2;
                   grep -E '^\S+ (warn|error) ' "$MR_TMP/$name.log" | head -n 5 >&2; }
done
echo
echo "command: ${COMMAND% }"
